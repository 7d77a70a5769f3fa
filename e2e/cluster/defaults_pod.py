"""The defaults a real kube-apiserver fills into a pod and into the pod
template of a workload, and what its default admission plugins add to a
pod, so that a pod read back from the local test cluster carries the same
fields, with the same values, as one read back from a real cluster. The
other kinds, and the tables through which the API server reaches both, are
in defaults.py, which also answers to the names callers use from here
(defaults.default_pod, defaults.add_service_account_token, ...).

Followed: Kubernetes 1.31, with its default feature gates and its default
admission plugins, on a single-stack IPv4 cluster (a kind cluster's shape).
Each function names the Go code it copies; the paths are in
k8s.io/kubernetes unless they start with k8s.io/.

Where each part comes from:

  default_pod            SetObjectDefaults_Pod: SetDefaults_Pod, SetDefaults_PodSpec,
                         SetDefaults_Volume and the volume sources', SetDefaults_Container,
                         SetDefaults_Probe, SetDefaults_HTTPGetAction,
                         SetDefaults_ObjectFieldSelector, SetDefaults_ResourceList
                         (pkg/apis/core/v1/defaults.go, zz_generated.defaults.go); the
                         serviceAccount and podIP(s) aliases of pkg/apis/core/v1/conversion.go;
                         plugin/pkg/admission/priority and .../defaulttolerationseconds
  default_pod_template   SetObjectDefaults_PodTemplate's PodSpec part, which the
                         workloads' defaulters run (defaults.default_deployment)
  default_claim_spec     SetDefaults_PersistentVolumeClaimSpec, SetDefaults_ResourceList:
                         an ephemeral volume's claim template here, a PVC's spec in
                         defaults.default_pvc
  add_service_account_token
                         plugin/pkg/admission/serviceaccount (Admit, mountServiceAccountToken,
                         TokenVolumeSource)
  priority_refusal       plugin/pkg/admission/priority (admitPod's refusals)
  pod_qos_class          pkg/apis/core/helper/qos.ComputePodQOS
  prepare_pod_for_create pkg/registry/core/pod/strategy.go PrepareForCreate
  image_tag              pkg/util/parsers.ParseImageName, github.com/distribution/reference
  quantity.py            k8s.io/apimachinery/pkg/api/resource

default_pod is what decoding a pod applies on every create and update,
plus the mutating admission that runs on every pod write (Priority,
DefaultTolerationSeconds); check priority_refusal before it. The
ServiceAccount admission plugin is add_service_account_token, for the
admission stage to call once it has looked the ServiceAccount up, and
prepare_pod_for_create runs on create only, after the defaults.

Quantities are rewritten in their canonical form (quantity.py), as the
real serializer writes them. Fields the real serializer always writes
although nobody set them (a container's "resources": {}, a template's
"creationTimestamp": null) are written here too.

Not covered: zero values the real serializer omits ("readOnly": false sent
by a client is kept here), the LimitRanger and RuntimeClass admission
plugins (no LimitRange or RuntimeClass exists in the local cluster),
matchLabelKeys merging in pod affinity, and AppArmor annotation syncing.

Standard library only: this is part of the local test cluster.
"""
import copy
import datetime
import random
import re

import quantity

DEFAULT_SCHEDULER = "default-scheduler"
TERMINATION_MESSAGE_PATH = "/dev/termination-log"
MODE_0644 = 420  # Secret, ConfigMap, DownwardAPI and Projected volumes
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_VOLUME_PREFIX = "kube-api-access-"
# serviceaccount.WarnOnlyBoundTokenExpirationSeconds: 1h7s, so that a
# token used past its hour is noticed, not refused.
TOKEN_EXPIRATION_SECONDS = 3607
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
# k8s.io/apimachinery/pkg/util/rand: no vowels, so no words.
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
# The PriorityClasses every cluster has (pkg/apis/scheduling); neither is
# the global default, so a pod without a class gets priority 0.
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": (2000001000, "PreemptLowerPriority"),
    "system-cluster-critical": (2000000000, "PreemptLowerPriority"),
}
# --default-not-ready-toleration-seconds and
# --default-unreachable-toleration-seconds.
DEFAULT_TOLERATION_SECONDS = 300
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"


def unset(d, key):
    """A Go pointer or string field nobody set: absent, null or ""."""
    return d.get(key) in (None, "")


# --- image references: pkg/util/parsers.ParseImageName ---

_DOMAIN = r"(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])" \
          r"(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*" \
          r"|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_PATH = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_REFERENCE = re.compile(
    r"^((?:%s/)?%s(?:/%s)*)(?::([\w][\w.-]{0,127}))?"
    r"(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$"
    % (_DOMAIN, _PATH, _PATH), re.ASCII)
_DIGEST_HEX = {"sha256": 64, "sha384": 96, "sha512": 128}


def image_tag(image):
    """The tag ParseImageName finds in image: the tag written, "latest"
    when neither a tag nor a digest is written, "" when only a digest is,
    and "" when image is not a valid reference (the real code ignores the
    error). github.com/distribution/reference, ParseNormalizedNamed."""
    if not isinstance(image, str) or not image or re.fullmatch(r"[a-f0-9]{64}", image):
        return ""
    first, slash, rest = image.partition("/")
    if not slash or ("." not in first and ":" not in first and first != "localhost"
                     and first.lower() == first):
        domain, remainder = "docker.io", image
    else:
        domain, remainder = first, rest
    if domain == "index.docker.io":
        domain = "docker.io"
    if domain == "docker.io" and "/" not in remainder:
        remainder = "library/" + remainder
    if remainder.split(":", 1)[0].lower() != remainder.split(":", 1)[0]:
        return ""  # "repository name must be lowercase"
    m = _REFERENCE.match(domain + "/" + remainder)
    if not m or len(m.group(1)) > 255:
        return ""
    tag, digest = m.group(2) or "", m.group(3) or ""
    if digest:
        algorithm, hexpart = digest.split(":", 1)
        if _DIGEST_HEX.get(algorithm) != len(hexpart) or hexpart != hexpart.lower():
            return ""  # digest.Parse refuses it, and so the whole name
    return tag or ("" if digest else "latest")


# --- the nested defaulters of pkg/apis/core/v1 (defaults.go) ---

def _default_field_ref(ref):
    """SetDefaults_ObjectFieldSelector."""
    if isinstance(ref, dict) and unset(ref, "apiVersion"):
        ref["apiVersion"] = "v1"


def _default_resource_field_ref(ref):
    """ResourceFieldSelector.divisor is a Quantity struct: the serializer
    writes "0" when nobody set it, and the canonical form otherwise."""
    if isinstance(ref, dict):
        ref["divisor"] = "0" if ref.get("divisor") is None else quantity.canonical(ref["divisor"])


def _default_downward_items(items):
    for item in items or []:
        if isinstance(item, dict):
            _default_field_ref(item.get("fieldRef"))
            _default_resource_field_ref(item.get("resourceFieldRef"))


def _default_http_get(action):
    """SetDefaults_HTTPGetAction."""
    if isinstance(action, dict):
        if unset(action, "path"):
            action["path"] = "/"
        if unset(action, "scheme"):
            action["scheme"] = "HTTP"


def _default_probe(probe):
    """SetDefaults_Probe, the HTTPGet handler's and the GRPC service's
    (+default="")."""
    if not isinstance(probe, dict):
        return
    for field, value in (("timeoutSeconds", 1), ("periodSeconds", 10),
                         ("successThreshold", 1), ("failureThreshold", 3)):
        if not probe.get(field):
            probe[field] = value
    _default_http_get(probe.get("httpGet"))
    if isinstance(probe.get("grpc"), dict) and probe["grpc"].get("service") is None:
        probe["grpc"]["service"] = ""


def _default_resources(resources):
    """SetDefaults_ResourceList on limits and requests; empty maps are
    omitted by the serializer, the struct itself never is."""
    for field in ("limits", "requests", "claims"):
        if field in resources and not resources[field]:
            del resources[field]
    quantity.canonical_list(resources.get("limits"))
    quantity.canonical_list(resources.get("requests"))


def _default_container(c):
    """SetDefaults_Container and what zz_generated.defaults.go runs on a
    container's ports, env, resources, probes and lifecycle hooks."""
    if unset(c, "imagePullPolicy"):
        c["imagePullPolicy"] = "Always" if image_tag(c.get("image")) == "latest" \
            else "IfNotPresent"
    if unset(c, "terminationMessagePath"):
        c["terminationMessagePath"] = TERMINATION_MESSAGE_PATH
    if unset(c, "terminationMessagePolicy"):
        c["terminationMessagePolicy"] = "File"
    for port in c.get("ports") or []:
        if isinstance(port, dict) and unset(port, "protocol"):
            port["protocol"] = "TCP"
    for env in c.get("env") or []:
        source = env.get("valueFrom") if isinstance(env, dict) else None
        if isinstance(source, dict):
            _default_field_ref(source.get("fieldRef"))
            _default_resource_field_ref(source.get("resourceFieldRef"))
    if not isinstance(c.get("resources"), dict):
        c["resources"] = {}
    _default_resources(c["resources"])
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(c.get(probe))
    lifecycle = c.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), dict):
                _default_http_get(lifecycle[hook].get("httpGet"))


def default_claim_spec(spec):
    """SetDefaults_PersistentVolumeClaimSpec, and the ResourceLists."""
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    if not isinstance(spec.get("resources"), dict):
        spec["resources"] = {}
    _default_resources(spec["resources"])


# Volume sources whose defaults are plain field values (defaults.go and
# the declarative +default tags), source -> ((field, value), ...).
_VOLUME_FIELD_DEFAULTS = {
    "hostPath": (("type", ""),),
    "secret": (("defaultMode", MODE_0644),),
    "configMap": (("defaultMode", MODE_0644),),
    "downwardAPI": (("defaultMode", MODE_0644),),
    "projected": (("defaultMode", MODE_0644),),
    "iscsi": (("iscsiInterface", "default"),),
    "rbd": (("pool", "rbd"), ("user", "admin"), ("keyring", "/etc/ceph/keyring")),
    "azureDisk": (("cachingMode", "ReadWrite"), ("kind", "Shared"), ("fsType", "ext4"),
                  ("readOnly", False)),
    "scaleIO": (("storageMode", "ThinProvisioned"), ("fsType", "xfs")),
}
# Of those, the fields that are Go strings rather than pointers: "" there
# means unset too.
_STRING_FIELDS = {("iscsi", "iscsiInterface"), ("rbd", "pool"), ("rbd", "user"),
                  ("rbd", "keyring"), ("scaleIO", "storageMode"), ("scaleIO", "fsType")}


def _default_volume(v):
    """SetDefaults_Volume (a volume with no source is an emptyDir) and the
    defaulters zz_generated.defaults.go runs on each source."""
    for key in [k for k in v if k != "name" and v[k] is None]:
        del v[key]  # null is a nil pointer: no source
    if len(v) == (1 if "name" in v else 0):
        v["emptyDir"] = {}
    for source, fields in _VOLUME_FIELD_DEFAULTS.items():
        src = v.get(source)
        if not isinstance(src, dict):
            continue
        for field, value in fields:
            if src.get(field) is None or ((source, field) in _STRING_FIELDS
                                          and src.get(field) == ""):
                src[field] = value
    if isinstance(v.get("downwardAPI"), dict):
        _default_downward_items(v["downwardAPI"].get("items"))
    if isinstance(v.get("projected"), dict):
        for proj in v["projected"].get("sources") or []:
            if not isinstance(proj, dict):
                continue
            if isinstance(proj.get("downwardAPI"), dict):
                _default_downward_items(proj["downwardAPI"].get("items"))
            token = proj.get("serviceAccountToken")
            if isinstance(token, dict) and token.get("expirationSeconds") is None:
                token["expirationSeconds"] = 3600  # SetDefaults_ServiceAccountTokenProjection
    empty_dir = v.get("emptyDir")
    if isinstance(empty_dir, dict) and empty_dir.get("sizeLimit") is not None:
        empty_dir["sizeLimit"] = quantity.canonical(empty_dir["sizeLimit"])
    ephemeral = v.get("ephemeral")
    if isinstance(ephemeral, dict) and isinstance(ephemeral.get("volumeClaimTemplate"), dict):
        template = ephemeral["volumeClaimTemplate"]
        _default_template_metadata(template)
        if not isinstance(template.get("spec"), dict):
            template["spec"] = {}
        default_claim_spec(template["spec"])


def _default_template_metadata(template):
    """An embedded ObjectMeta: the serializer writes its zero
    creationTimestamp as null (metav1.Time is a struct)."""
    if not isinstance(template.get("metadata"), dict):
        template["metadata"] = {}
    template["metadata"].setdefault("creationTimestamp", None)


def _mirror_service_account(spec):
    """pkg/apis/core/v1/conversion.go: serviceAccount is an alias of
    serviceAccountName (the newer field wins) and is always written as a
    copy of it."""
    name = spec.get("serviceAccountName") or spec.get("serviceAccount") or ""
    if name:
        spec["serviceAccountName"] = spec["serviceAccount"] = name
    else:
        spec.pop("serviceAccountName", None)
        spec.pop("serviceAccount", None)


def _requests_from_limits(c):
    """SetDefaults_Pod: a limit without a request is also the request."""
    limits = (c.get("resources") or {}).get("limits") if isinstance(c, dict) else None
    if isinstance(limits, dict):
        requests = c["resources"].setdefault("requests", {})
        if isinstance(requests, dict):
            for name, value in limits.items():
                requests.setdefault(name, copy.deepcopy(value))


def _default_pod_spec(spec, is_pod):
    """SetDefaults_Pod (is_pod: a Pod, not a template) and SetDefaults_PodSpec,
    then the volumes and containers as SetObjectDefaults_Pod and
    SetObjectDefaults_PodTemplate visit them."""
    if is_pod:
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            _requests_from_limits(c)
        if spec.get("enableServiceLinks") is None:
            spec["enableServiceLinks"] = True
        if spec.get("hostNetwork"):
            for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
                for port in (c.get("ports") or []) if isinstance(c, dict) else []:
                    if isinstance(port, dict) and not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort", 0)
    if unset(spec, "dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if unset(spec, "restartPolicy"):
        spec["restartPolicy"] = "Always"
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if unset(spec, "schedulerName"):
        spec["schedulerName"] = DEFAULT_SCHEDULER
    for v in spec.get("volumes") or []:
        if isinstance(v, dict):
            _default_volume(v)
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(field) or []:
            if isinstance(c, dict):
                _default_container(c)
    quantity.canonical_list(spec.get("overhead"))
    _mirror_service_account(spec)


def default_pod_template(template):
    """A PodTemplateSpec inside a workload: the PodSpec defaults without
    SetDefaults_Pod's (no enableServiceLinks, no requests from limits)."""
    _default_template_metadata(template)
    if not isinstance(template.get("spec"), dict):
        template["spec"] = {}
    _default_pod_spec(template["spec"], is_pod=False)


# --- pods ---

def _tolerates(tolerations, key):
    """Whether a toleration already covers the NoExecute taint key (an
    empty key or effect matches all), as DefaultTolerationSeconds asks."""
    for t in tolerations:
        if isinstance(t, dict) and t.get("key") in (None, "", key) and \
                t.get("effect") in (None, "", "NoExecute"):
            return True
    return False


def _admit_priority(spec, old_spec, classes):
    """plugin/pkg/admission/priority, admitPod. On create, a pod without a
    class gets the default: no PriorityClass is globalDefault, so priority
    0 and PreemptLowerPriority. What the real plugin refuses (an unknown
    class, a priority that disagrees with it) is priority_refusal's; an
    unknown class is left unresolved here."""
    if old_spec is not None:
        for field in ("priority", "preemptionPolicy"):
            if spec.get(field) is None and old_spec.get(field) is not None:
                spec[field] = old_spec[field]
        return
    name = spec.get("priorityClassName") or ""
    if not name:
        value, policy = 0, "PreemptLowerPriority"
    elif name in classes:
        value, policy = classes[name]
    else:
        return
    spec["priority"] = value
    if policy is not None:
        spec["preemptionPolicy"] = policy


def priority_refusal(pod, priority_classes=None):
    """Why the Priority plugin refuses to create pod, or None: the text
    after 'pods "<name>" is forbidden: ' in its 403. Check before
    default_pod, which resolves what this accepts."""
    spec = pod.get("spec") or {}
    classes = SYSTEM_PRIORITY_CLASSES if priority_classes is None else priority_classes
    name = spec.get("priorityClassName") or ""
    if name and name not in classes:
        return "no PriorityClass with name %s was found" % name
    value, policy = classes[name] if name else (0, "PreemptLowerPriority")
    if spec.get("priority") is not None and spec["priority"] != value:
        return ("the integer value of priority (%s) must not be provided in pod spec; priority "
                "admission controller computed %d from the given PriorityClass name"
                % (spec["priority"], value))
    if policy is not None and spec.get("preemptionPolicy") not in (None, policy):
        return ("the string value of PreemptionPolicy (%s) must not be provided in pod spec; "
                "priority admission controller computed %s from the given PriorityClass name"
                % (spec["preemptionPolicy"], policy))
    return None


def _admit_toleration_seconds(spec):
    """plugin/pkg/admission/defaulttolerationseconds: pods tolerate a
    not-ready or unreachable node for 300 s unless they say otherwise."""
    tolerations = spec.get("tolerations") or []
    for key in (NOT_READY_TAINT, UNREACHABLE_TAINT):
        if not _tolerates(tolerations, key):
            tolerations.append({"effect": "NoExecute", "key": key, "operator": "Exists",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
    spec["tolerations"] = tolerations


def _mirror_ips(status, one, many):
    """pkg/apis/core/v1/conversion.go, PodStatus: podIP is podIPs[0] (and
    hostIP hostIPs[0]); a podIP that disagrees with podIPs wins."""
    single, plural = status.get(one), status.get(many)
    first = plural[0] if isinstance(plural, list) and plural and \
        isinstance(plural[0], dict) else None
    if single and (first is None or first.get("ip") != single):
        status[many] = [{"ip": single}]
    elif first is not None and first.get("ip"):
        status[one] = first["ip"]


def default_pod(pod, old=None, priority_classes=None):
    """v1 Pod: SetObjectDefaults_Pod (pkg/apis/core/v1/zz_generated.defaults.go:
    SetDefaults_Pod, SetDefaults_PodSpec, SetDefaults_Volume and each
    source's, SetDefaults_Container, SetDefaults_Probe, SetDefaults_HTTPGetAction,
    SetDefaults_ObjectFieldSelector, SetDefaults_ResourceList), the v1
    conversion's serviceAccount and podIP mirroring, then the admission
    plugins Priority (priority_classes: name -> (value, preemptionPolicy),
    SYSTEM_PRIORITY_CLASSES when None; old: the stored pod of an update,
    whose priority carries over) and DefaultTolerationSeconds. The
    ServiceAccount plugin is add_service_account_token. In place; returns
    pod."""
    spec = pod.setdefault("spec", {})
    _default_pod_spec(spec, is_pod=True)
    classes = SYSTEM_PRIORITY_CLASSES if priority_classes is None else priority_classes
    _admit_priority(spec, (old or {}).get("spec") if old is not None else None, classes)
    _admit_toleration_seconds(spec)
    status = pod.get("status")
    if not isinstance(status, dict):
        status = pod["status"] = {}
    _mirror_ips(status, "podIP", "podIPs")
    _mirror_ips(status, "hostIP", "hostIPs")
    for field in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(field) or []:
            if isinstance(cs, dict):
                quantity.canonical_list(cs.get("allocatedResources"))
                if isinstance(cs.get("resources"), dict):
                    _default_resources(cs["resources"])
    return pod


def token_volume_source():
    """plugin/pkg/admission/serviceaccount, TokenVolumeSource: the bound
    token, the cluster's CA and the pod's namespace."""
    return {"defaultMode": MODE_0644, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS,
                                 "path": "token"}},
        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}],
                       "name": "kube-root-ca.crt"}},
        {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1",
                                                 "fieldPath": "metadata.namespace"},
                                    "path": "namespace"}]}},
    ]}


def add_service_account_token(pod, sa, rng=None):
    """The ServiceAccount admission plugin on a pod create
    (plugin/pkg/admission/serviceaccount, Admit and mountServiceAccountToken),
    once the caller has checked that the ServiceAccount exists (the real
    plugin refuses the pod with 403 otherwise): serviceAccountName
    "default" when none is named; unless the pod (first) or sa says
    automountServiceAccountToken: false, a kube-api-access-<5 characters>
    projected volume, mounted read-only at TOKEN_MOUNT_PATH in every init
    container and container that has nothing mounted there; the SA's
    imagePullSecrets when the pod has none. sa is the ServiceAccount
    object, or None for one that says nothing. rng (a random.Random) picks
    the suffix. A mirror pod is left alone. In place; returns pod."""
    spec = pod.setdefault("spec", {})
    if MIRROR_POD_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {}):
        return pod
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec.get("serviceAccount") or "default"
    _mirror_service_account(spec)
    sa = sa or {}
    automount = spec.get("automountServiceAccountToken")
    if automount is None:
        automount = sa.get("automountServiceAccountToken")
    if automount is not False:
        _mount_token(spec, rng or random.Random())
    if not spec.get("imagePullSecrets") and sa.get("imagePullSecrets"):
        spec["imagePullSecrets"] = [{"name": s.get("name", "")}
                                    for s in sa["imagePullSecrets"] if isinstance(s, dict)]
    return pod


def _mount_token(spec, rng):
    volumes = spec.get("volumes") or []
    existing = next((v["name"] for v in volumes if isinstance(v, dict) and
                     str(v.get("name", "")).startswith(TOKEN_VOLUME_PREFIX)), None)
    name = existing or TOKEN_VOLUME_PREFIX + "".join(rng.choice(NAME_ALPHABET)
                                                     for _ in range(5))
    needed = False
    for field in ("initContainers", "containers"):
        for c in spec.get(field) or []:
            if not isinstance(c, dict):
                continue
            mounts = c.get("volumeMounts") or []
            if any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH
                   for m in mounts):
                continue
            mounts.append({"mountPath": TOKEN_MOUNT_PATH, "name": name, "readOnly": True})
            c["volumeMounts"] = mounts
            needed = True
    if needed and existing is None:
        volumes.append({"name": name, "projected": token_volume_source()})
        spec["volumes"] = volumes


def pod_qos_class(pod):
    """pkg/apis/core/helper/qos, ComputePodQOS (1.31: containers and init
    containers, cpu and memory only, quantities compared by value)."""
    spec = pod.get("spec") or {}
    requests, limits, guaranteed = {}, {}, True
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        resources = (c.get("resources") or {}) if isinstance(c, dict) else {}
        for kind, total in (("requests", requests), ("limits", limits)):
            found = set()
            for name, q in (resources.get(kind) or {}).items():
                v = quantity.value(q)
                if name in ("cpu", "memory") and v is not None and v > 0:
                    total[name] = total.get(name, 0) + v
                    found.add(name)
            if kind == "limits" and found != {"cpu", "memory"}:
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(n) == v for n, v in requests.items()) and \
            len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


# --- create only: the pod strategy's PrepareForCreate ---

def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def prepare_pod_for_create(pod, now=None):
    """pkg/registry/core/pod/strategy.go, PrepareForCreate: the status is
    phase Pending and the computed QoS class, plus a PodScheduled=False
    condition (reason SchedulingGated) when scheduling gates are set; now
    is its lastTransitionTime (RFC 3339, the current time when None)."""
    pod["status"] = {"phase": "Pending", "qosClass": pod_qos_class(pod)}
    if (pod.get("spec") or {}).get("schedulingGates"):
        pod["status"]["conditions"] = [{
            "lastProbeTime": None, "lastTransitionTime": now or _now(),
            "message": "Scheduling is blocked due to non-empty scheduling gates",
            "reason": "SchedulingGated", "status": "False", "type": "PodScheduled"}]
    return pod
