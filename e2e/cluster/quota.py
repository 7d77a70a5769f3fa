"""What an object uses of a ResourceQuota, as the real quota evaluators
measure it: one table entry per resource (EVALUATORS), the generic object
count for every other resource, and the sums the quota controller writes
into status.used (usage_of).

The evaluators (pkg/quota/v1/evaluator/core, and the generic one of
k8s.io/apiserver/pkg/quota/v1/generic/evaluator.go):

- pods: `pods`, `count/pods` and the compute resources: `cpu`, `memory`,
  `ephemeral-storage` (the requests), `requests.*`, `limits.*`, the
  `hugepages-*` requests and `requests.<extended resource>`; the pod's
  requests and limits are PodRequests/PodLimits (the sum of the
  containers and sidecars, or the largest init container if more). A pod
  in a terminal phase, or past its deletion's grace period, uses only
  `count/pods`. When a quota limits cpu or memory (requests or limits),
  every container must state them (Constraints: "must specify ...").
  Scopes: Terminating, NotTerminating, BestEffort, NotBestEffort,
  PriorityClass, CrossNamespacePodAffinity.
- services: `services`, `count/services`, `services.loadbalancers`,
  `services.nodeports`; creates and updates (a type can change).
- persistentvolumeclaims: `persistentvolumeclaims`,
  `count/persistentvolumeclaims`, `requests.storage`.
- configmaps, secrets, resourcequotas, replicationcontrollers: the count,
  under `count/<resource>` and the legacy name `<resource>`.
- anything else: `count/<resource>.<group>` (`count/<resource>` in the
  core group), creates only.

Quantities are quantity.Quantity; a ResourceList here is a dict of them.

Standard library only.
"""
import datetime

import quantity

PODS = "/v1/pods"
TERMINAL = ("Succeeded", "Failed")
# pods.go validationSet: quotas on these require every container to set them.
VALIDATION_SET = ("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu",
                  "limits.memory")
POD_RESOURCES = ("count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu",
                 "requests.memory", "requests.ephemeral-storage", "limits.cpu",
                 "limits.memory", "limits.ephemeral-storage", "pods")
NATIVE_PREFIXES = ("kubernetes.io/", "requests.", "limits.")
ONE = quantity.of(1)


def count_name(group, resource):
    """generic.ObjectCountQuotaResourceNameFor: count/pods,
    count/multiworkerjobs.training.mwj.io."""
    return "count/%s.%s" % (resource, group) if group else "count/" + resource


def _q(text):
    """A quantity of a stored object (valid: validation saw it)."""
    try:
        return quantity.from_json(text)
    except (quantity.QuantityError, AttributeError):
        return quantity.of(0)


def add(a, b):
    """quota.Add: the sum of two ResourceLists."""
    out = dict(a)
    for k, v in b.items():
        out[k] = quantity.add(out[k], v) if k in out else v
    return out


def mask(resources, names):
    """quota.Mask: only the given names."""
    return {k: v for k, v in resources.items() if k in names}


def pretty(resources):
    """prettyPrint of the quota admission: name=value, sorted, by commas."""
    return ",".join("%s=%s" % (k, resources[k]) for k in sorted(resources))


# --- pods ---

def _is_extended(name):
    """helper.IsExtendedResourceName: qualified, not native, not requests.*."""
    return "/" in name and not name.startswith(NATIVE_PREFIXES) and \
        not name.startswith("requests.")


def _resource_list(d):
    return {k: _q(v) for k, v in (d or {}).items()} if isinstance(d, dict) else {}


def _max_into(total, other):
    for k, v in other.items():
        if k not in total or v.cmp(total[k]) > 0:
            total[k] = v


def _pod_sum(pod, field):
    """PodRequests / PodLimits (pkg/api/v1/resource/helpers.go): the
    containers and restartable init containers (sidecars) added up, or
    the largest init container with the sidecars started before it, if
    more; then the pod's overhead."""
    spec = pod.get("spec") or {}
    total = {}
    for c in spec.get("containers") or []:
        total = add(total, _resource_list((c.get("resources") or {}).get(field)))
    sidecars, init_max = {}, {}
    for c in spec.get("initContainers") or []:
        own = _resource_list((c.get("resources") or {}).get(field))
        if c.get("restartPolicy") == "Always":
            total = add(total, own)
            sidecars = add(sidecars, own)
            _max_into(init_max, sidecars)
        else:
            _max_into(init_max, add(own, sidecars))
    _max_into(total, init_max)
    return add(total, _resource_list(spec.get("overhead")))


def _compute_usage(requests, limits):
    """podComputeUsageHelper."""
    out = {"pods": ONE}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            out[name] = requests[name]
            out["requests." + name] = requests[name]
        if name in limits:
            out["limits." + name] = limits[name]
    for name, v in requests.items():
        if name.startswith("hugepages-"):
            out[name] = v
            out["requests." + name] = v
        if _is_extended(name):
            out["requests." + name] = v
    return out


def _counts(pod):
    """QuotaV1Pod: a pod is charged unless terminal or past its deletion's
    grace period."""
    status = pod.get("status") or {}
    if status.get("phase") in TERMINAL:
        return False
    md = pod.get("metadata") or {}
    stamp = md.get("deletionTimestamp")
    if stamp and md.get("deletionGracePeriodSeconds") is not None:
        try:
            t = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(
                tzinfo=datetime.timezone.utc)
        except ValueError:
            return True
        end = t + datetime.timedelta(seconds=md["deletionGracePeriodSeconds"])
        if datetime.datetime.now(datetime.timezone.utc) > end:
            return False
    return True


def pod_usage(pod):
    """PodUsageFunc."""
    out = {"count/pods": ONE}
    if not _counts(pod):
        return out
    return add(out, _compute_usage(_pod_sum(pod, "requests"), _pod_sum(pod, "limits")))


def pod_constraints(required, pod):
    """podEvaluator.Constraints: the error text, or None."""
    need = sorted(set(required) & set(VALIDATION_SET))
    if not need:
        return None
    missing = {}
    spec = pod.get("spec") or {}
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        res = c.get("resources") or {}
        have = _compute_usage(_resource_list(res.get("requests")),
                              _resource_list(res.get("limits")))
        for name in need:
            if name not in have:
                missing.setdefault(name, set()).add(c.get("name", ""))
    if not missing:
        return None
    return "must specify " + "; ".join("%s for: %s" % (r, ",".join(sorted(missing[r])))
                                       for r in sorted(missing))


def _pod_matching(names):
    return [n for n in names if n in POD_RESOURCES or n.startswith(
        ("hugepages-", "requests.hugepages-")) or (n.startswith("requests.") and _is_extended(
            n[len("requests."):]))]


def _best_effort(pod):
    spec = pod.get("spec") or {}
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        res = c.get("resources") or {}
        for field in ("requests", "limits"):
            if any(n in ("cpu", "memory") and _q(v).sign() > 0
                   for n, v in (res.get(field) or {}).items()):
                return False
    return True


def _cross_namespace_affinity(pod):
    aff = (pod.get("spec") or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        a = aff.get(kind) or {}
        terms = list(a.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        terms += [t.get("podAffinityTerm") or {} for t in
                  a.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in terms):
            return True
    return False


def _pod_scope(selector, pod):
    """podMatchesScopeFunc."""
    spec = pod.get("spec") or {}
    scope = selector.get("scopeName")
    if scope in ("Terminating", "NotTerminating"):
        deadline = spec.get("activeDeadlineSeconds")
        terminating = deadline is not None and deadline >= 0
        return terminating if scope == "Terminating" else not terminating
    if scope in ("BestEffort", "NotBestEffort"):
        return _best_effort(pod) == (scope == "BestEffort")
    if scope == "PriorityClass":
        op, values = selector.get("operator", "Exists"), selector.get("values") or []
        name = spec.get("priorityClassName") or ""
        if op == "Exists":
            return bool(name)
        if op == "DoesNotExist":
            return not name
        if op == "In":
            return bool(name) and name in values
        if op == "NotIn":
            return not name or name not in values
        return False
    if scope == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(pod)
    return False


# --- services and claims ---

def service_usage(svc):
    spec = svc.get("spec") or {}
    ports = len(spec.get("ports") or [])
    out = {"count/services": ONE, "services": ONE, "services.loadbalancers": quantity.of(0),
           "services.nodeports": quantity.of(0)}
    if spec.get("type") == "NodePort":
        out["services.nodeports"] = quantity.of(ports)
    elif spec.get("type") == "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is False:
            ports = sum(1 for p in spec.get("ports") or [] if p.get("nodePort"))
        out["services.nodeports"] = quantity.of(ports)
        out["services.loadbalancers"] = ONE
    return out


def claim_usage(pvc):
    out = {"count/persistentvolumeclaims": ONE, "persistentvolumeclaims": ONE}
    storage = ((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {}
    if "storage" in storage:
        out["requests.storage"] = _q(storage["storage"])
    return out


class Evaluator:
    """quota.Evaluator for one group/resource: the names it tracks, which
    operations it charges, an object's usage, its constraints and scopes."""

    def __init__(self, group, resource, names, usage=None, handles=("create",),
                 matching=None, constraints=None, scope=None):
        self.group, self.resource = group, resource
        self.names = tuple(names)
        self._usage = usage
        self.handles_ops = handles
        self._matching = matching
        self._constraints = constraints
        self._scope = scope

    def matching(self, names):
        """MatchingResources: the names of names this evaluator tracks."""
        if self._matching:
            return self._matching(names)
        return [n for n in names if n in self.names]

    def handles(self, op, sub):
        if self.resource == "pods" and sub:
            return False
        return op in self.handles_ops

    def usage(self, obj):
        if self._usage:
            return self._usage(obj)
        return {n: ONE for n in self.names}

    def constraints(self, required, obj):
        return self._constraints(required, obj) if self._constraints else None

    def scope_matches(self, selector, obj):
        return self._scope(selector, obj) if self._scope else False

    def matches(self, quota_obj, obj):
        """generic.Matches: the quota limits one of its resources and obj
        is in all of the quota's scopes."""
        hard = ((quota_obj.get("status") or {}).get("hard") or {})
        if not self.matching(list(hard)):
            return False
        return all(self.scope_matches(s, obj) for s in scope_selectors(quota_obj))


def scope_selectors(quota_obj):
    """getScopeSelectorsFromQuota: spec.scopes as Exists selectors, then
    spec.scopeSelector's expressions."""
    spec = quota_obj.get("spec") or {}
    out = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or []]
    return out + list((spec.get("scopeSelector") or {}).get("matchExpressions") or [])


def _legacy(resource):
    return Evaluator("", resource, (count_name("", resource), resource))


# One entry per resource with more than a count (pkg/quota/v1/evaluator/core/registry.go).
EVALUATORS = {
    ("", "pods"): Evaluator("", "pods", POD_RESOURCES, pod_usage, ("create",), _pod_matching,
                            pod_constraints, _pod_scope),
    ("", "services"): Evaluator("", "services", ("count/services", "services",
                                                 "services.nodeports",
                                                 "services.loadbalancers"),
                                service_usage, ("create", "update")),
    ("", "persistentvolumeclaims"): Evaluator(
        "", "persistentvolumeclaims", ("count/persistentvolumeclaims", "persistentvolumeclaims",
                                       "requests.storage"), claim_usage, ("create", "update")),
    ("", "configmaps"): _legacy("configmaps"),
    ("", "secrets"): _legacy("secrets"),
    ("", "resourcequotas"): _legacy("resourcequotas"),
    ("", "replicationcontrollers"): _legacy("replicationcontrollers"),
}


def evaluator(group, resource):
    """The evaluator of a group/resource: its own, or the generic count."""
    return EVALUATORS.get((group, resource)) or \
        Evaluator(group, resource, (count_name(group, resource),))


def parse_count_name(name):
    """(group, resource) of count/<resource>[.<group>], or None."""
    if not name.startswith("count/"):
        return None
    resource, _, group = name[len("count/"):].partition(".")
    return group, resource


def _objects(store, group, resource, ns):
    """The stored objects of a group/resource in ns, of every version."""
    out = []
    for key in store.keys():
        g, _, rest = key.partition("/")
        if g == group and rest.rpartition("/")[2] == resource:
            out += store.items(key, ns)
    return out


def usage_of(store, quota_obj, hard, served):
    """quota.CalculateUsage: the namespace's use of the resources in hard
    (names) that some evaluator tracks, each started at zero; the
    resources of objects in all the quota's scopes. served(group,
    resource) says whether the cluster serves a resource: a count of one
    it does not serve has no entry (its use is unknown)."""
    ns = quota_obj["metadata"]["namespace"]
    names = list(hard)
    kinds = set(EVALUATORS)
    for n in names:
        parsed = parse_count_name(n)
        if parsed and (parsed in EVALUATORS or served(*parsed)):
            kinds.add(parsed)
    used = {}
    selectors = scope_selectors(quota_obj)
    for group, resource in sorted(kinds):
        ev = evaluator(group, resource)
        tracked = ev.matching(names)
        if not tracked:
            continue
        sums = {n: quantity.of(0) for n in tracked}
        for obj in _objects(store, group, resource, ns):
            if all(ev.scope_matches(s, obj) for s in selectors):
                sums = add(sums, mask(ev.usage(obj), tracked))
        used = add(used, sums)
    return mask(used, names)
