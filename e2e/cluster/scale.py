"""The scale subresource of Deployments and ReplicaSets (GET, PUT and PATCH
of .../deployments/NAME/scale, an autoscaling/v1 Scale), which `kubectl
scale` and autoscalers use, as pkg/registry/apps/deployment/storage's
ScaleREST serves it: the Scale shows the object's metadata, spec.replicas,
status.replicas and status.selector (the label selector as a string); a
write changes spec.replicas of the object, with the Scale's
resourceVersion as a precondition when it has one.

Standard library only.
"""
import json

import patch
from errors import ApiError, bad_request, invalid, invalid_error
from registry import Result

KINDS = ("apps/v1/deployments", "apps/v1/replicasets")
DISCOVERY = {"singularName": "", "group": "autoscaling", "version": "v1", "kind": "Scale",
             "verbs": ["get", "patch", "update"]}


def selector_string(sel):
    """metav1.LabelSelectorAsSelector(sel).String(): requirements sorted by
    key, "k=v", "k in (a,b)", "k notin (a)", "k", "!k"."""
    reqs = []
    for k, v in (sel or {}).get("matchLabels", {}).items():
        reqs.append((k, "%s=%s" % (k, v)))
    for e in (sel or {}).get("matchExpressions") or []:
        k, op, values = e.get("key", ""), e.get("operator"), sorted(e.get("values") or [])
        text = {"In": "%s in (%s)" % (k, ",".join(values)),
                "NotIn": "%s notin (%s)" % (k, ",".join(values)),
                "Exists": k, "DoesNotExist": "!" + k}.get(op, k)
        reqs.append((k, text))
    return ",".join(t for _, t in sorted(reqs))


def to_scale(obj):
    md = obj["metadata"]
    meta = {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion",
                               "creationTimestamp") if k in md}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": meta,
            "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 1)},
            "status": {"replicas": (obj.get("status") or {}).get("replicas", 0),
                       "selector": selector_string((obj.get("spec") or {}).get("selector"))}}


def write(registry, kind, ns, name, scale, req):
    """Sets spec.replicas of the object from scale; the new Scale."""
    if not isinstance(scale, dict) or scale.get("kind", "Scale") != "Scale":
        raise bad_request("the object provided is unrecognized (must be of type Scale)")
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise invalid_error("Scale", "autoscaling", name, [invalid(
            "spec.replicas", replicas, "must be greater than or equal to 0")])
    with registry.store.lock:
        obj = registry.get(kind, ns, name)
        want = (scale.get("metadata") or {}).get("resourceVersion")
        if want:
            obj["metadata"]["resourceVersion"] = want
        obj["spec"]["replicas"] = replicas
        res = registry._update(kind, ns, name, obj, req, None, [])
    return Result(200, to_scale(res.body), res.warnings)


def serve(registry, kind, ns, name, method, raw, ctype, req):
    """A request to the scale subresource: (status, body, warnings)."""
    if kind.key not in KINDS:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    if method == "GET":
        return 200, to_scale(registry.get(kind, ns, name)), []
    try:
        body = json.loads(raw or b"null")
    except ValueError as e:
        raise bad_request("error decoding body: %s" % e) from None
    if method == "PATCH":
        current = to_scale(registry.get(kind, ns, name))
        if ctype == patch.JSON_PATCH:
            body = patch.json_patch(current, body)
        elif ctype in (patch.MERGE, patch.STRATEGIC) and isinstance(body, dict):
            body = patch.merge_patch(current, body)
        else:
            raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an "
                           "unknown format - accepted media types include: " + ", ".join(
                               (patch.JSON_PATCH, patch.MERGE, patch.STRATEGIC)))
    elif method != "PUT":
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the "
                       "requested resource")
    res = write(registry, kind, ns, name, body, req)
    return res.code, res.body, res.warnings
