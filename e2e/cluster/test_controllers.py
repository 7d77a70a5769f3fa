"""The controllers of the local test cluster, pass by pass over a store of
their own: every namespace has its ServiceAccount and root CA, again when
deleted; the garbage collector, which follows the store's changes rather
than reading all of it each pass, collects what lost its owners, drops
references to gone owners, honours Foreground and Orphan deletion, and
still sees everything after the history is compacted; a ServiceAccount
token Secret gets its token, CA and namespace."""
import base64
import json
import unittest

import tokens
from controllers import Controllers
from errors import ApiError
from registry import Registry, Request
from store import Store

CMS, SAS = "/v1/configmaps", "/v1/serviceaccounts"


class ControllersTest(unittest.TestCase):
    def setUp(self):
        self.store = Store()
        self.registry = Registry(self.store)
        self.registry._create(self.registry.kind("v1", "namespaces"), None, {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
            Request({}))
        self.issuer = tokens.Issuer(self.store, "admin-token")
        self.c = Controllers(self.registry, "CA PEM", log=lambda _m: None, tokens=self.issuer)
        self.c.sync()

    def cm(self, name, *owners):
        md = {"name": name}
        if owners:
            md["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                      "name": o["metadata"]["name"],
                                      "uid": o["metadata"]["uid"]} for o in owners]
        return self.registry.create(self.registry.kind("v1", "configmaps"), "default",
                                    json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": md}).encode(), Request({})).body

    def delete(self, name, policy=None):
        query = {"propagationPolicy": [policy]} if policy else {}
        self.registry.delete(self.registry.kind("v1", "configmaps"), "default", name, b"",
                             Request(query))

    def names(self):
        return sorted(o["metadata"]["name"] for o in self.store.items(CMS, "default"))

    def test_a_namespace_has_its_service_account_and_ca_again_when_deleted(self):
        self.assertIsNotNone(self.store.peek(SAS, "default", "default"))
        self.assertEqual(self.store.peek(CMS, "default", "kube-root-ca.crt")["data"],
                         {"ca.crt": "CA PEM"})
        self.store.remove(SAS, "default", "default")
        self.store.remove(CMS, "default", "kube-root-ca.crt")
        self.c.sync()
        self.assertIsNotNone(self.store.peek(SAS, "default", "default"))
        self.assertIsNotNone(self.store.peek(CMS, "default", "kube-root-ca.crt"))

    def test_dependents_of_a_deleted_owner_are_collected_in_turn(self):
        owner = self.cm("owner")
        child = self.cm("child", owner)
        self.cm("grandchild", child)
        self.c.sync()
        self.delete("owner")
        self.c.sync()
        self.assertNotIn("child", self.names())
        self.c.sync()
        self.assertEqual(self.names(), ["kube-root-ca.crt"])

    def test_a_reference_to_a_gone_owner_is_dropped_while_another_remains(self):
        a, b = self.cm("a"), self.cm("b")
        self.cm("shared", a, b)
        self.delete("a")
        self.c.sync()
        refs = self.store.peek(CMS, "default", "shared")["metadata"]["ownerReferences"]
        self.assertEqual([r["name"] for r in refs], ["b"])

    def test_foreground_deletion_deletes_the_dependents_first(self):
        owner = self.cm("owner")
        self.cm("child", owner)
        self.delete("owner", "Foreground")
        self.c.sync()
        # The child is deleted in the foreground too: marked, and gone
        # once it has no dependents of its own; only then the owner goes.
        self.assertIn("deletionTimestamp", self.store.peek(CMS, "default", "child")["metadata"])
        self.c.sync()
        self.assertEqual(self.names(), ["kube-root-ca.crt", "owner"])
        self.c.sync()
        self.assertEqual(self.names(), ["kube-root-ca.crt"])

    def test_orphan_deletion_leaves_the_dependents_without_the_owner(self):
        owner = self.cm("owner")
        self.cm("child", owner)
        self.delete("owner", "Orphan")
        self.c.sync()
        self.assertEqual(self.names(), ["child", "kube-root-ca.crt"])
        self.assertNotIn("ownerReferences", self.store.peek(CMS, "default", "child")["metadata"])

    def secret(self, name, sa):
        return self.registry.create(self.registry.kind("v1", "secrets"), "default", json.dumps({
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": name, "annotations": {
                "kubernetes.io/service-account.name": sa}}}).encode(), Request({})).body

    def test_a_service_account_token_secret_gets_a_token_that_ends_with_it(self):
        self.secret("default-token", "default")
        self.secret("ghost-token", "ghost")
        self.c.sync()
        s = self.store.peek("/v1/secrets", "default", "default-token")
        self.assertEqual(base64.b64decode(s["data"]["ca.crt"]), b"CA PEM")
        self.assertEqual(base64.b64decode(s["data"]["namespace"]), b"default")
        sa = self.store.peek(SAS, "default", "default")
        self.assertEqual(s["metadata"]["annotations"]["kubernetes.io/service-account.uid"],
                         sa["metadata"]["uid"])
        token = base64.b64decode(s["data"]["token"]).decode()
        self.assertEqual(self.issuer.authenticate(token).name,
                         "system:serviceaccount:default:default")
        # One for a ServiceAccount that does not exist is deleted.
        self.assertIsNone(self.store.peek("/v1/secrets", "default", "ghost-token"))
        self.store.remove("/v1/secrets", "default", "default-token")
        with self.assertRaises(ApiError):
            self.issuer.authenticate(token)

    def test_the_collector_sees_everything_again_after_compaction(self):
        owner = self.cm("owner")
        self.c.sync()
        self.store.compact()
        self.cm("child", owner)
        self.delete("owner")
        self.c.sync()
        self.assertEqual(self.names(), ["kube-root-ca.crt"])


if __name__ == "__main__":
    unittest.main()
