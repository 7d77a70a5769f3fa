"""Telling a pod's thread on the local test cluster's node that one of its
processes has ended, without polling: one thread for the whole node waits
on a pidfd per process (Linux 5.3) and calls back once the process has
exited. It does not reap: the pod's thread does (Popen.poll or wait), so
the exit code stays the pod's to read.

Each pod's thread used to poll its processes every 50 ms; with hundreds of
pods that is thousands of wake-ups a second, each taking the GIL of the
API server's process that the node runs in, which starved the requests.

Standard library only.
"""
import os
import selectors
import threading


class ExitWatcher:
    """Calls back when a watched process exits; see the module docstring."""

    def __init__(self, log=print):
        self.log = log
        self.lock = threading.Lock()
        self.pending = []  # (pidfd, callback) not yet handed to the selector
        self.sel = selectors.DefaultSelector()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.sel.register(self.wake_r, selectors.EVENT_READ, None)
        threading.Thread(target=self._loop, daemon=True, name="node-exits").start()

    def watch(self, pid, callback):
        """Calls callback(), once, on another thread, when process pid has
        exited: at once if it has been reaped already. Where there is no
        pidfd (an old kernel, or out of descriptors), a thread of its own
        waits for the process instead."""
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            threading.Thread(target=callback, daemon=True).start()
            return
        except (AttributeError, OSError):
            threading.Thread(target=self._wait_alone, args=(pid, callback), daemon=True,
                             name="node-exit-%d" % pid).start()
            return
        with self.lock:
            self.pending.append((fd, callback))
        try:
            os.write(self.wake_w, b"x")
        except BlockingIOError:
            pass  # the pipe is full: the loop is woken already

    def _wait_alone(self, pid, callback):
        try:
            # WNOWAIT: the process stays a zombie for its pod's thread to reap.
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            pass  # reaped already
        self._call(callback)

    def _call(self, callback):
        try:
            callback()
        except Exception as e:  # a bug in one pod's callback must not stop the others
            self.log("node: exit callback: %r" % e)

    def _loop(self):
        while True:
            for key, _ in self.sel.select():
                if key.data is None:
                    self._take_pending()
                    continue
                self.sel.unregister(key.fd)
                os.close(key.fd)
                self._call(key.data)

    def _take_pending(self):
        try:
            while os.read(self.wake_r, 4096):
                pass
        except BlockingIOError:
            pass
        with self.lock:
            pending, self.pending = self.pending, []
        for fd, callback in pending:
            self.sel.register(fd, selectors.EVENT_READ, callback)
