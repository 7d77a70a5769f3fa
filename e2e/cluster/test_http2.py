"""What a client sees of the local test cluster through its TLS front, as of
a real API server: HTTP/2 negotiated through ALPN and HTTP/1.1 still
served; a watch or a followed log over HTTP/2 delivers each line while it
is open, nothing held back; two watches share one HTTP/2 connection; and
the server's response headers arrive as it sent them. The client is curl,
whose HTTP/2 is the libcurl the operator uses."""
import json
import os
import re
import select
import subprocess
import tempfile
import time
import unittest
from functools import partial

from test_watch import CMS, Cluster, cm

# Generous for a loopback event, far below the watches' timeoutSeconds: an
# event held back until its response ends misses it.
PROMPT = 10.0
OPEN = 120  # timeoutSeconds of the watches here


class Curl:
    """A curl process against the cluster whose output is read line by line
    as it arrives."""

    def __init__(self, k, *args):
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            ["curl", "-sS", "-N", "--cacert", os.path.join(k.dir, "ca.crt"),
             "-H", "Authorization: Bearer " + k.token] + list(args),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.stderr)
        self.buf = b""

    def line(self, timeout=PROMPT):
        """The next line of output, waiting at most timeout seconds."""
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError("no line from curl within %.0f s (got %r)"
                                     % (timeout, self.buf))
            if select.select([self.proc.stdout], [], [], left)[0]:
                data = os.read(self.proc.stdout.fileno(), 65536)
                if not data:
                    raise AssertionError("curl's output ended (got %r): %s"
                                         % (self.buf, self.errors()))
                self.buf += data
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode().rstrip("\r")

    def headers(self):
        """The status line and headers that -i prints, up to the blank line
        (curl writes them out with the first bytes of the body only)."""
        status, fields = self.line(), {}
        while True:
            line = self.line()
            if not line:
                return status, fields
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()

    def running(self):
        return self.proc.poll() is None

    def errors(self):
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def close(self):
        """Ends curl; returns its stderr."""
        if self.running():
            self.proc.terminate()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()
        text = self.errors()
        self.stderr.close()
        return text


def run_curl(k, *args, url="/version"):
    """One request through the front; returns curl's stdout."""
    out = subprocess.run(["curl", "-sS", "--cacert", os.path.join(k.dir, "ca.crt"),
                          "-H", "Authorization: Bearer " + k.token] + list(args) +
                         [base(k) + url], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise AssertionError("curl %s: %s" % (" ".join(args), out.stderr))
    return out.stdout


def base(k):
    return "https://127.0.0.1:%d" % k.port


def header_list(text, skip=()):
    """The status line and headers of the last response in curl -D output,
    names lower-case, without those a proxy may not pass on (hop-by-hop),
    Date, which differs from one answer to the next, and skip."""
    block = text.replace("\r\n", "\n").strip("\n").split("\n\n")[-1].split("\n")
    skip = {"connection", "keep-alive", "transfer-encoding", "date", *skip}
    fields = [(n.strip().lower(), v.strip()) for n, _, v in
              (line.partition(":") for line in block[1:])]
    return block[0], sorted(f for f in fields if f[0] not in skip)


class Http2Test(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Cluster()
        with open(os.path.join(cls.k.dir, "nginx.conf")) as f:
            cls.backend = int(re.search(r"server 127\.0\.0\.1:(\d+);", f.read()).group(1))

    @classmethod
    def tearDownClass(cls):
        cls.k.stop()

    def direct(self, *args, url):
        """The same request straight to the Python server behind the front."""
        out = subprocess.run(["curl", "-sS", "-H", "Authorization: Bearer " + self.k.token] +
                             list(args) + ["http://127.0.0.1:%d%s" % (self.backend, url)],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout

    def test_a_client_that_offers_http2_gets_it(self):
        out = run_curl(self.k, "--http2", "-w", "\n%{http_version}").split("\n")
        self.assertEqual(out[-1], "2")
        self.assertEqual(json.loads(out[0])["major"], "1")

    def test_a_client_that_asks_for_http1_1_gets_it(self):
        out = run_curl(self.k, "--http1.1", "-w", "\n%{http_version}").split("\n")
        self.assertEqual(out[-1], "1.1")
        self.assertEqual(json.loads(out[0])["major"], "1")

    def watch(self, *names, more=()):
        """Watches over HTTP/2 in one curl, one per ConfigMap name (more:
        curl options, -Z to run them at once). Each begins with an ADDED
        event for what exists, so the watches are known to be open once
        those have come."""
        urls = [base(self.k) + CMS + "?watch=true&timeoutSeconds=%d"
                "&fieldSelector=metadata.name%%3D%s" % (OPEN, name) for name in names]
        return Curl(self.k, "--http2", *more, *urls)

    def events(self, w, n):
        """The next n events from w, other lines (headers) left out."""
        out = []
        while len(out) < n:
            line = w.line()
            if line.startswith("{"):
                ev = json.loads(line)
                out.append((ev["type"], ev["object"]["metadata"]["name"],
                            ev["object"].get("data")))
        return out

    def test_a_watch_over_http2_gets_each_event_while_it_is_open(self):
        # Created over HTTP/2 too: a request body passes through the front.
        created = json.loads(run_curl(self.k, "--http2", "-H", "Content-Type: application/json",
                                      "-d", json.dumps(cm("h2-watched", "1")), url=CMS))
        w = self.watch("h2-watched", more=["-i"])
        try:
            status, fields = w.headers()
            self.assertEqual(status.split()[:2], ["HTTP/2", "200"])
            self.assertEqual(fields.get("content-type"), "application/json")
            self.assertEqual(self.events(w, 1), [("ADDED", "h2-watched", {"v": "1"})])
            created["data"]["v"] = "2"
            self.assertEqual(self.k.call("PUT", CMS + "/h2-watched", created)[0], 200)
            self.assertEqual(self.events(w, 1), [("MODIFIED", "h2-watched", {"v": "2"})])
            self.assertEqual(self.k.call("DELETE", CMS + "/h2-watched")[0], 200)
            self.assertEqual(self.events(w, 1)[0][:2], ("DELETED", "h2-watched"))
            self.assertTrue(w.running(), "the watch ended before its events came")
        finally:
            w.close()

    def test_two_watches_share_one_http2_connection_and_both_stream(self):
        names = ("h2-pair-a", "h2-pair-b")
        for name in names:
            self.assertEqual(self.k.call("POST", CMS, cm(name, "1"))[0], 201)
        # curl -Z waits to multiplex rather than connect twice, as libcurl
        # does with CURLOPT_PIPEWAIT.
        w = self.watch(*names, more=["-Z", "-v"])
        try:
            self.assertEqual(sorted(self.events(w, 2)),
                             [("ADDED", name, {"v": "1"}) for name in names])
            for name in names:
                status, obj = self.k.call("GET", CMS + "/" + name)
                obj["data"]["v"] = "2"
                self.assertEqual(self.k.call("PUT", CMS + "/" + name, obj)[0], 200)
            self.assertEqual(sorted(self.events(w, 2)),
                             [("MODIFIED", name, {"v": "2"}) for name in names])
            self.assertTrue(w.running(), "a watch ended before its events came")
        finally:
            log = w.close()
        # curl -v says so once per connection (its progress meter may share
        # the line).
        self.assertEqual(len(re.findall(r"\* Connected to ", log)), 1, log)

    def test_a_followed_log_over_http2_gets_each_line_while_the_container_runs(self):
        go = os.path.join(self.k.dir, "h2-log-go")
        script = ('echo "port $KUBERNETES_SERVICE_PORT"; '
                  'while [ ! -e %s ]; do sleep 0.1; done; echo second' % go)
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "h2-talker"},
               "spec": {"restartPolicy": "Never", "containers": [
                   {"name": "c", "image": "busybox", "command": ["sh", "-c", script]}]}}
        pods = "/api/v1/namespaces/default/pods"
        self.assertEqual(self.k.call("POST", pods, pod)[0], 201)
        end = time.monotonic() + 30
        while self.k.call("GET", pods + "/h2-talker")[1].get("status", {}).get(
                "phase") != "Running":
            self.assertLess(time.monotonic(), end, "the pod did not start")
            time.sleep(0.1)
        w = Curl(self.k, "--http2", base(self.k) + pods + "/h2-talker/log?follow=true")
        try:
            # Pods are given the front's port, not the Python server's.
            self.assertEqual(w.line(), "port %d" % self.k.port)
            self.assertTrue(w.running())
            open(go, "w").close()
            self.assertEqual(w.line(), "second")
        finally:
            w.close()

    def test_retry_after_and_content_type_reach_the_client_unchanged(self):
        url = CMS + "/none"
        self.assertEqual(self.k.call("POST", "/mwj-test/errors?code=429&seconds=10")[0], 200)
        try:
            # The message counts down the seconds left, and so its length.
            vary = ["content-length"]
            want = header_list(self.direct("-D", "-", "-o", "/dev/null", url=url), vary)
            for proto in ("--http2", "--http1.1"):
                status, got = header_list(run_curl(self.k, proto, "-D", "-", "-o", "/dev/null",
                                                   url=url), vary)
                self.assertEqual(status.split()[1], "429")
                self.assertEqual(got, want[1], proto)
                self.assertIn(("retry-after", "1"), got)
                self.assertIn(("content-type", "application/json"), got)
        finally:
            self.k.call("POST", "/mwj-test/errors?code=429&seconds=0")

    def test_a_warning_header_reaches_the_client(self):
        # A real server warns of an unknown field with fieldValidation=Warn.
        def warnings(send, name, *proto):
            body = cm(name, "1")
            body["bogus"] = True
            out = send(*proto, "-D", "-", "-o", "/dev/null", "-H",
                       "Content-Type: application/json", "-d", json.dumps(body),
                       url=CMS + "?fieldValidation=Warn")
            return [v for n, v in header_list(out)[1] if n == "warning"]
        want = warnings(self.direct, "h2-warned")
        self.assertEqual(want, ['299 - "unknown field \\"bogus\\""'])
        self.assertEqual(warnings(partial(run_curl, self.k), "h2-warned-2", "--http2"), want)
        self.assertEqual(warnings(partial(run_curl, self.k), "h2-warned-1", "--http1.1"), want)


if __name__ == "__main__":
    unittest.main()
