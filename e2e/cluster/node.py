"""The local test cluster's node: what the scheduler, the kubelet, a
container runtime, cluster DNS and a volume provisioner do for the pods the
operator creates, with local processes instead of containers.

- Scheduling: a pod without spec.nodeName is bound to this node, unless
  it names a schedulerName other than default-scheduler.
- Network: each pod gets a loopback address of its own (127.0.x.y) and
  shares the host's network otherwise, as with hostNetwork. Its processes
  preload podnet.so, so that listening "on all interfaces" listens on the
  pod's address only and pods can use the same port.
- Sandbox: each container runs in a mount and UTS namespace of its own
  (util-linux unshare), where /etc/hosts and /etc/resolv.conf are the
  pod's, the host name is the pod's, and the pod's volumes are bind-mounted
  at their mountPath. Mount points missing on the host are created there.
- DNS: the pod's /etc/hosts holds the names cluster DNS gives: its own, and
  <hostname>.<subdomain>.<ns>.svc[.cluster.local] (and the shorter forms a
  search path reaches from the same namespace) for every pod behind a
  headless Service, not-ready pods included when the Service has
  publishNotReadyAddresses. It is rewritten in place as pods come and go.
- Images: the image's repository name (no registry, tag or digest) picks
  an entrypoint given with --image NAME=PATH; the image of our worker maps
  to the built mwj-worker. A container with a command runs that command on
  the host, whatever its image. An unknown image without a command waits
  with ErrImagePull.
- Env: the container's env (value, $(VAR) references, fieldRef of the
  downward API, configMapKeyRef) and envFrom configMaps, HOSTNAME, and
  KUBERNETES_SERVICE_HOST/PORT for the API server, whose token and CA are
  mounted at /var/run/secrets/kubernetes.io/serviceaccount.
- Volumes: emptyDir (a folder per pod), hostPath (with its type checks),
  persistentVolumeClaim (a folder per claim; claims are bound when
  created), configMap (its keys as files). Other kinds fail to mount, with a
  FailedMount event, and the pod stays Pending.
- Status: Pending (ContainerCreating), Running and Ready once the
  containers start (probes are not run), then Succeeded or Failed with
  each container's exit code and reason (Completed, Error, StartError), as
  containerStatuses show them. restartPolicy Always and OnFailure restart
  a container in place, with a back-off of 1 s doubling to 10 s (the
  kubelet's is 10 s to 5 min).
- Deletion: SIGTERM to the container's process group, the grace period,
  SIGKILL, then the pod is deleted for good (grace 0).
- Logs: one file per container and restart under
  <state>/pods/<ns>/<name>-<uid>/, served to kubectl logs.
- Faults for tests: preempt (as the scheduler or an eviction does), kill
  a container with a signal.

Standard library only.
"""
import copy
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
import uuid

from store import ApiError, now

PODS = "/v1/pods"
SERVICES = "/v1/services"
PVCS = "/v1/persistentvolumeclaims"
CONFIGMAPS = "/v1/configmaps"
EVENTS = "/v1/events"
NODE_NAME = "mwj-local-node"
HOST_IP = "127.0.0.1"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BACKOFF_FIRST, BACKOFF_MAX = 1.0, 10.0


def pod_dir(state, ns, name, uid):
    """A pod's folder under the node's state folder: logs, hosts, volumes."""
    return os.path.join(state, "pods", ns, "%s-%s" % (name, uid[:8]))


def image_repository(image):
    """"registry:5000/team/mwj-worker:1.0@sha256:..." -> "mwj-worker"."""
    name = image.split("@")[0].rsplit("/", 1)[-1]
    return name.split(":")[0]


def expand(text, env):
    """Kubernetes' $(VAR) references: a defined variable is replaced, an
    undefined one is left as it is, and $$ is a literal $."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)),
                  text)


def field_value(pod, path):
    """The downward API's fieldRef paths."""
    md, spec, st = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    m = re.match(r"^metadata\.(labels|annotations)\['([^']+)'\]$", path)
    if m:
        return (md.get(m.group(1)) or {}).get(m.group(2), "")
    simple = {"metadata.name": md.get("name"), "metadata.namespace": md.get("namespace"),
              "metadata.uid": md.get("uid"), "spec.nodeName": spec.get("nodeName"),
              "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
              "status.podIP": st.get("podIP"), "status.podIPs": st.get("podIP"),
              "status.hostIP": st.get("hostIP"), "status.hostIPs": st.get("hostIP")}
    if path not in simple:
        raise ValueError("fieldRef %s is not supported" % path)
    return simple[path] or ""


class StartError(Exception):
    """A container that cannot be started, as the runtime reports it."""


class ImageError(Exception):
    """An image the node has no entrypoint for: the container waits
    (ErrImagePull), as for an image that cannot be pulled."""


class MountError(Exception):
    """A volume that cannot be set up: the pod waits (FailedMount)."""


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
        self.stop_grace = 30
        self.stop_delete = False  # delete the pod for good once stopped
        self.stop_gone = False    # the pod is already gone: write nothing
        self.stop_reason = None   # (reason, message): Failed with these
        self.thread = threading.Thread(target=self.run, daemon=True,
                                       name="pod-%s/%s" % (self.ns, self.name))
        self.mounts = {}  # volume name -> host path, once node.volumes has run
        self.hostname = spec.get("hostname") or self.name

    # --- stopping ---

    def request_stop(self, grace, delete=False, gone=False, reason=None):
        self.stop_grace = min(self.stop_grace, grace) if self.stop.is_set() else grace
        self.stop_delete = self.stop_delete or delete
        self.stop_gone = self.stop_gone or gone
        self.stop_reason = self.stop_reason or reason
        self.stop.set()

    def signal(self, sig, container=None):
        for c in self.inits + self.containers:
            if c.proc and c.proc.poll() is None and container in (None, c.name):
                try:
                    os.killpg(c.proc.pid, sig)
                except ProcessLookupError:
                    pass

    def running(self):
        return [c for c in self.inits + self.containers if c.proc and c.proc.poll() is None]

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
                self.mounts = self.node.volumes(self)
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
                    while c.proc.poll() is None and not self.stop.wait(0.05):
                        pass
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
        while not self.stop.wait(0.05):
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

    def final_phase(self):
        codes = [c.state.get("terminated", {}).get("exitCode", 1) for c in self.containers]
        return "Succeeded" if all(code == 0 for code in codes) else "Failed"

    def start(self, c):
        """Starts container c: True, False (a StartError) if it cannot
        start, None if its image is unknown (it waits: ErrImagePull)."""
        try:
            argv, env, workdir = self.node.command(self, c)
            c.proc = self.node.spawn(self, c, argv, env, workdir)
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
                time.sleep(0.05)
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


class Node:
    """Runs the pods of the store in `api` bound to this node."""

    def __init__(self, api, state, images, podnet, server_port, ca, token, log=print):
        self.api = api
        self.store = api.store
        self.state = state
        self.images = images
        self.podnet = podnet
        self.server_port = server_port
        self.ca = ca
        self.token = token
        self.log = log
        self.lock = threading.RLock()
        self.runs = {}      # (ns, name) -> PodRun
        self.ran = set()    # uids of every pod started here
        self.ips = set()
        self.next_ip = 1
        self.dns_dirty = threading.Event()
        self.dns_lock = threading.Lock()
        self.stopping = False
        os.makedirs(os.path.join(state, "pods"), exist_ok=True)

    # --- the loop: follow the store's changes, as the kubelet's watch ---

    def start(self):
        self.store.create("/v1/nodes", None, {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": NODE_NAME, "labels": {"kubernetes.io/hostname": NODE_NAME}},
            "status": {"addresses": [{"type": "InternalIP", "address": HOST_IP}],
                       "conditions": [{"type": "Ready", "status": "True",
                                       "reason": "KubeletReady",
                                       "message": "the local test node runs pods as processes",
                                       "lastTransitionTime": now()}]}})
        threading.Thread(target=self.loop, daemon=True, name="node").start()

    def loop(self):
        rv = None
        while not self.stopping:
            try:
                if rv is None:
                    rv = self.resync()
                events, newest = self.store.events_after(rv, None, None, 0.5)
                if events is None:
                    rv = None  # compacted: start again from a list
                    continue
                for erv, key, _, etype, obj in events:
                    rv = erv
                    self.handle(key, etype, obj)
                rv = max(rv, newest)
                if self.dns_dirty.is_set():
                    self.dns_dirty.clear()
                    self.write_dns()
            except Exception as e:  # keep the node alive; say what went wrong
                self.log("node: %r" % e)
                time.sleep(0.5)

    def resync(self):
        with self.store.lock:
            pods, rv = self.store.list(PODS)
            claims, _ = self.store.list(PVCS)
        for c in claims:
            self.handle(PVCS, "ADDED", c)
        for p in pods:
            self.handle(PODS, "ADDED", p)
        with self.lock:
            alive = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}
            for key, r in list(self.runs.items()):
                if key not in alive:
                    r.request_stop(0, gone=True)
        self.dns_dirty.set()
        return int(rv)

    def handle(self, key, etype, obj):
        if key == SERVICES:
            self.dns_dirty.set()
        elif key == PVCS and etype == "ADDED":
            self.bind_claim(obj)
        elif key == PODS:
            self.handle_pod(etype, obj)

    def handle_pod(self, etype, pod):
        md, spec = pod["metadata"], pod.get("spec") or {}
        key = (md["namespace"], md["name"])
        with self.lock:
            run = self.runs.get(key)
            if run and run.uid != md["uid"]:
                run.request_stop(0, gone=True)
                run = None
            if etype == "DELETED":
                if run:
                    run.request_stop(0, gone=True)
                self.dns_dirty.set()
                return
            if spec.get("nodeName") not in (None, "", NODE_NAME):
                return  # another node's
            if not spec.get("nodeName") and spec.get("schedulerName") not in (
                    None, "", "default-scheduler"):
                return  # left to a scheduler that does not run here
            phase = (pod.get("status") or {}).get("phase")
            if md.get("deletionTimestamp"):
                if run:
                    run.request_stop(md.get("deletionGracePeriodSeconds", 30), delete=True)
                elif phase in ("Succeeded", "Failed") or spec.get("nodeName") == NODE_NAME:
                    threading.Thread(target=self.delete_pod, daemon=True,
                                     args=(md["namespace"], md["name"], md["uid"])).start()
                return
            # A pod runs once: an older event of a pod whose run has ended
            # (the loop may lag behind the pod's thread) must not start it again.
            if run or phase in ("Succeeded", "Failed") or md["uid"] in self.ran or \
                    self.stopping:
                self.dns_dirty.set()
                return
            if not spec.get("nodeName"):
                if not self.bind_pod(pod):
                    return
            run = PodRun(self, pod, self.take_ip())
            self.runs[key] = run
            self.ran.add(md["uid"])
            self.event(pod, "Normal", "Scheduled", "Successfully assigned %s/%s to %s"
                       % (key[0], key[1], NODE_NAME))
        run.thread.start()

    def forget(self, run):
        with self.lock:
            if self.runs.get((run.ns, run.name)) is run:
                del self.runs[(run.ns, run.name)]
            self.ips.discard(run.ip)
        self.dns_dirty.set()

    def shutdown(self):
        """Kills every pod's processes (the node goes away)."""
        self.stopping = True
        with self.lock:
            runs = list(self.runs.values())
        for r in runs:
            r.request_stop(0, gone=True)
            r.signal(signal.SIGKILL)

    # --- writing to the store ---

    def bind_pod(self, pod):
        md = pod["metadata"]
        with self.store.lock:
            try:
                cur = self.store.get(PODS, md["namespace"], md["name"])
            except ApiError:
                return False
            if cur["metadata"]["uid"] != md["uid"]:
                return False
            cur["spec"]["nodeName"] = NODE_NAME
            cur["metadata"].pop("resourceVersion", None)
            self.store.update(PODS, md["namespace"], md["name"], cur, True)
            pod["spec"]["nodeName"] = NODE_NAME
            return True

    def update_status(self, ns, name, uid, fn):
        with self.store.lock:
            try:
                pod = self.store.get(PODS, ns, name)
            except ApiError:
                return None
            if pod["metadata"]["uid"] != uid:
                return None
            fn(pod)
            pod["metadata"].pop("resourceVersion", None)
            return self.store.update(PODS, ns, name, pod, True, status_only=True)

    def delete_pod(self, ns, name, uid):
        with self.store.lock:
            try:
                pod = self.store.get(PODS, ns, name)
            except ApiError:
                return
            if pod["metadata"]["uid"] != uid:
                return
            gone = self.store.delete(PODS, ns, name)
        self.api.collect_garbage(gone["metadata"]["uid"])

    def bind_claim(self, claim):
        """A claim is bound as soon as it exists (a local provisioner)."""
        if (claim.get("status") or {}).get("phase") == "Bound":
            return
        md = claim["metadata"]
        spec = claim.get("spec") or {}
        with self.store.lock:
            try:
                cur = self.store.get(PVCS, md["namespace"], md["name"])
            except ApiError:
                return
            size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
            cur["status"] = {"phase": "Bound", "accessModes": spec.get("accessModes", []),
                             "capacity": {"storage": size}}
            cur["metadata"].pop("resourceVersion", None)
            self.store.update(PVCS, md["namespace"], md["name"], cur, True, status_only=True)

    def event(self, pod, etype, reason, message):
        md = pod["metadata"]
        stamp = now()
        try:
            self.store.create(EVENTS, md["namespace"], {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "%s.%s" % (md["name"], uuid.uuid4().hex[:16])},
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": md["name"],
                                   "namespace": md["namespace"], "uid": md["uid"]},
                "type": etype, "reason": reason, "message": message, "count": 1,
                "firstTimestamp": stamp, "lastTimestamp": stamp,
                "source": {"component": "kubelet", "host": NODE_NAME},
                "reportingComponent": "kubelet", "reportingInstance": NODE_NAME})
        except ApiError:
            pass

    # --- addresses and names ---

    def take_ip(self):
        with self.lock:
            for _ in range(254 * 256):
                i = self.next_ip
                self.next_ip = self.next_ip % (254 * 256 - 1) + 1
                ip = "127.0.%d.%d" % (i // 254, i % 254 + 1)
                if ip not in self.ips and ip != HOST_IP:
                    self.ips.add(ip)
                    return ip
        raise RuntimeError("no loopback address left for a pod")

    def hosts_for(self, run, pods, services):
        """The lines of run's /etc/hosts."""
        lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
        spec = run.pod.get("spec") or {}
        own = [run.hostname]
        if spec.get("subdomain"):
            own.insert(0, "%s.%s.%s.svc.cluster.local" % (run.hostname, spec["subdomain"],
                                                          run.ns))
        lines.append("%s\t%s" % (run.ip, " ".join(own)))
        for svc in services:
            smd, sspec = svc["metadata"], svc.get("spec") or {}
            if sspec.get("clusterIP") != "None" or not sspec.get("selector"):
                continue
            ns, sname = smd["namespace"], smd["name"]
            for p in pods:
                pmd, pspec, pst = p["metadata"], p.get("spec") or {}, p.get("status") or {}
                if pmd["namespace"] != ns or not pst.get("podIP") or \
                        pst.get("phase") in ("Succeeded", "Failed"):
                    continue
                labels = pmd.get("labels") or {}
                if any(labels.get(k) != v for k, v in sspec["selector"].items()):
                    continue
                ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in pst.get("conditions", []))
                if not ready and not sspec.get("publishNotReadyAddresses"):
                    continue
                names = ["%s.%s.svc.cluster.local" % (sname, ns), "%s.%s.svc" % (sname, ns)]
                if pspec.get("subdomain") == sname:
                    host = "%s.%s" % (pspec.get("hostname") or pmd["name"], sname)
                    names = ["%s.%s.svc.cluster.local" % (host, ns), "%s.%s.svc" % (host, ns)] \
                        + (["%s.%s" % (host, ns), host] if ns == run.ns else []) + names
                if ns == run.ns:
                    names += [sname + "." + ns, sname]
                lines.append("%s\t%s" % (pst["podIP"], " ".join(names)))
        return "\n".join(lines) + "\n"

    def write_dns(self):
        with self.dns_lock:
            self._write_dns()

    def _write_dns(self):
        pods, _ = self.store.list(PODS)
        services, _ = self.store.list(SERVICES)
        with self.lock:
            runs = list(self.runs.values())
        for r in runs:
            path = os.path.join(r.dir, "hosts")
            data = self.hosts_for(r, pods, services).encode()
            # In place, never by rename: the pod's bind mount holds the inode.
            try:
                with open(path, "r+b" if os.path.exists(path) else "wb") as f:
                    f.write(data)
                    f.truncate()
            except OSError as e:
                self.log("node: hosts of %s/%s: %s" % (r.ns, r.name, e))

    # --- volumes ---

    def volumes(self, run):
        """(host path, volume) for each of run's volumes, made ready."""
        out = {}
        spec = run.pod.get("spec") or {}
        for v in spec.get("volumes") or []:
            try:
                out[v.get("name")] = self.volume(run, v)
            except OSError as e:
                raise MountError('volume "%s": %s' % (v.get("name"), e)) from e
        if spec.get("automountServiceAccountToken", True):
            sa = os.path.join(run.dir, "serviceaccount")
            os.makedirs(sa, exist_ok=True)
            shutil.copyfile(self.ca, os.path.join(sa, "ca.crt"))
            for fname, text in (("token", self.token), ("namespace", run.ns)):
                with open(os.path.join(sa, fname), "w") as f:
                    f.write(text)
            out["\0serviceaccount"] = sa
        # /etc/hosts and /etc/resolv.conf of the pod, before any container starts
        with open(os.path.join(run.dir, "resolv.conf"), "w") as f:
            f.write("nameserver 127.0.0.1\nsearch %s.svc.cluster.local svc.cluster.local "
                    "cluster.local\noptions ndots:5 attempts:1 timeout:1\n" % run.ns)
        path = os.path.join(run.dir, "hosts")
        if not os.path.exists(path):
            open(path, "w").close()
        self.dns_dirty.set()
        self.write_dns()
        return out

    def volume(self, run, v):
        name = v.get("name")
        if "emptyDir" in v:
            path = os.path.join(run.dir, "volumes", name)
            os.makedirs(path, exist_ok=True)
            return path
        if "hostPath" in v:
            hp = v["hostPath"] or {}
            path, kind = hp.get("path", ""), hp.get("type", "")
            if not path.startswith("/"):
                raise MountError('hostPath of volume "%s" must be absolute: %r' % (name, path))
            if kind in ("", "DirectoryOrCreate") and not os.path.exists(path):
                os.makedirs(path, mode=0o755, exist_ok=True)
            elif kind == "FileOrCreate" and not os.path.exists(path):
                os.makedirs(os.path.dirname(path), exist_ok=True)
                open(path, "a").close()
            checks = {"Directory": os.path.isdir, "DirectoryOrCreate": os.path.isdir,
                      "File": os.path.isfile, "FileOrCreate": os.path.isfile,
                      "Socket": os.path.exists, "CharDevice": os.path.exists,
                      "BlockDevice": os.path.exists, "": os.path.exists}
            if kind not in checks:
                raise MountError('hostPath type "%s" of volume "%s" is unknown' % (kind, name))
            if not checks[kind](path):
                raise MountError('MountVolume.SetUp failed for volume "%s" : hostPath type '
                                 'check failed: %s is not a %s' % (name, path,
                                                                   kind or "path that exists"))
            return path
        if "persistentVolumeClaim" in v:
            claim = (v["persistentVolumeClaim"] or {}).get("claimName", "")
            try:
                self.store.get(PVCS, run.ns, claim)
            except ApiError as e:
                raise MountError('persistentvolumeclaim "%s" not found' % claim) from e
            path = os.path.join(self.state, "volumes", run.ns, claim)
            os.makedirs(path, exist_ok=True)
            return path
        if "configMap" in v:
            ref = v["configMap"] or {}
            try:
                cm = self.store.get(CONFIGMAPS, run.ns, ref.get("name", ""))
            except ApiError as e:
                if ref.get("optional"):
                    cm = {"data": {}}
                else:
                    raise MountError('configmap "%s" not found' % ref.get("name")) from e
            path = os.path.join(run.dir, "volumes", name)
            os.makedirs(path, exist_ok=True)
            data = cm.get("data") or {}
            items = ref.get("items") or [{"key": k, "path": k} for k in data]
            for it in items:
                target = os.path.normpath(os.path.join(path, it.get("path", "")))
                if not target.startswith(path + os.sep) or it.get("key") not in data:
                    raise MountError('configmap "%s": bad item %r' % (ref.get("name"), it))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "w") as f:
                    f.write(data[it["key"]])
            return path
        kinds = [k for k in v if k != "name"]
        raise MountError('volume "%s": %s volumes are not supported by the local test node'
                         % (name, kinds[0] if kinds else "empty"))

    # --- containers ---

    def command(self, run, c):
        """(argv, env, working directory) of container c."""
        spec = c.spec
        image = spec.get("image", "")
        entry = self.images.get(image_repository(image))
        path = HOST_PATH if not entry else os.path.dirname(entry) + ":" + HOST_PATH
        env = {"PATH": path, "HOME": "/root", "HOSTNAME": run.hostname,
               "KUBERNETES_SERVICE_HOST": HOST_IP,
               "KUBERNETES_SERVICE_PORT": str(self.server_port),
               "KUBERNETES_SERVICE_PORT_HTTPS": str(self.server_port),
               "KUBERNETES_PORT": "tcp://%s:%d" % (HOST_IP, self.server_port)}
        for src in spec.get("envFrom") or []:
            ref = src.get("configMapRef")
            if not ref:
                raise StartError("envFrom: only configMapRef is supported by the local node")
            try:
                cm = self.store.get(CONFIGMAPS, run.ns, ref.get("name", ""))
            except ApiError as e:
                if ref.get("optional"):
                    continue
                raise StartError('configmap "%s" not found' % ref.get("name")) from e
            for k, v in (cm.get("data") or {}).items():
                env[src.get("prefix", "") + k] = v
        try:
            pod = self.store.get(PODS, run.ns, run.name)
        except ApiError as e:
            raise StartError("the pod is gone") from e
        for e in spec.get("env") or []:
            name = e.get("name", "")
            if "valueFrom" not in e:
                env[name] = expand(str(e.get("value", "")), env)
                continue
            vf = e["valueFrom"] or {}
            try:
                if "fieldRef" in vf:
                    env[name] = str(field_value(pod, vf["fieldRef"].get("fieldPath", "")))
                elif "configMapKeyRef" in vf:
                    ref = vf["configMapKeyRef"]
                    cm = self.store.get(CONFIGMAPS, run.ns, ref.get("name", ""))
                    if ref.get("key") not in (cm.get("data") or {}):
                        raise ValueError('key "%s" not in configmap "%s"'
                                         % (ref.get("key"), ref.get("name")))
                    env[name] = cm["data"][ref["key"]]
                else:
                    raise ValueError("only fieldRef and configMapKeyRef are supported")
            except (ApiError, ValueError) as err:
                if "configMapKeyRef" in vf and vf["configMapKeyRef"].get("optional"):
                    continue
                raise StartError('env %s: %s' % (name, err)) from err
        command = [expand(str(a), env) for a in spec.get("command") or []]
        args = [expand(str(a), env) for a in spec.get("args") or []]
        if not command:
            if not entry:
                raise ImageError('image "%s" is not known to the local test node (known: %s); '
                                 "give the container a command, or map the image with "
                                 "up.sh --image" % (image, ", ".join(sorted(self.images))))
            command = [entry]
        argv = command + args
        exe = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=env["PATH"])
        if not exe or not os.access(exe, os.X_OK):
            raise StartError('exec: "%s": executable file not found in $PATH' % argv[0])
        # The node's own plumbing, which pods do not set themselves.
        env["LD_PRELOAD"] = self.podnet
        env["MWJ_LOCAL_POD_IP"] = run.ip
        # A sanitized binary must let the preloaded library come first.
        asan = os.environ.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
        for k in ("UBSAN_OPTIONS", "LSAN_OPTIONS"):
            if k in os.environ:
                env[k] = os.environ[k]
        return [exe] + argv[1:], env, spec.get("workingDir") or "/"

    def spawn(self, run, c, argv, env, workdir):
        """Starts argv in a mount and UTS namespace of its own, with the
        pod's hosts, resolv.conf, host name and volumes."""
        binds = [(os.path.join(run.dir, "hosts"), "/etc/hosts", False, False),
                 (os.path.join(run.dir, "resolv.conf"), "/etc/resolv.conf", False, False)]
        if "\0serviceaccount" in run.mounts and not any(
                m.get("mountPath") == SA_DIR for m in c.spec.get("volumeMounts") or []):
            binds.append((run.mounts["\0serviceaccount"], SA_DIR, True, True))
        for m in c.spec.get("volumeMounts") or []:
            src = run.mounts.get(m.get("name"))
            if src is None:
                raise StartError('volumeMount "%s": no volume of that name' % m.get("name"))
            if m.get("subPath"):
                src = os.path.normpath(os.path.join(src, m["subPath"]))
                os.makedirs(src, exist_ok=True)
            binds.append((src, m.get("mountPath", ""), os.path.isdir(src),
                          bool(m.get("readOnly"))))
        script = ["fail() { echo \"local node: $*\" >&2; exit 128; }"]
        for src, dst, is_dir, ro in binds:
            s, d = shlex.quote(src), shlex.quote(dst)
            make = "mkdir -p %s" % d if is_dir else "mkdir -p \"$(dirname %s)\" && " \
                "{ [ -e %s ] || : > %s; }" % (d, d, d)
            script.append("%s && mount --bind %s %s || fail cannot mount %s at %s"
                          % (make, s, d, s, d))
            if ro:
                script.append("mount -o remount,bind,ro %s || fail cannot make %s read-only"
                              % (d, d))
        script.append("hostname %s || fail cannot set the host name" % shlex.quote(run.hostname))
        script.append("cd %s || fail no working directory %s" % (shlex.quote(workdir),
                                                                 shlex.quote(workdir)))
        script.append('exec "$@"')
        logs = os.path.join(run.dir, "logs")
        os.makedirs(logs, exist_ok=True)
        out = open(os.path.join(logs, "%s-%d.log" % (c.name, c.restarts)), "ab")
        try:
            proc = subprocess.Popen(
                ["unshare", "--mount", "--uts", "--propagation", "private", "--",
                 "/bin/sh", "-c", "\n".join(script), "pod-sandbox"] + argv,
                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True)
            # For down.sh, should this process die without stopping its pods.
            with open(os.path.join(self.state, "process-groups"), "a") as f:
                f.write("%d\n" % proc.pid)
            return proc
        except OSError as e:
            raise StartError("cannot start the sandbox: %s" % e) from e
        finally:
            out.close()

    # --- what tests and kubectl ask of the node ---

    def find(self, ns, name):
        with self.lock:
            run = self.runs.get((ns, name))
        if run is None:
            raise ApiError(404, "NotFound", 'pod "%s" is not running on %s' % (name, NODE_NAME))
        return run

    def kill(self, ns, name, sig, container=None):
        """Sends sig to a container's processes (all containers when None)."""
        run = self.find(ns, name)
        if not run.running():
            raise ApiError(409, "Conflict", 'pod "%s" has no running container' % name)
        run.signal(sig, container)

    def preempt(self, ns, name, reason, grace=None, delete=None):
        """Preempts a pod as the scheduler (reason Preempted: the pod is
        deleted) or the kubelet's eviction (reason Evicted: the pod stays,
        Failed) does: the DisruptionTarget condition first, then SIGTERM,
        the grace period, SIGKILL."""
        run = self.find(ns, name)
        spec = run.pod.get("spec") or {}
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        if delete is None:
            delete = reason == "Preempted"
        cond_reason, message = {
            "Preempted": ("PreemptionByScheduler",
                          "%s: preempting to accommodate a higher priority pod" % NODE_NAME),
            "Evicted": ("TerminationByKubelet",
                        "The node was low on resource: memory."),
        }[reason]

        def disrupt(pod):
            st = pod.setdefault("status", {})
            st["conditions"] = [c for c in st.get("conditions", [])
                                if c.get("type") != "DisruptionTarget"] + [{
                                    "type": "DisruptionTarget", "status": "True",
                                    "reason": cond_reason, "message": message,
                                    "lastTransitionTime": now()}]
        self.update_status(ns, name, run.uid, disrupt)
        self.event(run.pod, "Warning" if reason == "Evicted" else "Normal", reason, message)
        if delete:
            self.store.mark_deleting(ns, name, grace)
        run.request_stop(grace, delete=delete, reason=(reason, message))

    def log_file(self, ns, name, container, previous):
        """The log file of a pod's container (the one before the last
        restart with previous)."""
        pod = self.store.get(PODS, ns, name)
        names = [c.get("name") for c in (pod.get("spec") or {}).get("containers", []) +
                 ((pod.get("spec") or {}).get("initContainers") or [])]
        container = container or (names[0] if names else "")
        if container not in names:
            raise ApiError(400, "BadRequest", "container %s is not valid for pod %s"
                           % (container, name))
        md = pod["metadata"]
        logs = os.path.join(pod_dir(self.state, ns, name, md["uid"]), "logs")
        runs = sorted((int(f[len(container) + 1:-4]) for f in os.listdir(logs)
                       if re.fullmatch(re.escape(container) + r"-\d+\.log", f))
                      if os.path.isdir(logs) else [])
        if previous:
            runs = runs[:-1]
        if not runs:
            raise ApiError(400, "BadRequest", 'previous terminated container "%s" in pod "%s" '
                           "not found" % (container, name) if previous else
                           'container "%s" in pod "%s" is waiting to start'
                           % (container, name))
        path = os.path.join(logs, "%s-%d.log" % (container, runs[-1]))

        def alive():
            with self.lock:
                run = self.runs.get((ns, name))
            return bool(run and run.uid == md["uid"] and not previous and
                        any(c.name == container for c in run.running()))
        return path, alive
