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
  (podsandbox, which up.sh builds from podsandbox.c), where /etc/hosts and
  /etc/resolv.conf are the pod's, the host name is the pod's, and the
  pod's volumes are bind-mounted at their mountPath. Mount points missing
  on the host are created there.
- DNS: a DNS server of the cluster's own (node_dnsd.py, on port 53 of an
  address taken like a pod's) answers <hostname>.<svc>.<ns>.svc.cluster.local
  and <svc>.<ns>.svc.cluster.local for every pod behind a headless
  Service, not-ready pods included when the Service has
  publishNotReadyAddresses; each pod's resolv.conf names it with the
  search path that reaches the shorter forms, and its /etc/hosts is the
  kubelet's (its own names).
- Images: the image's repository name (no registry, tag or digest) picks
  an entrypoint given with --image NAME=PATH, and a user given with
  --image-user NAME=UID[:GID] (the USER of its Dockerfile); the image of
  our worker maps to the built mwj-worker, as 65532:65532. A container with
  a command runs that command on the host, whatever its image. An unknown
  image without a command waits with ErrImagePull.
- Users: each container runs as the user, group and supplementary groups
  a kubelet and runtime give it (runAsUser, runAsGroup, the image's user,
  fsGroup, supplementalGroups; node_security.py); runAsNonRoot with an
  effective user 0 leaves it waiting, CreateContainerConfigError.
- Env: the container's env (value, $(VAR) references, fieldRef of the
  downward API, configMapKeyRef, secretKeyRef) and envFrom configMaps and
  secrets, HOSTNAME, and KUBERNETES_SERVICE_HOST/PORT for the API server.
  Its token (of its ServiceAccount, bound to the pod: tokens.py) and CA
  reach the pod as on a real node: through the kube-api-access-*
  projected volume that admission adds to every pod.
- Volumes: emptyDir (a folder per pod), hostPath (with its type checks),
  persistentVolumeClaim (a folder per claim; claims are bound when
  created), configMap and secret (their keys as files), downwardAPI, and
  projected (serviceAccountToken, configMap, secret, downwardAPI sources;
  a token for the source's audience, bound to the pod, and refreshed when
  the kubelet's token manager would refresh it), with the kubelet's file
  modes and owners and fsGroup's ownership (node_volumes.py). A container sees only the volumes it mounts, at their
  mountPath, read-only where mounted so. Other kinds fail to mount, with a
  FailedMount event, and the pod stays Pending.
- Init containers run one after another, each to exit 0, before the
  containers start. One with restartPolicy Always is a sidecar (Kubernetes
  1.28+): it is started in its turn (started is enough: probes are not
  run), runs beside the containers, is restarted whenever it exits, and is
  stopped after the last container has exited, sidecars in reverse order.
- Status: Pending (ContainerCreating), Running and Ready once the
  containers start (probes are not run), then Succeeded or Failed with
  each container's exit code and reason (Completed, Error, StartError), as
  containerStatuses show them; the phase follows the containers, not the
  sidecars; conditions carry the kubelet's reasons and messages.
  restartPolicy Always and OnFailure restart a container in place, with a
  back-off of 1 s doubling to 10 s (the kubelet's is 10 s to 5 min).
- Deletion: SIGTERM to the containers' process groups (the containers
  first, then the sidecars in reverse order), the grace period, SIGKILL,
  then the pod is deleted for good (grace 0).
- Logs: one file per container and restart under
  <state>/pods/<ns>/<name>-<uid>/, served to kubectl logs.
- Faults for tests: preempt (as the scheduler or an eviction does), kill
  a container with a signal.

The parts, one file each:
  node.py          the node: the loop that follows the store, binding,
                   claims, events, addresses, and what tests ask of it.
  node_pod.py      a pod's life on its own thread: containers, restarts,
                   status, stopping.
  node_exec.py     starting a container: command, env, image, sandbox.
  node_exits.py    waking a pod's thread when one of its processes exits.
  node_security.py the user, groups and runAsNonRoot of a container.
  node_volumes.py  volumes, and the configMaps, secrets and downward API
                   that volumes and env read.
  node_dns.py      a pod's /etc/hosts and /etc/resolv.conf, and the
                   records of cluster DNS.
  node_dnsd.py     the DNS server that answers them.
  node_const.py    the store keys, name and address the parts share.
  podsandbox.c     the sandbox each container's process starts in.

Standard library only.
"""
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

from errors import ApiError
from node_const import HOST_IP, NODE_NAME, PODS, PVCS, SERVICES
from node_dns import DnsRecords
from node_exits import ExitWatcher
from node_pod import PodRun, pod_dir
from registry import Request
from store import clone, now


def waiting_reason(pod, container):
    """What kubectl logs says of a container that has not started
    (validateContainerLogStatus, pkg/kubelet/kubelet_pods.go)."""
    st = pod.get("status") or {}
    for cs in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or []):
        if cs.get("name") == container:
            reason = ((cs.get("state") or {}).get("waiting") or {}).get("reason", "")
            return {"ErrImagePull": "image can't be pulled",
                    "ImagePullBackOff": "trying and failing to pull image"}.get(reason, reason)
    return "ContainerCreating"


class Node:
    """Runs the pods of the store in `api` bound to this node."""

    def __init__(self, api, state, images, podnet, sandbox, server_port, ca, token,
                 log=print, image_users=None):
        self.api = api
        self.store = api.store
        self.registry = api.registry
        self.state = state
        self.images = images
        self.image_users = image_users or {}  # image name -> (uid, gid)
        self.podnet = podnet
        self.sandbox = sandbox
        self.server_port = server_port
        self.ca = ca
        self.token = token
        self.log = log
        self.lock = threading.RLock()
        self.runs = {}      # (ns, name) -> PodRun
        self.ran = set()    # uids of every pod started here
        self.ips = set()
        # From a random address: two clusters on one machine (a demo beside
        # a test run) would otherwise both give their first pod 127.0.0.2,
        # and the second pod to listen on a port there fails to bind.
        self.next_ip = random.SystemRandom().randrange(1, 254 * 256 - 1)
        self.dns = None         # the records (node_dns.py), once started
        self.dns_server = None  # its process (node_dnsd.py)
        self.exits = ExitWatcher(log)
        self.stopping = False
        # Root's alone: pods that run as other users reach their volumes
        # through their mounts, never through another pod's folder.
        os.makedirs(os.path.join(state, "pods"), mode=0o700, exist_ok=True)
        os.chmod(state, 0o700)

    # --- the loop: follow the store's changes, as the kubelet's watch ---

    def start(self):
        kind = self.registry.kind("v1", "nodes")
        node = self.registry._create(kind, None, {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": NODE_NAME, "labels": {"kubernetes.io/hostname": NODE_NAME}}},
            Request({}))
        node["status"] = {"addresses": [{"type": "InternalIP", "address": HOST_IP}],
                          "conditions": [{"type": "Ready", "status": "True",
                                          "reason": "KubeletReady",
                                          "message": "the local test node runs pods as "
                                          "processes", "lastTransitionTime": now()}]}
        self.store.replace("/v1/nodes", None, NODE_NAME, node)
        self.start_dns()
        threading.Thread(target=self.loop, daemon=True, name="node").start()

    def start_dns(self):
        """The cluster's DNS server on port 53 of an address of its own
        (another cluster on this machine may hold the one tried first)."""
        path = os.path.join(self.state, "dns-records")
        last = ""
        for _ in range(5):
            address = self.take_ip()
            self.dns = DnsRecords(self.store, path, address, self.log)
            proc = subprocess.Popen(
                [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                              "node_dnsd.py"),
                 "--address", address, "--records", path],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                close_fds=True)
            if proc.stdout.readline().strip() == b"ready":
                proc.stdout.close()
                self.dns_server = proc
                self.dns.start()
                return
            last = proc.stderr.read().decode(errors="replace").strip()
            proc.wait()
        raise RuntimeError("the cluster's DNS server did not start: " + last)

    def loop(self):
        rv = None
        while not self.stopping:
            try:
                if rv is None:
                    rv = self.resync()
                events, newest = self.store.events_after(rv, None, 0.5)
                if events is None:
                    rv = None  # compacted: start again from a list
                    continue
                for ev in events:
                    rv = ev.rv
                    self.handle(ev.key, ev.type, ev.obj)
                rv = max(rv, newest)
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
        self.dns.mark()
        return int(rv)

    def handle(self, key, etype, obj):
        if key == SERVICES:
            self.dns.mark()
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
                self.dns.mark()
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
                self.dns.mark()
                return
            # The event's object is the store's own, which no one may change;
            # the run keeps a copy that binding completes.
            pod = clone(pod)
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
        self.dns.mark()

    def shutdown(self):
        """Kills every pod's processes (the node goes away)."""
        self.stopping = True
        with self.lock:
            runs = list(self.runs.values())
        for r in runs:
            r.request_stop(0, gone=True)
            r.signal(signal.SIGKILL)
        if self.dns_server:
            self.dns.stop()
            self.dns_server.kill()

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
            # What the scheduler's binding does.
            cur["spec"]["nodeName"] = NODE_NAME
            self.store.replace(PODS, md["namespace"], md["name"], cur)
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
            return self.store.replace(PODS, ns, name, pod)

    def delete_pod(self, ns, name, uid):
        """The kubelet's confirmation that a pod's containers have stopped:
        a delete with a grace period of 0 (the pod goes unless finalizers
        hold it)."""
        with self.store.lock:
            pod = self.store.find(PODS, ns, name)
            if pod is None or pod["metadata"]["uid"] != uid:
                return
            self.registry.system_delete(self.registry.kind("v1", "pods"), ns, name, grace=0)

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
            self.store.replace(PVCS, md["namespace"], md["name"], cur)

    def event(self, pod, etype, reason, message):
        md = pod["metadata"]
        stamp = now()
        try:
            self.registry._create(self.registry.kind("v1", "events"), md["namespace"], {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "%s.%s" % (md["name"], uuid.uuid4().hex[:16])},
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": md["name"],
                                   "namespace": md["namespace"], "uid": md["uid"]},
                "type": etype, "reason": reason, "message": message, "count": 1,
                "firstTimestamp": stamp, "lastTimestamp": stamp,
                "source": {"component": "kubelet", "host": NODE_NAME},
                "reportingComponent": "kubelet", "reportingInstance": NODE_NAME}, Request({}))
        except ApiError as e:
            self.log("node: event %s of %s/%s: %s" % (reason, md["namespace"], md["name"],
                                                      e.message))

    # --- addresses ---

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
            self.registry.system_delete(self.registry.kind("v1", "pods"), ns, name,
                                        grace=grace)
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
                           'container "%s" in pod "%s" is waiting to start: %s'
                           % (container, name, waiting_reason(pod, container)))
        path = os.path.join(logs, "%s-%d.log" % (container, runs[-1]))

        def alive():
            with self.lock:
                run = self.runs.get((ns, name))
            return bool(run and run.uid == md["uid"] and not previous and
                        any(c.name == container for c in run.running()))
        return path, alive
