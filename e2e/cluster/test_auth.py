"""Authentication, RBAC and protobuf bodies over HTTPS against a running
local test cluster (up.sh): a token from the TokenRequest API is its
ServiceAccount, allowed what a RoleBinding grants and refused the rest
with the real 403 Status; the fault hooks are the admin's only; the pods of
a Deployment get a token of their own ServiceAccount, not the admin's; a
Secret created in protobuf, as helm's clientset sends it, is stored as its
JSON twin, and discovery lists the categories kubectl get all expands."""
import base64
import json
import os
import time
import unittest

import protobuf as pb
from client import Cluster

NS = "/api/v1/namespaces/default"
RBAC = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"


class AuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Cluster()
        cls.k.call("POST", NS + "/serviceaccounts", {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}})
        cls.k.call("POST", RBAC + "/roles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "cm-reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                       "verbs": ["get", "list"]}]})
        cls.k.call("POST", RBAC + "/rolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "bot-cm-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                        "name": "cm-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "default"}]})
        code, body = cls.k.call("POST", NS + "/serviceaccounts/bot/token", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600}})
        assert code == 201, body
        cls.token = body["status"]["token"]
        cls.token_request = body

    @classmethod
    def tearDownClass(cls):
        cls.k.stop()

    def as_bot(self, method, path, body=None):
        r = self.k.request(method, path, body, token=self.token)
        return r.status, r.body

    def test_a_token_request_answers_201_with_a_token_and_its_expiry(self):
        body = self.token_request
        self.assertEqual((body["kind"], body["apiVersion"]),
                         ("TokenRequest", "authentication.k8s.io/v1"))
        self.assertEqual(body["metadata"]["name"], "bot")
        self.assertRegex(body["status"]["expirationTimestamp"], r"^\d{4}-\d\d-\d\dT.*Z$")
        code, _ = self.k.call("POST", NS + "/serviceaccounts/nobody/token", {})
        self.assertEqual(code, 404)

    def test_the_token_is_allowed_what_its_role_binding_grants(self):
        code, body = self.as_bot("GET", NS + "/configmaps")
        self.assertEqual(code, 200, body)
        code, body = self.as_bot("GET", NS + "/configmaps/kube-root-ca.crt")
        self.assertEqual(code, 200, body)
        code, body = self.as_bot("GET", "/apis")
        self.assertEqual(code, 200, body)  # discovery, for every authenticated user

    def test_the_token_is_refused_the_rest_with_the_real_status(self):
        code, body = self.as_bot("DELETE", NS + "/configmaps/kube-root-ca.crt")
        self.assertEqual(code, 403)
        self.assertEqual(body, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'configmaps "kube-root-ca.crt" is forbidden: User '
                       '"system:serviceaccount:default:bot" cannot delete resource '
                       '"configmaps" in API group "" in the namespace "default"',
            "reason": "Forbidden",
            "details": {"name": "kube-root-ca.crt", "kind": "configmaps"}, "code": 403})
        code, body = self.as_bot("GET", "/apis/apps/v1/namespaces/default/deployments?watch=1")
        self.assertEqual(code, 403)
        self.assertEqual(body["message"], 'deployments.apps is forbidden: User '
                         '"system:serviceaccount:default:bot" cannot watch resource '
                         '"deployments" in API group "apps" in the namespace "default"')
        code, body = self.as_bot("POST", "/mwj-test/compact")
        self.assertEqual(code, 403)
        self.assertEqual(body["message"], 'forbidden: User "system:serviceaccount:default:bot" '
                         'cannot post path "/mwj-test/compact"')

    def test_a_bad_token_is_401_and_no_token_is_anonymous(self):
        # One character of the signed header changed.
        c = "B" if self.token[20] == "A" else "A"
        r = self.k.request("GET", NS + "/configmaps", token=self.token[:20] + c + self.token[21:])
        self.assertEqual(r.status, 401)
        r = self.k.request("GET", NS + "/configmaps", token=None)
        self.assertEqual(r.status, 403)
        self.assertIn('User "system:anonymous" cannot list resource "configmaps"',
                      r.body["message"])
        self.assertEqual(self.k.request("GET", "/version", token=None).status, 200)

    def test_a_protobuf_secret_is_stored_as_its_json_twin(self):
        meta = pb.field_bytes(1, "pb-secret") + pb.field_bytes(3, "") + pb.field_varint(7, 0) + \
            pb.field_bytes(11, pb.field_bytes(1, "owner") + pb.field_bytes(2, "helm"))
        secret = pb.field_bytes(1, meta) + \
            pb.field_bytes(2, pb.field_bytes(1, "release") + pb.field_bytes(2, b"\x01\x02")) + \
            pb.field_bytes(3, "helm.sh/release.v1")
        body = pb.MAGIC + pb.field_bytes(1, pb.field_bytes(1, "v1") + pb.field_bytes(2, "Secret")) \
            + pb.field_bytes(2, secret)
        r = self.k.request("POST", NS + "/secrets", body, ctype=pb.MEDIA_TYPE,
                           headers={"Accept": pb.MEDIA_TYPE + ",application/json"})
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(r.header_values("Content-Type"), ["application/json"])
        code, got = self.k.call("GET", NS + "/secrets/pb-secret")
        self.assertEqual(code, 200)
        self.assertEqual(got["data"], {"release": base64.b64encode(b"\x01\x02").decode()})
        self.assertEqual(got["type"], "helm.sh/release.v1")
        self.assertEqual(got["metadata"]["labels"], {"owner": "helm"})

    def test_a_protobuf_body_of_a_custom_resource_is_a_415(self):
        code, body = self.k.call("POST", "/apis/apiextensions.k8s.io/v1/"
                                 "customresourcedefinitions", {
                                     "apiVersion": "apiextensions.k8s.io/v1",
                                     "kind": "CustomResourceDefinition",
                                     "metadata": {"name": "widgets.example.com"},
                                     "spec": {"group": "example.com", "scope": "Namespaced",
                                              "names": {"plural": "widgets", "kind": "Widget"},
                                              "versions": [{
                                                  "name": "v1", "served": True,
                                                  "storage": True, "schema": {
                                                      "openAPIV3Schema": {
                                                          "type": "object"}}}]}})
        self.assertEqual(code, 201, body)
        for _ in range(50):
            r = self.k.request("POST", "/apis/example.com/v1/namespaces/default/widgets",
                               pb.MAGIC, ctype=pb.MEDIA_TYPE)
            if r.status != 404:
                break
            time.sleep(0.1)
        self.assertEqual(r.status, 415, r.body)
        self.assertEqual(r.body["reason"], "UnsupportedMediaType")

    def test_discovery_lists_the_all_category(self):
        code, body = self.k.call("GET", "/apis/apps/v1")
        cats = {r["name"]: r.get("categories") for r in body["resources"]}
        self.assertEqual(cats["deployments"], ["all"])
        self.assertEqual(cats["replicasets"], ["all"])
        code, body = self.k.call("GET", "/api/v1")
        cats = {r["name"]: r.get("categories") for r in body["resources"]}
        self.assertEqual((cats["pods"], cats["services"], cats["secrets"]),
                         (["all"], ["all"], None))

    def test_openapi_v2_comes_in_protobuf_when_asked_and_json_otherwise(self):
        want = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
        r = self.k.request("GET", "/openapi/v2", token=self.token,
                           headers={"Accept": want})
        self.assertEqual(r.status, 200)
        # What kube-openapi answers: the type without "@", which Go's mime
        # parser takes.
        self.assertEqual(r.header_values("Content-Type"),
                         ["application/com.github.proto-openapi.spec.v2.v1.0+protobuf"])
        self.assertEqual(next(pb.fields(r.raw)), (1, 2, b"2.0"))
        r = self.k.request("GET", "/openapi/v2", headers={"Accept": "application/json"})
        self.assertEqual(r.body["swagger"], "2.0")
        self.assertIn("io.k8s.api.apps.v1.Deployment", r.body["definitions"])

    def test_a_deployments_pods_run_with_their_own_service_account_token(self):
        code, body = self.k.call("POST", "/apis/apps/v1/namespaces/default/deployments", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "tok"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "tok"}},
                     "template": {"metadata": {"labels": {"app": "tok"}}, "spec": {
                         "serviceAccountName": "bot",
                         "containers": [{"name": "c", "image": "busybox",
                                         "command": ["sleep", "60"]}]}}}})
        self.assertEqual(code, 201, body)
        token_file = None
        for _ in range(100):
            pods = self.k.call("GET", NS + "/pods?labelSelector=app%3Dtok")[1]["items"]
            if pods and (pods[0].get("status") or {}).get("phase") == "Running":
                p = pods[0]
                name = p["metadata"]["name"]
                vol = [v["name"] for v in p["spec"]["volumes"]
                       if v["name"].startswith("kube-api-access-")][0]
                # node_pod.py: a pod's folder is pods/<ns>/<name>-<uid[:8]>.
                token_file = os.path.join(self.k.dir, "node", "pods", "default", "%s-%s" % (
                    name, p["metadata"]["uid"][:8]), "volumes", vol, "token")
                break
            time.sleep(0.1)
        self.assertIsNotNone(token_file, "the deployment's pod never ran")
        with open(token_file) as f:
            token = f.read()
        self.assertNotEqual(token, self.k.token)
        claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
        self.assertEqual(claims["sub"], "system:serviceaccount:default:bot")
        self.assertEqual(claims["kubernetes.io"]["pod"]["name"], name)
        r = self.k.request("GET", NS + "/configmaps", token=token)
        self.assertEqual(r.status, 200)
        r = self.k.request("GET", NS + "/secrets", token=token)
        self.assertEqual(r.status, 403)


if __name__ == "__main__":
    unittest.main()
