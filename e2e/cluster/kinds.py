"""One table entry per kind the local test cluster serves: everything that
differs between kinds in the real API server's generic registry, so that
the request path (registry.py) has no branch on a kind's name.

A kind says where it lives (group, version, plural, namespaced), how a body
becomes an object (decode: the built-in Go types of decoder.py, or a CRD's
structural schema), its defaults and admission-time additions, its
validation on create and on update, what its strategy does before a write
(a status reset, a kept status), its update rules (create on update,
unconditional update without a resourceVersion), its deletion (graceful,
returning the deleted object), and the field selectors it supports.

Standard library only.
"""
import copy
import json

import cel
import decoder
import defaults
import schema
import validation
import validation_apps
import validation_quota
from errors import GoRaw, invalid, not_supported, required

# The fields every kind can be selected by.
META_FIELDS = ("metadata.name", "metadata.namespace")


def field_value(obj, path):
    """A dotted field of obj as a field selector compares it: "" when
    absent, booleans as "true"/"false"."""
    v = obj
    for part in path.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    if isinstance(v, bool):
        return "true" if v else "false"
    return "" if v is None else str(v)


class Kind:
    """A kind served by the cluster; see the module docstring. Subclasses
    decide decoding, defaults and validation."""

    def __init__(self, group, version, kind, plural, namespaced, short=(), status=False,
                 create_on_update=False, unconditional_update=True, graceful=False,
                 generation=False, fields=META_FIELDS, label_error=False,
                 return_deleted=False, categories=()):
        self.group, self.version, self.kind, self.plural = group, version, kind, plural
        self.namespaced = namespaced
        self.short = list(short)
        self.status = status                # has a status subresource
        self.create_on_update = create_on_update
        self.unconditional_update = unconditional_update
        self.graceful = graceful            # DELETE marks it, its node removes it
        self.generation = generation        # metadata.generation is kept
        self.fields = tuple(fields)
        self.label_error = label_error      # "field label not supported: x"
        self.return_deleted = return_deleted
        self.categories = list(categories)  # discovery's; kubectl get all uses "all"

    # --- naming ---

    @property
    def group_version(self):
        return "%s/%s" % (self.group, self.version) if self.group else self.version

    @property
    def key(self):
        """The store's resource key: "/v1/pods", "training.mwj.io/v1/multiworkerjobs"."""
        return "%s/%s/%s" % (self.group, self.version, self.plural)

    @property
    def qualified_kind(self):
        """Kind.group, as Invalid errors name it ("Pod", "Lease.coordination.k8s.io")."""
        return "%s.%s" % (self.kind, self.group) if self.group else self.kind

    @property
    def qualified_resource(self):
        """resource.group, as NotFound and Forbidden errors name it."""
        return "%s.%s" % (self.plural, self.group) if self.group else self.plural

    # --- field selectors ---

    def field_getter(self, label):
        """A function giving the value of field label of an object, or
        raises ValueError with the real server's message."""
        if label not in self.fields:
            if self.label_error:
                raise ValueError("field label not supported: %s" % label)
            only = ", ".join(json.dumps(f) for f in self.fields)
            raise ValueError("%s is not a known field selector: only %s" % (json.dumps(label),
                                                                            only))
        return lambda obj: field_value(obj, label)

    # --- what subclasses provide ---

    def decode(self, obj, mode, duplicates):
        """(object as stored, warnings) for a request body already parsed."""
        raise NotImplementedError

    def default(self, obj, ctx, old=None):
        """Fills the defaults in place (old: the stored object, on an
        update)."""

    def validate(self, obj, ctx):
        """Field errors of a new object (after defaults)."""
        return []

    def validate_update(self, new, old, ctx):
        """Field errors of an update (after defaults)."""
        return validation.validate_object_meta_update(new.get("metadata") or {},
                                                      old.get("metadata") or {})

    def prepare_create(self, obj):
        """What the strategy resets before a create: the status, for kinds
        with a status subresource."""
        if self.status:
            obj.pop("status", None)

    def hold_deletion(self, obj):
        """Whether a DELETE only marks the object, beyond its finalizers
        and grace period (a namespace waits for its content to go); may
        change obj as the kind's registry does then."""
        return False

    def table_columns(self):
        return [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]


class Builtin(Kind):
    """A kind of the Kubernetes API itself: decoded into its Go type's
    fields, defaulted and validated as kube-apiserver does."""

    def __init__(self, *a, validate=None, validate_update=None, reset_status=None,
                 on_delete=None, **k):
        super().__init__(*a, **k)
        self._validate = validate
        self._validate_update = validate_update
        self._reset_status = reset_status
        self._on_delete = on_delete

    def hold_deletion(self, obj):
        return bool(self._on_delete and self._on_delete(obj))

    @property
    def gvk_key(self):
        return "%s/%s" % (self.group_version, self.kind)

    def decode(self, obj, mode, duplicates):
        return decoder.decode(self.gvk_key, obj, mode, duplicates)

    def default(self, obj, ctx, old=None):
        defaults.default_object(obj, old, ctx.allocate_ip)

    def validate(self, obj, ctx):
        return self._validate(obj, ctx) if self._validate else []

    def validate_update(self, new, old, ctx):
        if self._validate_update:
            return self._validate_update(new, old, ctx)
        return super().validate_update(new, old, ctx) + self.validate(new, ctx)

    def prepare_create(self, obj):
        super().prepare_create(obj)
        defaults.prepare_for_create(obj)
        if self._reset_status:
            obj["status"] = self._reset_status(obj)


def _ns_terminating(ns):
    """A namespace with spec.finalizers is only marked Terminating; the
    namespace controller empties it and removes it (controllers.py)."""
    if not (ns.get("spec") or {}).get("finalizers"):
        return False
    ns.setdefault("status", {})["phase"] = "Terminating"
    return True


class Custom(Kind):
    """A custom resource: decoded, pruned, defaulted and validated by its
    CRD's structural schema (schema.py)."""

    def __init__(self, crd, version):
        spec = crd["spec"]
        names = spec["names"]
        selectable = ["%s" % f.get("jsonPath", "").lstrip(".")
                      for f in version.get("selectableFields") or []]
        super().__init__(spec["group"], version["name"], names["kind"], names["plural"],
                         spec.get("scope") == "Namespaced", short=names.get("shortNames", []),
                         status="status" in (version.get("subresources") or {}),
                         unconditional_update=False, generation=True,
                         fields=META_FIELDS + tuple(selectable),
                         categories=names.get("categories") or ())
        self.schema = (version.get("schema") or {}).get("openAPIV3Schema")
        self.rules = cel.compile_rules(self.schema) if self.schema else {}
        self.columns = version.get("additionalPrinterColumns")

    def decode(self, obj, mode, duplicates):
        obj, warnings = decoder.decode_custom(self.kind, self.version, self.schema or {},
                                              obj, mode, duplicates)
        if self.schema:
            pruned = schema.prune(self.schema, obj)
            # The root's apiVersion, kind and metadata are the server's.
            for k in ("apiVersion", "kind", "metadata"):
                if k in obj:
                    pruned[k] = obj[k]
            obj = pruned
        return obj, warnings

    def default(self, obj, ctx, old=None):
        if self.schema:
            schema.apply_defaults(self.schema, obj)

    def _validate_schema(self, obj, old):
        """The schema's errors, then its validation rules' (cel.py; old:
        the stored object of an update, for transition rules)."""
        if not self.schema:
            return []
        causes = schema.validate_causes(self.schema, obj)
        return causes + cel.validate(self.schema, self.rules, obj, old, causes)

    def validate(self, obj, ctx):
        causes = validation.validate_object_meta(obj.get("metadata") or {}, self.namespaced,
                                                 validation.name_custom_resource, core=False)
        return causes + self._validate_schema(obj, None)

    def validate_update(self, new, old, ctx):
        # Custom resources' finalizers need no domain prefix (core=False).
        causes = validation.validate_object_meta_update(new.get("metadata") or {},
                                                        old.get("metadata") or {}, core=False)
        causes += validation.validate_object_meta(new.get("metadata") or {}, self.namespaced,
                                                  validation.name_custom_resource, core=False)
        return causes + self._validate_schema(new, old)

    def table_columns(self):
        return self.columns or super().table_columns()


# --- the built-in kinds' validation, adapted to one signature ---

def _meta(name_rule, namespaced):
    return lambda obj, ctx: validation.validate_object_meta(obj.get("metadata") or {},
                                                            namespaced, name_rule)


def _pod(obj, ctx):
    return validation.validate_pod(obj)


def _pod_update(new, old, ctx):
    return validation.validate_pod_update(new, old)


def _service(obj, ctx):
    return validation.validate_service(obj)


def _service_update(new, old, ctx):
    return validation.validate_service_update(new, old)


def _core_event(obj, ctx):
    return validation.validate_core_event(obj, ctx.namespace)


def _events_v1_event(obj, ctx):
    return validation.validate_events_v1_event(obj, ctx.namespace)


def _of(fn):
    return lambda obj, ctx: fn(obj)


def _update_of(fn):
    return lambda new, old, ctx: fn(new, old)


def _crd(obj, ctx):
    """The CRD rules the cluster relies on: names, group, versions."""
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    causes = validation.validate_object_meta(obj.get("metadata") or {}, False,
                                             validation.name_dns1123_subdomain)
    for f in ("group", "scope"):
        if not spec.get(f):
            causes.append(required("spec.%s" % f))
    for f in ("plural", "kind"):
        if not names.get(f):
            causes.append(required("spec.names.%s" % f))
    if not spec.get("versions"):
        causes.append(required("spec.versions"))
    want = "%s.%s" % (names.get("plural"), spec.get("group"))
    name = (obj.get("metadata") or {}).get("name")
    if name != want:
        causes.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    for i, version in enumerate(spec.get("versions") or []):
        sch = ((version or {}).get("schema") or {}).get("openAPIV3Schema") \
            if isinstance(version, dict) else None
        if isinstance(sch, dict):
            causes += cel.check_crd_schema(sch, "spec.versions[%d].schema.openAPIV3Schema" % i)
    return causes


def crd_status(obj):
    """What the CRD controllers write once the names are accepted."""
    spec = obj["spec"]
    return {"acceptedNames": copy.deepcopy(spec["names"]),
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                 "message": "no conflicts found",
                 "lastTransitionTime": obj["metadata"]["creationTimestamp"]},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted",
                 "lastTransitionTime": obj["metadata"]["creationTimestamp"]}],
            "storedVersions": [v["name"] for v in spec["versions"] if v.get("storage")]}


POD_FIELDS = META_FIELDS + ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                            "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                            "status.podIP", "status.podIPs", "status.nominatedNodeName")
CORE_EVENT_FIELDS = META_FIELDS + tuple("involvedObject." + f for f in (
    "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")) + (
    "reason", "reportingComponent", "source", "type")
EVENTS_V1_FIELDS = META_FIELDS + tuple("regarding." + f for f in (
    "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")) + (
    "reason", "reportingController", "type", "deprecatedSource.component")

# The kinds `kubectl get all` lists, as the real server's discovery says.
ALL = ("all",)
SUB = validation.name_dns1123_subdomain
# pkg/apis/rbac/validation ValidateRBACName: any name that fits in a path
# segment ("system:discovery").
RBAC_NAME = validation.name_path_segment


def _binding(namespaced):
    """ValidateRoleBinding / ValidateClusterRoleBinding: the name, the
    roleRef (group, a kind the binding may name, a name) and each
    subject's kind, name, and a ServiceAccount's empty apiGroup."""
    def check(obj, ctx):
        causes = validation.validate_object_meta(obj.get("metadata") or {}, namespaced,
                                                 RBAC_NAME)
        ref = obj.get("roleRef") or {}
        if ref.get("apiGroup") != "rbac.authorization.k8s.io":
            causes.append(not_supported("roleRef.apiGroup", ref.get("apiGroup", ""),
                                        ["rbac.authorization.k8s.io"]))
        kinds_ok = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
        if ref.get("kind") not in kinds_ok:
            causes.append(not_supported("roleRef.kind", ref.get("kind", ""), kinds_ok))
        if not ref.get("name"):
            causes.append(required("roleRef.name"))
        for i, sub in enumerate(obj.get("subjects") or []):
            path = "subjects[%d]" % i
            if not sub.get("name"):
                causes.append(required(path + ".name"))
            kind = sub.get("kind")
            if kind == "ServiceAccount":
                if sub.get("apiGroup"):
                    causes.append(not_supported(path + ".apiGroup", sub["apiGroup"], [""]))
                if not namespaced and not sub.get("namespace"):
                    causes.append(required(path + ".namespace"))
            elif kind in ("User", "Group"):
                if sub.get("apiGroup") != "rbac.authorization.k8s.io":
                    causes.append(not_supported(path + ".apiGroup", sub.get("apiGroup", ""),
                                                ["rbac.authorization.k8s.io"]))
            else:
                causes.append(not_supported(path + ".kind", kind or "",
                                            ["ServiceAccount", "User", "Group"]))
        return causes
    return check


def _binding_update(namespaced):
    """A binding's roleRef cannot change (ValidateRoleBindingUpdate)."""
    check = _binding(namespaced)

    def update(new, old, ctx):
        causes = check(new, ctx) + validation.validate_object_meta_update(
            new.get("metadata") or {}, old.get("metadata") or {})
        ref = new.get("roleRef") or {}
        if ref != old.get("roleRef"):
            # An internal struct without String(): the error prints %#v.
            causes.append(invalid("roleRef", GoRaw(
                'rbac.RoleRef{APIGroup:"%s", Kind:"%s", Name:"%s"}' % (
                    ref.get("apiGroup", ""), ref.get("kind", ""), ref.get("name", ""))),
                "cannot change roleRef"))
        return causes
    return update
LABEL = validation.name_dns1123_label

BUILTIN = [
    Builtin("", "v1", "Namespace", "namespaces", False, ["ns"], status=True,
            fields=("metadata.name", "status.phase"), label_error=True,
            validate=_of(validation.validate_namespace), on_delete=_ns_terminating),
    Builtin("", "v1", "Node", "nodes", False, ["no"], status=True,
            fields=("metadata.name", "spec.unschedulable"), label_error=True,
            validate=_of(validation.validate_node)),
    Builtin("", "v1", "Pod", "pods", True, ["po"], status=True, graceful=True, categories=ALL,
            return_deleted=True, fields=POD_FIELDS, label_error=True,
            validate=_pod, validate_update=_pod_update),
    Builtin("", "v1", "Service", "services", True, ["svc"], status=True, categories=ALL,
            validate=_service, validate_update=_service_update),
    Builtin("", "v1", "Endpoints", "endpoints", True, ["ep"], create_on_update=True,
            validate=_meta(SUB, True)),
    Builtin("", "v1", "Event", "events", True, ["ev"], create_on_update=True,
            fields=CORE_EVENT_FIELDS, label_error=True, validate=_core_event),
    Builtin("", "v1", "ConfigMap", "configmaps", True, ["cm"],
            validate=_of(validation.validate_configmap)),
    Builtin("", "v1", "Secret", "secrets", True, [],
            fields=META_FIELDS + ("type",), label_error=True,
            validate=_of(validation.validate_secret)),
    Builtin("", "v1", "ServiceAccount", "serviceaccounts", True, ["sa"],
            validate=_of(validation.validate_service_account)),
    Builtin("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ["pvc"],
            status=True, validate=_meta(SUB, True)),
    Builtin("", "v1", "ResourceQuota", "resourcequotas", True, ["quota"], status=True,
            validate=_of(validation_quota.validate_resource_quota)),
    Builtin("", "v1", "LimitRange", "limitranges", True, ["limits"],
            validate=_of(validation_quota.validate_limit_range)),
    Builtin("coordination.k8s.io", "v1", "Lease", "leases", True, [], create_on_update=True,
            unconditional_update=False, validate=_of(validation.validate_lease)),
    Builtin("events.k8s.io", "v1", "Event", "events", True, ["ev"], create_on_update=True,
            fields=EVENTS_V1_FIELDS, label_error=True, validate=_events_v1_event),
    Builtin("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, ["netpol"],
            generation=True, validate=_of(validation.validate_network_policy)),
    Builtin("apiextensions.k8s.io", "v1", "CustomResourceDefinition",
            "customresourcedefinitions", False, ["crd", "crds"], status=True,
            generation=True, unconditional_update=False, validate=_crd,
            reset_status=crd_status),
    Builtin("rbac.authorization.k8s.io", "v1", "Role", "roles", True, [],
            create_on_update=True, validate=_meta(RBAC_NAME, True)),
    Builtin("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True, [],
            create_on_update=True, validate=_binding(True),
            validate_update=_binding_update(True)),
    Builtin("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, [],
            create_on_update=True, validate=_meta(RBAC_NAME, False)),
    Builtin("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings",
            False, [], create_on_update=True, validate=_binding(False),
            validate_update=_binding_update(False)),
    Builtin("apps", "v1", "Deployment", "deployments", True, ["deploy"], status=True,
            generation=True, categories=ALL, validate=_of(validation_apps.validate_deployment),
            validate_update=_update_of(validation_apps.validate_deployment_update)),
    Builtin("apps", "v1", "ReplicaSet", "replicasets", True, ["rs"], status=True,
            generation=True, categories=ALL, validate=_of(validation_apps.validate_replica_set),
            validate_update=_update_of(validation_apps.validate_replica_set_update)),
    Builtin("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ["pdb"],
            status=True, generation=True, validate=_meta(SUB, True)),
]

CRD_KEY = "apiextensions.k8s.io/v1/customresourcedefinitions"


def builtin_by_key():
    return {k.key: k for k in BUILTIN}
