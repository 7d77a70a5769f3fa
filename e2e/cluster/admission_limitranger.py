"""The LimitRanger admission plugin (plugin/pkg/admission/limitranger/
admission.go) over the LimitRanges of a namespace:

- mutating, on a pod create: each container and init container gets the
  `default` of every Container limit as its limits and the
  `defaultRequest` as its requests where it sets none, and the pod is
  annotated `kubernetes.io/limit-ranger: LimitRanger plugin set: cpu,
  memory request for container worker; cpu limit for container worker`;
- validating, on a pod create: each container against the Container
  limits' min, max and maxLimitRequestRatio, the pod's sums against the
  Pod limits'; on a PersistentVolumeClaim create or update: the claim's
  storage request against the PersistentVolumeClaim limits' min and max.

A refusal is 403 Forbidden through admission.NewForbidden, with the
errors of one LimitRange aggregated (one error as it is, several as
"[e1, e2]"), e.g.

  pods "p" is forbidden: maximum cpu usage per Container is 1, but limit is 2
  pods "p" is forbidden: [minimum memory usage per Container is 64Mi, but request is 32Mi, cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000]

The real plugin walks Go maps, so the order of several errors varies from
one request to the next there; here the resources are taken in name order.

Standard library only.
"""
import quantity
import quota

LIMITRANGES = "/v1/limitranges"
ANNOTATION = "kubernetes.io/limit-ranger"
# resource.MaxMilliValue: past it, values are compared in units, not milli.
MAX_MILLI = ((1 << 63) - 1) // 1000


def _q(text):
    return quota._q(text)


def _values(req, lim, enforced):
    """requestLimitEnforcedValues: the three at a common precision."""
    r, l_, e = (x.value_int() if x is not None else 0 for x in (req, lim, enforced))
    if r <= MAX_MILLI and l_ <= MAX_MILLI and e <= MAX_MILLI:
        r, l_, e = (x.milli_value() if x is not None else 0 for x in (req, lim, enforced))
    return r, l_, e


def min_constraint(kind, name, enforced, requests, limits):
    req, lim = requests.get(name), limits.get(name)
    r, l_, e = _values(req, lim, enforced)
    if req is None:
        return "minimum %s usage per %s is %s.  No request is specified" % (name, kind, enforced)
    if r < e:
        return "minimum %s usage per %s is %s, but request is %s" % (name, kind, enforced, req)
    if lim is not None and l_ < e:
        return "minimum %s usage per %s is %s, but limit is %s" % (name, kind, enforced, lim)
    return None


def max_request_constraint(kind, name, enforced, requests):
    req = requests.get(name)
    r, _, e = _values(req, None, enforced)
    if req is None:
        return "maximum %s usage per %s is %s.  No request is specified" % (name, kind, enforced)
    if r > e:
        return "maximum %s usage per %s is %s, but request is %s" % (name, kind, enforced, req)
    return None


def max_constraint(kind, name, enforced, requests, limits):
    req, lim = requests.get(name), limits.get(name)
    r, l_, e = _values(req, lim, enforced)
    if lim is None:
        return "maximum %s usage per %s is %s.  No limit is specified" % (name, kind, enforced)
    if l_ > e:
        return "maximum %s usage per %s is %s, but limit is %s" % (name, kind, enforced, lim)
    if req is not None and r > e:
        return "maximum %s usage per %s is %s, but request is %s" % (name, kind, enforced, req)
    return None


def ratio_constraint(kind, name, enforced, requests, limits):
    req, lim = requests.get(name), limits.get(name)
    r, l_, _ = _values(req, lim, enforced)
    if req is None or r == 0:
        return ("%s max limit to request ratio per %s is %s, but no request is specified or "
                "request is 0" % (name, kind, enforced))
    if lim is None or l_ == 0:
        return ("%s max limit to request ratio per %s is %s, but no limit is specified or "
                "limit is 0" % (name, kind, enforced))
    observed = display = l_ / r
    most = float(enforced.value_int())
    if enforced.value_int() <= MAX_MILLI:
        observed, most = observed * 1000, float(enforced.milli_value())
    if observed > most:
        return ("%s max limit to request ratio per %s is %s, but provided ratio is %f"
                % (name, kind, enforced, display))
    return None


def _items(limit, field):
    return sorted((k, _q(v)) for k, v in (limit.get(field) or {}).items())


def _check(limit, kind, requests, limits, errs):
    """Min, max and ratio of one limit over one container or the pod."""
    for name, v in _items(limit, "min"):
        errs.append(min_constraint(kind, name, v, requests, limits))
    for name, v in _items(limit, "max"):
        errs.append(max_constraint(kind, name, v, requests, limits))
    for name, v in _items(limit, "maxLimitRequestRatio"):
        errs.append(ratio_constraint(kind, name, v, requests, limits))


def _resources(c, field):
    return {k: _q(v) for k, v in ((c.get("resources") or {}).get(field) or {}).items()}


def aggregate(errs):
    """utilerrors.NewAggregate(...).Error(): one as it is, several in []."""
    errs = [e for e in errs if e]
    if not errs:
        return None
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


def pod_validate(lr, pod):
    """PodValidateLimitFunc: the error of one LimitRange, or None."""
    spec = pod.get("spec") or {}
    containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
    errs = []
    for limit in (lr.get("spec") or {}).get("limits") or []:
        kind = limit.get("type")
        if kind == "Container":
            for c in containers:
                _check(limit, kind, _resources(c, "requests"), _resources(c, "limits"), errs)
        elif kind == "Pod":
            _check(limit, kind, quota._pod_sum(pod, "requests"), quota._pod_sum(pod, "limits"),
                   errs)
    return aggregate(errs)


def claim_validate(lr, pvc):
    """PersistentVolumeClaimValidateLimitFunc."""
    requests = {k: _q(v) for k, v in (((pvc.get("spec") or {}).get("resources") or {})
                                      .get("requests") or {}).items()}
    errs = []
    for limit in (lr.get("spec") or {}).get("limits") or []:
        if limit.get("type") != "PersistentVolumeClaim":
            continue
        for name, v in _items(limit, "min"):
            errs.append(min_constraint("PersistentVolumeClaim", name, v, requests, {}))
        for name, v in _items(limit, "max"):
            errs.append(max_request_constraint("PersistentVolumeClaim", name, v, requests))
    return aggregate(errs)


def _defaults(lr):
    """defaultContainerResourceRequirements: (limits, requests)."""
    limits, requests = {}, {}
    for limit in (lr.get("spec") or {}).get("limits") or []:
        if limit.get("type") == "Container":
            requests.update(limit.get("defaultRequest") or {})
            limits.update(limit.get("default") or {})
    return limits, requests


def _merge(c, limits, requests, what, notes):
    """mergeContainerResources: fills what the container does not set."""
    res = c.get("resources")
    if not isinstance(res, dict):
        res = c["resources"] = {}
    set_limits, set_requests = [], []
    for field, defaults, added in (("limits", limits, set_limits),
                                   ("requests", requests, set_requests)):
        have = res.get(field) if isinstance(res.get(field), dict) else {}
        for name, v in defaults.items():
            if name not in have:
                have[name] = quantity.canonical(v)
                added.append(name)
        if have:
            res[field] = have
    if set_requests:
        notes.append("%s request for %s %s" % (", ".join(sorted(set_requests)), what,
                                               c.get("name", "")))
    if set_limits:
        notes.append("%s limit for %s %s" % (", ".join(sorted(set_limits)), what,
                                             c.get("name", "")))


def pod_mutate(lr, pod):
    """PodMutateLimitFunc: one LimitRange's defaults into the pod."""
    limits, requests = _defaults(lr)
    spec = pod.get("spec") or {}
    notes = []
    for c in spec.get("containers") or []:
        _merge(c, limits, requests, "container", notes)
    for c in spec.get("initContainers") or []:
        _merge(c, limits, requests, "init container", notes)
    if notes:
        md = pod.setdefault("metadata", {})
        md.setdefault("annotations", {})[ANNOTATION] = "LimitRanger plugin set: " + \
            "; ".join(notes)


class LimitRanger:
    def __init__(self, store):
        self.store = store

    def _ranges(self, ns):
        return self.store.items(LIMITRANGES, ns)

    def admit(self, kind, obj, ctx):
        """The mutating half: pod creates only (containers cannot change)."""
        if kind.key != "/v1/pods" or ctx.subresource:
            return
        for lr in self._ranges(ctx.namespace):
            pod_mutate(lr, obj)

    def validate(self, kind, obj, old, ctx):
        """The validating half: the error text of the first LimitRange the
        object breaks, or None."""
        if ctx.subresource or (old is not None and (old["metadata"].get("deletionTimestamp")
                                                    or kind.key == "/v1/pods")):
            return None
        if kind.key == "/v1/pods":
            check = pod_validate
        elif kind.key == "/v1/persistentvolumeclaims":
            check = claim_validate
        else:
            return None
        for lr in self._ranges(ctx.namespace):
            why = check(lr, obj)
            if why:
                return why
        return None
