"""The PodSecurity admission plugin (k8s.io/pod-security-admission/
admission/admission.go, api/helpers.go; the checks are podsecurity.py),
with kube-apiserver's default configuration: every mode privileged:latest
unless the namespace's labels say otherwise, no exemptions.

Namespace labels: pod-security.kubernetes.io/enforce, /audit and /warn
(privileged, baseline or restricted) and each with -version (latest or
v1.N). An unparsable enforce level counts as restricted, an unparsable
version as latest; a namespace is refused with those labels on create,
and on an update that changes them, with 422 Invalid:

  Namespace "ns" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted

What it checks:
- a pod create, or an update that changes an image (or the seccomp
  annotations): enforce refuses it with 403 Forbidden (NewForbidden of
  the pod's name)

    pods "p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ...

  and otherwise warn answers `would violate PodSecurity "restricted:latest": ...`
  as a Warning header, which kubectl prints;
- a Deployment's or ReplicaSet's pod template: warnings only (enforce is
  for the pods their controllers make);
- a namespace update that makes enforce stricter: the existing pods that
  would break it, as warnings (`existing pods in namespace "ns" violate
  the new PodSecurity enforce level "restricted:latest"`, then
  `p (and 2 other pods): allowPrivilegeEscalation != false, ...`).

Audit annotations are not kept: the local cluster writes no audit log.

Standard library only.
"""
import re

import podsecurity
from errors import invalid, invalid_error

NAMESPACES = "/v1/namespaces"
PODS = "/v1/pods"
PREFIX = "pod-security.kubernetes.io/"
MODES = ("enforce", "audit", "warn")
VERSION = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")
# The pod controllers of DefaultPodSpecExtractor that the cluster serves.
TEMPLATE_KINDS = ("apps/v1/deployments", "apps/v1/replicasets")
# A pod subresource write the plugin lets through unchecked.
IGNORED_SUBRESOURCES = ("exec", "attach", "binding", "eviction", "log", "portforward", "proxy",
                        "status")
MAX_PODS_TO_CHECK = 3000


def policy(labels):
    """api.PolicyToEvaluate: ({mode: (level, version)}, field errors)."""
    labels = labels or {}
    out = {m: ("privileged", "latest") for m in MODES}
    errs = []
    for mode in MODES:
        level, version = out[mode]
        key = PREFIX + mode
        if key in labels:
            level = labels[key]
            if level not in podsecurity.LEVELS:
                errs.append(invalid("metadata.labels[%s]" % key, labels[key],
                                    "must be one of " + ", ".join(podsecurity.LEVELS)))
                # Fail closed for enforce, open for audit and warn.
                level = "restricted" if mode == "enforce" else "privileged"
        key = PREFIX + mode + "-version"
        if key in labels:
            version = labels[key]
            if version != "latest" and not VERSION.match(version):
                errs.append(invalid("metadata.labels[%s]" % key, labels[key],
                                    'must be "latest" or "v1.x"'))
                version = "latest"
            elif version != "latest":
                version = "v1.%d" % int(VERSION.match(version).group(1))
        out[mode] = (level, version)
    return out, errs


def level_version(lv):
    """LevelVersion.String(): restricted:latest, baseline:v1.29."""
    return "%s:%s" % lv


def _stricter(new, old):
    """api.CompareLevels(new, old) >= 1."""
    order = {lv: i for i, lv in enumerate(podsecurity.LEVELS)}
    return order.get(new, 2) > order.get(old, 2)


def _significant_update(new, old):
    """isSignificantPodUpdate: a change of container count, of an image or
    of a seccomp annotation; an ephemeral container added."""
    na = (new.get("metadata") or {}).get("annotations") or {}
    oa = (old.get("metadata") or {}).get("annotations") or {}
    key = "seccomp.security.alpha.kubernetes.io/pod"
    if na.get(key) != oa.get(key):
        return True
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    for field in ("containers", "initContainers"):
        a, b = ns.get(field) or [], os_.get(field) or []
        if len(a) != len(b):
            return True
        for c, o in zip(a, b):
            ckey = "container.seccomp.security.alpha.kubernetes.io/" + c.get("name", "")
            if c.get("image") != o.get("image") or na.get(ckey) != oa.get(ckey):
                return True
    old_ephemeral = {c.get("name"): c for c in os_.get("ephemeralContainers") or []}
    for c in ns.get("ephemeralContainers") or []:
        o = old_ephemeral.get(c.get("name"))
        ckey = "container.seccomp.security.alpha.kubernetes.io/" + c.get("name", "")
        if o is None or c.get("image") != o.get("image") or na.get(ckey) != oa.get(ckey):
            return True
    return False


class PodSecurity:
    def __init__(self, store):
        self.store = store

    def _namespace_policy(self, ns):
        obj = self.store.peek(NAMESPACES, None, ns)
        return policy(((obj or {}).get("metadata") or {}).get("labels"))

    def validate(self, kind, obj, old, ctx, forbidden):
        """Checks a create (old None) or an update; raises forbidden(why)
        or an Invalid, and adds warnings to ctx.warnings."""
        if kind.key == NAMESPACES:
            return self._namespace(obj, old, ctx)
        if kind.key == PODS:
            if ctx.subresource in IGNORED_SUBRESOURCES:
                return None
            if old is not None and not _significant_update(obj, old):
                return None
            return self._evaluate(obj.get("metadata") or {}, obj.get("spec") or {}, ctx,
                                  forbidden, enforce=True)
        if kind.key in TEMPLATE_KINDS and not ctx.subresource:
            template = (obj.get("spec") or {}).get("template")
            if isinstance(template, dict):
                return self._evaluate(template.get("metadata") or {},
                                      template.get("spec") or {}, ctx, forbidden,
                                      enforce=False)
        return None

    def _evaluate(self, meta, spec, ctx, forbidden, enforce):
        """Admission.EvaluatePod: enforce refuses; warn warns when allowed."""
        modes, _ = self._namespace_policy(ctx.namespace)
        if all(lv[0] == "privileged" for lv in modes.values()):
            return None
        if enforce:
            results = podsecurity.evaluate(*modes["enforce"], meta, spec)
            if results:
                raise forbidden('violates PodSecurity "%s": %s' % (
                    level_version(modes["enforce"]), podsecurity.forbidden_detail(results)))
        results = podsecurity.evaluate(*modes["warn"], meta, spec)
        if results:
            ctx.warnings.append('would violate PodSecurity "%s": %s' % (
                level_version(modes["warn"]), podsecurity.forbidden_detail(results)))
        return None

    def _namespace(self, ns, old, ctx):
        """ValidateNamespace: labels valid; a stricter enforce level warns
        of the pods that break it."""
        if ctx.subresource:
            return None
        new_policy, new_errs = policy((ns.get("metadata") or {}).get("labels"))
        name = (ns.get("metadata") or {}).get("name", "")
        if old is None:
            if new_errs:
                raise invalid_error("Namespace", "", name, new_errs)
            return None
        old_policy, old_errs = policy((old.get("metadata") or {}).get("labels"))
        if new_errs and (not old_errs or [str(e) for e in new_errs] !=
                         [str(e) for e in old_errs]):
            raise invalid_error("Namespace", "", name, new_errs)
        new, prev = new_policy["enforce"], old_policy["enforce"]
        if new == prev or new[0] == "privileged" or \
                (new[1] == prev[1] and not _stricter(new[0], prev[0])):
            return None
        ctx.warnings.extend(self._existing_pods(name, new))
        return None

    def _existing_pods(self, ns, enforce):
        """EvaluatePodsInNamespace: warnings for the pods of ns that would
        break enforce, one per distinct set of reasons, naming the first
        pod by name and how many others."""
        pods = self.store.items(PODS, ns)
        first, seen, duplicates = [], set(), []
        for p in pods:
            ref = next((r for r in p["metadata"].get("ownerReferences") or []
                        if r.get("controller")), None)
            if ref is None:
                first.append(p)
            elif ref.get("uid") in seen:
                duplicates.append(p)
            else:
                seen.add(ref.get("uid"))
                first.append(p)
        ordered = first + duplicates
        total, checked = len(ordered), ordered[:MAX_PODS_TO_CHECK]
        counts, order = {}, []
        for p in checked:
            results = podsecurity.evaluate(*enforce, p["metadata"], p.get("spec") or {})
            if not results:
                continue
            reason = podsecurity.forbidden_reason(results)
            name = p["metadata"]["name"]
            if reason not in counts:
                counts[reason] = [name, 0]
                order.append(reason)
            elif name < counts[reason][0]:
                counts[reason][0] = name
            counts[reason][1] += 1
        warnings = []
        if len(checked) < total:
            warnings.append("new PodSecurity enforce level only checked against the first %d "
                            "of %d existing pods" % (len(checked), total))
        if order:
            warnings.append('existing pods in namespace "%s" violate the new PodSecurity '
                            'enforce level "%s"' % (ns, level_version(enforce)))
        decorated = []
        for reason in order:
            name, n = counts[reason]
            if n == 1:
                decorated.append("%s: %s" % (name, reason))
            elif n == 2:
                decorated.append("%s (and 1 other pod): %s" % (name, reason))
            else:
                decorated.append("%s (and %d other pods): %s" % (name, n - 1, reason))
        return warnings + sorted(decorated)
