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
  cluster's CA, made again if deleted.
- PVC protection: a PersistentVolumeClaim being deleted keeps its
  kubernetes.io/pvc-protection finalizer while a pod that has not finished
  uses it.

Standard library only.
"""
import threading
import time

from registry import Request

NAMESPACES = "/v1/namespaces"
SERVICEACCOUNTS = "/v1/serviceaccounts"
CONFIGMAPS = "/v1/configmaps"
PODS = "/v1/pods"
PVCS = "/v1/persistentvolumeclaims"
PVC_PROTECTION = "kubernetes.io/pvc-protection"
# Longest the controllers sleep when nothing changes.
TICK_SECONDS = 0.2


class Controllers:
    def __init__(self, registry, ca_pem, log=print):
        self.registry = registry
        self.store = registry.store
        self.ca_pem = ca_pem
        self.log = log
        self.stopping = False

    def start(self):
        threading.Thread(target=self.loop, daemon=True, name="controllers").start()

    def loop(self):
        seen = -1
        while not self.stopping:
            with self.store.lock:
                if self.store.rv == seen:
                    self.store.changed.wait(TICK_SECONDS)
                seen = self.store.rv
            try:
                self.sync()
            except Exception as e:  # keep the controllers alive; say what went wrong
                self.log("controllers: %r" % e)
                time.sleep(TICK_SECONDS)

    def sync(self):
        """One pass of every controller over the whole store."""
        with self.store.lock:
            items = self.store.all_items()
            self.namespaces([o for (k, _, _), o in items if k == NAMESPACES], items)
            self.garbage(items)
            self.pvc_protection(items)

    # --- namespaces ---

    def namespaces(self, namespaces, items):
        present = {(k, ns, name) for (k, ns, name), _ in items}
        for ns in namespaces:
            name = ns["metadata"]["name"]
            if ns["metadata"].get("deletionTimestamp"):
                self.finalize_namespace(ns, items)
                continue
            if (SERVICEACCOUNTS, name, "default") not in present:
                self.make(SERVICEACCOUNTS, name, {"apiVersion": "v1", "kind": "ServiceAccount",
                                                  "metadata": {"name": "default"}})
            if (CONFIGMAPS, name, "kube-root-ca.crt") not in present and self.ca_pem:
                self.make(CONFIGMAPS, name, {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "kube-root-ca.crt", "annotations": {
                        "kubernetes.io/description": "Contains a CA bundle that can be used to "
                        "verify the kube-apiserver when using internal endpoints such as the "
                        "internal service IP or kubernetes.default.svc. No other usage is "
                        "guaranteed across distributions of Kubernetes clusters."}},
                    "data": {"ca.crt": self.ca_pem}})

    def make(self, key, ns, obj):
        kind = self.registry.kind_of_key(key)
        try:
            self.registry._create(kind, ns, obj, Request({}))
        except Exception as e:  # raced with a user's create, or the namespace went
            self.log("controllers: create %s %s/%s: %s" % (key, ns, obj["metadata"]["name"], e))

    def finalize_namespace(self, ns, items):
        """Deletes what is in the namespace; removes it once empty."""
        name = ns["metadata"]["name"]
        inside = [((k, n, obj_name), o) for (k, n, obj_name), o in items if n == name]
        for (k, n, obj_name), o in inside:
            kind = self.registry.kind_of_key(k)
            if kind is not None and not o["metadata"].get("deletionTimestamp"):
                self.registry.system_delete(kind, n, obj_name)
        if not inside:
            self.store.remove(NAMESPACES, None, name)

    # --- PVC protection ---

    def pvc_protection(self, items):
        used = set()
        for (k, ns, _), o in items:
            if k == PODS and (o.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                for v in (o.get("spec") or {}).get("volumes") or []:
                    claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
                    if claim:
                        used.add((ns, claim))
        for (k, ns, name), o in items:
            if k == PVCS and o["metadata"].get("deletionTimestamp") and \
                    PVC_PROTECTION in (o["metadata"].get("finalizers") or []) and \
                    (ns, name) not in used:
                self.registry.remove_finalizer(self.registry.kind_of_key(k), ns, name,
                                               PVC_PROTECTION)

    # --- garbage collection ---

    def garbage(self, items):
        by_uid = {o["metadata"].get("uid"): ((k, ns, name), o) for (k, ns, name), o in items}
        dependents = {}
        for where, o in items:
            for ref in o["metadata"].get("ownerReferences") or []:
                dependents.setdefault(ref.get("uid"), []).append((where, o))
        for (k, ns, name), o in items:
            refs = o["metadata"].get("ownerReferences") or []
            if refs:
                self.collect(k, ns, name, o, refs, by_uid)
            finalizers = o["metadata"].get("finalizers") or []
            if o["metadata"].get("deletionTimestamp"):
                if "foregroundDeletion" in finalizers:
                    self.foreground(k, ns, name, o, dependents.get(o["metadata"]["uid"], []))
                if "orphan" in finalizers:
                    self.orphan(k, ns, name, o, dependents.get(o["metadata"]["uid"], []))

    def collect(self, key, ns, name, obj, refs, by_uid):
        """Deletes obj when every owner is gone; drops the references to
        the gone ones when some remain."""
        gone = [r for r in refs if r.get("uid") not in by_uid]
        if not gone or obj["metadata"].get("deletionTimestamp"):
            return
        kind = self.registry.kind_of_key(key)
        if kind is None:
            return
        if len(gone) == len(refs):
            self.registry.system_delete(kind, ns, name)
            return
        obj["metadata"]["ownerReferences"] = [r for r in refs if r not in gone]
        self.store.replace(key, ns, name, obj)

    def foreground(self, key, ns, name, owner, deps):
        """Deletes the dependents first; the owner goes when none is left."""
        uid = owner["metadata"]["uid"]
        alive = []
        for (k, dns, dname), d in deps:
            if not any(r.get("uid") == uid for r in d["metadata"].get("ownerReferences") or []):
                continue
            alive.append(d)
            if not d["metadata"].get("deletionTimestamp"):
                kind = self.registry.kind_of_key(k)
                if kind is not None:
                    self.registry.system_delete(kind, dns, dname, policy="Foreground")
        if not alive:
            kind = self.registry.kind_of_key(key)
            self.registry.remove_finalizer(kind, ns, name, "foregroundDeletion")

    def orphan(self, key, ns, name, owner, deps):
        """Takes the owner's references off its dependents, then lets it go."""
        uid = owner["metadata"]["uid"]
        for (k, dns, dname), d in deps:
            refs = d["metadata"].get("ownerReferences") or []
            keep = [r for r in refs if r.get("uid") != uid]
            if len(keep) != len(refs):
                if keep:
                    d["metadata"]["ownerReferences"] = keep
                else:
                    del d["metadata"]["ownerReferences"]
                self.store.replace(k, dns, dname, d)
        kind = self.registry.kind_of_key(key)
        self.registry.remove_finalizer(kind, ns, name, "orphan")
