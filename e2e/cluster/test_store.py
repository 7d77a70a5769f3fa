"""The store under the local test cluster's API server: the changes of one
resource, or of all (the node's view), come in resourceVersion order
whatever resource wrote them; what a caller gets is its own copy, and the
history keeps each change as it was although it shares the stored objects
instead of copying them."""
import threading
import time
import unittest

from store import Store, clone

PODS, CMS = "/v1/pods", "/v1/configmaps"


def obj(name, ns="default", **fields):
    o = {"metadata": {"name": name, "namespace": ns}}
    o.update(fields)
    return o


class StoreTest(unittest.TestCase):
    def setUp(self):
        self.s = Store(history=5)

    def test_changes_of_every_resource_come_in_version_order(self):
        self.s.create(PODS, "default", obj("a"))
        self.s.create(CMS, "default", obj("b"))
        self.s.create(PODS, "default", obj("c"))
        self.s.remove(CMS, "default", "b")
        events, rv = self.s.events_after(0, None, 0)
        self.assertEqual([(e.rv, e.key, e.type) for e in events],
                         [(1, PODS, "ADDED"), (2, CMS, "ADDED"), (3, PODS, "ADDED"),
                          (4, CMS, "DELETED")])
        self.assertEqual(rv, 4)
        events, _ = self.s.events_after(2, None, 0)
        self.assertEqual([e.rv for e in events], [3, 4])
        events, _ = self.s.events_after(1, PODS, 0)
        self.assertEqual([e.rv for e in events], [3])

    def test_a_version_older_than_a_window_is_gone_for_the_node_too(self):
        for i in range(7):
            self.s.create(CMS, "default", obj("cm%d" % i))
        self.assertEqual(self.s.events_after(1, None, 0), (None, 1))
        self.assertEqual(self.s.events_after(1, CMS, 0), (None, 1))
        events, _ = self.s.events_after(2, None, 0)
        self.assertEqual([e.rv for e in events], [3, 4, 5, 6, 7])

    def test_a_waiting_reader_wakes_for_a_change(self):
        threading.Timer(0.2, lambda: self.s.create(PODS, "default", obj("late"))).start()
        t0 = time.monotonic()
        events, _ = self.s.events_after(0, PODS, 10)
        self.assertEqual([e.obj["metadata"]["name"] for e in events], ["late"])
        self.assertLess(time.monotonic() - t0, 5)

    def test_what_a_caller_gets_is_its_own(self):
        mine = obj("a", data={"k": "v"})
        back = self.s.create(CMS, "default", mine)
        mine["data"]["k"] = "changed by the caller"
        back["data"]["k"] = "changed too"
        got = self.s.get(CMS, "default", "a")
        got["data"]["k"] = "and this"
        self.s.list(CMS)[0][0]["data"]["k"] = "and the list's"
        self.assertEqual(self.s.get(CMS, "default", "a")["data"], {"k": "v"})
        self.assertEqual(self.s.peek(CMS, "default", "a")["data"], {"k": "v"})

    def test_the_history_keeps_each_change_as_it_was(self):
        self.s.create(CMS, "default", obj("a", data={"v": "1"}))
        cur = self.s.get(CMS, "default", "a")
        cur["data"]["v"] = "2"
        self.s.replace(CMS, "default", "a", cur)
        self.s.remove(CMS, "default", "a")
        added, modified, deleted = self.s.events_after(0, CMS, 0)[0]
        self.assertEqual(added.obj["data"], {"v": "1"})
        self.assertEqual((modified.prev["data"], modified.obj["data"]), ({"v": "1"}, {"v": "2"}))
        # The deletion's version is on the DELETED object only.
        self.assertEqual(modified.obj["metadata"]["resourceVersion"], "2")
        self.assertEqual(deleted.prev["metadata"]["resourceVersion"], "2")
        self.assertEqual(deleted.obj["metadata"]["resourceVersion"], "3")

    def test_a_write_that_changes_nothing_keeps_the_version(self):
        self.s.create(CMS, "default", obj("a", data={"v": "1"}))
        self.s.replace(CMS, "default", "a", self.s.get(CMS, "default", "a"))
        self.assertEqual(self.s.rv, 1)
        self.assertEqual(self.s.version_of(CMS), 1)
        self.assertEqual(self.s.version_of(PODS), 0)

    def test_lists_are_sorted_by_namespace_and_name_and_cluster_objects_list_too(self):
        for ns, name in (("b", "x"), ("a", "y"), ("a", "x")):
            self.s.create(PODS, ns, obj(name, ns))
        self.assertEqual([(o["metadata"]["namespace"], o["metadata"]["name"])
                          for o in self.s.items(PODS)], [("a", "x"), ("a", "y"), ("b", "x")])
        self.assertEqual([o["metadata"]["name"] for o in self.s.list(PODS, "a")[0]], ["x", "y"])
        self.s.create("/v1/nodes", None, {"metadata": {"name": "n2"}})
        self.s.create("/v1/nodes", None, {"metadata": {"name": "n1"}})
        self.assertEqual([o["metadata"]["name"] for o in self.s.items("/v1/nodes")],
                         ["n1", "n2"])
        self.assertEqual(len(self.s.scan()), 5)

    def test_clone_copies_what_marshal_cannot(self):
        class Odd:
            pass
        tree = {"a": [1, 2.5, None, True, {"b": "c"}], "odd": Odd()}
        copied = clone(tree)
        self.assertEqual(copied["a"], tree["a"])
        self.assertIsNot(copied["a"][4], tree["a"][4])
        self.assertIsInstance(copied["odd"], Odd)


if __name__ == "__main__":
    unittest.main()
