"""podsandbox, the node's container sandbox, built and run as up.sh does:
the container sees the pod's files at their mount points (read-only where
asked), the pod's host name and its working directory, while the host's
files and name stay as they were; a mount or directory that fails stops
it with exit code 128 and a line in the log, and a missing command ends it
127, as the shell did. Needs root and cc, as the cluster does."""
import os
import shutil
import socket
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


@unittest.skipUnless(os.geteuid() == 0 and shutil.which("cc"), "needs root and cc")
class SandboxTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="mwj-sandbox-test-")
        cls.bin = os.path.join(cls.dir, "podsandbox")
        subprocess.run(["cc", "-O2", os.path.join(HERE, "podsandbox.c"), "-o", cls.bin],
                       check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def run_in(self, mounts, script, hostname="pod-0", workdir="/"):
        args = [self.bin, hostname, workdir]
        for m in mounts:
            args += list(m)
        return subprocess.run(args + ["--", "/bin/sh", "-c", script],
                              capture_output=True, text=True, timeout=30)

    def test_the_container_sees_the_pods_files_name_and_folder(self):
        hosts = os.path.join(self.dir, "hosts")
        with open(hosts, "w") as f:
            f.write("127.0.0.9\tpod-0\n")
        vol = os.path.join(self.dir, "vol")
        os.makedirs(vol, exist_ok=True)
        with open(os.path.join(vol, "token"), "w") as f:
            f.write("secret")
        target = os.path.join(self.dir, "not", "there", "yet")
        r = self.run_in([("rw", hosts, "/etc/hosts"), ("ro", vol, target)],
                        'cat /etc/hosts; cat %s/token; echo; hostname; pwd; '
                        'touch %s/new 2>/dev/null && echo writable || echo read-only'
                        % (target, target), workdir="/tmp")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "127.0.0.9\tpod-0\nsecret\npod-0\n/tmp\nread-only\n")
        # Nothing of it reached the host but the mount point it made.
        self.assertTrue(os.path.isdir(target))
        self.assertEqual(os.listdir(target), [])
        self.assertNotEqual(socket.gethostname(), "pod-0")
        with open("/etc/hosts") as f:
            self.assertNotIn("127.0.0.9\tpod-0", f.read())

    def test_a_mount_that_fails_stops_it_before_the_command(self):
        r = self.run_in([("rw", os.path.join(self.dir, "missing"),
                          os.path.join(self.dir, "at"))], "echo ran")
        self.assertEqual(r.returncode, 128)
        self.assertEqual(r.stdout, "")
        self.assertIn("local node: cannot mount", r.stderr)

    def test_a_missing_working_directory_stops_it(self):
        r = self.run_in([], "echo ran", workdir="/nonexistent/dir")
        self.assertEqual((r.returncode, r.stdout), (128, ""))
        self.assertIn("local node: no working directory /nonexistent/dir", r.stderr)

    def test_a_missing_command_ends_it_127_and_the_exit_code_passes_through(self):
        r = subprocess.run([self.bin, "h", "/", "--", "/nonexistent"], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 127)
        self.assertEqual(self.run_in([], "exit 7").returncode, 7)


if __name__ == "__main__":
    unittest.main()
