"""A pod the local test cluster's node runs, on a thread of its own: its
volumes set up, its init containers run in order, its containers
started, restarted with back-off and reaped, its status written, and its
stop: SIGTERM, the grace period, SIGKILL (see Status and Deletion in
node.py).

Standard library only.
"""
import copy
import os
import signal
import threading
import time

from node_const import HOST_IP
from node_dns import prepare_pod
from node_exec import ImageError, StartError, container_command, spawn
from node_volumes import MountError, mount_volumes
from store import now

BACKOFF_FIRST, BACKOFF_MAX = 1.0, 10.0


def pod_dir(state, ns, name, uid):
    """A pod's folder under the node's state folder: logs, hosts, volumes."""
    return os.path.join(state, "pods", ns, "%s-%s" % (name, uid[:8]))


class Container:
    """One container of a pod, and its process once started."""

    def __init__(self, spec, init=False):
        self.spec = spec
        self.name = spec.get("name", "")
        self.init = init
        self.proc = None
        self.started_at = None
        self.restarts = 0
        self.state = {"waiting": {"reason": "ContainerCreating"}}
        self.last_state = {}
        self.ready = False
        self.next_start = 0.0
        self.backoff = BACKOFF_FIRST
        self.finished = False  # terminated and not to be restarted

    def back_off(self):
        """Holds the next start back, each time twice as long (up to
        BACKOFF_MAX), as the kubelet's CrashLoopBackOff does."""
        self.next_start = time.monotonic() + self.backoff
        self.backoff = min(2 * self.backoff, BACKOFF_MAX)

    def status(self):
        return {"name": self.name, "image": self.spec.get("image", ""), "imageID": "local",
                "containerID": "local://%d" % self.proc.pid if self.proc else "",
                "ready": self.ready, "started": "running" in self.state,
                "restartCount": self.restarts, "state": copy.deepcopy(self.state),
                "lastState": copy.deepcopy(self.last_state)}


class PodRun:
    """A pod this node runs: its address, folder, containers, and the
    request to stop it."""

    def __init__(self, node, pod, ip):
        md = pod["metadata"]
        self.node = node
        self.ns, self.name, self.uid = md["namespace"], md["name"], md["uid"]
        self.pod = pod
        self.ip = ip
        self.dir = pod_dir(node.state, self.ns, self.name, self.uid)
        spec = pod.get("spec") or {}
        self.policy = spec.get("restartPolicy", "Always")
        self.inits = [Container(c, True) for c in spec.get("initContainers") or []]
        self.containers = [Container(c) for c in spec.get("containers") or []]
        self.stop = threading.Event()
        # Set when a process of the pod exits or a stop is asked: what the
        # pod's thread sleeps on (node_exits.py says why not a poll).
        self.wake = threading.Event()
        self.stop_grace = 30
        self.stop_delete = False  # delete the pod for good once stopped
        self.stop_gone = False    # the pod is already gone: write nothing
        self.stop_reason = None   # (reason, message): Failed with these
        self.thread = threading.Thread(target=self.run, daemon=True,
                                       name="pod-%s/%s" % (self.ns, self.name))
        self.mounts = {}  # volume name -> host path, once mount_volumes has run
        self.hostname = spec.get("hostname") or self.name
        self.dns_ready = False  # its /etc/hosts is written (node_dns.py)

    # --- stopping ---

    def request_stop(self, grace, delete=False, gone=False, reason=None):
        self.stop_grace = min(self.stop_grace, grace) if self.stop.is_set() else grace
        self.stop_delete = self.stop_delete or delete
        self.stop_gone = self.stop_gone or gone
        self.stop_reason = self.stop_reason or reason
        self.stop.set()
        self.wake.set()

    def signal(self, sig, container=None):
        for c in self.inits + self.containers:
            if c.proc and c.proc.poll() is None and container in (None, c.name):
                try:
                    os.killpg(c.proc.pid, sig)
                except ProcessLookupError:
                    pass

    def running(self):
        return [c for c in self.inits + self.containers if c.proc and c.proc.poll() is None]

    def sleep(self, timeout=None):
        """Waits until a process of the pod exits, a stop is asked, or
        timeout seconds (None: no limit) pass. The caller looks at what
        changed after this returns, so no wake-up between that look and the
        next sleep is lost."""
        self.wake.wait(timeout)
        self.wake.clear()

    # --- the pod's life, on its own thread ---

    def run(self):
        try:
            self._run()
        except Exception as e:  # a bug here must not take the node down
            self.node.log("pod %s/%s: %r" % (self.ns, self.name, e))
        finally:
            self.node.forget(self)

    def _run(self):
        os.makedirs(self.dir, exist_ok=True)
        self.write_status("Pending")
        while not self.stop.is_set():
            try:
                self.mounts = mount_volumes(self.node, self)
                prepare_pod(self.node, self)
                break
            except MountError as e:
                self.node.event(self.pod, "Warning", "FailedMount", str(e))
                self.stop.wait(2.0)
        ok = not self.stop.is_set() and self.run_inits()
        if ok and not self.stop.is_set():
            for c in self.containers:
                self.start(c)
            self.write_status()
            self.supervise()
        self.shut_down()

    def run_inits(self):
        for c in self.inits:
            while not self.stop.is_set():
                started = self.start(c)
                if started is None:
                    self.write_status("Pending")
                    self.stop.wait(c.next_start - time.monotonic())
                    continue
                if not started:
                    code = 128
                else:
                    self.write_status("Pending")
                    while c.proc.poll() is None and not self.stop.is_set():
                        self.sleep()
                    if self.stop.is_set():
                        return False
                    code = self.reap(c)
                if code == 0:
                    break
                if self.policy == "Never":
                    c.finished = True
                    self.write_status("Failed")
                    return False
                self.write_status("Pending")
                c.back_off()
                self.stop.wait(c.next_start - time.monotonic())
        return True

    def supervise(self):
        """Reaps the containers as they end and restarts them as the
        policy says, until all have finished or a stop is asked."""
        while not self.stop.is_set():
            changed = False
            for c in self.containers:
                if c.finished:
                    continue
                if c.proc and c.proc.poll() is not None:
                    code = self.reap(c)
                    changed = True
                    if self.policy == "Never" or (self.policy == "OnFailure" and code == 0):
                        c.finished = True
                    else:
                        c.back_off()
                        c.last_state = c.state
                        c.state = {"waiting": {"reason": "CrashLoopBackOff", "message":
                                               "back-off restarting failed container %s"
                                               % c.name}}
                elif c.proc is None and time.monotonic() >= c.next_start:
                    if c.started_at or "terminated" in c.last_state:
                        c.restarts += 1
                    self.start(c)
                    changed = True
            if all(c.finished for c in self.containers):
                self.write_status(self.final_phase())
                return
            if changed:
                self.write_status()
            self.sleep(self.next_start_in())

    def next_start_in(self):
        """Seconds until a container waiting to restart is due (None when
        none waits)."""
        due = [c.next_start for c in self.containers if c.proc is None and not c.finished]
        return max(0.0, min(due) - time.monotonic()) if due else None

    def final_phase(self):
        codes = [c.state.get("terminated", {}).get("exitCode", 1) for c in self.containers]
        return "Succeeded" if all(code == 0 for code in codes) else "Failed"

    def start(self, c):
        """Starts container c: True, False (a StartError) if it cannot
        start, None if its image is unknown (it waits: ErrImagePull)."""
        try:
            argv, env, workdir = container_command(self.node, self, c)
            c.proc = spawn(self.node, self, c, argv, env, workdir)
        except ImageError as e:
            c.proc = None
            c.state = {"waiting": {"reason": "ErrImagePull", "message": str(e)}}
            c.back_off()
            self.node.event(self.pod, "Warning", "Failed", str(e))
            return None
        except StartError as e:
            c.proc = None
            stamp = now()
            c.state = {"terminated": {"exitCode": 128, "reason": "StartError",
                                      "message": str(e), "startedAt": stamp, "finishedAt": stamp}}
            c.ready = False
            if not c.init:
                if self.policy == "Never":
                    c.finished = True
                else:
                    c.back_off()
                    c.last_state, c.state = c.state, {"waiting": {
                        "reason": "CrashLoopBackOff", "message": str(e)}}
            self.node.event(self.pod, "Warning", "Failed", str(e))
            return False
        self.node.exits.watch(c.proc.pid, self.wake.set)
        c.started_at = now()
        c.state = {"running": {"startedAt": c.started_at}}
        c.ready = not c.init
        self.node.event(self.pod, "Normal", "Started", "Started container %s" % c.name)
        return True

    def reap(self, c):
        """Records how container c's process ended; returns its exit code."""
        rc = c.proc.wait()
        code = 128 - rc if rc < 0 else rc
        term = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                "startedAt": c.started_at, "finishedAt": now(),
                "containerID": "local://%d" % c.proc.pid}
        if rc < 0:
            term["signal"] = -rc
        c.state, c.ready, c.proc = {"terminated": term}, False, None
        return code

    def shut_down(self):
        """Stops what still runs (SIGTERM, grace, SIGKILL) and writes the
        pod's last status; deletes it for good when that was asked."""
        if self.running():
            if not self.stop_gone:
                self.node.event(self.pod, "Normal", "Killing",
                                "Stopping container %s" % ", ".join(
                                    c.name for c in self.running()))
            self.signal(signal.SIGTERM)
            end = time.monotonic() + max(0, self.stop_grace)
            while self.running() and time.monotonic() < end:
                self.sleep(end - time.monotonic())
            self.signal(signal.SIGKILL)
            for c in self.inits + self.containers:
                if c.proc:
                    self.reap(c)
        if self.stop_gone:
            return
        for c in self.containers:  # every process is reaped: these never ran
            if "terminated" not in c.state:
                c.state = {"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown",
                                          "message": "the container was never started",
                                          "startedAt": now(), "finishedAt": now()}}
        if self.stop.is_set():
            reason = self.stop_reason
            self.write_status(self.final_phase() if not reason else "Failed", reason)
        if self.stop_delete:
            self.node.delete_pod(self.ns, self.name, self.uid)

    # --- status ---

    def write_status(self, phase=None, reason=None):
        inits = [c.status() for c in self.inits]
        ctrs = [c.status() for c in self.containers]
        if phase is None:
            phase = "Running" if any("running" in c.state for c in self.containers) \
                or all(c.finished for c in self.containers) else "Pending"
        ready = phase == "Running" and all(c.ready for c in self.containers)
        initialized = all("terminated" in c.state and c.state["terminated"]["exitCode"] == 0
                          for c in self.inits)

        def update(pod):
            st = pod.setdefault("status", {})
            st.update({"phase": phase, "hostIP": HOST_IP, "hostIPs": [{"ip": HOST_IP}],
                       "podIP": self.ip, "podIPs": [{"ip": self.ip}], "qosClass": "BestEffort",
                       "containerStatuses": ctrs})
            st.setdefault("startTime", now())
            if inits:
                st["initContainerStatuses"] = inits
            if reason:
                st["reason"], st["message"] = reason
            conds = {c["type"]: c for c in st.get("conditions", [])}
            for ctype, value in (("PodScheduled", True), ("Initialized", initialized),
                                 ("ContainersReady", ready), ("Ready", ready)):
                old = conds.get(ctype)
                status = "True" if value else "False"
                if old is None or old.get("status") != status:
                    conds[ctype] = {"type": ctype, "status": status, "lastProbeTime": None,
                                    "lastTransitionTime": now()}
            st["conditions"] = list(conds.values())
        self.node.update_status(self.ns, self.name, self.uid, update)
