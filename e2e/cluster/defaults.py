"""The defaults a real kube-apiserver fills into built-in objects, and what
its default admission plugins add to them, so that an object read back
from the local test cluster carries the same fields, with the same values,
as one read back from a real cluster. An operator compares the spec it
wants with the spec it reads; if the defaults differ here, it loops there.

The pod's part (its defaults, the Priority, DefaultTolerationSeconds and
ServiceAccount admission plugins, its QoS class and PrepareForCreate, and
the pod template defaults a Deployment uses) is in defaults_pod.py; this
module holds the other kinds and the tables, and answers to the pod names
callers use here too (defaults.default_pod, defaults.add_service_account_token,
defaults.priority_refusal, defaults.pod_qos_class).

Followed: Kubernetes 1.31, with its default feature gates and its default
admission plugins, on a single-stack IPv4 cluster (a kind cluster's shape).
Each function names the Go code it copies; the paths are in
k8s.io/kubernetes unless they start with k8s.io/.

Where each part comes from:

  default_service        SetDefaults_Service; pkg/registry/core/service/storage
                         (patchAllocatedValues, normalizeClusterIPs, initIPFamilyFields,
                         allocClusterIPs)
  default_namespace      SetDefaults_Namespace, SetDefaults_NamespaceStatus
  default_secret         SetDefaults_Secret; Convert_v1_Secret_To_core_Secret (stringData)
  default_pvc            SetDefaults_PersistentVolumeClaim(Spec), SetDefaults_ResourceList
  default_endpoints      SetDefaults_Endpoints
  default_network_policy pkg/apis/networking/v1/defaults.go
  default_deployment     pkg/apis/apps/v1/defaults.go, zz_generated.defaults.go
  default_pdb            none in pkg/apis/policy/v1: the serializer's status counters
  default_role_binding   pkg/apis/rbac/v1/defaults.go
  unchanged              ConfigMap, ServiceAccount, Event, Lease, Role, ClusterRole: none
  prepare_*_for_create   pkg/registry/*/strategy.go PrepareForCreate; the PVC's finalizer
                         from plugin/pkg/admission/storage/storageobjectinuseprotection
  default_pod, ...       defaults_pod.py
  quantity.py            k8s.io/apimachinery/pkg/api/resource

Two tables, keyed "<group/version>/<Kind>" ("v1/Pod", "apps/v1/Deployment"):

- DEFAULTERS: what decoding a body applies on every create and update (the
  scheme's SetObjectDefaults_*, pkg/apis/*/v1/zz_generated.defaults.go),
  plus the mutating admission that runs on every pod write (Priority,
  DefaultTolerationSeconds) and, for a Service, the registry's IP family
  and cluster IP handling (pkg/registry/core/service/storage). Every
  entry takes (obj, old=None), old being the stored object on an update;
  the Service's also takes allocate_ip (default_object passes it).
- PREPARE_FOR_CREATE: what a kind's registry strategy does on create only
  (PrepareForCreate: a reset status, the namespace's "kubernetes"
  finalizer, a claim's protection finalizer, metadata.generation 1). Call
  it after the defaults.

The ServiceAccount admission plugin is add_service_account_token
(defaults_pod.py), for the admission stage to call once it has looked the
ServiceAccount up.

Quantities are rewritten in their canonical form (quantity.py), as the
real serializer writes them. Fields the real serializer always writes
although nobody set them (a Service's "status": {"loadBalancer": {}}, a
template's "creationTimestamp": null) are written here too, where the
defaulted types hold them.

Not covered: zero values the real serializer omits, the LimitRanger and
DefaultStorageClass admission plugins (no LimitRange or default
StorageClass exists in the local cluster), node ports, a Service whose
type changes to ExternalName, the apps kinds other than Deployment, and
what defaults_pod.py leaves out of pods.

Standard library only: this is part of the local test cluster.
"""
import base64
import copy

import quantity
from defaults_pod import (add_service_account_token, default_claim_spec, default_pod,
                          default_pod_template, pod_qos_class, prepare_pod_for_create,
                          priority_refusal, unset)

# The API, in groups. The pod's entries are defaults_pod.py's, named here
# for the callers that reach every kind through this module.
__all__ = [
    # decoding: every create and update
    "DEFAULTERS", "gvk_key", "default_object",
    "default_service", "default_namespace", "default_secret", "default_pvc",
    "default_endpoints", "default_network_policy", "default_deployment", "default_pdb",
    "default_role_binding", "unchanged", "default_configmap", "default_service_account",
    "default_core_event", "default_lease", "default_role",
    # create only, after the defaults
    "PREPARE_FOR_CREATE", "prepare_for_create", "prepare_namespace_for_create",
    "prepare_service_for_create", "prepare_pvc_for_create",
    # pods, from defaults_pod.py
    "default_pod", "add_service_account_token", "priority_refusal", "pod_qos_class",
    "prepare_pod_for_create",
    # constants
    "PRIMARY_IP_FAMILY", "RBAC_GROUP",
]

PRIMARY_IP_FAMILY = "IPv4"
RBAC_GROUP = "rbac.authorization.k8s.io"


# --- services ---

def _same_cluster_ips(a, b):
    return list(a.get("clusterIPs") or []) == list(b.get("clusterIPs") or [])


def _patch_allocated_values(spec, old_spec):
    """storage.patchAllocatedValues: a resubmitted manifest keeps the IP the
    server allocated on create."""
    if spec.get("type") != "ExternalName" and old_spec.get("type") != "ExternalName":
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            spec["clusterIPs"] = list(old_spec["clusterIPs"])


def _normalize_cluster_ips(spec, old_spec):
    """storage.normalizeClusterIPs: clusterIPs follows clusterIP."""
    if old_spec is None:
        if spec.get("clusterIP") and not spec.get("clusterIPs"):
            spec["clusterIPs"] = [spec["clusterIP"]]
        return
    if old_spec.get("clusterIPs") and not spec.get("clusterIPs") and \
            old_spec.get("clusterIP") == spec.get("clusterIP"):
        spec["clusterIPs"] = list(old_spec["clusterIPs"])
    if (old_spec.get("clusterIP") or "") != (spec.get("clusterIP") or ""):
        if old_spec.get("clusterIP") and not spec.get("clusterIP"):
            if _same_cluster_ips(old_spec, spec):
                spec.pop("clusterIPs", None)
        elif _same_cluster_ips(old_spec, spec):
            spec["clusterIPs"] = [spec["clusterIP"]]


def _ip_family(ip):
    return "IPv6" if ":" in ip else "IPv4"


def _init_ip_family_fields(spec, old_spec):
    """storage.Allocators.initIPFamilyFields on a single-stack IPv4 cluster.
    A headless Service without a selector is the one that gets
    RequireDualStack and both families, even here."""
    if spec.get("type") == "ExternalName":
        return
    headless_no_selector = spec.get("clusterIP") == "None" and not spec.get("selector")
    if spec.get("ipFamilyPolicy") is None:
        if old_spec is not None and old_spec.get("ipFamilyPolicy") is not None:
            spec["ipFamilyPolicy"] = old_spec["ipFamilyPolicy"]
        elif headless_no_selector:
            spec["ipFamilyPolicy"] = "RequireDualStack"
        else:
            spec["ipFamilyPolicy"] = "SingleStack"
    families = list(spec.get("ipFamilies") or [])
    for i, ip in enumerate(spec.get("clusterIPs") or []):
        if ip == "None":
            break
        if i >= len(families) and isinstance(ip, str):
            families.append(_ip_family(ip))
    if not families:
        families = [PRIMARY_IP_FAMILY]
    if headless_no_selector and len(families) < 2 and spec["ipFamilyPolicy"] != "SingleStack":
        families.append("IPv6" if families[0] == "IPv4" else "IPv4")
    spec["ipFamilies"] = families


def _allocate_cluster_ips(spec, allocate_ip):
    """storage.Allocators.allocClusterIPs: one address per family, from the
    caller's range; headless and ExternalName Services get none. Only the
    primary family has a range here, and an address the client asked for
    is the caller's to reserve."""
    if spec.get("type") == "ExternalName" or allocate_ip is None:
        return
    ips = list(spec.get("clusterIPs") or [])
    if ips and ips[0] == "None":
        return
    for i, family in enumerate(spec.get("ipFamilies") or []):
        if i >= len(ips):
            ips.append("")
        if not ips[i] and family == PRIMARY_IP_FAMILY:
            ips[i] = allocate_ip()
    if ips:
        spec["clusterIPs"] = ips
        spec["clusterIP"] = ips[0]


def default_service(svc, allocate_ip=None, old=None):
    """v1 Service: SetDefaults_Service (pkg/apis/core/v1/defaults.go), then
    what the Service registry does before storing it
    (pkg/registry/core/service/storage: patchAllocatedValues on an update,
    normalizeClusterIPs, initIPFamilyFields, allocClusterIPs), with
    allocate_ip() returning the next free address of the cluster's range;
    old is the stored Service of an update. In place; returns svc."""
    spec = svc.setdefault("spec", {})
    if unset(spec, "sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        client_ip = (spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}
        if client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    if unset(spec, "type"):
        spec["type"] = "ClusterIP"
    kind = spec["type"]
    for port in spec.get("ports") or []:
        if not isinstance(port, dict):
            continue
        if unset(port, "protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port", 0)
    if (kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and spec.get("externalIPs"))) \
            and unset(spec, "externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and kind in ("ClusterIP", "NodePort",
                                                              "LoadBalancer"):
        spec["internalTrafficPolicy"] = "Cluster"
    status = svc.get("status")
    if not isinstance(status, dict):
        status = svc["status"] = {}
    if not isinstance(status.get("loadBalancer"), dict):
        status["loadBalancer"] = {}
    if kind == "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is None:
            spec["allocateLoadBalancerNodePorts"] = True
        for ingress in status["loadBalancer"].get("ingress") or []:
            if ingress.get("ip") and ingress.get("ipMode") is None:
                ingress["ipMode"] = "VIP"
    old_spec = (old or {}).get("spec") or {} if old is not None else None
    if old_spec is not None:
        _patch_allocated_values(spec, old_spec)
    _normalize_cluster_ips(spec, old_spec)
    _init_ip_family_fields(spec, old_spec)
    _allocate_cluster_ips(spec, allocate_ip)
    return svc


# --- the other kinds ---

def default_namespace(ns, old=None):
    """v1 Namespace: SetDefaults_Namespace (the kubernetes.io/metadata.name
    label, on every write) and SetDefaults_NamespaceStatus (phase Active).
    The "kubernetes" finalizer is added on create only: PREPARE_FOR_CREATE."""
    meta = ns.setdefault("metadata", {})
    if meta.get("name"):
        if not isinstance(meta.get("labels"), dict):
            meta["labels"] = {}
        meta["labels"]["kubernetes.io/metadata.name"] = meta["name"]
    if not isinstance(ns.get("spec"), dict):
        ns["spec"] = {}
    if not isinstance(ns.get("status"), dict):
        ns["status"] = {}
    if unset(ns["status"], "phase"):
        ns["status"]["phase"] = "Active"
    return ns


def default_secret(secret, old=None):
    """v1 Secret: SetDefaults_Secret (type Opaque) and the v1 conversion,
    which writes stringData into data (stringData wins) and never returns
    stringData."""
    if unset(secret, "type"):
        secret["type"] = "Opaque"
    string_data = secret.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = secret.get("data")
        if not isinstance(data, dict):
            data = secret["data"] = {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
    return secret


def default_pvc(pvc, old=None):
    """v1 PersistentVolumeClaim: SetDefaults_PersistentVolumeClaim (phase
    Pending), SetDefaults_PersistentVolumeClaimSpec (volumeMode
    Filesystem), the ResourceLists."""
    if not isinstance(pvc.get("spec"), dict):
        pvc["spec"] = {}
    default_claim_spec(pvc["spec"])
    if not isinstance(pvc.get("status"), dict):
        pvc["status"] = {}
    status = pvc["status"]
    if unset(status, "phase"):
        status["phase"] = "Pending"
    quantity.canonical_list(status.get("capacity"))
    quantity.canonical_list(status.get("allocatedResources"))
    return pvc


def default_endpoints(ep, old=None):
    """v1 Endpoints: SetDefaults_Endpoints (port protocol TCP)."""
    for subset in ep.get("subsets") or []:
        for port in (subset.get("ports") or []) if isinstance(subset, dict) else []:
            if isinstance(port, dict) and unset(port, "protocol"):
                port["protocol"] = "TCP"
    return ep


def default_network_policy(np, old=None):
    """networking.k8s.io/v1 NetworkPolicy: SetDefaults_NetworkPolicy
    (policyTypes ["Ingress"], plus "Egress" when egress rules are given)
    and SetDefaults_NetworkPolicyPort (protocol TCP), from
    pkg/apis/networking/v1/defaults.go. podSelector is a struct the
    serializer always writes."""
    spec = np.setdefault("spec", {})
    if not isinstance(spec.get("podSelector"), dict):
        spec["podSelector"] = {}
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in (rule.get("ports") or []) if isinstance(rule, dict) else []:
                if isinstance(port, dict) and port.get("protocol") is None:
                    port["protocol"] = "TCP"
    return np


def default_deployment(deploy, old=None):
    """apps/v1 Deployment: SetDefaults_Deployment (pkg/apis/apps/v1/defaults.go:
    replicas 1, RollingUpdate 25%/25%, revisionHistoryLimit 10,
    progressDeadlineSeconds 600) and the pod template's PodSpec defaults
    (pkg/apis/apps/v1/zz_generated.defaults.go)."""
    spec = deploy.setdefault("spec", {})
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if not isinstance(spec.get("strategy"), dict):
        spec["strategy"] = {}
    strategy = spec["strategy"]
    if unset(strategy, "type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        if not isinstance(strategy.get("rollingUpdate"), dict):
            strategy["rollingUpdate"] = {}
        for field in ("maxUnavailable", "maxSurge"):
            if strategy["rollingUpdate"].get(field) is None:
                strategy["rollingUpdate"][field] = "25%"
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
    if not isinstance(spec.get("template"), dict):
        spec["template"] = {}
    default_pod_template(spec["template"])
    if not isinstance(deploy.get("status"), dict):
        deploy["status"] = {}
    return deploy


def default_replica_set(rs, old=None):
    """apps/v1 ReplicaSet: SetDefaults_ReplicaSet (replicas 1) and the pod
    template's PodSpec defaults; status.replicas has no omitempty."""
    spec = rs.setdefault("spec", {})
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if not isinstance(spec.get("template"), dict):
        spec["template"] = {}
    default_pod_template(spec["template"])
    if not isinstance(rs.get("status"), dict):
        rs["status"] = {}
    rs["status"].setdefault("replicas", 0)
    return rs


def default_pdb(pdb, old=None):
    """policy/v1 PodDisruptionBudget: no defaulting functions; the status
    counters have no omitempty, so the serializer always writes them."""
    if not isinstance(pdb.get("spec"), dict):
        pdb["spec"] = {}
    if not isinstance(pdb.get("status"), dict):
        pdb["status"] = {}
    for field in ("currentHealthy", "desiredHealthy", "disruptionsAllowed", "expectedPods"):
        pdb["status"].setdefault(field, 0)
    return pdb


def default_role_binding(binding, old=None):
    """rbac.authorization.k8s.io/v1 RoleBinding and ClusterRoleBinding:
    SetDefaults_RoleBinding, SetDefaults_ClusterRoleBinding and
    SetDefaults_Subject (pkg/apis/rbac/v1/defaults.go)."""
    ref = binding.get("roleRef")
    if not isinstance(ref, dict):
        ref = binding["roleRef"] = {}
    if unset(ref, "apiGroup"):
        ref["apiGroup"] = RBAC_GROUP
    for subject in binding.get("subjects") or []:
        if isinstance(subject, dict) and unset(subject, "apiGroup") and \
                subject.get("kind") in ("User", "Group"):
            subject["apiGroup"] = RBAC_GROUP
    return binding


def default_resource_quota(rq, old=None):
    """v1 ResourceQuota: SetDefaults_ResourceList on spec.hard, status.hard
    and status.used."""
    for part, field in (("spec", "hard"), ("status", "hard"), ("status", "used")):
        if isinstance(rq.get(part), dict) and isinstance(rq[part].get(field), dict):
            quantity.canonical_list(rq[part][field])
    return rq


LIMIT_FIELDS = ("default", "defaultRequest", "max", "min", "maxLimitRequestRatio")


def default_limit_range(lr, old=None):
    """v1 LimitRange: SetDefaults_LimitRangeItem (for a Container limit: the
    default limit from max, the default request from the default limit,
    else from min) and SetDefaults_ResourceList on each list."""
    for item in (lr.get("spec") or {}).get("limits") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "Container":
            default = dict(item.get("default") or {})
            request = dict(item.get("defaultRequest") or {})
            for k, q in (item.get("max") or {}).items():
                default.setdefault(k, q)
            for k, q in default.items():
                request.setdefault(k, q)
            for k, q in (item.get("min") or {}).items():
                request.setdefault(k, q)
            for field, value in (("default", default), ("defaultRequest", request)):
                if value:
                    item[field] = value
        for field in LIMIT_FIELDS:
            if isinstance(item.get(field), dict):
                quantity.canonical_list(item[field])
    return lr


def unchanged(obj, old=None):
    """The kinds with no defaulting at all in 1.31: ConfigMap
    (SetDefaults_ConfigMap only makes an empty data map, which the
    serializer omits), ServiceAccount, Event, Lease, Role, ClusterRole."""
    return obj


default_configmap = default_service_account = default_core_event = unchanged
default_lease = default_role = unchanged

DEFAULTERS = {
    "v1/Pod": default_pod,
    "v1/Service": default_service,
    "v1/Namespace": default_namespace,
    "v1/Secret": default_secret,
    "v1/ConfigMap": default_configmap,
    "v1/ServiceAccount": default_service_account,
    "v1/Event": default_core_event,
    "v1/Endpoints": default_endpoints,
    "v1/PersistentVolumeClaim": default_pvc,
    "v1/ResourceQuota": default_resource_quota,
    "v1/LimitRange": default_limit_range,
    "events.k8s.io/v1/Event": unchanged,
    "coordination.k8s.io/v1/Lease": default_lease,
    "networking.k8s.io/v1/NetworkPolicy": default_network_policy,
    "apps/v1/Deployment": default_deployment,
    "apps/v1/ReplicaSet": default_replica_set,
    "policy/v1/PodDisruptionBudget": default_pdb,
    "rbac.authorization.k8s.io/v1/Role": default_role,
    "rbac.authorization.k8s.io/v1/ClusterRole": default_role,
    "rbac.authorization.k8s.io/v1/RoleBinding": default_role_binding,
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": default_role_binding,
}


def gvk_key(obj):
    """The table key of obj: "<apiVersion>/<kind>"."""
    return "%s/%s" % (obj.get("apiVersion", ""), obj.get("kind", ""))


def default_object(obj, old=None, allocate_ip=None):
    """Runs obj's DEFAULTERS entry (old: the stored object of an update;
    allocate_ip: for a Service). A kind without an entry is left as it
    is. Returns obj."""
    key = gvk_key(obj)
    if key == "v1/Service":
        return default_service(obj, allocate_ip, old)
    fn = DEFAULTERS.get(key)
    return fn(obj, old) if fn else obj


# --- create only: the registry strategies' PrepareForCreate ---

def prepare_namespace_for_create(ns, now=None):
    """pkg/registry/core/namespace/strategy.go, PrepareForCreate: phase
    Active and the "kubernetes" finalizer (on create only: the namespace
    controller removes it through /finalize)."""
    ns["status"] = {"phase": "Active"}
    spec = ns.get("spec")
    if not isinstance(spec, dict):
        spec = ns["spec"] = {}
    finalizers = list(spec.get("finalizers") or [])
    if "kubernetes" not in finalizers:
        finalizers.append("kubernetes")
    spec["finalizers"] = finalizers
    return ns


def prepare_service_for_create(svc, now=None):
    """pkg/registry/core/service/strategy.go: a new Service has no status."""
    svc["status"] = {"loadBalancer": {}}
    return svc


def prepare_pvc_for_create(pvc, now=None):
    """pkg/registry/core/persistentvolumeclaim/strategy.go (status reset;
    the phase comes back as Pending from the defaults) and the
    StorageObjectInUseProtection admission plugin (its finalizer)."""
    pvc["status"] = {"phase": "Pending"}
    meta = pvc.setdefault("metadata", {})
    finalizers = list(meta.get("finalizers") or [])
    if "kubernetes.io/pvc-protection" not in finalizers:
        finalizers.append("kubernetes.io/pvc-protection")
    meta["finalizers"] = finalizers
    return pvc


def _generation_one(reset_status):
    """PrepareForCreate of the kinds that keep metadata.generation."""
    def prepare(obj, now=None):
        obj.setdefault("metadata", {})["generation"] = 1
        if reset_status is not None:
            obj["status"] = copy.deepcopy(reset_status)
        return obj
    return prepare


PREPARE_FOR_CREATE = {
    "v1/Pod": prepare_pod_for_create,
    "v1/Namespace": prepare_namespace_for_create,
    "v1/Service": prepare_service_for_create,
    "v1/PersistentVolumeClaim": prepare_pvc_for_create,
    "networking.k8s.io/v1/NetworkPolicy": _generation_one(None),
    "apps/v1/Deployment": _generation_one({}),
    "apps/v1/ReplicaSet": _generation_one({"replicas": 0}),
    "policy/v1/PodDisruptionBudget": _generation_one(
        {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}),
}


def prepare_for_create(obj, now=None):
    """Runs obj's PREPARE_FOR_CREATE entry, if any. Returns obj."""
    fn = PREPARE_FOR_CREATE.get(gvk_key(obj))
    return fn(obj, now) if fn else obj
