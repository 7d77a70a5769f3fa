"""The OwnerReferencesPermissionEnforcement admission plugin
(plugin/pkg/admission/gc/gc_admission.go), off by default as in
kube-apiserver (apiserver.py --enable-admission-plugins, up.sh
MWJ_CLUSTER_ADMISSION_PLUGINS turn it on). On a create or update that
changes metadata.ownerReferences (pods/status excepted):

- an update needs `delete` on the object itself (a create does not: its
  author could as well not have made it);
- every reference newly set with blockOwnerDeletion: true needs `update`
  on the owner's `<resource>/finalizers` (the owner's apiVersion and kind
  mapped to its resource, in the request's namespace).

Both asked of the cluster's authorizer (rbac.py; system:masters may do
anything). A refusal is 403 Forbidden through admission.NewForbidden, the
authorizer's reason and error printed with %v, so that an RBAC denial,
which has neither, reads ", <nil>":

  pods "p" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>
  pods "p" is forbidden: cannot set an ownerRef on a resource you can't delete: , <nil>
  pods "p" is forbidden: cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion example.com/v1 Kind Thing: no matches for kind "Thing" in version "example.com/v1"

The cluster's own writes (its controllers) are not checked.

Standard library only.
"""
import rbac
from tokens import User

NAME = "OwnerReferencesPermissionEnforcement"


def _refs(obj):
    refs = ((obj or {}).get("metadata") or {}).get("ownerReferences")
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def _changing(new, old):
    """isChangingOwnerReference."""
    if old is None:
        return bool(_refs(new))
    return _refs(new) != _refs(old)


def _new_blocking(new, old):
    """newBlockingOwnerDeletionRefs: references newly set blocking."""
    blocking = [r for r in _refs(new) if r.get("blockOwnerDeletion") is True]
    if old is None:
        return blocking
    before = {r.get("uid"): r for r in _refs(old)}
    return [r for r in blocking if r.get("uid") not in before or
            before[r.get("uid")].get("blockOwnerDeletion") is not True]


def _reason(reason):
    """The ": %v, %v" tail: the authorizer's reason, then its error (none)."""
    return "%s, <nil>" % reason


class OwnerReferences:
    def __init__(self, registry, authorizer):
        self.registry = registry
        self.authorizer = authorizer

    def _resources(self, api_version, kind):
        """RESTMappings of a kind in a group/version: its resources."""
        return sorted(k.plural for k in (self.registry.kinds().get(api_version) or {}).values()
                      if k.kind == kind)

    def validate(self, kind, new, old, ctx):
        """The refusal's text, or None when allowed."""
        user = ctx.user
        if not isinstance(user, User):
            return None
        if kind.key == "/v1/pods" and ctx.subresource == "status":
            return None
        if not _changing(new, old):
            return None
        if old is not None:
            allowed, reason = self.authorizer.authorize(user, rbac.Attributes(
                "delete", kind.group, kind.plural, ctx.subresource or "", ctx.namespace or "",
                new["metadata"].get("name", "")))
            if not allowed:
                return "cannot set an ownerRef on a resource you can't delete: " + \
                    _reason(reason)
        for ref in _new_blocking(new, old):
            api_version, owner_kind = ref.get("apiVersion", ""), ref.get("kind", "")
            group = api_version.rpartition("/")[0] if "/" in api_version else ""
            resources = self._resources(api_version, owner_kind)
            if not resources:
                return ("cannot set blockOwnerDeletion in this case because cannot find "
                        "RESTMapping for APIVersion %s Kind %s: no matches for kind \"%s\" in "
                        "version \"%s\"" % (api_version, owner_kind, owner_kind, api_version))
            for resource in resources:
                allowed, reason = self.authorizer.authorize(user, rbac.Attributes(
                    "update", group, resource, "finalizers", ctx.namespace or "",
                    ref.get("name", "")))
                if not allowed:
                    return ("cannot set blockOwnerDeletion if an ownerReference refers to a "
                            "resource you can't set finalizers on: " + _reason(reason))
        return None
