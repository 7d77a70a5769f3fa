"""The controllers of kube-controller-manager whose effect an API client
sees, run in the API server's process over the registry:

- garbage collector: an object whose owners (ownerReferences, by uid) are
  all gone is deleted, through the same path as a user's DELETE, so that a
  pod bound to a node is marked and stays until its node has stopped it;
  references to owners that are gone while others remain are dropped. An
  owner deleted with propagationPolicy Foreground (finalizer
  foregroundDeletion) has its dependents deleted first and goes after
  them; one deleted with Orphan (finalizer orphan) has its dependents'
  references to it removed, then goes.
- namespace controller: a namespace being deleted (Terminating) has its
  content deleted, then goes once nothing is left in it.
- service account and root CA publisher: every namespace has the
  ServiceAccount "default" and the ConfigMap kube-root-ca.crt with the
  cluster's CA, made again if deleted. "default" comes sa_delay seconds
  after the controller first sees it missing (apiserver.py
  --service-account-delay-seconds; a real controller-manager takes a
  moment too), so that a pod created at once in a new namespace is
  refused as on a real cluster; the namespaces there at start have
  theirs at once.
- resource quota controller: each ResourceQuota's status.hard is its
  spec.hard and status.used what the namespace uses of those resources
  (quota.py): at once when a quota changes, and after any other change
  with the garbage collector's pace. Admission (admission_quota.py)
  charges creates in between.
- deployment and replica set controllers: apps.py.
- token controller: a Secret of type kubernetes.io/service-account-token
  annotated with a ServiceAccount's name gets the ServiceAccount's uid
  annotation and data token (a token bound to the Secret: tokens.py),
  ca.crt and namespace; one whose ServiceAccount does not exist is
  deleted.
- PVC protection: a PersistentVolumeClaim being deleted keeps its
  kubernetes.io/pvc-protection finalizer while a pod that has not finished
  uses it.

Standard library only.
"""
import base64
import threading
import time

import quota
from apps import Apps
from registry import Request
from store import clone

NAMESPACES = "/v1/namespaces"
SERVICEACCOUNTS = "/v1/serviceaccounts"
CONFIGMAPS = "/v1/configmaps"
PODS = "/v1/pods"
SECRETS = "/v1/secrets"
SA_TOKEN = "kubernetes.io/service-account-token"
SA_NAME_ANNOTATION = "kubernetes.io/service-account.name"
SA_UID_ANNOTATION = "kubernetes.io/service-account.uid"
# A legacy token Secret's token does not expire; ten years stands for that.
LEGACY_TOKEN_SECONDS = 10 * 365 * 86400
PVCS = "/v1/persistentvolumeclaims"
PVC_PROTECTION = "kubernetes.io/pvc-protection"
QUOTAS = "/v1/resourcequotas"
# Longest the controllers sleep when nothing changes.
TICK_SECONDS = 0.2
# The garbage collector and PVC protection pass at most this often,
# however fast the store changes: hundreds of pods starting write to it
# hundreds of times a second, and a pass per write (each then copying the
# whole store) made the controllers the API server's bottleneck. The real
# garbage collector is asynchronous too. The namespace controllers are
# cheap (they look at namespaces only) and pass on every change of the
# kinds they read, so that a new namespace has its ServiceAccount at once.
SWEEP_SECONDS = 0.1
# Finalizers of the garbage collector's deletion policies.
GC_FINALIZERS = ("foregroundDeletion", "orphan")


class Controllers:
    def __init__(self, registry, ca_pem, log=print, tokens=None, sa_delay=0.0):
        self.registry = registry
        # Seconds between seeing a namespace without "default" and making it.
        self.sa_delay = sa_delay
        self.sa_due = {}  # namespace -> monotonic time its "default" is due
        self.make_errors = {}  # (key, ns, name) -> the last failure to make it, logged
        self.store = registry.store
        self.ca_pem = ca_pem
        self.log = log
        self.apps = Apps(registry, log)
        self.tokens = tokens  # the ServiceAccount token issuer, or None
        self.stopping = False
        # What the namespace controllers last saw (resourceVersions of the
        # namespaces, ServiceAccounts and ConfigMaps), when that left them
        # nothing to do; None: pass again.
        self.namespaces_seen = None
        # The garbage collector's view of the store, kept up to date from
        # its changes as the real one's graph builder keeps it from its
        # informers: every uid, the objects with owners, and the owners
        # being deleted with a policy. Its objects are the stored ones.
        self.followed = None  # the resourceVersion it is up to date with
        self.uids = set()
        self.owned = {}       # (key, ns, name) -> (key, object with ownerReferences)
        self.deleting = {}    # (key, ns, name) -> (key, object with a GC finalizer)

    def start(self):
        threading.Thread(target=self.loop, daemon=True, name="controllers").start()

    def loop(self):
        seen, swept, due = -1, -1, 0.0  # due: when the next sweep may start
        while not self.stopping:
            with self.store.lock:
                if self.store.rv == seen:
                    wait = TICK_SECONDS if swept == seen else \
                        min(TICK_SECONDS, max(0.0, due - time.monotonic()))
                    self.store.changed.wait(wait)
                seen = self.store.rv
            try:
                with self.store.lock:
                    self.namespaces()
                    self.quotas(changed_only=True)
                if time.monotonic() >= due:
                    swept = self.store.rv
                    with self.store.lock:
                        self.sweep()
                    due = time.monotonic() + SWEEP_SECONDS
            except Exception as e:  # keep the controllers alive; say what went wrong
                self.log("controllers: %r" % e)
                time.sleep(TICK_SECONDS)

    def sync(self):
        """One pass of every controller over the whole store."""
        with self.store.lock:
            self.namespaces()
            self.sweep()

    def sweep(self):
        """The garbage collector, PVC protection and the apps controllers.
        They read the stored objects without copying them (and copy what
        they change)."""
        self.follow()
        self.garbage()
        self.pvc_protection()
        self.apps.sync()
        self.token_secrets()
        self.quotas()

    def follow(self):
        """Brings the garbage collector's view up to the store's changes;
        from the whole store at first and when the changes are no longer
        kept (compaction)."""
        if self.followed is not None:
            events, newest = self.store.events_after(self.followed, None, 0)
            if events is not None:
                for ev in events:
                    self.index(ev.key, ev.obj, ev.type == "DELETED")
                self.followed = newest
                return
        self.uids, self.owned, self.deleting = set(), {}, {}
        for key, obj in self.store.scan():
            self.index(key, obj, False)
        self.followed = self.store.rv

    def index(self, key, obj, gone):
        md = obj["metadata"]
        where = (key, md.get("namespace"), md["name"])
        self.owned.pop(where, None)
        self.deleting.pop(where, None)
        if gone:
            self.uids.discard(md.get("uid"))
            return
        self.uids.add(md.get("uid"))
        if md.get("ownerReferences"):
            self.owned[where] = (key, obj)
        if md.get("deletionTimestamp") and \
                any(f in GC_FINALIZERS for f in md.get("finalizers") or []):
            self.deleting[where] = (key, obj)

    # --- namespaces ---

    def namespaces(self):
        seen = tuple(self.store.version_of(k) for k in (NAMESPACES, SERVICEACCOUNTS, CONFIGMAPS))
        if seen == self.namespaces_seen:
            return
        done = True  # nothing left to do until one of them changes
        for ns in self.store.items(NAMESPACES):
            name = ns["metadata"]["name"]
            if ns["metadata"].get("deletionTimestamp"):
                self.finalize_namespace(ns)
                done = False  # it waits for its content, of any kind, to go
                continue
            if self.store.peek(SERVICEACCOUNTS, name, "default") is None:
                due = self.sa_due.setdefault(name, time.monotonic() + self.sa_delay)
                if time.monotonic() < due:
                    done = False  # pass again when it is due
                else:
                    done = self.make(SERVICEACCOUNTS, name, {
                        "apiVersion": "v1", "kind": "ServiceAccount",
                        "metadata": {"name": "default"}}) and done
            else:
                self.sa_due.pop(name, None)
            if self.store.peek(CONFIGMAPS, name, "kube-root-ca.crt") is None and self.ca_pem:
                done = self.make(CONFIGMAPS, name, {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "kube-root-ca.crt", "annotations": {
                        "kubernetes.io/description": "Contains a CA bundle that can be used to "
                        "verify the kube-apiserver when using internal endpoints such as the "
                        "internal service IP or kubernetes.default.svc. No other usage is "
                        "guaranteed across distributions of Kubernetes clusters."}},
                    "data": {"ca.crt": self.ca_pem}}) and done
        names = {ns["metadata"]["name"] for ns in self.store.items(NAMESPACES)}
        for gone in [n for n in self.sa_due if n not in names]:
            del self.sa_due[gone]
        for gone in [w for w in self.make_errors if w[1] not in names]:
            del self.make_errors[gone]
        # Read again: what this pass made changed them.
        self.namespaces_seen = tuple(self.store.version_of(k) for k in (
            NAMESPACES, SERVICEACCOUNTS, CONFIGMAPS)) if done else None

    def make(self, key, ns, obj):
        """Creates obj; returns whether it could. A failure is logged once
        until it changes (a quota that allows no ConfigMaps refuses the
        root CA's on every pass)."""
        kind = self.registry.kind_of_key(key)
        where = (key, ns, obj["metadata"]["name"])
        try:
            self.registry._create(kind, ns, obj, Request({}))
            self.make_errors.pop(where, None)
            return True
        except Exception as e:  # raced with a user's create, a quota, or the namespace went
            message = "controllers: create %s %s/%s: %s" % (key, ns, where[2], e)
            if self.make_errors.get(where) != message:
                self.make_errors[where] = message
                self.log(message)
            return False

    def finalize_namespace(self, ns):
        """Deletes what is in the namespace; removes it once empty."""
        name = ns["metadata"]["name"]
        inside = [(k, o) for k in self.store.keys() for o in self.store.items(k, name)]
        for k, o in inside:
            kind = self.registry.kind_of_key(k)
            if kind is not None and not o["metadata"].get("deletionTimestamp"):
                self.registry.system_delete(kind, name, o["metadata"]["name"])
        if not inside:
            self.store.remove(NAMESPACES, None, name)

    # --- the resource quota controller ---

    def _served(self, group, resource):
        """Whether the cluster serves group/resource (any version)."""
        return any(k.group == group and k.plural == resource
                   for rs in self.registry.kinds().values() for k in rs.values())

    def quotas(self, changed_only=False):
        """syncResourceQuota of every quota (changed_only: of those whose
        status.hard is not their spec.hard, a quota just made or changed):
        status.hard from spec.hard, status.used measured, written when
        either differs (quantities compared by value)."""
        for rq in self.store.items(QUOTAS):
            spec_hard = dict((rq.get("spec") or {}).get("hard") or {})
            status = rq.get("status") or {}
            have_hard = status.get("hard") or {}
            if changed_only and have_hard == spec_hard and ("used" in status or not spec_hard):
                continue
            used = {k: quota._q(v) for k, v in (status.get("used") or {}).items()}
            used.update(quota.usage_of(self.store, rq, spec_hard, self._served))
            used = quota.mask(used, spec_hard)
            old_used = {k: quota._q(v) for k, v in (status.get("used") or {}).items()}
            if have_hard == spec_hard and ("used" in status or not spec_hard) and \
                    {k: q.value for k, q in used.items()} == \
                    {k: q.value for k, q in old_used.items()}:
                continue
            rq = clone(rq)
            # Empty lists are left out, as the real server's JSON omits them.
            new = {"hard": dict(sorted(spec_hard.items())),
                   "used": {k: str(used[k]) for k in sorted(used)}}
            rq["status"] = {k: v for k, v in new.items() if v}
            self.store.replace(QUOTAS, rq["metadata"]["namespace"], rq["metadata"]["name"], rq)

    # --- the token controller ---

    def token_secrets(self):
        if self.tokens is None:
            return
        for secret in self.store.items(SECRETS):
            md = secret["metadata"]
            if secret.get("type") != SA_TOKEN or md.get("deletionTimestamp") or \
                    (secret.get("data") or {}).get("token"):
                continue
            name = (md.get("annotations") or {}).get(SA_NAME_ANNOTATION, "")
            sa = self.store.find(SERVICEACCOUNTS, md["namespace"], name)
            uid = (md.get("annotations") or {}).get(SA_UID_ANNOTATION)
            if sa is None or (uid and uid != sa["metadata"]["uid"]):
                self.registry.system_delete(self.registry.kind_of_key(SECRETS),
                                            md["namespace"], md["name"])
                continue
            token, _ = self.tokens.issue(sa, seconds=LEGACY_TOKEN_SECONDS,
                                         bound=dict(secret, kind="Secret"))
            secret = clone(secret)
            secret["metadata"].setdefault("annotations", {})[SA_UID_ANNOTATION] = \
                sa["metadata"]["uid"]
            data = secret.setdefault("data", {})
            data["token"] = base64.b64encode(token.encode()).decode()
            data["namespace"] = base64.b64encode(md["namespace"].encode()).decode()
            if self.ca_pem:
                data["ca.crt"] = base64.b64encode(self.ca_pem.encode()).decode()
            self.store.replace(SECRETS, md["namespace"], md["name"], secret)

    # --- PVC protection ---

    def pvc_protection(self):
        held = [o for o in self.store.items(PVCS) if o["metadata"].get("deletionTimestamp") and
                PVC_PROTECTION in (o["metadata"].get("finalizers") or [])]
        if not held:
            return
        used = set()
        for o in self.store.items(PODS):
            if (o.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                for v in (o.get("spec") or {}).get("volumes") or []:
                    claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
                    if claim:
                        used.add((o["metadata"]["namespace"], claim))
        for o in held:
            ns, name = o["metadata"]["namespace"], o["metadata"]["name"]
            if (ns, name) not in used:
                self.registry.remove_finalizer(self.registry.kind_of_key(PVCS), ns, name,
                                               PVC_PROTECTION)

    # --- garbage collection ---

    def garbage(self):
        for k, o in list(self.owned.values()):
            self.collect(k, o, o["metadata"]["ownerReferences"], self.uids)
        if not self.deleting:
            return
        dependents = {}  # owner uid -> [(key, dependent)]
        for k, d in self.owned.values():
            for ref in d["metadata"]["ownerReferences"]:
                dependents.setdefault(ref.get("uid"), []).append((k, d))
        for k, o in list(self.deleting.values()):
            md = o["metadata"]
            if "foregroundDeletion" in md["finalizers"]:
                self.foreground(k, o, dependents.get(md["uid"], []))
            if "orphan" in md["finalizers"]:
                self.orphan(k, o, dependents.get(md["uid"], []))

    def collect(self, key, obj, refs, uids):
        """Deletes obj when every owner is gone; drops the references to
        the gone ones when some remain."""
        gone = [r for r in refs if r.get("uid") not in uids]
        md = obj["metadata"]
        if not gone or md.get("deletionTimestamp"):
            return
        kind = self.registry.kind_of_key(key)
        if kind is None:
            return
        if len(gone) == len(refs):
            self.registry.system_delete(kind, md.get("namespace"), md["name"])
            return
        obj = clone(obj)
        obj["metadata"]["ownerReferences"] = [r for r in refs if r not in gone]
        self.store.replace(key, md.get("namespace"), md["name"], obj)

    def foreground(self, key, owner, deps):
        """Deletes the dependents first; the owner goes when none is left."""
        md = owner["metadata"]
        alive = []
        for k, d in deps:
            dmd = d["metadata"]
            if not any(r.get("uid") == md["uid"] for r in dmd.get("ownerReferences") or []):
                continue
            alive.append(d)
            if not dmd.get("deletionTimestamp"):
                kind = self.registry.kind_of_key(k)
                if kind is not None:
                    self.registry.system_delete(kind, dmd.get("namespace"), dmd["name"],
                                                policy="Foreground")
        if not alive:
            kind = self.registry.kind_of_key(key)
            self.registry.remove_finalizer(kind, md.get("namespace"), md["name"],
                                           "foregroundDeletion")

    def orphan(self, key, owner, deps):
        """Takes the owner's references off its dependents, then lets it go."""
        md = owner["metadata"]
        for k, d in deps:
            refs = d["metadata"].get("ownerReferences") or []
            keep = [r for r in refs if r.get("uid") != md["uid"]]
            if len(keep) != len(refs):
                d = clone(d)
                if keep:
                    d["metadata"]["ownerReferences"] = keep
                else:
                    del d["metadata"]["ownerReferences"]
                self.store.replace(k, d["metadata"].get("namespace"), d["metadata"]["name"], d)
        kind = self.registry.kind_of_key(key)
        self.registry.remove_finalizer(kind, md.get("namespace"), md["name"], "orphan")
