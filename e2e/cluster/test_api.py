"""The local test cluster's API server on lists and deletes: label and
field selectors, limit/continue paging, garbage collection through
ownerReferences, and answers without needless pauses. Over HTTPS with the
token from up.sh."""
import statistics
import time
import unittest

from client import Cluster

PODS = "/api/v1/namespaces/default/pods"
SVCS = "/api/v1/namespaces/default/services"


def pod(name, labels, phase=None, owner=None):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "labels": labels},
         # Left unscheduled: the node runs no pod of these tests.
         "spec": {"containers": [{"name": "c", "image": "i"}], "schedulerName": "none"}}
    if owner:
        p["metadata"]["ownerReferences"] = [owner]
    return p


class ApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Cluster()
        for i in range(5):
            cls.k.call("POST", PODS, pod("p%d" % i, {"job": "a" if i < 3 else "b",
                                                     "index": str(i)}))

    @classmethod
    def tearDownClass(cls):
        cls.k.stop()

    def names(self, query):
        code, body = self.k.call("GET", PODS + "?" + query)
        self.assertEqual(code, 200, body)
        return [o["metadata"]["name"] for o in body["items"]]

    def test_label_selectors_pick_by_equality_sets_and_existence(self):
        self.assertEqual(self.names("labelSelector=job%3Da"), ["p0", "p1", "p2"])
        # As in Kubernetes, != also matches objects without the label.
        self.assertEqual(self.names("labelSelector=index,job!%3Da"), ["p3", "p4"])
        self.assertEqual(self.names("labelSelector=index+in+(0,4)"), ["p0", "p4"])
        self.assertEqual(self.names("labelSelector=job%3Da,index+notin+(1)"), ["p0", "p2"])
        self.assertEqual(self.names("labelSelector=!job"), [])
        self.assertEqual(self.names("labelSelector=index"), ["p0", "p1", "p2", "p3", "p4"])

    def test_a_bad_label_selector_is_a_400(self):
        code, body = self.k.call("GET", PODS + "?labelSelector=job+in+a")
        self.assertEqual(code, 400, body)

    def test_field_selectors_pick_by_name(self):
        self.assertEqual(self.names("fieldSelector=metadata.name%3Dp3"), ["p3"])
        self.assertEqual(self.names("labelSelector=index&fieldSelector=metadata.name!%3Dp3"),
                         ["p0", "p1", "p2", "p4"])

    def test_limit_and_continue_page_through_everything_once(self):
        seen, token = [], ""
        for _ in range(10):
            q = "labelSelector=index&limit=2" + ("&continue=" + token if token else "")
            code, body = self.k.call("GET", PODS + "?" + q)
            self.assertEqual(code, 200)
            self.assertLessEqual(len(body["items"]), 2)
            seen += [o["metadata"]["name"] for o in body["items"]]
            token = body["metadata"].get("continue", "")
            if not token:
                break
        self.assertEqual(seen, ["p0", "p1", "p2", "p3", "p4"])

    def test_a_table_of_a_limited_list_carries_the_continue_token(self):
        # As the real server's asTable copies the list's ListMeta: without
        # it, `kubectl get pods` (chunks of 500) stopped at the first 500.
        seen, token = [], ""
        for _ in range(10):
            q = "labelSelector=index&limit=2" + ("&continue=" + token if token else "")
            r = self.k.request("GET", PODS + "?" + q, headers={
                "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
            self.assertEqual((r.status, r.body["kind"]), (200, "Table"))
            seen += [row["cells"][0] for row in r.body["rows"]]
            token = r.body["metadata"].get("continue", "")
            if not token:
                break
        self.assertEqual(seen, ["p0", "p1", "p2", "p3", "p4"])

    def test_deleting_an_owner_deletes_its_dependents_in_turn(self):
        _, svc = self.k.call("POST", SVCS, {"apiVersion": "v1", "kind": "Service",
                                           "metadata": {"name": "owner"},
                                           "spec": {"ports": [{"port": 80}]}})
        ref = {"apiVersion": "v1", "kind": "Service", "name": "owner",
               "uid": svc["metadata"]["uid"], "controller": True}
        _, child = self.k.call("POST", PODS, pod("child", {"gc": "1"}, owner=ref))
        ref2 = {"apiVersion": "v1", "kind": "Pod", "name": "child",
                "uid": child["metadata"]["uid"]}
        self.k.call("POST", PODS, pod("grandchild", {"gc": "1"}, owner=ref2))
        self.k.call("POST", PODS, pod("bystander", {"gc": "1"}))
        self.assertEqual(self.k.call("DELETE", SVCS + "/owner")[0], 200)
        # The garbage collector works in the background, as the real one.
        for _ in range(100):
            if self.names("labelSelector=gc") == ["bystander"]:
                break
            time.sleep(0.1)
        self.assertEqual(self.names("labelSelector=gc"), ["bystander"])
        self.k.call("DELETE", PODS + "/bystander")

    def test_a_pod_on_a_node_is_marked_then_goes_when_the_node_confirms(self):
        p = pod("graceful", {"grace": "1"})
        p["spec"]["nodeName"] = "local"
        p["spec"]["terminationGracePeriodSeconds"] = 20
        self.k.call("POST", PODS, p)
        code, marked = self.k.call("DELETE", PODS + "/graceful")
        self.assertEqual(code, 200)
        self.assertIn("deletionTimestamp", marked["metadata"])
        self.assertEqual(marked["metadata"]["deletionGracePeriodSeconds"], 20)
        self.assertEqual(self.names("labelSelector=grace"), ["graceful"])
        # The node has stopped the containers: it deletes with grace 0.
        code, _ = self.k.call("DELETE", PODS + "/graceful?gracePeriodSeconds=0")
        self.assertEqual(code, 200)
        self.assertEqual(self.names("labelSelector=grace"), [])

    def test_a_pod_without_containers_or_with_a_bad_one_is_refused(self):
        bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare"}, "spec": {}}
        code, body = self.k.call("POST", PODS, bare)
        self.assertEqual(code, 422, body)
        self.assertIn("spec.containers: Required value", body["message"])
        p = pod("twins", {})
        p["spec"]["containers"] = [{"name": "c", "image": "i"}, {"name": "c"}]
        p["spec"]["restartPolicy"] = "Sometimes"
        code, body = self.k.call("POST", PODS, p)
        self.assertEqual(code, 422, body)
        for want in ('spec.containers[1].name: Duplicate value: "c"',
                     "spec.containers[1].image: Required value",
                     'spec.restartPolicy: Unsupported value: "Sometimes"'):
            self.assertIn(want, body["message"])

    def test_a_pod_on_no_node_goes_at_once(self):
        self.k.call("POST", PODS, pod("unscheduled", {"grace": "2"}))
        self.assertEqual(self.k.call("DELETE", PODS + "/unscheduled")[0], 200)
        self.assertEqual(self.names("labelSelector=grace"), [])

    def test_answers_come_without_a_pause_for_a_delayed_ack(self):
        # A response written as headers then body, with Nagle's algorithm
        # on, waited about 40 ms each for the peer's delayed ACK.
        c, took = self.k.conn(), []
        for _ in range(21):
            t0 = time.monotonic()
            c.request("GET", PODS + "?limit=1", headers={"Authorization": "Bearer " +
                                                         self.k.token})
            r = c.getresponse()
            r.read()
            took.append(time.monotonic() - t0)
            self.assertEqual(r.status, 200)
        c.close()
        self.assertLess(statistics.median(took), 0.025, took)


if __name__ == "__main__":
    unittest.main()
