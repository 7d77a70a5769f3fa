#!/usr/bin/python3
"""The local test cluster's API server: HTTPS, bearer-token auth, and the
Kubernetes API semantics that mwj-operator and kubectl rely on, over the
object store in store.py and the CRD schema handling in schema.py.

Served so far: discovery (/version, /api, /apis and their group-versions),
OpenAPI v3 enough for kubectl's server-side field validation, namespaced
CRUD for the core kinds the operator uses, coordination leases and
CustomResourceDefinitions with the resources they install (schema
defaults, 422 for invalid objects), resourceVersion with 409 Conflict,
generation, the status subresource, merge and strategic merge patch, label
and field selectors with limit/continue, watch (resourceVersion, bookmarks,
timeoutSeconds, 410 Expired after compaction), server-side tables for
kubectl's columns, garbage collection through ownerReferences, and pod
graceful deletion (marked, then gone once the node deletes with grace 0),
and pods/log. With --node-dir, the node in node.py runs the pods.

Fault injection for tests, behind the same token:
  POST /mwj-test/compact                   forget the watch history (410s)
  POST /mwj-test/drop-watches              end every open watch
  POST /mwj-test/errors?code=500|429|503&seconds=S
                                           answer every API request so
  GET  /mwj-test/errors                    how many were answered so
  POST /mwj-test/preempt?namespace=&name=&reason=Preempted|Evicted[&grace=S]
                                           preempt or evict a pod
  POST /mwj-test/kill?namespace=&name=&signal=KILL[&container=]
                                           signal a container's processes

usage: apiserver.py --port N --cert F --key F --token T [--bookmark-seconds S]
                    [--node-dir D --ca F --podnet SO --image NAME=PATH ...]
Standard library only.
"""
import argparse
import base64
import datetime
import json
import os
import re
import signal
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import schema
import selector
from node import Node
from store import ApiError, Store, merge_patch, strategic_merge_patch

VERSION = {"major": "1", "minor": "31", "gitVersion": "v1.31.0-mwj-local",
           "platform": "linux/amd64", "goVersion": "n/a", "compiler": "n/a",
           "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z"}

# group/version -> plural -> (kind, namespaced, has status, short names)
BUILTIN = {
    "v1": {
        "namespaces": ("Namespace", False, True, ["ns"]),
        "nodes": ("Node", False, True, ["no"]),
        "pods": ("Pod", True, True, ["po"]),
        "services": ("Service", True, True, ["svc"]),
        "events": ("Event", True, False, ["ev"]),
        "persistentvolumeclaims": ("PersistentVolumeClaim", True, True, ["pvc"]),
        "configmaps": ("ConfigMap", True, False, ["cm"]),
    },
    "coordination.k8s.io/v1": {
        "leases": ("Lease", True, False, []),
    },
    "apiextensions.k8s.io/v1": {
        "customresourcedefinitions": ("CustomResourceDefinition", False, True, ["crd", "crds"]),
    },
}
CRD_KEY = "apiextensions.k8s.io/v1/customresourcedefinitions"


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


def page(items, query):
    """?limit= and ?continue= over items sorted by namespace and name: the
    token is the last name handed out. Returns (items, next token or "")."""
    after = query.get("continue", [""])[0]
    if after:
        try:
            after = json.loads(base64.urlsafe_b64decode(after.encode()).decode())
        except ValueError as e:
            raise ApiError(400, "BadRequest", "invalid continue token") from e
        items = [o for o in items if [o["metadata"].get("namespace") or "",
                                      o["metadata"]["name"]] > after]
    limit = int(query.get("limit", ["0"])[0] or 0)
    if limit <= 0 or len(items) <= limit:
        return items, ""
    last = items[limit - 1]["metadata"]
    token = json.dumps([last.get("namespace") or "", last["name"]])
    return items[:limit], base64.urlsafe_b64encode(token.encode()).decode()


class Api:
    """The resources served, the store, and the request semantics."""

    def __init__(self):
        self.store = Store()
        self.lock = threading.RLock()
        for ns in ("default", "kube-system"):
            self.store.create("/v1/namespaces", None, {"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": ns}})

    # --- what is served ---

    def crds(self):
        items, _ = self.store.list(CRD_KEY)
        return items

    def resources(self):
        """group/version -> plural -> (kind, namespaced, has_status, short, schema)."""
        out = {gv: {p: v + (None,) for p, v in rs.items()} for gv, rs in BUILTIN.items()}
        for crd in self.crds():
            spec = crd["spec"]
            for v in spec.get("versions", []):
                if not v.get("served", True):
                    continue
                gv = "%s/%s" % (spec["group"], v["name"])
                out.setdefault(gv, {})[spec["names"]["plural"]] = (
                    spec["names"]["kind"], spec.get("scope") == "Namespaced",
                    "status" in (v.get("subresources") or {}),
                    spec["names"].get("shortNames", []),
                    (v.get("schema") or {}).get("openAPIV3Schema"))
        return out

    def resource_list(self, gv):
        rs = self.resources().get(gv)
        if rs is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        res = []
        for plural, (kind, namespaced, has_status, short, _) in sorted(rs.items()):
            res.append({"name": plural, "singularName": kind.lower(), "namespaced": namespaced,
                        "kind": kind, "shortNames": short,
                        "verbs": ["create", "delete", "deletecollection", "get", "list",
                                  "patch", "update", "watch"]})
            if plural == "pods":
                res.append({"name": "pods/log", "singularName": "", "namespaced": True,
                            "kind": "Pod", "verbs": ["get"]})
            if has_status:
                res.append({"name": plural + "/status", "singularName": "", "namespaced":
                            namespaced, "kind": kind, "verbs": ["get", "patch", "update"]})
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                "resources": res}

    def group_list(self):
        groups = {}
        for gv in self.resources():
            if "/" in gv:
                g, v = gv.split("/")
                groups.setdefault(g, []).append(v)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": g, "versions": [{"groupVersion": "%s/%s" % (g, v), "version": v}
                                     for v in vs],
             "preferredVersion": {"groupVersion": "%s/%s" % (g, vs[0]), "version": vs[0]}}
            for g, vs in sorted(groups.items())]}

    # --- ownerReferences: deleting an owner deletes its dependents ---

    def collect_garbage(self, uid):
        """Deletes, in the background as the API server's default
        propagation does, every object whose ownerReferences name uid, and
        theirs in turn."""
        doomed = [uid]
        while doomed:
            owner = doomed.pop()
            with self.store.lock:
                victims = [(k, ns, name) for (k, ns, name), o in self.store.objects.items()
                           if any(r.get("uid") == owner
                                  for r in o["metadata"].get("ownerReferences", []))]
            for k, ns, name in victims:
                try:
                    doomed.append(self.store.delete(k, ns, name)["metadata"]["uid"])
                except ApiError:
                    pass

    # --- OpenAPI v3, for kubectl: it sends fieldValidation=Strict (server-side
    # field validation) when the document says the operations take it ---

    def openapi_root(self):
        return {"paths": {("api/v1" if gv == "v1" else "apis/" + gv):
                          {"serverRelativeURL": "/openapi/v3/" +
                           ("api/v1" if gv == "v1" else "apis/" + gv)}
                          for gv in self.resources()}}

    def openapi_gv(self, gv):
        rs = self.resources().get(gv)
        if rs is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        group, _, version = gv.rpartition("/")
        prefix = "/api/v1" if gv == "v1" else "/apis/" + gv
        params = [{"name": n, "in": "query", "schema": {"type": "string"}}
                  for n in ("dryRun", "fieldManager", "fieldValidation")]
        paths, schemas = {}, {}
        for plural, (kind, namespaced, _, _, sch) in rs.items():
            gvk = {"group": group, "version": version, "kind": kind}
            op = {"parameters": params, "x-kubernetes-group-version-kind": gvk,
                  "responses": {"200": {"description": "OK"}}}
            base = prefix + ("/namespaces/{namespace}" if namespaced else "") + "/" + plural
            paths[base] = {"post": op, "get": op}
            paths[base + "/{name}"] = {"put": op, "patch": op, "get": op, "delete": op}
            body = dict(sch or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
            body["x-kubernetes-group-version-kind"] = [gvk]
            schemas["%s.%s.%s" % (group or "core", version, kind)] = body
        return {"openapi": "3.0.0", "info": {"title": "mwj-local", "version": "v1"},
                "paths": paths, "components": {"schemas": schemas}}

    # --- Table output (kubectl get asks for it; columns from the CRD) ---

    def columns(self, gv, plural):
        for crd in self.crds():
            spec = crd["spec"]
            for v in spec.get("versions", []):
                if "%s/%s" % (spec["group"], v["name"]) == gv and \
                        spec["names"]["plural"] == plural:
                    return v.get("additionalPrinterColumns") or [
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
        return [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]

    def table(self, gv, plural, items, rv):
        cols = [{"name": "Name", "type": "string", "format": "name"}] + \
            [c for c in self.columns(gv, plural) if c["name"] != "Name"]
        rows = []
        for obj in items:
            cells = [obj["metadata"]["name"]]
            for c in cols[1:]:
                v = obj
                for part in c["jsonPath"].strip(".").split("."):
                    v = v.get(part) if isinstance(v, dict) else None
                if c["type"] == "date" and isinstance(v, str):
                    v = age(v)
                cells.append(v)
            rows.append({"cells": cells, "object": {
                "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"]}})
        return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": rv},
                "columnDefinitions": [{"name": c["name"], "type": c["type"],
                                       "format": c.get("format", ""),
                                       "description": c.get("description", ""),
                                       "priority": c.get("priority", 0)} for c in cols],
                "rows": rows}

    # --- CRDs ---

    def check_crd(self, obj):
        spec = obj.get("spec") or {}
        names = spec.get("names") or {}
        errs = []
        for f in ("group", "scope"):
            if not spec.get(f):
                errs.append("spec.%s: Required value" % f)
        for f in ("plural", "kind"):
            if not names.get(f):
                errs.append("spec.names.%s: Required value" % f)
        if not spec.get("versions"):
            errs.append("spec.versions: Required value")
        want = "%s.%s" % (names.get("plural"), spec.get("group"))
        if obj.get("metadata", {}).get("name") != want:
            errs.append('metadata.name: Invalid value: "%s": must be spec.names.plural+"."+'
                        "spec.group" % obj.get("metadata", {}).get("name"))
        if errs:
            raise ApiError(422, "Invalid", 'CustomResourceDefinition.apiextensions.k8s.io "%s" '
                                           "is invalid: %s" % (obj.get("metadata", {}).get(
                                               "name"), ", ".join(errs)))
        st = obj.setdefault("status", {})
        st["acceptedNames"] = names
        st["conditions"] = [{"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                             "message": "the initial names have been accepted",
                             "lastTransitionTime": "2026-01-01T00:00:00Z"},
                            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                             "message": "no conflicts found",
                             "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        st["storedVersions"] = [v["name"] for v in spec["versions"] if v.get("storage")]

    def check_pod(self, obj):
        """What the real API server checks of a new pod that the node
        relies on: named containers with images, names unique, a known
        restartPolicy."""
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        errs, seen = [], set()
        ctrs = spec.get("containers")
        if not isinstance(ctrs, list) or not ctrs:
            errs.append("spec.containers: Required value")
        for field in ("initContainers", "containers"):
            items = spec.get(field) or []
            for i, c in enumerate(items if isinstance(items, list) else []):
                where = "spec.%s[%d]" % (field, i)
                if not isinstance(c, dict):
                    errs.append("%s: Invalid value: must be an object" % where)
                    continue
                if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", str(c.get("name", ""))):
                    errs.append("%s.name: Invalid value: %r: a lowercase RFC 1123 label is "
                                "required" % (where, c.get("name", "")))
                elif c["name"] in seen:
                    errs.append('%s.name: Duplicate value: "%s"' % (where, c["name"]))
                seen.add(c.get("name"))
                if not c.get("image"):
                    errs.append("%s.image: Required value" % where)
        policy = spec.get("restartPolicy", "Always")
        if policy not in ("Always", "OnFailure", "Never"):
            errs.append('spec.restartPolicy: Unsupported value: "%s": supported values: '
                        '"Always", "OnFailure", "Never"' % policy)
        if errs:
            raise ApiError(422, "Invalid", 'Pod "%s" is invalid: %s' % (
                (obj.get("metadata") or {}).get("name"), ", ".join(errs)))

    def admit(self, info, obj, name):
        """Applies the CRD schema (pruning, defaults, 422) to a custom resource."""
        kind, _, _, _, sch = info
        if not sch:
            return obj
        stored, errs = schema.admit(sch, obj)
        if errs:
            raise ApiError(422, "Invalid", '%s "%s" is invalid: %s'
                           % (kind, name, ", ".join(errs)) if len(errs) > 1 else
                           '%s "%s" is invalid: %s' % (kind, name, errs[0]))
        return stored


PATH = re.compile(r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
                  r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)"
                  r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>status|log))?$")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    api = None
    token = None

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("apiserver: %s\n" % (fmt % args))

    def send_json(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        if code == 429:
            self.send_header("Retry-After", "1")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        """The request's JSON body (read once, in handle_any)."""
        try:
            return json.loads(self.raw_body or b"null")
        except ValueError as e:
            raise ApiError(400, "BadRequest", "invalid JSON body: %s" % e) from e

    def handle_any(self, method):
        # Read the whole body whatever the route does with it, so that the
        # next request on this connection starts where it should.
        n = int(self.headers.get("Content-Length") or 0)
        self.raw_body = self.rfile.read(n) if n > 0 else b""
        try:
            if self.headers.get("Authorization") != "Bearer " + self.token:
                raise ApiError(401, "Unauthorized", "Unauthorized")
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query)
            failing = self.server.failing
            if failing and time.monotonic() < failing[1] and \
                    not url.path.startswith("/mwj-test/"):
                self.server.failed += 1
                raise ApiError(failing[0], "TooManyRequests" if failing[0] == 429 else
                               "InternalError", "injected by the test cluster: %d for %.1f s "
                               "more" % (failing[0], failing[1] - time.monotonic()))
            code, body = self.route(method, url.path.rstrip("/") or "/", query)
            if code is not None:
                self.send_json(code, body)
        except ApiError as e:
            self.send_json(e.code, e.status())

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_DELETE(self):
        self.handle_any("DELETE")

    def route(self, method, path, query):
        api = self.api
        if path == "/version":
            return 200, VERSION
        if path in ("/healthz", "/readyz", "/livez"):
            return 200, "ok"
        # Fault injection for tests (behind the same token).
        if path == "/mwj-test/compact" and method == "POST":
            api.store.compact()
            return 200, {"compacted": True}
        if path == "/mwj-test/drop-watches" and method == "POST":
            self.server.dropping = True
            threading.Timer(1.5, lambda: setattr(self.server, "dropping", False)).start()
            return 200, {"dropping": True}
        if path == "/mwj-test/errors" and method == "POST":
            code, seconds = int(arg(query, "code", "500")), float(arg(query, "seconds", "5"))
            if code not in (429, 500, 503):
                raise ApiError(400, "BadRequest", "code must be 429, 500 or 503")
            self.server.failing = (code, time.monotonic() + seconds)
            self.server.failed = 0
            return 200, {"code": code, "seconds": seconds}
        if path == "/mwj-test/errors" and method == "GET":
            return 200, {"answered": self.server.failed}
        if path == "/mwj-test/preempt" and method == "POST":
            reason = arg(query, "reason", "Preempted")
            if reason not in ("Preempted", "Evicted"):
                raise ApiError(400, "BadRequest", "reason must be Preempted or Evicted")
            grace = arg(query, "grace", None)
            delete = arg(query, "delete", None)
            self.node().preempt(arg(query, "namespace", "default"), arg(query, "name"), reason,
                                None if grace is None else int(grace),
                                None if delete is None else delete == "true")
            return 200, {"preempted": arg(query, "name"), "reason": reason}
        if path == "/mwj-test/kill" and method == "POST":
            name = arg(query, "signal", "KILL").upper()
            sig = getattr(signal, "SIG" + name, None) if not name.isdigit() else int(name)
            if sig is None:
                raise ApiError(400, "BadRequest", "unknown signal %s" % name)
            self.node().kill(arg(query, "namespace", "default"), arg(query, "name"), sig,
                             arg(query, "container", None))
            return 200, {"killed": arg(query, "name"), "signal": int(sig)}
        if path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"],
                         "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                         "serverAddress": "127.0.0.1"}]}
        if path == "/apis":
            return 200, api.group_list()
        if path == "/openapi/v3":
            return 200, api.openapi_root()
        if path.startswith("/openapi/v3/"):
            rest = path[len("/openapi/v3/"):]
            return 200, api.openapi_gv("v1" if rest == "api/v1" else rest[len("apis/"):])
        if path == "/api/v1":
            return 200, api.resource_list("v1")
        m = re.match(r"^/apis/([^/]+)/([^/]+)$", path)
        if m:
            return 200, api.resource_list("%s/%s" % m.groups())
        m = PATH.match(path)
        if not m:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return self.resource(method, m, query)

    def resource(self, method, m, query):
        api = self.api
        gv = m["core"] or "%s/%s" % (m["group"], m["version"])
        info = api.resources().get(gv, {}).get(m["plural"])
        if info is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        kind, namespaced, has_status, _, _ = info
        key = "%s/%s" % ("" if m["core"] else m["group"], "/".join(
            [m["version"] or "v1", m["plural"]]))
        ns = m["ns"] if namespaced else None
        if namespaced and ns is None and method != "GET":
            raise ApiError(404, "NotFound", "a namespace is required")
        name, sub = m["name"], m["sub"]
        store = api.store
        as_table = "as=Table" in (self.headers.get("Accept") or "")
        if sub == "log":
            if key != "/v1/pods" or method != "GET" or not name:
                raise ApiError(405, "MethodNotAllowed", "only GET of pods/log")
            self.send_log(ns, name, query)
            return None, None
        if method == "GET" and query.get("watch", ["false"])[0] in ("true", "1"):
            self.watch(gv, m["plural"], key, ns, name, query, as_table)
            return None, None
        if method == "GET" and name is None:
            items, rv = store.list(key, ns)
            labels = selector.label_matcher(query.get("labelSelector", [""])[0])
            fields = selector.field_matcher(query.get("fieldSelector", [""])[0])
            items = [o for o in items
                     if labels(o["metadata"].get("labels")) and fields(o)]
            items, cont = page(items, query)
            if as_table:
                return 200, api.table(gv, m["plural"], items, rv)
            meta = {"resourceVersion": rv}
            if cont:
                meta["continue"] = cont
            return 200, {"kind": kind + "List", "apiVersion": gv, "metadata": meta,
                         "items": items}
        if method == "GET":
            obj = store.get(key, ns, name)
            if as_table:
                return 200, api.table(gv, m["plural"], [obj],
                                      obj["metadata"]["resourceVersion"])
            return 200, obj
        if method == "POST" and name is None:
            obj = self.body()
            self.check_kind(obj, gv, kind)
            obj = api.admit(info, obj, (obj.get("metadata") or {}).get("name"))
            if key == CRD_KEY:
                api.check_crd(obj)
            if key == "/v1/pods":
                api.check_pod(obj)
            if has_status and key != CRD_KEY:
                obj.pop("status", None)
            if namespaced and ns != "default" and not self.namespace_exists(ns):
                raise ApiError(404, "NotFound", 'namespaces "%s" not found' % ns)
            return 201, store.create(key, ns, obj)
        if method in ("PUT", "PATCH") and name:
            if method == "PUT":
                obj = self.body()
            else:
                obj = self.patched(store.get(key, ns, name))
            self.check_kind(obj, gv, kind)
            obj = api.admit(info, obj, name)
            if key == CRD_KEY:
                api.check_crd(obj)
            return 200, store.update(key, ns, name, obj, has_status and key != CRD_KEY,
                                     status_only=sub == "status")
        if method == "DELETE" and name:
            if key == "/v1/pods":
                grace = self.pod_grace(store.get(key, ns, name), query)
                if grace is not None:
                    return 200, grace
            gone = store.delete(key, ns, name)
            api.collect_garbage(gone["metadata"]["uid"])
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                         "status": "Success", "details": {"name": name, "kind": m["plural"]}}
        raise ApiError(405, "MethodNotAllowed", "%s is not allowed here" % method)

    def watch(self, gv, plural, key, ns, name, query, as_table):
        """Streams changes after ?resourceVersion= as JSON lines (chunked),
        with BOOKMARK events when asked for, until ?timeoutSeconds=. A
        version older than the kept history gets a 410 Expired ERROR event,
        as from the real API server; none (or "0") starts with ADDED events
        for what exists."""
        store = self.api.store
        fields = query.get("fieldSelector", [""])[0]
        if fields.startswith("metadata.name="):
            name = fields[len("metadata.name="):]
        timeout = float(query.get("timeoutSeconds", ["1800"])[0])
        bookmarks = query.get("allowWatchBookmarks", ["false"])[0] == "true"
        rv_text = query.get("resourceVersion", [""])[0]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(event_type, obj):
            if as_table and event_type in ("ADDED", "MODIFIED", "DELETED"):
                obj = self.api.table(gv, plural, [obj], obj["metadata"]["resourceVersion"])
            self.send_chunk(json.dumps({"type": event_type, "object": obj}).encode() + b"\n")

        try:
            if rv_text in ("", "0"):
                items, rv_text = store.list(key, ns)
                for obj in items:
                    if name is None or obj["metadata"]["name"] == name:
                        send("ADDED", obj)
            rv = int(rv_text) if rv_text.isdigit() else 0
            end = time.monotonic() + timeout
            last_bookmark = time.monotonic()
            while time.monotonic() < end and not self.server.dropping:
                events, newest = store.events_after(rv, key, ns,
                                                    min(1.0, end - time.monotonic()))
                if events is None:
                    send("ERROR", ApiError(410, "Expired", "too old resource version: %d (%d)"
                                           % (rv, store.oldest())).status())
                    break
                for erv, _, _, etype, obj in events:
                    rv = erv
                    if name is None or obj["metadata"]["name"] == name:
                        send(etype, obj)
                rv = max(rv, newest)
                if bookmarks and time.monotonic() - last_bookmark >= self.server.bookmark_every:
                    send("BOOKMARK", {"kind": "Bookmark", "apiVersion": gv,
                                      "metadata": {"resourceVersion": str(rv)}})
                    last_bookmark = time.monotonic()
            self.send_chunk(b"")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass
        self.close_connection = True

    def send_chunk(self, data):
        """One chunk of a chunked response; b"" ends the response."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def node(self):
        if self.server.node is None:
            raise ApiError(404, "NotFound", "this API server runs no node (start it with "
                           "--node-dir)")
        return self.server.node

    def send_log(self, ns, name, query):
        """A container's log as text, as GET pods/NAME/log does:
        ?container=, ?previous=true, ?tailLines=N, and ?follow=true, which
        streams until the container ends."""
        path, alive = self.node().log_file(ns, name, arg(query, "container", None),
                                           arg(query, "previous", "false") == "true")
        follow = arg(query, "follow", "false") == "true"
        with open(path, "rb") as f:
            data = f.read()
            tail = arg(query, "tailLines", None)
            if tail is not None:
                lines = data.splitlines(keepends=True)
                data = b"".join(lines[-int(tail):]) if int(tail) > 0 else b""
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            if not follow:
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                # Go on reading the same file from where the first read
                # ended, so that nothing written in between is lost.
                while True:
                    if data:
                        self.send_chunk(data)
                    running = alive()
                    data = f.read()
                    if not data and not running:
                        break
                    if not data:
                        time.sleep(0.1)
                self.send_chunk(b"")
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                pass
        self.close_connection = True

    def pod_grace(self, pod, query):
        """Graceful pod deletion, as the real API server does it: a pod on
        a node is only marked (deletionTimestamp, deletionGracePeriodSeconds)
        and goes once its node confirms with a grace period of 0. Returns
        the marked pod, or None when the pod is to go now (not on a node,
        or a grace period of 0)."""
        body = self.body()
        grace = query.get("gracePeriodSeconds", [None])[0]
        if grace is None and isinstance(body, dict):
            grace = body.get("gracePeriodSeconds")
        if grace is None:
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        grace = int(grace)
        if grace <= 0 or not (pod.get("spec") or {}).get("nodeName"):
            return None
        md = pod["metadata"]
        return self.api.store.mark_deleting(md["namespace"], md["name"], grace)

    def namespace_exists(self, ns):
        try:
            self.api.store.get("/v1/namespaces", None, ns)
            return True
        except ApiError:
            return False

    def check_kind(self, obj, gv, kind):
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", "the body must be a JSON object")
        if obj.get("kind", kind) != kind or obj.get("apiVersion", gv) != gv:
            raise ApiError(400, "BadRequest", "%s %s does not belong at %s %s" % (
                obj.get("apiVersion"), obj.get("kind"), gv, kind))
        obj.setdefault("kind", kind)
        obj.setdefault("apiVersion", gv)

    def patched(self, current):
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        patch = self.body()
        if ctype == "application/merge-patch+json":
            return merge_patch(current, patch)
        if ctype == "application/strategic-merge-patch+json":
            return strategic_merge_patch(current, patch)
        raise ApiError(415, "UnsupportedMediaType",
                       "the patch type %s is not supported here" % ctype)


def arg(query, name, default=""):
    """A query parameter's first value, or default."""
    return query.get(name, [default])[0]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--bookmark-seconds", type=float, default=5.0)
    p.add_argument("--node-dir", help="run pods as local processes, with their folders here")
    p.add_argument("--ca", help="the CA certificate pods get with their service-account token")
    p.add_argument("--podnet", help="podnet.so, preloaded into every pod's processes")
    p.add_argument("--image", action="append", default=[], metavar="NAME=PATH",
                   help="the entrypoint of image NAME (its repository name)")
    a = p.parse_args()
    Handler.api = Api()
    Handler.token = a.token
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    server.verbose = a.verbose
    server.dropping = False
    server.failing = None
    server.failed = 0  # requests answered with an injected error since the last POST
    server.bookmark_every = a.bookmark_seconds
    server.node = None
    if a.node_dir:
        images = {}
        for item in a.image:
            image, _, path = item.partition("=")
            images[image] = os.path.abspath(path)
        server.node = Node(Handler.api, a.node_dir, images, a.podnet, a.port, a.ca, a.token,
                           log=lambda msg: print(msg, file=sys.stderr, flush=True))
        server.node.start()

    def stop(signum, _frame):
        if server.node:
            server.node.shutdown()
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print("apiserver: serving on https://127.0.0.1:%d" % a.port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
