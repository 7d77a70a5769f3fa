"""The node running real pods as a kubelet would, through the API's own
create path (defaults, admission, validation): native sidecars (started
in order with the init containers, kept running and restarted, stopped
after the containers in reverse order, the phase following the
containers), a container that exits beside one still running, the user,
group and groups a container runs as, runAsNonRoot, the modes and owners
of volume files with and without fsGroup, and a volume seen only where it
is mounted. Needs root and cc, as the cluster does."""
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

from node_const import PODS

HERE = os.path.dirname(os.path.abspath(__file__))
NS = "default"
WORKER_IMAGE = "mwj-worker"  # mapped to a user, as up.sh maps our worker's image


def sh(name, script, **extra):
    """A container that runs script under sh."""
    return dict({"name": name, "image": "busybox:1.36", "command": ["sh", "-c", script]},
                **extra)


def wait_for(line, log):
    """sh that waits up to 5 s for line in log, and fails without it."""
    return ('i=0; until grep -q "%s" %s; do i=$((i + 1)); [ $i -lt 100 ] || exit 1; '
            'sleep 0.05; done' % (line, log))


def sidecar(name, log, on_term="exit 0", **extra):
    """A native sidecar that notes its start and stop in log."""
    return sh(name, 'trap \'echo "%s stop" >> %s; %s\' TERM; echo "%s start" >> %s; '
              'while :; do sleep 0.05; done' % (name, log, on_term, name, log),
              restartPolicy="Always", **extra)


@unittest.skipUnless(os.geteuid() == 0 and shutil.which("cc"), "needs root and cc")
class NodePodsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Imported here: the API brings its controllers' threads up.
        from apiserver import Api
        from node import Node
        cls.dir = tempfile.mkdtemp(prefix="mwj-node-pods-test-")
        os.chmod(cls.dir, 0o711)  # as up.sh leaves it: podnet.so reachable
        podnet = os.path.join(cls.dir, "podnet.so")
        sandbox = os.path.join(cls.dir, "podsandbox")
        subprocess.run(["cc", "-O2", "-fPIC", "-shared", os.path.join(HERE, "podnet.c"),
                        "-o", podnet, "-ldl"], check=True)
        subprocess.run(["cc", "-O2", os.path.join(HERE, "podsandbox.c"), "-o", sandbox],
                       check=True)
        os.chmod(podnet, 0o755)
        # A CA of any text: the kube-root-ca.crt ConfigMap the token volume needs.
        cls.api = Api("-----BEGIN CERTIFICATE-----\nMWJ\n-----END CERTIFICATE-----\n")
        cls.node = Node(cls.api, os.path.join(cls.dir, "node"),
                        {WORKER_IMAGE: shutil.which("sh")}, podnet, sandbox, 6443, "", "",
                        log=lambda m: None, image_users={WORKER_IMAGE: (65532, 65532)})
        cls.node.start()

    @classmethod
    def tearDownClass(cls):
        cls.node.shutdown()
        shutil.rmtree(cls.dir)

    # --- helpers ---

    def create(self, kind, obj):
        from registry import Request
        reg = self.api.registry
        plural = {"Pod": "pods", "Secret": "secrets", "ConfigMap": "configmaps",
                  "PersistentVolumeClaim": "persistentvolumeclaims"}[kind]
        obj = dict(obj, apiVersion="v1", kind=kind)
        reg.create(reg.kind("v1", plural), NS, json.dumps(obj).encode(), Request({}))

    def run_pod(self, name, spec, until=("Succeeded", "Failed"), timeout=60):
        """Creates pod name with spec; returns it once its phase is in until."""
        spec = dict({"restartPolicy": "Never", "terminationGracePeriodSeconds": 5}, **spec)
        self.create("Pod", {"metadata": {"name": name}, "spec": spec})
        return self.wait(name, lambda p: p["status"].get("phase") in until, timeout)

    def wait(self, name, ok, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            pod = self.api.store.get(PODS, NS, name)
            if ok(pod):
                return pod
            if time.monotonic() > deadline:
                self.fail("pod %s: %s" % (name, json.dumps(pod.get("status"), indent=1)))
            time.sleep(0.05)

    def logs(self, name, container):
        path, _ = self.node.log_file(NS, name, container, False)
        with open(path) as f:
            return f.read()

    def history(self, name):
        """Every version of pod name the store holds from now on, as a
        list that a thread keeps filling."""
        seen = []
        rv = int(self.api.store.rv)

        def follow():
            nonlocal rv
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                events, newest = self.api.store.events_after(rv, PODS, 0.2)
                for ev in events or []:
                    if ev.obj["metadata"]["name"] == name:
                        seen.append(json.loads(json.dumps(ev.obj)))
                rv = max(rv, int(newest))
        threading.Thread(target=follow, daemon=True).start()
        return seen

    @staticmethod
    def states(statuses):
        return {s["name"]: next(iter(s["state"])) for s in statuses or []}

    # --- native sidecars ---

    def test_sidecars_start_in_order_and_stop_after_the_containers_in_reverse(self):
        log = "/mwj-test/order"
        mount = [{"name": "log", "mountPath": "/mwj-test"}]
        history = self.history("sidecars")
        pod = self.run_pod("sidecars", {
            "volumes": [{"name": "log", "emptyDir": {}}],
            "initContainers": [
                sidecar("proxy", log, volumeMounts=mount),
                # A regular init container after a sidecar runs once it has
                # started. Started is the sidecar's process running (the
                # statuses below show it), not its first line written yet,
                # as with a kubelet: so the next one waits for that line.
                sh("setup", '%s && echo setup >> %s' % (wait_for("proxy start", log), log),
                   volumeMounts=mount),
                # The last sidecar takes a while to stop: the pod stays Running meanwhile.
                sidecar("shipper", log, on_term="sleep 1; exit 0", volumeMounts=mount)],
            "containers": [sh("worker", '%s && echo worker >> %s; sleep 0.5' % (
                wait_for("shipper start", log), log), volumeMounts=mount)]})
        self.assertEqual(pod["status"]["phase"], "Succeeded")
        with open(os.path.join(self.node_dir(pod), "volumes", "log", "order")) as f:
            self.assertEqual(f.read().split("\n"), [
                "proxy start", "setup", "shipper start", "worker", "shipper stop", "proxy stop",
                ""])
        inits = pod["status"]["initContainerStatuses"]
        self.assertEqual([s["name"] for s in inits], ["proxy", "setup", "shipper"])
        for s in inits:
            self.assertEqual((s["state"]["terminated"]["exitCode"], s["restartCount"],
                              s["started"]), (0, 0, False), s)
        self.assertEqual(self.logs("sidecars", "shipper"), "")
        # While the sidecars were stopping, the pod was Running with the
        # worker terminated and the sidecars still running.
        stopping = [p for p in history if self.states(p["status"].get("containerStatuses")) ==
                    {"worker": "terminated"} and self.states(
                        p["status"].get("initContainerStatuses", []))["shipper"] == "running"]
        self.assertTrue(stopping, "no status showed the sidecars stopping")
        self.assertEqual({p["status"]["phase"] for p in stopping}, {"Running"})
        # While the worker ran, the sidecars were running, started and ready,
        # the pod Ready and Initialized.
        running = [p for p in history if self.states(p["status"].get("containerStatuses")) ==
                   {"worker": "running"}]
        self.assertTrue(running)
        for s in running[-1]["status"]["initContainerStatuses"]:
            if s["name"] != "setup":
                self.assertEqual((next(iter(s["state"])), s["started"], s["ready"]),
                                 ("running", True, True))
        conds = {c["type"]: c["status"] for c in running[-1]["status"]["conditions"]}
        self.assertEqual((conds["Initialized"], conds["Ready"]), ("True", "True"))

    def node_dir(self, pod):
        from node_pod import pod_dir
        md = pod["metadata"]
        return pod_dir(self.node.state, md["namespace"], md["name"], md["uid"])

    def test_a_sidecar_that_exits_is_restarted_while_the_containers_run(self):
        pod = self.run_pod("restarting-sidecar", {
            "volumes": [{"name": "log", "emptyDir": {}}],
            "initContainers": [sh("flaky", "echo ran >> /mwj-test/runs; exit 3",
                                  restartPolicy="Always",
                                  volumeMounts=[{"name": "log", "mountPath": "/mwj-test"}])],
            "containers": [sh("worker", 'until [ "$(wc -l < /mwj-test/runs)" -ge 2 ]; do '
                                        "sleep 0.1; done",
                              volumeMounts=[{"name": "log", "mountPath": "/mwj-test"}])]})
        self.assertEqual(pod["status"]["phase"], "Succeeded")
        s = pod["status"]["initContainerStatuses"][0]
        self.assertGreaterEqual(s["restartCount"], 1)
        self.assertEqual(s["lastState"]["terminated"]["exitCode"], 3)

    def test_a_failed_container_fails_the_pod_whatever_its_sidecar_does(self):
        pod = self.run_pod("failed-worker", {
            "initContainers": [sh("proxy", "trap 'exit 143' TERM; while :; do sleep 0.05; done",
                                  restartPolicy="Always")],
            "containers": [sh("worker", "exit 4")]})
        self.assertEqual(pod["status"]["phase"], "Failed")
        self.assertEqual(pod["status"]["containerStatuses"][0]["state"]["terminated"]
                         ["exitCode"], 4)
        conds = {c["type"]: c for c in pod["status"]["conditions"]}
        self.assertEqual((conds["Ready"]["status"], conds["Ready"]["reason"]),
                         ("False", "PodFailed"))

    def test_a_failed_init_container_under_never_fails_the_pod_and_stops_the_sidecars(self):
        pod = self.run_pod("failed-init", {
            "initContainers": [sh("proxy", "while :; do sleep 0.05; done",
                                  restartPolicy="Always"),
                               sh("setup", "exit 2")],
            "containers": [sh("worker", "exit 0")]})
        self.assertEqual(pod["status"]["phase"], "Failed")
        st = self.states(pod["status"]["initContainerStatuses"])
        self.assertEqual(st, {"proxy": "terminated", "setup": "terminated"})
        self.assertEqual(self.states(pod["status"]["containerStatuses"]), {"worker": "waiting"})
        self.assertEqual(pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
                         "PodInitializing")

    # --- containers side by side ---

    def test_a_container_that_exits_beside_a_running_one_leaves_the_pod_running(self):
        self.run_pod("beside", {"containers": [
            sh("worker", "exit 0"), sh("shipper", "sleep 300")]}, until=("Running",))
        pod = self.wait("beside", lambda p: self.states(p["status"]["containerStatuses"]) ==
                        {"worker": "terminated", "shipper": "running"})
        self.assertEqual(pod["status"]["phase"], "Running")
        worker, shipper = pod["status"]["containerStatuses"]
        self.assertEqual((worker["state"]["terminated"]["exitCode"],
                          worker["state"]["terminated"]["reason"], worker["ready"],
                          worker["started"]), (0, "Completed", False, False))
        self.assertTrue(worker["containerID"])
        self.assertEqual((shipper["ready"], shipper["started"]), (True, True))
        conds = {c["type"]: c for c in pod["status"]["conditions"]}
        self.assertEqual((conds["Ready"]["status"], conds["Ready"]["reason"],
                          conds["Ready"]["message"]),
                         ("False", "ContainersNotReady", "containers with unready status: "
                                                         "[worker]"))
        self.node.kill(NS, "beside", 9)
        pod = self.wait("beside", lambda p: p["status"]["phase"] == "Failed")
        self.assertEqual(pod["status"]["containerStatuses"][1]["state"]["terminated"]
                         ["exitCode"], 137)

    # --- users and groups ---

    def ids(self, name, spec, container="main"):
        pod = self.run_pod(name, spec)
        self.assertEqual(pod["status"]["phase"], "Succeeded", pod["status"])
        return self.logs(name, container).split("\n")[0]

    def test_a_container_runs_as_its_user_group_and_groups_container_over_pod(self):
        pod_sc = {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000,
                  "supplementalGroups": [4000, 4001]}
        self.assertEqual(self.ids("ids-pod", {"securityContext": pod_sc, "containers": [
            sh("main", 'echo "$(id -u) $(id -g) $(id -G) $HOME"')]}),
            "1000 3000 3000 2000 4000 4001 /")
        self.assertEqual(self.ids("ids-container", {"securityContext": pod_sc, "containers": [
            sh("main", 'echo "$(id -u) $(id -g) $(id -G)"',
               securityContext={"runAsUser": 1001, "runAsGroup": 3001})]}),
            "1001 3001 3001 2000 4000 4001")

    def test_the_image_user_applies_unless_the_pod_says_otherwise_and_root_by_default(self):
        self.assertEqual(self.ids("ids-image", {"containers": [
            sh("main", 'echo "$(id -u) $(id -g) $(id -G)"', image=WORKER_IMAGE)]}),
            "65532 65532 65532")
        # Another user than the image's: its group is not the image's.
        self.assertEqual(self.ids("ids-image-other", {"containers": [
            sh("main", 'echo "$(id -u) $(id -g)"', image=WORKER_IMAGE,
               securityContext={"runAsUser": 1000})]}), "1000 0")
        self.assertEqual(self.ids("ids-root", {"containers": [
            sh("main", 'echo "$(id -u) $(id -g) $(id -G) $HOME"')]}), "0 0 0 /root")

    def test_run_as_non_root_refuses_a_root_container_as_the_kubelet_does(self):
        self.create("Pod", {"metadata": {"name": "non-root"}, "spec": {
            "restartPolicy": "Never", "securityContext": {"runAsNonRoot": True},
            "containers": [sh("main", "true")]}})
        pod = self.wait("non-root", lambda p: p["status"].get("containerStatuses") and
                        "waiting" in p["status"]["containerStatuses"][0]["state"] and
                        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] ==
                        "CreateContainerConfigError")
        self.assertEqual(pod["status"]["phase"], "Pending")
        self.assertEqual(pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"],
                         'container has runAsNonRoot and image will run as root (pod: '
                         '"non-root_default(%s)", container: main)' % pod["metadata"]["uid"])
        # What kubectl logs then says (validateContainerLogStatus).
        from errors import ApiError
        with self.assertRaises(ApiError) as e:
            self.node.log_file(NS, "non-root", "main", False)
        self.assertEqual(e.exception.message, 'container "main" in pod "non-root" is waiting '
                         "to start: CreateContainerConfigError")
        self.create("Pod", {"metadata": {"name": "non-root-0"}, "spec": {
            "restartPolicy": "Never", "securityContext": {"runAsNonRoot": True},
            "containers": [sh("main", "true", securityContext={"runAsUser": 0})]}})
        pod = self.wait("non-root-0", lambda p: "waiting" in (
            p["status"].get("containerStatuses") or [{"state": {}}])[0]["state"] and
            p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] ==
            "CreateContainerConfigError")
        self.assertIn("container's runAsUser breaks non-root policy",
                      pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"])
        # The image's non-root user passes.
        self.assertEqual(self.ids("non-root-image", {
            "securityContext": {"runAsNonRoot": True},
            "containers": [sh("main", "id -u", image=WORKER_IMAGE)]}), "65532")

    # --- volume files ---

    def files(self, name, spec):
        """'mode uid gid path' of each path the container's stat lists."""
        pod = self.run_pod(name, spec)
        self.assertEqual(pod["status"]["phase"], "Succeeded", self.logs(name, "main"))
        out = {}
        for line in self.logs(name, "main").strip().split("\n"):
            mode, uid, gid, path = line.split(" ", 3)
            out[path] = "%s %s %s" % (mode, uid, gid)
        return out

    VOLUMES = [{"name": "key", "secret": {"secretName": "mode-key", "defaultMode": 0o400}},
               {"name": "conf", "configMap": {"name": "mode-conf",
                                              "items": [{"key": "a", "path": "a"},
                                                        {"key": "b", "path": "sub/b",
                                                         "mode": 0o600}]}},
               {"name": "scratch", "emptyDir": {}},
               {"name": "claim", "persistentVolumeClaim": {"claimName": "mode-claim"}}]
    MOUNTS = [{"name": "key", "mountPath": "/mwj-test/key"},
              {"name": "conf", "mountPath": "/mwj-test/conf"},
              {"name": "scratch", "mountPath": "/mwj-test/scratch"},
              {"name": "claim", "mountPath": "/mwj-test/claim"}]
    STAT = ("touch /mwj-test/scratch/new; stat -c '%a %u %g %n' /mwj-test/key /mwj-test/key/k "
            "/mwj-test/conf /mwj-test/conf/a /mwj-test/conf/sub /mwj-test/conf/sub/b "
            "/mwj-test/scratch /mwj-test/scratch/new /mwj-test/claim "
            "/var/run/secrets/kubernetes.io/serviceaccount/token "
            "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt")

    def setUpVolumes(self):
        if getattr(NodePodsTest, "volumes_made", False):
            return
        self.create("Secret", {"metadata": {"name": "mode-key"}, "data": {"k": "c2VjcmV0"}})
        self.create("ConfigMap", {"metadata": {"name": "mode-conf"},
                                  "data": {"a": "1", "b": "2"}})
        NodePodsTest.volumes_made = True

    def claim(self, name):
        self.create("PersistentVolumeClaim", {"metadata": {"name": name}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})

    def test_volume_files_without_fs_group_keep_their_modes_and_belong_to_root(self):
        self.setUpVolumes()
        self.claim("mode-claim")
        got = self.files("modes-plain", {"volumes": self.VOLUMES, "containers": [
            sh("main", self.STAT, volumeMounts=self.MOUNTS)]})
        sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
        self.assertEqual(got, {
            "/mwj-test/key": "1777 0 0", "/mwj-test/key/k": "400 0 0",
            "/mwj-test/conf": "777 0 0", "/mwj-test/conf/a": "644 0 0",
            "/mwj-test/conf/sub": "755 0 0", "/mwj-test/conf/sub/b": "600 0 0",
            "/mwj-test/scratch": "777 0 0", "/mwj-test/scratch/new": "644 0 0",
            "/mwj-test/claim": "777 0 0", sa + "token": "644 0 0", sa + "ca.crt": "644 0 0"})

    def test_fs_group_owns_the_volumes_a_kubelet_manages_and_the_token_is_the_users(self):
        self.setUpVolumes()
        self.claim("mode-claim-2")
        volumes = [dict(v, persistentVolumeClaim={"claimName": "mode-claim-2"})
                   if "persistentVolumeClaim" in v else v for v in self.VOLUMES]
        got = self.files("modes-fs-group", {
            "securityContext": {"runAsUser": 1000, "fsGroup": 2000},
            "volumes": volumes, "containers": [sh("main", self.STAT, volumeMounts=self.MOUNTS)]})
        sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
        self.assertEqual(got, {
            "/mwj-test/key": "3777 0 2000", "/mwj-test/key/k": "440 0 2000",
            "/mwj-test/conf": "2777 0 2000", "/mwj-test/conf/a": "644 0 2000",
            "/mwj-test/conf/sub": "2755 0 2000", "/mwj-test/conf/sub/b": "640 0 2000",
            "/mwj-test/scratch": "2777 0 2000", "/mwj-test/scratch/new": "644 1000 2000",
            # A claim's folder is kind's hostPath volume: no fsGroup.
            "/mwj-test/claim": "777 0 0",
            sa + "token": "640 1000 2000", sa + "ca.crt": "644 0 2000"})

    def test_the_token_is_0600_and_the_users_when_every_container_shares_one_user(self):
        sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
        got = self.files("token-user", {"securityContext": {"runAsUser": 1000}, "containers": [
            sh("main", "stat -c '%a %u %g %n' " + sa + "token")]})
        self.assertEqual(got, {sa + "token": "600 1000 0"})
        # Two users: no single owner, and no fsGroup: defaultMode, root's.
        got = self.files("token-two-users", {"securityContext": {"runAsUser": 1000},
                                             "initContainers": [sh("first", "true", securityContext={
                                                 "runAsUser": 1001})],
                                             "containers": [sh("main", "stat -c '%a %u %g %n' " +
                                                               sa + "token")]})
        self.assertEqual(got, {sa + "token": "644 0 0"})

    def test_a_volume_is_seen_only_where_it_is_mounted_and_read_only_where_so(self):
        self.setUpVolumes()
        pod = self.run_pod("visible", {
            "volumes": [{"name": "shared", "emptyDir": {}},
                        {"name": "key", "secret": {"secretName": "mode-key"}}],
            "initContainers": [sh("writer", "echo hi > /mwj-test/shared/file",
                                  volumeMounts=[{"name": "shared", "mountPath": "/mwj-test/shared"}])],
            "containers": [
                sh("main", "cat /mwj-test/shared/file; touch /mwj-test/shared/x 2>/dev/null || "
                           "echo read-only; touch /mwj-test/key/x 2>/dev/null || echo key read-only",
                   volumeMounts=[{"name": "shared", "mountPath": "/mwj-test/shared",
                                  "readOnly": True},
                                 {"name": "key", "mountPath": "/mwj-test/key"}]),
                sh("other", "ls /mwj-test/shared/file 2>/dev/null || echo not here; "
                            "ls /mwj-test/key/k 2>/dev/null || echo no key")]})
        self.assertEqual(pod["status"]["phase"], "Succeeded")
        self.assertEqual(self.logs("visible", "main"), "hi\nread-only\nkey read-only\n")
        self.assertEqual(self.logs("visible", "other"), "not here\nno key\n")


if __name__ == "__main__":
    unittest.main()
