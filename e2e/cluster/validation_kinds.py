"""What the real kube-apiserver refuses in the small built-in kinds the
cluster serves: Event (core/v1 and events.k8s.io/v1), Lease, ConfigMap,
Secret, ServiceAccount, Namespace, Node and NetworkPolicy (k8s.io/kubernetes
pkg/apis/core/validation, pkg/apis/coordination/validation and
pkg/apis/networking/validation, at Kubernetes v1.33; conventions and the
shared rules in validation.py, which also forwards these names).
"""
import base64
import ipaddress
import json

import errors
from validation import (MAX_SECRET_SIZE, GoValue, byte_len, dict_of, go_strings,
                        invalid_each, is_config_map_key, is_dns1123_subdomain,
                        is_qualified_name, is_valid_cidr, is_valid_label_value,
                        is_valid_port_name, is_valid_port_num, list_of, name_dns1123_label,
                        name_dns1123_subdomain, parse_cidr_sloppy, str_of, too_long,
                        validate_kube_finalizer_name, validate_label_name,
                        validate_label_selector, validate_object_meta, validate_taint_effect)

# --- Events ----------------------------------------------------------------

REPORTING_INSTANCE_LIMIT = 128
ACTION_LIMIT = 128
REASON_LIMIT = 128
NOTE_LIMIT = 1024


def _is_zero_time(stamp):
    return not stamp or str(stamp).startswith("0001-01-01T00:00:00")


def _legacy_validate_event(ev, namespace):
    """legacyValidateEvent on the internal Event: every event must pass it."""
    errs = []
    involved_ns = str_of(dict_of(ev, "involvedObject"), "namespace")
    ns_path = "involvedObject.namespace"
    if _is_zero_time(ev.get("eventTime")):
        # An old-style event: its namespace must match the object's
        # (an object without one may have its events in "" or "default").
        if not involved_ns:
            if namespace not in ("", "default"):
                errs.append(errors.invalid(ns_path, involved_ns, "does not match event.namespace"))
        elif namespace != involved_ns:
            errs.append(errors.invalid(ns_path, involved_ns, "does not match event.namespace"))
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            errs.append(errors.invalid(ns_path, involved_ns, "does not match event.namespace"))
        controller = str_of(ev, "reportingController")
        if not controller:
            errs.append(errors.required("reportingController"))
        errs += invalid_each("reportingController", controller, is_qualified_name(controller))
        for field, limit in (("reportingInstance", REPORTING_INSTANCE_LIMIT),
                             ("action", ACTION_LIMIT), ("reason", REASON_LIMIT)):
            value = str_of(ev, field)
            if not value:
                errs.append(errors.required(field))
            if byte_len(value) > limit:
                errs.append(errors.invalid(field, "", "can have at most %d characters" % limit))
        if byte_len(str_of(ev, "message")) > NOTE_LIMIT:
            errs.append(errors.invalid("message", "", "can have at most %d characters"
                                       % NOTE_LIMIT))
    errs += invalid_each("namespace", namespace, is_dns1123_subdomain(namespace))
    return errs


def _event_namespace(ev, request_namespace):
    return str_of(dict_of(ev, "metadata"), "namespace") or request_namespace or ""


def _core_v1_to_internal(ev):
    """The internal Event a core/v1 Event converts to: its JSON field
    reportingComponent is the Go field ReportingController, the name the
    errors carry."""
    out = dict(ev)
    out.pop("reportingComponent", None)
    if "reportingComponent" in ev:
        out["reportingController"] = ev["reportingComponent"]
    return out


def validate_core_event(ev, request_namespace):
    """An Event created through core/v1 (or events.k8s.io/v1beta1): only
    the legacy rules apply there -- the real server skips even the
    ObjectMeta checks for these, for compatibility (ValidateEventCreate)."""
    return _legacy_validate_event(_core_v1_to_internal(ev),
                                  _event_namespace(ev, request_namespace))


def _events_v1_to_internal(ev):
    """The internal Event an events.k8s.io/v1 Event converts to: the field
    names its errors carry."""
    out = dict(ev)
    for new, old in (("regarding", "involvedObject"), ("note", "message"),
                     ("deprecatedSource", "source"),
                     ("deprecatedFirstTimestamp", "firstTimestamp"),
                     ("deprecatedLastTimestamp", "lastTimestamp"),
                     ("deprecatedCount", "count")):
        out.pop(new, None)
        if new in ev:
            out[old] = ev[new]
    return out


def validate_events_v1_event(ev, request_namespace):
    """An events.k8s.io/v1 Event on create: the legacy rules, then the
    strict ones. Paths name the internal fields (involvedObject, message),
    as the real server's do."""
    core = _events_v1_to_internal(ev)
    namespace = _event_namespace(ev, request_namespace)
    errs = _legacy_validate_event(core, namespace)
    meta = dict(dict_of(ev, "metadata"), namespace=namespace)
    errs += validate_object_meta(meta, True, name_dns1123_subdomain)
    series = core.get("series")
    if isinstance(series, dict):
        if (series.get("count") or 0) < 2:
            errs.append(errors.invalid("series.count", "", "should be at least 2"))
        if _is_zero_time(series.get("lastObservedTime")):
            errs.append(errors.required("series.lastObservedTime"))
    if _is_zero_time(core.get("eventTime")):
        errs.append(errors.required("eventTime"))
    if str_of(core, "type") not in ("Normal", "Warning"):
        errs.append(errors.invalid("type", "", "has invalid value: %s" % str_of(core, "type")))
    for field in ("firstTimestamp", "lastTimestamp"):
        if not _is_zero_time(core.get(field)):
            errs.append(errors.invalid(field, "", "needs to be unset"))
    if core.get("count"):
        errs.append(errors.invalid("count", "", "needs to be unset"))
    source = dict_of(core, "source")
    if str_of(source, "component") or str_of(source, "host"):
        errs.append(errors.invalid("source", "", "needs to be unset"))
    return errs


# --- Lease (coordination.k8s.io/v1) ----------------------------------------

def validate_lease(lease):
    """ValidateLease. holderIdentity, acquireTime and renewTime have no
    rules; leaseDurationSeconds must be positive, leaseTransitions not
    negative."""
    errs = validate_object_meta(dict_of(lease, "metadata"), True, name_dns1123_subdomain,
                                core=False)
    spec = dict_of(lease, "spec")
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        errs.append(errors.invalid("spec.leaseDurationSeconds", duration,
                                   "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        errs.append(errors.invalid("spec.leaseTransitions", transitions,
                                   "must be greater than or equal to 0"))
    strategy = spec.get("strategy")
    if isinstance(strategy, str):
        # Go passes spec.strategy and appends "strategy" again.
        path = "spec.strategy.strategy"
        if "/" not in strategy:
            if strategy != "OldestEmulationVersion":
                errs.append(errors.not_supported(path, strategy, ["OldestEmulationVersion"]))
        else:
            errs += invalid_each(path, strategy, is_qualified_name(strategy))
    if spec.get("preferredHolder") and not strategy:
        errs.append(errors.forbidden("spec.preferredHolder",
                                     "may only be specified if `strategy` is defined"))
    return errs


# --- ConfigMap, Secret, ServiceAccount, Namespace, Node ---------------------

def _decoded_len(b64):
    try:
        return len(base64.b64decode(b64, validate=True))
    except (ValueError, TypeError):
        return byte_len(str(b64))


def validate_configmap(cm):
    errs = validate_object_meta(dict_of(cm, "metadata"), True, name_dns1123_subdomain)
    data, binary = dict_of(cm, "data"), dict_of(cm, "binaryData")
    total = 0
    for key, value in data.items():
        errs += invalid_each("data[%s]" % key, key, is_config_map_key(key))
        if key in binary:
            errs.append(errors.invalid("data[%s]" % key, key,
                                       "duplicate of key present in binaryData"))
        total += byte_len(value if isinstance(value, str) else "")
    for key, value in binary.items():
        errs += invalid_each("binaryData[%s]" % key, key, is_config_map_key(key))
        total += _decoded_len(value)
    if total > MAX_SECRET_SIZE:
        errs.append(too_long("[]", MAX_SECRET_SIZE))  # Go's field.NewPath("")
    return errs


def _go_json_error(raw):
    """What Go's json.Unmarshal into a map says of bytes that are not a
    JSON object (the common cases)."""
    text = raw.decode("utf-8", "replace")
    stripped = text.lstrip(" \t\r\n")
    if not stripped:
        return "unexpected end of JSON input"
    try:
        value = json.loads(text)
    except ValueError:
        if stripped[0] not in '{["-0123456789tfn':
            return "invalid character %r looking for beginning of value" % stripped[0]
        return "unexpected end of JSON input"
    kinds = {list: "array", str: "string", bool: "bool", int: "number", float: "number"}
    if value is None or isinstance(value, dict):
        return None
    return ("json: cannot unmarshal %s into Go value of type map[string]interface {}"
            % kinds.get(type(value), "value"))


def validate_secret(secret):
    """ValidateSecret. stringData is merged into data first, as the v1 to
    internal conversion does; data values are base64 as in JSON."""
    errs = validate_object_meta(dict_of(secret, "metadata"), True, name_dns1123_subdomain)
    data = {k: _b64bytes(v) for k, v in dict_of(secret, "data").items()}
    for k, v in dict_of(secret, "stringData").items():
        data[k] = str(v).encode("utf-8")
    total = 0
    for key, value in data.items():
        errs += invalid_each("data[%s]" % key, key, is_config_map_key(key))
        total += len(value)
    if total > MAX_SECRET_SIZE:
        errs.append(too_long("data", MAX_SECRET_SIZE))
    kind = str_of(secret, "type")
    annotations = dict_of(dict_of(secret, "metadata"), "annotations")
    if kind == "kubernetes.io/service-account-token":
        key = "kubernetes.io/service-account.name"
        if not annotations.get(key):
            errs.append(errors.required("metadata.annotations[%s]" % key))
    elif kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if kind.endswith("dockercfg") else ".dockerconfigjson"
        if key not in data:
            errs.append(errors.required("data[%s]" % key))
        else:
            problem = _go_json_error(data[key])
            if problem:
                errs.append(errors.invalid("data[%s]" % key, "<secret contents redacted>",
                                           problem))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs += [errors.required("data[username]"), errors.required("data[password]")]
    elif kind == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            errs.append(errors.required("data[ssh-privatekey]"))
    elif kind == "kubernetes.io/tls":
        for key in ("tls.crt", "tls.key"):
            if key not in data:
                errs.append(errors.required("data[%s]" % key))
    return errs


def _b64bytes(value):
    try:
        return base64.b64decode(value or "", validate=True)
    except (ValueError, TypeError):
        return str(value).encode("utf-8")


def validate_service_account(sa):
    return validate_object_meta(dict_of(sa, "metadata"), True, name_dns1123_subdomain)


def validate_namespace(ns):
    errs = validate_object_meta(dict_of(ns, "metadata"), False, name_dns1123_label)
    for f in list_of(dict_of(ns, "spec"), "finalizers"):
        if isinstance(f, str):
            errs += invalid_each("spec.finalizers", f, is_qualified_name(f))
            errs += validate_kube_finalizer_name(f, "spec.finalizers")
    return errs


def validate_node(node):
    """ValidateNode: the name rule, taints, podCIDRs. Status (capacity,
    addresses) is left out: only the node agent writes it."""
    errs = validate_object_meta(dict_of(node, "metadata"), False, name_dns1123_subdomain)
    spec = dict_of(node, "spec")
    seen = set()
    for i, taint in enumerate(list_of(spec, "taints")):
        # Go builds this path from "metadata", not "spec".
        path = "metadata.taints[%d]" % i
        key, effect = str_of(taint, "key"), str_of(taint, "effect")
        errs += validate_label_name(key, path + ".key")
        value_errs = is_valid_label_value(str_of(taint, "value"))
        if value_errs:
            errs.append(errors.invalid(path + ".value", str_of(taint, "value"),
                                       ";".join(value_errs)))
        errs += validate_taint_effect(effect, False, path + ".effect")
        if (effect, key) in seen:
            errs.append(errors.Cause("FieldValueDuplicate", path,
                                     "taints must be unique by key and effect pair",
                                     GoValue("core.Taint{Key:%s, Value:%s, Effect:%s, "
                                             "TimeAdded:(*v1.Time)(nil)}"
                                             % (json.dumps(key),
                                                json.dumps(str_of(taint, "value")),
                                                json.dumps(effect)))))
            continue
        seen.add((effect, key))
    for i, cidr in enumerate(list_of(spec, "podCIDRs")):
        errs += is_valid_cidr("spec.podCIDRs[%d]" % i, cidr)
    return errs


# --- NetworkPolicy (networking.k8s.io/v1) -----------------------------------

def _validate_network_policy_port(port, path):
    errs = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in ("TCP", "UDP", "SCTP"):
        errs.append(errors.not_supported(path + ".protocol", protocol, ["TCP", "UDP", "SCTP"]))
    value, end = port.get("port"), port.get("endPort")
    if value is not None:
        if isinstance(value, int):
            errs += invalid_each(path + ".port", value, is_valid_port_num(value))
            if end is not None:
                if end < value:
                    errs.append(errors.invalid(path + ".endPort", end,
                                               "must be greater than or equal to `port`"))
                errs += invalid_each(path + ".endPort", end, is_valid_port_num(end))
        else:
            if end is not None:
                errs.append(errors.invalid(path + ".endPort", end,
                                           "may not be specified when `port` is non-numeric"))
            errs += invalid_each(path + ".port", value, is_valid_port_name(str(value)))
    elif end is not None:
        errs.append(errors.invalid(path + ".endPort", end,
                                   "may not be specified when `port` is not specified"))
    return errs


def _validate_ip_block(block, path):
    cidr = str_of(block, "cidr")
    if not cidr:
        return [errors.required(path + ".cidr")]
    errs = is_valid_cidr(path + ".cidr", cidr)
    parsed = parse_cidr_sloppy(cidr)
    if parsed is None:
        return errs
    net = ipaddress.ip_network("%s/%d" % parsed, strict=False)
    for i, text in enumerate(list_of(block, "except")):
        except_path = "%s.except[%d]" % (path, i)
        errs += is_valid_cidr(except_path, text)
        inner = parse_cidr_sloppy(text)
        if inner is None:
            continue
        inner_net = ipaddress.ip_network("%s/%d" % inner, strict=False)
        if (inner_net.version != net.version or inner_net.network_address not in net
                or parsed[1] >= inner[1]):
            errs.append(errors.invalid(except_path, text, "must be a strict subset of `cidr`"))
    return errs


def _validate_network_policy_peer(peer, path):
    errs = []
    count = 0
    for key in ("podSelector", "namespaceSelector"):
        if isinstance(peer.get(key), dict):
            count += 1
            errs += validate_label_selector(peer[key], path + "." + key)
    if isinstance(peer.get("ipBlock"), dict):
        count += 1
        errs += _validate_ip_block(peer["ipBlock"], path + ".ipBlock")
    if count == 0:
        errs.append(errors.required(path, "must specify a peer"))
    elif count > 1 and isinstance(peer.get("ipBlock"), dict):
        errs.append(errors.forbidden(path, "may not specify both ipBlock and another peer"))
    return errs


def validate_network_policy(np):
    """ValidateNetworkPolicy. A missing spec.podSelector is not refused:
    it decodes to the empty selector (all pods in the namespace), and the
    server's validation has no rule for it."""
    errs = validate_object_meta(dict_of(np, "metadata"), True, name_dns1123_subdomain)
    spec = dict_of(np, "spec")
    errs += validate_label_selector(spec.get("podSelector"), "spec.podSelector")
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(list_of(spec, direction)):
            rule_path = "spec.%s[%d]" % (direction, i)
            for j, port in enumerate(list_of(rule, "ports")):
                errs += _validate_network_policy_port(port, "%s.ports[%d]" % (rule_path, j))
            for j, peer in enumerate(list_of(rule, peers)):
                errs += _validate_network_policy_peer(peer, "%s.%s[%d]" % (rule_path, peers, j))
    types = list_of(spec, "policyTypes")
    if len(types) > 2:
        errs.append(errors.invalid("spec.policyTypes", go_strings(types, "networking.PolicyType"),
                                   "may not specify more than two policyTypes"))
        return errs
    for i, t in enumerate(types):
        if t not in ("Ingress", "Egress"):
            errs.append(errors.not_supported("spec.policyTypes[%d]" % i, t, ["Ingress", "Egress"]))
    return errs
