"""The deployment and replica set controllers (apps.py), pass by pass over
a store of their own, with pods marked Ready by hand as the node would:
a Deployment gets one ReplicaSet named for its template's hash and that
many pods; its status reaches what `kubectl rollout status` and helm's
ready check wait for once the pods are ready; a new template rolls over to
a new set and scales the old one to 0 only once the new one is available;
a deleted pod is replaced and extra ones removed; scaling to 0 empties
it; the scale subresource sets the replicas; and what a real server
refuses of a Deployment is refused."""
import json
import unittest

import scale
from controllers import Controllers
from errors import ApiError
from registry import Registry, Request
from store import Store, clone

DEPLOYS, RSS, PODS = "apps/v1/deployments", "apps/v1/replicasets", "/v1/pods"


def deployment(name, replicas=2, image="app:1", strategy=None):
    d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
         "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                  "template": {"metadata": {"labels": {"app": name}},
                               "spec": {"containers": [{"name": "c", "image": image,
                                                        "command": ["sleep", "60"]}],
                                        "schedulerName": "none"}}}}
    if strategy:
        d["spec"]["strategy"] = {"type": strategy}
    return d


class AppsTest(unittest.TestCase):
    def setUp(self):
        self.store = Store()
        self.registry = Registry(self.store)
        self.registry._create(self.registry.kind("v1", "namespaces"), None, {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
            Request({}))
        self.c = Controllers(self.registry, "", log=lambda _m: None)
        self.c.sync()

    def apply(self, d):
        kind = self.registry.kind("apps/v1", "deployments")
        name = d["metadata"]["name"]
        if self.store.find(DEPLOYS, "default", name) is None:
            self.registry.create(kind, "default", json.dumps(d).encode(), Request({}))
        else:
            self.registry.update(kind, "default", name, json.dumps(d).encode(), Request({}))

    def pods(self):
        return sorted((p for p in self.store.items(PODS, "default")
                       if not p["metadata"].get("deletionTimestamp")),
                      key=lambda p: p["metadata"]["name"])

    def ready_all(self):
        """Marks every pod Running and Ready, as the node does."""
        for p in self.pods():
            p = clone(p)
            p["status"] = {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
            self.store.replace(PODS, "default", p["metadata"]["name"], p)

    def sync(self, n=3):
        for _ in range(n):
            self.c.sync()

    def deploy(self, name):
        return self.store.find(DEPLOYS, "default", name)

    def sets(self):
        return sorted(self.store.items(RSS, "default"), key=lambda r: r["metadata"]["name"])

    def test_a_deployment_gets_one_replica_set_and_its_pods(self):
        self.apply(deployment("web", 2))
        self.sync()
        [rs] = self.sets()
        h = rs["metadata"]["labels"]["pod-template-hash"]
        self.assertEqual(rs["metadata"]["name"], "web-" + h)
        self.assertEqual(rs["spec"]["selector"]["matchLabels"], {"app": "web",
                                                                 "pod-template-hash": h})
        self.assertEqual(rs["metadata"]["ownerReferences"][0]["kind"], "Deployment")
        self.assertTrue(rs["metadata"]["ownerReferences"][0]["controller"])
        self.assertEqual(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1")
        pods = self.pods()
        self.assertEqual(len(pods), 2)
        for p in pods:
            self.assertTrue(p["metadata"]["name"].startswith("web-%s-" % h))
            self.assertEqual(p["metadata"]["labels"], {"app": "web", "pod-template-hash": h})
            self.assertEqual(p["metadata"]["ownerReferences"][0]["uid"], rs["metadata"]["uid"])

    def test_the_status_says_rolled_out_once_the_pods_are_ready(self):
        self.apply(deployment("web", 2))
        self.sync()
        st = self.deploy("web")["status"]
        self.assertEqual(st["observedGeneration"], 1)
        self.assertEqual(st.get("availableReplicas", 0), 0)
        self.assertEqual(st["unavailableReplicas"], 2)
        self.ready_all()
        self.sync()
        st = self.deploy("web")["status"]
        for f in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas"):
            self.assertEqual(st[f], 2, f)
        self.assertNotIn("unavailableReplicas", st)
        conds = {c["type"]: c for c in st["conditions"]}
        self.assertEqual(conds["Available"]["status"], "True")
        self.assertEqual(conds["Progressing"]["reason"], "NewReplicaSetAvailable")
        rs = self.sets()[0]
        self.assertEqual(rs["status"]["readyReplicas"], 2)
        self.assertEqual(rs["status"]["observedGeneration"], rs["metadata"]["generation"])

    def test_a_new_template_rolls_over_to_a_new_set_and_scales_the_old_one_down(self):
        self.apply(deployment("web", 2, "app:1"))
        self.sync()
        self.ready_all()
        self.sync()
        d = deployment("web", 2, "app:2")
        self.apply(d)
        self.sync()
        old, new = sorted(self.sets(), key=lambda r: int(
            r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]))
        self.assertEqual(new["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
                         "2")
        # The old set keeps its pods until the new one's are available.
        self.assertEqual(old["spec"]["replicas"], 2)
        self.assertEqual(self.deploy("web")["status"]["updatedReplicas"], 2)
        self.ready_all()
        self.sync()
        old = self.store.find(RSS, "default", old["metadata"]["name"])
        self.assertEqual(old["spec"]["replicas"], 0)
        self.sync()
        self.assertEqual(len(self.pods()), 2)
        self.assertTrue(all(p["spec"]["containers"][0]["image"] == "app:2" for p in self.pods()))
        self.assertEqual(self.deploy("web")["status"]["observedGeneration"], 2)

    def test_a_deleted_pod_is_replaced_and_scaling_to_zero_empties_the_set(self):
        self.apply(deployment("web", 2))
        self.sync()
        gone = self.pods()[0]["metadata"]["name"]
        self.store.remove(PODS, "default", gone)
        self.sync()
        names = [p["metadata"]["name"] for p in self.pods()]
        self.assertEqual(len(names), 2)
        self.assertNotIn(gone, names)
        self.apply(deployment("web", 0))
        self.sync()
        self.assertEqual(self.pods(), [])
        self.assertEqual(self.sets()[0]["spec"]["replicas"], 0)

    def test_recreate_scales_the_old_set_down_before_the_new_one_grows(self):
        self.apply(deployment("web", 1, "app:1", "Recreate"))
        self.sync()
        self.ready_all()
        self.sync()
        self.apply(deployment("web", 1, "app:2", "Recreate"))
        self.c.sync()
        new = [r for r in self.sets() if r["spec"]["template"]["spec"]["containers"][0]["image"]
               == "app:2"][0]
        self.assertEqual(new["spec"]["replicas"], 0)
        self.sync(4)
        images = [p["spec"]["containers"][0]["image"] for p in self.pods()]
        self.assertEqual(images, ["app:2"])

    def test_recreate_waits_for_the_old_pods_to_stop_not_only_to_be_deleted(self):
        # recreate.go's oldPodsRunning: a pod being deleted that its node
        # has not stopped (phase Running) holds the new set back, so that
        # an old and a new pod never run at once (two operators acting).
        self.apply(deployment("web", 1, "app:1", "Recreate"))
        self.sync()
        self.ready_all()
        old = self.pods()[0]
        self.apply(deployment("web", 1, "app:2", "Recreate"))
        self.c.sync()
        # The old set scaled down deleted its pod: on a node, the pod stays,
        # marked, until the node has stopped it.
        terminating = clone(old)
        terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        for k in ("resourceVersion",):
            terminating["metadata"].pop(k, None)
        self.store.create(PODS, "default", terminating)
        self.sync(4)
        new = [r for r in self.sets() if r["spec"]["template"]["spec"]["containers"][0]["image"]
               == "app:2"][0]
        self.assertEqual(new["spec"]["replicas"], 0)
        self.assertEqual(self.pods(), [])
        self.store.remove(PODS, "default", old["metadata"]["name"])
        self.sync(4)
        images = [p["spec"]["containers"][0]["image"] for p in self.pods()]
        self.assertEqual(images, ["app:2"])


    def test_a_deployment_is_validated_as_the_real_server_validates_it(self):
        kind = self.registry.kind("apps/v1", "deployments")
        d = deployment("bad", -1)
        d["spec"]["selector"] = {"matchLabels": {"app": "other"}}
        d["spec"]["template"]["spec"]["restartPolicy"] = "Never"
        with self.assertRaises(ApiError) as e:
            self.registry.create(kind, "default", json.dumps(d).encode(), Request({}))
        fields = [c["field"] for c in e.exception.details["causes"]]
        self.assertEqual(fields, ["spec.replicas", "spec.template.metadata.labels",
                                  "spec.template.spec.restartPolicy"])
        self.assertIn('spec.template.metadata.labels: Invalid value: map[string]string{'
                      '"app":"bad"}: `selector` does not match template `labels`',
                      e.exception.message)
        d = deployment("empty")
        d["spec"]["selector"] = {}
        with self.assertRaises(ApiError) as e:
            self.registry.create(kind, "default", json.dumps(d).encode(), Request({}))
        self.assertIn("empty selector is invalid for deployment", e.exception.message)

    def test_a_deployments_selector_is_immutable(self):
        self.apply(deployment("web"))
        d = deployment("web")
        d["spec"]["selector"]["matchLabels"]["tier"] = "x"
        d["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
        with self.assertRaises(ApiError) as e:
            self.apply(d)
        self.assertEqual(e.exception.details["causes"][0]["field"], "spec.selector")
        self.assertIn("field is immutable", e.exception.message)


    def test_the_scale_subresource_reads_and_sets_the_replicas(self):
        self.apply(deployment("web", 2))
        self.sync()
        kind = self.registry.kind("apps/v1", "deployments")
        code, sc, _ = scale.serve(self.registry, kind, "default", "web", "GET", b"", "",
                                  Request({}))
        self.assertEqual((code, sc["kind"], sc["apiVersion"]), (200, "Scale", "autoscaling/v1"))
        self.assertEqual(sc["spec"], {"replicas": 2})
        self.assertEqual(sc["status"], {"replicas": 2, "selector": "app=web"})
        code, sc, _ = scale.serve(self.registry, kind, "default", "web", "PATCH",
                                  b'{"spec":{"replicas":3}}', "application/merge-patch+json",
                                  Request({}))
        self.assertEqual(sc["spec"]["replicas"], 3)
        self.sync()
        self.assertEqual(len(self.pods()), 3)
        stale = {"kind": "Scale", "apiVersion": "autoscaling/v1",
                 "metadata": {"name": "web", "resourceVersion": "1"}, "spec": {"replicas": 1}}
        with self.assertRaises(ApiError) as e:
            scale.serve(self.registry, kind, "default", "web", "PUT",
                        json.dumps(stale).encode(), "application/json", Request({}))
        self.assertEqual(e.exception.code, 409)
        self.assertEqual(scale.selector_string({"matchLabels": {"b": "2", "a": "1"},
                                                "matchExpressions": [{
                                                    "key": "t", "operator": "In",
                                                    "values": ["y", "x"]}]}),
                         "a=1,b=2,t in (x,y)")


if __name__ == "__main__":
    unittest.main()
