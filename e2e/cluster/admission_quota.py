"""The ResourceQuota admission plugin
(k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go,
CheckRequest), the last validating plugin of a create or update: for
every ResourceQuota of the namespace that limits a resource the object
uses (quota.py), the object's usage is added to the quota's status.used
and checked against status.hard, and the quota is written with the new
usage before the object is stored (so that two creates cannot both take
the last unit). Refusals, all 403 Forbidden through admission.NewForbidden
(`secrets "s" is forbidden: ...`):

  failed quota: q: must specify limits.cpu for: worker; requests.memory for: worker
  status unknown for quota: q, resources: secrets
  quota usage is negative for resource(s): requests.cpu
  exceeded quota: q, requested: secrets=1, used: secrets=0, limited: secrets=0

A dry run is checked but charges nothing. status.hard, not spec.hard, is
what is enforced: raising a quota takes effect when the quota controller
(controllers.py) has copied it, which it does as soon as it sees the
change.

Standard library only.
"""
import quantity
import quota
from store import clone, split_key

QUOTAS = "/v1/resourcequotas"


def _negative(usage):
    """quota.IsNegative: the names whose usage is below zero."""
    return sorted(k for k, v in usage.items() if v.sign() < 0)


def _less_or_equal(used, hard):
    """quota.LessThanOrEqual: (allowed, the names over their hard limit)."""
    over = [k for k, v in used.items() if k in hard and v.cmp(hard[k]) > 0]
    return not over, over


def _subtract_non_negative(a, b):
    """quota.SubtractWithNonNegativeResult."""
    out = {}
    for k, v in a.items():
        d = quantity.sub(v, b[k]) if k in b else v
        out[k] = d if d.sign() > 0 else quantity.of(0, v.format)
    return out


class QuotaAdmission:
    """The plugin over the store (its ResourceQuotas)."""

    def __init__(self, store):
        self.store = store

    def validate(self, kind, obj, old, ctx, forbidden):
        """Checks and charges a create (old None) or an update of obj;
        raises forbidden(why) (admission.forbidden for this object) when
        refused. Holds the store's lock."""
        group, resource = split_key(kind.key)
        ev = quota.evaluator(group, resource)
        op = "create" if old is None else "update"
        if not ev.handles(op, ctx.subresource):
            return
        quotas = [q for q in self.store.items(QUOTAS, ctx.namespace)]
        if not quotas:
            return
        interesting = []
        for q in quotas:
            if not ev.matches(q, obj):
                continue
            hard = (q.get("status") or {}).get("hard") or {}
            restricted = ev.matching(list(hard))
            why = ev.constraints(restricted, obj)
            if why:
                raise forbidden("failed quota: %s: %s" % (q["metadata"]["name"], why))
            used = (q.get("status") or {}).get("used") or {}
            if any(n not in used for n in restricted):
                raise forbidden("status unknown for quota: %s, resources: %s"
                                % (q["metadata"]["name"], ",".join(sorted(restricted))))
            interesting.append(q)
        usage = ev.usage(obj)
        negative = _negative(usage)
        if negative:
            raise forbidden("quota usage is negative for resource(s): %s" % ",".join(negative))
        deltas = {id(q): usage for q in interesting}
        if old is not None and old["metadata"].get("resourceVersion"):
            delta = _subtract_non_negative(usage, ev.usage(old))
            for q in interesting:
                if ev.matches(q, old):
                    deltas[id(q)] = delta
        updates = []
        for q in interesting:
            delta = {k: v for k, v in deltas[id(q)].items() if v.sign() != 0}
            if not delta:
                continue
            status = q.get("status") or {}
            hard = {k: quota._q(v) for k, v in (status.get("hard") or {}).items()}
            used = {k: quota._q(v) for k, v in (status.get("used") or {}).items()}
            requested = quota.mask(delta, hard)
            new_used = quota.add(used, requested)
            if ctx.subresource != "status":
                allowed, over = _less_or_equal(quota.mask(new_used, requested), hard)
                if not allowed:
                    raise forbidden("exceeded quota: %s, requested: %s, used: %s, limited: %s" % (
                        q["metadata"]["name"], quota.pretty(quota.mask(requested, over)),
                        quota.pretty(quota.mask(used, over)),
                        quota.pretty(quota.mask(hard, over))))
            updates.append((q, new_used))
        if ctx.dry_run:
            return
        for q, new_used in updates:
            q = clone(q)
            q["status"]["used"] = {k: str(new_used[k]) for k in sorted(new_used)}
            self.store.replace(QUOTAS, ctx.namespace, q["metadata"]["name"], q)
