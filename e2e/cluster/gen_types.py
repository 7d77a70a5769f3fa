#!/usr/bin/python3
"""Generates k8s_types.json: the field types of the built-in kinds the local
test cluster stores, so that decoder.py can decode a request body the way
the kube-apiserver's JSON codec (sigs.k8s.io/json into the Go structs of
k8s.io/api) does: which fields exist, which JSON type each takes, and the
Go type names the real server prints in its decode errors.

Input: the generated models of the official Kubernetes JavaScript client,
npm package @kubernetes/client-node@1.4.0 (OpenAPI spec v1.34.0). Each
model file `package/dist/gen/models/<Class>.js` ends with

    <Class>.attributeTypeMap = [ {"name", "baseName", "type", "format"}, ... ];

where baseName is the JSON field name and type is `string`, `number`
(format int32 / int64 / double), `boolean`, `Date` (format date-time: a
metav1.Time), `V1MicroTime` (format date-time-micro: a metav1.MicroTime),
`IntOrString`, a model class, `Array<T>`, `{ [key: string]: T; }` or
`any`. The file is regular enough to read with a regular expression and
json.loads.

To regenerate k8s_types.json:

    cd /tmp && npm pack @kubernetes/client-node@1.4.0 \\
        && tar xzf kubernetes-client-node-1.4.0.tgz
    cd /work/main/e2e/cluster
    python3 gen_types.py /tmp/package/dist/gen/models > k8s_types.json

What the JavaScript models lose, and how it is recovered here:
  - MicroTime vs Time: kept (V1MicroTime vs Date); MICRO_TIME only checks
    that the fields the real server parses as MicroTime still are.
  - Quantity: flattened to `string` (and ResourceList to a map of
    strings); recovered from the QUANTITY table.
  - Byte arrays ([]byte, base64 in JSON): kept as format "byte".
  - Named Go types (`RestartPolicy string`, `types.UID`, `[]Capability`,
    `ResourceList`): flattened to string / array / map; their Go names,
    which the real server prints in "of type v1.RestartPolicy", come from
    GO_TYPE.
  - Types with their own UnmarshalJSON in Go, flattened to `any`:
    apiextensions JSON (default, example, enum), JSONSchemaPropsOrBool,
    JSONSchemaPropsOrArray, JSONSchemaPropsOrStringArray, metav1.FieldsV1,
    and the empty struct CustomResourceSubresourceStatus: see ANY.
  - Embedded Go structs (`VolumeSource json:",inline"`): flattened into
    the outer model; the real server names the embedded struct in its
    type errors (Go 1.24 encoding/json, sigs.k8s.io/json 2025-07-30), so
    INLINE says which fields come through which embedded struct.
Every table entry is checked against the models; a model that no longer
matches a table stops the generator with a message naming the entry.

Output (sorted keys, one type per line):
  kinds:  "<group/version>/<Kind>" (core "v1/<Kind>") -> model class
  types:  model class -> {"go": Go struct name, "fields": {json name: type},
          "inline": {embedded Go struct: [json names]}}
A field type is a type expression, or [expression, Go type string] where
the Go type is not the one derived from the expression. Expressions:
  string int32 int64 float64 bool bytes Time MicroTime Quantity
  IntOrString JSON SchemaOrBool SchemaOrArray SchemaOrStringArray
  []<expr>  map[string]<expr>  <model class>

Standard library only.
"""
import glob
import json
import os
import re
import sys

MODEL_RE = re.compile(r"^(\w+)\.attributeTypeMap = (\[.*?\]);", re.S | re.M)

# The kinds the local test cluster serves, and DeleteOptions (the body of
# a DELETE).
KINDS = {
    "v1/Namespace": "V1Namespace",
    "v1/Node": "V1Node",
    "v1/Pod": "V1Pod",
    "v1/Service": "V1Service",
    "v1/Endpoints": "V1Endpoints",
    "v1/Event": "CoreV1Event",
    "v1/ConfigMap": "V1ConfigMap",
    "v1/Secret": "V1Secret",
    "v1/ServiceAccount": "V1ServiceAccount",
    "v1/PersistentVolumeClaim": "V1PersistentVolumeClaim",
    "v1/ResourceQuota": "V1ResourceQuota",
    "v1/LimitRange": "V1LimitRange",
    "coordination.k8s.io/v1/Lease": "V1Lease",
    "events.k8s.io/v1/Event": "EventsV1Event",
    "networking.k8s.io/v1/NetworkPolicy": "V1NetworkPolicy",
    "apiextensions.k8s.io/v1/CustomResourceDefinition": "V1CustomResourceDefinition",
    "rbac.authorization.k8s.io/v1/Role": "V1Role",
    "rbac.authorization.k8s.io/v1/RoleBinding": "V1RoleBinding",
    "rbac.authorization.k8s.io/v1/ClusterRole": "V1ClusterRole",
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": "V1ClusterRoleBinding",
    "apps/v1/Deployment": "V1Deployment",
    "apps/v1/ReplicaSet": "V1ReplicaSet",
    "authentication.k8s.io/v1/TokenRequest": "AuthenticationV1TokenRequest",
    "authentication.k8s.io/v1/TokenReview": "V1TokenReview",
    "policy/v1/PodDisruptionBudget": "V1PodDisruptionBudget",
    "meta.k8s.io/v1/DeleteOptions": "V1DeleteOptions",
}

# metav1.MicroTime fields (RFC 3339 with exactly six fractional digits).
# The models mark them already; this is the check that they still do.
MICRO_TIME = {
    ("V1LeaseSpec", "acquireTime"), ("V1LeaseSpec", "renewTime"),
    ("CoreV1Event", "eventTime"), ("CoreV1EventSeries", "lastObservedTime"),
    ("EventsV1Event", "eventTime"), ("EventsV1EventSeries", "lastObservedTime"),
}

# resource.Quantity fields (a ResourceList is map[ResourceName]Quantity).
QUANTITY = {
    ("V1ResourceRequirements", "limits"), ("V1ResourceRequirements", "requests"),
    ("V1VolumeResourceRequirements", "limits"), ("V1VolumeResourceRequirements", "requests"),
    ("V1NodeStatus", "allocatable"), ("V1NodeStatus", "capacity"),
    ("V1PersistentVolumeClaimStatus", "capacity"),
    ("V1PersistentVolumeClaimStatus", "allocatedResources"),
    ("V1ContainerStatus", "allocatedResources"),
    ("V1PodSpec", "overhead"),
    ("V1EmptyDirVolumeSource", "sizeLimit"),
    ("V1ResourceFieldSelector", "divisor"),
    ("V1ResourceQuotaSpec", "hard"),
    ("V1ResourceQuotaStatus", "hard"), ("V1ResourceQuotaStatus", "used"),
    ("V1LimitRangeItem", "default"), ("V1LimitRangeItem", "defaultRequest"),
    ("V1LimitRangeItem", "max"), ("V1LimitRangeItem", "min"),
    ("V1LimitRangeItem", "maxLimitRequestRatio"),
}

# Fields whose Go type is a named type: the name the real server prints.
# A named map of Quantity is always v1.ResourceList.
GO_TYPE = {
    ("V1Container", "imagePullPolicy"): "v1.PullPolicy",
    ("V1Container", "terminationMessagePolicy"): "v1.TerminationMessagePolicy",
    ("V1Container", "restartPolicy"): "v1.ContainerRestartPolicy",
    ("V1EphemeralContainer", "imagePullPolicy"): "v1.PullPolicy",
    ("V1EphemeralContainer", "terminationMessagePolicy"): "v1.TerminationMessagePolicy",
    ("V1EphemeralContainer", "restartPolicy"): "v1.ContainerRestartPolicy",
    ("V1ContainerPort", "protocol"): "v1.Protocol",
    ("V1ServicePort", "protocol"): "v1.Protocol",
    ("CoreV1EndpointPort", "protocol"): "v1.Protocol",
    ("V1PortStatus", "protocol"): "v1.Protocol",
    ("V1NetworkPolicyPort", "protocol"): "v1.Protocol",
    ("V1ContainerResizePolicy", "resourceName"): "v1.ResourceName",
    ("V1ContainerResizePolicy", "restartPolicy"): "v1.ResourceResizeRestartPolicy",
    ("V1ContainerRestartRule", "action"): "v1.ContainerRestartRuleAction",
    ("V1ContainerRestartRuleOnExitCodes", "operator"):
        "v1.ContainerRestartRuleOnExitCodesOperator",
    ("V1VolumeMount", "mountPropagation"): "v1.MountPropagationMode",
    ("V1VolumeMount", "recursiveReadOnly"): "v1.RecursiveReadOnlyMode",
    ("V1VolumeMountStatus", "recursiveReadOnly"): "v1.RecursiveReadOnlyMode",
    ("V1Capabilities", "add"): "[]v1.Capability",
    ("V1Capabilities", "drop"): "[]v1.Capability",
    ("V1SecurityContext", "procMount"): "v1.ProcMountType",
    ("V1SeccompProfile", "type"): "v1.SeccompProfileType",
    ("V1AppArmorProfile", "type"): "v1.AppArmorProfileType",
    ("V1HTTPGetAction", "scheme"): "v1.URIScheme",
    ("V1Lifecycle", "stopSignal"): "v1.Signal",
    ("V1ContainerStatus", "stopSignal"): "v1.Signal",
    ("V1PodSpec", "restartPolicy"): "v1.RestartPolicy",
    ("V1PodSpec", "dnsPolicy"): "v1.DNSPolicy",
    ("V1PodSpec", "preemptionPolicy"): "v1.PreemptionPolicy",
    ("V1PodOS", "name"): "v1.OSName",
    ("V1PodSecurityContext", "fsGroupChangePolicy"): "v1.PodFSGroupChangePolicy",
    ("V1PodSecurityContext", "supplementalGroupsPolicy"): "v1.SupplementalGroupsPolicy",
    ("V1PodSecurityContext", "seLinuxChangePolicy"): "v1.PodSELinuxChangePolicy",
    ("V1Toleration", "operator"): "v1.TolerationOperator",
    ("V1Toleration", "effect"): "v1.TaintEffect",
    ("V1Taint", "effect"): "v1.TaintEffect",
    ("V1TopologySpreadConstraint", "whenUnsatisfiable"): "v1.UnsatisfiableConstraintAction",
    ("V1TopologySpreadConstraint", "nodeAffinityPolicy"): "v1.NodeInclusionPolicy",
    ("V1TopologySpreadConstraint", "nodeTaintsPolicy"): "v1.NodeInclusionPolicy",
    ("V1NodeSelectorRequirement", "operator"): "v1.NodeSelectorOperator",
    ("V1LabelSelectorRequirement", "operator"): "v1.LabelSelectorOperator",
    ("V1PodCondition", "type"): "v1.PodConditionType",
    ("V1PodCondition", "status"): "v1.ConditionStatus",
    ("V1PodReadinessGate", "conditionType"): "v1.PodConditionType",
    ("V1PodStatus", "phase"): "v1.PodPhase",
    ("V1PodStatus", "qosClass"): "v1.PodQOSClass",
    ("V1PodStatus", "resize"): "v1.PodResizeStatus",
    ("V1ResourceStatus", "name"): "v1.ResourceName",
    ("V1ResourceHealth", "resourceID"): "v1.ResourceID",
    ("V1ResourceHealth", "health"): "v1.ResourceHealthStatus",
    ("V1NodeStatus", "phase"): "v1.NodePhase",
    ("V1NodeStatus", "volumesInUse"): "[]v1.UniqueVolumeName",
    ("V1AttachedVolume", "name"): "v1.UniqueVolumeName",
    ("V1NodeCondition", "type"): "v1.NodeConditionType",
    ("V1NodeCondition", "status"): "v1.ConditionStatus",
    ("V1NodeAddress", "type"): "v1.NodeAddressType",
    ("V1ServiceSpec", "type"): "v1.ServiceType",
    ("V1ServiceSpec", "sessionAffinity"): "v1.ServiceAffinity",
    ("V1ServiceSpec", "externalTrafficPolicy"): "v1.ServiceExternalTrafficPolicy",
    ("V1ServiceSpec", "internalTrafficPolicy"): "v1.ServiceInternalTrafficPolicy",
    ("V1ServiceSpec", "ipFamilies"): "[]v1.IPFamily",
    ("V1ServiceSpec", "ipFamilyPolicy"): "v1.IPFamilyPolicy",
    ("V1LoadBalancerIngress", "ipMode"): "v1.LoadBalancerIPMode",
    ("V1Secret", "type"): "v1.SecretType",
    ("V1NamespaceSpec", "finalizers"): "[]v1.FinalizerName",
    ("V1NamespaceStatus", "phase"): "v1.NamespacePhase",
    ("V1NamespaceCondition", "type"): "v1.NamespaceConditionType",
    ("V1NamespaceCondition", "status"): "v1.ConditionStatus",
    ("V1PersistentVolumeClaimSpec", "accessModes"): "[]v1.PersistentVolumeAccessMode",
    ("V1PersistentVolumeClaimSpec", "volumeMode"): "v1.PersistentVolumeMode",
    ("V1PersistentVolumeClaimStatus", "phase"): "v1.PersistentVolumeClaimPhase",
    ("V1PersistentVolumeClaimStatus", "accessModes"): "[]v1.PersistentVolumeAccessMode",
    ("V1PersistentVolumeClaimStatus", "allocatedResourceStatuses"):
        "map[v1.ResourceName]v1.ClaimResourceStatus",
    ("V1PersistentVolumeClaimCondition", "type"): "v1.PersistentVolumeClaimConditionType",
    ("V1PersistentVolumeClaimCondition", "status"): "v1.ConditionStatus",
    ("V1ModifyVolumeStatus", "status"): "v1.PersistentVolumeClaimModifyVolumeStatus",
    ("V1HostPathVolumeSource", "type"): "v1.HostPathType",
    ("V1EmptyDirVolumeSource", "medium"): "v1.StorageMedium",
    ("V1AzureDiskVolumeSource", "cachingMode"): "v1.AzureDataDiskCachingMode",
    ("V1AzureDiskVolumeSource", "kind"): "v1.AzureDataDiskKind",
    ("V1ImageVolumeSource", "pullPolicy"): "v1.PullPolicy",
    ("V1ObjectReference", "uid"): "types.UID",
    ("V1ObjectMeta", "uid"): "types.UID",
    ("V1OwnerReference", "uid"): "types.UID",
    ("V1Preconditions", "uid"): "types.UID",
    ("V1ManagedFieldsEntry", "operation"): "v1.ManagedFieldsOperationType",
    ("V1Condition", "status"): "v1.ConditionStatus",
    ("V1DeleteOptions", "propagationPolicy"): "v1.DeletionPropagation",
    ("V1DeploymentStrategy", "type"): "v1.DeploymentStrategyType",
    ("V1DeploymentCondition", "type"): "v1.DeploymentConditionType",
    ("V1DeploymentCondition", "status"): "v1.ConditionStatus",
    ("V1ResourceQuotaSpec", "scopes"): "[]v1.ResourceQuotaScope",
    ("V1ScopedResourceSelectorRequirement", "scopeName"): "v1.ResourceQuotaScope",
    ("V1ScopedResourceSelectorRequirement", "operator"): "v1.ScopeSelectorOperator",
    ("V1LimitRangeItem", "type"): "v1.LimitType",
    ("V1PodDisruptionBudgetSpec", "unhealthyPodEvictionPolicy"):
        "v1.UnhealthyPodEvictionPolicyType",
    ("V1NetworkPolicySpec", "policyTypes"): "[]v1.PolicyType",
    ("V1LeaseSpec", "strategy"): "v1.CoordinatedLeaseStrategy",
    ("V1CustomResourceDefinitionSpec", "scope"): "v1.ResourceScope",
    ("V1CustomResourceConversion", "strategy"): "v1.ConversionStrategyType",
    ("V1CustomResourceDefinitionCondition", "type"): "v1.CustomResourceDefinitionConditionType",
    ("V1CustomResourceDefinitionCondition", "status"): "v1.ConditionStatus",
    ("V1JSONSchemaProps", "$schema"): "v1.JSONSchemaURL",
    ("V1JSONSchemaProps", "definitions"): "v1.JSONSchemaDefinitions",
    ("V1JSONSchemaProps", "dependencies"): "v1.JSONSchemaDependencies",
    ("V1JSONSchemaProps", "x-kubernetes-validations"): "v1.ValidationRules",
    ("V1ValidationRule", "reason"): "v1.FieldValueErrorReason",
    ("V1UserInfo", "extra"): "map[string]v1.ExtraValue",
}

# Fields the models type as `any`, with the type the Go struct gives them.
EMPTY_STATUS = "V1CustomResourceSubresourceStatus"
ANY = {
    ("V1ManagedFieldsEntry", "fieldsV1"): "JSON",
    ("V1JSONSchemaProps", "default"): "JSON",
    ("V1JSONSchemaProps", "example"): "JSON",
    ("V1JSONSchemaProps", "enum"): "[]JSON",
    ("V1JSONSchemaProps", "items"): "SchemaOrArray",
    ("V1JSONSchemaProps", "additionalItems"): "SchemaOrBool",
    ("V1JSONSchemaProps", "additionalProperties"): "SchemaOrBool",
    ("V1JSONSchemaProps", "dependencies"): "map[string]SchemaOrStringArray",
    ("V1CustomResourceSubresources", "status"): EMPTY_STATUS,
}

# Embedded Go structs (json:",inline"): the fields each brings in.
LOCAL_REF = {"LocalObjectReference": ["name"]}
INLINE = {
    "V1Probe": {"ProbeHandler": ["exec", "grpc", "httpGet", "tcpSocket"]},
    "V1SecretProjection": LOCAL_REF, "V1ConfigMapProjection": LOCAL_REF,
    "V1SecretKeySelector": LOCAL_REF, "V1ConfigMapKeySelector": LOCAL_REF,
    "V1SecretEnvSource": LOCAL_REF, "V1ConfigMapEnvSource": LOCAL_REF,
    "V1ConfigMapVolumeSource": LOCAL_REF,
}
# Embedded structs that bring in every field but the ones listed.
INLINE_ALL_BUT = {
    "V1Volume": ("VolumeSource", ["name"]),
    "V1EphemeralContainer": ("EphemeralContainerCommon", ["targetContainerName"]),
}
SCALARS = {("string", ""): "string", ("boolean", ""): "bool",
           ("number", "int32"): "int32", ("number", "int64"): "int64",
           ("number", "double"): "float64",
           ("Date", "date-time"): "Time", ("V1MicroTime", "date-time-micro"): "MicroTime",
           ("IntOrString", "int-or-string"): "IntOrString", ("string", "byte"): "bytes"}


class GenError(Exception):
    pass


def load_models(folder):
    """Every model's attribute list, by class name."""
    models = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.js"))):
        with open(path, encoding="utf-8") as f:
            m = MODEL_RE.search(f.read())
        if m:
            models[m.group(1)] = json.loads(m.group(2))
    if not models:
        raise GenError("no models under %s" % folder)
    return models


def go_name(cls):
    """The Go struct name of a model: V1PodSpec -> PodSpec,
    CoreV1Event -> Event, ApiextensionsV1ServiceReference ->
    ServiceReference."""
    name = re.sub(r"^(?:[A-Z][a-z]+)?V\d+(?:(?:alpha|beta)\d+)?(?=[A-Z])", "", cls)
    if name == cls:
        raise GenError("cannot name the Go type of model %s" % cls)
    return name


def expr(attr, models):
    """The type expression of one JS attribute (before the tables)."""
    t, fmt = attr["type"], attr["format"]
    m = re.fullmatch(r"Array<(.+)>", t)
    if m:
        return "[]" + expr({"type": m.group(1), "format": fmt}, models)
    m = re.fullmatch(r"\{ \[key: string\]: (.+); \}", t)
    if m:
        return "map[string]" + expr({"type": m.group(1), "format": fmt}, models)
    if (t, fmt) in SCALARS:
        return SCALARS[(t, fmt)]
    if t in models:
        return t
    if t == "any":
        return "any"
    raise GenError("unknown JS type %r (format %r)" % (t, fmt))


def field_type(cls, attr, models):
    """The type of one field after the tables: an expression, or
    [expression, Go type] when the Go type has a name of its own."""
    key = (cls, attr["baseName"])
    e = expr(attr, models)
    if key in ANY:
        if "any" not in e:
            raise GenError("%s.%s is %s, not any" % (key + (e,)))
        e = ANY[key]
    if "any" in e:
        raise GenError("%s.%s is any: say in ANY what Go type it is" % key)
    if key in MICRO_TIME and e != "MicroTime":
        raise GenError("%s.%s should be MicroTime, is %s" % (key + (e,)))
    if key in QUANTITY:
        if e not in ("string", "map[string]string"):
            raise GenError("%s.%s should be a string quantity, is %s" % (key + (e,)))
        if e.startswith("map"):
            return ["map[string]Quantity", "v1.ResourceList"]
        e = "Quantity"
    if key in GO_TYPE:
        base = e.split("]")[-1]
        if base not in ("string", "Quantity", "SchemaOrStringArray") and base not in models:
            raise GenError("%s.%s is %s, cannot be Go type %s" % (key + (e, GO_TYPE[key])))
        return [e, GO_TYPE[key]]
    return e


def reachable(models):
    """The model classes reachable from KINDS, with their field types."""
    types, todo = {}, sorted(set(KINDS.values()))
    while todo:
        cls = todo.pop()
        if cls in types:
            continue
        if cls == EMPTY_STATUS:
            types[cls] = {"go": go_name(cls), "fields": {}}
            continue
        if cls not in models:
            raise GenError("no model %s" % cls)
        fields = {}
        for attr in models[cls]:
            ft = field_type(cls, attr, models)
            fields[attr["baseName"]] = ft
            e = ft[0] if isinstance(ft, list) else ft
            base = e.split("]")[-1]
            if base[:1].isupper() and base not in ("Time", "MicroTime", "Quantity", "IntOrString",
                                                   "JSON", "SchemaOrBool", "SchemaOrArray",
                                                   "SchemaOrStringArray"):
                todo.append(base)
        types[cls] = {"go": go_name(cls), "fields": fields}
    return types


def add_inline(types):
    """Records which fields come through embedded Go structs."""
    for cls in KINDS.values():
        types[cls].setdefault("inline", {})["TypeMeta"] = ["apiVersion", "kind"]
    for cls, emb in INLINE.items():
        types[cls].setdefault("inline", {}).update(emb)
    for cls, (name, own) in INLINE_ALL_BUT.items():
        rest = sorted(f for f in types[cls]["fields"] if f not in own)
        types[cls].setdefault("inline", {})[name] = rest
    for cls, t in types.items():
        for name, fields in t.get("inline", {}).items():
            for f in fields:
                if f not in t["fields"]:
                    raise GenError("%s has no field %s to embed through %s" % (cls, f, name))


def check_tables(types):
    """Every table entry must name a reachable field: a stale entry means
    the models changed under it."""
    for table in (MICRO_TIME, QUANTITY, GO_TYPE, ANY):
        for cls, f in table:
            if f not in types.get(cls, {}).get("fields", {}):
                raise GenError("table entry %s.%s is not a reachable field" % (cls, f))


def render(doc):
    """Sorted keys, one type per line: small, and diffs read well."""
    lines = ["{", '"kinds": ' + json.dumps(doc["kinds"], sort_keys=True, indent=1) + ",",
             '"types": {']
    names = sorted(doc["types"])
    for i, name in enumerate(names):
        body = json.dumps(doc["types"][name], sort_keys=True, separators=(",", ":"))
        lines.append(" %s: %s%s" % (json.dumps(name), body, "," if i + 1 < len(names) else ""))
    lines.append("}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: gen_types.py MODELS_DIR > k8s_types.json\n")
        return 2
    try:
        models = load_models(argv[1])
        types = reachable(models)
        add_inline(types)
        check_tables(types)
    except GenError as e:
        sys.stderr.write("gen_types: %s\n" % e)
        return 1
    sys.stdout.write(render({"kinds": KINDS, "types": types}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
