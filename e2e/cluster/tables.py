"""Server-side tables, which kubectl get asks for (Accept: ...;as=Table):
a Name column, then a kind's printer columns (the real server's for pods,
services, deployments and replica sets, which `kubectl get all` shows; a
CRD's additionalPrinterColumns; else Age), each row with the object's
metadata.

Standard library only.
"""
import datetime


def age(stamp):
    """A creation time as kubectl shows it: "45s", "12m", "3h", "2d"."""
    try:
        t = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc)
    except ValueError:
        return stamp
    s = max(0, int((datetime.datetime.now(datetime.timezone.utc) - t).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= 2 * size:
            return "%d%s" % (s // size, unit)
    return "%ds" % s


def _cell(obj, column):
    if "cell" in column:
        return column["cell"](obj)
    v = obj
    for part in column["jsonPath"].strip(".").split("."):
        v = v.get(part) if isinstance(v, dict) else None
    if column["type"] == "date" and isinstance(v, str):
        v = age(v)
    return v


# --- the built-in kinds' columns, as pkg/printers/internalversion/printers.go
# prints them (what kubectl get all shows) ---

def _age_cell(obj):
    return age(obj["metadata"].get("creationTimestamp", ""))


def _pod_status(pod):
    """printPod's STATUS: the phase or the pod's reason, then the reason
    of an init container or a container that is not running, then
    Terminating for a pod being deleted."""
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    for c in reversed(status.get("containerStatuses") or []):
        state = c.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state:
            t = state["terminated"]
            reason = t.get("reason") or ("Signal:%d" % t["signal"] if t.get("signal")
                                         else "ExitCode:%d" % t.get("exitCode", 0))
    if pod["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    return reason


def _pod_ready(pod):
    cs = (pod.get("status") or {}).get("containerStatuses") or []
    total = len((pod.get("spec") or {}).get("containers") or [])
    return "%d/%d" % (sum(1 for c in cs if c.get("ready")), total)


def _pod_restarts(pod):
    return str(sum(c.get("restartCount", 0) for c in
                   (pod.get("status") or {}).get("containerStatuses") or []))


def _containers(tmpl_of):
    def cell(obj):
        cs = ((tmpl_of(obj).get("spec") or {}).get("containers") or [])
        return ",".join(c.get("name", "") for c in cs)
    return cell


def _images(tmpl_of):
    def cell(obj):
        cs = ((tmpl_of(obj).get("spec") or {}).get("containers") or [])
        return ",".join(c.get("image", "") for c in cs)
    return cell


def _selector(obj):
    sel = (obj.get("spec") or {}).get("selector") or {}
    parts = ["%s=%s" % kv for kv in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        op = e.get("operator")
        if op in ("In", "NotIn"):
            parts.append("%s %s (%s)" % (e.get("key"), op.lower(),
                                         ",".join(e.get("values") or [])))
        elif op == "Exists":
            parts.append(e.get("key"))
        else:
            parts.append("!" + e.get("key", ""))
    return ",".join(parts) or "<none>"


def _service_ports(svc):
    ports = []
    for p in (svc.get("spec") or {}).get("ports") or []:
        text = "%s/%s" % (p.get("port"), p.get("protocol", "TCP"))
        if p.get("nodePort"):
            text = "%s:%s/%s" % (p.get("port"), p["nodePort"], p.get("protocol", "TCP"))
        ports.append(text)
    return ",".join(ports) or "<none>"


def _external_ips(svc):
    spec = svc.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return spec.get("externalName", "")
    ips = list(spec.get("externalIPs") or [])
    ips += [i.get("ip") or i.get("hostname") for i in
            ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []]
    if spec.get("type") == "LoadBalancer" and not ips:
        return "<pending>"
    return ",".join(ips) or "<none>"


def _svc_selector(svc):
    sel = (svc.get("spec") or {}).get("selector") or {}
    return ",".join("%s=%s" % kv for kv in sorted(sel.items())) or "<none>"


def _status(field):
    return lambda obj: (obj.get("status") or {}).get(field, 0)


def _template(obj):
    return (obj.get("spec") or {}).get("template") or {}


def _col(name, cell, ctype="string", priority=0):
    return {"name": name, "type": ctype, "cell": cell, "priority": priority}


def _quota_column(limits):
    """printResourceQuota's Request or Limit column: "name: used/hard" of
    status.hard's resources (those named limits.* in the Limit column),
    sorted, joined by ", "."""
    def cell(rq):
        status = rq.get("status") or {}
        hard, used = status.get("hard") or {}, status.get("used") or {}
        return ", ".join("%s: %s/%s" % (k, used.get(k, "0"), hard[k]) for k in sorted(hard)
                         if k.startswith("limits.") == limits)
    return cell


AGE = _col("Age", _age_cell)
COLUMNS = {
    "/v1/pods": [
        _col("Ready", _pod_ready), _col("Status", _pod_status),
        _col("Restarts", _pod_restarts), AGE,
        _col("IP", lambda p: (p.get("status") or {}).get("podIP") or "<none>", priority=1),
        _col("Node", lambda p: (p.get("spec") or {}).get("nodeName") or "<none>", priority=1),
        _col("Nominated Node", lambda p: (p.get("status") or {}).get("nominatedNodeName")
             or "<none>", priority=1),
        _col("Readiness Gates", lambda p: "<none>", priority=1)],
    "/v1/services": [
        _col("Type", lambda s: (s.get("spec") or {}).get("type", "ClusterIP")),
        _col("Cluster-IP", lambda s: (s.get("spec") or {}).get("clusterIP") or "<none>"),
        _col("External-IP", _external_ips), _col("Port(s)", _service_ports), AGE,
        _col("Selector", _svc_selector, priority=1)],
    "apps/v1/deployments": [
        _col("Ready", lambda d: "%d/%d" % (_status("readyReplicas")(d),
                                           (d.get("spec") or {}).get("replicas", 1))),
        _col("Up-to-date", _status("updatedReplicas"), "integer"),
        _col("Available", _status("availableReplicas"), "integer"), AGE,
        _col("Containers", _containers(_template), priority=1),
        _col("Images", _images(_template), priority=1),
        _col("Selector", _selector, priority=1)],
    "/v1/resourcequotas": [AGE, _col("Request", _quota_column(False)),
                           _col("Limit", _quota_column(True))],
    "/v1/limitranges": [_col("Created At", lambda o: o["metadata"].get("creationTimestamp"),
                             "date")],
    "apps/v1/replicasets": [
        _col("Desired", lambda r: (r.get("spec") or {}).get("replicas", 1), "integer"),
        _col("Current", _status("replicas"), "integer"),
        _col("Ready", _status("readyReplicas"), "integer"), AGE,
        _col("Containers", _containers(_template), priority=1),
        _col("Images", _images(_template), priority=1),
        _col("Selector", _selector, priority=1)],
}


def table(kind, items, rv):
    """The Table of items of kind at resourceVersion rv."""
    cols = [{"name": "Name", "type": "string", "format": "name"}] + \
        [c for c in COLUMNS.get(kind.key) or kind.table_columns() if c["name"] != "Name"]
    rows = [{"cells": [obj["metadata"]["name"]] + [_cell(obj, c) for c in cols[1:]],
             "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                        "metadata": obj["metadata"]}} for obj in items]
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": rv},
            "columnDefinitions": [{"name": c["name"], "type": c["type"],
                                   "format": c.get("format", ""),
                                   "description": c.get("description", ""),
                                   "priority": c.get("priority", 0)} for c in cols],
            "rows": rows}
