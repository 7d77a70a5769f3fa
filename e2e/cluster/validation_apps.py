"""Validation of the apps/v1 kinds the cluster serves, Deployment and
ReplicaSet, as pkg/apis/apps/validation/validation.go does it: the
metadata, replicas and minReadySeconds not negative, a selector that is
given, valid and not empty, a pod template whose labels the selector
matches and whose spec is a valid pod spec with restartPolicy Always and
no activeDeadlineSeconds, a Deployment's strategy and history limits; on
update, apps/v1 keeps the selector immutable.

Standard library only.
"""
import json

import errors
import validation as v
from errors import GoRaw
from selector import selector_matches
from validation_pod import validate_pod_spec


def _go_map(labels):
    """Go's %#v of a map[string]string, keys sorted as fmt sorts them."""
    return "map[string]string{%s}" % ", ".join(
        "%s:%s" % (json.dumps(k), json.dumps(val)) for k, val in sorted((labels or {}).items()))


def _go_selector(sel):
    """%#v of a *metav1.LabelSelector (matchExpressions shown as present
    or nil only: the refusals that print it are about matchLabels)."""
    labels = sel.get("matchLabels")
    exprs = sel.get("matchExpressions")
    return GoRaw("&v1.LabelSelector{MatchLabels:%s, MatchExpressions:%s}" % (
        _go_map(labels) if labels else "map[string]string(nil)",
        "[]v1.LabelSelectorRequirement{...}" if exprs else
        "[]v1.LabelSelectorRequirement(nil)"))


def _selector(spec, path):
    sel = spec.get("selector")
    if not isinstance(sel, dict):
        return [errors.required(path + ".selector")]
    errs = v.validate_label_selector(sel, path + ".selector")
    if not v.dict_of(sel, "matchLabels") and not v.list_of(sel, "matchExpressions"):
        errs.append(errors.invalid(path + ".selector", _go_selector(sel),
                                   "empty selector is invalid for deployment"))
    return errs


def _template(spec, path):
    """ValidatePodTemplateSpecForReplicaSet."""
    tmpl = spec.get("template")
    if not isinstance(tmpl, dict):
        return [errors.required(path + ".template")]
    tpath = path + ".template"
    meta, pspec = v.dict_of(tmpl, "metadata"), v.dict_of(tmpl, "spec")
    errs = []
    sel = spec.get("selector")
    if isinstance(sel, dict) and (sel.get("matchLabels") or sel.get("matchExpressions")) and \
            not selector_matches(sel, meta.get("labels")):
        errs.append(errors.invalid(tpath + ".metadata.labels", GoRaw(_go_map(meta.get(
            "labels"))), "`selector` does not match template `labels`"))
    errs += v.validate_labels(meta.get("labels"), tpath + ".metadata.labels")
    errs += v.validate_annotations(meta.get("annotations"), tpath + ".metadata.annotations")
    errs += validate_pod_spec(pspec, "", tpath + ".spec")
    policy = pspec.get("restartPolicy", "Always")
    if policy != "Always":
        errs.append(errors.not_supported(tpath + ".spec.restartPolicy", policy, ["Always"]))
    if pspec.get("activeDeadlineSeconds") is not None:
        errs.append(errors.forbidden(tpath + ".spec.activeDeadlineSeconds",
                                     "activeDeadlineSeconds in ReplicaSet is not Supported"))
    return errs


def _strategy(spec, path):
    strategy = v.dict_of(spec, "strategy")
    spath = path + ".strategy"
    kind = strategy.get("type")
    if kind == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            return [errors.forbidden(spath + ".rollingUpdate", "may not be specified when "
                                     "strategy `type` is 'Recreate'")]
        return []
    if kind != "RollingUpdate":
        return [errors.not_supported(spath + ".type", kind or "", ["Recreate",
                                                                     "RollingUpdate"])]
    ru = v.dict_of(strategy, "rollingUpdate")
    surge, unavailable = ru.get("maxSurge"), ru.get("maxUnavailable")
    if str(surge) in ("0", "0%") and str(unavailable) in ("0", "0%"):
        return [errors.invalid(spath + ".rollingUpdate.maxUnavailable",
                               unavailable, "may not be 0 when `maxSurge` is 0")]
    return []


def _spec(obj, deployment):
    spec = v.dict_of(obj, "spec")
    path = "spec"
    errs = v.nonnegative(path + ".replicas", spec.get("replicas"))
    errs += _selector(spec, path)
    errs += _template(spec, path)
    if deployment:
        errs += _strategy(spec, path)
    errs += v.nonnegative(path + ".minReadySeconds", spec.get("minReadySeconds"))
    if deployment:
        errs += v.nonnegative(path + ".revisionHistoryLimit", spec.get("revisionHistoryLimit"))
        deadline, min_ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds", 0)
        if isinstance(deadline, int):
            errs += v.nonnegative(path + ".progressDeadlineSeconds", deadline)
            if deadline <= (min_ready or 0):
                errs.append(errors.invalid(path + ".progressDeadlineSeconds", deadline,
                                           "must be greater than minReadySeconds"))
    return errs


def validate_deployment(obj):
    errs = v.validate_object_meta(v.dict_of(obj, "metadata"), True, v.name_dns1123_subdomain)
    return errs + _spec(obj, True)


def validate_replica_set(obj):
    errs = v.validate_object_meta(v.dict_of(obj, "metadata"), True, v.name_dns1123_subdomain)
    return errs + _spec(obj, False)


def _update(new, old, deployment):
    errs = v.validate_object_meta_update(v.dict_of(new, "metadata"), v.dict_of(old, "metadata"))
    errs += _spec(new, deployment)
    sel = v.dict_of(new, "spec").get("selector")
    if isinstance(sel, dict):
        errs += v.immutable("spec.selector", sel, v.dict_of(old, "spec").get("selector"),
                            _go_selector(sel))
    return errs


def validate_deployment_update(new, old):
    return _update(new, old, True)


def validate_replica_set_update(new, old):
    return _update(new, old, False)
