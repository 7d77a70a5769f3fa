"""Admission: what the real API server's admission chain does to a write,
plugin by plugin, in kube-apiserver's order (pkg/kubeapiserver/options/
plugins.go, AllOrderedPlugins). Mutating plugins run between decoding and
the registry's strategy and validation (create, update); validating ones
after them, just before the write (validate_create, validate_update), so
that a write both invalid and refused is answered 422, and the validating
plugins see a generated name.

Mutating:
- NamespaceLifecycle: content only in a namespace that exists (404) and is
  not Terminating (403, with a NamespaceTerminating cause); the namespaces
  default, kube-system and kube-public cannot be deleted (403);
- defaulting (defaults.py), as decoding a built-in kind applies it, and a
  CRD schema's defaults for custom resources;
- LimitRanger: the LimitRanges' default requests and limits into a new
  pod's containers (admission_limitranger.py);
- ServiceAccount: a pod runs as a ServiceAccount that exists in its
  namespace (403 otherwise: every namespace gets "default" from the
  service account controller, controllers.py, a moment after it is made;
  a request waits for "default" as the real plugin does, ten lookups 100
  to 200 ms apart), and gets the kube-api-access-* projected volume with
  its token, CA and namespace, mounted in every container, unless the pod
  or else the ServiceAccount says automountServiceAccountToken: false;
- Priority and DefaultTolerationSeconds are part of defaults.default_pod;
- RBAC escalation prevention (rbac.Escalation), which the real server does
  in the RBAC kinds' storage, after mutating admission and before
  validation.

Validating:
- LimitRanger: min, max and ratios (admission_limitranger.py);
- PodSecurity: the namespace's Pod Security Standards
  (admission_podsecurity.py, podsecurity.py), with its Warning headers;
- OwnerReferencesPermissionEnforcement, when enabled (off by default, as
  in kube-apiserver): admission_ownerrefs.py;
- ResourceQuota, last: admission_quota.py, quota.py.

Standard library only.
"""
import random
import time

import defaults
import rbac
from admission_limitranger import LimitRanger
from admission_ownerrefs import NAME as OWNER_REFS, OwnerReferences
from admission_podsecurity import PodSecurity
from admission_quota import QuotaAdmission
from errors import ApiError, not_found_error
from rbac import Escalation
from tokens import User

NAMESPACES = "/v1/namespaces"
SERVICEACCOUNTS = "/v1/serviceaccounts"
PODS = "/v1/pods"
# Namespaces the lifecycle plugin never lets go.
IMMORTAL = ("default", "kube-system", "kube-public")
# The plugins of kube-apiserver's default set that this cluster has, and
# those it can turn on (--enable-admission-plugins).
DEFAULT_PLUGINS = ("NamespaceLifecycle", "LimitRanger", "ServiceAccount", "Priority",
                   "DefaultTolerationSeconds", "PodSecurity", "ResourceQuota")
OPTIONAL_PLUGINS = (OWNER_REFS,)
# plugin/pkg/admission/serviceaccount getServiceAccount: "default" is
# looked up this many times, with a pause of 100 to 200 ms between.
DEFAULT_SA_LOOKUPS = 10


def plugins_from_flag(text):
    """The plugins an --enable-admission-plugins value names, checked:
    ValueError naming an unknown one, as kube-apiserver refuses to start."""
    names = [n.strip() for n in (text or "").split(",") if n.strip()]
    for n in names:
        if n not in DEFAULT_PLUGINS + OPTIONAL_PLUGINS:
            raise ValueError('enable-admission-plugins plugin "%s" is unknown (this cluster '
                             'has: %s)' % (n, ", ".join(DEFAULT_PLUGINS + OPTIONAL_PLUGINS)))
    return names


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
    """What admission and validation of one request may look at, and the
    warnings it answers with (req.warnings, which the response carries)."""

    def __init__(self, registry, kind, namespace, req, subresource=None):
        self.registry = registry
        self.kind = kind
        self.namespace = namespace
        self.dry_run = req.dry_run
        self.user = req.user
        self.subresource = subresource or ""
        self.warnings = req.warnings

    def allocate_ip(self):
        return self.registry.allocate_ip()


def admission_name(obj):
    """extractResourceName: the object's name, else its generateName (a
    mutating plugin runs before the name is generated), else Unknown."""
    md = obj.get("metadata") or {}
    return md.get("name") or md.get("generateName") or "Unknown"


def forbidden(kind, name, why, causes=None):
    """admission.NewForbidden (apierrors.NewForbidden of the resource and
    name): `pods "p" is forbidden: <why>`, details name, group, kind (the
    resource) and any causes."""
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
    """The chain (see the module docstring). plugins: the optional ones to
    turn on (OPTIONAL_PLUGINS)."""

    def __init__(self, registry, plugins=()):
        self.registry = registry
        self.store = registry.store
        self.escalation = Escalation(self.store)
        self.limit_ranger = LimitRanger(self.store)
        self.pod_security = PodSecurity(self.store)
        self.quota = QuotaAdmission(self.store)
        self.owner_refs = OwnerReferences(registry, rbac.Authorizer(self.store)) \
            if OWNER_REFS in plugins else None

    # --- mutating ---

    def _namespace_lifecycle(self, kind, obj, ctx):
        """k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle: a
        create in a namespace whose phase is Terminating is refused."""
        if not kind.namespaced:
            return
        ns = self.store.find(NAMESPACES, None, ctx.namespace)
        if ns is None:
            raise not_found_error("namespaces", "", ctx.namespace)
        if (ns.get("status") or {}).get("phase") == "Terminating":
            raise forbidden(kind, admission_name(obj),
                            "unable to create new content in namespace %s because it is "
                            "being terminated" % ctx.namespace,
                            [{"reason": "NamespaceTerminating",
                              "message": "namespace %s is being terminated" % ctx.namespace,
                              "field": "metadata.namespace"}])

    def _find_service_account(self, ctx, name):
        """getServiceAccount: the ServiceAccount, or None. "default" is
        looked up again for about 1 to 2 s, since its controller makes it
        a moment after the namespace (the wait lets go of the store). The
        cluster's own controllers do not wait: they run in one thread with
        the service account controller, and try again on their next pass."""
        sa = self.store.find(SERVICEACCOUNTS, ctx.namespace, name)
        if sa is not None or name != "default" or not isinstance(ctx.user, User):
            return sa
        pause = random.uniform(0.1, 0.2)
        for _ in range(DEFAULT_SA_LOOKUPS - 1):
            end = time.monotonic() + pause
            while time.monotonic() < end:
                self.store.changed.wait(end - time.monotonic())
            sa = self.store.find(SERVICEACCOUNTS, ctx.namespace, name)
            if sa is not None:
                return sa
        return None

    def _service_account(self, kind, pod, ctx):
        """plugin/pkg/admission/serviceaccount Admit (defaults_pod.py has
        the token volume and shouldAutomount)."""
        spec = pod.setdefault("spec", {})
        if not spec.get("serviceAccountName"):
            spec["serviceAccountName"] = spec.get("serviceAccount") or "default"
        name = spec["serviceAccountName"]
        sa = self._find_service_account(ctx, name)
        if sa is None:
            raise forbidden(kind, admission_name(pod),
                            'error looking up service account %s/%s: serviceaccount "%s" not '
                            "found" % (ctx.namespace, name, name))
        defaults.add_service_account_token(pod, sa)

    def create(self, kind, obj, ctx):
        """The mutating admission of a create, in place."""
        self._namespace_lifecycle(kind, obj, ctx)
        if kind.key == PODS:
            refusal = defaults.priority_refusal(obj)
            if refusal:
                raise forbidden(kind, admission_name(obj), refusal)
        kind.default(obj, ctx)
        if kind.key == PODS:
            self.limit_ranger.admit(kind, obj, ctx)
            self._service_account(kind, obj, ctx)
        self.escalation.check(kind.key, obj, ctx.namespace, ctx.user)

    def update(self, kind, new, old, ctx):
        """The mutating admission of an update, in place: the defaults
        again, as decoding the new body applies them (with the stored
        object, which keeps what was allocated, such as a Service's
        cluster IP)."""
        kind.default(new, ctx, old)
        if not _only_gc_fields(new, old):
            self.escalation.check(kind.key, new, ctx.namespace, ctx.user)

    def delete(self, kind, obj, ctx):
        if kind.key == NAMESPACES and obj["metadata"]["name"] in IMMORTAL:
            raise forbidden(kind, obj["metadata"]["name"], "this namespace may not be deleted")

    # --- validating ---

    def _validate(self, kind, obj, old, ctx):
        name = admission_name(obj)

        def refuse(why):
            return forbidden(kind, name, why)
        why = self.limit_ranger.validate(kind, obj, old, ctx)
        if why:
            raise refuse(why)
        self.pod_security.validate(kind, obj, old, ctx, refuse)
        if self.owner_refs is not None:
            why = self.owner_refs.validate(kind, obj, old, ctx)
            if why:
                raise refuse(why)
        self.quota.validate(kind, obj, old, ctx, refuse)

    def validate_create(self, kind, obj, ctx):
        """The validating admission of a create: obj is what would be
        stored (its name generated). Raises the refusal; may charge a
        ResourceQuota."""
        self._validate(kind, obj, None, ctx)

    def validate_update(self, kind, new, old, ctx):
        """The validating admission of an update (or of a status write)."""
        self._validate(kind, new, old, ctx)
