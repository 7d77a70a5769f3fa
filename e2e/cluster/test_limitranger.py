"""LimitRange as a real cluster applies it: the kind's defaults and
validation (pkg/apis/core/v1/defaults.go SetDefaults_LimitRangeItem,
pkg/apis/core/validation ValidateLimitRange) and the LimitRanger admission
plugin (plugin/pkg/admission/limitranger/admission.go): default requests
and limits into containers with the kubernetes.io/limit-ranger
annotation, and the min, max and maxLimitRequestRatio refusals, 403
Forbidden with the plugin's exact words. No server runs."""
from registry_fixture import RegistryTest, pod, status

LIMITS = "/v1/limitranges"


def limit_range(name, *limits):
    return {"kind": "LimitRange", "metadata": {"name": name}, "spec": {"limits": list(limits)}}


def forbidden(name, message):
    return status(403, "Forbidden", 'pods "%s" is forbidden: %s' % (name, message),
                  {"name": name, "kind": "pods"})


class LimitRangerTest(RegistryTest):
    def test_defaults_fill_the_limits_and_requests_a_container_leaves_out(self):
        self.created("v1", "limitranges", "team", limit_range("lr", {
            "type": "Container", "default": {"cpu": "500m", "memory": "256Mi"},
            "defaultRequest": {"cpu": "100m"}}))
        body = self.created("v1", "pods", "team", pod(
            "p", "worker", ("sidecar", {"limits": {"memory": "64Mi"}})))
        worker, sidecar = body["spec"]["containers"]
        # The LimitRange's own defaults gave it defaultRequest memory 256Mi
        # (its default limit) when it was stored.
        self.assertEqual(worker["resources"], {"limits": {"cpu": "500m", "memory": "256Mi"},
                                               "requests": {"cpu": "100m", "memory": "256Mi"}})
        # The sidecar's memory request came from its limit when the pod was
        # decoded, before the plugin ran.
        self.assertEqual(sidecar["resources"], {"limits": {"memory": "64Mi", "cpu": "500m"},
                                                "requests": {"memory": "64Mi", "cpu": "100m"}})
        self.assertEqual(body["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
                         "LimitRanger plugin set: cpu, memory request for container worker; "
                         "cpu, memory limit for container worker; cpu request for container "
                         "sidecar; cpu limit for container sidecar")
        self.assertEqual(body["status"]["qosClass"], "Burstable")

    def test_the_kind_defaults_the_default_limit_from_max_and_the_request_from_it(self):
        body = self.created("v1", "limitranges", "team", limit_range("lr", {
            "type": "Container", "max": {"cpu": "2"}, "min": {"memory": "0.5Gi"}}))
        self.assertEqual(body["spec"]["limits"][0], {
            "type": "Container", "max": {"cpu": "2"}, "min": {"memory": "512Mi"},
            "default": {"cpu": "2"}, "defaultRequest": {"cpu": "2", "memory": "512Mi"}})

    def test_a_limit_over_max_is_refused(self):
        self.created("v1", "limitranges", "team", limit_range("lr", {
            "type": "Container", "max": {"cpu": "1"}}))
        body = self.refused("v1", "pods", "team", pod(
            "p", ("worker", {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}})))
        self.assertEqual(body, forbidden("p", "maximum cpu usage per Container is 1, but limit "
                                         "is 2"))

    def test_a_request_under_min_and_a_ratio_over_the_maximum_are_refused_together(self):
        self.created("v1", "limitranges", "team", limit_range("lr", {
            "type": "Container", "min": {"memory": "64Mi"}, "maxLimitRequestRatio": {"cpu": "2"},
            "default": {"memory": "128Mi"}, "defaultRequest": {"memory": "64Mi"}}))
        body = self.refused("v1", "pods", "team", pod(
            "p", ("worker", {"limits": {"cpu": "2", "memory": "128Mi"},
                             "requests": {"cpu": "500m", "memory": "32Mi"}})))
        self.assertEqual(body, forbidden(
            "p", "[minimum memory usage per Container is 64Mi, but request is 32Mi, cpu max "
            "limit to request ratio per Container is 2, but provided ratio is 4.000000]"))

    def test_a_missing_limit_under_max_says_none_is_specified(self):
        # A Pod limit has no defaults: the containers' sum must state it.
        self.created("v1", "limitranges", "team", limit_range("lr", {
            "type": "Pod", "max": {"memory": "1Gi"}}))
        body = self.refused("v1", "pods", "team", pod("p", "worker"))
        self.assertEqual(body["message"], 'pods "p" is forbidden: maximum memory usage per Pod '
                         'is 1Gi.  No limit is specified')

    def test_a_pod_limit_adds_up_the_containers(self):
        self.created("v1", "limitranges", "team", limit_range("lr", {
            "type": "Pod", "max": {"cpu": "1"}}))
        half = {"limits": {"cpu": "600m"}}
        body = self.refused("v1", "pods", "team", pod("p", ("a", half), ("b", half)))
        self.assertEqual(body["message"], 'pods "p" is forbidden: maximum cpu usage per Pod is '
                         '1, but limit is 1200m')

    def test_a_claim_over_the_storage_maximum_is_refused(self):
        self.created("v1", "limitranges", "team", limit_range("lr", {
            "type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}}))
        body = self.refused("v1", "persistentvolumeclaims", "team", {
            "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "2Gi"}}}})
        self.assertEqual(body, status(403, "Forbidden", 'persistentvolumeclaims "c" is forbidden: '
                                      "maximum storage usage per PersistentVolumeClaim is 1Gi, "
                                      "but request is 2Gi",
                                      {"name": "c", "kind": "persistentvolumeclaims"}))

    def test_a_limit_range_at_odds_with_itself_is_invalid(self):
        body = self.refused("v1", "limitranges", "team", limit_range("lr", {
            "type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"},
            "maxLimitRequestRatio": {"memory": "500m"}}, {"type": "Pod", "default": {"cpu": "1"}}))
        self.assertEqual(body["code"], 422)
        self.assertEqual(body["message"], 'LimitRange "lr" is invalid: ['
                         'spec.limits[0].min[cpu]: Invalid value: 2: min value 2 is greater than '
                         'max value 1, '
                         'spec.limits[0].defaultRequest[cpu]: Invalid value: 1: min value 2 is '
                         'greater than default request value 1, '
                         'spec.limits[0].default[cpu]: Invalid value: 2: min value 2 is greater '
                         'than default value 1, '
                         'spec.limits[0].maxLimitRequestRatio[memory]: Invalid value: 500m: ratio '
                         '500m is less than 1, '
                         "spec.limits[1].default: Forbidden: may not be specified when `type` is "
                         "'Pod']")

    def test_pods_of_other_namespaces_and_updates_are_left_alone(self):
        self.created("v1", "limitranges", "default", limit_range("lr", {
            "type": "Container", "max": {"cpu": "1"}}))
        body = self.created("v1", "pods", "team", pod("p", "worker"))
        self.assertNotIn("annotations", body["metadata"])
