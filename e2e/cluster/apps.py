"""The deployment and replica set controllers of kube-controller-manager, in
the small: what `kubectl get all`, `kubectl rollout status` and
`helm install --wait` look at.

- deployment controller (pkg/controller/deployment): a Deployment owns one
  ReplicaSet per pod template it has had, named <deployment>-<hash>, where
  the hash of the template is also the pod-template-hash label of the set,
  its selector and its pods. The set of the current template is scaled to
  spec.replicas; the older ones are scaled to 0 once the new one's pods
  are all available (RollingUpdate), or first (Recreate). Sets beyond
  revisionHistoryLimit that have been scaled to 0 are deleted. The status
  (observedGeneration, replicas, updatedReplicas, readyReplicas,
  availableReplicas, unavailableReplicas, the Available and Progressing
  conditions) is what kubectl rollout status and helm's ready check read;
  the deployment.kubernetes.io/revision annotation says which set is new.
  A paused Deployment is not scaled.
- replica set controller (pkg/controller/replicaset): a ReplicaSet keeps
  spec.replicas active pods (not finished, not being deleted) from its
  template, named <set>-<5 random characters>, with an ownerReference to
  it (controller, blockOwnerDeletion); extra pods are deleted, and the
  status counts replicas, fullyLabeledReplicas, readyReplicas and
  availableReplicas.

What is simpler than the real controllers: a RollingUpdate brings the new
set to its full size at once (no maxSurge step), minReadySeconds counts
from the pod's Ready condition, adoption of orphans matching the selector
is not done, and the hash is FNV-32a of the template's JSON rather than
of Go's spew dump (so the names differ from a real cluster's, not their
shape).

The controllers run in the controllers' loop (controllers.py), under the
store's lock, and write through the registry like the garbage collector.

Standard library only.
"""
import datetime
import json
import math

from registry import Request
from selector import selector_matches
from store import clone, now

DEPLOYMENTS = "apps/v1/deployments"
REPLICASETS = "apps/v1/replicasets"
PODS = "/v1/pods"
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
# k8s.io/apimachinery/pkg/util/rand: the alphabet of SafeEncodeString.
ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(template):
    """The pod-template-hash of a pod template: FNV-32a of its JSON with
    sorted keys, encoded as rand.SafeEncodeString encodes the decimal."""
    h = 0x811C9DC5
    for b in json.dumps(template, sort_keys=True, separators=(",", ":")).encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return "".join(ALPHANUMS[ord(c) % len(ALPHANUMS)] for c in str(h))


def _controller_uid(obj):
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return ref.get("uid")
    return None


def _owner_ref(owner, kind):
    return {"apiVersion": "apps/v1", "kind": kind, "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def _scaled(value, total, round_up):
    """An IntOrString of a rolling update (maxUnavailable, maxSurge)
    against total: a percentage rounded as intstr.GetScaledValueFromIntOrPercent."""
    if isinstance(value, int):
        return value
    text = str(value or "0")
    if text.endswith("%"):
        try:
            pct = int(text[:-1])
        except ValueError:
            return 0
        v = pct * total / 100.0
        return int(math.ceil(v) if round_up else math.floor(v))
    try:
        return int(text)
    except ValueError:
        return 0


def max_unavailable(deploy):
    """deploymentutil.MaxUnavailable."""
    spec = deploy.get("spec") or {}
    replicas = spec.get("replicas", 1)
    strategy = spec.get("strategy") or {}
    if strategy.get("type") != "RollingUpdate" or replicas == 0:
        return 0
    ru = strategy.get("rollingUpdate") or {}
    surge = _scaled(ru.get("maxSurge", "25%"), replicas, True)
    unavailable = _scaled(ru.get("maxUnavailable", "25%"), replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return min(unavailable, replicas)


def _pod_ready(pod):
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True", c.get("lastTransitionTime")
    return False, None


def _available(pod, min_ready, t):
    ready, since = _pod_ready(pod)
    if not ready:
        return False
    if not min_ready or not since:
        return True
    try:
        start = datetime.datetime.strptime(since, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return True
    return (t - start).total_seconds() >= min_ready


def _active(pod):
    return not pod["metadata"].get("deletionTimestamp") and \
        (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _without_hash(template):
    t = clone(template)
    labels = (t.get("metadata") or {}).get("labels") or {}
    labels.pop(HASH_LABEL, None)
    return t


class Apps:
    """Both controllers, over the registry (see the module docstring)."""

    def __init__(self, registry, log):
        self.registry = registry
        self.store = registry.store
        self.log = log
        self.errors = {}  # what failed last, per object: logged once, not every pass

    def sync(self):
        """One pass: deployments first (they write replica sets), then
        replica sets. Holds the store's lock."""
        if not self.store.version_of(DEPLOYMENTS) and not self.store.version_of(REPLICASETS):
            return
        for d in self.store.items(DEPLOYMENTS):
            if not d["metadata"].get("deletionTimestamp"):
                self.deployment(d)
        for rs in self.store.items(REPLICASETS):
            if not rs["metadata"].get("deletionTimestamp"):
                self.replica_set(rs)

    def failed(self, obj, message):
        """Logs message unless it is what obj's last failure said."""
        uid = obj["metadata"]["uid"]
        if self.errors.get(uid) != message:
            self.errors[uid] = message
            self.log(message)

    # --- deployments ---

    def deployment(self, d):
        ns, spec = d["metadata"]["namespace"], d.get("spec") or {}
        owned = [rs for rs in self.store.items(REPLICASETS, ns)
                 if _controller_uid(rs) == d["metadata"]["uid"]]
        template = spec.get("template") or {}
        want = _without_hash(template)
        new = next((rs for rs in owned
                    if _without_hash((rs.get("spec") or {}).get("template") or {}) == want), None)
        desired = spec.get("replicas", 1)
        old = [rs for rs in owned if rs is not new]
        pods = self.store.items(PODS, ns)
        if new is None:
            revision = max([_revision(rs) for rs in owned] + [0]) + 1
            new = self.create_replica_set(d, template,
                                          desired if _can_grow(d, old, pods) else 0, revision)
            if new is None:
                return
        elif not spec.get("paused"):
            if _revision(new) < max([_revision(rs) for rs in old] + [0]):
                self.annotate(new, max(_revision(rs) for rs in old) + 1)
            if _can_grow(d, old, pods):
                self.scale(new, desired, d)
        if not spec.get("paused"):
            new_status = new.get("status") or {}
            done = new_status.get("availableReplicas", 0) >= desired and \
                (new.get("spec") or {}).get("replicas") == desired
            if (spec.get("strategy") or {}).get("type") == "Recreate" or done:
                for rs in old:
                    self.scale(rs, 0, d)
            self.prune(d, old)
        self.deployment_status(d, new, old)

    def create_replica_set(self, d, template, replicas, revision):
        h = template_hash(template)
        tmpl = clone(template)
        tmpl.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = h
        sel = clone((d.get("spec") or {}).get("selector") or {})
        sel.setdefault("matchLabels", {})[HASH_LABEL] = h
        annotations = {k: v for k, v in (d["metadata"].get("annotations") or {}).items()
                       if k not in ("kubectl.kubernetes.io/last-applied-configuration",
                                    REVISION)}
        annotations.update({REVISION: str(revision), DESIRED: str(d["spec"].get("replicas", 1)),
                            MAX_REPLICAS: str(d["spec"].get("replicas", 1) + _surge(d))})
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": "%s-%s" % (d["metadata"]["name"], h),
                           "labels": dict(tmpl["metadata"]["labels"]),
                           "annotations": annotations,
                           "ownerReferences": [_owner_ref(d, "Deployment")]},
              "spec": {"replicas": replicas, "selector": sel, "template": tmpl,
                       "minReadySeconds": d["spec"].get("minReadySeconds", 0)}}
        kind = self.registry.kind_of_key(REPLICASETS)
        try:
            return self.registry._create(kind, d["metadata"]["namespace"], rs, Request({}))
        except Exception as e:  # the namespace is going, or a name clash
            self.failed(d, "deployment controller: create replicaset %s/%s: %s"
                        % (d["metadata"]["namespace"], rs["metadata"]["name"], e))
            return None

    def annotate(self, rs, revision):
        rs = clone(rs)
        rs["metadata"].setdefault("annotations", {})[REVISION] = str(revision)
        self.store.replace(REPLICASETS, rs["metadata"]["namespace"], rs["metadata"]["name"], rs)

    def scale(self, rs, replicas, d):
        if (rs.get("spec") or {}).get("replicas") == replicas:
            return
        rs = clone(rs)
        rs["spec"]["replicas"] = replicas
        rs["metadata"]["generation"] = rs["metadata"].get("generation", 1) + 1
        rs["metadata"].setdefault("annotations", {})[DESIRED] = str(d["spec"].get("replicas", 1))
        self.store.replace(REPLICASETS, rs["metadata"]["namespace"], rs["metadata"]["name"], rs)

    def prune(self, d, old):
        """Deletes the oldest sets scaled to 0 beyond revisionHistoryLimit."""
        limit = (d.get("spec") or {}).get("revisionHistoryLimit", 10)
        idle = sorted((rs for rs in old if (rs.get("spec") or {}).get("replicas") == 0 and
                       (rs.get("status") or {}).get("replicas", 0) == 0), key=_revision)
        kind = self.registry.kind_of_key(REPLICASETS)
        for rs in idle[:max(0, len(idle) - limit)]:
            self.registry.system_delete(kind, rs["metadata"]["namespace"], rs["metadata"]["name"])

    def deployment_status(self, d, new, old):
        desired = (d.get("spec") or {}).get("replicas", 1)
        sets = [new] + old
        st = lambda rs, f: (rs.get("status") or {}).get(f, 0)  # noqa: E731
        status = {"observedGeneration": d["metadata"].get("generation", 1),
                  "replicas": sum(st(rs, "replicas") for rs in sets),
                  "updatedReplicas": st(new, "replicas"),
                  "readyReplicas": sum(st(rs, "readyReplicas") for rs in sets),
                  "availableReplicas": sum(st(rs, "availableReplicas") for rs in sets)}
        # calculateStatus: the sets' desired sizes less what is available.
        total = sum((rs.get("spec") or {}).get("replicas", 0) for rs in sets)
        status["unavailableReplicas"] = max(total - status["availableReplicas"], 0)
        status = {k: v for k, v in status.items() if v or k == "observedGeneration"}
        old_status = d.get("status") or {}
        conds = {c.get("type"): c for c in old_status.get("conditions") or []}
        available = status.get("availableReplicas", 0) >= desired - max_unavailable(d)
        complete = status.get("updatedReplicas", 0) == desired and \
            status.get("replicas", 0) == desired and \
            status.get("availableReplicas", 0) == desired
        name = new["metadata"]["name"]
        wanted = [
            ("Available", available,
             "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
             "Deployment has minimum availability." if available else
             "Deployment does not have minimum availability."),
            ("Progressing", True,
             "NewReplicaSetAvailable" if complete else "ReplicaSetUpdated",
             'ReplicaSet "%s" has successfully progressed.' % name if complete else
             'ReplicaSet "%s" is progressing.' % name)]
        t = now()
        status["conditions"] = []
        for ctype, ok, reason, message in wanted:
            prev = conds.get(ctype) or {}
            value = "True" if ok else "False"
            same = prev.get("status") == value and prev.get("reason") == reason
            status["conditions"].append({
                "type": ctype, "status": value,
                "lastUpdateTime": prev.get("lastUpdateTime", t) if same else t,
                "lastTransitionTime": prev.get("lastTransitionTime", t)
                if prev.get("status") == value else t,
                "reason": reason, "message": message})
        revision = str(_revision(new))
        annotations = d["metadata"].get("annotations") or {}
        if status != old_status or annotations.get(REVISION) != revision:
            d = clone(d)
            d["status"] = status
            # The Deployment carries its newest set's revision too.
            d["metadata"].setdefault("annotations", {})[REVISION] = revision
            self.store.replace(DEPLOYMENTS, d["metadata"]["namespace"], d["metadata"]["name"], d)

    # --- replica sets ---

    def replica_set(self, rs):
        md, spec = rs["metadata"], rs.get("spec") or {}
        ns = md["namespace"]
        pods = [p for p in self.store.items(PODS, ns)
                if _controller_uid(p) == md["uid"] and _active(p)]
        want = spec.get("replicas", 1)
        pod_kind = self.registry.kind_of_key(PODS)
        for _ in range(want - len(pods)):
            self.create_pod(rs, pod_kind)
        if len(pods) > want:
            # Not ready ones first, then the newest, as the real one prefers.
            doomed = sorted(pods, key=lambda p: (_pod_ready(p)[0],
                                                 p["metadata"].get("creationTimestamp", "")),
                            reverse=False)[:len(pods) - want]
            for p in doomed:
                self.registry.system_delete(pod_kind, ns, p["metadata"]["name"])
        t = datetime.datetime.utcnow()
        min_ready = spec.get("minReadySeconds", 0)
        labelled = sum(1 for p in pods if selector_matches(spec.get("selector"),
                                                           p["metadata"].get("labels")))
        status = {"replicas": len(pods), "fullyLabeledReplicas": labelled,
                  "readyReplicas": sum(1 for p in pods if _pod_ready(p)[0]),
                  "availableReplicas": sum(1 for p in pods if _available(p, min_ready, t)),
                  "observedGeneration": md.get("generation", 1)}
        status = {k: v for k, v in status.items() if v or k == "replicas"}
        if status != (rs.get("status") or {}):
            rs = clone(rs)
            rs["status"] = status
            self.store.replace(REPLICASETS, ns, md["name"], rs)

    def create_pod(self, rs, pod_kind):
        tmpl = (rs.get("spec") or {}).get("template") or {}
        tmd = tmpl.get("metadata") or {}
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"generateName": rs["metadata"]["name"] + "-",
                            "labels": dict(tmd.get("labels") or {}),
                            "ownerReferences": [_owner_ref(rs, "ReplicaSet")]},
               "spec": clone(tmpl.get("spec") or {})}
        if tmd.get("annotations"):
            pod["metadata"]["annotations"] = dict(tmd["annotations"])
        try:
            self.registry._create(pod_kind, rs["metadata"]["namespace"], pod, Request({}))
        except Exception as e:  # e.g. its ServiceAccount does not exist (yet)
            self.failed(rs, "replicaset controller: create pod for %s/%s: %s"
                        % (rs["metadata"]["namespace"], rs["metadata"]["name"], e))


def _revision(rs):
    try:
        return int((rs["metadata"].get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def _surge(d):
    strategy = (d.get("spec") or {}).get("strategy") or {}
    if strategy.get("type") != "RollingUpdate":
        return 0
    return _scaled((strategy.get("rollingUpdate") or {}).get("maxSurge", "25%"),
                   d["spec"].get("replicas", 1), True)


def _can_grow(d, old, pods):
    """Recreate waits for the old sets' pods to be gone before the new set
    grows: none counted by a set, and none of their pods in a phase that is
    not terminal, a pod being deleted among them (its node has not stopped
    it yet), as the deployment controller's oldPodsRunning checks
    (pkg/controller/deployment/recreate.go). RollingUpdate does not wait."""
    if ((d.get("spec") or {}).get("strategy") or {}).get("type") != "Recreate":
        return True
    if any((rs.get("status") or {}).get("replicas", 0) for rs in old):
        return False
    uids = {rs["metadata"]["uid"] for rs in old}
    return not any(_controller_uid(p) in uids and
                   (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                   for p in pods)
