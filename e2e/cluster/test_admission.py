"""The admission plugins a pod or any object meets on its way in, besides
quota, limits and Pod Security (their own tests): NamespaceLifecycle
(k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go),
ServiceAccount (plugin/pkg/admission/serviceaccount/admission.go: the
refusal, the wait for "default", shouldAutomount) with the service account
controller's delay, and OwnerReferencesPermissionEnforcement
(plugin/pkg/admission/gc/gc_admission.go), each refusal with its exact
status, reason, message and details. No server runs."""
import threading
import time

import admission
import tokens
from controllers import Controllers
from registry_fixture import RegistryTest, pod, status

SAS = "/v1/serviceaccounts"
TOKEN_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def configmap(name, **meta):
    return {"kind": "ConfigMap", "metadata": dict(meta, name=name)}


class NamespaceLifecycleTest(RegistryTest):
    def terminate(self):
        """team, deleted while a ConfigMap with a finalizer holds it."""
        self.created("v1", "configmaps", "team", configmap("held", finalizers=["example.com/x"]))
        code, body, _ = self.request("delete", "v1", "namespaces", None, name="team")
        self.assertEqual(code, 200, body)
        self.sync()

    def test_a_create_in_a_terminating_namespace_is_refused_with_the_cause(self):
        self.terminate()
        body = self.refused("v1", "configmaps", "team", configmap("new"))
        self.assertEqual(body, status(403, "Forbidden", 'configmaps "new" is forbidden: unable to '
                                      "create new content in namespace team because it is being "
                                      "terminated", {
                                          "name": "new", "kind": "configmaps", "causes": [{
                                              "reason": "NamespaceTerminating",
                                              "message": "namespace team is being terminated",
                                              "field": "metadata.namespace"}]}))

    def test_a_generated_name_is_refused_by_its_prefix_before_it_is_generated(self):
        self.terminate()
        body = self.refused("v1", "configmaps", "team", {"kind": "ConfigMap", "metadata": {
            "generateName": "job-"}})
        self.assertEqual(body["message"], 'configmaps "job-" is forbidden: unable to create new '
                         "content in namespace team because it is being terminated")
        self.assertEqual(body["details"]["name"], "job-")

    def test_the_namespace_stays_terminating_until_its_content_has_gone(self):
        self.terminate()
        for _ in range(3):
            self.sync()
        ns = self.store.peek("/v1/namespaces", None, "team")
        self.assertEqual(ns["status"]["phase"], "Terminating")
        self.assertIsNotNone(self.store.peek("/v1/configmaps", "team", "held")["metadata"]
                             .get("deletionTimestamp"))
        self.registry.remove_finalizer(self.registry.kind("v1", "configmaps"), "team", "held",
                                       "example.com/x")
        self.sync()
        self.sync()
        self.assertIsNone(self.store.peek("/v1/namespaces", None, "team"))

    def test_a_missing_namespace_is_not_found(self):
        body = self.refused("v1", "configmaps", "nowhere", configmap("c"))
        self.assertEqual(body, status(404, "NotFound", 'namespaces "nowhere" not found',
                                      {"name": "nowhere", "kind": "namespaces"}))

    def test_the_default_namespace_cannot_be_deleted(self):
        code, body, _ = self.request("delete", "v1", "namespaces", None, name="default")
        self.assertEqual(body, status(403, "Forbidden", 'namespaces "default" is forbidden: this '
                                      "namespace may not be deleted",
                                      {"name": "default", "kind": "namespaces"}))


class ServiceAccountTest(RegistryTest):
    def new_namespace(self, name="fresh"):
        """A namespace whose ServiceAccount "default" is not made yet."""
        self.created("v1", "namespaces", None, {"kind": "Namespace", "metadata": {"name": name}})

    def test_a_pod_before_its_default_service_account_is_refused_after_the_plugins_wait(self):
        self.new_namespace()
        start = time.monotonic()
        body = self.refused("v1", "pods", "fresh", pod("p", "worker"))
        waited = time.monotonic() - start
        self.assertEqual(body, status(403, "Forbidden", 'pods "p" is forbidden: error looking up '
                                      'service account fresh/default: serviceaccount "default" '
                                      "not found", {"name": "p", "kind": "pods"}))
        # Ten lookups, nine pauses of 100 to 200 ms (getServiceAccount).
        self.assertGreaterEqual(waited, 0.85)
        self.assertLess(waited, 5)

    def test_a_named_service_account_that_does_not_exist_is_refused_at_once(self):
        start = time.monotonic()
        body = self.refused("v1", "pods", "team", pod("p", "worker",
                                                      spec={"serviceAccountName": "bot"}))
        self.assertLess(time.monotonic() - start, 0.5)
        self.assertEqual(body["message"], 'pods "p" is forbidden: error looking up service '
                         'account team/bot: serviceaccount "bot" not found')

    def test_a_pod_is_admitted_when_default_appears_during_the_wait(self):
        self.new_namespace()
        maker = threading.Timer(0.3, self.sync)
        maker.start()
        try:
            self.created("v1", "pods", "fresh", pod("p", "worker"))
        finally:
            maker.join()

    def test_the_controller_makes_default_only_after_its_delay(self):
        delayed = Controllers(self.registry, "CA", log=lambda _m: None,
                              tokens=tokens.Issuer(self.store, "t"), sa_delay=0.5)
        self.new_namespace()
        delayed.sync()
        self.assertIsNone(self.store.peek(SAS, "fresh", "default"))
        time.sleep(0.6)
        delayed.sync()
        self.assertIsNotNone(self.store.peek(SAS, "fresh", "default"))

    def mounts(self, body):
        return [m["mountPath"] for m in body["spec"]["containers"][0].get("volumeMounts") or []]

    def test_automount_false_on_the_pod_or_else_the_service_account_leaves_the_token_out(self):
        self.created("v1", "serviceaccounts", "team", {"kind": "ServiceAccount", "metadata": {
            "name": "quiet"}, "automountServiceAccountToken": False})
        plain = self.created("v1", "pods", "team", pod("a", "worker"))
        self.assertEqual(self.mounts(plain), [TOKEN_MOUNT])
        self.assertTrue(plain["spec"]["volumes"][0]["name"].startswith("kube-api-access-"))
        off = self.created("v1", "pods", "team", pod("b", "worker", spec={
            "automountServiceAccountToken": False}))
        self.assertEqual((self.mounts(off), off["spec"].get("volumes")), ([], None))
        by_sa = self.created("v1", "pods", "team", pod("c", "worker", spec={
            "serviceAccountName": "quiet"}))
        self.assertEqual(self.mounts(by_sa), [])
        # The pod's own true wins over its ServiceAccount's false.
        pod_wins = self.created("v1", "pods", "team", pod("d", "worker", spec={
            "serviceAccountName": "quiet", "automountServiceAccountToken": True}))
        self.assertEqual(self.mounts(pod_wins), [TOKEN_MOUNT])


class OwnerReferencesBase(RegistryTest):
    """A ConfigMap "owner" in team, and the ServiceAccount team/bot that may
    create, get and update ConfigMaps and pods there, and nothing more."""
    BOT = tokens.service_account_user("team", "bot")

    def setUp(self):
        super().setUp()
        self.owner = self.created("v1", "configmaps", "team", configmap("owner"))
        self.grant([{"apiGroups": [""], "resources": ["configmaps", "pods"],
                     "verbs": ["create", "get", "update", "patch"]}])

    def grant(self, rules, name="bot"):
        rbac = "rbac.authorization.k8s.io/v1"
        self.request("create", rbac, "roles", "team", {
            "apiVersion": rbac, "kind": "Role", "metadata": {"name": name}, "rules": rules})
        self.request("create", rbac, "rolebindings", "team", {
            "apiVersion": rbac, "kind": "RoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}]})

    def ref(self, block=True, **more):
        return dict({"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                     "uid": self.owner["metadata"]["uid"], "controller": True,
                     "blockOwnerDeletion": block}, **more)



class OwnerReferencesTest(OwnerReferencesBase):
    plugins = (admission.OWNER_REFS,)

    def test_block_owner_deletion_without_update_on_finalizers_is_refused(self):
        body = self.refused("v1", "configmaps", "team", configmap("dep", ownerReferences=[
            self.ref()]), user=self.BOT)
        self.assertEqual(body, status(403, "Forbidden", 'configmaps "dep" is forbidden: cannot '
                                      "set blockOwnerDeletion if an ownerReference refers to a "
                                      "resource you can't set finalizers on: , <nil>",
                                      {"name": "dep", "kind": "configmaps"}))

    def test_update_on_the_owners_finalizers_lets_it_through(self):
        self.grant([{"apiGroups": [""], "resources": ["configmaps/finalizers"],
                     "verbs": ["update"]}], name="finalizers")
        self.created("v1", "configmaps", "team", configmap("dep", ownerReferences=[self.ref()]),
                     user=self.BOT)

    def test_a_reference_that_does_not_block_needs_nothing_more_on_create(self):
        self.created("v1", "configmaps", "team", configmap("dep", ownerReferences=[
            self.ref(block=False)]), user=self.BOT)

    def test_changing_references_on_update_needs_delete_on_the_object(self):
        dep = self.created("v1", "configmaps", "team", configmap("dep"), user=self.BOT)
        dep["metadata"]["ownerReferences"] = [self.ref(block=False)]
        code, body, _ = self.request("update", "v1", "configmaps", "team", dep, name="dep",
                                     user=self.BOT)
        self.assertEqual(body, status(403, "Forbidden", 'configmaps "dep" is forbidden: cannot '
                                      "set an ownerRef on a resource you can't delete: , <nil>",
                                      {"name": "dep", "kind": "configmaps"}))

    def test_an_owner_kind_the_cluster_does_not_serve_cannot_block(self):
        body = self.refused("v1", "configmaps", "team", configmap("dep", ownerReferences=[
            self.ref(apiVersion="example.com/v1", kind="Thing")]), user=self.BOT)
        self.assertEqual(body["message"], 'configmaps "dep" is forbidden: cannot set '
                         "blockOwnerDeletion in this case because cannot find RESTMapping for "
                         'APIVersion example.com/v1 Kind Thing: no matches for kind "Thing" in '
                         'version "example.com/v1"')

    def test_the_cluster_admin_may_set_it(self):
        self.created("v1", "configmaps", "team", configmap("dep", ownerReferences=[self.ref()]))


class OwnerReferencesOffTest(OwnerReferencesBase):
    """The plugin is off unless turned on, as in kube-apiserver."""
    plugins = ()

    def test_without_the_plugin_anyone_who_may_create_may_block(self):
        self.created("v1", "configmaps", "team", configmap("dep", ownerReferences=[self.ref()]),
                     user=self.BOT)
        dep = self.store.find("/v1/configmaps", "team", "dep")
        dep["metadata"]["ownerReferences"] = []
        code, body, _ = self.request("update", "v1", "configmaps", "team", dep, name="dep",
                                     user=self.BOT)
        self.assertEqual(code, 200, body)

    def test_the_flag_names_the_plugins_it_knows(self):
        self.assertEqual(admission.plugins_from_flag(
            "OwnerReferencesPermissionEnforcement, PodSecurity"),
            ["OwnerReferencesPermissionEnforcement", "PodSecurity"])
        with self.assertRaisesRegex(ValueError, 'plugin "AlwaysPullImages" is unknown'):
            admission.plugins_from_flag("AlwaysPullImages")
