"""A pod the local test cluster's node runs, on a thread of its own: its
volumes set up, its init containers run in order (sidecars among them
started and kept running), its containers started, restarted with
back-off and reaped, its projected ServiceAccount tokens refreshed when
due (node_volumes.py), its status written, and its stop: SIGTERM, the
grace period, SIGKILL (see Init containers, Status and Deletion in
node.py). The status it writes is the kubelet's: node_status.py.

Standard library only.
"""
import os
import signal
import threading
import time

from node_dns import prepare_pod
from node_exec import ImageError, StartError, container_command, spawn
from node_security import ConfigError
from node_status import pod_status
from node_volumes import MountError, mount_volumes, refresh_tokens, token_refresh_in
from store import now

BACKOFF_FIRST, BACKOFF_MAX = 1.0, 10.0


def pod_dir(state, ns, name, uid):
    """A pod's folder under the node's state folder: logs, hosts, volumes."""
    return os.path.join(state, "pods", ns, "%s-%s" % (name, uid[:8]))


def go_duration(seconds):
    """time.Duration's String() of whole seconds below an hour."""
    m, s = divmod(int(seconds), 60)
    return "%dm%ds" % (m, s) if m else "%ds" % s


class Container:
    """One container of a pod, and its process once started. kind is
    "init" (runs to exit 0 before the next), "sidecar" (an init container
    with restartPolicy Always) or "main"."""

    def __init__(self, spec, kind, waiting):
        self.spec = spec
        self.name = spec.get("name", "")
        self.kind = kind
        self.proc = None
        self.container_id = ""  # of its latest process, which the status keeps
        self.started_at = None
        self.ran = False       # its process has been started at least once
        self.restarts = 0
        self.state = {"waiting": {"reason": waiting}}
        self.last_state = {}
        self.next_start = 0.0
        self.backoff = BACKOFF_FIRST
        self.done = False      # an init container that exited 0
        self.finished = False  # terminated and not to be restarted

    @property
    def is_init(self):
        return self.kind != "main"

    def due(self):
        return self.proc is None and time.monotonic() >= self.next_start

    def back_off(self, pod):
        """Holds the next start back, each time twice as long (up to
        BACKOFF_MAX), as the kubelet's CrashLoopBackOff does, and says so
        in the state (kuberuntime_manager.go, doBackOff)."""
        self.next_start = time.monotonic() + self.backoff
        md = pod["metadata"]
        message = "back-off %s restarting failed container=%s pod=%s_%s(%s)" % (
            go_duration(self.backoff), self.name, md["name"], md["namespace"], md["uid"])
        self.backoff = min(2 * self.backoff, BACKOFF_MAX)
        if "terminated" in self.state:
            self.last_state = self.state
        self.state = {"waiting": {"reason": "CrashLoopBackOff", "message": message}}


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
        init_specs = spec.get("initContainers") or []
        # convertToAPIContainerStatuses: PodInitializing while there are
        # init containers, else ContainerCreating.
        waiting = "PodInitializing" if init_specs else "ContainerCreating"
        self.inits = [Container(c, "sidecar" if c.get("restartPolicy") == "Always" else "init",
                                waiting) for c in init_specs]
        self.containers = [Container(c, "main", waiting) for c in spec.get("containers") or []]
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
        self.mounts = {}  # volume name -> (host path, read-only), once mounted
        self.tokens = {}  # host path -> node_volumes.ProjectedToken, once written
        self.hostname = spec.get("hostname") or self.name
        self.init_failed = False  # an init container failed under restartPolicy Never
        self.written = None       # the status last written, to write only changes

    @property
    def sidecars(self):
        return [c for c in self.inits if c.kind == "sidecar"]

    def all(self):
        return self.inits + self.containers

    # --- stopping ---

    def request_stop(self, grace, delete=False, gone=False, reason=None):
        self.stop_grace = min(self.stop_grace, grace) if self.stop.is_set() else grace
        self.stop_delete = self.stop_delete or delete
        self.stop_gone = self.stop_gone or gone
        self.stop_reason = self.stop_reason or reason
        self.stop.set()
        self.wake.set()

    def signal(self, sig, container=None, among=None, leader_only=False):
        """Sends sig to the process groups of the containers (among, or
        all; only the one named container), or to their first processes
        alone: a runtime stops a container by signalling its first
        process, and kills whatever is left in it."""
        for c in among if among is not None else self.all():
            if c.proc and c.proc.poll() is None and container in (None, c.name):
                try:
                    if leader_only:
                        os.kill(c.proc.pid, sig)
                    else:
                        os.killpg(c.proc.pid, sig)
                except ProcessLookupError:
                    pass

    def running(self, among=None):
        return [c for c in (among if among is not None else self.all())
                if c.proc and c.proc.poll() is None]

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
        self.write_status()
        while not self.stop.is_set():
            try:
                self.mounts = mount_volumes(self.node, self)
                prepare_pod(self.node, self)
                break
            except MountError as e:
                self.node.event(self.pod, "Warning", "FailedMount", str(e))
                self.stop.wait(2.0)
        if not self.stop.is_set():
            self.live()
        if not self.stop.is_set():
            # The containers are done (or an init container failed under
            # Never): the sidecars go, as the kubelet's KillPod does once
            # no container is left to keep or start.
            self.terminate(self.pod_grace())
            self.write_status(terminal=True)
        self.shut_down()

    def live(self):
        """Starts, reaps and restarts the pod's containers, and refreshes
        its tokens, until every container has finished for good, an init
        container has failed under restartPolicy Never, or a stop is
        asked."""
        while not self.stop.is_set():
            changed = self.reap_exited()
            changed = self.start_due() or changed
            if changed:
                self.write_status()
            if self.init_failed or (self.initialized() and
                                    all(c.finished for c in self.containers)):
                return
            refresh_tokens(self.node, self)
            waits = [w for w in (self.next_start_in(), token_refresh_in(self)) if w is not None]
            self.sleep(min(waits) if waits else None)

    def initialized(self):
        """Every init container has exited 0, every sidecar has started."""
        return all(c.done if c.kind == "init" else c.ran for c in self.inits)

    def reap_exited(self):
        """Records the exits since the last look, and what follows each:
        the next init container, a restart after back-off, or nothing."""
        changed = False
        for c in self.all():
            if c.proc is None or c.proc.poll() is None:
                continue
            code = self.reap(c)
            changed = True
            self.after_exit(c, code)
        return changed

    def after_exit(self, c, code):
        if c.kind == "sidecar":
            self.back_off(c)  # restartPolicy Always: whatever its exit code
        elif c.kind == "init":
            if code == 0:
                c.done = True
            elif self.policy == "Never":
                c.finished = self.init_failed = True
            else:
                self.back_off(c)
        elif self.policy == "Never" or (self.policy == "OnFailure" and code == 0):
            c.finished = True
        else:
            self.back_off(c)

    def back_off(self, c):
        c.back_off(self.pod)
        md = self.pod["metadata"]
        self.node.event(self.pod, "Warning", "BackOff",
                        "Back-off restarting failed container %s in pod %s_%s(%s)"
                        % (c.name, md["name"], md["namespace"], md["uid"]))

    def start_due(self):
        """Starts what is due: sidecars that stopped, the next init
        container, and, once all have, the containers."""
        changed = False
        for c in self.sidecars:
            if c.ran and c.due():
                self.start(c)
                changed = True
        for c in self.inits:
            if c.done or (c.kind == "sidecar" and c.ran):
                continue
            if c.due() and not c.finished:
                self.start(c)
                changed = True
            if not (c.kind == "sidecar" and c.ran):
                return changed  # the next one waits for this one
        for c in self.containers:
            if not c.finished and c.due():
                self.start(c)
                changed = True
        return changed

    def next_start_in(self):
        """Seconds until a container waiting to (re)start is due (None
        when none waits)."""
        due = [c.next_start for c in self.all()
               if c.proc is None and not c.finished and not c.done]
        return max(0.0, min(due) - time.monotonic()) if due else None

    def start(self, c):
        """Starts container c: True, False (a StartError: it counts as an
        exit 128) if it cannot start, None if it waits (its image is
        unknown: ErrImagePull; its config cannot be made:
        CreateContainerConfigError)."""
        restarting = c.ran or "terminated" in c.last_state
        c.restarts += restarting  # before spawn: the log file is numbered by it
        try:
            argv, env, workdir, user = container_command(self.node, self, c)
            c.proc = spawn(self.node, self, c, argv, env, workdir, user)
        except (ImageError, ConfigError) as e:
            c.restarts -= restarting  # nothing was created
            c.proc = None
            c.state = {"waiting": {"reason": "ErrImagePull" if isinstance(e, ImageError)
                                   else "CreateContainerConfigError", "message": str(e)}}
            c.next_start = time.monotonic() + c.backoff
            c.backoff = min(2 * c.backoff, BACKOFF_MAX)
            # kuberuntime_container.go startContainer: "Error: %v" for a
            # config that cannot be made.
            self.node.event(self.pod, "Warning", "Failed",
                            str(e) if isinstance(e, ImageError) else "Error: %s" % e)
            return None
        except StartError as e:
            c.proc = None
            stamp = now()
            c.state = {"terminated": {"exitCode": 128, "reason": "StartError",
                                      "message": str(e), "startedAt": stamp, "finishedAt": stamp}}
            self.node.event(self.pod, "Warning", "Failed", str(e))
            self.after_exit(c, 128)
            return False
        c.container_id = "local://%d" % c.proc.pid
        self.node.exits.watch(c.proc.pid, self.wake.set)
        c.ran = True
        c.started_at = now()
        c.state = {"running": {"startedAt": c.started_at}}
        self.node.event(self.pod, "Normal", "Started", "Started container %s" % c.name)
        return True

    def reap(self, c):
        """Records how container c's process ended; returns its exit code."""
        rc = c.proc.wait()
        code = 128 - rc if rc < 0 else rc
        term = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                "startedAt": c.started_at, "finishedAt": now(),
                "containerID": c.container_id}
        if rc < 0:
            term["signal"] = -rc
        c.state, c.proc = {"terminated": term}, None
        return code

    # --- stopping, as the kubelet's killContainersWithSyncResult ---

    def pod_grace(self):
        spec = self.pod.get("spec") or {}
        return spec.get("terminationGracePeriodSeconds", 30)

    def terminate(self, grace):
        """Stops what still runs within grace seconds: SIGTERM to the
        containers (and an init container) at once, then to each sidecar
        in reverse order once the containers and the later sidecars have
        exited (kuberuntime_termination_order.go), SIGKILL to whatever
        runs when the grace period is over."""
        end = time.monotonic() + max(0, grace)
        first = [c for c in self.inits if c.kind == "init"] + self.containers
        for c in self.running(first):
            self.stopping_event(c)
        self.signal(signal.SIGTERM, among=first, leader_only=True)
        self.wait_until_gone(first, end)
        for c in reversed(self.sidecars):
            if time.monotonic() >= end:
                break
            if self.running([c]):
                self.stopping_event(c)
                self.signal(signal.SIGTERM, among=[c], leader_only=True)
                self.wait_until_gone([c], end)
        self.signal(signal.SIGKILL)
        for c in self.all():
            if c.proc:
                self.reap(c)
                c.finished = True

    def stopping_event(self, c):
        if not self.stop_gone:
            self.node.event(self.pod, "Normal", "Killing", "Stopping container %s" % c.name)

    def wait_until_gone(self, among, end):
        """Waits for among's processes to end, reaping and showing each
        exit as it comes, until end."""
        while self.running(among) and time.monotonic() < end:
            self.sleep(end - time.monotonic())
            exited = [c for c in among if c.proc and c.proc.poll() is not None]
            for c in exited:
                self.reap(c)
                c.finished = True
            if exited and not self.stop_gone:
                self.write_status()

    def shut_down(self):
        """After a stop was asked: stops what still runs and writes the
        pod's last status; deletes it for good when that was asked."""
        if not self.stop.is_set():
            return
        self.terminate(self.stop_grace)
        if self.stop_gone:
            return
        for c in self.containers:  # every process is reaped: these never ran
            if "terminated" not in c.state:
                c.state = {"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown",
                                          "message": "the container was never started",
                                          "startedAt": now(), "finishedAt": now()}}
        self.write_status(terminal=True, phase="Failed" if self.stop_reason else None,
                          reason=self.stop_reason)
        if self.stop_delete:
            self.node.delete_pod(self.ns, self.name, self.uid)

    # --- status ---

    def write_status(self, terminal=False, phase=None, reason=None):
        """Writes the pod's status as the kubelet would generate it now
        (node_status.py), unless it is what was last written."""
        inits = [status_of(c) for c in self.inits]
        ctrs = [status_of(c) for c in self.containers]
        key = (terminal, phase, reason, repr(inits), repr(ctrs))
        if key == self.written:
            return
        self.written = key

        def update(pod):
            pod_status(pod, self.ip, inits, ctrs, terminal, phase, reason)
        self.node.update_status(self.ns, self.name, self.uid, update)


def status_of(c):
    """A container's status as the kubelet shows it (started and ready
    as the prober manager sets them when no probe runs:
    pkg/kubelet/prober/prober_manager.go, UpdatePodStatus)."""
    running = "running" in c.state
    if c.kind == "init":
        term = c.state.get("terminated")
        ready = bool(term) and term.get("exitCode") == 0
    else:
        ready = running
    return {"name": c.name, "image": c.spec.get("image", ""), "imageID": "local",
            "containerID": c.container_id,
            "ready": ready, "started": running, "restartCount": c.restarts,
            "state": dict(c.state), "lastState": dict(c.last_state)}
