"""Admission: what the real API server's default admission chain does to a
write between decoding and the registry's validation, for the plugins whose
effect an operator sees:

- NamespaceLifecycle: content only in a namespace that exists (404) and is
  not being terminated (403); the namespaces default, kube-system and
  kube-public cannot be deleted (403);
- defaulting (defaults.py), as decoding a built-in kind applies it, and a
  CRD schema's defaults for custom resources;
- ServiceAccount: a pod runs as a ServiceAccount that exists in its
  namespace (403 otherwise: every namespace has "default", made by
  controllers.py), and gets the kube-api-access-* projected volume with
  its token, CA and namespace, mounted in every container;
- Priority and DefaultTolerationSeconds are part of defaults.default_pod;
- RBAC escalation prevention (rbac.Escalation), which the real server does
  in the RBAC kinds' storage, after mutating admission and before
  validation.

Standard library only.
"""
import defaults
from errors import ApiError, not_found_error
from rbac import Escalation

NAMESPACES = "/v1/namespaces"
SERVICEACCOUNTS = "/v1/serviceaccounts"
# Namespaces the lifecycle plugin never lets go.
IMMORTAL = ("default", "kube-system", "kube-public")


def _only_gc_fields(new, old):
    """rbacregistry.IsOnlyMutatingGCFields: an update that changes only
    ownerReferences and finalizers (the garbage collector's) is not
    checked for escalation."""
    def strip(o):
        o = dict(o, metadata=dict(o.get("metadata") or {}))
        for k in ("ownerReferences", "finalizers", "resourceVersion", "managedFields"):
            o["metadata"].pop(k, None)
        return o
    return strip(new) == strip(old)


class Context:
    """What admission and validation of one request may look at."""

    def __init__(self, registry, kind, namespace, req):
        self.registry = registry
        self.kind = kind
        self.namespace = namespace
        self.dry_run = req.dry_run
        self.user = req.user

    def allocate_ip(self):
        return self.registry.allocate_ip()


def forbidden(kind, name, why, causes=None):
    """admission.NewForbidden: `pods "p" is forbidden: <why>`."""
    what = kind.qualified_resource
    message = "%s is forbidden: %s" % (what, why) if not name else \
        '%s "%s" is forbidden: %s' % (what, name, why)
    details = {"kind": kind.plural}
    if name:
        details["name"] = name
    if kind.group:
        details["group"] = kind.group
    if causes:
        details["causes"] = causes
    return ApiError(403, "Forbidden", message, details)


class Admission:
    def __init__(self, registry):
        self.registry = registry
        self.store = registry.store
        self.escalation = Escalation(self.store)

    def _namespace_lifecycle(self, kind, obj, ctx):
        if not kind.namespaced:
            return
        ns = self.store.find(NAMESPACES, None, ctx.namespace)
        if ns is None:
            raise not_found_error("namespaces", "", ctx.namespace)
        if ns["metadata"].get("deletionTimestamp") or \
                (ns.get("status") or {}).get("phase") == "Terminating":
            raise forbidden(kind, obj["metadata"].get("name"),
                            "unable to create new content in namespace %s because it is "
                            "being terminated" % ctx.namespace,
                            [{"reason": "NamespaceTerminating",
                              "message": "namespace %s is being terminated" % ctx.namespace,
                              "field": "metadata.namespace"}])

    def _service_account(self, kind, pod, ctx):
        spec = pod.setdefault("spec", {})
        if not spec.get("serviceAccountName"):
            spec["serviceAccountName"] = spec.get("serviceAccount") or "default"
        name = spec["serviceAccountName"]
        sa = self.store.find(SERVICEACCOUNTS, ctx.namespace, name)
        if sa is None:
            raise forbidden(kind, pod["metadata"].get("name"),
                            'error looking up service account %s/%s: serviceaccount "%s" not '
                            "found" % (ctx.namespace, name, name))
        defaults.add_service_account_token(pod, sa)

    def create(self, kind, obj, ctx):
        """The mutating and validating admission of a create, in place."""
        self._namespace_lifecycle(kind, obj, ctx)
        if kind.key == "/v1/pods":
            refusal = defaults.priority_refusal(obj)
            if refusal:
                raise forbidden(kind, obj["metadata"].get("name"), refusal)
        kind.default(obj, ctx)
        if kind.key == "/v1/pods":
            self._service_account(kind, obj, ctx)
        self.escalation.check(kind.key, obj, ctx.namespace, ctx.user)

    def update(self, kind, new, old, ctx):
        """The admission of an update, in place: the defaults again, as
        decoding the new body applies them (with the stored object, which
        keeps what was allocated, such as a Service's cluster IP)."""
        kind.default(new, ctx, old)
        if not _only_gc_fields(new, old):
            self.escalation.check(kind.key, new, ctx.namespace, ctx.user)

    def delete(self, kind, obj, ctx):
        if kind.key == NAMESPACES and obj["metadata"]["name"] in IMMORTAL:
            raise forbidden(kind, obj["metadata"]["name"], "this namespace may not be deleted")
