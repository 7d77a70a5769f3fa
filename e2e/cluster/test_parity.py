"""The local test cluster answers as a real kube-apiserver (v1.31, strict
field validation on) does, request by request: each test states what the
real server answers, and checks that this one answers the same. The
operator is developed against this cluster, so wherever it was more lenient
than a real server, an operator could pass here and break there.

Over HTTPS (through the HTTP/2 front) with the token from up.sh."""
import json
import time
import unittest

from client import Cluster

NS = "/api/v1/namespaces/default"
PODS = NS + "/pods"
SVCS = NS + "/services"
CMS = NS + "/configmaps"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
EVENTS = NS + "/events"
EVENTS_V1 = "/apis/events.k8s.io/v1/namespaces/default/events"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.mwj.io/v1/namespaces/default/widgets"
MICRO = "2026-01-02T03:04:05.000000Z"

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.mwj.io"},
    "spec": {"group": "example.mwj.io", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {
                               "type": "object", "properties": {
                                   "spec": {"type": "object", "properties": {
                                       "size": {"type": "integer"}}},
                                   "status": {"type": "object",
                                              "x-kubernetes-preserve-unknown-fields": True}}}}}]}}


def pod(name, **spec):
    """A pod no scheduler here takes (the node leaves it alone)."""
    s = {"containers": [{"name": "c", "image": "busybox:1.36"}], "schedulerName": "none"}
    s.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": s}


def widget(name, size=1):
    return {"apiVersion": "example.mwj.io/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"size": size}}


def lease(name, **spec):
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name}, "spec": spec}


class Parity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k = Cluster()
        r = cls.k.request("POST", CRDS, WIDGET_CRD)
        assert r.status == 201, r.body
        for _ in range(50):  # until the new resource is served
            if cls.k.request("GET", WIDGETS).status == 200:
                break
            time.sleep(0.1)

    @classmethod
    def tearDownClass(cls):
        cls.k.stop()

    def req(self, method, path, body=None, **kw):
        return self.k.request(method, path, body, **kw)

    def assertStatus(self, r, code, reason=None):
        if r.status != code or (reason and r.body.get("reason") != reason):
            self.fail("want %d %s, got %d: %s" % (code, reason or "", r.status, r.body))

    def assertInvalid(self, r, field, text):
        """A 422 Invalid whose causes name field, with text in its message."""
        self.assertStatus(r, 422, "Invalid")
        causes = r.body["details"]["causes"]
        hits = [c for c in causes if c["field"] == field]
        self.assertTrue(hits, "no cause on %s in %s" % (field, causes))
        self.assertIn(text, " ".join(c["message"] for c in hits))


class Names(Parity):
    def test_a_pod_name_must_be_an_rfc1123_subdomain(self):
        r = self.req("POST", PODS, pod("Bad_Name"))
        self.assertInvalid(r, "metadata.name", "a lowercase RFC 1123 subdomain must consist of")
        self.assertEqual(r.body["details"]["kind"], "Pod")
        self.assertEqual(r.body["details"]["name"], "Bad_Name")
        self.assertTrue(r.body["message"].startswith('Pod "Bad_Name" is invalid: '))

    def test_a_service_name_must_be_a_dns1035_label(self):
        for name in ("a.b", "1svc", "s" * 64):
            r = self.req("POST", SVCS, {"apiVersion": "v1", "kind": "Service",
                                        "metadata": {"name": name},
                                        "spec": {"ports": [{"port": 80}]}})
            self.assertStatus(r, 422, "Invalid")
            self.assertIn("metadata.name", [c["field"] for c in r.body["details"]["causes"]])

    def test_a_custom_resource_name_is_checked_too(self):
        r = self.req("POST", WIDGETS, widget("Bad_Name"))
        self.assertStatus(r, 422, "Invalid")
        self.assertIn("metadata.name", [c["field"] for c in r.body["details"]["causes"]])

    def test_hostname_and_subdomain_are_rfc1123_labels(self):
        r = self.req("POST", PODS, pod("hn", hostname="a.b", subdomain="Upper"))
        self.assertStatus(r, 422, "Invalid")
        fields = [c["field"] for c in r.body["details"]["causes"]]
        self.assertIn("spec.hostname", fields)
        self.assertIn("spec.subdomain", fields)


class Metadata(Parity):
    def test_labels_and_annotations_keep_to_their_alphabet_and_lengths(self):
        p = pod("labels")
        p["metadata"]["labels"] = {"ok": "v" * 64}
        self.assertInvalid(self.req("POST", PODS, p), "metadata.labels",
                           "must be no more than 63 characters")
        p["metadata"]["labels"] = {"bad key": "v"}
        self.assertStatus(self.req("POST", PODS, p), 422, "Invalid")
        p["metadata"]["labels"] = {}
        p["metadata"]["annotations"] = {"a/b/c": "x"}
        self.assertStatus(self.req("POST", PODS, p), 422, "Invalid")

    def test_at_most_one_controller_and_a_uid_in_owner_references(self):
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u1",
               "controller": True}
        p = pod("owners")
        p["metadata"]["ownerReferences"] = [ref, dict(ref, uid="u2", name="o2")]
        r = self.req("POST", PODS, p)
        self.assertStatus(r, 422, "Invalid")
        self.assertIn("metadata.ownerReferences", r.body["message"])
        p["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                             "name": "o"}]
        r = self.req("POST", PODS, p)
        self.assertStatus(r, 422, "Invalid")
        self.assertIn("uid", r.body["message"])


class PodSpecs(Parity):
    def test_container_ports_are_between_1_and_65535(self):
        p = pod("ports")
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 70000}]
        self.assertInvalid(self.req("POST", PODS, p),
                           "spec.containers[0].ports[0].containerPort",
                           "must be between 1 and 65535, inclusive")

    def test_env_names_are_checked(self):
        p = pod("envname")
        p["spec"]["containers"][0]["env"] = [{"name": "A=B", "value": "1"}]
        r = self.req("POST", PODS, p)
        self.assertStatus(r, 422, "Invalid")
        self.assertIn("spec.containers[0].env[0].name",
                      [c["field"] for c in r.body["details"]["causes"]])

    def test_a_volume_mount_names_a_declared_volume(self):
        p = pod("mounts")
        p["spec"]["containers"][0]["volumeMounts"] = [{"name": "nowhere", "mountPath": "/x"}]
        self.assertInvalid(self.req("POST", PODS, p),
                           "spec.containers[0].volumeMounts[0].name", "Not found")

    def test_requests_may_not_exceed_limits(self):
        p = pod("requests")
        p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"},
                                                   "limits": {"cpu": "1"}}
        self.assertInvalid(self.req("POST", PODS, p),
                           "spec.containers[0].resources.requests",
                           "must be less than or equal to cpu limit")

    def test_a_pod_runs_as_a_service_account_that_exists(self):
        r = self.req("POST", PODS, pod("sa", serviceAccountName="nosuch"))
        self.assertStatus(r, 403, "Forbidden")
        self.assertEqual(r.body["message"], 'pods "sa" is forbidden: error looking up service '
                         'account default/nosuch: serviceaccount "nosuch" not found')
        # Every namespace has "default", and the kind is served.
        self.assertStatus(self.req("GET", NS + "/serviceaccounts/default"), 200)


class Bodies(Parity):
    def test_a_body_of_another_namespace_is_a_400(self):
        p = pod("elsewhere")
        p["metadata"]["namespace"] = "kube-system"
        r = self.req("POST", PODS, p)
        self.assertStatus(r, 400, "BadRequest")
        self.assertEqual(r.body["message"], "the namespace of the provided object does not "
                         "match the namespace sent on the request")

    def test_a_create_without_kind_is_a_400(self):
        p = pod("kindless")
        del p["kind"]
        self.assertStatus(self.req("POST", PODS, p), 400, "BadRequest")

    def test_a_create_with_a_resource_version_is_a_500(self):
        p = pod("versioned")
        p["metadata"]["resourceVersion"] = "12"
        r = self.req("POST", PODS, p)
        self.assertEqual(r.status, 500)
        self.assertEqual(r.body["message"],
                         "resourceVersion should not be set on objects to be created")

    def test_a_field_of_the_wrong_json_type_is_a_400(self):
        r = self.req("POST", PODS, pod("typed", terminationGracePeriodSeconds="30"))
        self.assertStatus(r, 400, "BadRequest")
        self.assertIn("cannot unmarshal string", r.body["message"])
        self.assertIn("terminationGracePeriodSeconds", r.body["message"])


class UnknownFields(Parity):
    def test_strict_refuses_unknown_fields_of_builtin_kinds(self):
        p = pod("strict", foo=1)
        r = self.req("POST", PODS + "?fieldValidation=Strict", p)
        self.assertStatus(r, 400, "BadRequest")
        self.assertIn('strict decoding error: unknown field "spec.foo"', r.body["message"])

    def test_strict_refuses_unknown_fields_of_custom_resources(self):
        w = widget("strictw")
        w["spec"]["colour"] = "red"
        r = self.req("POST", WIDGETS + "?fieldValidation=Strict", w)
        self.assertStatus(r, 400, "BadRequest")
        self.assertIn('unknown field "spec.colour"', r.body["message"])

    def test_strict_refuses_duplicate_keys(self):
        raw = (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","name":"dup"},'
               b'"data":{}}')
        r = self.req("POST", CMS + "?fieldValidation=Strict", raw)
        self.assertStatus(r, 400, "BadRequest")
        self.assertIn("duplicate field", r.body["message"])

    def test_warn_answers_with_a_warning_header_and_drops_the_field(self):
        r = self.req("POST", PODS + "?fieldValidation=Warn", pod("warned", foo=1))
        self.assertStatus(r, 201)
        warnings = r.header_values("Warning")
        self.assertTrue(any('unknown field \\"spec.foo\\"' in w and w.startswith("299 - ")
                            for w in warnings), warnings)
        self.assertNotIn("foo", r.body["spec"])

    def test_without_a_directive_unknown_fields_are_dropped_not_stored(self):
        self.assertStatus(self.req("POST", PODS, pod("dropped", foo=1)), 201)
        self.assertNotIn("foo", self.req("GET", PODS + "/dropped").body["spec"])


class Times(Parity):
    def test_micro_times_need_exactly_six_fractional_digits(self):
        r = self.req("POST", LEASES, lease("micro3", acquireTime="2026-01-02T03:04:05.123Z"))
        self.assertStatus(r, 400, "BadRequest")
        r = self.req("POST", LEASES, lease("micro6", acquireTime=MICRO))
        self.assertStatus(r, 201)
        self.assertEqual(r.body["spec"]["acquireTime"], MICRO)

    def test_times_are_stored_in_utc(self):
        r = self.req("POST", LEASES, lease("utc", renewTime="2026-01-02T05:04:05.000000+02:00"))
        self.assertStatus(r, 201)
        self.assertEqual(r.body["spec"]["renewTime"], MICRO)


class Leases(Parity):
    def test_durations_are_positive_and_transitions_not_negative(self):
        self.assertInvalid(self.req("POST", LEASES, lease("zero", leaseDurationSeconds=0)),
                           "spec.leaseDurationSeconds", "must be greater than 0")
        self.assertInvalid(self.req("POST", LEASES, lease("neg", leaseTransitions=-1)),
                           "spec.leaseTransitions", "must be greater than or equal to 0")

    def test_a_put_to_a_lease_that_does_not_exist_creates_it(self):
        r = self.req("PUT", LEASES + "/put-created", lease("put-created", holderIdentity="a"))
        self.assertStatus(r, 201)

    def test_an_update_of_a_lease_needs_its_resource_version(self):
        self.req("POST", LEASES, lease("needs-rv", holderIdentity="a"))
        r = self.req("PUT", LEASES + "/needs-rv", lease("needs-rv", holderIdentity="b"))
        self.assertStatus(r, 422, "Invalid")
        self.assertEqual(r.body["message"], 'leases.coordination.k8s.io "needs-rv" is invalid: '
                         "metadata.resourceVersion: Invalid value: 0x0: must be specified for "
                         "an update")


class Updates(Parity):
    def test_a_custom_resource_needs_its_resource_version_a_pod_does_not(self):
        self.req("POST", WIDGETS, widget("unconditional"))
        r = self.req("PUT", WIDGETS + "/unconditional", widget("unconditional", 2))
        self.assertStatus(r, 422, "Invalid")
        self.assertIn("must be specified for an update", r.body["message"])
        self.req("POST", PODS, pod("unconditional"))
        p = self.req("GET", PODS + "/unconditional").body
        del p["metadata"]["resourceVersion"]
        p["metadata"]["labels"] = {"a": "b"}
        self.assertStatus(self.req("PUT", PODS + "/unconditional", p), 200)

    def test_a_pod_update_may_change_only_what_a_real_server_allows(self):
        self.req("POST", PODS, pod("immutable"))
        cur = self.req("GET", PODS + "/immutable").body
        cur["spec"]["containers"][0]["env"] = [{"name": "X", "value": "1"}]
        r = self.req("PUT", PODS + "/immutable", cur)
        self.assertStatus(r, 422, "Invalid")
        self.assertIn("pod updates may not change fields other than", r.body["message"])
        cur = self.req("GET", PODS + "/immutable").body
        cur["spec"]["containers"][0]["image"] = "busybox:1.37"
        self.assertStatus(self.req("PUT", PODS + "/immutable", cur), 200)

    def test_a_service_cluster_ip_cannot_change(self):
        r = self.req("POST", SVCS, {"apiVersion": "v1", "kind": "Service",
                                    "metadata": {"name": "fixed-ip"},
                                    "spec": {"ports": [{"port": 80}]}})
        self.assertStatus(r, 201)
        svc = r.body
        svc["spec"]["clusterIP"] = "10.96.99.99"
        svc["spec"]["clusterIPs"] = ["10.96.99.99"]
        r = self.req("PUT", SVCS + "/fixed-ip", svc)
        self.assertStatus(r, 422, "Invalid")
        self.assertIn("spec.clusterIPs", r.body["message"] + json.dumps(r.body["details"]))


class Events(Parity):
    def event(self, name, **extra):
        e = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
             "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
             "reason": "Test", "message": "m", "type": "Normal"}
        e.update(extra)
        return e

    def test_the_involved_object_is_in_the_event_s_namespace(self):
        e = self.event("elsewhere")
        e["involvedObject"]["namespace"] = "kube-system"
        self.assertInvalid(self.req("POST", EVENTS, e), "involvedObject.namespace",
                           "does not match event.namespace")

    def test_an_event_time_needs_the_reporting_controller_and_instance(self):
        r = self.req("POST", EVENTS, self.event("timed", eventTime=MICRO))
        self.assertStatus(r, 422, "Invalid")
        fields = [c["field"] for c in r.body["details"]["causes"]]
        self.assertIn("reportingController", fields)
        self.assertStatus(self.req("POST", EVENTS, self.event(
            "timed2", eventTime=MICRO, action="Test", reportingComponent="mwj-operator",
            reportingInstance="mwj-operator-0")), 201)

    def test_events_k8s_io_v1_is_served(self):
        r = self.req("POST", EVENTS_V1, {
            "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "v1ev"},
            "eventTime": MICRO, "reportingController": "mwj.io/operator",
            "reportingInstance": "op-0", "action": "Create", "reason": "Created",
            "type": "Normal", "note": "hi",
            "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}})
        self.assertStatus(r, 201)


class Patches(Parity):
    def test_custom_resources_refuse_strategic_merge_patch(self):
        self.req("POST", WIDGETS, widget("smp"))
        r = self.req("PATCH", WIDGETS + "/smp", {"spec": {"size": 2}},
                     ctype="application/strategic-merge-patch+json")
        self.assertStatus(r, 415, "UnsupportedMediaType")
        self.assertEqual(r.body["message"], "the body of the request was in an unknown format - "
                         "accepted media types include: application/json-patch+json, "
                         "application/merge-patch+json, application/apply-patch+yaml")

    def test_json_patch_works_everywhere_and_a_failed_test_is_a_422(self):
        self.req("POST", WIDGETS, widget("jp"))
        ops = [{"op": "test", "path": "/spec/size", "value": 1},
               {"op": "replace", "path": "/spec/size", "value": 3}]
        r = self.req("PATCH", WIDGETS + "/jp", ops, ctype="application/json-patch+json")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["spec"]["size"], 3)
        r = self.req("PATCH", WIDGETS + "/jp", ops, ctype="application/json-patch+json")
        self.assertStatus(r, 422, "Invalid")
        self.req("POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "jp"}, "data": {"a": "1"}})
        r = self.req("PATCH", CMS + "/jp", [{"op": "add", "path": "/data/b", "value": "2"}],
                     ctype="application/json-patch+json")
        self.assertEqual(r.body["data"], {"a": "1", "b": "2"})


class DryRun(Parity):
    def test_dry_run_validates_and_persists_nothing(self):
        self.assertStatus(self.req("POST", PODS + "?dryRun=All", pod("dry")), 201)
        self.assertStatus(self.req("GET", PODS + "/dry"), 404)
        self.assertStatus(self.req("POST", PODS + "?dryRun=All", pod("Dry_Bad")), 422)
        self.req("POST", PODS, pod("dry-kept"))
        self.assertStatus(self.req("DELETE", PODS + "/dry-kept?dryRun=All"), 200)
        self.assertStatus(self.req("GET", PODS + "/dry-kept"), 200)


class Deletion(Parity):
    def cm(self, name, **md):
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": dict(name=name, **md)}
        r = self.req("POST", CMS, body)
        self.assertStatus(r, 201)
        return r.body

    def child(self, name, owner):
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
               "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}
        return self.cm(name, ownerReferences=[ref])

    def wait_gone(self, path, seconds=10):
        for _ in range(int(seconds * 10)):
            if self.req("GET", path).status == 404:
                return
            time.sleep(0.1)
        self.fail("%s is still there" % path)

    def test_finalizers_hold_an_object_until_they_are_removed(self):
        self.cm("held", finalizers=["example.com/hold"])
        r = self.req("DELETE", CMS + "/held")
        self.assertStatus(r, 200)
        cur = self.req("GET", CMS + "/held").body
        self.assertIn("deletionTimestamp", cur["metadata"])
        cur["data"] = {"still": "writable"}
        self.assertStatus(self.req("PUT", CMS + "/held", cur), 200)
        cur = self.req("GET", CMS + "/held").body
        cur["metadata"]["finalizers"] = []
        self.assertStatus(self.req("PUT", CMS + "/held", cur), 200)
        self.assertStatus(self.req("GET", CMS + "/held"), 404)

    def test_foreground_deletion_removes_the_dependents_first(self):
        owner = self.cm("fg-owner")
        self.child("fg-child", owner)
        r = self.req("DELETE", CMS + "/fg-owner", {"propagationPolicy": "Foreground"})
        self.assertStatus(r, 200)
        self.assertIn("foregroundDeletion", r.body["metadata"]["finalizers"])
        self.wait_gone(CMS + "/fg-child")
        self.wait_gone(CMS + "/fg-owner")

    def test_orphan_deletion_keeps_the_dependents_without_their_reference(self):
        owner = self.cm("or-owner")
        self.child("or-child", owner)
        self.assertStatus(self.req("DELETE", CMS + "/or-owner",
                                   {"propagationPolicy": "Orphan"}), 200)
        self.wait_gone(CMS + "/or-owner")
        child = self.req("GET", CMS + "/or-child")
        self.assertStatus(child, 200)
        self.assertNotIn("ownerReferences", child.body["metadata"])

    def test_preconditions_that_do_not_match_are_a_409(self):
        self.cm("pre")
        r = self.req("DELETE", CMS + "/pre", {"preconditions": {"uid": "nope"}})
        self.assertStatus(r, 409, "Conflict")
        self.assertIn("Precondition failed: UID in precondition: nope", r.body["message"])
        r = self.req("DELETE", CMS + "/pre", {"preconditions": {"resourceVersion": "1"}})
        self.assertStatus(r, 409, "Conflict")

    def test_deleting_a_pod_answers_with_the_pod(self):
        self.req("POST", PODS, pod("answered"))
        r = self.req("DELETE", PODS + "/answered")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["kind"], "Pod")
        r = self.req("DELETE", CMS + "/%s" % self.cm("answered-cm")["metadata"]["name"])
        self.assertEqual((r.body["kind"], r.body["status"]), ("Status", "Success"))

    def test_a_collection_is_deleted_by_label_selector(self):
        for i in range(3):
            self.cm("col-%d" % i, labels={"col": "yes" if i < 2 else "no"})
        r = self.req("DELETE", CMS + "?labelSelector=col%3Dyes")
        self.assertStatus(r, 200)
        self.assertEqual(sorted(o["metadata"]["name"] for o in r.body["items"]),
                         ["col-0", "col-1"])
        names = [o["metadata"]["name"] for o in self.req("GET", CMS + "?labelSelector=col")
                 .body["items"]]
        self.assertEqual(names, ["col-2"])

    def test_garbage_collection_deletes_a_bound_pod_gracefully(self):
        owner = self.cm("gc-owner")
        p = pod("gc-pod", nodeName="another-node", terminationGracePeriodSeconds=300)
        p["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                             "name": "gc-owner",
                                             "uid": owner["metadata"]["uid"]}]
        self.assertStatus(self.req("POST", PODS, p), 201)
        self.assertStatus(self.req("DELETE", CMS + "/gc-owner"), 200)
        for _ in range(100):
            cur = self.req("GET", PODS + "/gc-pod").body
            if cur["metadata"].get("deletionTimestamp"):
                break
            time.sleep(0.1)
        self.assertEqual(cur["metadata"]["deletionGracePeriodSeconds"], 300)
        # Until its node has stopped it, the name is taken.
        self.assertStatus(self.req("POST", PODS, pod("gc-pod")), 409, "AlreadyExists")
        self.assertStatus(self.req("DELETE", PODS + "/gc-pod?gracePeriodSeconds=0"), 200)
        self.assertStatus(self.req("GET", PODS + "/gc-pod"), 404)


class Namespaces(Parity):
    def test_a_deleted_namespace_terminates_refuses_content_and_goes(self):
        nsr = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}}
        self.assertStatus(self.req("POST", "/api/v1/namespaces", nsr), 201)
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "inside",
                                                                    "finalizers": ["x.io/f"]}}
        self.assertStatus(self.req("POST", "/api/v1/namespaces/doomed/configmaps", cm), 201)
        r = self.req("DELETE", "/api/v1/namespaces/doomed")
        self.assertStatus(r, 200)
        self.assertEqual(r.body["status"]["phase"], "Terminating")
        r = self.req("POST", "/api/v1/namespaces/doomed/configmaps",
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}})
        self.assertStatus(r, 403, "Forbidden")
        self.assertIn("because it is being terminated", r.body["message"])
        # The finalizer keeps its object, and so the namespace.
        time.sleep(0.5)
        self.assertStatus(self.req("GET", "/api/v1/namespaces/doomed"), 200)
        self.req("PATCH", "/api/v1/namespaces/doomed/configmaps/inside",
                 {"metadata": {"finalizers": None}}, ctype="application/merge-patch+json")
        for _ in range(100):
            if self.req("GET", "/api/v1/namespaces/doomed").status == 404:
                break
            time.sleep(0.1)
        self.assertStatus(self.req("GET", "/api/v1/namespaces/doomed"), 404)

    def test_the_default_namespace_cannot_be_deleted(self):
        self.assertStatus(self.req("DELETE", "/api/v1/namespaces/default"), 403, "Forbidden")


class Defaults(Parity):
    def test_a_created_pod_carries_the_real_defaults(self):
        r = self.req("POST", PODS, pod("defaulted"))
        self.assertStatus(r, 201)
        spec = r.body["spec"]
        for field, want in (("dnsPolicy", "ClusterFirst"), ("restartPolicy", "Always"),
                            ("terminationGracePeriodSeconds", 30),
                            ("serviceAccountName", "default"), ("enableServiceLinks", True),
                            ("priority", 0)):
            self.assertEqual(spec.get(field), want, field)
        keys = {t.get("key") for t in spec["tolerations"]}
        self.assertEqual(keys, {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
        c = spec["containers"][0]
        self.assertEqual((c["imagePullPolicy"], c["terminationMessagePath"],
                          c["terminationMessagePolicy"]),
                         ("IfNotPresent", "/dev/termination-log", "File"))
        vol = [v for v in spec["volumes"] if v["name"].startswith("kube-api-access-")]
        self.assertEqual(len(vol), 1)
        self.assertEqual(c["volumeMounts"][0]["mountPath"],
                         "/var/run/secrets/kubernetes.io/serviceaccount")
        self.assertEqual(r.body["status"]["phase"], "Pending")

    def test_a_created_service_carries_the_real_defaults(self):
        r = self.req("POST", SVCS, {"apiVersion": "v1", "kind": "Service",
                                    "metadata": {"name": "headless"},
                                    "spec": {"clusterIP": "None", "selector": {"a": "b"},
                                             "publishNotReadyAddresses": True,
                                             "ports": [{"port": 2222}]}})
        self.assertStatus(r, 201)
        spec = r.body["spec"]
        self.assertEqual((spec["type"], spec["sessionAffinity"], spec["ipFamilies"],
                          spec["ipFamilyPolicy"], spec["internalTrafficPolicy"]),
                         ("ClusterIP", "None", ["IPv4"], "SingleStack", "Cluster"))
        self.assertEqual(spec["ports"][0]["protocol"], "TCP")
        self.assertEqual(spec["ports"][0]["targetPort"], 2222)


class Errors(Parity):
    def test_not_found_uses_the_real_wording_and_details(self):
        r = self.req("GET", WIDGETS + "/x")
        self.assertStatus(r, 404, "NotFound")
        self.assertEqual(r.body["message"], 'widgets.example.mwj.io "x" not found')
        self.assertEqual(r.body["details"], {"name": "x", "group": "example.mwj.io",
                                             "kind": "widgets"})

    def test_a_list_from_the_future_is_a_504_with_retry_after(self):
        rv = int(self.req("GET", CMS).body["metadata"]["resourceVersion"])
        r = self.req("GET", CMS + "?resourceVersion=%d&resourceVersionMatch=NotOlderThan"
                     % (rv + 1000))
        self.assertStatus(r, 504, "Timeout")
        self.assertEqual(r.body["details"]["causes"][0]["reason"], "ResourceVersionTooLarge")
        self.assertEqual(r.body["details"]["retryAfterSeconds"], 1)

    def test_a_limited_list_says_how_many_remain(self):
        for i in range(3):
            self.req("POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "rem-%d" % i}})
        r = self.req("GET", CMS + "?limit=1")
        self.assertIn("continue", r.body["metadata"])
        self.assertEqual(r.body["metadata"]["remainingItemCount"], len(
            self.req("GET", CMS).body["items"]) - 1)

    def test_no_token_is_system_anonymous_and_a_bad_token_is_401(self):
        r = self.req("GET", PODS, token=None)
        self.assertStatus(r, 403, "Forbidden")
        self.assertEqual(r.body["message"], 'pods is forbidden: User "system:anonymous" cannot '
                         'list resource "pods" in API group "" in the namespace "default"')
        self.assertStatus(self.req("GET", "/version", token=None), 200)
        self.assertStatus(self.req("GET", PODS, token="not-the-token"), 401, "Unauthorized")

    def test_json_comes_compact(self):
        raw = self.req("GET", NS).raw
        self.assertNotIn(b'": ', raw)
        self.assertNotIn(b", ", raw)


class FieldSelectors(Parity):
    def test_only_the_fields_a_kind_supports_are_accepted(self):
        r = self.req("GET", PODS + "?fieldSelector=spec.foo%3Dx")
        self.assertStatus(r, 400, "BadRequest")
        self.assertEqual(r.body["message"], "field label not supported: spec.foo")
        r = self.req("GET", PODS + "?watch=true&fieldSelector=spec.foo%3Dx")
        self.assertStatus(r, 400, "BadRequest")
        r = self.req("GET", WIDGETS + "?fieldSelector=spec.size%3D1")
        self.assertStatus(r, 400, "BadRequest")
        self.assertIn("is not a known field selector", r.body["message"])

    def test_selectors_see_defaulted_values(self):
        self.req("POST", PODS, pod("selected"))
        names = [o["metadata"]["name"] for o in self.req(
            "GET", PODS + "?fieldSelector=spec.restartPolicy%3DAlways,metadata.name%3Dselected"
        ).body["items"]]
        self.assertEqual(names, ["selected"])


class Watches(Parity):
    def events(self, path, until):
        c, r = self.k.watch(path)
        self.assertEqual(r.status, 200)
        out = []
        while True:
            line = r.readline()
            if not line:
                break
            out.append(json.loads(line))
            if until(out):
                break
        c.close()
        return out

    def test_a_label_selector_watch_sees_objects_enter_and_leave(self):
        base = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mover",
                                                                      "labels": {"w": "no"}}}
        rv = self.req("GET", CMS).body["metadata"]["resourceVersion"]
        self.req("POST", CMS, base)
        self.req("POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "bystander", "labels": {"w": "no"}}})
        self.req("PATCH", CMS + "/mover", {"metadata": {"labels": {"w": "yes"}}},
                 ctype="application/merge-patch+json")
        self.req("PATCH", CMS + "/mover", {"data": {"k": "v"}},
                 ctype="application/merge-patch+json")
        self.req("PATCH", CMS + "/mover", {"metadata": {"labels": {"w": "no"}}},
                 ctype="application/merge-patch+json")
        ev = self.events(CMS + "?watch=true&labelSelector=w%%3Dyes&resourceVersion=%s"
                               "&timeoutSeconds=5" % rv, lambda e: len(e) == 3)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in ev],
                         [("ADDED", "mover"), ("MODIFIED", "mover"), ("DELETED", "mover")])
        # DELETED carries the last state that matched.
        self.assertEqual(ev[2]["object"]["metadata"]["labels"], {"w": "yes"})


class Bookmarks(unittest.TestCase):
    """A cluster with a short bookmark interval, to see bookmarks at all,
    and a short watch history, to see its window per resource."""

    @classmethod
    def setUpClass(cls):
        cls.k = Cluster(env={"MWJ_CLUSTER_BOOKMARK_SECONDS": "1",
                             "MWJ_CLUSTER_WATCH_HISTORY": "20"})

    @classmethod
    def tearDownClass(cls):
        cls.k.stop()

    def read(self, path):
        """Every event of a watch, until its timeoutSeconds ends it."""
        c, r = self.k.watch(path)
        out = [json.loads(line) for line in iter(r.readline, b"")]
        c.close()
        return out

    def test_bookmarks_look_real_and_come_only_after_a_change(self):
        rv = self.k.request("GET", CMS).body["metadata"]["resourceVersion"]
        quiet = self.read(CMS + "?watch=true&allowWatchBookmarks=true&resourceVersion=%s"
                                "&timeoutSeconds=4" % rv)
        self.assertEqual(quiet, [])
        self.k.request("POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "marked"}})
        ev = self.read(CMS + "?watch=true&allowWatchBookmarks=true&resourceVersion=%s"
                             "&timeoutSeconds=4" % rv)
        marks = [e for e in ev if e["type"] == "BOOKMARK"]
        self.assertTrue(marks, ev)
        self.assertEqual(set(marks[0]["object"]), {"kind", "apiVersion", "metadata"})
        self.assertEqual((marks[0]["object"]["kind"], marks[0]["object"]["apiVersion"]),
                         ("ConfigMap", "v1"))
        self.assertEqual(list(marks[0]["object"]["metadata"]), ["resourceVersion"])
        # Without allowWatchBookmarks, none.
        ev = self.read(CMS + "?watch=true&resourceVersion=%s&timeoutSeconds=3" % rv)
        self.assertFalse([e for e in ev if e["type"] == "BOOKMARK"])

    def test_the_history_is_kept_per_resource(self):
        """A watch cache keeps a window of changes per resource: writes to
        other resources never expire a quiet one's version, while its own
        do (410 Gone)."""
        secrets = NS + "/secrets"
        rv = self.k.request("GET", CMS).body["metadata"]["resourceVersion"]
        for i in range(30):
            self.k.request("POST", secrets, {"apiVersion": "v1", "kind": "Secret",
                                             "metadata": {"name": "churn-%d" % i}})
        self.k.request("POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "after-churn"}})
        ev = self.read(CMS + "?watch=true&resourceVersion=%s&timeoutSeconds=2" % rv)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in ev],
                         [("ADDED", "after-churn")])
        srv = self.k.request("GET", secrets).body["metadata"]["resourceVersion"]
        old = int(srv) - 29  # the secrets' first change is out of their window of 20
        ev = self.read(secrets + "?watch=true&resourceVersion=%d&timeoutSeconds=2" % old)
        self.assertEqual((ev[0]["type"], ev[0]["object"]["code"]), ("ERROR", 410))


if __name__ == "__main__":
    unittest.main()
