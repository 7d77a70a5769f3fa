"""What the real kube-apiserver refuses in a Service, on create and on
update (k8s.io/kubernetes pkg/apis/core/validation ValidateService,
ValidateServiceClusterIPsRelatedFields, ValidateServiceUpdate, at
Kubernetes v1.33; conventions in validation.py).

The service is the v1 JSON as the real server has it when it validates:
defaults applied (type, sessionAffinity, internalTrafficPolicy, ports'
protocol and targetPort, externalTrafficPolicy and
allocateLoadBalancerNodePorts where they apply), the cluster IP allocated,
and clusterIPs, ipFamilies and ipFamilyPolicy filled in (defaults.py's
default_service does that, clusterIPs following clusterIP as the real
strategy's normalizeClusterIPs makes them); without that a service with
clusterIP and no clusterIPs is refused with `spec.clusterIPs: Required
value`, as it would be there.

The real server also refuses a clusterIP outside the service CIDR, and a
nodePort outside its range, while allocating: that is the allocator's job,
not this module's.
"""
import json

import errors
import validation as v

d_, l_, s_ = v.dict_of, v.list_of, v.str_of

SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
SESSION_AFFINITIES = ["ClientIP", "None"]
IP_FAMILIES = ["IPv4", "IPv6"]
IP_FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]
TRAFFIC_POLICIES = ["Cluster", "Local"]
MAX_CLIENT_IP_AFFINITY_SECONDS = 86400
TOPOLOGY_HINTS = "service.kubernetes.io/topology-aware-hints"
TOPOLOGY_MODE = "service.kubernetes.io/topology-mode"
SOURCE_RANGES = "service.beta.kubernetes.io/load-balancer-source-ranges"


def is_headless(svc):
    ips = l_(d_(svc, "spec"), "clusterIPs")
    return len(ips) == 1 and ips[0] == "None"


def _service_port_key(port):
    """%#v of the core.ServicePort Go builds to find duplicate ports."""
    return v.GoValue('core.ServicePort{Name:"", Protocol:%s, AppProtocol:(*string)(nil), '
                     'Port:%d, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, '
                     'NodePort:0}' % (json.dumps(s_(port, "protocol")),
                                      v.int_of(port, "port") or 0))


def _validate_port(port, require_name, names, path):
    errs = []
    name = s_(port, "name")
    if require_name and not name:
        errs.append(errors.required(path + ".name"))
    elif name:
        errs += v.invalid_each(path + ".name", name, v.is_dns1123_label(name))
        if name in names:
            errs.append(errors.duplicate(path + ".name", name))
        else:
            names.add(name)
    number = v.int_of(port, "port") or 0
    errs += v.invalid_each(path + ".port", number, v.is_valid_port_num(number))
    errs += v.validate_protocol(s_(port, "protocol"), path + ".protocol")
    errs += v.validate_port_num_or_name(port.get("targetPort"), path + ".targetPort")
    if isinstance(port.get("appProtocol"), str):
        errs += v.invalid_each(path + ".appProtocol", port["appProtocol"],
                               v.is_qualified_name(port["appProtocol"]))
    return errs


def _cluster_ips_rules(svc):
    """ValidateServiceClusterIPsRelatedFields."""
    spec = d_(svc, "spec")
    if s_(spec, "type") == "ExternalName":
        return []
    errs, bad_ips = [], False
    cluster_ip, ips = s_(spec, "clusterIP"), [str(i) for i in l_(spec, "clusterIPs")]
    families = l_(spec, "ipFamilies")
    shown = v.go_strings(ips)
    if cluster_ip:
        if not ips:
            errs.append(errors.required("spec.clusterIPs"))
        elif ips[0] != cluster_ip:
            errs.append(errors.invalid("spec.clusterIPs", shown,
                                       "first value must match `clusterIP`"))
    elif ips:
        errs.append(errors.invalid("spec.clusterIPs", shown,
                                   "must be empty when `clusterIP` is not specified"))
    seen = set()
    for i, family in enumerate(families):
        if family not in IP_FAMILIES:
            errs.append(errors.not_supported("spec.ipFamilies[%d]" % i, family, IP_FAMILIES))
        if family in seen:
            errs.append(errors.duplicate("spec.ipFamilies[%d]" % i, family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        errs.append(errors.not_supported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
    for i, ip in enumerate(ips):
        if i == 0 and ip == "None":
            if len(ips) > 1:
                bad_ips = True
                errs.append(errors.invalid("spec.clusterIPs", shown,
                                           "'None' must be the first and only value"))
            continue
        more = v.is_valid_ip("spec.clusterIPs[%d]" % i, ip)
        bad_ips = bad_ips or bool(more)
        errs += more
    if len(ips) > 2:
        errs.append(errors.invalid("spec.clusterIPs", shown, "may only hold up to 2 values"))
    if bad_ips:
        return errs
    parsed = [v.parse_ip_sloppy(ip) for ip in ips]
    if len(ips) > 1 and len({v.ip_is_v6(ip) for ip in parsed}) != 2:
        errs.append(errors.invalid("spec.clusterIPs", shown,
                                   "may specify no more than one IP for each IP family"))
    if not is_headless(svc):
        for i, (ip, family) in enumerate(zip(parsed, families)):
            if family == "IPv4" and v.ip_is_v6(ip):
                errs.append(errors.invalid("spec.clusterIPs[%d]" % i, ips[i], "expected an IPv4 "
                                           "value as indicated by `ipFamilies[%d]`" % i))
            if family == "IPv6" and not v.ip_is_v6(ip):
                errs.append(errors.invalid("spec.clusterIPs[%d]" % i, ips[i], "expected an IPv6 "
                                           "value as indicated by `ipFamilies[%d]`" % i))
    return errs


def _non_special_ip(ip_text, path):
    ip = v.parse_ip_sloppy(ip_text)
    errs = []
    if ip.is_unspecified:
        errs.append(errors.invalid(path, ip_text, "may not be unspecified (%s)" % ip_text))
    if ip.is_loopback or (ip.version == 6 and ip.ipv4_mapped and ip.ipv4_mapped.is_loopback):
        errs.append(errors.invalid(path, ip_text,
                                   "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
    if ip.is_link_local:
        errs.append(errors.invalid(path, ip_text, "may not be in the link-local range "
                                   "(169.254.0.0/16, fe80::/10)"))
    if ip.is_multicast and (str(ip).startswith("224.0.0.") or str(ip).startswith("ff02:")):
        errs.append(errors.invalid(path, ip_text, "may not be in the link-local multicast range "
                                   "(224.0.0.0/24, ff02::/10)"))
    return errs


def _session_affinity(spec):
    errs = []
    affinity = s_(spec, "sessionAffinity")
    if not affinity:
        errs.append(errors.required("spec.sessionAffinity"))
    elif affinity not in SESSION_AFFINITIES:
        errs.append(errors.not_supported("spec.sessionAffinity", affinity, SESSION_AFFINITIES))
    config, path = spec.get("sessionAffinityConfig"), "spec.sessionAffinityConfig"
    if affinity == "ClientIP":
        why = "when session affinity type is ClientIP"
        client = d_(config, "clientIP") if isinstance(config, dict) else None
        if not isinstance(config, dict):
            errs.append(errors.required(path, why))
        elif not isinstance(config.get("clientIP"), dict):
            errs.append(errors.required(path + ".clientIP", why))
        elif v.int_of(client, "timeoutSeconds") is None:
            errs.append(errors.required(path + ".clientIP.timeoutSeconds", why))
        elif not 0 < client["timeoutSeconds"] <= MAX_CLIENT_IP_AFFINITY_SECONDS:
            errs.append(errors.invalid(path + ".clientIP.timeoutSeconds",
                                       client["timeoutSeconds"], "must be greater than 0 and less "
                                       "than %d" % MAX_CLIENT_IP_AFFINITY_SECONDS))
    elif affinity == "None" and config is not None:
        errs.append(errors.forbidden(path, "must not be set when session affinity is None"))
    return errs


def _traffic_policies(spec):
    errs = []
    kind = s_(spec, "type")
    accessible = kind in ("LoadBalancer", "NodePort") or (
        kind == "ClusterIP" and l_(spec, "externalIPs"))
    policy = s_(spec, "externalTrafficPolicy")
    if not accessible:
        if policy:
            errs.append(errors.invalid("spec.externalTrafficPolicy", policy,
                                       "may only be set for externally-accessible services"))
    elif not policy:
        errs.append(errors.required("spec.externalTrafficPolicy"))
    elif policy not in TRAFFIC_POLICIES:
        errs.append(errors.not_supported("spec.externalTrafficPolicy", policy, TRAFFIC_POLICIES))
    health = v.int_of(spec, "healthCheckNodePort") or 0
    if not (kind == "LoadBalancer" and policy == "Local"):
        if health:
            errs.append(errors.invalid("spec.healthCheckNodePort", health, "may only be set when "
                                       "`type` is 'LoadBalancer' and `externalTrafficPolicy` is "
                                       "'Local'"))
    elif not health:
        errs.append(errors.required("spec.healthCheckNodePort"))
    else:
        errs += v.invalid_each("spec.healthCheckNodePort", health, v.is_valid_port_num(health))
    internal = spec.get("internalTrafficPolicy")
    if internal is None and kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        errs.append(errors.required("spec.internalTrafficPolicy"))
    if internal is not None and internal not in TRAFFIC_POLICIES:
        errs.append(errors.not_supported("spec.internalTrafficPolicy", internal,
                                         TRAFFIC_POLICIES))
    distribution = spec.get("trafficDistribution")
    if distribution is not None and distribution != "PreferClose":
        errs.append(errors.not_supported("spec.trafficDistribution", distribution,
                                         ["PreferClose"]))
    return errs


def _load_balancer_rules(svc):
    spec, meta = d_(svc, "spec"), d_(svc, "metadata")
    kind, errs = s_(spec, "type"), []
    ranges = l_(spec, "loadBalancerSourceRanges")
    annotation = d_(meta, "annotations").get(SOURCE_RANGES)
    if ranges:
        path = "spec.LoadBalancerSourceRanges"  # sic: Go names the Go field here
        if kind != "LoadBalancer":
            errs.append(errors.forbidden(path, "may only be used when `type` is 'LoadBalancer'"))
        for i, cidr in enumerate(ranges):
            errs += v.is_valid_cidr("%s[%d]" % (path, i), str(cidr).strip())
    elif annotation is not None:
        path = "metadata.annotations[%s]" % SOURCE_RANGES
        if kind != "LoadBalancer":
            errs.append(errors.forbidden(path, "may only be used when `type` is 'LoadBalancer'"))
        if annotation.strip():
            for cidr in annotation.strip().split(","):
                errs += v.is_valid_cidr(path, cidr.strip())
    allocate = spec.get("allocateLoadBalancerNodePorts")
    if allocate is not None and kind != "LoadBalancer":
        errs.append(errors.forbidden("spec.allocateLoadBalancerNodePorts",
                                     "may only be used when `type` is 'LoadBalancer'"))
    if kind == "LoadBalancer" and allocate is None:
        errs.append(errors.required("allocateLoadBalancerNodePorts"))  # sic: no "spec."
    return errs + _load_balancer_class(None, svc)


def _load_balancer_class(old, svc):
    """validateLoadBalancerClassField: a qualified name, on LoadBalancers
    only, and (on update) fixed while the service stays one."""
    errs = []
    kind, lb_class = s_(d_(svc, "spec"), "type"), d_(svc, "spec").get("loadBalancerClass")
    if old is not None and kind == "LoadBalancer" and s_(d_(old, "spec"), "type") == \
            "LoadBalancer" and d_(old, "spec").get("loadBalancerClass") != lb_class:
        errs.append(errors.invalid("spec.loadBalancerClass", lb_class, "may not change once set"))
    if kind == "LoadBalancer":
        if lb_class is not None:
            errs += v.invalid_each("spec.loadBalancerClass", lb_class,
                                   v.is_qualified_name(str(lb_class)))
    elif lb_class is not None:
        errs.append(errors.forbidden("spec.loadBalancerClass",
                                     "may only be used when `type` is 'LoadBalancer'"))
    return errs


def validate_service(svc):
    """ValidateService (ValidateServiceCreate is just this)."""
    meta, spec = d_(svc, "metadata"), d_(svc, "spec")
    errs = v.validate_object_meta(meta, True, v.name_dns1035_label)
    annotations = d_(meta, "annotations")
    if TOPOLOGY_HINTS in annotations and TOPOLOGY_MODE in annotations \
            and annotations[TOPOLOGY_HINTS] != annotations[TOPOLOGY_MODE]:
        errs.append(errors.invalid("metadata.annotations[%s]" % TOPOLOGY_MODE,
                                   annotations[TOPOLOGY_MODE],
                                   "must match annotations[%s] when both are specified"
                                   % TOPOLOGY_HINTS))
    kind, ports = s_(spec, "type"), l_(spec, "ports")
    if not ports and not is_headless(svc) and kind != "ExternalName":
        errs.append(errors.required("spec.ports"))
    if kind in ("LoadBalancer", "NodePort") and is_headless(svc):
        errs.append(errors.invalid("spec.clusterIPs[0]", "None",
                                   "may not be set to 'None' for %s services" % kind))
    elif kind == "ExternalName":
        for field in ("clusterIPs", "ipFamilies"):
            if l_(spec, field):
                errs.append(errors.forbidden("spec." + field,
                                             "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(errors.forbidden("spec.ipFamilyPolicy",
                                         "may not be set for ExternalName services"))
        cname = s_(spec, "externalName")
        cname = cname[:-1] if cname.endswith(".") else cname
        if cname:
            errs += v.invalid_each("spec.externalName", cname, v.is_dns1123_subdomain(cname))
        else:
            errs.append(errors.required("spec.externalName"))
    names = set()
    for i, port in enumerate(ports):
        errs += _validate_port(port, len(ports) > 1, names, "spec.ports[%d]" % i)
    if spec.get("selector") is not None:
        errs += v.validate_labels(d_(spec, "selector"), "spec.selector")
    errs += _session_affinity(spec)
    errs += _cluster_ips_rules(svc)
    for i, ip in enumerate(l_(spec, "externalIPs")):
        path = "spec.externalIPs[%d]" % i
        bad = v.is_valid_ip(path, ip)
        errs += bad if bad else _non_special_ip(ip, path)
    if not kind:
        errs.append(errors.required("spec.type"))
    elif kind not in SERVICE_TYPES:
        errs.append(errors.not_supported("spec.type", kind, SERVICE_TYPES))
    if kind == "ClusterIP":
        for i, port in enumerate(ports):
            if v.int_of(port, "nodePort"):
                errs.append(errors.forbidden("spec.ports[%d].nodePort" % i,
                                             "may not be used when `type` is 'ClusterIP'"))
    seen = set()
    for i, port in enumerate(ports):
        node_port = v.int_of(port, "nodePort") or 0
        if node_port:
            if (s_(port, "protocol"), node_port) in seen:
                errs.append(errors.duplicate("spec.ports[%d].nodePort" % i, node_port))
            seen.add((s_(port, "protocol"), node_port))
    seen = set()
    for i, port in enumerate(ports):
        key = (s_(port, "protocol"), v.int_of(port, "port") or 0)
        if key in seen:
            errs.append(errors.duplicate("spec.ports[%d]" % i, _service_port_key(port)))
        seen.add(key)
    return errs + _load_balancer_rules(svc) + _traffic_policies(spec)


def _cluster_ips_update(old, new):
    """validateUpgradeDowngradeClusterIPs: the primary cluster IP never
    changes once set; a secondary one may be added, or released with
    ipFamilyPolicy SingleStack."""
    spec, old_spec = d_(new, "spec"), d_(old, "spec")
    if "ExternalName" in (s_(spec, "type"), s_(old_spec, "type")):
        return []
    if is_headless(old) and is_headless(new):
        return []
    ips, old_ips = l_(spec, "clusterIPs"), l_(old_spec, "clusterIPs")
    shown, errs = v.go_strings(ips), []
    changed = errors.invalid("spec.clusterIPs[0]", shown, "may not change once set")
    if len(old_ips) == len(ips):
        errs += [errors.invalid("spec.clusterIPs[%d]" % i, shown, "may not change once set")
                 for i, ip in enumerate(old_ips) if ip != ips[i]]
    elif len(old_ips) > len(ips):
        if not ips:
            errs.append(errors.invalid("spec.clusterIPs[0]", shown,
                                       "primary clusterIP can not be unset"))
        if old_ips and ips and ips[0] != old_ips[0]:
            errs.append(changed)
        if len(ips) == 1 and spec.get("ipFamilyPolicy") != "SingleStack":
            errs.append(errors.invalid("spec.ipFamilyPolicy", spec.get("ipFamilyPolicy"),
                                       "must be set to 'SingleStack' when releasing the "
                                       "secondary clusterIP"))
    elif old_ips and ips[0] != old_ips[0]:
        errs.append(changed)
    return errs


def _ip_families_update(old, new):
    """validateUpgradeDowngradeIPFamilies (its values are printed as Go
    prints them, clusterIPs included where Go passes those)."""
    spec, old_spec = d_(new, "spec"), d_(old, "spec")
    if "ExternalName" in (s_(spec, "type"), s_(old_spec, "type")):
        return []
    if is_headless(old) != is_headless(new) or is_headless(new):
        return []
    fams, old_fams = l_(spec, "ipFamilies"), l_(old_spec, "ipFamilies")
    shown_fams = v.go_strings(fams, "core.IPFamily")
    shown_ips = v.go_strings(l_(spec, "clusterIPs"))
    path, errs = "spec.ipFamilies[0]", []
    if len(old_fams) == len(fams):
        errs += [errors.invalid(path, shown_fams, "may not change once set")
                 for i, fam in enumerate(old_fams) if fam != fams[i]]
    elif len(old_fams) > len(fams):
        if not l_(spec, "clusterIPs"):
            errs.append(errors.invalid(path, shown_fams, "primary ipFamily can not be unset"))
        if fams and fams[0] != old_fams[0]:
            errs.append(errors.invalid(path, shown_ips, "may not change once set"))
        if len(fams) == 1 and spec.get("ipFamilyPolicy") != "SingleStack":
            errs.append(errors.invalid("spec.ipFamilyPolicy", spec.get("ipFamilyPolicy"),
                                       "must be set to 'SingleStack' when releasing the "
                                       "secondary ipFamily"))
    elif old_fams and fams and fams[0] != old_fams[0]:
        errs.append(errors.invalid(path, shown_ips, "may not change once set"))
    return errs


def validate_service_update(new, old):
    """ValidateServiceUpdate: metadata rules; clusterIPs and ipFamilies
    keep their primary value (any change of type keeps them too, except to
    and from ExternalName, which releases them); a LoadBalancer keeps its
    loadBalancerClass and its healthCheckNodePort; then the new service's
    own rules."""
    errs = v.validate_object_meta_update(d_(new, "metadata"), d_(old, "metadata"))
    errs += _cluster_ips_update(old, new)
    errs += _ip_families_update(old, new)
    errs += _load_balancer_class(old, new)
    spec, old_spec = d_(new, "spec"), d_(old, "spec")
    both_lb_local = all(s_(s, "type") == "LoadBalancer" and s_(s, "externalTrafficPolicy")
                        == "Local" for s in (spec, old_spec))
    if both_lb_local and spec.get("healthCheckNodePort") != old_spec.get("healthCheckNodePort"):
        errs.append(errors.forbidden("spec.healthCheckNodePort", v.FIELD_IMMUTABLE))
    return errs + validate_service(new)


