"""The local test cluster's storage: what etcd and the watch cache give the
API server, and nothing of the API's semantics (registry.py has those).

- Objects by (resource key, namespace, name). A resource key is
  "group/version/plural" ("" group for the core API: "/v1/pods").
- One resourceVersion counter for the cluster, as etcd's revision; every
  write takes the next one.
- A history of changes per resource, as the API server's watch cache keeps
  one per resource: a watch can resume from any version not older than
  that resource's window, whatever other resources do meanwhile. Each
  change keeps the object's previous state, so that a watch with a
  selector can tell an object that stopped matching (DELETED) from one
  that started (ADDED).

Standard library only.
"""
import collections
import copy
import datetime
import threading

from errors import already_exists_error, not_found_error

# Changes kept per resource, as a watch cache's window (apiserver.py's
# --watch-history sets it).
HISTORY = 1000


def now(after=0):
    """The time, or the time `after` seconds from now, as the API writes it."""
    return (datetime.datetime.now(datetime.timezone.utc) +
            datetime.timedelta(seconds=after)).strftime("%Y-%m-%dT%H:%M:%SZ")


def split_key(key):
    """(group, resource) of a resource key: ("", "pods"),
    ("training.mwj.io", "multiworkerjobs")."""
    group, _, rest = key.partition("/")
    return group, rest.rpartition("/")[2]


class Event:
    """One change: its resourceVersion, resource key, namespace, type
    (ADDED, MODIFIED, DELETED), the object after it (for DELETED, as it
    was when deleted) and before it (None for ADDED)."""

    __slots__ = ("rv", "key", "ns", "type", "obj", "prev")

    def __init__(self, rv, key, ns, etype, obj, prev):
        self.rv, self.key, self.ns, self.type, self.obj, self.prev = rv, key, ns, etype, obj, prev


class Store:
    """Thread-safe; callers that need several operations to be atomic hold
    `lock` (an RLock) around them."""

    def __init__(self, history=HISTORY):
        self.history_size = history
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.objects = {}
        self.rv = 0
        self.history = {}  # key -> deque of Event
        self.floor = {}    # key -> the oldest version a watch of it may start after
        self.compacted = 0

    # --- versions and history ---

    def _record(self, key, etype, obj, prev):
        ev = Event(self.rv, key, obj["metadata"].get("namespace"), etype, copy.deepcopy(obj),
                   copy.deepcopy(prev) if prev is not None else None)
        window = self.history.setdefault(key, collections.deque())
        window.append(ev)
        if len(window) > self.history_size:
            gone = window.popleft()
            self.floor[key] = gone.rv
        self.changed.notify_all()

    def oldest(self, key):
        """The oldest resourceVersion a watch of key can start after."""
        with self.lock:
            return max(self.floor.get(key, 0), self.compacted)

    def compact(self):
        """Forgets every history up to now, as etcd compaction does (for
        tests): a watch must then start from a fresh list."""
        with self.lock:
            self.history = {}
            self.floor = {}
            self.compacted = self.rv

    def wait_for(self, rv, timeout):
        """Waits up to timeout seconds until the store has reached
        resourceVersion rv. Returns whether it has."""
        with self.lock:
            return self.changed.wait_for(lambda: self.rv >= rv, timeout)

    def _window(self, key):
        if key is not None:
            return list(self.history.get(key, ()))
        return sorted((e for w in self.history.values() for e in w), key=lambda e: e.rv)

    def _too_old(self, rv, key):
        if key is not None:
            return rv < self.oldest(key)
        return any(rv < self.oldest(k) for k in self.history) or rv < self.compacted

    def events_after(self, rv, key, timeout):
        """Changes of key (of every resource when None: the node's view)
        after resourceVersion rv, waiting up to timeout seconds for one, and
        the store's resourceVersion to go on from. Returns (None, rv) when
        rv is older than the window (410 Gone)."""
        with self.lock:
            if self._too_old(rv, key):
                return None, rv
            window = self._window(key)
            if (not window or window[-1].rv <= rv) and timeout > 0:
                self.changed.wait(timeout)
                window = self._window(key)
            if self._too_old(rv, key):
                return None, rv
            return [e for e in window if e.rv > rv], self.rv

    # --- objects ---

    def get(self, key, ns, name):
        with self.lock:
            obj = self.objects.get((key, ns, name))
            if obj is None:
                raise not_found_error(split_key(key)[1], split_key(key)[0], name)
            return copy.deepcopy(obj)

    def find(self, key, ns, name):
        """The object, or None."""
        with self.lock:
            obj = self.objects.get((key, ns, name))
            return copy.deepcopy(obj) if obj is not None else None

    def list(self, key, ns=None):
        """Objects of key (in ns, or all namespaces when ns is None), sorted
        by namespace and name, and the store's resourceVersion."""
        with self.lock:
            items = [copy.deepcopy(o) for (k, n, _), o in sorted(self.objects.items())
                     if k == key and (ns is None or n == ns)]
            return items, str(self.rv)

    def in_namespace(self, ns):
        """(key, name) of every object in namespace ns."""
        with self.lock:
            return [(k, name) for (k, n, name) in self.objects if n == ns]

    def all_items(self):
        """((key, ns, name), object) of everything, for the controllers."""
        with self.lock:
            return [(k, copy.deepcopy(o)) for k, o in self.objects.items()]

    def create(self, key, ns, obj):
        """Stores a new object, which must carry its name and metadata
        already; sets its resourceVersion. 409 if it exists."""
        with self.lock:
            name = obj["metadata"]["name"]
            if (key, ns, name) in self.objects:
                raise already_exists_error(split_key(key)[1], split_key(key)[0], name)
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self.objects[(key, ns, name)] = copy.deepcopy(obj)
            self._record(key, "ADDED", obj, None)
            return copy.deepcopy(obj)

    def replace(self, key, ns, name, obj):
        """Stores obj in place of the existing object with a new
        resourceVersion, unless nothing changed (a no-op write keeps its
        version). Returns what is stored."""
        with self.lock:
            old = self.objects.get((key, ns, name))
            if old is None:
                raise not_found_error(split_key(key)[1], split_key(key)[0], name)
            new = copy.deepcopy(obj)
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            if new == old:
                return copy.deepcopy(old)
            self.rv += 1
            new["metadata"]["resourceVersion"] = str(self.rv)
            self.objects[(key, ns, name)] = new
            self._record(key, "MODIFIED", new, old)
            return copy.deepcopy(new)

    def remove(self, key, ns, name):
        """Deletes the object for good; the DELETED event carries it with
        the deletion's resourceVersion. Returns it."""
        with self.lock:
            obj = self.objects.pop((key, ns, name), None)
            if obj is None:
                raise not_found_error(split_key(key)[1], split_key(key)[0], name)
            prev = copy.deepcopy(obj)
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self._record(key, "DELETED", obj, prev)
            return copy.deepcopy(obj)
