"""Admission through a running local test cluster (up.sh, HTTPS through its
front): what the server's flags and threads add to the plugins' own
tests. up.sh's MWJ_CLUSTER_SA_DELAY_SECONDS delays a new namespace's
ServiceAccount, so that a pod created at once is refused as on a real
cluster and admitted once the controller has made it;
MWJ_CLUSTER_ADMISSION_PLUGINS turns OwnerReferencesPermissionEnforcement
on; PodSecurity's warnings arrive as Warning headers (299, as
k8s.io/apiserver's warning recorder writes them); the quota controller,
in its own thread, copies a raised quota before the next create."""
import json
import time
import unittest

from client import Cluster

NS = "/api/v1/namespaces"
SA_DELAY = 4


def wait_for(fn, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = fn()
        if value:
            return value
        time.sleep(0.05)
    return fn()


class LiveAdmissionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Cluster(env={"MWJ_CLUSTER_SA_DELAY_SECONDS": str(SA_DELAY),
                             "MWJ_CLUSTER_ADMISSION_PLUGINS":
                                 "OwnerReferencesPermissionEnforcement"})

    @classmethod
    def tearDownClass(cls):
        cls.k.stop()

    def namespace(self, name, labels=None):
        code, body = self.k.call("POST", NS, {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": name,
                                                           "labels": labels or {}}})
        self.assertEqual(code, 201, body)

    def has_sa(self, ns):
        return self.k.call("GET", "%s/%s/serviceaccounts/default" % (NS, ns))[0] == 200

    def pod(self, ns, name, **spec):
        return self.k.request("POST", "%s/%s/pods" % (NS, ns), {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": dict({"containers": [{"name": "worker", "image": "i"}],
                          "schedulerName": "none"}, **spec)})

    def test_a_pod_in_a_new_namespace_is_refused_until_its_service_account_is_made(self):
        self.namespace("fresh")
        r = self.pod("fresh", "early")
        self.assertEqual(r.status, 403, r.body)
        self.assertEqual(r.body["message"], 'pods "early" is forbidden: error looking up service '
                         'account fresh/default: serviceaccount "default" not found')
        self.assertFalse(self.has_sa("fresh"))
        self.assertTrue(wait_for(lambda: self.has_sa("fresh"), SA_DELAY + 5))
        r = self.pod("fresh", "later")
        self.assertEqual(r.status, 201, r.body)

    def test_pod_security_warnings_arrive_as_warning_headers(self):
        self.namespace("warned", {"pod-security.kubernetes.io/warn": "baseline"})
        self.assertTrue(wait_for(lambda: self.has_sa("warned"), SA_DELAY + 5))
        r = self.pod("warned", "p", hostNetwork=True)
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(r.header_values("Warning"), [
            '299 - "would violate PodSecurity \\"baseline:latest\\": host namespaces '
            '(hostNetwork)"'])

    def test_a_raised_quota_lets_the_next_create_through(self):
        self.namespace("quota")
        base = "%s/quota" % NS
        code, body = self.k.call("POST", base + "/resourcequotas", {
            "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
            "spec": {"hard": {"secrets": "0"}}})
        self.assertEqual(code, 201, body)
        measured = lambda: "used" in (self.k.call("GET", base + "/resourcequotas/q")[1]
                                      .get("status") or {})
        self.assertTrue(wait_for(measured, 5))
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
        code, body = self.k.call("POST", base + "/secrets", secret)
        self.assertEqual((code, body["message"]), (403, 'secrets "s" is forbidden: exceeded '
                                                        'quota: q, requested: secrets=1, used: '
                                                        'secrets=0, limited: secrets=0'))
        code, body = self.k.call("PATCH", base + "/resourcequotas/q",
                                 json.dumps({"spec": {"hard": {"secrets": "1"}}}).encode(),
                                 "application/merge-patch+json")
        self.assertEqual(code, 200, body)
        # No resync period to wait out: the controller copies the new hard
        # limit as soon as it sees the change.
        raised = lambda: (self.k.call("GET", base + "/resourcequotas/q")[1]["status"]
                          ["hard"] == {"secrets": "1"})
        self.assertTrue(wait_for(raised, 1))
        code, body = self.k.call("POST", base + "/secrets", secret)
        self.assertEqual(code, 201, body)

    def test_the_owner_references_plugin_is_on_when_up_sh_is_told(self):
        self.namespace("owned")
        rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/owned"
        for path, obj in (("/roles", {"kind": "Role", "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get"]}]}),
                          ("/rolebindings", {"kind": "RoleBinding", "roleRef": {
                              "apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                              "name": "bot"}, "subjects": [{"kind": "ServiceAccount",
                                                            "name": "bot",
                                                            "namespace": "owned"}]})):
            obj = dict(obj, apiVersion="rbac.authorization.k8s.io/v1", metadata={"name": "bot"})
            self.assertEqual(self.k.call("POST", rbac + path, obj)[0], 201)
        cms = "%s/owned/configmaps" % NS
        code, owner = self.k.call("POST", cms, {"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": {"name": "owner"}})
        self.assertEqual(code, 201, owner)
        r = self.k.request("POST", cms, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "dep", "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}]}},
            headers={"Impersonate-User": "system:serviceaccount:owned:bot"})
        self.assertEqual((r.status, r.body["message"]), (
            403, 'configmaps "dep" is forbidden: cannot set blockOwnerDeletion if an '
            "ownerReference refers to a resource you can't set finalizers on: , <nil>"))
