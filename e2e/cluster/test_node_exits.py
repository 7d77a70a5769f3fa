"""The node's exit watcher, with real processes: it calls back once a
process exits, not before, leaves the exit code for its owner to reap,
calls back at once for a process reaped already, and without pidfds
waits on a thread of its own."""
import subprocess
import threading
import unittest
from unittest import mock

from node_exits import ExitWatcher

PROMPT = 10.0  # generous for a loopback wake-up on a loaded machine


class ExitWatcherTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.w = ExitWatcher(log=lambda _m: None)

    def watch(self, proc):
        done = threading.Event()
        self.w.watch(proc.pid, done.set)
        return done

    def test_it_calls_back_when_the_process_exits_and_not_before(self):
        proc = subprocess.Popen(["sh", "-c", "read line; exit 3"], stdin=subprocess.PIPE)
        done = self.watch(proc)
        self.assertFalse(done.wait(0.3))
        proc.stdin.close()  # the end of its input ends it
        self.assertTrue(done.wait(PROMPT))
        # Not reaped: its owner still reads how it ended.
        self.assertEqual(proc.wait(), 3)

    def test_many_processes_each_wake_their_own(self):
        procs = [subprocess.Popen(["sleep", "0.%d" % (i + 1)]) for i in range(5)]
        dones = [self.watch(p) for p in procs]
        for p, done in zip(procs, dones):
            self.assertTrue(done.wait(PROMPT))
            self.assertEqual(p.wait(), 0)

    def test_a_process_reaped_already_calls_back_at_once(self):
        proc = subprocess.Popen(["true"])
        proc.wait()
        self.assertTrue(self.watch(proc).wait(PROMPT))

    def test_without_a_pidfd_a_thread_waits_for_the_process(self):
        def no_pidfd(_pid):
            raise OSError(38, "Function not implemented")
        proc = subprocess.Popen(["sh", "-c", "read line; exit 4"], stdin=subprocess.PIPE)
        with mock.patch("os.pidfd_open", no_pidfd):
            done = self.watch(proc)
        self.assertFalse(done.wait(0.3))
        proc.stdin.close()
        self.assertTrue(done.wait(PROMPT))
        self.assertEqual(proc.wait(), 4)


if __name__ == "__main__":
    unittest.main()
