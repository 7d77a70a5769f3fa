"""Validation of the namespace policy kinds, as pkg/apis/core/validation
has it: ResourceQuota (ValidateResourceQuota: its name, each hard and
status resource a quota resource with a non-negative value, whole for
counted resources, its scopes) and LimitRange (ValidateLimitRange: each
limit's type, resource names, min <= defaultRequest <= default <= max,
ratios of at least 1). Maps are walked in key order (Go's are not
ordered), so several errors come in a stable order here.

Standard library only.
"""
import errors
import quantity
import validation as v
import validation_container as vc

STANDARD_QUOTA_RESOURCES = {
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.storage", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage", "pods", "services", "replicationcontrollers", "resourcequotas",
    "secrets", "persistentvolumeclaims", "configmaps", "services.nodeports",
    "services.loadbalancers"}
SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
          "CrossNamespacePodAffinity")
LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
SCOPE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _resource_name(name, path):
    """validateResourceName: qualified, and standard when unprefixed."""
    errs = v.invalid_each(path, name, v.is_qualified_name(name))
    if errs:
        return errs
    if "/" not in name and name not in vc.STANDARD_RESOURCES and \
            not name.startswith(("hugepages-", "requests.hugepages-")):
        return [errors.invalid(path, name, "must be a standard resource type or fully "
                               "qualified")]
    return []


def _quota_resource_name(name, path):
    """validateResourceQuotaResourceName."""
    errs = _resource_name(name, path)
    if not errs and "/" not in name and name not in STANDARD_QUOTA_RESOURCES and \
            not name.startswith(("hugepages-", "requests.hugepages-")):
        errs.append(errors.invalid(path, name, "must be a standard resource for quota"))
    return errs


def _resource_list(resources, path):
    errs = []
    for name in sorted(resources or {}):
        p = "%s[%s]" % (path, name)
        errs += _quota_resource_name(name, p)
        try:
            q = v.parse_quantity(resources[name])
        except quantity.QuantityError:
            continue  # the decoder refused it already
        errs += vc._quantity_value(name, q, p)
    return errs


def _scopes(spec, path):
    """validateResourceQuotaScopes and validateScopeSelector, in short:
    known scope names and operators."""
    errs = []
    for i, s in enumerate(v.list_of(spec, "scopes")):
        if s not in SCOPES:
            errs.append(errors.invalid("%s.scopes[%d]" % (path, i), s, "unsupported scope"))
    exprs = v.list_of(v.dict_of(spec, "scopeSelector"), "matchExpressions")
    for i, e in enumerate(exprs):
        p = "%s.scopeSelector.matchExpressions[%d]" % (path, i)
        if not isinstance(e, dict):
            continue
        if e.get("scopeName") not in SCOPES:
            errs.append(errors.invalid(p + ".scopeName", e.get("scopeName", ""),
                                       "unsupported scope"))
        if e.get("operator") not in SCOPE_OPERATORS:
            errs.append(errors.invalid(p + ".operator", e.get("operator", ""),
                                       "not a valid selector operator"))
    return errs


def validate_resource_quota(rq):
    errs = v.validate_object_meta(rq.get("metadata") or {}, True, v.name_dns1123_subdomain)
    spec, status = v.dict_of(rq, "spec"), v.dict_of(rq, "status")
    errs += _resource_list(v.dict_of(spec, "hard"), "spec.hard")
    errs += _scopes(spec, "spec")
    errs += _resource_list(v.dict_of(status, "hard"), "status.hard")
    errs += _resource_list(v.dict_of(status, "used"), "status.used")
    return errs


def _limit_resource_name(kind, name, path):
    """validateLimitRangeResourceName."""
    if kind in ("Pod", "Container"):
        return vc._container_resource_name(name, path)
    return _resource_name(name, path)


def _quantities(limit, field, kind, path, errs):
    out = {}
    for name in sorted(v.dict_of(limit, field)):
        errs += _limit_resource_name(kind, name, "%s.%s[%s]" % (path, field, name))
        try:
            out[name] = v.parse_quantity(limit[field][name])
        except quantity.QuantityError:
            pass
    return out


def _bad(path, field, name, q, detail):
    return errors.invalid("%s.%s[%s]" % (path, field, name), v.GoValue(str(q)), detail)


# The orderings ValidateLimitRange requires, in its order: (left, right,
# the field the error names, the one whose value it shows, the detail);
# left greater than right is the error.
ORDER = [
    ("min", "max", "min", "min", "min value %s is greater than max value %s"),
    ("min", "defaultRequest", "defaultRequest", "defaultRequest",
     "min value %s is greater than default request value %s"),
    ("defaultRequest", "max", "defaultRequest", "defaultRequest",
     "default request value %s is greater than max value %s"),
    ("defaultRequest", "default", "defaultRequest", "defaultRequest",
     "default request value %s is greater than default limit value %s"),
    ("min", "default", "default", "min", "min value %s is greater than default value %s"),
    ("default", "max", "default", "max", "default value %s is greater than max value %s"),
]


def _limit(limit, path):
    """One item of ValidateLimitRange."""
    errs = []
    kind = v.str_of(limit, "type")
    most = _quantities(limit, "max", kind, path, errs)
    least = _quantities(limit, "min", kind, path, errs)
    default, request = {}, {}
    if kind == "Pod":
        for field in ("default", "defaultRequest"):
            if v.dict_of(limit, field):
                errs.append(errors.forbidden("%s.%s" % (path, field),
                                             "may not be specified when `type` is 'Pod'"))
    else:
        default = _quantities(limit, "default", kind, path, errs)
        request = _quantities(limit, "defaultRequest", kind, path, errs)
    if kind == "PersistentVolumeClaim" and "storage" not in least and "storage" not in most:
        errs.append(errors.required(path + ".limits", "either minimum or maximum storage value "
                                    "is required, but neither was provided"))
    ratio = _quantities(limit, "maxLimitRequestRatio", kind, path, errs)
    lists = {"min": least, "max": most, "default": default, "defaultRequest": request}
    for k in sorted(set(most) | set(least) | set(default) | set(request) | set(ratio)):
        for left, right, field, shown, detail in ORDER:
            a, b = lists[left].get(k), lists[right].get(k)
            if a is not None and b is not None and a.cmp(b) > 0:
                errs.append(_bad(path, field, k, lists[shown][k], detail % (a, b)))
        lo, hi, d, r, mr = least.get(k), most.get(k), default.get(k), request.get(k), \
            ratio.get(k)
        if mr is not None and mr.cmp(quantity.of(1)) < 0:
            errs.append(_bad(path, "maxLimitRequestRatio", k, mr, "ratio %s is less than 1"
                             % mr))
        if mr is not None and lo is not None and hi is not None and lo.value_int():
            most_ratio = float(hi.milli_value()) / float(lo.milli_value())
            if float(mr.milli_value()) / 1000 > most_ratio:
                errs.append(_bad(path, "maxLimitRequestRatio", k, mr, "ratio %s is greater "
                                 "than max/min = %f" % (mr, most_ratio)))
        if not vc._overcommit_allowed(k) and d is not None and r is not None and d.cmp(r):
            errs.append(_bad(path, "defaultRequest", k, r, "default value %s must equal to "
                             "defaultRequest value %s in %s" % (d, r, k)))
    return errs


def validate_limit_range(lr):
    errs = v.validate_object_meta(lr.get("metadata") or {}, True, v.name_dns1123_subdomain)
    seen = set()
    for i, limit in enumerate(v.list_of(v.dict_of(lr, "spec"), "limits")):
        path = "spec.limits[%d]" % i
        if not isinstance(limit, dict):
            continue
        kind = v.str_of(limit, "type")
        type_errs = v.invalid_each(path + ".type", kind, v.is_qualified_name(kind))
        if not type_errs and "/" not in kind and kind not in LIMIT_TYPES:
            type_errs.append(errors.invalid(path + ".type", kind, "must be a standard limit "
                                            "type or fully qualified"))
        errs += type_errs
        if kind in seen:
            errs.append(errors.duplicate(path + ".type", kind))
        seen.add(kind)
        errs += _limit(limit, path)
    return errs
