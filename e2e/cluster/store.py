"""The local test cluster's object store: what etcd plus the API server's
generic registry do for every resource.

- Every write gets the next resourceVersion (one counter for the cluster,
  as etcd's revision); an update that carries a stale one is a 409
  Conflict.
- metadata.generation starts at 1 and goes up when anything but metadata
  and status changes.
- For resources with a status subresource, writes to the main resource
  keep the stored status, and writes to /status change only the status.
- JSON merge patch (RFC 7386) and the strategic merge patch cases kubectl
  and the operator use (maps merge, lists of named items merge by name).

Standard library only.
"""
import copy
import datetime
import threading
import uuid


class ApiError(Exception):
    """An error the API returns as a Status object."""

    def __init__(self, code, reason, message):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    def status(self):
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}


def now(after=0):
    """The time, or the time `after` seconds from now, as the API writes it."""
    return (datetime.datetime.now(datetime.timezone.utc) +
            datetime.timedelta(seconds=after)).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(target, patch):
    """RFC 7386: null removes a key, objects merge, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# Lists that strategic merge patch merges by a key instead of replacing.
_MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name",
               "volumes": "name", "volumeMounts": "mountPath", "ports": "containerPort",
               "conditions": "type", "ownerReferences": "uid", "imagePullSecrets": "name"}


def strategic_merge_patch(target, patch, field=None):
    """The strategic merge patch of Kubernetes for the cases that matter
    here: objects merge as in a merge patch, lists in _MERGE_KEYS merge
    item by item on their key ($patch: delete removes an item), other lists
    are replaced."""
    if isinstance(patch, list) and field in _MERGE_KEYS and isinstance(target, list):
        key = _MERGE_KEYS[field]
        out = copy.deepcopy(target)
        for item in patch:
            if not isinstance(item, dict) or key not in item:
                return copy.deepcopy(patch)
            idx = next((i for i, t in enumerate(out)
                        if isinstance(t, dict) and t.get(key) == item[key]), None)
            if item.get("$patch") == "delete":
                if idx is not None:
                    out.pop(idx)
            elif idx is None:
                out.append(copy.deepcopy(item))
            else:
                out[idx] = strategic_merge_patch(out[idx], item)
        return out
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        if v is None:
            out.pop(k, None)
        else:
            out[k] = strategic_merge_patch(out.get(k), v, k)
    return out


def _spec_view(obj):
    """What a generation counts: everything but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


class Store:
    """Objects by (resource key, namespace, name). A resource key is
    "group/version/plural" ("" group for the core API). Thread-safe; every
    change is also passed to the listeners (for watches)."""

    def __init__(self):
        self.lock = threading.RLock()
        self.objects = {}
        self.rv = 0
        self.listeners = []
        # Recent changes for watches: (resourceVersion, key, namespace, type,
        # object), oldest first, at most HISTORY of them, as etcd compacts.
        self.history = []
        self.changed = threading.Condition(self.lock)
        self.compacted = 0

    def _bump(self):
        self.rv += 1
        return str(self.rv)

    HISTORY = 1000

    def _notify(self, key, event, obj):
        ns = obj.get("metadata", {}).get("namespace")
        self.history.append((self.rv, key, ns, event, copy.deepcopy(obj)))
        del self.history[:-self.HISTORY]
        self.changed.notify_all()
        for fn in list(self.listeners):
            fn(key, event, copy.deepcopy(obj), self.rv)

    def oldest(self):
        """The oldest resourceVersion a watch can still start after."""
        with self.lock:
            kept = self.history[0][0] - 1 if len(self.history) == self.HISTORY else 0
            return max(kept, self.compacted)

    def compact(self):
        """Forgets the history up to now, as etcd compaction does (for
        tests): a watch must start from a fresh list."""
        with self.lock:
            self.history = []
            self.compacted = self.rv

    def events_after(self, rv, key, ns, timeout):
        """Changes of key (of every key when None) in ns (everywhere when
        None) after resourceVersion rv, waiting up to timeout seconds for
        any change, and the store's resourceVersion to go on from. (None,
        rv) if rv is older than the history holds (410 Gone)."""
        with self.lock:
            if rv < self.oldest():
                return None, rv
            if self.rv <= rv and timeout > 0:
                self.changed.wait(timeout)
            if rv < self.oldest():
                return None, rv
            return [e for e in self.history
                    if e[0] > rv and (key is None or e[1] == key) and
                    (ns is None or e[2] == ns)], self.rv

    def get(self, key, ns, name):
        with self.lock:
            obj = self.objects.get((key, ns, name))
            if obj is None:
                raise ApiError(404, "NotFound", '%s "%s" not found' % (key.split("/")[-1], name))
            return copy.deepcopy(obj)

    def list(self, key, ns=None):
        """Objects of key (in ns, or all namespaces when ns is None), sorted
        by namespace and name, and the store's resourceVersion."""
        with self.lock:
            items = [copy.deepcopy(o) for (k, n, _), o in sorted(self.objects.items())
                     if k == key and (ns is None or n == ns)]
            return items, str(self.rv)

    def create(self, key, ns, obj):
        with self.lock:
            md = obj.setdefault("metadata", {})
            name = md.get("name")
            if not name and md.get("generateName"):
                name = md["generateName"] + uuid.uuid4().hex[:5]
                md["name"] = name
            if not name:
                raise ApiError(422, "Invalid", "metadata.name: Required value: name or "
                                               "generateName is required")
            if (key, ns, name) in self.objects:
                raise ApiError(409, "AlreadyExists",
                               '%s "%s" already exists' % (key.split("/")[-1], name))
            if ns is not None:
                md["namespace"] = ns
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = now()
            md["generation"] = 1
            md.pop("deletionTimestamp", None)
            md["resourceVersion"] = self._bump()
            self.objects[(key, ns, name)] = obj
            self._notify(key, "ADDED", obj)
            return copy.deepcopy(obj)

    def update(self, key, ns, name, obj, has_status, status_only=False):
        """Replaces the object; with has_status, the main resource keeps the
        stored status and /status (status_only) changes only the status."""
        with self.lock:
            old = self.objects.get((key, ns, name))
            if old is None:
                raise ApiError(404, "NotFound", '%s "%s" not found' % (key.split("/")[-1], name))
            md = obj.setdefault("metadata", {})
            if md.get("name", name) != name:
                raise ApiError(400, "BadRequest", "the name of the object (%s) does not match "
                                                  "the name on the URL (%s)" % (md["name"], name))
            want_rv = md.get("resourceVersion")
            if want_rv and want_rv != old["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict",
                               'Operation cannot be fulfilled on %s "%s": the object has been '
                               "modified; please apply your changes to the latest version and "
                               "try again" % (key.split("/")[-1], name))
            if status_only:
                new = copy.deepcopy(old)
                if "status" in obj:
                    new["status"] = obj["status"]
                else:
                    new.pop("status", None)
            else:
                new = copy.deepcopy(obj)
                if has_status:
                    if "status" in old:
                        new["status"] = copy.deepcopy(old["status"])
                    else:
                        new.pop("status", None)
                # metadata the server owns
                for k in ("uid", "creationTimestamp", "namespace", "deletionTimestamp",
                          "generation"):
                    if k in old["metadata"]:
                        new["metadata"][k] = old["metadata"][k]
                new["metadata"]["name"] = name
                if _spec_view(new) != _spec_view(old):
                    new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
            if new == old:
                return copy.deepcopy(old)  # a no-op write keeps its version
            new["metadata"]["resourceVersion"] = self._bump()
            self.objects[(key, ns, name)] = new
            self._notify(key, "MODIFIED", new)
            return copy.deepcopy(new)

    def mark_deleting(self, ns, name, grace):
        """Marks a pod for graceful deletion: deletionTimestamp grace
        seconds from now, and deletionGracePeriodSeconds, in a MODIFIED
        event; the pod stays until deleted for good. A pod already marked
        keeps its mark (a shorter grace is the node's to apply). Returns
        the pod."""
        with self.lock:
            obj = self.objects.get(("/v1/pods", ns, name))
            if obj is None:
                raise ApiError(404, "NotFound", 'pods "%s" not found' % name)
            if obj["metadata"].get("deletionTimestamp"):
                return copy.deepcopy(obj)
            obj["metadata"]["deletionTimestamp"] = now(grace)
            obj["metadata"]["deletionGracePeriodSeconds"] = grace
            obj["metadata"]["resourceVersion"] = self._bump()
            self._notify("/v1/pods", "MODIFIED", obj)
            return copy.deepcopy(obj)

    def delete(self, key, ns, name):
        with self.lock:
            obj = self.objects.pop((key, ns, name), None)
            if obj is None:
                raise ApiError(404, "NotFound", '%s "%s" not found' % (key.split("/")[-1], name))
            obj["metadata"]["resourceVersion"] = self._bump()
            self._notify(key, "DELETED", obj)
            return copy.deepcopy(obj)
