"""defaults_pod.py against what a real kube-apiserver 1.31 returns for a
pod, field by field: each expected object below is written out from the
real defaulting code (pkg/apis/core/v1/defaults.go, zz_generated.defaults.go),
the admission plugins (Priority, DefaultTolerationSeconds, ServiceAccount)
and the pod strategy that defaults_pod.py names. No server.

Run: cd e2e/cluster && python3 -m unittest test_defaults_pod -v
"""
import copy
import random
import unittest

import defaults_pod

TOKEN_MOUNT = {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
               "name": "kube-api-access-x7k2q", "readOnly": True}
TOKEN_VOLUME = {"name": "kube-api-access-x7k2q", "projected": {
    "defaultMode": 420,
    "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}],
                       "name": "kube-root-ca.crt"}},
        {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1",
                                                 "fieldPath": "metadata.namespace"},
                                    "path": "namespace"}]}}]}}
DEFAULT_TOLERATIONS = [
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
     "tolerationSeconds": 300},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
     "tolerationSeconds": 300},
]


class Letters:
    """A random source that picks the given letters in turn."""

    def __init__(self, letters):
        self.letters = iter(letters)

    def choice(self, alphabet):
        c = next(self.letters)
        assert c in alphabet
        return c


def create_pod(pod, sa=None):
    """What the create path does to a pod: defaults, ServiceAccount
    admission, the strategy's PrepareForCreate."""
    pod = copy.deepcopy(pod)
    pod.setdefault("apiVersion", "v1")
    pod.setdefault("kind", "Pod")
    defaults_pod.default_pod(pod)
    defaults_pod.add_service_account_token(pod, sa, Letters("x7k2q"))
    defaults_pod.prepare_pod_for_create(pod)
    return pod


def pod_with(container=None, **spec):
    c = {"name": "c", "image": "busybox"}
    c.update(container or {})
    s = {"containers": [c]}
    s.update(spec)
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": s}


class PodTest(unittest.TestCase):
    def test_minimal_pod_reads_back_as_a_real_server_returns_it(self):
        pod = create_pod({"metadata": {"name": "p", "namespace": "default"},
                          "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        self.assertEqual(pod, {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {
                "containers": [{
                    "image": "busybox",
                    "imagePullPolicy": "Always",
                    "name": "c",
                    "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "volumeMounts": [TOKEN_MOUNT],
                }],
                "dnsPolicy": "ClusterFirst",
                "enableServiceLinks": True,
                "preemptionPolicy": "PreemptLowerPriority",
                "priority": 0,
                "restartPolicy": "Always",
                "schedulerName": "default-scheduler",
                "securityContext": {},
                "serviceAccount": "default",
                "serviceAccountName": "default",
                "terminationGracePeriodSeconds": 30,
                "tolerations": DEFAULT_TOLERATIONS,
                "volumes": [TOKEN_VOLUME],
            },
            "status": {"phase": "Pending", "qosClass": "BestEffort"},
        })

    def test_image_pull_policy_follows_the_tag(self):
        digest = "sha256:" + "a" * 64
        for image, policy in [
                ("x:1.0", "IfNotPresent"),
                ("busybox", "Always"),
                ("busybox:latest", "Always"),
                ("registry.k8s.io/pause:3.9", "IfNotPresent"),
                ("localhost:5000/mwj-worker", "Always"),
                ("busybox@" + digest, "IfNotPresent"),          # a digest, no tag
                ("busybox:latest@" + digest, "Always"),
                ("Busybox", "IfNotPresent"),                    # unparsable: no tag
                ("busybox@sha256:abc", "IfNotPresent")]:        # bad digest: unparsable
            with self.subTest(image=image):
                pod = defaults_pod.default_pod(pod_with({"image": image}))
                self.assertEqual(pod["spec"]["containers"][0]["imagePullPolicy"], policy)

    def test_a_given_pull_policy_is_kept(self):
        pod = defaults_pod.default_pod(pod_with({"imagePullPolicy": "Never"}))
        self.assertEqual(pod["spec"]["containers"][0]["imagePullPolicy"], "Never")

    def test_automount_false_on_the_pod_mounts_no_token(self):
        pod = create_pod(pod_with(automountServiceAccountToken=False))
        self.assertNotIn("volumes", pod["spec"])
        self.assertNotIn("volumeMounts", pod["spec"]["containers"][0])
        self.assertEqual(pod["spec"]["serviceAccountName"], "default")
        self.assertIs(pod["spec"]["automountServiceAccountToken"], False)

    def test_automount_false_on_the_service_account_mounts_no_token(self):
        sa = {"metadata": {"name": "default"}, "automountServiceAccountToken": False}
        self.assertNotIn("volumes", create_pod(pod_with(), sa)["spec"])

    def test_the_pod_choice_wins_over_the_service_account(self):
        sa = {"metadata": {"name": "default"}, "automountServiceAccountToken": False}
        pod = create_pod(pod_with(automountServiceAccountToken=True), sa)
        self.assertEqual(pod["spec"]["volumes"], [TOKEN_VOLUME])

    def test_token_is_mounted_in_init_containers_and_not_over_an_existing_mount(self):
        own = {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "mine"}
        pod = create_pod(pod_with({"volumeMounts": [own]},
                                  initContainers=[{"name": "i", "image": "busybox"}],
                                  volumes=[{"name": "mine", "secret": {"secretName": "s"}}]))
        self.assertEqual(pod["spec"]["initContainers"][0]["volumeMounts"], [TOKEN_MOUNT])
        self.assertEqual(pod["spec"]["containers"][0]["volumeMounts"], [own])
        self.assertEqual(pod["spec"]["volumes"],
                         [{"name": "mine", "secret": {"defaultMode": 420, "secretName": "s"}},
                          TOKEN_VOLUME])

    def test_an_existing_kube_api_access_volume_is_reused(self):
        volume = {"name": "kube-api-access-abcde", "projected": {"sources": []}}
        pod = create_pod(pod_with(volumes=[volume]))
        self.assertEqual(len(pod["spec"]["volumes"]), 1)
        self.assertEqual(pod["spec"]["containers"][0]["volumeMounts"][0]["name"],
                         "kube-api-access-abcde")

    def test_the_suffix_comes_from_the_names_alphabet(self):
        pod = defaults_pod.add_service_account_token(pod_with(), None, random.Random(7))
        name = pod["spec"]["volumes"][0]["name"]
        self.assertRegex(name, r"^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$")

    def test_a_named_service_account_is_mirrored_and_its_pull_secrets_copied(self):
        sa = {"metadata": {"name": "runner"}, "imagePullSecrets": [{"name": "regcred"}]}
        pod = create_pod(pod_with(serviceAccountName="runner"), sa)
        self.assertEqual(pod["spec"]["serviceAccount"], "runner")
        self.assertEqual(pod["spec"]["imagePullSecrets"], [{"name": "regcred"}])
        pod = create_pod(pod_with(serviceAccount="legacy"))
        self.assertEqual(pod["spec"]["serviceAccountName"], "legacy")

    def test_mirror_pods_are_not_given_a_token(self):
        pod = pod_with()
        pod["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
        pod = create_pod(pod)
        self.assertNotIn("volumes", pod["spec"])
        self.assertNotIn("serviceAccountName", pod["spec"])

    def test_container_details_get_their_defaults(self):
        pod = defaults_pod.default_pod(pod_with({
            "ports": [{"containerPort": 2222}],
            "env": [{"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                    {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}],
            "livenessProbe": {"httpGet": {"port": 8080}},
            "readinessProbe": {"grpc": {"port": 9000}, "periodSeconds": 5},
            "lifecycle": {"preStop": {"httpGet": {"port": 8080, "path": "/quit"}}},
            "resources": {"limits": {"cpu": "1000m", "memory": "1024Mi"},
                          "requests": {"cpu": 0.5}},
        }))
        c = pod["spec"]["containers"][0]
        self.assertEqual(c["ports"], [{"containerPort": 2222, "protocol": "TCP"}])
        self.assertEqual(c["env"][0]["valueFrom"]["fieldRef"],
                         {"apiVersion": "v1", "fieldPath": "metadata.namespace"})
        self.assertEqual(c["env"][1]["valueFrom"]["resourceFieldRef"],
                         {"divisor": "0", "resource": "limits.cpu"})
        self.assertEqual(c["livenessProbe"], {
            "failureThreshold": 3, "httpGet": {"path": "/", "port": 8080, "scheme": "HTTP"},
            "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1})
        self.assertEqual(c["readinessProbe"], {
            "failureThreshold": 3, "grpc": {"port": 9000, "service": ""},
            "periodSeconds": 5, "successThreshold": 1, "timeoutSeconds": 1})
        self.assertEqual(c["lifecycle"]["preStop"]["httpGet"],
                         {"path": "/quit", "port": 8080, "scheme": "HTTP"})
        # Requests default to limits per resource; quantities read back canonical.
        self.assertEqual(c["resources"], {"limits": {"cpu": "1", "memory": "1Gi"},
                                          "requests": {"cpu": "500m", "memory": "1Gi"}})

    def test_volumes_get_their_defaults(self):
        pod = defaults_pod.default_pod(pod_with(volumes=[
            {"name": "scratch"},
            {"name": "ckpt", "hostPath": {"path": "/tmp/ckpt"}},
            {"name": "cfg", "configMap": {"name": "c"}},
            {"name": "key", "secret": {"secretName": "k", "defaultMode": 256}},
            {"name": "info", "downwardAPI": {"items": [
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
            {"name": "tok", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1024Mi"}},
            {"name": "data", "ephemeral": {"volumeClaimTemplate": {"spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1024Mi"}}}}}},
        ]))
        self.assertEqual(pod["spec"]["volumes"], [
            {"name": "scratch", "emptyDir": {}},
            {"name": "ckpt", "hostPath": {"path": "/tmp/ckpt", "type": ""}},
            {"name": "cfg", "configMap": {"defaultMode": 420, "name": "c"}},
            {"name": "key", "secret": {"defaultMode": 256, "secretName": "k"}},
            {"name": "info", "downwardAPI": {"defaultMode": 420, "items": [
                {"path": "labels",
                 "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}}]}},
            {"name": "tok", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3600, "path": "t"}}]}},
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
            {"name": "data", "ephemeral": {"volumeClaimTemplate": {
                "metadata": {"creationTimestamp": None},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}},
                         "volumeMode": "Filesystem"}}}},
        ])

    def test_host_network_ports_default_their_host_port(self):
        pod = defaults_pod.default_pod(pod_with({"ports": [{"containerPort": 2222}]},
                                                hostNetwork=True))
        self.assertEqual(pod["spec"]["containers"][0]["ports"],
                         [{"containerPort": 2222, "hostPort": 2222, "protocol": "TCP"}])
        self.assertEqual(pod["spec"]["dnsPolicy"], "ClusterFirst")

    def test_given_values_are_kept(self):
        pod = defaults_pod.default_pod(pod_with(restartPolicy="Never",
                                                terminationGracePeriodSeconds=0,
                                                enableServiceLinks=False, dnsPolicy="Default",
                                                securityContext={"runAsUser": 1000}))
        spec = pod["spec"]
        self.assertEqual((spec["restartPolicy"], spec["terminationGracePeriodSeconds"],
                          spec["enableServiceLinks"], spec["dnsPolicy"],
                          spec["securityContext"]),
                         ("Never", 0, False, "Default", {"runAsUser": 1000}))

    def test_tolerations_are_added_once_and_not_over_the_pods_own(self):
        own = {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
               "effect": "NoExecute", "tolerationSeconds": 10}
        pod = defaults_pod.default_pod(pod_with(tolerations=[own]))
        self.assertEqual(pod["spec"]["tolerations"], [own, DEFAULT_TOLERATIONS[1]])
        defaults_pod.default_pod(pod)
        self.assertEqual(len(pod["spec"]["tolerations"]), 2)
        everything = defaults_pod.default_pod(pod_with(tolerations=[{"operator": "Exists"}]))
        self.assertEqual(everything["spec"]["tolerations"], [{"operator": "Exists"}])

    def test_priority_comes_from_the_class_and_carries_over_on_update(self):
        pod = defaults_pod.default_pod(pod_with(priorityClassName="system-node-critical"))
        self.assertEqual((pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]),
                         (2000001000, "PreemptLowerPriority"))
        old = defaults_pod.default_pod(pod_with(priorityClassName="system-cluster-critical"))
        new = defaults_pod.default_pod(pod_with(priorityClassName="system-cluster-critical"),
                                       old=old)
        self.assertEqual(new["spec"]["priority"], 2000000000)
        unknown = defaults_pod.default_pod(pod_with(priorityClassName="nope"))
        self.assertNotIn("priority", unknown["spec"])

    def test_priority_refusals_read_as_the_plugins(self):
        self.assertIsNone(defaults_pod.priority_refusal(pod_with()))
        self.assertIsNone(defaults_pod.priority_refusal(pod_with(priority=0)))
        self.assertEqual(defaults_pod.priority_refusal(pod_with(priorityClassName="nope")),
                         "no PriorityClass with name nope was found")
        self.assertEqual(defaults_pod.priority_refusal(pod_with(priority=5)),
                         "the integer value of priority (5) must not be provided in pod spec; "
                         "priority admission controller computed 0 from the given "
                         "PriorityClass name")
        self.assertEqual(defaults_pod.priority_refusal(pod_with(preemptionPolicy="Never")),
                         "the string value of PreemptionPolicy (Never) must not be provided in "
                         "pod spec; priority admission controller computed PreemptLowerPriority "
                         "from the given PriorityClass name")

    def test_qos_class_compares_quantities_by_value(self):
        def qos(resources):
            pod = pod_with({"resources": resources})
            return defaults_pod.prepare_pod_for_create(
                defaults_pod.default_pod(pod))["status"]["qosClass"]
        self.assertEqual(qos({}), "BestEffort")
        self.assertEqual(qos({"limits": {"cpu": "1", "memory": "1Gi"}}), "Guaranteed")
        self.assertEqual(qos({"limits": {"cpu": "1", "memory": "1Gi"},
                              "requests": {"cpu": "1000m", "memory": "1024Mi"}}), "Guaranteed")
        self.assertEqual(qos({"requests": {"cpu": "100m"}}), "Burstable")
        self.assertEqual(qos({"limits": {"cpu": "1"}}), "Burstable")

    def test_scheduling_gates_add_the_gated_condition(self):
        pod = pod_with(schedulingGates=[{"name": "wait"}])
        defaults_pod.prepare_pod_for_create(defaults_pod.default_pod(pod),
                                            now="2024-01-01T00:00:00Z")
        self.assertEqual(pod["status"]["conditions"], [{
            "lastProbeTime": None, "lastTransitionTime": "2024-01-01T00:00:00Z",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
            "reason": "SchedulingGated", "status": "False", "type": "PodScheduled"}])

    def test_pod_ip_and_pod_ips_mirror_each_other(self):
        pod = defaults_pod.default_pod(dict(pod_with(), status={"podIP": "10.244.0.5"}))
        self.assertEqual(pod["status"]["podIPs"], [{"ip": "10.244.0.5"}])
        pod = defaults_pod.default_pod(dict(pod_with(),
                                            status={"hostIPs": [{"ip": "172.18.0.2"}]}))
        self.assertEqual(pod["status"]["hostIP"], "172.18.0.2")

    def test_defaulting_twice_changes_nothing(self):
        pod = create_pod(pod_with({"resources": {"limits": {"cpu": "2"}}}))
        again = defaults_pod.default_pod(copy.deepcopy(pod))
        self.assertEqual(again, pod)


if __name__ == "__main__":
    unittest.main()
