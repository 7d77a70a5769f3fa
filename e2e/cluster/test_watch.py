"""Watches on the local test cluster's API server, over HTTPS with the
token from up.sh: a watch resumes after the resourceVersion it is given,
bookmarks come when asked for, timeoutSeconds ends the stream, and a
version older than the kept history is answered with 410 Expired."""
import json
import time
import unittest

from client import Cluster  # noqa: F401  (the other tests take it from here too)


def cm(name, value):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"v": value}}


CMS = "/api/v1/namespaces/default/configmaps"


class WatchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Cluster(env={"MWJ_CLUSTER_BOOKMARK_SECONDS": "2"})

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

    def test_bookmarks_come_when_asked_for_after_a_change(self):
        rv = self.k.call("GET", CMS)[1]["metadata"]["resourceVersion"]
        self.k.call("POST", CMS, cm("bookmarked", "1"))
        ev = self.events(CMS + "?watch=true&allowWatchBookmarks=true&resourceVersion=%s"
                               "&timeoutSeconds=15" % rv, 2)
        self.assertEqual([e["type"] for e in ev], ["ADDED", "BOOKMARK"])
        self.assertGreaterEqual(int(ev[1]["object"]["metadata"]["resourceVersion"]),
                                int(ev[0]["object"]["metadata"]["resourceVersion"]))

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
