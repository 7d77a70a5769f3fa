"""defaults.py against what a real kube-apiserver 1.31 returns, field by
field: each expected object below is written out from the real defaulting
code (pkg/apis/*/v1/defaults.go, zz_generated.defaults.go), the admission
plugins and the registry strategies that defaults.py names. No server.
The pod's own defaults are tested in test_defaults_pod.py; here, only that
a pod reaches them through the tables.

Run: cd e2e/cluster && python3 -m unittest test_defaults -v
"""
import copy
import unittest

import defaults
import defaults_pod


def service(spec, name="job"):
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def create_service(svc, ip="10.96.0.17"):
    svc = copy.deepcopy(svc)
    defaults.default_object(svc, allocate_ip=lambda: ip)
    return defaults.prepare_for_create(svc)


class ServiceTest(unittest.TestCase):
    def test_headless_service_of_the_operator_reads_back_as_a_real_server_returns_it(self):
        selector = {"training.mwj.io/job-name": "job"}
        svc = create_service(service({"clusterIP": "None", "selector": selector,
                                      "publishNotReadyAddresses": True,
                                      "ports": [{"port": 2222}]}))
        self.assertEqual(svc["spec"], {
            "clusterIP": "None",
            "clusterIPs": ["None"],
            "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "ports": [{"port": 2222, "protocol": "TCP", "targetPort": 2222}],
            "publishNotReadyAddresses": True,
            "selector": selector,
            "sessionAffinity": "None",
            "type": "ClusterIP",
        })
        self.assertEqual(svc["status"], {"loadBalancer": {}})

    def test_cluster_ip_service_gets_the_allocated_address(self):
        svc = create_service(service({"selector": {"app": "x"},
                                      "ports": [{"name": "http", "port": 80,
                                                 "targetPort": "web"}]}))
        self.assertEqual(svc["spec"], {
            "clusterIP": "10.96.0.17",
            "clusterIPs": ["10.96.0.17"],
            "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "web"}],
            "selector": {"app": "x"},
            "sessionAffinity": "None",
            "type": "ClusterIP",
        })

    def test_a_resubmitted_manifest_keeps_its_address(self):
        manifest = service({"selector": {"app": "x"}, "ports": [{"port": 80}]})
        stored = create_service(manifest)
        again = copy.deepcopy(manifest)

        def fail():
            raise AssertionError("allocated again")
        defaults.default_object(again, old=stored, allocate_ip=fail)
        self.assertEqual(again["spec"], stored["spec"])

    def test_a_requested_address_is_not_allocated(self):
        svc = create_service(service({"clusterIP": "10.96.0.10", "ports": [{"port": 53}]}),
                             ip="wrong")
        self.assertEqual((svc["spec"]["clusterIP"], svc["spec"]["clusterIPs"],
                          svc["spec"]["ipFamilies"]),
                         ("10.96.0.10", ["10.96.0.10"], ["IPv4"]))

    def test_headless_service_without_selector_asks_for_both_families(self):
        svc = create_service(service({"clusterIP": "None", "ports": [{"port": 80}]}))
        self.assertEqual((svc["spec"]["ipFamilyPolicy"], svc["spec"]["ipFamilies"]),
                         ("RequireDualStack", ["IPv4", "IPv6"]))

    def test_client_ip_affinity_gets_its_timeout(self):
        svc = create_service(service({"sessionAffinity": "ClientIP", "ports": [{"port": 80}]}))
        self.assertEqual(svc["spec"]["sessionAffinityConfig"],
                         {"clientIP": {"timeoutSeconds": 10800}})

    def test_node_port_and_load_balancer_get_their_policies(self):
        svc = create_service(service({"type": "LoadBalancer", "ports": [{"port": 80}]}))
        self.assertEqual((svc["spec"]["externalTrafficPolicy"],
                          svc["spec"]["internalTrafficPolicy"],
                          svc["spec"]["allocateLoadBalancerNodePorts"]),
                         ("Cluster", "Cluster", True))

    def test_external_name_gets_no_address_and_no_families(self):
        svc = create_service(service({"type": "ExternalName", "externalName": "example.com"}))
        self.assertEqual(svc["spec"], {"externalName": "example.com",
                                       "sessionAffinity": "None", "type": "ExternalName"})


class PodEntryTest(unittest.TestCase):
    def test_a_pod_reaches_the_pod_defaults_and_strategy_through_the_tables(self):
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "p", "namespace": "default"},
               "spec": {"containers": [{"name": "c", "image": "busybox"}],
                        "schedulingGates": [{"name": "wait"}]}}
        defaults.prepare_for_create(defaults.default_object(pod), now="2024-01-01T00:00:00Z")
        self.assertEqual((pod["spec"]["priority"], len(pod["spec"]["tolerations"]),
                          pod["spec"]["containers"][0]["imagePullPolicy"]),
                         (0, 2, "Always"))
        self.assertEqual((pod["status"]["phase"], pod["status"]["qosClass"],
                          pod["status"]["conditions"][0]["reason"]),
                         ("Pending", "BestEffort", "SchedulingGated"))

    def test_the_pod_names_callers_use_here_are_the_pod_modules(self):
        for name in ("default_pod", "add_service_account_token", "priority_refusal",
                     "pod_qos_class", "prepare_pod_for_create"):
            with self.subTest(name=name):
                self.assertIs(getattr(defaults, name), getattr(defaults_pod, name))


class OtherKindsTest(unittest.TestCase):
    def test_namespace_gets_its_label_finalizer_and_phase(self):
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
        defaults.prepare_for_create(defaults.default_object(ns))
        self.assertEqual(ns, {
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"}})

    def test_namespace_update_keeps_a_terminating_phase_and_no_finalizer_returns(self):
        ns = {"apiVersion": "v1", "kind": "Namespace",
              "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "x"}},
              "spec": {}, "status": {"phase": "Terminating"}}
        defaults.default_object(ns)
        self.assertEqual((ns["metadata"]["labels"], ns["spec"], ns["status"]),
                         ({"kubernetes.io/metadata.name": "team-a"}, {},
                          {"phase": "Terminating"}))

    def test_network_policy_with_egress_rules_gets_both_policy_types(self):
        np = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": "job", "namespace": "default"},
              "spec": {"podSelector": {"matchLabels": {"a": "b"}},
                       "ingress": [{"ports": [{"port": 2222}]}],
                       "egress": [{"ports": [{"port": 53, "protocol": "UDP"}, {"port": 2222}]}]}}
        defaults.prepare_for_create(defaults.default_object(np))
        self.assertEqual(np["spec"], {
            "podSelector": {"matchLabels": {"a": "b"}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"ports": [{"port": 2222, "protocol": "TCP"}]}],
            "egress": [{"ports": [{"port": 53, "protocol": "UDP"},
                                  {"port": 2222, "protocol": "TCP"}]}]})
        self.assertEqual(np["metadata"]["generation"], 1)

    def test_network_policy_without_egress_is_ingress_only(self):
        np = defaults.default_network_policy({"spec": {"ingress": [{}]}})
        self.assertEqual(np["spec"], {"podSelector": {}, "policyTypes": ["Ingress"],
                                      "ingress": [{}]})

    def test_secret_is_opaque_and_string_data_becomes_data(self):
        secret = defaults.default_secret({"stringData": {"key": "k\u00e9y"},
                                          "data": {"other": "b3RoZXI="}})
        self.assertEqual(secret, {"type": "Opaque",
                                  "data": {"other": "b3RoZXI=", "key": "a8OpeQ=="}})

    def test_deployment_reads_back_as_a_real_server_returns_it(self):
        d = {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "op", "namespace": "default"},
             "spec": {"selector": {"matchLabels": {"app": "op"}},
                      "template": {"metadata": {"labels": {"app": "op"}},
                                   "spec": {"serviceAccountName": "op",
                                            "containers": [{"name": "op", "image": "op:1"}]}}}}
        defaults.prepare_for_create(defaults.default_object(d))
        self.assertEqual(d["spec"], {
            "progressDeadlineSeconds": 600,
            "replicas": 1,
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": "op"}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                         "type": "RollingUpdate"},
            "template": {
                "metadata": {"creationTimestamp": None, "labels": {"app": "op"}},
                "spec": {
                    "containers": [{"image": "op:1", "imagePullPolicy": "IfNotPresent",
                                    "name": "op", "resources": {},
                                    "terminationMessagePath": "/dev/termination-log",
                                    "terminationMessagePolicy": "File"}],
                    "dnsPolicy": "ClusterFirst",
                    "restartPolicy": "Always",
                    "schedulerName": "default-scheduler",
                    "securityContext": {},
                    "serviceAccount": "op",
                    "serviceAccountName": "op",
                    "terminationGracePeriodSeconds": 30}}})
        self.assertEqual((d["status"], d["metadata"]["generation"]), ({}, 1))

    def test_recreate_deployment_gets_no_rolling_update(self):
        d = defaults.default_deployment({"spec": {"strategy": {"type": "Recreate"},
                                                  "replicas": 0}})
        self.assertEqual((d["spec"]["strategy"], d["spec"]["replicas"]),
                         ({"type": "Recreate"}, 0))

    def test_claim_gets_its_mode_phase_and_protection(self):
        pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": "ckpt", "namespace": "default"},
               "spec": {"accessModes": ["ReadWriteMany"],
                        "resources": {"requests": {"storage": "1024Mi"}}}}
        defaults.prepare_for_create(defaults.default_object(pvc))
        self.assertEqual(pvc["spec"], {"accessModes": ["ReadWriteMany"],
                                       "resources": {"requests": {"storage": "1Gi"}},
                                       "volumeMode": "Filesystem"})
        self.assertEqual(pvc["status"], {"phase": "Pending"})
        self.assertEqual(pvc["metadata"]["finalizers"], ["kubernetes.io/pvc-protection"])

    def test_pdb_status_counters_are_always_there(self):
        pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": "job"}, "spec": {"minAvailable": 1}}
        defaults.prepare_for_create(defaults.default_object(pdb))
        self.assertEqual(pdb["status"], {"currentHealthy": 0, "desiredHealthy": 0,
                                         "disruptionsAllowed": 0, "expectedPods": 0})
        self.assertEqual(pdb["spec"], {"minAvailable": 1})

    def test_role_binding_names_the_rbac_group(self):
        rb = defaults.default_object({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "default"},
                         {"kind": "User", "name": "alice"}]})
        self.assertEqual(rb["roleRef"]["apiGroup"], "rbac.authorization.k8s.io")
        self.assertNotIn("apiGroup", rb["subjects"][0])
        self.assertEqual(rb["subjects"][1]["apiGroup"], "rbac.authorization.k8s.io")

    def test_kinds_without_defaults_are_left_alone(self):
        for key in ("v1/ConfigMap", "v1/ServiceAccount", "v1/Event", "events.k8s.io/v1/Event",
                    "coordination.k8s.io/v1/Lease", "rbac.authorization.k8s.io/v1/Role"):
            with self.subTest(key=key):
                group_version, kind = key.rsplit("/", 1)
                obj = {"apiVersion": group_version, "kind": kind, "metadata": {"name": "x"},
                       "spec": {"holderIdentity": "a"}}
                self.assertEqual(defaults.default_object(copy.deepcopy(obj)), obj)

    def test_every_table_entry_takes_the_object_alone(self):
        for key, fn in defaults.DEFAULTERS.items():
            with self.subTest(key=key):
                self.assertIsInstance(fn({"metadata": {"name": "x"}}), dict)


if __name__ == "__main__":
    unittest.main()
