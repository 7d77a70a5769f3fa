"""The pods/eviction subresource against the local test cluster: the
Eviction API's answers (201 Status, 400, 405, 429 with a DisruptionBudget
cause), the budget it takes from, and the DisruptionTarget condition the
evicted pod carries while it stops."""
import unittest

from client import Cluster

PODS = "/api/v1/namespaces/default/pods"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
MERGE = "application/merge-patch+json"


def pod(name):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "evict-" + name}},
            # Left unscheduled: the node runs no pod of these tests.
            "spec": {"containers": [{"name": "c", "image": "i"}], "schedulerName": "none"}}


def eviction(name):
    return {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": "default"}}


class EvictionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Cluster()

    @classmethod
    def tearDownClass(cls):
        cls.k.stop()

    def running(self, name):
        """A pod the budget applies to: Running, with a finalizer that
        keeps it readable once deleted."""
        p = pod(name)
        p["metadata"]["finalizers"] = ["test.mwj.io/keep"]
        code, body = self.k.call("POST", PODS, p)
        self.assertEqual(code, 201, body)
        code, body = self.k.call("PATCH", PODS + "/" + name + "/status",
                                 {"status": {"phase": "Running"}}, MERGE)
        self.assertEqual(code, 200, body)

    def budget(self, name, allowed):
        code, body = self.k.call("POST", PDBS, {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "evict-" + name}}}})
        self.assertEqual(code, 201, body)
        code, body = self.k.call("PATCH", PDBS + "/" + name + "/status", {"status": {
            "observedGeneration": 1, "disruptionsAllowed": allowed, "currentHealthy": 1,
            "desiredHealthy": 1, "expectedPods": 1}}, MERGE)
        self.assertEqual(code, 200, body)

    def test_evicting_a_pending_pod_deletes_it_with_a_201_status(self):
        self.k.call("POST", PODS, pod("pending"))
        code, body = self.k.call("POST", PODS + "/pending/eviction", eviction("pending"))
        self.assertEqual(code, 201, body)
        self.assertEqual(body, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Success", "code": 201})
        code, _ = self.k.call("GET", PODS + "/pending")
        self.assertEqual(code, 404)

    def test_an_eviction_naming_another_pod_is_a_400(self):
        self.k.call("POST", PODS, pod("named"))
        code, body = self.k.call("POST", PODS + "/named/eviction", eviction("other"))
        self.assertEqual(code, 400, body)
        self.assertEqual(body["message"], "name in URL does not match name in Eviction object")

    def test_only_post_is_allowed_and_only_on_pods(self):
        code, _ = self.k.call("GET", PODS + "/named/eviction")
        self.assertEqual(code, 405)
        code, _ = self.k.call("POST", "/api/v1/namespaces/default/services/x/eviction",
                              eviction("x"))
        self.assertEqual(code, 404)
        code, _ = self.k.call("POST", PODS + "/absent/eviction", eviction("absent"))
        self.assertEqual(code, 404)

    def test_a_budget_that_allows_no_disruption_refuses_with_a_429(self):
        self.running("guarded")
        self.budget("guarded", 0)
        code, body = self.k.call("POST", PODS + "/guarded/eviction", eviction("guarded"))
        self.assertEqual(code, 429, body)
        self.assertEqual(body["reason"], "TooManyRequests")
        self.assertEqual(body["message"],
                         "Cannot evict pod as it would violate the pod's disruption budget.")
        self.assertEqual(body["details"]["causes"], [{
            "reason": "DisruptionBudget",
            "message": "The disruption budget guarded needs 1 healthy pods and has 1 currently"}])
        _, p = self.k.call("GET", PODS + "/guarded")
        self.assertNotIn("deletionTimestamp", p["metadata"])

    def test_a_budget_that_allows_it_gives_one_disruption_and_the_pod_is_marked(self):
        self.running("allowed")
        self.budget("allowed", 1)
        code, body = self.k.call("POST", PODS + "/allowed/eviction", eviction("allowed"))
        self.assertEqual(code, 201, body)
        _, pdb = self.k.call("GET", PDBS + "/allowed")
        self.assertEqual(pdb["status"]["disruptionsAllowed"], 0)
        self.assertIn("allowed", pdb["status"]["disruptedPods"])
        _, p = self.k.call("GET", PODS + "/allowed")
        self.assertIn("deletionTimestamp", p["metadata"])
        conds = {c["type"]: c for c in p["status"].get("conditions", [])}
        self.assertEqual((conds["DisruptionTarget"]["status"], conds["DisruptionTarget"]["reason"]),
                         ("True", "EvictionByEvictionAPI"))
        # The budget now allows none: the next eviction is refused.
        self.running("allowed-2")
        code, body = self.k.call("PATCH", PODS + "/allowed-2", {"metadata": {"labels": {
            "app": "evict-allowed"}}}, MERGE)
        self.assertEqual(code, 200, body)
        code, _ = self.k.call("POST", PODS + "/allowed-2/eviction", eviction("allowed-2"))
        self.assertEqual(code, 429)

    def test_a_budget_not_yet_observed_refuses_with_a_429(self):
        self.running("fresh")
        code, body = self.k.call("POST", PDBS, {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "fresh"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "evict-fresh"}}}})
        self.assertEqual(code, 201, body)
        code, body = self.k.call("POST", PODS + "/fresh/eviction", eviction("fresh"))
        self.assertEqual(code, 429, body)
        self.assertEqual(body["details"]["causes"][0]["message"],
                         "The disruption budget fresh is still being processed by the server.")


if __name__ == "__main__":
    unittest.main()
