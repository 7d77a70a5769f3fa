"""Watches, as the API server's watch cache serves them: the changes of one
resource after a resourceVersion, filtered by namespace and by label and
field selectors, with the transitions a selector implies (an object that
starts matching arrives as ADDED, one that stops matching as DELETED with
its last matching state and the change's resourceVersion), BOOKMARK events
only when the client allows them, and 410 Gone for a version older than the
resource's window.

Bookmarks look like the real ones, the watched kind with only
metadata.resourceVersion set, and come as the real ones do: irregularly
(about once a bookmark interval, with jitter) and only when something of
that resource has changed since the last one, so a quiet watch gets none.
A client must not count on them.

Standard library only.
"""
import copy
import random
import time

from errors import ApiError

# Longest wait for a change before looking at the clock again.
POLL_SECONDS = 1.0


class Watch:
    """One watch request. send(type, object) writes an event; alive()
    says whether to go on (the server may drop every watch)."""

    def __init__(self, registry, kind, ns, matches, rv_text, timeout, bookmarks,
                 bookmark_every):
        self.registry = registry
        self.store = registry.store
        self.kind = kind
        self.ns = ns if kind.namespaced else None
        self.matches = matches
        self.rv_text = rv_text
        self.timeout = timeout
        self.bookmarks = bookmarks
        self.bookmark_every = bookmark_every

    def start(self):
        """Where the stream starts, before any byte of it is sent, so that
        a version from the future can still be answered with its own
        status (504): (resourceVersion to follow from, the objects to send
        as ADDED first: what exists, when no version was given)."""
        if self.rv_text not in ("", "0"):
            self.registry.wait_fresh(self.rv_text)
            return int(self.rv_text), []
        with self.store.lock:  # the stored objects: send only reads them
            items, rv = self.store.items(self.kind.key, self.ns), self.store.rv
        return rv, [o for o in items if self.matches(o)]

    def _deliver(self, ev, send):
        """One stored change as the selector sees it."""
        if self.ns is not None and ev.ns != self.ns:
            return
        now_ok = self.matches(ev.obj)
        was_ok = ev.prev is not None and self.matches(ev.prev)
        if ev.type == "ADDED":
            if now_ok:
                send("ADDED", ev.obj)
        elif ev.type == "DELETED":
            if was_ok:
                send("DELETED", ev.obj)
        elif now_ok and was_ok:
            send("MODIFIED", ev.obj)
        elif now_ok:
            send("ADDED", ev.obj)
        elif was_ok:
            last = copy.deepcopy(ev.prev)
            last["metadata"]["resourceVersion"] = str(ev.rv)
            send("DELETED", last)

    def _next_bookmark(self):
        return time.monotonic() + self.bookmark_every * random.uniform(0.75, 1.25)

    def run(self, start, send, alive):
        """Streams from start (what start() gave) until the timeout, a
        dropped watch or an expired version (an ERROR event with a 410
        Status, as the real server)."""
        rv, initial = start
        for obj in initial:
            send("ADDED", obj)
        end = time.monotonic() + self.timeout
        changed = False  # something of this resource changed since the last bookmark
        due = self._next_bookmark()
        while time.monotonic() < end and alive():
            wait = min(POLL_SECONDS, end - time.monotonic())
            events, newest = self.store.events_after(rv, self.kind.key, max(wait, 0))
            if events is None:
                send("ERROR", ApiError(410, "Expired", "too old resource version: %d (%d)"
                                       % (rv, self.store.oldest(self.kind.key))).status())
                return
            for ev in events:
                rv = ev.rv
                changed = True
                self._deliver(ev, send)
            rv = max(rv, newest)
            if self.bookmarks and changed and time.monotonic() >= due:
                send("BOOKMARK", {"kind": self.kind.kind, "apiVersion": self.kind.group_version,
                                  "metadata": {"resourceVersion": str(rv)}})
                changed = False
                due = self._next_bookmark()
