"""What the real kube-apiserver refuses in a Pod, on create and on update
(k8s.io/kubernetes pkg/apis/core/validation ValidatePodCreate,
ValidatePodSpec, ValidatePodUpdate, at Kubernetes v1.33; conventions in
validation.py). Volumes are in validation_volume.py, containers in
validation_container.py.

The pod is the v1 JSON after the server's defaults (restartPolicy,
dnsPolicy, terminationGracePeriodSeconds, each container's
terminationMessagePolicy and imagePullPolicy, ports' protocol, probes'
thresholds, fieldRef apiVersion...), which is what the real server
validates; a pod that skipped defaulting is refused for the missing values,
as it would be there.

Left out, with what the real server does there: ephemeral containers'
contents (a create refuses any anyway), pod-level resources (alpha, off at
v1.33), Windows HostProcess checks, the seccomp and AppArmor annotation and
field agreement checks, the scheduler's toleration annotation, and node
affinity changes of scheduling-gated pods (refused here as any other spec
change).
"""
import json

import errors
import quantity
import validation as v
import validation_container as container_rules
import validation_volume as volume_rules

RESTART_POLICIES = ["Always", "OnFailure", "Never"]

DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]

UPDATABLE_POD_SPEC_FIELDS = [
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
    "negative)",
]

POD_UPDATE_PREFIX = ("pod updates may not change fields other than "
                     + ",".join(UPDATABLE_POD_SPEC_FIELDS))

SYSCTL_FMT = "([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?"

MIRROR_POD = "kubernetes.io/config.mirror"

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

SECCOMP_POD = "seccomp.security.alpha.kubernetes.io/pod"

SECCOMP_CONTAINER_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"

APPARMOR_PREFIX = "container.apparmor.security.beta.kubernetes.io/"

d_, l_, s_ = v.dict_of, v.list_of, v.str_of


def _one_of(value, allowed, path, ordered=None):
    if value in allowed:
        return []
    if not value:
        return [errors.required(path)]
    return [errors.not_supported(path, value, ordered or allowed)]


def _tolerations(tolerations, path):
    errs = []
    for i, t in enumerate(tolerations):
        idx = "%s[%d]" % (path, i)
        key, op = s_(t, "key"), s_(t, "operator")
        value, effect = s_(t, "value"), s_(t, "effect")
        if key:
            errs += v.validate_label_name(key, idx + ".key")
        if not key and op != "Exists":
            errs.append(errors.invalid(idx + ".operator", op, "operator must be Exists when `key` "
                                       "is empty, which means \"match all values and all keys\""))
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(errors.invalid(idx + ".effect", effect, "effect must be 'NoExecute' when "
                                       "`tolerationSeconds` is set"))
        if op in ("Equal", ""):
            msgs = v.is_valid_label_value(value)
            if msgs:
                errs.append(errors.invalid(idx + ".operator", value, ";".join(msgs)))
        elif op == "Exists":
            if value:
                errs.append(errors.invalid(idx + ".operator", value,
                                           "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(errors.not_supported(idx + ".operator", op, ["Equal", "Exists"]))
        if effect:
            errs += v.validate_taint_effect(effect, True, idx + ".effect")
    return errs


def _sysctl_namespace(name):
    name = name.replace("/", ".")
    if name.startswith("net."):
        return "net"
    if name.startswith(("kernel.shm", "kernel.msg", "fs.mqueue.")) or name == "kernel.sem":
        return "ipc"
    return ""


def _pod_security_context(spec, path):
    sc = spec.get("securityContext")
    if not isinstance(sc, dict):
        return []
    errs = []
    for field in ("fsGroup", "runAsUser", "runAsGroup"):
        if v.int_of(sc, field) is not None:
            errs += v.invalid_each(path + "." + field, sc[field], v.is_valid_id(sc[field]))
    for i, gid in enumerate(l_(sc, "supplementalGroups")):
        errs += v.invalid_each("%s.supplementalGroups[%d]" % (path, i), gid, v.is_valid_id(gid))
    if sc.get("shareProcessNamespace") is True and spec.get("hostPID") is True:
        errs.append(errors.invalid(path + ".shareProcessNamespace", True,
                                   "ShareProcessNamespace and HostPID cannot both be enabled"))
    names = set()
    for i, sysctl in enumerate(l_(sc, "sysctls")):
        idx = "%s.sysctls[%d].name" % (path, i)
        name = s_(sysctl, "name")
        if not name:
            errs.append(errors.required(idx))
        elif len(name) > 253 or not v.matches(SYSCTL_FMT, name):
            errs.append(errors.invalid(idx, name, "must have at most 253 characters and match "
                                       "regex ^%s$" % SYSCTL_FMT))
        elif name in names:
            errs.append(errors.duplicate(idx, name))
        if spec.get("hostNetwork") is True and _sysctl_namespace(name) == "net":
            errs.append(errors.invalid(idx, name,
                                       "may not be specified when 'hostNetwork' is true"))
        elif spec.get("hostIPC") is True and _sysctl_namespace(name) == "ipc":
            errs.append(errors.invalid(idx, name, "may not be specified when 'hostIPC' is true"))
        names.add(name)
    policy = sc.get("fsGroupChangePolicy")
    if policy is not None and policy not in ("Always", "OnRootMismatch"):
        errs.append(errors.not_supported(path + ".fsGroupChangePolicy", policy,
                                         ["Always", "OnRootMismatch"]))
    errs += container_rules.seccomp_profile(sc.get("seccompProfile"), path + ".seccompProfile")
    errs += container_rules.apparmor_profile(sc.get("appArmorProfile"), path + ".appArmorProfile")
    policy = sc.get("supplementalGroupsPolicy")
    if policy is not None and policy not in ("Merge", "Strict"):
        errs.append(errors.not_supported(path + ".supplementalGroupsPolicy", policy,
                                         ["Merge", "Strict"]))
    policy = sc.get("seLinuxChangePolicy")
    if policy is not None and policy not in ("MountOption", "Recursive"):
        errs.append(errors.not_supported(path + ".seLinuxChangePolicy", policy,
                                         ["MountOption", "Recursive"]))
    return errs


def _node_selector_requirement(req, path, allow_invalid_values):
    errs = []
    op, values = s_(req, "operator"), l_(req, "values")
    if op in ("In", "NotIn"):
        if not values:
            errs.append(errors.required(path + ".values", "must be specified when `operator` is "
                                        "'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(errors.forbidden(path + ".values", "may not be specified when `operator` "
                                         "is 'Exists' or 'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(errors.required(path + ".values", "must be specified single value when "
                                        "`operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(errors.invalid(path + ".operator", op, "not a valid selector operator"))
    errs += v.validate_label_name(s_(req, "key"), path + ".key")
    if not allow_invalid_values:
        for i, value in enumerate(values):
            errs += v.invalid_each("%s.values[%d]" % (path, i), value,
                                   v.is_valid_label_value(str(value)))
    return errs


def _node_field_requirement(req, path):
    errs = []
    if s_(req, "operator") in ("In", "NotIn"):
        if len(l_(req, "values")) != 1:
            errs.append(errors.required(path + ".values", "must be only one value when "
                                        "`operator` is 'In' or 'NotIn' for node field selector"))
    else:
        errs.append(errors.invalid(path + ".operator", s_(req, "operator"),
                                   "not a valid selector operator"))
    if s_(req, "key") != "metadata.name":
        errs.append(errors.invalid(path + ".key", s_(req, "key"),
                                   "not a valid field selector key"))
    else:
        for i, value in enumerate(l_(req, "values")):
            errs += v.invalid_each("%s.values[%d]" % (path, i), value,
                                   v.name_dns1123_subdomain(str(value)))
    return errs


def _node_selector_term(term, path, allow_invalid_values):
    errs = []
    for j, req in enumerate(l_(term, "matchExpressions")):
        errs += _node_selector_requirement(req, "%s.matchExpressions[%d]" % (path, j),
                                           allow_invalid_values)
    for j, req in enumerate(l_(term, "matchFields")):
        errs += _node_field_requirement(req, "%s.matchFields[%d]" % (path, j))
    return errs


def _weight(term, path):
    weight = v.int_of(term, "weight") or 0
    if not 1 <= weight <= 100:
        return [errors.invalid(path + ".weight", weight, "must be in the range 1-100")]
    return []


def _pod_affinity_term(term, path):
    errs = v.validate_label_selector(term.get("labelSelector"), path + ".labelSelector")
    errs += v.validate_label_selector(term.get("namespaceSelector"), path + ".namespaceSelector")
    for name in l_(term, "namespaces"):
        errs += v.invalid_each(path + ".namespace", name, v.name_dns1123_label(str(name)))
    for field in ("matchLabelKeys", "mismatchLabelKeys"):
        keys = l_(term, field)
        if keys and not isinstance(term.get("labelSelector"), dict):
            errs.append(errors.forbidden(path + "." + field,
                                         "must not be specified when labelSelector is not set"))
        elif keys:
            for i, key in enumerate(keys):
                errs += v.validate_label_name(str(key), "%s.%s[%d]" % (path, field, i))
    if not s_(term, "topologyKey"):
        errs.append(errors.required(path + ".topologyKey", "can not be empty"))
    return errs + v.validate_label_name(s_(term, "topologyKey"), path + ".topologyKey")


def _affinity(affinity, path):
    if not isinstance(affinity, dict):
        return []
    errs = []
    node = affinity.get("nodeAffinity")
    if isinstance(node, dict):
        np = path + ".nodeAffinity"
        required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(required, dict):
            rp = np + ".requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            terms = l_(required, "nodeSelectorTerms")
            if not terms:
                errs.append(errors.required(rp, "must have at least one node selector term"))
            for i, term in enumerate(terms):
                errs += _node_selector_term(term, "%s[%d]" % (rp, i), False)
        for i, term in enumerate(l_(node, "preferredDuringSchedulingIgnoredDuringExecution")):
            tp = "%s.preferredDuringSchedulingIgnoredDuringExecution[%d]" % (np, i)
            errs += _weight(term, tp)
            errs += _node_selector_term(d_(term, "preference"), tp + ".preference", True)
    for kind in ("podAffinity", "podAntiAffinity"):
        pa = affinity.get(kind)
        if not isinstance(pa, dict):
            continue
        pp = "%s.%s" % (path, kind)
        for i, term in enumerate(l_(pa, "requiredDuringSchedulingIgnoredDuringExecution")):
            errs += _pod_affinity_term(
                term, "%s.requiredDuringSchedulingIgnoredDuringExecution[%d]" % (pp, i))
        for i, term in enumerate(l_(pa, "preferredDuringSchedulingIgnoredDuringExecution")):
            tp = "%s.preferredDuringSchedulingIgnoredDuringExecution[%d]" % (pp, i)
            errs += _weight(term, tp)
            errs += _pod_affinity_term(d_(term, "podAffinityTerm"), tp + ".podAffinityTerm")
    return errs


def _dns_config(spec, path):
    config, policy = spec.get("dnsConfig"), s_(spec, "dnsPolicy")
    if policy == "None":
        if not isinstance(config, dict):
            return [errors.required(path, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not l_(config, "nameservers"):
            return [errors.required(path + ".nameservers", "must provide at least one DNS "
                                    "nameserver when `dnsPolicy` is None")]
    if not isinstance(config, dict):
        return []
    errs = []
    servers, searches = l_(config, "nameservers"), l_(config, "searches")
    if len(servers) > 3:
        errs.append(errors.invalid(path + ".nameservers", v.go_strings(servers),
                                   "must not have more than 3 nameservers"))
    for i, ns in enumerate(servers):
        errs += v.is_valid_ip("%s.nameservers[%d]" % (path, i), ns)
    if len(searches) > 32:
        errs.append(errors.invalid(path + ".searches", v.go_strings(searches),
                                   "must not have more than 32 search paths"))
    if len(" ".join(map(str, searches))) > 2048:
        errs.append(errors.invalid(path + ".searches", v.go_strings(searches), "must not have "
                                   "more than 2048 characters (including spaces) in the search "
                                   "list"))
    for i, search in enumerate(map(str, searches)):
        # RelaxedDNSSearchValidation (on from v1.33): '_' allowed, "." alone.
        if search != ".":
            search = search[:-1] if search.endswith(".") else search
            errs += v.invalid_each("%s.searches[%d]" % (path, i), search,
                                   _subdomain_with_underscore(search))
    for i, option in enumerate(l_(config, "options")):
        if not s_(option, "name"):
            errs.append(errors.required("%s.options[%d]" % (path, i), "must not be empty"))
    return errs


def _subdomain_with_underscore(value):
    label = "_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
    fmt = label + "(\\." + label + ")*"
    errs = []
    if len(value) > 253:
        errs.append(v.max_len_error(253))
    if not v.matches(fmt, value):
        errs.append(v.regex_error("a lowercase RFC 1123 subdomain must consist of lower case "
                                  "alphanumeric characters, '_', '-' or '.', and must start and "
                                  "end with an alphanumeric character", fmt, "example.com"))
    return errs


def _topology_spread(constraints, path):
    errs = []
    for i, c in enumerate(constraints):
        p = "%s[%d]" % (path, i)
        skew = v.int_of(c, "maxSkew") or 0
        if skew <= 0:
            errs.append(errors.invalid(p + ".maxSkew", skew, v.IS_NOT_POSITIVE))
        key, action = s_(c, "topologyKey"), s_(c, "whenUnsatisfiable")
        if not key:
            errs.append(errors.required(p + ".topologyKey", "can not be empty"))
        if action not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(errors.not_supported(p + ".whenUnsatisfiable", action,
                                             ["DoNotSchedule", "ScheduleAnyway"]))
        if any(s_(o, "topologyKey") == key and s_(o, "whenUnsatisfiable") == action
               for o in constraints[i + 1:]):
            errs.append(errors.duplicate(p + ".{topologyKey, whenUnsatisfiable}",
                                         "{%s, %s}" % (key, action)))
        domains = v.int_of(c, "minDomains")
        if domains is not None:
            if domains <= 0:
                errs.append(errors.invalid(p + ".minDomains", domains, v.IS_NOT_POSITIVE))
            if action != "DoNotSchedule":
                errs.append(errors.invalid(p + ".minDomains", domains, "can only use minDomains "
                                           "if whenUnsatisfiable=DoNotSchedule, not %s" % action))
        for field in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            if c.get(field) is not None and c[field] not in ("Honor", "Ignore"):
                errs.append(errors.not_supported(p + "." + field, c[field], ["Honor", "Ignore"]))
        selector = c.get("labelSelector")
        keys = l_(c, "matchLabelKeys")
        if keys and not isinstance(selector, dict):
            errs.append(errors.forbidden(p + ".matchLabelKeys",
                                         "must not be specified when labelSelector is not set"))
        for j, k in enumerate(keys):
            errs += v.validate_label_name(str(k), "%s.matchLabelKeys[%d]" % (p, j))
        errs += v.validate_label_selector(selector, p + ".labelSelector")
    return errs


def _os_rules(spec, path):
    os_spec = spec.get("os")
    if not isinstance(os_spec, dict):
        return []
    name = s_(os_spec, "name")
    if not name:
        return [errors.required(path + ".os.name", "cannot be empty")]
    if name not in ("linux", "windows"):
        return [errors.not_supported(path + ".os", name, ["linux", "windows"])]
    errs = []
    pod_sc = d_(spec, "securityContext")
    containers = [("%s.initContainers[%d]" % (path, i), c)
                  for i, c in enumerate(l_(spec, "initContainers"))]
    containers += [("%s.containers[%d]" % (path, i), c)
                   for i, c in enumerate(l_(spec, "containers"))]
    if name == "linux":
        msg = "windows options cannot be set for a linux pod"
        if pod_sc.get("windowsOptions") is not None:
            errs.append(errors.forbidden(path + ".securityContext.windowsOptions", msg))
        for cpath, c in containers:
            if d_(c, "securityContext").get("windowsOptions") is not None:
                errs.append(errors.forbidden(cpath + ".securityContext.windowsOptions", msg))
        return errs
    msg = "cannot be set for a windows pod"
    for field in ("appArmorProfile", "seLinuxOptions"):
        if pod_sc.get(field) is not None:
            errs.append(errors.forbidden("%s.securityContext.%s" % (path, field), msg))
    if spec.get("hostUsers") is not None:
        errs.append(errors.forbidden(path + ".hostUsers", msg))
    for field in ("hostPID", "hostIPC"):
        if spec.get(field) is True:
            errs.append(errors.forbidden("%s.%s" % (path, field), msg))
    for field in ("seccompProfile", "fsGroup", "fsGroupChangePolicy"):
        if pod_sc.get(field) is not None:
            errs.append(errors.forbidden("%s.securityContext.%s" % (path, field), msg))
    if l_(pod_sc, "sysctls"):
        errs.append(errors.forbidden(path + ".securityContext.sysctls", msg))
    if spec.get("shareProcessNamespace") is not None:
        errs.append(errors.forbidden(path + ".shareProcessNamespace", msg))
    for field in ("runAsUser", "runAsGroup", "supplementalGroups", "supplementalGroupsPolicy",
                  "seLinuxChangePolicy"):
        if pod_sc.get(field) is not None:
            errs.append(errors.forbidden("%s.securityContext.%s" % (path, field), msg))
    for cpath, c in containers:
        sc = d_(c, "securityContext")
        for field in ("appArmorProfile", "seLinuxOptions", "seccompProfile", "capabilities",
                      "readOnlyRootFilesystem", "privileged", "allowPrivilegeEscalation",
                      "procMount", "runAsUser", "runAsGroup"):
            if sc.get(field) is not None:
                errs.append(errors.forbidden("%s.securityContext.%s" % (cpath, field), msg))
    return errs


def _named(spec, field, rule, path):
    value = s_(spec, field)
    return v.invalid_each(path + "." + field, value, rule(value)) if value else []


def validate_pod_spec(spec, pod_name, path="spec"):
    """ValidatePodSpec; pod_name is the pod's name ("" for a template)."""
    errs = []
    grace = v.int_of(spec, "terminationGracePeriodSeconds")
    if grace is None:
        errs.append(errors.required(path + ".terminationGracePeriodSeconds"))
    host_users = spec.get("hostUsers") is not False
    volumes, vol_errs = volume_rules.validate_volumes(l_(spec, "volumes"), pod_name,
                                                      path + ".volumes")
    errs += vol_errs
    claims = l_(spec, "resourceClaims")
    claim_names = {s_(c, "name") for c in claims if s_(c, "name")}
    seen = set()
    for i, claim in enumerate(claims):
        name, p = s_(claim, "name"), "%s.resourceClaims[%d].name" % (path, i)
        if not name:
            errs.append(errors.required(p))
        elif name in seen:
            errs.append(errors.duplicate(p, name))
        else:
            errs += v.invalid_each(p, name, v.is_dns1123_label(name))
            seen.add(name)
    errs += container_rules.validate_containers(spec, volumes, claim_names, grace,
                                                path + ".containers", host_users)
    errs += container_rules.validate_init_containers(spec, volumes, claim_names, grace,
                                                     path + ".initContainers", host_users)
    if spec.get("hostNetwork") is True:
        for i, ctr in enumerate(l_(spec, "containers")):
            for j, port in enumerate(l_(ctr, "ports")):
                if (v.int_of(port, "hostPort") or 0) != (v.int_of(port, "containerPort") or 0):
                    errs.append(errors.invalid("%s.containers[%d].ports[%d].hostPort"
                                               % (path, i, j), v.int_of(port, "hostPort") or 0,
                                               "must match `containerPort` when `hostNetwork` is "
                                               "true"))
    errs += _one_of(s_(spec, "restartPolicy"), RESTART_POLICIES, path + ".restartPolicy")
    errs += _one_of(s_(spec, "dnsPolicy"), DNS_POLICIES, path + ".dnsPolicy")
    errs += v.validate_labels(d_(spec, "nodeSelector"), path + ".nodeSelector")
    errs += _pod_security_context(spec, path + ".securityContext")
    # imagePullSecrets: "only name may be set" cannot trigger from JSON (a
    # LocalObjectReference has no other field to decode into).
    errs += _affinity(spec.get("affinity"), path + ".affinity")
    errs += _dns_config(spec, path + ".dnsConfig")
    for i, gate in enumerate(l_(spec, "readinessGates")):
        ctype = s_(gate, "conditionType")
        errs += v.invalid_each("%s.readinessGates[%d].conditionType" % (path, i), ctype,
                               v.is_qualified_name(ctype))
    gates = set()
    for i, gate in enumerate(l_(spec, "schedulingGates")):
        name, p = s_(gate, "name"), "%s.schedulingGates[%d]" % (path, i)
        errs += v.invalid_each(p, name, v.is_qualified_name(name))
        if name in gates:
            errs.append(errors.duplicate(p, name))
        gates.add(name)
    errs += _topology_spread(l_(spec, "topologySpreadConstraints"),
                             path + ".topologySpreadConstraints")
    if spec.get("hostUsers") is False:
        for field, shown in (("hostNetwork", "hostNetwork"), ("hostPID", "HostPID"),
                             ("hostIPC", "HostIPC")):
            if spec.get(field) is True:
                errs.append(errors.forbidden("%s.%s" % (path, shown),
                                             "when `pod.Spec.HostUsers` is false"))
    errs += _named(spec, "serviceAccountName", v.name_dns1123_subdomain, path)
    errs += _named(spec, "nodeName", v.name_dns1123_subdomain, path)
    deadline = v.int_of(spec, "activeDeadlineSeconds")
    if deadline is not None and not 1 <= deadline <= v.MAX_INT32:
        errs.append(errors.invalid(path + ".activeDeadlineSeconds", deadline,
                                   v.inclusive_range_error(1, v.MAX_INT32)))
    errs += _named(spec, "hostname", v.is_dns1123_label, path)
    errs += _named(spec, "subdomain", v.is_dns1123_label, path)
    errs += _tolerations(l_(spec, "tolerations"), path + ".tolerations")
    for i, alias in enumerate(l_(spec, "hostAliases")):
        errs += v.is_valid_ip("%s.hostAliases[%d].ip" % (path, i), s_(alias, "ip"))
        for j, host in enumerate(l_(alias, "hostnames")):
            errs += v.invalid_each("%s.hostAliases[%d].hostnames[%d]" % (path, i, j), host,
                                   v.is_dns1123_subdomain(str(host)))
    errs += _named(spec, "priorityClassName", v.name_dns1123_subdomain, path)
    if isinstance(spec.get("runtimeClassName"), str):
        errs += v.invalid_each(path + ".runtimeClassName", spec["runtimeClassName"],
                               v.name_dns1123_subdomain(spec["runtimeClassName"]))
    if spec.get("preemptionPolicy") is not None:
        errs += _one_of(spec["preemptionPolicy"], ["PreemptLowerPriority", "Never"],
                        path + ".preemptionPolicy")
    if isinstance(spec.get("overhead"), dict):
        errs += container_rules.validate_resources({"limits": spec["overhead"]}, set(),
                                                   path + ".overhead")
    return errs + _os_rules(spec, path)


def _deletion_cost_ok(value):
    if not value or not (value[0] == "-" or value == "0" or "1" <= value[0] <= "9"):
        return False
    try:
        return -2 ** 31 <= int(value, 10) < 2 ** 31 and value.lstrip("-").isdigit()
    except ValueError:
        return False


def _seccomp_annotation(value, path):
    if value in ("runtime/default", "docker/default", "unconfined"):
        return []
    if value.startswith("localhost/"):
        return volume_rules.local_descending_path(value[len("localhost/"):], path)
    return [errors.invalid(path, value, "must be a valid seccomp profile")]


def _pod_specific_annotations(annotations, spec, path):
    errs = []
    if MIRROR_POD in annotations and not s_(spec, "nodeName"):
        errs.append(errors.invalid("%s[%s]" % (path, MIRROR_POD), annotations[MIRROR_POD],
                                   "must set spec.nodeName if mirror pod annotation is set"))
    if DELETION_COST in annotations and not _deletion_cost_ok(str(annotations[DELETION_COST])):
        errs.append(errors.invalid("%s[%s]" % (path, DELETION_COST), annotations[DELETION_COST],
                                   "must be a 32bit integer"))
    # Go uses Child (a dot), not Key, for the seccomp annotations.
    if SECCOMP_POD in annotations:
        errs += _seccomp_annotation(str(annotations[SECCOMP_POD]), path + "." + SECCOMP_POD)
    for key, value in annotations.items():
        if key.startswith(SECCOMP_CONTAINER_PREFIX):
            errs += _seccomp_annotation(str(value), path + "." + key)
    names = {s_(c, "name") for f in ("initContainers", "containers", "ephemeralContainers")
             for c in l_(spec, f)}
    for key, value in annotations.items():
        if not key.startswith(APPARMOR_PREFIX):
            continue
        container = key[len(APPARMOR_PREFIX):]
        if container not in names:
            errs.append(errors.invalid("%s[%s]" % (path, key), container, "container not found"))
        value = str(value)
        if value not in ("", "runtime/default", "unconfined") and \
                not value.startswith("localhost/"):
            errs.append(errors.invalid("%s[%s]" % (path, key), value,
                                       "invalid AppArmor profile name: %s" % json.dumps(value)))
    return errs


def _metadata_and_spec(pod):
    meta, spec = d_(pod, "metadata"), d_(pod, "spec")
    errs = v.validate_object_meta(meta, True, v.name_dns1123_subdomain)
    errs += _pod_specific_annotations(d_(meta, "annotations"), spec, "metadata.annotations")
    errs += validate_pod_spec(spec, s_(meta, "name"))
    if not s_(spec, "serviceAccountName"):
        for i, vol in enumerate(l_(spec, "volumes")):
            for j, source in enumerate(l_(d_(vol, "projected"), "sources")):
                if isinstance(source.get("serviceAccountToken"), dict):
                    errs.append(errors.forbidden(
                        "spec.volumes[%d].projected.sources[%d].serviceAccountToken" % (i, j),
                        "must not be specified when serviceAccountName is not set"))
    for field in ("containers", "initContainers"):
        for i, ctr in enumerate(l_(spec, field)):
            image = s_(ctr, "image")
            if image != image.strip():
                errs.append(errors.invalid("spec.%s[%d].image" % (field, i), image,
                                           "must not have leading or trailing whitespace"))
    return errs


def validate_pod(pod):
    """ValidatePodCreate. Raises quantity.QuantityError for a resource
    quantity that does not parse (the real server's 400 while decoding)."""
    errs = _metadata_and_spec(pod)
    spec = d_(pod, "spec")
    if l_(spec, "ephemeralContainers"):
        errs.append(errors.forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if s_(spec, "nodeName") and l_(spec, "schedulingGates"):
        errs.append(errors.forbidden("spec.nodeName", "cannot be set until all schedulingGates "
                                     "have been cleared"))
    return errs


def _container_updates(new, old, path):
    """(errors, stop)."""
    if len(new) != len(old):
        return [errors.forbidden(path, "pod updates may not add or remove containers")], True
    errs = []
    for i, ctr in enumerate(new):
        image = s_(ctr, "image")
        if not image:
            errs.append(errors.required("%s[%d].image" % (path, i)))
        if image != image.strip():
            errs.append(errors.invalid("%s[%d].image" % (path, i), image,
                                       "must not have leading or trailing whitespace"))
    return errs, False


def _only_added_tolerations(new, old, path):
    for o in old:
        if not any(v.semantic_equal(dict(o, tolerationSeconds=n.get("tolerationSeconds")), n)
                   for n in new):
            return [errors.forbidden(path, "existing toleration can not be modified except its "
                                     "tolerationSeconds")]
    return _tolerations(new, path)


def _semantic_spec(spec):
    """The spec as apiequality.Semantic compares it: quantities by value."""
    spec = v.semantic(spec)

    def walk(x, key=None):
        if isinstance(x, dict):
            if key in ("limits", "requests", "overhead"):
                return {k: _quantity_key(q) for k, q in x.items()}
            return {k: walk(val, k) for k, val in x.items()}
        if isinstance(x, list):
            return [walk(i) for i in x]
        return x
    return walk(spec)


def _quantity_key(q):
    try:
        return ("quantity", quantity.parse(q).value)
    except quantity.QuantityError:
        return q


def _diff_lines(old, new, path, out):
    if isinstance(old, dict) and isinstance(new, dict):
        for k in list(old) + [k for k in new if k not in old]:
            _diff_lines(old.get(k), new.get(k), "%s.%s" % (path, k), out)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new)):
            _diff_lines(a, b, "%s[%d]" % (path, i), out)
    elif old != new:
        if old is not None:
            out.append("-\t%s: %s" % (path, _shown(old)))
        if new is not None:
            out.append("+\t%s: %s" % (path, _shown(new)))


def _shown(value):
    if isinstance(value, tuple) and value[0] == "quantity":
        return str(value[1])
    return json.dumps(value, default=str, sort_keys=True)


def _spec_diff(old, new):
    # The real server appends cmp.Diff(oldSpec, newSpec) of its internal Go
    # types, which cannot be reproduced here; this lists the changed fields
    # instead, one "-" and one "+" line each, after the same prefix.
    out = []
    _diff_lines(old, new, "spec", out)
    return "\n".join(out) + "\n" if out else ""


def validate_pod_update(new, old):
    """ValidatePodUpdate: metadata rules, the new pod's own rules, and only
    the mutable fields changed."""
    new_meta, old_meta = d_(new, "metadata"), d_(old, "metadata")
    errs = v.validate_object_meta_update(new_meta, old_meta)
    errs += _metadata_and_spec(new)
    annotations, old_annotations = d_(new_meta, "annotations"), d_(old_meta, "annotations")
    for key in [k for k in old_annotations if annotations.get(k) != old_annotations[k]]:
        if key.startswith(APPARMOR_PREFIX):
            errs.append(errors.forbidden("metadata.annotations[%s]" % key,
                                         "may not remove or update AppArmor annotations"))
        if key == MIRROR_POD:
            errs.append(errors.forbidden("metadata.annotations[%s]" % key,
                                         "may not remove or update mirror pod annotation"))
    for key in [k for k in annotations if k not in old_annotations]:
        if key.startswith(APPARMOR_PREFIX):
            errs.append(errors.forbidden("metadata.annotations[%s]" % key,
                                         "may not add AppArmor annotations"))
        if key == MIRROR_POD:
            errs.append(errors.forbidden("metadata.annotations[%s]" % key,
                                         "may not add mirror pod annotation"))
    errs += _pod_specific_annotations(annotations, d_(new, "spec"), "metadata.annotations")
    spec, old_spec = d_(new, "spec"), d_(old, "spec")
    for field in ("containers", "initContainers"):
        more, stop = _container_updates(l_(spec, field), l_(old_spec, field), "spec." + field)
        errs += more
        if stop:
            return errs
    deadline, old_deadline = spec.get("activeDeadlineSeconds"), old_spec.get(
        "activeDeadlineSeconds")
    if deadline is not None:
        if not 0 <= deadline <= v.MAX_INT32:
            errs.append(errors.invalid("spec.activeDeadlineSeconds", deadline,
                                       v.inclusive_range_error(0, v.MAX_INT32)))
            return errs
        if old_deadline is not None and old_deadline < deadline:
            errs.append(errors.invalid("spec.activeDeadlineSeconds", deadline,
                                       "must be less than or equal to previous value"))
            return errs
    elif old_deadline is not None:
        errs.append(errors.invalid("spec.activeDeadlineSeconds", None,
                                   "must not update from a positive integer to nil value"))
    errs += _only_added_tolerations(l_(spec, "tolerations"), l_(old_spec, "tolerations"),
                                    "spec.tolerations")
    old_gates = {s_(g, "name") for g in l_(old_spec, "schedulingGates")}
    for i, gate in enumerate(l_(spec, "schedulingGates")):
        if s_(gate, "name") not in old_gates:
            errs.append(errors.forbidden("spec.schedulingGates[%d].name" % i,
                                         "only deletion is allowed, but found new scheduling "
                                         "gate '%s'" % s_(gate, "name")))
    if _semantic_spec(spec) == _semantic_spec(old_spec):
        return errs
    munged = _munge(spec, old_spec)
    if old_spec.get("schedulingGates"):
        # Gated pods may gain nodeSelector entries (no changes, no removals).
        selector, old_selector = d_(munged, "nodeSelector"), d_(old_spec, "nodeSelector")
        if any(selector.get(k) != val for k, val in old_selector.items()):
            shown = v.GoValue("map[string]string{%s}" % ", ".join(
                "%s:%s" % (json.dumps(k), json.dumps(selector[k])) for k in sorted(selector)))
            errs.append(errors.invalid("spec.nodeSelector", shown,
                                       "only additions to spec.nodeSelector are allowed (no "
                                       "mutations or deletions)"))
        munged["nodeSelector"] = old_spec.get("nodeSelector")
    old_semantic, new_semantic = _semantic_spec(old_spec), _semantic_spec(munged)
    if new_semantic != old_semantic:
        errs.append(errors.forbidden("spec", POD_UPDATE_PREFIX + "\n"
                                     + _spec_diff(old_semantic, new_semantic)))
    return errs


def _munge(spec, old_spec):
    """The new spec with the fields a pod update may change set back to
    their old values."""
    munged = dict(spec)
    for field in ("containers", "initContainers"):
        olds = l_(old_spec, field)
        munged[field] = [dict(c, image=olds[i].get("image"))
                         for i, c in enumerate(l_(spec, field))]
    munged["activeDeadlineSeconds"] = old_spec.get("activeDeadlineSeconds")
    munged["schedulingGates"] = old_spec.get("schedulingGates")
    munged["tolerations"] = old_spec.get("tolerations")
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and munged.get(
            "terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    return munged
