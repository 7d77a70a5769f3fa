"""ResourceQuota as a real cluster enforces it: the kind (validation,
defaults, the table kubectl get prints), the quota controller's
status.hard and status.used, and the ResourceQuota admission plugin's
refusals, each checked for its exact status, reason, message and details.
No server runs: the registry and controllers of registry_fixture.

Sources: k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go
(CheckRequest: "exceeded quota", "failed quota", "status unknown for
quota"), pkg/quota/v1/evaluator/core/pods.go (usage, Constraints'
"must specify"), staging/.../quota/v1/generic/evaluator.go (count/<r>.<g>),
pkg/controller/resourcequota/resource_quota_controller.go
(syncResourceQuota), pkg/apis/core/validation (ValidateResourceQuota),
pkg/printers/internalversion/printers.go (printResourceQuota).
"""
import kinds
import tables
from registry_fixture import RegistryTest, pod, status

QUOTAS = "/v1/resourcequotas"
CPU = {"requests": {"cpu": "500m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "64Mi"}}


def quota(name, hard, **spec):
    return {"kind": "ResourceQuota", "metadata": {"name": name},
            "spec": dict({"hard": hard}, **spec)}


def forbidden(resource, name, message):
    return status(403, "Forbidden", '%s "%s" is forbidden: %s' % (resource, name, message),
                  {"name": name, "kind": resource})


class QuotaTest(RegistryTest):
    def add_quota(self, name, hard, ns="team", **spec):
        self.created("v1", "resourcequotas", ns, quota(name, hard, **spec))
        self.sync()  # the quota controller fills status.hard and status.used

    def used(self, name, ns="team"):
        return self.store.peek(QUOTAS, ns, name)["status"]["used"]

    def secret(self, name):
        return {"kind": "Secret", "metadata": {"name": name}}

    def test_a_secret_over_a_zero_quota_is_refused_with_the_exceeded_quota_403(self):
        self.add_quota("q", {"secrets": "0"})
        body = self.refused("v1", "secrets", "team", self.secret("s"))
        self.assertEqual(body, forbidden("secrets", "s", "exceeded quota: q, requested: "
                                         "secrets=1, used: secrets=0, limited: secrets=0"))
        self.assertIsNone(self.store.peek("/v1/secrets", "team", "s"))

    def test_the_controller_writes_hard_and_used_sorted_as_the_real_one(self):
        self.created("v1", "secrets", "team", self.secret("a"))
        self.created("v1", "configmaps", "team", {"kind": "ConfigMap", "metadata": {"name": "c"}})
        self.add_quota("q", {"secrets": "5", "configmaps": "3", "pods": "2",
                             "requests.cpu": "1", "count/secrets": "9"})
        st = self.store.peek(QUOTAS, "team", "q")["status"]
        self.assertEqual(list(st["hard"]), sorted(st["hard"]))
        self.assertEqual(st["hard"], {"configmaps": "3", "count/secrets": "9", "pods": "2",
                                      "requests.cpu": "1", "secrets": "5"})
        # kube-root-ca.crt is one of the ConfigMaps, as on a real cluster.
        self.assertEqual(st["used"], {"configmaps": "2", "count/secrets": "1", "pods": "0",
                                      "requests.cpu": "0", "secrets": "1"})

    def test_a_create_is_charged_at_once_and_the_next_one_sees_it(self):
        self.add_quota("q", {"secrets": "1"})
        self.created("v1", "secrets", "team", self.secret("a"))
        self.assertEqual(self.used("q"), {"secrets": "1"})
        body = self.refused("v1", "secrets", "team", self.secret("b"))
        self.assertEqual(body["message"], 'secrets "b" is forbidden: exceeded quota: q, '
                         'requested: secrets=1, used: secrets=1, limited: secrets=1')

    def test_raising_the_quota_lets_the_next_create_through_once_the_controller_copies_it(self):
        self.add_quota("q", {"secrets": "0"})
        self.refused("v1", "secrets", "team", self.secret("a"))
        code, body, _ = self.request("patch", "v1", "resourcequotas", "team",
                                     {"spec": {"hard": {"secrets": "1"}}}, name="q")
        self.assertEqual(code, 200, body)
        # What the controller does as soon as it sees the quota change.
        self.controllers.quotas(changed_only=True)
        self.assertEqual(self.store.peek(QUOTAS, "team", "q")["status"]["hard"],
                         {"secrets": "1"})
        self.created("v1", "secrets", "team", self.secret("a"))

    def test_a_pod_without_limits_under_a_cpu_quota_fails_naming_each_container(self):
        self.add_quota("q", {"limits.cpu": "4", "requests.memory": "1Gi"})
        body = self.refused("v1", "pods", "team", pod("p", "worker", ("sidecar", CPU)))
        self.assertEqual(body, forbidden("pods", "p", "failed quota: q: must specify "
                                         "limits.cpu for: worker; requests.memory for: worker"))
        body = self.refused("v1", "pods", "team", pod("p", "worker", "log"))
        self.assertEqual(body["message"], 'pods "p" is forbidden: failed quota: q: must specify '
                         'limits.cpu for: log,worker; requests.memory for: log,worker')

    def test_pods_and_their_compute_resources_add_up_to_the_refusal(self):
        self.add_quota("q", {"pods": "2", "requests.cpu": "1200m", "limits.memory": "1Gi"})
        self.created("v1", "pods", "team", pod("a", ("c", CPU)))
        self.assertEqual(self.used("q"), {"limits.memory": "64Mi", "pods": "1",
                                          "requests.cpu": "500m"})
        self.created("v1", "pods", "team", pod("b", ("c", CPU)))
        body = self.refused("v1", "pods", "team", pod("c", ("c", CPU)))
        self.assertEqual(body["message"], 'pods "c" is forbidden: exceeded quota: q, requested: '
                         'pods=1,requests.cpu=500m, used: pods=2,requests.cpu=1, limited: '
                         'pods=2,requests.cpu=1200m')

    def test_a_generated_name_is_the_one_refused(self):
        self.add_quota("q", {"pods": "0"})
        body = self.refused("v1", "pods", "team", {"kind": "Pod", "metadata": {
            "generateName": "job-worker-"}, "spec": {"containers": [{"name": "c",
                                                                     "image": "i"}]}})
        name = body["details"]["name"]
        self.assertRegex(name, r"^job-worker-[a-z0-9]{5}$")
        self.assertEqual(body["message"], 'pods "%s" is forbidden: exceeded quota: q, '
                         'requested: pods=1, used: pods=0, limited: pods=0' % name)

    def test_terminal_pods_do_not_count_once_the_controller_sees_them_finish(self):
        self.add_quota("q", {"pods": "1", "count/pods": "5"})
        self.created("v1", "pods", "team", pod("a", "c"))
        self.refused("v1", "pods", "team", pod("b", "c"))
        done = self.store.find("/v1/pods", "team", "a")
        done["status"]["phase"] = "Succeeded"
        self.store.replace("/v1/pods", "team", "a", done)
        self.sync()
        self.assertEqual(self.used("q"), {"count/pods": "1", "pods": "0"})
        self.created("v1", "pods", "team", pod("b", "c"))

    def test_object_counts_of_any_resource_use_count_resource_dot_group(self):
        self.add_quota("q", {"count/networkpolicies.networking.k8s.io": "1"})
        np = {"kind": "NetworkPolicy", "metadata": {"name": "a"}, "spec": {"podSelector": {}}}
        self.created("networking.k8s.io/v1", "networkpolicies", "team", np)
        body = self.refused("networking.k8s.io/v1", "networkpolicies", "team",
                            dict(np, metadata={"name": "b"}))
        self.assertEqual(body, status(403, "Forbidden", 'networkpolicies.networking.k8s.io "b" '
                                      "is forbidden: exceeded quota: q, requested: "
                                      "count/networkpolicies.networking.k8s.io=1, used: "
                                      "count/networkpolicies.networking.k8s.io=1, limited: "
                                      "count/networkpolicies.networking.k8s.io=1",
                                      {"name": "b", "group": "networking.k8s.io",
                                       "kind": "networkpolicies"}))

    def test_custom_resources_are_counted_too(self):
        crd = {"kind": "CustomResourceDefinition",
               "metadata": {"name": "multiworkerjobs.training.mwj.io"},
               "spec": {"group": "training.mwj.io", "scope": "Namespaced",
                        "names": {"plural": "multiworkerjobs", "kind": "MultiWorkerJob"},
                        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                            "openAPIV3Schema": {"type": "object",
                                                "x-kubernetes-preserve-unknown-fields": True}}}]}}
        self.created("apiextensions.k8s.io/v1", "customresourcedefinitions", None, crd)
        self.add_quota("q", {"count/multiworkerjobs.training.mwj.io": "0"})
        self.assertEqual(self.used("q"), {"count/multiworkerjobs.training.mwj.io": "0"})
        body = self.refused("training.mwj.io/v1", "multiworkerjobs", "team",
                            {"kind": "MultiWorkerJob", "metadata": {"name": "j"}})
        self.assertEqual(body["message"], 'multiworkerjobs.training.mwj.io "j" is forbidden: '
                         'exceeded quota: q, requested: count/multiworkerjobs.training.mwj.io=1, '
                         'used: count/multiworkerjobs.training.mwj.io=0, limited: '
                         'count/multiworkerjobs.training.mwj.io=0')
        self.assertEqual(body["details"], {"name": "j", "group": "training.mwj.io",
                                           "kind": "multiworkerjobs"})

    def test_a_quota_the_controller_has_not_measured_yet_refuses_with_status_unknown(self):
        self.created("v1", "resourcequotas", "team", quota("q", {"secrets": "3"}))
        fresh = self.store.find(QUOTAS, "team", "q")
        fresh["status"] = {"hard": {"secrets": "3"}}
        self.store.replace(QUOTAS, "team", "q", fresh)
        body = self.refused("v1", "secrets", "team", self.secret("s"))
        self.assertEqual(body, forbidden("secrets", "s", "status unknown for quota: q, "
                                         "resources: secrets"))

    def test_a_dry_run_is_checked_but_charges_nothing(self):
        self.add_quota("q", {"secrets": "1"})
        code, _, _ = self.create("v1", "secrets", "team", self.secret("a"),
                                 query={"dryRun": ["All"]})
        self.assertEqual(code, 201)
        self.assertEqual(self.used("q"), {"secrets": "0"})

    def test_quotas_of_another_namespace_do_not_apply(self):
        self.add_quota("q", {"secrets": "0"}, ns="default")
        self.created("v1", "secrets", "team", self.secret("a"))

    def test_a_scoped_quota_counts_only_pods_in_its_scope(self):
        self.add_quota("q", {"pods": "0"}, scopes=["BestEffort"])
        self.created("v1", "pods", "team", pod("guaranteed", ("c", CPU)))
        body = self.refused("v1", "pods", "team", pod("besteffort", "c"))
        self.assertIn("exceeded quota: q, requested: pods=1", body["message"])

    def test_a_quota_with_bad_resources_is_invalid_as_validation_words_it(self):
        body = self.refused("v1", "resourcequotas", "team",
                            quota("q", {"widgets": "1", "cpu": "-1"}))
        self.assertEqual(body["code"], 422)
        self.assertEqual(body["message"], 'ResourceQuota "q" is invalid: ['
                         'spec.hard[cpu]: Invalid value: "-1": must be greater than or equal to 0, '
                         'spec.hard[widgets]: Invalid value: "widgets": must be a standard '
                         'resource type or fully qualified]')
        self.assertEqual([c["field"] for c in body["details"]["causes"]],
                         ["spec.hard[cpu]", "spec.hard[widgets]"])
        # A count must be whole (the value as validation_container prints a
        # Quantity field error).
        body = self.refused("v1", "resourcequotas", "team", quota("q", {"secrets": "1500m"}))
        self.assertRegex(body["message"], r"^ResourceQuota \"q\" is invalid: spec.hard\[secrets\]: "
                         r"Invalid value: .*: must be an integer$")

    def test_quantities_are_written_canonically(self):
        self.add_quota("q", {"requests.memory": "1024Mi", "requests.cpu": "0.5"})
        rq = self.store.peek(QUOTAS, "team", "q")
        self.assertEqual(rq["spec"]["hard"], {"requests.memory": "1Gi", "requests.cpu": "500m"})

    def test_kubectl_get_shows_request_and_limit_columns(self):
        self.add_quota("q", {"pods": "2", "limits.cpu": "2", "secrets": "0"})
        kind = self.registry.kind("v1", "resourcequotas")
        t = tables.table(kind, [self.store.peek(QUOTAS, "team", "q")], "1")
        self.assertEqual([c["name"] for c in t["columnDefinitions"]],
                         ["Name", "Age", "Request", "Limit"])
        self.assertEqual(t["rows"][0]["cells"][2:], ["pods: 0/2, secrets: 0/0",
                                                     "limits.cpu: 0/2"])

    def test_the_kind_is_served_with_its_short_name_and_status(self):
        k = kinds.builtin_by_key()[QUOTAS]
        self.assertEqual((k.kind, k.short, k.status, k.namespaced),
                         ("ResourceQuota", ["quota"], True, True))

    def test_the_controllers_own_creates_are_refused_too_and_logged_once(self):
        logged = []
        self.controllers.log = logged.append
        self.add_quota("q", {"configmaps": "0"})
        self.store.remove("/v1/configmaps", "team", "kube-root-ca.crt")
        self.controllers.quotas()  # the quota sees it gone first
        for _ in range(3):
            self.sync()
        self.assertIsNone(self.store.peek("/v1/configmaps", "team", "kube-root-ca.crt"))
        self.assertEqual(logged, ['controllers: create /v1/configmaps team/kube-root-ca.crt: '
                                  'configmaps "kube-root-ca.crt" is forbidden: exceeded quota: q, '
                                  'requested: configmaps=1, used: configmaps=0, limited: '
                                  'configmaps=0'])
