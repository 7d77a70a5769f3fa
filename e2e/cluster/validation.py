"""What the real kube-apiserver refuses in built-in objects, as field
errors. This module holds the shared rules (names, labels, annotations,
ObjectMeta, ports, IPs, label selectors); the kinds' own rules build on it:
validation_pod.py (with validation_container.py and validation_volume.py),
validation_service.py, and validation_kinds.py for Event, Lease, ConfigMap,
Secret, ServiceAccount, Namespace, Node and NetworkPolicy. Their entry
points are reachable here too (validation.validate_pod, ...), and
quantity.py parses resource quantities.

Followed: Kubernetes v1.33 (k8s.io/kubernetes pkg/apis/core/validation,
pkg/apis/coordination/validation, pkg/apis/networking/validation,
k8s.io/apimachinery pkg/api/validation, pkg/apis/meta/v1/validation and
pkg/util/validation at that release). Detail texts are copied from there.
Where releases differ and it shows:
  - label/annotation key texts say "a qualified name" (the content package
    of v1.35 says "a valid label key"), lengths say "characters" (v1.35
    says "bytes" for label keys);
  - Too long errors read "may not be more than N bytes" (v1.31+; before,
    "must have at most N bytes"), so they are built here, not with
    errors.too_long;
  - environment variable names: see validation_container.py.

Every validator takes objects as the API's JSON (dicts with camelCase
keys), after the server's defaults, and returns a list of errors.Cause in
the order the Go code appends them; an empty list means valid. Go walks
maps in random order; here they are walked in the order given. Values that
Go prints with %#v or a String() method (a slice, a struct, a time, a
quantity) are passed as GoValue so that they print unquoted.

Go validators that these leave out, and why, are noted where they would be.
Pure functions, standard library only.
"""
import datetime
import importlib
import ipaddress
import json
import re

import errors
import quantity

# --- Formats and messages of k8s.io/apimachinery/pkg/util/validation ----

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_ERR = ("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                     "characters or '-', and must start and end with an alphanumeric character")
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1123_SUBDOMAIN_ERR = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                         "characters, '-' or '.', and must start and end with an alphanumeric "
                         "character")
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1035_LABEL_ERR = ("a DNS-1035 label must consist of lower case alphanumeric characters or "
                     "'-', start with an alphabetic character, and end with an alphanumeric "
                     "character")
QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QNAME_ERR = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and "
             "end with an alphanumeric character")
LABEL_VALUE_FMT = "(" + QNAME_FMT + ")?"
LABEL_VALUE_ERR = ("a valid label must be an empty string or consist of alphanumeric "
                   "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                   "character")
CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
CONFIG_MAP_KEY_ERR = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
HTTP_HEADER_NAME_FMT = "[-A-Za-z0-9]+"
HTTP_HEADER_NAME_ERR = "a valid HTTP header must consist of alphanumeric characters or '-'"

FIELD_IMMUTABLE = "field is immutable"
IS_NEGATIVE = "must be greater than or equal to 0"
IS_NOT_POSITIVE = "must be greater than zero"
MAX_INT32 = 2 ** 31 - 1
TOTAL_ANNOTATION_SIZE = 256 * 1024
MAX_SECRET_SIZE = 1024 * 1024
STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")


def matches(fmt, value):
    return re.fullmatch(fmt, value) is not None


def byte_len(s):
    return len(s.encode("utf-8"))


def max_len_error(n):
    return "must be no more than %d characters" % n


def regex_error(msg, fmt, *examples):
    """Go's RegexError, spacing included: "(e.g. 'a',  or 'b', regex ...)"."""
    if not examples:
        return msg + " (regex used for validation is '" + fmt + "')"
    return (msg + " (e.g. " + " or ".join("'%s', " % e for e in examples)
            + "regex used for validation is '" + fmt + "')")


def inclusive_range_error(lo, hi):
    return "must be between %d and %d, inclusive" % (lo, hi)


# --- Values as Go prints them ---------------------------------------------

class GoValue:
    """A bad value Go prints unquoted: %#v of a slice or struct, or the
    String() of a time or quantity."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


def go_strings(values, elem="string"):
    """%#v of a []string (or of a slice of another string type)."""
    if values is None:
        return GoValue("[]%s(nil)" % elem)
    return GoValue("[]%s{" % elem + ", ".join(json.dumps(v) for v in values) + "}")


def go_time(stamp):
    """String() of a metav1.Time given as RFC 3339 (the server runs in UTC)."""
    if not stamp:
        return GoValue("0001-01-01 00:00:00 +0000 UTC")
    try:
        t = datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return GoValue(str(stamp))
    t = t.astimezone(datetime.timezone.utc)
    frac = (".%06d" % t.microsecond).rstrip("0") if t.microsecond else ""
    return GoValue(t.strftime("%Y-%m-%d %H:%M:%S") + frac + " +0000 UTC")


def too_long(path, limit):
    """field.TooLong of recent releases (errors.too_long has the older
    TooLongMaxLength text)."""
    return errors.Cause("FieldValueTooLong", path, "may not be more than %d %s"
                        % (limit, "byte" if limit == 1 else "bytes"))


# --- String rules (return detail strings, like the Go Is* functions) ------

def is_dns1123_label(value):
    errs = []
    if byte_len(value) > 63:
        errs.append(max_len_error(63))
    if not matches(DNS1123_LABEL_FMT, value):
        if matches(DNS1123_SUBDOMAIN_FMT, value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value):
    errs = []
    if byte_len(value) > 253:
        errs.append(max_len_error(253))
    if not matches(DNS1123_SUBDOMAIN_FMT, value):
        errs.append(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value):
    errs = []
    if byte_len(value) > 63:
        errs.append(max_len_error(63))
    if not matches(DNS1035_LABEL_FMT, value):
        errs.append(regex_error(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value):
    """A label key, annotation key, finalizer: [prefix/]name."""
    errs = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in is_dns1123_subdomain(prefix)]
    else:
        return ["a qualified name " + regex_error(QNAME_ERR, QNAME_FMT, "MyName", "my.name",
                                                  "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif byte_len(name) > 63:
        errs.append("name part " + max_len_error(63))
    if not matches(QNAME_FMT, name):
        errs.append("name part " + regex_error(QNAME_ERR, QNAME_FMT, "MyName", "my.name",
                                               "123-abc"))
    return errs


def is_valid_label_value(value):
    errs = []
    if byte_len(value) > 63:
        errs.append(max_len_error(63))
    if not matches(LABEL_VALUE_FMT, value):
        errs.append(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def chdir_prefix_errors(value):
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def is_config_map_key(value):
    errs = []
    if byte_len(value) > 253:
        errs.append(max_len_error(253))
    if not matches(CONFIG_MAP_KEY_FMT, value):
        errs.append(regex_error(CONFIG_MAP_KEY_ERR, CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME",
                                "key-name"))
    return errs + chdir_prefix_errors(value)


def is_valid_port_num(port):
    ok = isinstance(port, int) and not isinstance(port, bool) and 1 <= port <= 65535
    return [] if ok else [inclusive_range_error(1, 65535)]


def is_valid_port_name(port):
    """IANA_SVC_NAME: at most 15 of [-a-z0-9], a letter, no '--', no edge '-'."""
    errs = []
    if byte_len(port) > 15:
        errs.append(max_len_error(15))
    if not matches("[-a-z0-9]+", port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_http_header_name(value):
    if matches(HTTP_HEADER_NAME_FMT, value):
        return []
    return [regex_error(HTTP_HEADER_NAME_ERR, HTTP_HEADER_NAME_FMT, "X-Header-Name")]


def is_valid_id(value):
    """Unix UID or GID: 0..MaxInt32 at v1.33."""
    return [] if 0 <= value <= MAX_INT32 else [inclusive_range_error(0, MAX_INT32)]


def parse_ip_sloppy(value):
    """An ipaddress object as Go's netutils.ParseIPSloppy reads one (IPv4
    octets may have leading zeros), or None."""
    if not isinstance(value, str) or not value or "%" in value:
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        pass
    parts = value.split(".")
    if len(parts) == 4 and all(p.isdigit() and p.isascii() and int(p) <= 255 for p in parts):
        return ipaddress.IPv4Address(".".join(str(int(p)) for p in parts))
    return None


def ip_is_v6(ip):
    """Go's IsIPv6: an IPv4-mapped IPv6 address counts as IPv4."""
    return ip.version == 6 and ip.ipv4_mapped is None


def parse_cidr_sloppy(value):
    """(ip, prefix length) of "ip/len" as ParseCIDRSloppy reads it, or None."""
    if not isinstance(value, str) or value.count("/") != 1:
        return None
    addr, _, bits = value.partition("/")
    ip = parse_ip_sloppy(addr)
    if ip is None or not bits.isdigit() or not bits.isascii() or len(bits) > 3:
        return None
    if int(bits) > (32 if ip.version == 4 else 128):
        return None
    return ip, int(bits)


def is_valid_ip(path, value):
    if parse_ip_sloppy(value) is None:
        return [errors.invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or "
                                            "2001:db8::ffff)")]
    return []


def is_valid_cidr(path, value):
    if parse_cidr_sloppy(value) is None:
        return [errors.invalid(path, value, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or "
                                            "2001:db8::/64)")]
    return []


# --- Name rules (ValidateNameFunc: (name, prefix) -> detail strings) -------

def _mask_trailing_dash(name):
    # Go: name[:len(name)-2] + "a" -- it drops two characters, not one.
    if name.endswith("-"):
        return name[:max(len(name) - 2, 0)] + "a"
    return name


def name_dns1123_subdomain(name, prefix=False):
    """NameIsDNSSubdomain: pods, secrets, config maps, service accounts,
    nodes, leases, network policies, events, and custom resources (the CRD
    registry validates metadata.name of a custom resource with this, so
    `Bad_Name` is refused with the RFC 1123 subdomain message)."""
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_dns1123_label(name, prefix=False):
    """NameIsDNSLabel: namespaces."""
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_dns1035_label(name, prefix=False):
    """NameIsDNS1035Label: services."""
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def name_custom_resource(name, prefix=False):
    """The rule the CRD registry applies to metadata.name of a custom
    resource: NameIsDNSSubdomain (customresource/validator.go), so
    `Bad_Name` is refused with the RFC 1123 subdomain message. Custom
    resources get apimachinery's ObjectMeta rules, without the core
    group's finalizer check (see validate_object_meta)."""
    return name_dns1123_subdomain(name, prefix)


def name_path_segment(name, prefix=False):
    """ValidatePathSegmentName: what any name must be to sit in a URL path
    (the REST layer's rule for names in request paths; resources that
    validate only this allow `Bad_Name`)."""
    if not prefix and name in (".", ".."):
        return ["may not be '%s'" % name]
    return ["may not contain '%s'" % c for c in ("/", "%") if c in name]


# --- Field-error helpers ---------------------------------------------------

def invalid_each(path, value, msgs):
    return [errors.invalid(path, value, m) for m in msgs]


def immutable(path, new, old, shown=None):
    """ValidateImmutableField; `shown` is the value as Go prints it."""
    if semantic(new) == semantic(old):
        return []
    return [errors.invalid(path, new if shown is None else shown, FIELD_IMMUTABLE)]


def nonnegative(path, value):
    if isinstance(value, int) and value < 0:
        return [errors.invalid(path, value, IS_NEGATIVE)]
    return []


def semantic(value):
    """A value with what apiequality.Semantic ignores dropped: null fields
    and empty lists and maps (Go's nil and empty slices and maps are
    equal). Quantities are compared by value in validation_pod."""
    if isinstance(value, dict):
        out = {k: semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [semantic(v) for v in value]
    return value


def semantic_equal(a, b):
    return semantic(a) == semantic(b)


def dict_of(obj, key):
    v = obj.get(key) if isinstance(obj, dict) else None
    return v if isinstance(v, dict) else {}


def list_of(obj, key):
    v = obj.get(key) if isinstance(obj, dict) else None
    return v if isinstance(v, list) else []


def str_of(obj, key):
    v = obj.get(key) if isinstance(obj, dict) else None
    return v if isinstance(v, str) else ""


def int_of(obj, key):
    """An integer field, or None when absent (or not an integer)."""
    v = obj.get(key) if isinstance(obj, dict) else None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


# --- Labels, annotations, selectors ---------------------------------------

def validate_label_name(name, path):
    return invalid_each(path, name, is_qualified_name(name))


def validate_labels(labels, path):
    errs = []
    for k, v in (labels or {}).items():
        errs += validate_label_name(k, path)
        errs += invalid_each(path, v, is_valid_label_value(v if isinstance(v, str) else ""))
    return errs


def validate_annotations(annotations, path):
    errs = []
    total = 0
    for k, v in (annotations or {}).items():
        # A qualified name except that case does not matter.
        errs += invalid_each(path, k, is_qualified_name(k.lower()))
        total += byte_len(k) + byte_len(v if isinstance(v, str) else "")
    if total > TOTAL_ANNOTATION_SIZE:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE))
    return errs


def validate_label_selector(selector, path, allow_invalid_values=False):
    """metav1 ValidateLabelSelector (None is valid)."""
    if not isinstance(selector, dict):
        return []
    errs = validate_labels(selector.get("matchLabels"), path + ".matchLabels")
    for i, req in enumerate(list_of(selector, "matchExpressions")):
        errs += _validate_selector_requirement(req, "%s.matchExpressions[%d]" % (path, i),
                                               allow_invalid_values)
    return errs


def _validate_selector_requirement(req, path, allow_invalid_values):
    errs = []
    op, values = str_of(req, "operator"), list_of(req, "values")
    if op in ("In", "NotIn"):
        if not values:
            errs.append(errors.required(path + ".values",
                                        "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(errors.forbidden(path + ".values", "may not be specified when "
                                         "`operator` is 'Exists' or 'DoesNotExist'"))
    else:
        errs.append(errors.invalid(path + ".operator", op, "not a valid selector operator"))
    errs += validate_label_name(str_of(req, "key"), path + ".key")
    if not allow_invalid_values:
        for i, v in enumerate(values):
            errs += invalid_each("%s.values[%d]" % (path, i), v, is_valid_label_value(str(v)))
    return errs


# --- ObjectMeta ------------------------------------------------------------

def _owner_reference_text(r):
    """%#v of a v1.OwnerReference. Go prints the addresses of the two
    *bool fields; here the values stand where the addresses would."""
    def ptr(v):
        return "(*bool)(nil)" if v is None else "(*bool)(%s)" % json.dumps(bool(v))
    return ("v1.OwnerReference{APIVersion:%s, Kind:%s, Name:%s, UID:%s, Controller:%s, "
            "BlockOwnerDeletion:%s}" % (json.dumps(str_of(r, "apiVersion")),
                                        json.dumps(str_of(r, "kind")),
                                        json.dumps(str_of(r, "name")),
                                        json.dumps(str_of(r, "uid")),
                                        ptr(r.get("controller")),
                                        ptr(r.get("blockOwnerDeletion"))))


def _owner_references_text(refs):
    return GoValue("[]v1.OwnerReference{" + ", ".join(_owner_reference_text(r) for r in refs)
                   + "}")


def _group_version(api_version):
    """(group, version) of an apiVersion; ("", "") when it has two slashes."""
    if not api_version:
        return "", ""
    if "/" not in api_version:
        return "", api_version
    parts = api_version.split("/")
    return (parts[0], parts[1]) if len(parts) == 2 else ("", "")


def _validate_owner_reference(ref, path):
    errs = []
    api_version, kind = str_of(ref, "apiVersion"), str_of(ref, "kind")
    group, version = _group_version(api_version)
    if not version:
        errs.append(errors.invalid(path + ".apiVersion", api_version,
                                   "version must not be empty"))
    if not kind:
        errs.append(errors.invalid(path + ".kind", kind, "must not be empty"))
    if not str_of(ref, "name"):
        errs.append(errors.invalid(path + ".name", str_of(ref, "name"), "must not be empty"))
    if not str_of(ref, "uid"):
        errs.append(errors.invalid(path + ".uid", str_of(ref, "uid"), "must not be empty"))
    if (group, version, kind) == ("", "v1", "Event"):
        errs.append(errors.invalid(path, GoValue(_owner_reference_text(ref)),
                                   "/v1, Kind=Event is disallowed from being an owner"))
    return errs


def validate_owner_references(refs, path):
    errs = []
    first = ""
    for ref in refs:
        if not isinstance(ref, dict):
            continue
        errs += _validate_owner_reference(ref, path)
        if ref.get("controller") is True:
            this = str_of(ref, "kind") + "/" + str_of(ref, "name")
            if first:
                errs.append(errors.invalid(
                    path, _owner_references_text(refs),
                    'Only one reference can have Controller set to true. Found "true" in '
                    'references for %s and %s' % (first, this)))
            else:
                first = this
    return errs


def validate_finalizers(finalizers, path):
    """apimachinery ValidateFinalizers: qualified names, orphan and
    foregroundDeletion not both."""
    errs = []
    for f in finalizers:
        errs += invalid_each(path, f, is_qualified_name(f))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(errors.invalid(path, go_strings(finalizers),
                                   "finalizer orphan and foregroundDeletion cannot be both set"))
    return errs


def validate_kube_finalizer_name(name, path):
    """Core kinds also refuse an unprefixed finalizer that is not standard."""
    if "/" not in name and name not in STANDARD_FINALIZERS:
        return [errors.invalid(path, name, "name is neither a standard finalizer name nor is "
                                           "it fully qualified")]
    return []


def validate_object_meta(meta, namespaced, name_rule, path="metadata", core=None):
    """ValidateObjectMeta on create. `core` adds the check of unprefixed
    finalizer names that pkg/apis/core/validation's copy makes; leases and
    custom resources use apimachinery's alone. None means: all but custom
    resources (named by name_custom_resource)."""
    if core is None:
        core = name_rule is not name_custom_resource
    meta = meta if isinstance(meta, dict) else {}
    errs = []
    generate_name, name = str_of(meta, "generateName"), str_of(meta, "name")
    if generate_name:
        errs += invalid_each(path + ".generateName", generate_name,
                             name_rule(generate_name, True))
    if not name:
        errs.append(errors.required(path + ".name", "name or generateName is required"))
    else:
        errs += invalid_each(path + ".name", name, name_rule(name, False))
    namespace = str_of(meta, "namespace")
    if namespaced:
        if not namespace:
            errs.append(errors.required(path + ".namespace"))
        else:
            errs += invalid_each(path + ".namespace", namespace,
                                 name_dns1123_label(namespace, False))
    elif namespace:
        errs.append(errors.forbidden(path + ".namespace", "not allowed on this type"))
    errs += nonnegative(path + ".generation", meta.get("generation"))
    errs += validate_labels(dict_of(meta, "labels"), path + ".labels")
    errs += validate_annotations(dict_of(meta, "annotations"), path + ".annotations")
    errs += validate_owner_references(list_of(meta, "ownerReferences"),
                                      path + ".ownerReferences")
    finalizers = [f for f in list_of(meta, "finalizers") if isinstance(f, str)]
    errs += validate_finalizers(finalizers, path + ".finalizers")
    # ValidateManagedFields is left out: the server writes managedFields.
    if core:
        for i, f in enumerate(finalizers):
            errs += validate_kube_finalizer_name(f, "%s.finalizers[%d]" % (path, i))
    return errs


def validate_object_meta_update(new_meta, old_meta, path="metadata", core=True):
    """ValidateObjectMetaUpdate. The caller has already done what the
    registry's BeforeUpdate does first: copied generation, uid (when
    empty), creationTimestamp, deletionTimestamp and
    deletionGracePeriodSeconds from the stored object; so these errors
    appear only when a caller bypasses that."""
    new = new_meta if isinstance(new_meta, dict) else {}
    old = old_meta if isinstance(old_meta, dict) else {}
    errs = []
    new_finalizers = [f for f in list_of(new, "finalizers") if isinstance(f, str)]
    if old.get("deletionTimestamp"):
        extra = sorted(set(new_finalizers) - set(list_of(old, "finalizers")))
        if extra:
            errs.append(errors.forbidden(path + ".finalizers", "no new finalizers can be added "
                                         "if the object is being deleted, found new finalizers "
                                         + go_strings(extra).text))
    if not new.get("resourceVersion"):
        errs.append(errors.invalid(path + ".resourceVersion", str_of(new, "resourceVersion"),
                                   "must be specified for an update"))
    new_gen, old_gen = new.get("generation") or 0, old.get("generation") or 0
    if new_gen < old_gen:
        errs.append(errors.invalid(path + ".generation", new_gen, "must not be decremented"))
    for field in ("name", "namespace", "uid"):
        errs += immutable(path + "." + field, str_of(new, field), str_of(old, field))
    errs += immutable(path + ".creationTimestamp", new.get("creationTimestamp"),
                      old.get("creationTimestamp"), go_time(new.get("creationTimestamp")))
    new_del = new.get("deletionTimestamp")
    errs += immutable(path + ".deletionTimestamp", new_del, old.get("deletionTimestamp"),
                      go_time(new_del) if new_del else None)
    errs += immutable(path + ".deletionGracePeriodSeconds",
                      new.get("deletionGracePeriodSeconds"),
                      old.get("deletionGracePeriodSeconds"))
    errs += validate_labels(dict_of(new, "labels"), path + ".labels")
    errs += validate_annotations(dict_of(new, "annotations"), path + ".annotations")
    errs += validate_owner_references(list_of(new, "ownerReferences"),
                                      path + ".ownerReferences")
    if core:
        for i, f in enumerate(new_finalizers):
            errs += validate_kube_finalizer_name(f, "%s.finalizers[%d]" % (path, i))
    return errs


# --- Protocols and taint effects (pods, services, nodes, policies) ---------

PROTOCOLS = ["SCTP", "TCP", "UDP"]
TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


def validate_taint_effect(effect, allow_empty, path):
    if not allow_empty and not effect:
        return [errors.required(path)]
    if effect not in TAINT_EFFECTS:
        return [errors.not_supported(path, effect, TAINT_EFFECTS)]
    return []


# --- Shared by pods and services ---------------------------------------------

def validate_protocol(protocol, path):
    """A port's protocol: required, and one of TCP, UDP and SCTP."""
    if not protocol:
        return [errors.required(path)]
    if protocol not in PROTOCOLS:
        return [errors.not_supported(path, protocol, PROTOCOLS)]
    return []


def validate_port_num_or_name(port, path):
    """An IntOrString port: a number 1-65535 or an IANA_SVC_NAME."""
    if isinstance(port, int) and not isinstance(port, bool):
        return invalid_each(path, port, is_valid_port_num(port))
    if isinstance(port, str):
        return invalid_each(path, port, is_valid_port_name(port))
    return invalid_each(path, 0, is_valid_port_num(0))


PULL_POLICIES = ["Always", "IfNotPresent", "Never"]


def validate_pull_policy(policy, path):
    """A container's imagePullPolicy, an image volume's pullPolicy."""
    if policy in PULL_POLICIES:
        return []
    if not policy:
        return [errors.required(path)]
    return [errors.not_supported(path, policy, PULL_POLICIES)]


def parse_quantity(value):
    """A quantity.Quantity; quantity.QuantityError propagates (the server
    fails decoding a body with one, before any validation)."""
    return value if isinstance(value, quantity.Quantity) else quantity.parse(value)


# --- The kinds whose rules live in other modules ---------------------------
# validation_pod.py, validation_service.py and validation_kinds.py build on
# this module; validation.<name> reaches their entry points (imported on
# first use, so that the import graph stays one-way).

_ELSEWHERE = {
    "validate_pod": "validation_pod", "validate_pod_update": "validation_pod",
    "validate_service": "validation_service",
    "validate_service_update": "validation_service",
    "validate_core_event": "validation_kinds", "validate_events_v1_event": "validation_kinds",
    "validate_lease": "validation_kinds", "validate_configmap": "validation_kinds",
    "validate_secret": "validation_kinds", "validate_service_account": "validation_kinds",
    "validate_namespace": "validation_kinds", "validate_node": "validation_kinds",
    "validate_network_policy": "validation_kinds",
}


def __getattr__(name):
    if name not in _ELSEWHERE:
        raise AttributeError("module 'validation' has no attribute %r" % name)
    return getattr(importlib.import_module(_ELSEWHERE[name]), name)
