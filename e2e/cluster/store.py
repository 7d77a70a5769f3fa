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

A stored object is never changed in place: a write stores a new one. So
the history's changes share the stored objects instead of copying them,
and readers that only look (the controllers, the node's DNS, the watches)
can walk them without a copy (items, peek). Everything handed to a caller
that may change it (get, find, list, and what the writes return) is a
copy.

Objects are kept per resource, so that listing one resource, or finding
the changes after a version, costs what that resource holds or what
changed, not what the whole cluster holds.

Standard library only.
"""
import collections
import copy
import datetime
import heapq
import itertools
import marshal
import operator
import threading

from errors import already_exists_error, not_found_error

# Changes kept per resource, as a watch cache's window (apiserver.py's
# --watch-history sets it).
HISTORY = 1000


def now(after=0):
    """The time, or the time `after` seconds from now, as the API writes it."""
    return (datetime.datetime.now(datetime.timezone.utc) +
            datetime.timedelta(seconds=after)).strftime("%Y-%m-%dT%H:%M:%SZ")


def clone(obj):
    """A deep copy of a JSON-like object. marshal copies such a tree about
    ten times as fast as copy.deepcopy, and the store copies a lot (a
    few hundred pods, listed every few seconds); deepcopy takes anything
    marshal cannot."""
    try:
        return marshal.loads(marshal.dumps(obj))
    except ValueError:
        return copy.deepcopy(obj)


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
        self.objects = {}  # key -> {(ns, name): object}
        self.rv = 0
        self.history = {}  # key -> deque of Event, oldest first
        self.floor = {}    # key -> the oldest version a watch of it may start after
        self.last = {}     # key -> the resourceVersion of its last change
        self.compacted = 0

    # --- versions and history ---

    def _record(self, key, etype, obj, prev):
        """Keeps a change; obj and prev are stored objects, not to be
        changed by anyone from now on."""
        ev = Event(self.rv, key, obj["metadata"].get("namespace"), etype, obj, prev)
        window = self.history.setdefault(key, collections.deque())
        window.append(ev)
        if len(window) > self.history_size:
            gone = window.popleft()
            self.floor[key] = gone.rv
        self.last[key] = self.rv
        self.changed.notify_all()

    def oldest(self, key):
        """The oldest resourceVersion a watch of key can start after."""
        with self.lock:
            return max(self.floor.get(key, 0), self.compacted)

    def version_of(self, key):
        """The resourceVersion of key's last change (0: none yet): a cheap
        way to tell whether anything of key changed."""
        with self.lock:
            return self.last.get(key, 0)

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

    def _after(self, rv, key):
        """The changes of key (of every resource when None) after rv,
        oldest first. Walks each window from its newest end, so that it
        costs what changed since rv, not the window's length."""
        keys = self.history if key is None else (key,)
        tails = []
        for k in keys:
            window = self.history.get(k, ())
            tail = list(itertools.takewhile(lambda e: e.rv > rv, reversed(window)))
            if tail:
                tail.reverse()
                tails.append(tail)
        if len(tails) == 1:
            return tails[0]
        return list(heapq.merge(*tails, key=lambda e: e.rv))

    def _too_old(self, rv, key):
        if key is not None:
            return rv < self.oldest(key)
        return rv < max(max(self.floor.values(), default=0), self.compacted)

    def events_after(self, rv, key, timeout):
        """Changes of key (of every resource when None: the node's view)
        after resourceVersion rv, waiting up to timeout seconds for one, and
        the store's resourceVersion to go on from. Returns (None, rv) when
        rv is older than the window (410 Gone). The events' objects are
        the stored ones: not to be changed."""
        with self.lock:
            if self._too_old(rv, key):
                return None, rv
            events = self._after(rv, key)
            if not events and timeout > 0:
                self.changed.wait(timeout)
                events = self._after(rv, key)
            if self._too_old(rv, key):
                return None, rv
            return events, self.rv

    # --- objects ---

    def get(self, key, ns, name):
        with self.lock:
            obj = self.objects.get(key, {}).get((ns, name))
            if obj is None:
                raise not_found_error(split_key(key)[1], split_key(key)[0], name)
            return clone(obj)

    def find(self, key, ns, name):
        """The object, or None."""
        with self.lock:
            obj = self.objects.get(key, {}).get((ns, name))
            return clone(obj) if obj is not None else None

    def peek(self, key, ns, name):
        """The stored object, or None, for a caller that only looks at it:
        it must not be changed."""
        with self.lock:
            return self.objects.get(key, {}).get((ns, name))

    def list(self, key, ns=None):
        """Objects of key (in ns, or all namespaces when ns is None), sorted
        by namespace and name, and the store's resourceVersion."""
        with self.lock:
            return [clone(o) for o in self.items(key, ns)], str(self.rv)

    def items(self, key, ns=None):
        """The stored objects of key (in ns, or all namespaces when ns is
        None), sorted by namespace and name, for a caller that only looks
        at them: they must not be changed."""
        with self.lock:
            objs = sorted(self.objects.get(key, {}).items(), key=operator.itemgetter(0))
            return [o for (n, _), o in objs if ns is None or n == ns]

    def scan(self):
        """(resource key, stored object) of everything, in no order, for a
        caller that only looks at them: they must not be changed."""
        with self.lock:
            return [(k, o) for k, objs in self.objects.items() for o in objs.values()]

    def keys(self):
        """The resource keys that hold objects."""
        with self.lock:
            return [k for k, objs in self.objects.items() if objs]

    def in_namespace(self, ns):
        """(key, name) of every object in namespace ns."""
        with self.lock:
            return [(k, name) for k, objs in self.objects.items() for (n, name) in objs
                    if n == ns]

    def create(self, key, ns, obj):
        """Stores a new object, which must carry its name and metadata
        already; sets its resourceVersion. 409 if it exists."""
        with self.lock:
            name = obj["metadata"]["name"]
            objs = self.objects.setdefault(key, {})
            if (ns, name) in objs:
                raise already_exists_error(split_key(key)[1], split_key(key)[0], name)
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            new = clone(obj)
            objs[(ns, name)] = new
            self._record(key, "ADDED", new, None)
            return clone(new)

    def replace(self, key, ns, name, obj):
        """Stores obj in place of the existing object with a new
        resourceVersion, unless nothing changed (a no-op write keeps its
        version). Returns what is stored."""
        with self.lock:
            objs = self.objects.get(key, {})
            old = objs.get((ns, name))
            if old is None:
                raise not_found_error(split_key(key)[1], split_key(key)[0], name)
            new = clone(obj)
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            if new == old:
                return clone(old)
            self.rv += 1
            new["metadata"]["resourceVersion"] = str(self.rv)
            objs[(ns, name)] = new
            self._record(key, "MODIFIED", new, old)
            return clone(new)

    def remove(self, key, ns, name):
        """Deletes the object for good; the DELETED event carries it with
        the deletion's resourceVersion. Returns it."""
        with self.lock:
            prev = self.objects.get(key, {}).pop((ns, name), None)
            if prev is None:
                raise not_found_error(split_key(key)[1], split_key(key)[0], name)
            self.rv += 1
            # A new object and metadata: prev may be in the history.
            gone = dict(prev)
            gone["metadata"] = dict(prev["metadata"], resourceVersion=str(self.rv))
            self._record(key, "DELETED", gone, prev)
            return clone(gone)
