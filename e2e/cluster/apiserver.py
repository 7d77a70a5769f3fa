#!/usr/bin/python3
"""The local test cluster's API server: the HTTP side of a miniature
kube-apiserver that real kubectl and mwj-operator are tested against. It
must refuse what a real kube-apiserver refuses, with the same status and
body, so that what passes here does not break on a real cluster.

The request path is split as the real server's is:
  this file      HTTP: routing, discovery and OpenAPI (v2: openapi_v2.py),
                 bodies in (protobuf ones through protobuf.py) and
                 compact JSON out, Warning headers, watches and logs as
                 streams, TokenRequests, access reviews (access.py) and
                 TokenReviews (tokenreview.py);
  auth.py        authentication (the cluster's token, ServiceAccount
                 tokens of tokens.py, anonymous) and authorization (RBAC,
                 rbac.py);
  registry.py    the verbs' semantics (generic registry): dryRun,
                 preconditions, finalizers, propagation, patches;
  admission.py   the admission chain: namespace lifecycle, defaults,
                 LimitRanger, service accounts, PodSecurity, owner
                 references, ResourceQuota (admission_*.py);
  kinds.py       one table entry per kind: decoding, defaults, validation,
                 update rules, field selectors;
  decoder.py, defaults.py, validation.py, schema.py   the per-kind rules;
  store.py       objects, resourceVersions, per-resource history;
  watch.py       watch streams with selectors and bookmarks;
  controllers.py garbage collection, namespaces, service accounts;
  node.py        the node that runs pods as processes.

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

Standard library only.
"""
import argparse
import base64
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

import access
import admission
import auth
import decoder
import eviction
import kinds
import openapi_v2
import protobuf
import rbac
import scale
import selector
import tables
import tokenreview
from controllers import Controllers
from errors import ApiError, bad_request
from node import Node
from registry import Registry, Request
from store import Store
from tokens import Issuer
from watch import Watch

VERSION = {"major": "1", "minor": "31", "gitVersion": "v1.31.0-mwj-local",
           "platform": "linux/amd64", "goVersion": "n/a", "compiler": "n/a",
           "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z"}
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# The group versions served by a module of their own rather than by the
# registry, with what their discovery lists.
SERVED_APART = {access.GROUP_VERSION: access.RESOURCES,
                tokenreview.GROUP_VERSION: tokenreview.RESOURCES}


def compact(body):
    """JSON as the real server writes it: no spaces."""
    return json.dumps(body, separators=(",", ":")).encode()


def page(items, query, selected):
    """?limit= and ?continue= over items sorted by namespace and name: the
    token is the last name handed out. Returns (items, list metadata
    fields). remainingItemCount comes only for a list without selectors,
    as etcd3's GetList gives it."""
    after = query.get("continue", [""])[0]
    if after:
        try:
            after = json.loads(base64.urlsafe_b64decode(after.encode()).decode())
        except ValueError as e:
            raise bad_request("invalid continue token") from e
        items = [o for o in items if [o["metadata"].get("namespace") or "",
                                      o["metadata"]["name"]] > after]
    try:
        limit = int(query.get("limit", ["0"])[0] or 0)
    except ValueError:
        raise bad_request("limit: Invalid value: must be a number") from None
    if limit <= 0 or len(items) <= limit:
        return items, {}
    last = items[limit - 1]["metadata"]
    token = base64.urlsafe_b64encode(json.dumps(
        [last.get("namespace") or "", last["name"]]).encode()).decode()
    meta = {"continue": token}
    if not selected:
        meta["remainingItemCount"] = len(items) - limit
    return items[:limit], meta


class Api:
    """What the handlers share: the store, the registry over it, discovery."""

    def __init__(self, ca_pem="", history=1000, token="", sa_delay=0.0, admission_plugins=()):
        self.store = Store(history)
        self.registry = Registry(self.store, admission_plugins)
        self.tokens = Issuer(self.store, token)
        self.authorizer = rbac.Authorizer(self.store)
        self.openapi_v2 = (None, b"", b"")  # (CRD version, JSON, protobuf)
        ns_kind = self.registry.kind("v1", "namespaces")
        for ns in SYSTEM_NAMESPACES:
            self.registry._create(ns_kind, None, {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": ns}}, Request({}))
        for key, obj in rbac.BOOTSTRAP:
            self.registry._create(self.registry.kind_of_key(key), None, obj, Request({}))
        # The Service the bootstrap controller keeps in default (controlplane's
        # kubernetesservice): the first cluster IP, port 443, no selector.
        self.registry._create(self.registry.kind("v1", "services"), "default", {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1", "sessionAffinity": "None", "ports": [
                {"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}]}},
            Request({}))
        self.controllers = Controllers(self.registry, ca_pem,
                                       log=lambda m: print(m, file=sys.stderr, flush=True),
                                       tokens=self.tokens)
        self.controllers.sync()  # every namespace has its ServiceAccount from the start
        self.controllers.sa_delay = sa_delay  # new ones a moment after they are made
        self.controllers.start()

    # --- discovery ---

    def resource_list(self, gv):
        if gv in SERVED_APART:
            return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                    "resources": SERVED_APART[gv]}
        rs = self.registry.kinds().get(gv)
        if rs is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        res = []
        for plural, k in sorted(rs.items()):
            res.append({"name": plural, "singularName": k.kind.lower(),
                        "namespaced": k.namespaced, "kind": k.kind, "shortNames": k.short,
                        "verbs": ["create", "delete", "deletecollection", "get", "list",
                                  "patch", "update", "watch"]})
            if k.categories:
                res[-1]["categories"] = k.categories
            if plural == "pods" and gv == "v1":
                res.append({"name": "pods/log", "singularName": "", "namespaced": True,
                            "kind": "Pod", "verbs": ["get"]})
                res.append({"name": "pods/eviction", "singularName": "", "namespaced": True,
                            "group": "policy", "version": "v1", "kind": "Eviction",
                            "verbs": ["create"]})
            if k.key in scale.KINDS:
                res.append(dict(scale.DISCOVERY, name=plural + "/scale",
                                namespaced=k.namespaced))
            if k.status:
                res.append({"name": plural + "/status", "singularName": "",
                            "namespaced": k.namespaced, "kind": k.kind,
                            "verbs": ["get", "patch", "update"]})
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                "resources": res}

    def group_list(self):
        groups = {}
        for gv in list(self.registry.kinds()) + list(SERVED_APART):
            if "/" in gv:
                g, v = gv.split("/")
                groups.setdefault(g, []).append(v)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": g, "versions": [{"groupVersion": "%s/%s" % (g, v), "version": v}
                                     for v in vs],
             "preferredVersion": {"groupVersion": "%s/%s" % (g, vs[0]), "version": vs[0]}}
            for g, vs in sorted(groups.items())]}

    # --- OpenAPI v3, for kubectl: it sends fieldValidation=Strict (server-side
    # field validation) when the document says the operations take it ---

    def openapi_root(self):
        return {"paths": {("api/v1" if gv == "v1" else "apis/" + gv):
                          {"serverRelativeURL": "/openapi/v3/" +
                           ("api/v1" if gv == "v1" else "apis/" + gv)}
                          for gv in self.registry.kinds()}}

    def openapi_gv(self, gv):
        rs = self.registry.kinds().get(gv)
        if rs is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        group, _, version = gv.rpartition("/")
        prefix = "/api/v1" if gv == "v1" else "/apis/" + gv
        params = [{"name": n, "in": "query", "schema": {"type": "string"}}
                  for n in ("dryRun", "fieldManager", "fieldValidation")]
        paths, schemas = {}, {}
        for plural, k in rs.items():
            gvk = {"group": group, "version": version, "kind": k.kind}
            op = {"parameters": params, "x-kubernetes-group-version-kind": gvk,
                  "responses": {"200": {"description": "OK"}}}
            base = prefix + ("/namespaces/{namespace}" if k.namespaced else "") + "/" + plural
            paths[base] = {"post": op, "get": op}
            paths[base + "/{name}"] = {"put": op, "patch": op, "get": op, "delete": op}
            sch = getattr(k, "schema", None)
            body = dict(sch or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
            body["x-kubernetes-group-version-kind"] = [gvk]
            schemas["%s.%s.%s" % (group or "core", version, k.kind)] = body
        return {"openapi": "3.0.0", "info": {"title": "mwj-local", "version": "v1"},
                "paths": paths, "components": {"schemas": schemas}}


PATH = re.compile(r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
                  r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)"
                  r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>status|log|token|scale|eviction))?$")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # A response goes out in two writes, the headers and then the body, on
    # a connection nginx keeps open: with Nagle's algorithm the body waited
    # for the ACK of the headers, which the peer delays by 40 ms, and every
    # request took 40 ms more than it needed.
    disable_nagle_algorithm = True
    api = None
    authn = None

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("apiserver: %s\n" % (fmt % args))

    def send_json(self, code, body, warnings=(), headers=None):
        data = compact(body)
        self.send_response(code)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        for w in warnings:
            # k8s.io/apiserver warning.go: 299, agent "-", the text quoted.
            self.send_header("Warning", "299 - %s" % json.dumps(w))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_error_status(self, e):
        headers = dict(e.headers)
        if e.code == 429:
            headers.setdefault("Retry-After", "1")
        retry = (e.details or {}).get("retryAfterSeconds")
        if retry:
            headers.setdefault("Retry-After", str(retry))
        self.send_json(e.code, e.status(), headers=headers)

    def handle_any(self, method):
        # Read the whole body whatever the route does with it, so that the
        # next request on this connection starts where it should.
        self.raw_body = self.read_body()
        try:
            self.user = access.impersonate(self.api.authorizer,
                                           self.authn.user(self.headers.get("Authorization")),
                                           self.headers)
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
            path = url.path.rstrip("/") or "/"
            failing = self.server.failing
            if failing and time.monotonic() < failing[1] and \
                    not path.startswith("/mwj-test/"):
                self.server.failed += 1
                raise ApiError(failing[0], "TooManyRequests" if failing[0] == 429 else
                               "InternalError", "injected by the test cluster: %d for %.1f s "
                               "more" % (failing[0], failing[1] - time.monotonic()))
            self.route(method, path, query)
        except ApiError as e:
            self.send_error_status(e)

    def read_body(self):
        """The request body, by Content-Length or chunked (an HTTP/2 client
        may send a body of unknown length, which the front passes on
        chunked)."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

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
        m = PATH.match(path)
        if m is None:
            auth.authorize(api.authorizer, self.user, rbac.Attributes(method.lower(), path=path))
        if path == "/version":
            return self.send_json(200, VERSION)
        if path in ("/healthz", "/readyz", "/livez"):
            return self.send_text(200, b"ok")
        if path.startswith("/mwj-test/"):
            return self.send_json(200, self.fault(method, path, query))
        if path == "/api":
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [{
                                            "clientCIDR": "0.0.0.0/0",
                                            "serverAddress": "127.0.0.1"}]})
        if path == "/apis":
            return self.send_json(200, api.group_list())
        if path == "/openapi/v2":
            return self.send_openapi_v2()
        if path == "/openapi/v3":
            return self.send_json(200, api.openapi_root())
        if path.startswith("/openapi/v3/"):
            rest = path[len("/openapi/v3/"):]
            return self.send_json(200, api.openapi_gv("v1" if rest == "api/v1"
                                                      else rest[len("apis/"):]))
        if path == "/api/v1":
            return self.send_json(200, api.resource_list("v1"))
        gm = re.match(r"^/apis/([^/]+)/([^/]+)$", path)
        if gm:
            return self.send_json(200, api.resource_list("%s/%s" % gm.groups()))
        if m is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return self.resource(method, m, query)

    def send_openapi_v2(self):
        """The Swagger 2.0 document, in protobuf when the client asks for
        it (client-go's discovery always does), else in JSON; made again
        only when a CRD has changed."""
        api = self.api
        stamp = api.store.version_of(kinds.CRD_KEY)
        if api.openapi_v2[0] != stamp:
            doc = openapi_v2.document(api.registry)
            api.openapi_v2 = (stamp, compact(doc), openapi_v2.encode(doc))
        accept = self.headers.get("Accept") or ""
        proto = any(t in accept for t in openapi_v2.MEDIA_TYPES)
        data = api.openapi_v2[2] if proto else api.openapi_v2[1]
        self.send_response(200)
        # kube-openapi answers either protobuf type with the one that is a
        # legal media type ("@" is not): client-go parses it.
        self.send_header("Content-Type", openapi_v2.REPLY_TYPE if proto else "application/json")
        self.send_header("Vary", "Accept")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_text(self, code, data):
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def fault(self, method, path, query):
        """The test hooks (see the module docstring); RBAC lets only the
        cluster's admin (system:masters) reach them."""
        store = self.api.store
        if path == "/mwj-test/compact" and method == "POST":
            store.compact()
            return {"compacted": True}
        if path == "/mwj-test/drop-watches" and method == "POST":
            self.server.dropping = True
            threading.Timer(1.5, lambda: setattr(self.server, "dropping", False)).start()
            return {"dropping": True}
        if path == "/mwj-test/errors" and method == "POST":
            code, seconds = int(arg(query, "code", "500")), float(arg(query, "seconds", "5"))
            if code not in (429, 500, 503):
                raise bad_request("code must be 429, 500 or 503")
            self.server.failing = (code, time.monotonic() + seconds)
            self.server.failed = 0
            return {"code": code, "seconds": seconds}
        if path == "/mwj-test/errors" and method == "GET":
            return {"answered": self.server.failed}
        if path == "/mwj-test/preempt" and method == "POST":
            reason = arg(query, "reason", "Preempted")
            if reason not in ("Preempted", "Evicted"):
                raise bad_request("reason must be Preempted or Evicted")
            grace = arg(query, "grace", None)
            delete = arg(query, "delete", None)
            self.node().preempt(arg(query, "namespace", "default"), arg(query, "name"), reason,
                                None if grace is None else int(grace),
                                None if delete is None else delete == "true")
            return {"preempted": arg(query, "name"), "reason": reason}
        if path == "/mwj-test/kill" and method == "POST":
            name = arg(query, "signal", "KILL").upper()
            sig = getattr(signal, "SIG" + name, None) if not name.isdigit() else int(name)
            if sig is None:
                raise bad_request("unknown signal %s" % name)
            self.node().kill(arg(query, "namespace", "default"), arg(query, "name"), sig,
                             arg(query, "container", None))
            return {"killed": arg(query, "name"), "signal": int(sig)}
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    def resource(self, method, m, query):
        registry = self.api.registry
        gv = m["core"] or "%s/%s" % (m["group"], m["version"])
        ns, plural, name, sub = m["ns"], m["plural"], m["name"], m["sub"]
        if ns and plural == "status" and not name and gv == "v1":
            ns, plural, name, sub = None, "namespaces", ns, "status"
        if gv == access.GROUP_VERSION:
            return self.access_review(method, m)
        if gv == tokenreview.GROUP_VERSION:
            return self.token_review(method, m, query)
        kind = registry.kind(gv, plural)
        watching = method == "GET" and arg(query, "watch", "false") in ("true", "1")
        # A namespace is in itself, for RBAC (RequestInfoFactory).
        authz_ns = name if gv == "v1" and plural == "namespaces" and name else ns
        auth.authorize(self.api.authorizer, self.user, rbac.Attributes(
            auth.verb(method, name, watching), m["group"] or "", plural, sub or "",
            authz_ns or "", name or ""))
        if kind is None or (ns and not kind.namespaced):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if kind.namespaced and ns is None and (method != "GET" or name):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        as_table = "as=Table" in (self.headers.get("Accept") or "")
        if sub == "log":
            if kind.key != "/v1/pods" or method != "GET" or not name:
                raise ApiError(405, "MethodNotAllowed", "only GET of pods/log")
            return self.send_log(ns, name, query)
        if sub == "eviction":
            if kind.key != "/v1/pods" or not name:
                raise ApiError(404, "NotFound", "the server could not find the requested "
                               "resource")
            if method != "POST":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method "
                               "on the requested resource")
            code, body = eviction.evict(registry, ns, name, self.raw_body,
                                        Request(query, self.user))
            return self.send_json(code, body)
        if sub == "status" and (not kind.status or method not in ("GET", "PUT", "PATCH")):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if sub == "token":
            if kind.key != "/v1/serviceaccounts" or not name:
                raise ApiError(404, "NotFound", "the server could not find the requested "
                               "resource")
            if method != "POST":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method "
                               "on the requested resource")
            return self.token_request(ns, name, query)
        req = Request(query, self.user)
        if sub == "scale":
            if not name or kind.key not in scale.KINDS:
                raise ApiError(404, "NotFound", "the server could not find the requested "
                               "resource")
            code, body, warnings = scale.serve(registry, kind, ns, name, method, self.raw_body,
                                               self.content_type(), req)
            return self.send_json(code, body, warnings)
        if method in ("POST", "PUT", "DELETE") and self.raw_body and \
                self.content_type() == protobuf.MEDIA_TYPE:
            self.raw_body = self.protobuf_body(kind)
        if watching:
            return self.watch(kind, ns, query, as_table)
        if method == "GET" and name is None:
            return self.list(kind, ns, req, query, as_table)
        if method == "GET":
            obj = registry.get(kind, ns, name)
            if as_table:
                obj = tables.table(kind, [obj], obj["metadata"]["resourceVersion"])
            return self.send_json(200, obj)
        if method == "POST" and name is None:
            res = registry.create(kind, ns, self.raw_body, req)
        elif method == "PUT" and name:
            res = registry.update(kind, ns, name, self.raw_body, req, sub)
        elif method == "PATCH" and name:
            res = registry.patch(kind, ns, name, self.raw_body, self.content_type(), req, sub)
        elif method == "DELETE" and name:
            res = registry.delete(kind, ns, name, self.raw_body, req)
        elif method == "DELETE":
            res = registry.delete_collection(kind, ns, self.raw_body, req, self.matcher(
                kind, query))
        else:
            raise ApiError(405, "MethodNotAllowed", "%s is not allowed here" % method)
        return self.send_json(res.code, res.body, res.warnings)

    def access_review(self, method, m):
        """POST selfsubjectaccessreviews (access.py), the only resource of
        authorization.k8s.io served here."""
        if m["plural"] != "selfsubjectaccessreviews" or m["ns"] or m["name"] or m["sub"]:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        auth.authorize(self.api.authorizer, self.user, rbac.Attributes(
            auth.verb(method, None, False), "authorization.k8s.io",
            "selfsubjectaccessreviews"))
        if method != "POST":
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on "
                           "the requested resource")
        raw = self.raw_body
        if self.content_type() == protobuf.MEDIA_TYPE:
            raw = protobuf.to_json(raw)
        obj, _ = decoder.parse_json(raw or b"{}")
        if not isinstance(obj, dict):
            raise bad_request("the object provided is unrecognized (must be of type "
                              "SelfSubjectAccessReview)")
        return self.send_json(201, access.self_subject_access_review(self.api.authorizer,
                                                                     self.user, obj))

    def token_review(self, method, m, query):
        """POST tokenreviews (tokenreview.py), the only resource of
        authentication.k8s.io served here: RBAC first, as the real
        server's authorization filter runs before its routes."""
        auth.authorize(self.api.authorizer, self.user, rbac.Attributes(
            auth.verb(method, m["name"], False), tokenreview.GROUP_VERSION.split("/")[0],
            m["plural"], m["sub"] or "", m["ns"] or "", m["name"] or ""))
        if m["plural"] != "tokenreviews" or m["ns"] or m["name"] or m["sub"]:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if method != "POST":
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on "
                           "the requested resource")
        obj, warnings = self.decoded_body(tokenreview.GROUP_VERSION, "TokenReview", query)
        with self.api.store.lock:
            out = tokenreview.create(self.authn, obj)
        return self.send_json(201, out, warnings)

    def token_request(self, ns, name, query):
        """POST serviceaccounts/NAME/token (tokens.py)."""
        obj, warnings = self.decoded_body("authentication.k8s.io/v1", "TokenRequest", query)
        with self.api.store.lock:
            out = self.api.tokens.token_request(ns, name, obj)
        return self.send_json(201, out, warnings)

    def decoded_body(self, gv, kind, query):
        """(object, warnings): the request's body (JSON, or protobuf) of a
        kind the registry does not store, decoded into its Go type."""
        raw = self.raw_body
        if self.content_type() == protobuf.MEDIA_TYPE:
            raw = protobuf.to_json(raw)
        Request(query, self.user)  # checks dryRun and fieldValidation
        obj, dups = decoder.parse_json(raw or b"{}")
        if not isinstance(obj, dict):
            raise bad_request("the object provided is unrecognized (must be of type "
                              "%s): couldn't get version/kind; json parse error" % kind)
        return decoder.decode(gv + "/" + kind, obj, arg(query, "fieldValidation", "") or "Warn",
                              dups)

    def content_type(self):
        return (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()

    def protobuf_body(self, kind):
        """A protobuf body as JSON (protobuf.py); 415 for a custom
        resource, as a real server answers: CRDs have no protobuf form."""
        if isinstance(kind, kinds.Custom):
            raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an "
                           "unknown format - accepted media types include: application/json, "
                           "application/yaml")
        return protobuf.to_json(self.raw_body)

    @staticmethod
    def matcher(kind, query):
        """The label and field selectors of a list, watch or delete
        collection, as one function of an object (400 for a bad one)."""
        labels = selector.label_matcher(arg(query, "labelSelector", ""))
        fields = selector.field_matcher(arg(query, "fieldSelector", ""), kind.field_getter)
        return lambda o: labels(o["metadata"].get("labels")) and fields(o)

    def list(self, kind, ns, req, query, as_table):
        matches = self.matcher(kind, query)
        items, rv = self.api.registry.list(kind, ns, req, matches)
        selected = bool(arg(query, "labelSelector", "") or arg(query, "fieldSelector", ""))
        items, extra = page(items, query, selected)
        if as_table:
            # The list's continue and remainingItemCount too, as asTable
            # (apiserver/pkg/endpoints/handlers/response.go) copies them.
            table = tables.table(kind, items, rv)
            table["metadata"].update(extra)
            return self.send_json(200, table)
        meta = {"resourceVersion": rv}
        meta.update(extra)
        return self.send_json(200, {"kind": kind.kind + "List",
                                    "apiVersion": kind.group_version,
                                    "metadata": meta, "items": items})

    def watch(self, kind, ns, query, as_table):
        """A watch stream as JSON lines in a chunked 200 response; see
        watch.py."""
        w = Watch(self.api.registry, kind, ns, self.matcher(kind, query),
                  arg(query, "resourceVersion", ""),
                  float(arg(query, "timeoutSeconds", "1800")),
                  arg(query, "allowWatchBookmarks", "false") == "true",
                  self.server.bookmark_every)
        start = w.start()  # a 504 here is answered as such

        def send(event_type, obj):
            if as_table and event_type in ("ADDED", "MODIFIED", "DELETED"):
                obj = tables.table(kind, [obj], obj["metadata"]["resourceVersion"])
            self.send_chunk(compact({"type": event_type, "object": obj}) + b"\n")

        # The headers go at once, as the real server sends them: a client
        # waits for them before it counts its watch as started.
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        try:
            w.run(start, send, lambda: not self.server.dropping)
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


def arg(query, name, default=""):
    """A query parameter's first value, or default."""
    return query.get(name, [default])[0]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--token", required=True)
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--bookmark-seconds", type=float, default=60.0,
                   help="about how often a watch that allows bookmarks gets one, after a "
                        "change (a real server: about a minute)")
    p.add_argument("--watch-history", type=int, default=1000,
                   help="changes kept per resource for watches to resume from")
    p.add_argument("--service-account-delay-seconds", type=float, default=0.0,
                   help="how long after a new namespace appears its ServiceAccount \"default\" "
                        "is made (a real controller-manager takes a moment; pods created "
                        "before are refused); 0: at once")
    p.add_argument("--enable-admission-plugins", default="",
                   help="admission plugins to turn on besides the default ones, comma "
                        "separated: " + ", ".join(admission.OPTIONAL_PLUGINS))
    p.add_argument("--node-dir", help="run pods as local processes, with their folders here")
    p.add_argument("--ca", help="the CA certificate pods get with their service-account token")
    p.add_argument("--podnet", help="podnet.so, preloaded into every pod's processes")
    p.add_argument("--sandbox", help="podsandbox (built from podsandbox.c), which starts "
                   "every container")
    p.add_argument("--image", action="append", default=[], metavar="NAME=PATH",
                   help="the entrypoint of image NAME (its repository name)")
    p.add_argument("--image-user", action="append", default=[], metavar="NAME=UID[:GID]",
                   help="the user image NAME runs as (its Dockerfile's USER; root when not "
                        "given)")
    # Behind up.sh's nginx, which terminates TLS and speaks HTTP/2 to the
    # clients as a real API server does, this one serves plain HTTP/1.1 on a
    # private loopback port, and pods are told the front's port.
    p.add_argument("--plain-http", action="store_true",
                   help="serve plain HTTP (behind a TLS front); --cert and --key are not used")
    p.add_argument("--public-port", type=int,
                   help="the port clients reach this server on, which pods are given as "
                        "KUBERNETES_SERVICE_PORT (default: --port)")
    a = p.parse_args()
    if not a.plain_http and not (a.cert and a.key):
        p.error("--cert and --key are required unless --plain-http is given")
    if a.node_dir and not (a.podnet and a.sandbox):
        p.error("--node-dir needs --podnet and --sandbox")
    if a.public_port is not None and not 0 < a.public_port < 65536:
        p.error("--public-port %d is out of range" % a.public_port)
    if not 0 <= a.service_account_delay_seconds <= 3600:
        p.error("--service-account-delay-seconds %g is out of range (0 to 3600)"
                % a.service_account_delay_seconds)
    try:
        plugins = admission.plugins_from_flag(a.enable_admission_plugins)
    except ValueError as e:
        p.error(str(e))
    public_port = a.port if a.public_port is None else a.public_port
    ca_pem = ""
    if a.ca:
        with open(a.ca) as f:
            ca_pem = f.read()
    Handler.api = Api(ca_pem, a.watch_history, a.token, a.service_account_delay_seconds,
                      plugins)
    Handler.authn = auth.Authenticator(a.token, Handler.api.tokens)
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    server.verbose = a.verbose
    server.dropping = False
    server.failing = None
    server.failed = 0  # requests answered with an injected error since the last POST
    server.bookmark_every = a.bookmark_seconds
    server.node = None
    if a.node_dir:
        images, users = {}, {}
        for item in a.image:
            image, _, path = item.partition("=")
            images[image] = os.path.abspath(path)
        for item in a.image_user:
            m = re.fullmatch(r"([^=]+)=(\d{1,10})(?::(\d{1,10}))?", item)
            if not m or int(m.group(2)) >= 2**31 or int(m.group(3) or 0) >= 2**31:
                p.error("--image-user %r is not NAME=UID[:GID]" % item)
            users[m.group(1)] = (int(m.group(2)), int(m.group(3) or 0))
        server.node = Node(Handler.api, a.node_dir, images, a.podnet, a.sandbox, public_port,
                           a.ca, a.token, log=lambda msg: print(msg, file=sys.stderr, flush=True),
                           image_users=users)
        server.node.start()

    def stop(signum, _frame):
        if server.node:
            server.node.shutdown()
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if a.plain_http:
        print("apiserver: serving on http://127.0.0.1:%d (public port %d)"
              % (a.port, public_port), flush=True)
    else:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        print("apiserver: serving on https://127.0.0.1:%d" % a.port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
