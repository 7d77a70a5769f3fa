"""The node's pure parts: image names, $(VAR) references, downward-API
fields, and the /etc/hosts a pod sees (cluster DNS for headless
Services), written when a pod starts and rewritten in place when what
cluster DNS answers changes."""
import os
import shutil
import tempfile
import threading
import unittest

from node_const import PODS, SERVICES
from node_dns import hosts_for, prepare_pod, write_dns
from node_exec import expand, image_repository
from node_pod import PodRun
from node_volumes import field_value
from store import Store


def pod(name, ip, ready=True, labels=None, subdomain="job", ns="default", phase="Running"):
    return {"metadata": {"name": name, "namespace": ns, "uid": name + "-uid",
                         "labels": labels or {"job": "job"}},
            "spec": {"hostname": name, "subdomain": subdomain, "containers": []},
            "status": {"podIP": ip, "phase": phase, "conditions": [
                {"type": "Ready", "status": "True" if ready else "False"}]}}


def service(name, publish, ns="default", cluster_ip="None"):
    return {"metadata": {"name": name, "namespace": ns},
            "spec": {"clusterIP": cluster_ip, "selector": {"job": "job"},
                     "publishNotReadyAddresses": publish}}


class FakeNode:
    state = "/nonexistent"


class NodeTest(unittest.TestCase):
    def test_image_repository_drops_registry_tag_and_digest(self):
        self.assertEqual(image_repository("mwj-worker"), "mwj-worker")
        self.assertEqual(image_repository("mwj-worker:latest"), "mwj-worker")
        self.assertEqual(image_repository("registry:5000/team/mwj-worker:1.0@sha256:ab"),
                         "mwj-worker")

    def test_var_references_expand_as_kubernetes_does(self):
        env = {"A": "x", "B": "y"}
        self.assertEqual(expand("$(A)-$(B)", env), "x-y")
        self.assertEqual(expand("$(MISSING)", env), "$(MISSING)")
        self.assertEqual(expand("$$(A) $$", env), "$(A) $")

    def test_downward_api_fields(self):
        p = pod("w-0", "127.0.0.5", labels={"team": "vision"})
        p["spec"]["nodeName"] = "n"
        self.assertEqual(field_value(p, "metadata.name"), "w-0")
        self.assertEqual(field_value(p, "status.podIP"), "127.0.0.5")
        self.assertEqual(field_value(p, "metadata.labels['team']"), "vision")
        self.assertEqual(field_value(p, "metadata.labels['none']"), "")
        with self.assertRaises(ValueError):
            field_value(p, "spec.containers")

    def hosts(self, viewer, pods, services):
        run = PodRun(FakeNode(), viewer, viewer["status"]["podIP"])
        return hosts_for(run, pods, services)

    def test_hosts_name_every_pod_behind_a_headless_service(self):
        a, b = pod("job-worker-0", "127.0.0.2"), pod("job-worker-1", "127.0.0.3", ready=False)
        text = self.hosts(a, [a, b], [service("job", True)])
        self.assertIn("127.0.0.2\tjob-worker-0.job.default.svc.cluster.local job-worker-0\n",
                      text)
        line = [ln for ln in text.splitlines() if ln.startswith("127.0.0.3\t")][0].split()
        for name in ("job-worker-1.job.default.svc.cluster.local", "job-worker-1.job.default.svc",
                     "job-worker-1.job.default", "job-worker-1.job"):
            self.assertIn(name, line)

    def test_not_ready_pods_are_left_out_unless_the_service_publishes_them(self):
        a, b = pod("job-worker-0", "127.0.0.2"), pod("job-worker-1", "127.0.0.3", ready=False)
        self.assertNotIn("127.0.0.3", self.hosts(a, [a, b], [service("job", False)]))

    def test_finished_pods_other_namespaces_and_cluster_ip_services(self):
        a = pod("job-worker-0", "127.0.0.2")
        done = pod("job-worker-1", "127.0.0.3", phase="Succeeded")
        other = pod("job-worker-2", "127.0.0.4", ns="team")
        text = self.hosts(a, [a, done, other], [service("job", True),
                                               service("job", True, ns="team")])
        self.assertNotIn("127.0.0.3", text)
        line = [ln for ln in text.splitlines() if ln.startswith("127.0.0.4\t")][0].split()
        self.assertIn("job-worker-2.job.team.svc", line)
        self.assertNotIn("job-worker-2.job", line)  # no search path reaches another namespace
        running = pod("job-worker-1", "127.0.0.3")
        self.assertIn("127.0.0.3", self.hosts(a, [a, running], [service("job", True)]))
        self.assertNotIn("127.0.0.3", self.hosts(a, [a, running], [
            service("job", True, cluster_ip="10.0.0.1")]))


class DnsNode:
    """What node_dns reads of the node."""

    def __init__(self, state):
        self.state = state
        self.store = Store()
        self.lock = threading.RLock()
        self.dns_lock = threading.Lock()
        self.dns_dirty = threading.Event()
        self.dns_records = []
        self.runs = {}

    def log(self, msg):
        raise AssertionError(msg)


class DnsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mwj-dns-test-")
        self.node = DnsNode(self.dir)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def start(self, p):
        """A pod the node runs, as far as DNS goes: in the store, and its
        files written as before its containers start."""
        self.node.store.create(PODS, "default", p)
        run = PodRun(self.node, p, p["status"]["podIP"])
        os.makedirs(run.dir)
        self.node.runs[("default", run.name)] = run
        prepare_pod(self.node, run)
        return run

    def hosts(self, run):
        with open(os.path.join(run.dir, "hosts")) as f:
            return f.read()

    def answers(self, run):
        """The lines of run's hosts after localhost and its own."""
        return self.hosts(run).splitlines()[3:]

    def test_pods_learn_of_each_other_when_a_headless_service_selects_them(self):
        a = self.start(pod("job-worker-0", "127.0.0.2"))
        inode = os.stat(os.path.join(a.dir, "hosts")).st_ino
        self.assertEqual(self.answers(a), [])
        self.node.store.create(SERVICES, "default", service("job", False))
        write_dns(self.node)
        b = self.start(pod("job-worker-1", "127.0.0.3"))
        write_dns(self.node)
        for run in (a, b):
            self.assertEqual([line.split("\t")[0] for line in self.answers(run)],
                             ["127.0.0.2", "127.0.0.3"])
        # In place: the container's bind mount holds the file's inode.
        self.assertEqual(os.stat(os.path.join(a.dir, "hosts")).st_ino, inode)

    def test_hosts_are_written_again_only_when_the_answers_change(self):
        self.node.store.create(SERVICES, "default", service("job", False))
        a = self.start(pod("job-worker-0", "127.0.0.2"))
        write_dns(self.node)
        with open(os.path.join(a.dir, "hosts"), "a") as f:
            f.write("# untouched\n")
        write_dns(self.node)
        self.assertIn("# untouched", self.hosts(a))
        # A pod that stops being ready drops out of every pod's hosts.
        cur = self.node.store.get(PODS, "default", "job-worker-0")
        cur["status"]["conditions"][0]["status"] = "False"
        self.node.store.replace(PODS, "default", "job-worker-0", cur)
        write_dns(self.node)
        self.assertEqual(self.answers(a), [])


if __name__ == "__main__":
    unittest.main()
