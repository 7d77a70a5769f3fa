"""For the tests of admission: a store, its registry and controllers with no
HTTP in between, the namespaces default and team with their
ServiceAccounts, and requests as the cluster's admin or as a
ServiceAccount, answering (status, body, warnings) as the server would
send them.

Standard library only.
"""
import json
import unittest

import rbac
import tokens
from controllers import Controllers
from errors import ApiError
from registry import Registry, Request
from store import Store
from tokens import User

ADMIN = User("system:admin", [rbac.MASTERS, "system:authenticated"])


class RegistryTest(unittest.TestCase):
    """setUp gives self.store, self.registry, self.controllers (synced
    by hand: self.sync()) and the namespaces default and team."""

    plugins = ()

    def setUp(self):
        self.store = Store()
        self.registry = Registry(self.store, self.plugins)
        for key, obj in rbac.BOOTSTRAP:
            self.registry._create(self.registry.kind_of_key(key), None, obj, Request({}))
        self.controllers = Controllers(self.registry, "CA", log=lambda _m: None,
                                       tokens=tokens.Issuer(self.store, "admin-token"))
        for ns in ("default", "team"):
            self.create("v1", "namespaces", None, {"kind": "Namespace",
                                                   "metadata": {"name": ns}})
        self.sync()

    def sync(self):
        self.controllers.sync()

    def request(self, verb, gv, plural, ns, obj=None, name=None, query=None, user=ADMIN,
                sub=None):
        """(status, body, warnings) of a create, update, patch (a merge
        patch) or delete, as the server answers it."""
        kind = self.registry.kind(gv, plural)
        req = Request(query or {}, user)
        raw = json.dumps(obj).encode() if obj is not None else b""
        try:
            if verb == "create":
                res = self.registry.create(kind, ns, raw, req)
            elif verb == "update":
                res = self.registry.update(kind, ns, name, raw, req, sub)
            elif verb == "patch":
                res = self.registry.patch(kind, ns, name, raw, "application/merge-patch+json",
                                          req, sub)
            else:
                res = self.registry.delete(kind, ns, name, raw, req)
        except ApiError as e:
            return e.code, e.status(), []
        return res.code, res.body, res.warnings

    def create(self, gv, plural, ns, obj, **k):
        obj = dict(obj, apiVersion=gv)
        return self.request("create", gv, plural, ns, obj, **k)

    def created(self, gv, plural, ns, obj, **k):
        """The created object; fails the test unless the create succeeds."""
        code, body, _ = self.create(gv, plural, ns, obj, **k)
        self.assertEqual(code, 201, body)
        return body

    def refused(self, gv, plural, ns, obj, **k):
        """The Status of a create that must be refused."""
        code, body, _ = self.create(gv, plural, ns, obj, **k)
        self.assertNotEqual(code, 201, body)
        return body


def pod(name, *containers, spec=None, **meta):
    """A pod of containers given as (name, resources) or name."""
    cs = []
    for c in containers:
        n, res = (c, None) if isinstance(c, str) else c
        cs.append({"name": n, "image": "i"} if res is None else
                  {"name": n, "image": "i", "resources": res})
    body = {"kind": "Pod", "metadata": dict(meta, name=name),
            "spec": dict({"containers": cs, "schedulerName": "none"}, **(spec or {}))}
    return body


def status(code, reason, message, details):
    """A Status body as the server sends it."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code, "details": details}
