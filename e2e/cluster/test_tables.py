"""The server-side tables kubectl get prints (tables.py): pods, services,
deployments and replica sets have the real server's columns and cells
(READY 1/2, STATUS from the phase or a container's reason or Terminating,
RESTARTS, the wide columns at priority 1), other kinds Name and Age."""
import unittest

import kinds
import tables

K = {k.key: k for k in kinds.BUILTIN}
T0 = "2026-01-01T00:00:00Z"


def cells(key, obj):
    t = tables.table(K[key], [obj], "1")
    names = [c["name"] for c in t["columnDefinitions"]]
    return dict(zip(names, t["rows"][0]["cells"])), t["columnDefinitions"]


def pod(phase, statuses, deleting=False):
    md = {"name": "p", "creationTimestamp": T0}
    if deleting:
        md["deletionTimestamp"] = T0
    return {"metadata": md, "spec": {"containers": [{"name": "a"}, {"name": "b"}],
                                     "nodeName": "n"},
            "status": {"phase": phase, "podIP": "10.0.0.1", "containerStatuses": statuses}}


class TablesTest(unittest.TestCase):
    def test_pods_show_ready_status_and_restarts(self):
        running = {"ready": True, "restartCount": 2, "state": {"running": {}}}
        waiting = {"ready": False, "restartCount": 1,
                   "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
        row, cols = cells("/v1/pods", pod("Running", [running, waiting]))
        self.assertEqual([c["name"] for c in cols if c["priority"] == 0],
                         ["Name", "Ready", "Status", "Restarts", "Age"])
        self.assertEqual((row["Ready"], row["Status"], row["Restarts"]),
                         ("1/2", "CrashLoopBackOff", "3"))
        self.assertEqual((row["IP"], row["Node"]), ("10.0.0.1", "n"))
        row, _ = cells("/v1/pods", pod("Running", [running, running]))
        self.assertEqual(row["Status"], "Running")
        row, _ = cells("/v1/pods", pod("Running", [running, running], deleting=True))
        self.assertEqual(row["Status"], "Terminating")
        done = {"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
        row, _ = cells("/v1/pods", pod("Succeeded", [done, done]))
        self.assertEqual((row["Ready"], row["Status"]), ("0/2", "Completed"))

    def test_deployments_replica_sets_and_services_show_their_counts(self):
        d = {"metadata": {"name": "d", "creationTimestamp": T0},
             "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "d"}},
                      "template": {"spec": {"containers": [{"name": "c", "image": "i:1"}]}}},
             "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
        row, _ = cells("apps/v1/deployments", d)
        self.assertEqual((row["Ready"], row["Up-to-date"], row["Available"], row["Images"],
                          row["Selector"]), ("2/3", 3, 2, "i:1", "app=d"))
        rs = dict(d, status={"replicas": 3, "readyReplicas": 1})
        row, _ = cells("apps/v1/replicasets", rs)
        self.assertEqual((row["Desired"], row["Current"], row["Ready"]), (3, 3, 1))
        svc = {"metadata": {"name": "s", "creationTimestamp": T0},
               "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.5",
                        "ports": [{"port": 80, "protocol": "TCP"}]}}
        row, _ = cells("/v1/services", svc)
        self.assertEqual((row["Type"], row["Cluster-IP"], row["External-IP"], row["Port(s)"]),
                         ("ClusterIP", "10.96.0.5", "<none>", "80/TCP"))

    def test_other_kinds_show_name_and_age(self):
        row, cols = cells("/v1/configmaps", {"metadata": {"name": "c", "creationTimestamp": T0}})
        self.assertEqual([c["name"] for c in cols], ["Name", "Age"])


if __name__ == "__main__":
    unittest.main()
