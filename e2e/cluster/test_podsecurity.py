"""Pod Security admission as a real cluster applies it: every baseline and
restricted check with the library's reason and detail
(k8s.io/pod-security-admission/policy/check_*.go), the evaluator's order
and versions (policy/registry.go), the namespace labels
(api/helpers.go PolicyToEvaluate), enforce's 403 and warn's Warning
(admission/admission.go EvaluatePod), warnings only for pod templates,
and the warnings of a namespace made stricter (EvaluatePodsInNamespace).
Then our own pods: the securityContext the README recommends passes
restricted, and the examples' templates are checked as they are. No
server runs."""
import copy
import glob
import os
import unittest

import yaml

import podsecurity
from registry_fixture import RegistryTest, pod, status

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ENFORCE = "pod-security.kubernetes.io/enforce"
# What the README recommends for the worker's containers (and the chart's
# operator pod has): non-root user and group 65532, no privilege
# escalation, every capability dropped, the runtime's seccomp profile.
RECOMMENDED_POD = {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
                   "seccompProfile": {"type": "RuntimeDefault"}}
RECOMMENDED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
KUBECTL_RUN_REFUSAL = (
    'violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container '
    '"worker" must set securityContext.allowPrivilegeEscalation=false), unrestricted '
    'capabilities (container "worker" must set securityContext.capabilities.drop=["ALL"]), '
    'runAsNonRoot != true (pod or container "worker" must set '
    'securityContext.runAsNonRoot=true), seccompProfile (pod or container "worker" must set '
    'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")')


def spec_of(*containers, **pod_fields):
    return dict({"containers": [dict({"name": n, "image": "i"}, **sc) for n, sc in containers]},
                **pod_fields)


def sc(**fields):
    return {"securityContext": fields}


def restricted_ok(**more):
    """A container that meets restricted, with more of its securityContext."""
    return sc(**dict(RECOMMENDED_CONTAINER, **more))


class ChecksTest(unittest.TestCase):
    """Each check's reason and detail, as the library words them."""

    def one(self, level, spec, meta=None, version="latest"):
        return podsecurity.evaluate(level, version, meta or {}, spec)

    def test_the_baseline_checks_word_each_violation_as_the_library(self):
        cases = [
            (spec_of(("c", {}), hostNetwork=True, hostPID=True),
             ("host namespaces", "hostNetwork, hostPID")),
            (spec_of(("a", sc(privileged=True)), ("b", sc(privileged=True))),
             ("privileged", 'containers "a", "b" must not set securityContext.privileged=true')),
            (spec_of(("c", sc(capabilities={"add": ["NET_RAW", "SYS_ADMIN", "CHOWN"]}))),
             ("non-default capabilities", 'container "c" must not include "NET_RAW", '
              '"SYS_ADMIN" in securityContext.capabilities.add')),
            (dict(spec_of(("c", {})), volumes=[{"name": "h", "hostPath": {"path": "/"}}]),
             ("hostPath volumes", 'volume "h"')),
            (spec_of(("c", {"ports": [{"containerPort": 80, "hostPort": 8080},
                                      {"containerPort": 81, "hostPort": 8081}]})),
             ("hostPort", 'container "c" uses hostPorts 8080, 8081')),
            (spec_of(("c", sc(appArmorProfile={"type": "Unconfined"}))),
             ("forbidden AppArmor profile", 'container "c" must not set AppArmor profile type '
              'to "Unconfined"')),
            (spec_of(("c", sc(seLinuxOptions={"type": "spc_t", "user": "root"}))),
             ("seLinuxOptions", 'container "c" set forbidden securityContext.seLinuxOptions: '
              'type "spc_t"; user may not be set')),
            (spec_of(("c", sc(procMount="Unmasked"))),
             ("procMount", 'container "c" must not set securityContext.procMount to "Unmasked"')),
            (spec_of(("c", {}), securityContext={"seccompProfile": {"type": "Unconfined"}}),
             ("seccompProfile", 'pod must not set securityContext.seccompProfile.type to '
              '"Unconfined"')),
            (spec_of(("c", {}), securityContext={"sysctls": [{"name": "kernel.msgmax",
                                                              "value": "1"}]}),
             ("forbidden sysctls", "kernel.msgmax")),
            (spec_of(("c", sc(windowsOptions={"hostProcess": True}))),
             ("hostProcess", 'container "c" must not set '
              'securityContext.windowsOptions.hostProcess=true')),
        ]
        for spec, want in cases:
            with self.subTest(want=want[0]):
                self.assertEqual(self.one("baseline", spec), [want])

    def test_an_apparmor_annotation_is_listed_after_the_field_values(self):
        meta = {"annotations": {"container.apparmor.security.beta.kubernetes.io/c":
                                "unconfined"}}
        self.assertEqual(self.one("baseline", spec_of(("c", {})), meta), [(
            "forbidden AppArmor profile", 'annotation must not set AppArmor profile type to '
            '"container.apparmor.security.beta.kubernetes.io/c="unconfined""')])

    def test_a_plain_pod_breaks_four_restricted_checks_in_the_librarys_order(self):
        results = self.one("restricted", spec_of(("worker", {})))
        self.assertEqual("violates PodSecurity \"restricted:latest\": " +
                         podsecurity.forbidden_detail(results), KUBECTL_RUN_REFUSAL)

    def test_the_recommended_security_context_meets_restricted(self):
        spec = spec_of(("worker", sc(**RECOMMENDED_CONTAINER)),
                       securityContext=dict(RECOMMENDED_POD))
        self.assertEqual(self.one("restricted", spec), [])

    def test_restricted_refuses_what_baseline_allows_with_its_own_words(self):
        spec = spec_of(("c", restricted_ok(runAsUser=0, capabilities={
            "drop": ["ALL"], "add": ["CHOWN", "NET_BIND_SERVICE"]})),
            securityContext={"runAsNonRoot": False, "seccompProfile": {"type": "Localhost"}})
        spec["volumes"] = [{"name": "git", "gitRepo": {"repository": "r"}},
                           {"name": "ok", "emptyDir": {}}]
        self.assertEqual(self.one("baseline", spec), [])
        self.assertEqual(self.one("restricted", spec), [
            ("unrestricted capabilities", 'container "c" must not include "CHOWN" in '
             'securityContext.capabilities.add'),
            ("restricted volume types", 'volumes ["git"] have restricted types'),
            ("runAsNonRoot != true", "pod must not set securityContext.runAsNonRoot=false"),
            ("runAsUser=0", 'container "c" must not set runAsUser=0')])

    def test_a_policy_version_picks_the_checks_of_that_release(self):
        spec = spec_of(("c", {}), securityContext={"sysctls": [
            {"name": "net.ipv4.tcp_keepalive_time", "value": "60"}]})
        self.assertEqual(self.one("baseline", spec, version="v1.28"),
                         [("forbidden sysctls", "net.ipv4.tcp_keepalive_time")])
        self.assertEqual(self.one("baseline", spec, version="v1.29"), [])
        self.assertEqual(self.one("baseline", spec), [])
        # runAsUser=0 became a restricted check in 1.23.
        root = spec_of(("c", restricted_ok()), securityContext=dict(RECOMMENDED_POD,
                                                                     runAsUser=0))
        self.assertEqual(self.one("restricted", root, version="v1.22"), [])
        self.assertEqual(self.one("restricted", root, version="v1.23"),
                         [("runAsUser=0", "pod must not set runAsUser=0")])


def _template_specs():
    """(file, what, pod spec) of every pod and pod template in examples/."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.yaml"))):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if not doc:
                    continue
                name = "%s %s" % (doc["kind"], doc["metadata"]["name"])
                if doc["kind"] == "MultiWorkerJob":
                    out.append((os.path.basename(path), name,
                                doc["spec"]["template"].get("metadata") or {},
                                doc["spec"]["template"]["spec"]))
                elif doc["kind"] == "Pod":
                    out.append((os.path.basename(path), name, doc["metadata"], doc["spec"]))
    return out


def _follows_recommendation(spec):
    pod_sc = spec.get("securityContext") or {}
    for c in (spec.get("initContainers") or []) + spec["containers"]:
        csc = dict(pod_sc, **(c.get("securityContext") or {}))
        if any(csc.get(k) != v for k, v in dict(RECOMMENDED_POD, **RECOMMENDED_CONTAINER)
               .items() if k not in ("runAsUser", "runAsGroup")):
            return False
    return True


class ExamplesTest(unittest.TestCase):
    """Our examples' pod templates under the restricted profile: a
    template passes exactly when it follows the recommendation (at the
    time of writing none did, each refused for allowPrivilegeEscalation,
    capabilities, runAsNonRoot and seccompProfile), and each passes once
    given it."""

    def test_each_example_passes_restricted_exactly_when_it_follows_the_readme(self):
        examples = _template_specs()
        self.assertGreaterEqual(len(examples), 6)
        for path, what, meta, spec in examples:
            results = podsecurity.evaluate("restricted", "latest", meta, spec)
            with self.subTest(example=path, object=what):
                self.assertEqual(results == [], _follows_recommendation(spec),
                                 podsecurity.forbidden_detail(results))

    def test_each_example_passes_once_given_the_recommended_security_context(self):
        for path, what, meta, spec in _template_specs():
            spec = copy.deepcopy(spec)
            spec["securityContext"] = dict(spec.get("securityContext") or {}, **RECOMMENDED_POD)
            for c in spec["containers"]:
                c["securityContext"] = dict(c.get("securityContext") or {},
                                            **RECOMMENDED_CONTAINER)
            with self.subTest(example=path, object=what):
                self.assertEqual(podsecurity.evaluate("restricted", "latest", meta, spec), [])


class AdmissionTest(RegistryTest):
    """The plugin on the request path."""

    def label(self, ns, **labels):
        code, body, warnings = self.request("patch", "v1", "namespaces", None, {
            "metadata": {"labels": {"pod-security.kubernetes.io/" + k.replace("_", "-"): v
                                    for k, v in labels.items()}}}, name=ns)
        self.assertEqual(code, 200, body)
        return warnings

    def test_enforce_restricted_refuses_a_plain_pod_with_the_real_403(self):
        self.label("team", enforce="restricted")
        body = self.refused("v1", "pods", "team", pod("x", "worker"))
        self.assertEqual(body, status(403, "Forbidden", 'pods "x" is forbidden: ' +
                                      KUBECTL_RUN_REFUSAL, {"name": "x", "kind": "pods"}))

    def test_enforce_admits_a_pod_with_the_recommended_security_context(self):
        self.label("team", enforce="restricted", enforce_version="latest")
        p = pod("x", "worker", spec={"securityContext": dict(RECOMMENDED_POD)})
        p["spec"]["containers"][0]["securityContext"] = dict(RECOMMENDED_CONTAINER)
        code, body, warnings = self.create("v1", "pods", "team", p)
        self.assertEqual((code, warnings), (201, []), body)

    def test_warn_admits_and_answers_a_warning(self):
        self.label("team", warn="baseline", warn_version="v1.30")
        code, body, warnings = self.create("v1", "pods", "team", pod(
            "x", "worker", spec={"hostNetwork": True}))
        self.assertEqual(code, 201, body)
        self.assertEqual(warnings, ['would violate PodSecurity "baseline:v1.30": host '
                                    'namespaces (hostNetwork)'])

    def test_a_refused_pod_gets_no_warning_and_enforce_is_checked_first(self):
        self.label("team", enforce="baseline", warn="restricted")
        p = pod("x", "c")
        p["spec"]["containers"][0]["securityContext"] = {"privileged": True}
        code, body, warnings = self.create("v1", "pods", "team", p)
        self.assertEqual((code, warnings), (403, []))
        self.assertTrue(body["message"].startswith(
            'pods "x" is forbidden: violates PodSecurity "baseline:latest": privileged ('))

    def test_a_deployment_template_is_only_warned_about(self):
        self.label("team", enforce="restricted", warn="restricted")
        code, body, warnings = self.create("apps/v1", "deployments", "team", {
            "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "worker", "image": "i"}]}}}})
        self.assertEqual(code, 201, body)
        self.assertEqual(warnings, ["would violate PodSecurity \"restricted:latest\": " +
                                    KUBECTL_RUN_REFUSAL[len('violates PodSecurity '
                                                            '"restricted:latest": '):]])

    def test_a_bad_label_is_refused_on_create_as_invalid(self):
        body = self.refused("v1", "namespaces", None, {"kind": "Namespace", "metadata": {
            "name": "x", "labels": {ENFORCE: "strict",
                                    ENFORCE + "-version": "1.29"}}})
        self.assertEqual(body, status(422, "Invalid", 'Namespace "x" is invalid: ['
                                      'metadata.labels[pod-security.kubernetes.io/enforce]: '
                                      'Invalid value: "strict": must be one of privileged, '
                                      'baseline, restricted, metadata.labels['
                                      'pod-security.kubernetes.io/enforce-version]: Invalid '
                                      'value: "1.29": must be "latest" or "v1.x"]', {
                                          "name": "x", "kind": "Namespace", "causes": [
                                              {"reason": "FieldValueInvalid",
                                               "message": 'Invalid value: "strict": must be '
                                               'one of privileged, baseline, restricted',
                                               "field": "metadata.labels[pod-security."
                                               "kubernetes.io/enforce]"},
                                              {"reason": "FieldValueInvalid",
                                               "message": 'Invalid value: "1.29": must be '
                                               '"latest" or "v1.x"',
                                               "field": "metadata.labels[pod-security."
                                               "kubernetes.io/enforce-version]"}]}))

    def test_a_stricter_enforce_label_warns_of_the_pods_that_break_it(self):
        for name in ("b", "a", "c"):
            self.created("v1", "pods", "team", pod(name, "worker"))
        self.created("v1", "pods", "team", pod("h", "worker", spec={"hostPID": True}))
        warnings = self.label("team", enforce="restricted")
        self.assertEqual(warnings, [
            'existing pods in namespace "team" violate the new PodSecurity enforce level '
            '"restricted:latest"',
            "a (and 2 other pods): allowPrivilegeEscalation != false, unrestricted "
            "capabilities, runAsNonRoot != true, seccompProfile",
            "h: host namespaces, allowPrivilegeEscalation != false, unrestricted "
            "capabilities, runAsNonRoot != true, seccompProfile"])
        # Relaxing it again warns of nothing.
        self.assertEqual(self.label("team", enforce="baseline"), [])

    def test_a_pod_update_that_changes_no_image_is_not_checked(self):
        self.created("v1", "pods", "team", pod("x", "worker"))
        self.label("team", enforce="restricted")
        code, body, _ = self.request("patch", "v1", "pods", "team",
                                     {"metadata": {"labels": {"x": "y"}}}, name="x")
        self.assertEqual(code, 200, body)
        current = self.store.find("/v1/pods", "team", "x")
        current["spec"]["containers"][0]["image"] = "j"
        code, body, _ = self.request("update", "v1", "pods", "team", current, name="x")
        self.assertEqual(code, 403, body)
        self.assertIn('violates PodSecurity "restricted:latest"', body["message"])
