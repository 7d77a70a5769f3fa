"""What the real kube-apiserver (v1.33) refuses, stated as the field errors
it answers with: the exact path, type and text of each. No server runs.

Run: cd e2e/cluster && python3 -m unittest test_validation -v
"""
import copy
import unittest

import defaults
import quantity
import validation
import validation_container

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
             "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
             "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
               "start with an alphabetic character, and end with an alphanumeric character "
               "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
               "'[a-z]([-a-z0-9]*[a-z0-9])?')")
QNAME_PART = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
              "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
              "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, "
                   "'-', '_' or '.', and must start and end with an alphanumeric character "
                   "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                   "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")

# A pod as the server holds it after defaults: what the operator creates.
POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {
        "name": "job-worker-0", "namespace": "default",
        "labels": {"training.mwj.io/job-name": "job", "training.mwj.io/replica-index": "0"},
        "ownerReferences": [{"apiVersion": "training.mwj.io/v1", "kind": "MultiWorkerJob",
                             "name": "job", "uid": "6b1d", "controller": True,
                             "blockOwnerDeletion": True}]},
    "spec": {
        "restartPolicy": "Never", "dnsPolicy": "ClusterFirst",
        "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler",
        "hostname": "job-worker-0", "subdomain": "job", "securityContext": {},
        "volumes": [{"name": "ckpt", "emptyDir": {}},
                    {"name": "key", "secret": {"secretName": "job-key", "defaultMode": 0o400}}],
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                         "effect": "NoExecute", "tolerationSeconds": 300}],
        "containers": [{
            "name": "worker", "image": "mwj-worker:1",
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent",
            "ports": [{"name": "ring", "containerPort": 2222, "protocol": "TCP"}],
            "env": [{"name": "TF_CONFIG", "value": "{}"},
                    {"name": "MWJ_POD", "valueFrom": {"fieldRef": {
                        "apiVersion": "v1", "fieldPath": "metadata.name"}}}],
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                          "requests": {"cpu": "500m", "memory": "512Mi"}},
            "volumeMounts": [{"name": "ckpt", "mountPath": "/ckpt"},
                             {"name": "key", "mountPath": "/key", "readOnly": True}],
            "readinessProbe": {"tcpSocket": {"port": "ring"}, "timeoutSeconds": 1,
                               "periodSeconds": 10, "successThreshold": 1,
                               "failureThreshold": 3}}]}}

SERVICE = {
    "apiVersion": "v1", "kind": "Service",
    "metadata": {"name": "job", "namespace": "default"},
    "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
             "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
             "ports": [{"name": "ring", "port": 2222, "targetPort": 2222, "protocol": "TCP"}],
             "selector": {"training.mwj.io/job-name": "job"}, "sessionAffinity": "None",
             "internalTrafficPolicy": "Cluster", "publishNotReadyAddresses": True}}


def pod(**changes):
    p = copy.deepcopy(POD)
    for path, value in changes.items():
        obj, keys = p, path.split("__")
        for k in keys[:-1]:
            obj = obj[int(k)] if isinstance(obj, list) else obj[k]
        obj[keys[-1]] = value
    return p


def container(p):
    return p["spec"]["containers"][0]


def texts(causes):
    return [str(c) for c in causes]


class QuantityTest(unittest.TestCase):
    def test_quantities_print_in_canonical_form(self):
        for given, shown in [("2000m", "2"), ("1.5Gi", "1536Mi"), ("0.5", "500m"),
                             ("1e3", "1e3"), ("1000", "1k"), ("0.1n", "1n"), ("1Ki", "1Ki"),
                             ("0.5Ki", "512"), ("-1500m", "-1500m"), ("1E", "1E"), (2, "2"),
                             ("0", "0"), (".5", "500m")]:
            with self.subTest(given=given):
                self.assertEqual(str(quantity.parse(given)), shown)

    def test_quantities_compare_by_value(self):
        self.assertEqual(quantity.parse("1").cmp(quantity.parse("1000m")), 0)
        self.assertEqual(quantity.parse("1Gi").cmp(quantity.parse("1G")), 1)
        self.assertEqual(quantity.parse("1500m").value_int(), 2)
        self.assertEqual(quantity.parse("1.0001").milli_value(), 1001)

    def test_bad_quantities_carry_gos_message(self):
        for text, message in [("1ki", "unable to parse quantity's suffix"),
                              ("1e", "unable to parse quantity's suffix"),
                              ("abc", quantity.FORMAT_WRONG), ("", quantity.FORMAT_WRONG),
                              ("1 ", quantity.FORMAT_WRONG)]:
            with self.subTest(text=text):
                with self.assertRaises(quantity.QuantityError) as ctx:
                    quantity.parse(text)
                self.assertEqual(str(ctx.exception), message)
        self.assertEqual(quantity.FORMAT_WRONG, "quantities must match the regular "
                         "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


class NamesTest(unittest.TestCase):
    def test_valid_objects_pass(self):
        self.assertEqual(validation.validate_pod(POD), [])
        self.assertEqual(validation.validate_service(SERVICE), [])

    def test_pod_name_with_upper_case_and_underscore_is_refused(self):
        p = pod(metadata__name="Bad_Name")
        self.assertEqual(texts(validation.validate_pod(p)),
                         ['metadata.name: Invalid value: "Bad_Name": ' + SUBDOMAIN_MSG])

    def test_custom_resource_names_follow_the_subdomain_rule(self):
        self.assertEqual(validation.name_custom_resource("Bad_Name"), [SUBDOMAIN_MSG])
        self.assertEqual(validation.name_custom_resource("job.v1"), [])
        self.assertEqual(validation.name_path_segment("Bad_Name"), [])
        self.assertEqual(validation.name_path_segment("a/b%"),
                         ["may not contain '/'", "may not contain '%'"])

    def test_service_name_is_a_dns1035_label(self):
        svc = copy.deepcopy(SERVICE)
        svc["metadata"]["name"] = "a" * 64
        self.assertEqual(texts(validation.validate_service(svc)),
                         ['metadata.name: Invalid value: "%s": must be no more than 63 '
                          'characters' % ("a" * 64)])
        svc["metadata"]["name"] = "job.v1"
        self.assertEqual(texts(validation.validate_service(svc)),
                         ['metadata.name: Invalid value: "job.v1": ' + DNS1035_MSG])
        svc["metadata"]["name"] = "1job"
        self.assertEqual(len(validation.validate_service(svc)), 1)

    def test_generate_name_may_end_in_a_dash(self):
        self.assertEqual(validation.name_dns1035_label("job-", True), [])
        self.assertEqual(validation.name_dns1035_label("job-", False), [DNS1035_MSG])

    def test_hostname_and_subdomain_are_dns1123_labels(self):
        self.assertEqual(texts(validation.validate_pod(pod(spec__hostname="job.worker"))),
                         ['spec.hostname: Invalid value: "job.worker": must not contain dots'])
        self.assertEqual(texts(validation.validate_pod(pod(spec__subdomain="Job"))),
                         ['spec.subdomain: Invalid value: "Job": ' + LABEL_MSG])

    def test_namespace_names_are_labels_and_namespaces_have_no_namespace(self):
        ns = {"metadata": {"name": "team.a", "namespace": "x"}}
        self.assertEqual(texts(validation.validate_namespace(ns)),
                         ['metadata.name: Invalid value: "team.a": must not contain dots',
                          'metadata.namespace: Forbidden: not allowed on this type'])

    def test_name_or_generate_name_is_required(self):
        p = pod()
        del p["metadata"]["name"]
        self.assertEqual(texts(validation.validate_pod(p)),
                         ["metadata.name: Required value: name or generateName is required"])


class MetadataTest(unittest.TestCase):
    def test_label_keys_and_values(self):
        p = pod(metadata__labels={"bad key": "ok", "ok": "-bad"})
        self.assertEqual(texts(validation.validate_pod(p)),
                         ['metadata.labels: Invalid value: "bad key": name part ' + QNAME_PART,
                          'metadata.labels: Invalid value: "-bad": ' + LABEL_VALUE_MSG])

    def test_label_key_prefix_and_length(self):
        errs = validation.is_qualified_name("Example.com/" + "a" * 64)
        self.assertEqual(errs, ["prefix part " + SUBDOMAIN_MSG,
                                "name part must be no more than 63 characters"])
        self.assertEqual(validation.is_qualified_name("/a"), ["prefix part must be non-empty"])
        self.assertEqual(validation.is_valid_label_value(""), [])

    def test_annotation_keys_ignore_case_and_size_is_limited(self):
        p = pod(metadata__annotations={"Example.com/Key": "x", "a b": "y"})
        self.assertEqual(texts(validation.validate_pod(p)),
                         ['metadata.annotations: Invalid value: "a b": name part ' + QNAME_PART])
        p = pod(metadata__annotations={"big": "x" * (256 * 1024)})
        self.assertEqual(texts(validation.validate_pod(p)),
                         ["metadata.annotations: Too long: may not be more than 262144 bytes"])

    def test_two_controller_owner_references_are_refused(self):
        refs = [{"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": True},
                {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": True}]
        errs = validation.validate_pod(pod(metadata__ownerReferences=refs))
        self.assertEqual(len(errs), 1)
        self.assertEqual(errs[0].field, "metadata.ownerReferences")
        self.assertEqual(errs[0].reason, "FieldValueInvalid")
        self.assertTrue(errs[0].message.endswith(
            ': Only one reference can have Controller set to true. Found "true" in references '
            'for A/a and B/b'))

    def test_owner_reference_without_uid_is_refused(self):
        refs = [{"apiVersion": "training.mwj.io/v1", "kind": "MultiWorkerJob", "name": "job"}]
        self.assertEqual(texts(validation.validate_pod(pod(metadata__ownerReferences=refs))),
                         ['metadata.ownerReferences.uid: Invalid value: "": must not be empty'])
        refs = [{"apiVersion": "a/b/c", "kind": "", "name": "", "uid": "1"}]
        self.assertEqual(texts(validation.validate_pod(pod(metadata__ownerReferences=refs))),
                         ['metadata.ownerReferences.apiVersion: Invalid value: "a/b/c": version '
                          'must not be empty',
                          'metadata.ownerReferences.kind: Invalid value: "": must not be empty',
                          'metadata.ownerReferences.name: Invalid value: "": must not be empty'])

    def test_finalizers_must_be_qualified_or_standard(self):
        p = pod(metadata__finalizers=["training.mwj.io/cleanup", "kubernetes", "cleanup"])
        self.assertEqual(texts(validation.validate_pod(p)),
                         ['metadata.finalizers[2]: Invalid value: "cleanup": name is neither a '
                          'standard finalizer name nor is it fully qualified'])
        meta = {"name": "x", "namespace": "d", "finalizers": ["cleanup"]}
        self.assertEqual(validation.validate_object_meta(meta, True,
                                                         validation.name_custom_resource), [])

    def test_update_keeps_name_and_needs_a_resource_version(self):
        old = {"name": "a", "namespace": "d", "uid": "1", "resourceVersion": "5"}
        new = dict(old, name="b", resourceVersion="")
        self.assertEqual(texts(validation.validate_object_meta_update(new, old)),
                         ['metadata.resourceVersion: Invalid value: "": must be specified for '
                          'an update',
                          'metadata.name: Invalid value: "b": field is immutable'])

    def test_no_new_finalizers_once_deleting(self):
        old = {"name": "a", "resourceVersion": "5", "deletionTimestamp": "2025-01-02T03:04:05Z",
               "finalizers": ["x.io/a"]}
        new = dict(old, finalizers=["x.io/a", "x.io/b"])
        self.assertEqual(texts(validation.validate_object_meta_update(new, old)),
                         ['metadata.finalizers: Forbidden: no new finalizers can be added if the '
                          'object is being deleted, found new finalizers []string{"x.io/b"}'])


class ContainerTest(unittest.TestCase):
    def test_container_port_zero_and_out_of_range(self):
        p = pod()
        container(p)["ports"] = [{"containerPort": 0, "protocol": "TCP"},
                                 {"containerPort": 70000, "hostPort": 70000, "protocol": "TCP"},
                                 {"containerPort": 80, "protocol": "ICMP", "name": "http--x"}]
        self.assertEqual(texts(validation.validate_pod(p)), [
            "spec.containers[0].ports[0].containerPort: Required value",
            "spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 "
            "and 65535, inclusive",
            "spec.containers[0].ports[1].hostPort: Invalid value: 70000: must be between 1 and "
            "65535, inclusive",
            'spec.containers[0].ports[2].name: Invalid value: "http--x": must not contain '
            'consecutive hyphens',
            'spec.containers[0].ports[2].protocol: Unsupported value: "ICMP": supported values: '
            '"SCTP", "TCP", "UDP"'])

    def test_container_names_are_unique_across_init_and_regular_containers(self):
        p = pod()
        p["spec"]["initContainers"] = [dict(container(p), ports=[], readinessProbe=None)]
        del p["spec"]["initContainers"][0]["readinessProbe"]
        self.assertEqual(texts(validation.validate_pod(p)),
                         ['spec.initContainers[0].name: Duplicate value: "worker"'])

    def test_restart_policy_on_an_init_container_may_only_be_always(self):
        # validateInitContainers and validateInitContainerRestartPolicy
        # (pkg/apis/core/validation/validation.go): Always makes a sidecar.
        p = pod()
        init = dict(container(p), name="proxy", ports=[], restartPolicy="Always")
        p["spec"]["initContainers"] = [init]
        self.assertEqual(texts(validation.validate_pod(p)), [])
        init["restartPolicy"] = "OnFailure"
        del init["readinessProbe"]
        self.assertEqual(texts(validation.validate_pod(p)),
                         ['spec.initContainers[0].restartPolicy: Unsupported value: '
                          '"OnFailure": supported values: "Always"'])

    def test_restart_policy_is_refused_on_a_regular_container(self):
        # validateContainers: "These fields are disallowed for regular containers".
        p = pod()
        container(p)["restartPolicy"] = "Always"
        self.assertEqual(texts(validation.validate_pod(p)),
                         ["spec.containers[0].restartPolicy: Forbidden: may not be set for "
                          "non-init containers"])

    def test_env_names_follow_the_relaxed_rule_of_v1_32_and_later(self):
        self.assertTrue(validation_container.RELAXED_ENV_VAR_NAMES)
        p = pod()
        container(p)["env"] = [{"name": "MY VAR", "value": "1"}, {"name": "1VAR", "value": "1"},
                               {"name": "A=B", "value": "1"}]
        self.assertEqual(texts(validation.validate_pod(p)),
                         ['spec.containers[0].env[2].name: Invalid value: "A=B": a valid '
                          'environment variable name must consist only of printable ASCII '
                          "characters other than '='"])

    def test_the_strict_env_rule_of_older_servers(self):
        strict = ("a valid environment variable name must consist of alphabetic characters, "
                  "digits, '_', '-', or '.', and must not start with a digit (e.g. "
                  "'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for "
                  "validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')")
        self.assertEqual(validation_container.is_env_var_name("MY VAR"), [strict])
        self.assertEqual(validation_container.is_env_var_name("1VAR"), [strict])
        self.assertEqual(validation_container.is_env_var_name("MY_VAR"), [])

    def test_env_value_from_needs_exactly_one_source(self):
        p = pod()
        container(p)["env"] = [{"name": "A", "valueFrom": {}},
                               {"name": "B", "value": "x", "valueFrom": {
                                   "secretKeyRef": {"name": "s", "key": "k"}}}]
        self.assertEqual(texts(validation.validate_pod(p)), [
            'spec.containers[0].env[0].valueFrom: Invalid value: "": must specify one of: '
            '`fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`',
            'spec.containers[0].env[1].valueFrom: Invalid value: "": may not be specified when '
            '`value` is not empty'])

    def test_volume_mount_must_name_a_volume_and_paths_are_unique(self):
        p = pod()
        container(p)["volumeMounts"] = [{"name": "x", "mountPath": "/ckpt"},
                                        {"name": "ckpt", "mountPath": "/ckpt"}]
        self.assertEqual(texts(validation.validate_pod(p)), [
            'spec.containers[0].volumeMounts[0].name: Not found: "x"',
            'spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/ckpt": must be '
            'unique'])

    def test_request_above_limit_is_refused(self):
        p = pod()
        container(p)["resources"] = {"limits": {"cpu": "1000m"}, "requests": {"cpu": "2"}}
        self.assertEqual(texts(validation.validate_pod(p)),
                         ['spec.containers[0].resources.requests: Invalid value: "2": must be '
                          'less than or equal to cpu limit of 1'])

    def test_resource_names_and_counted_resources(self):
        p = pod()
        container(p)["resources"] = {"limits": {"gpu": "1", "nvidia.com/gpu": "500m"}}
        self.assertEqual(texts(validation.validate_pod(p)), [
            'spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard '
            'resource type or fully qualified',
            "spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: 500m: must be "
            "an integer"])

    def test_a_quantity_that_does_not_parse_fails_decoding(self):
        p = pod()
        container(p)["resources"] = {"limits": {"cpu": "lots"}}
        with self.assertRaises(quantity.QuantityError):
            validation.validate_pod(p)

    def test_image_and_policies_are_required(self):
        p = pod()
        del container(p)["image"]
        container(p)["imagePullPolicy"] = "Sometimes"
        self.assertEqual(texts(validation.validate_pod(p)), [
            "spec.containers[0].image: Required value",
            'spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported '
            'values: "Always", "IfNotPresent", "Never"'])


class PodSpecTest(unittest.TestCase):
    def test_containers_are_required(self):
        self.assertEqual(texts(validation.validate_pod(pod(spec__containers=[]))),
                         ["spec.containers: Required value"])

    def test_volumes_have_label_names_unique_and_one_source(self):
        p = pod(spec__volumes=[{"name": "ckpt", "emptyDir": {}},
                               {"name": "ckpt", "emptyDir": {}, "hostPath": {"path": "/x"}},
                               {"name": "key"}])
        self.assertEqual(texts(validation.validate_pod(p)), [
            "spec.volumes[1].hostPath: Forbidden: may not specify more than 1 volume type",
            'spec.volumes[1].name: Duplicate value: "ckpt"',
            "spec.volumes[2]: Required value: must specify a volume type",
            'spec.containers[0].volumeMounts[1].name: Not found: "key"'])

    def test_policies_and_deadlines(self):
        p = pod(spec__restartPolicy="Sometimes", spec__activeDeadlineSeconds=0)
        self.assertEqual(texts(validation.validate_pod(p)), [
            'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
            '"OnFailure", "Never"',
            "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, "
            "inclusive"])

    def test_service_account_name_and_node_selector(self):
        p = pod(spec__serviceAccountName="Bad_Name", spec__nodeSelector={"a/b/c": "x"})
        errs = texts(validation.validate_pod(p))
        self.assertEqual(errs[0], 'spec.nodeSelector: Invalid value: "a/b/c": a qualified name '
                         + QNAME_PART + " with an optional DNS subdomain prefix and '/' (e.g. "
                         "'example.com/MyName')")
        self.assertEqual(errs[1], 'spec.serviceAccountName: Invalid value: "Bad_Name": '
                         + SUBDOMAIN_MSG)

    def test_tolerations(self):
        p = pod(spec__tolerations=[{"operator": "Equal", "value": "x"},
                                   {"key": "k", "operator": "Exists", "value": "v",
                                    "tolerationSeconds": 5, "effect": "NoSchedule"}])
        self.assertEqual(texts(validation.validate_pod(p)), [
            'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when '
            '`key` is empty, which means "match all values and all keys"',
            'spec.tolerations[1].effect: Invalid value: "NoSchedule": effect must be '
            "'NoExecute' when `tolerationSeconds` is set",
            'spec.tolerations[1].operator: Invalid value: "v": value must be empty when '
            "`operator` is 'Exists'"])

    def test_grace_period_is_required(self):
        p = pod()
        del p["spec"]["terminationGracePeriodSeconds"]
        self.assertEqual(texts(validation.validate_pod(p)),
                         ["spec.terminationGracePeriodSeconds: Required value"])


class PodUpdateTest(unittest.TestCase):
    def setUp(self):
        self.old = pod(metadata__resourceVersion="7")

    def test_images_and_a_shorter_deadline_may_change(self):
        new = pod(metadata__resourceVersion="7")
        container(new)["image"] = "mwj-worker:2"
        self.assertEqual(validation.validate_pod_update(new, self.old), [])

    def test_other_spec_changes_are_refused_with_the_real_prefix(self):
        new = pod(metadata__resourceVersion="7", spec__restartPolicy="Always")
        errs = validation.validate_pod_update(new, self.old)
        self.assertEqual(len(errs), 1)
        self.assertEqual(errs[0].field, "spec")
        self.assertEqual(errs[0].reason, "FieldValueForbidden")
        self.assertTrue(str(errs[0]).startswith(
            "spec: Forbidden: pod updates may not change fields other than "
            "`spec.containers[*].image`,`spec.initContainers[*].image`,"
            "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
            "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it "
            "was previously negative)\n"))

    def test_quantities_compare_by_value(self):
        new = pod(metadata__resourceVersion="7")
        container(new)["resources"]["limits"]["cpu"] = "1000m"
        self.assertEqual(validation.validate_pod_update(new, self.old), [])

    def test_containers_may_not_be_added(self):
        new = pod(metadata__resourceVersion="7")
        new["spec"]["containers"].append(dict(container(new), name="two"))
        self.assertEqual(texts(validation.validate_pod_update(new, self.old)),
                         ["spec.containers: Forbidden: pod updates may not add or remove "
                          "containers"])

    def test_deadline_may_only_shrink_and_tolerations_only_grow(self):
        old = pod(metadata__resourceVersion="7", spec__activeDeadlineSeconds=60)
        new = pod(metadata__resourceVersion="7", spec__activeDeadlineSeconds=120)
        self.assertEqual(texts(validation.validate_pod_update(new, old)),
                         ["spec.activeDeadlineSeconds: Invalid value: 120: must be less than or "
                          "equal to previous value"])
        new = pod(metadata__resourceVersion="7", spec__tolerations=[])
        self.assertEqual(texts(validation.validate_pod_update(new, self.old)),
                         ["spec.tolerations: Forbidden: existing toleration can not be modified "
                          "except its tolerationSeconds"])


class ServiceTest(unittest.TestCase):
    def test_ports_need_names_when_several(self):
        svc = copy.deepcopy(SERVICE)
        svc["spec"]["ports"].append({"port": 0, "targetPort": "Ring_", "protocol": "TCP"})
        self.assertEqual(texts(validation.validate_service(svc)), [
            "spec.ports[1].name: Required value",
            "spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            'spec.ports[1].targetPort: Invalid value: "Ring_": must contain only alpha-numeric '
            'characters (a-z, 0-9), and hyphens (-)'])

    def test_cluster_ip_must_be_none_or_an_ip(self):
        svc = copy.deepcopy(SERVICE)
        svc["spec"]["clusterIP"] = svc["spec"]["clusterIPs"][0] = "none"
        self.assertEqual(texts(validation.validate_service(svc)),
                         ['spec.clusterIPs[0]: Invalid value: "none": must be a valid IP '
                          'address, (e.g. 10.9.8.7 or 2001:db8::ffff)'])

    def test_cluster_ip_may_not_change(self):
        old = copy.deepcopy(SERVICE)
        old["metadata"]["resourceVersion"] = "3"
        new = copy.deepcopy(old)
        new["spec"]["clusterIP"] = "10.96.0.11"
        defaults.default_service(new, None, old)
        self.assertEqual(new["spec"]["clusterIPs"], ["10.96.0.11"])
        self.assertEqual(texts(validation.validate_service_update(new, old)),
                         ['spec.clusterIPs[0]: Invalid value: []string{"10.96.0.11"}: may not '
                          'change once set'])

    def test_session_affinity_and_type(self):
        svc = copy.deepcopy(SERVICE)
        svc["spec"]["sessionAffinity"] = "Sticky"
        svc["spec"]["type"] = "Headless"
        self.assertEqual(texts(validation.validate_service(svc)), [
            'spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", '
            '"None"',
            'spec.type: Unsupported value: "Headless": supported values: "ClusterIP", '
            '"ExternalName", "LoadBalancer", "NodePort"'])


class EventTest(unittest.TestCase):
    def test_core_event_must_be_in_its_objects_namespace(self):
        ev = {"metadata": {"name": "job.1", "namespace": "default"},
              "involvedObject": {"kind": "MultiWorkerJob", "name": "job", "namespace": "team"},
              "reason": "Created", "message": "created pod"}
        self.assertEqual(texts(validation.validate_core_event(ev, "default")),
                         ['involvedObject.namespace: Invalid value: "team": does not match '
                          'event.namespace'])

    def test_event_time_needs_a_reporting_controller_and_instance(self):
        ev = {"metadata": {"name": "job.1", "namespace": "default"},
              "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
              "eventTime": "2025-01-02T03:04:05.000000Z", "action": "Create",
              "reason": "Created", "reportingInstance": "mwj-operator-0"}
        self.assertEqual(texts(validation.validate_core_event(ev, "default")), [
            "reportingController: Required value",
            'reportingController: Invalid value: "": name part must be non-empty',
            'reportingController: Invalid value: "": name part ' + QNAME_PART])
        ev["reportingController"] = "training.mwj.io/operator"
        self.assertEqual(validation.validate_core_event(ev, "default"), [])

    def test_events_v1_rules_name_the_internal_fields(self):
        ev = {"metadata": {"name": "job.1"}, "regarding": {"kind": "Pod", "namespace": "default"},
              "reportingController": "mwj.io/op", "reportingInstance": "op-0",
              "action": "Create", "reason": "Created", "type": "Normal"}
        self.assertEqual(texts(validation.validate_events_v1_event(ev, "default")),
                         ["eventTime: Required value"])
        ev.update(eventTime="2025-01-02T03:04:05.000000Z", note="x" * 1025, type="Info",
                  deprecatedCount=3)
        self.assertEqual(texts(validation.validate_events_v1_event(ev, "default")), [
            'message: Invalid value: "": can have at most 1024 characters',
            'type: Invalid value: "": has invalid value: Info',
            'count: Invalid value: "": needs to be unset'])


class SmallKindsTest(unittest.TestCase):
    def test_lease_duration_and_transitions(self):
        lease = {"metadata": {"name": "mwj-operator", "namespace": "default"},
                 "spec": {"holderIdentity": "pod-1", "leaseDurationSeconds": 0,
                          "leaseTransitions": -1}}
        self.assertEqual(texts(validation.validate_lease(lease)), [
            "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
            "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"])

    def test_config_map_and_secret_keys(self):
        cm = {"metadata": {"name": "c", "namespace": "d"}, "data": {"a b": "x", "..": "y"}}
        self.assertEqual(texts(validation.validate_configmap(cm)), [
            'data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric '
            "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', "
            "regex used for validation is '[-._a-zA-Z0-9]+')",
            "data[..]: Invalid value: \"..\": must not be '..'"])
        secret = {"metadata": {"name": "job-key", "namespace": "d"},
                  "type": "kubernetes.io/service-account-token", "data": {"key": "AAAA"}}
        self.assertEqual(texts(validation.validate_secret(secret)), [
            "metadata.annotations[kubernetes.io/service-account.name]: Required value"])

    def test_network_policy_ports_and_types(self):
        np = {"metadata": {"name": "job", "namespace": "d"},
              "spec": {"podSelector": {"matchLabels": {"training.mwj.io/job-name": "job"}},
                       "ingress": [{"ports": [{"port": 70000, "protocol": "ICMP"}],
                                    "from": [{}]}],
                       "policyTypes": ["Ingress", "Sideways"]}}
        self.assertEqual(texts(validation.validate_network_policy(np)), [
            'spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: '
            '"TCP", "UDP", "SCTP"',
            "spec.ingress[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, "
            "inclusive",
            "spec.ingress[0].from[0]: Required value: must specify a peer",
            'spec.policyTypes[1]: Unsupported value: "Sideways": supported values: "Ingress", '
            '"Egress"'])

    def test_node_and_service_account_names(self):
        self.assertEqual(validation.validate_node({"metadata": {"name": "node-1.local"}}), [])
        sa = {"metadata": {"name": "Bad_Name", "namespace": "d"}}
        self.assertEqual(texts(validation.validate_service_account(sa)),
                         ['metadata.name: Invalid value: "Bad_Name": ' + SUBDOMAIN_MSG])


if __name__ == "__main__":
    unittest.main()
