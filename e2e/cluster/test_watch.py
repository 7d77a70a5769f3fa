"""Watches on the local test cluster's API server, over HTTPS with the
token from up.sh: a watch resumes after the resourceVersion it is given,
bookmarks come when asked for, timeoutSeconds ends the stream, and a
version older than the kept history is answered with 410 Expired."""
import http.client
import json
import os
import ssl
import subprocess
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class Cluster:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="mwj-watch-")
        subprocess.run([os.path.join(HERE, "up.sh"), self.dir], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(self.dir, "token")) as f:
            self.token = f.read().strip()
        with open(os.path.join(self.dir, "kubeconfig")) as f:
            server = [line for line in f if "server:" in line][0].split("//")[1].strip()
        self.port = int(server.split(":")[1])
        self.ctx = ssl.create_default_context(cafile=os.path.join(self.dir, "ca.crt"))

    def stop(self):
        subprocess.run([os.path.join(HERE, "down.sh"), self.dir], stdout=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", self.dir])

    def conn(self):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=30)

    def call(self, method, path, body=None, ctype="application/json"):
        c = self.conn()
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Authorization": "Bearer " + self.token, "Content-Type": ctype})
        r = c.getresponse()
        data = json.loads(r.read() or b"null")
        c.close()
        return r.status, data

    def watch(self, path):
        """Opens a watch; returns (connection, response) to read lines from."""
        c = self.conn()
        c.request("GET", path, headers={"Authorization": "Bearer " + self.token})
        return c, c.getresponse()


def cm(name, value):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"v": value}}


CMS = "/api/v1/namespaces/default/configmaps"


class WatchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Cluster()

    @classmethod
    def tearDownClass(cls):
        cls.k.stop()

    def events(self, path, n):
        c, r = self.k.watch(path)
        self.assertEqual(r.status, 200)
        out = []
        while len(out) < n:
            line = r.readline()
            if not line:
                break
            out.append(json.loads(line))
        c.close()
        return out

    def test_a_watch_resumes_after_the_version_it_is_given(self):
        _, a = self.k.call("POST", CMS, cm("resume-a", "1"))
        rv = a["metadata"]["resourceVersion"]
        self.k.call("POST", CMS, cm("resume-b", "1"))
        a["data"]["v"] = "2"
        self.k.call("PUT", CMS + "/resume-a", a)
        self.k.call("DELETE", CMS + "/resume-b")
        ev = self.events(CMS + "?watch=true&resourceVersion=%s&timeoutSeconds=5" % rv, 3)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in ev],
                         [("ADDED", "resume-b"), ("MODIFIED", "resume-a"),
                          ("DELETED", "resume-b")])
        versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in ev]
        self.assertEqual(versions, sorted(versions))
        self.assertGreater(versions[0], int(rv))

    def test_a_watch_without_a_version_starts_with_what_exists(self):
        self.k.call("POST", CMS, cm("existing", "1"))
        ev = self.events(CMS + "?watch=true&fieldSelector=metadata.name%3Dexisting"
                               "&timeoutSeconds=2", 1)
        self.assertEqual((ev[0]["type"], ev[0]["object"]["data"]), ("ADDED", {"v": "1"}))

    def test_timeout_seconds_ends_the_stream(self):
        t0 = time.monotonic()
        c, r = self.k.watch(CMS + "?watch=true&resourceVersion=%s&timeoutSeconds=1"
                            % self.k.call("GET", CMS)[1]["metadata"]["resourceVersion"])
        body = r.read()
        c.close()
        self.assertEqual(body, b"")
        self.assertLess(time.monotonic() - t0, 10)

    def test_bookmarks_come_when_asked_for(self):
        rv = self.k.call("GET", CMS)[1]["metadata"]["resourceVersion"]
        ev = self.events(CMS + "?watch=true&allowWatchBookmarks=true&resourceVersion=%s"
                               "&timeoutSeconds=15" % rv, 1)
        self.assertEqual(ev[0]["type"], "BOOKMARK")
        self.assertGreaterEqual(int(ev[0]["object"]["metadata"]["resourceVersion"]), int(rv))

    def test_a_version_older_than_the_history_is_gone(self):
        _, a = self.k.call("POST", CMS, cm("old", "1"))
        self.k.call("POST", CMS, cm("newer", "1"))
        self.assertEqual(self.k.call("POST", "/mwj-test/compact")[0], 200)
        ev = self.events(CMS + "?watch=true&resourceVersion=%s&timeoutSeconds=5"
                         % a["metadata"]["resourceVersion"], 1)
        self.assertEqual(ev[0]["type"], "ERROR")
        self.assertEqual((ev[0]["object"]["code"], ev[0]["object"]["reason"]), (410, "Expired"))
        # A fresh list gives a version to watch from again.
        rv = self.k.call("GET", CMS)[1]["metadata"]["resourceVersion"]
        self.k.call("POST", CMS, cm("after", "1"))
        ev = self.events(CMS + "?watch=true&resourceVersion=%s&timeoutSeconds=5" % rv, 1)
        self.assertEqual((ev[0]["type"], ev[0]["object"]["metadata"]["name"]), ("ADDED", "after"))


if __name__ == "__main__":
    unittest.main()
