"""The pods/eviction subresource: a POST of a policy/v1 Eviction, as the
real API server's EvictionREST (pkg/registry/core/pod/storage/eviction.go)
serves it, for `kubectl drain` and anything else that evicts.

- The body must be an Eviction (policy/v1 or v1beta1) naming the pod of the
  URL: 400 otherwise.
- A pod that is Succeeded, Failed or Pending, or already being deleted, is
  deleted without looking at budgets.
- Otherwise the PodDisruptionBudgets of the pod's namespace whose selector
  matches its labels (a nil or empty selector matches nothing there): more
  than one is a 500; one whose status is older than its spec, or that
  allows no disruption, is a 429 TooManyRequests whose cause
  (DisruptionBudget) says why; one that allows it has disruptionsAllowed
  taken down by one and the pod noted under disruptedPods.
- The pod gets the DisruptionTarget condition (EvictionByEvictionAPI), then
  is deleted with the Eviction's deleteOptions: its containers stop as on
  any delete, SIGTERM and the grace period.
- The answer is 201 with a Status of Success.

Standard library only.
"""
import json

import selector
from errors import ApiError, bad_request
from registry import DeleteOptions
from store import now

TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget."


def _too_many(message):
    return ApiError(429, "TooManyRequests", TOO_MANY, details={
        "causes": [{"reason": "DisruptionBudget", "message": message}]})


def _body(raw, name):
    try:
        body = json.loads(raw or b"")
    except ValueError as e:
        raise bad_request("the body of the request was in an unknown format: %s" % e) from None
    if not isinstance(body, dict) or body.get("kind") != "Eviction" or \
            body.get("apiVersion") not in ("policy/v1", "policy/v1beta1"):
        raise bad_request("the body of the request must be a policy/v1 Eviction")
    if ((body.get("metadata") or {}).get("name") or "") != name:
        raise bad_request("name in URL does not match name in Eviction object")
    return body


def _ignores_budgets(pod):
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or \
        bool(pod["metadata"].get("deletionTimestamp"))


def _take_from_budget(registry, ns, pod):
    """Checks the pod's budget and takes one disruption from it."""
    pdbs = registry.kind("policy/v1", "poddisruptionbudgets")
    labels = pod["metadata"].get("labels") or {}
    matching = [p for p in registry.store.list(pdbs.key, ns)[0]
                if selector.selector_matches((p.get("spec") or {}).get("selector"), labels)]
    if not matching:
        return
    if len(matching) > 1:
        raise ApiError(500, "InternalError", "This pod has more than one PodDisruptionBudget, "
                       "which the eviction subresource does not support.")
    pdb = matching[0]
    st = pdb.setdefault("status", {})
    name = pdb["metadata"]["name"]
    if st.get("observedGeneration", 0) < pdb["metadata"].get("generation", 0):
        raise _too_many("The disruption budget %s is still being processed by the server." % name)
    allowed = st.get("disruptionsAllowed", 0)
    if allowed < 0:
        raise ApiError(403, "Forbidden", 'poddisruptionbudget.policy "%s" is forbidden: pdb '
                       "disruptions allowed is negative" % name,
                       details={"name": name, "group": "policy", "kind": "poddisruptionbudget"})
    if allowed == 0:
        raise _too_many("The disruption budget %s needs %d healthy pods and has %d currently" % (
            name, st.get("desiredHealthy", 0), st.get("currentHealthy", 0)))
    st["disruptionsAllowed"] = allowed - 1
    st.setdefault("disruptedPods", {})[pod["metadata"]["name"]] = now()
    registry.store.replace(pdbs.key, ns, name, pdb)


def evict(registry, ns, name, raw, req):
    """Serves POST .../pods/NAME/eviction; returns (code, Status body)."""
    body = _body(raw, name)
    pods = registry.kind("v1", "pods")
    opts = json.dumps(body.get("deleteOptions") or {}).encode()
    DeleteOptions(opts, req)  # refused here, before the budget is touched
    with registry.store.lock:
        pod = registry.store.get(pods.key, ns, name)
        if not _ignores_budgets(pod):
            _take_from_budget(registry, ns, pod)
        st = pod.setdefault("status", {})
        if st.get("phase") not in ("Succeeded", "Failed"):
            st["conditions"] = [c for c in st.get("conditions") or []
                                if c.get("type") != "DisruptionTarget"] + [{
                                    "type": "DisruptionTarget", "status": "True",
                                    "reason": "EvictionByEvictionAPI",
                                    "message": "Eviction API: evicting",
                                    "lastTransitionTime": now()}]
            registry.store.replace(pods.key, ns, name, pod)
        registry.delete(pods, ns, name, opts, req)
    return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                 "code": 201}
