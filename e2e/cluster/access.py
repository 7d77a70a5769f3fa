"""What a client uses to find out or try what a user may do, as the real API
server serves it:

- impersonation (k8s.io/apiserver/pkg/endpoints/filters/impersonation.go):
  the Impersonate-User and Impersonate-Group headers (kubectl --as and
  --as-group) make the request the impersonated user's, once RBAC allows
  the requester the verb "impersonate" on that user ("users"), that
  ServiceAccount ("serviceaccounts" in its namespace, for a name
  system:serviceaccount:<ns>:<name>) and each group ("groups"); the
  impersonated user is in system:authenticated, and a ServiceAccount
  without groups given in its own ServiceAccount groups;
- SelfSubjectAccessReview (authorization.k8s.io/v1, create only), which
  `kubectl auth can-i` sends: the RBAC answer for the requesting user,
  status.allowed and status.reason.

Standard library only.
"""
import copy

import auth
import rbac
import tokens
from errors import bad_request

GROUP_VERSION = "authorization.k8s.io/v1"
# Discovery of the group: the resource and what may be done with it.
RESOURCES = [{"name": "selfsubjectaccessreviews", "singularName": "selfsubjectaccessreview",
              "namespaced": False, "kind": "SelfSubjectAccessReview", "verbs": ["create"]}]


def impersonate(authorizer, user, headers):
    """The user a request acts as: user, or the one its Impersonate-*
    headers name once authorizer allows it (403 otherwise)."""
    name = headers.get("Impersonate-User")
    groups = headers.get_all("Impersonate-Group") or []
    if not name:
        if groups or headers.get("Impersonate-Uid"):
            raise bad_request("requested [%s] without impersonating a user" % ", ".join(
                "{Group %s}" % g for g in groups))
        return user
    if name.startswith(tokens.SA_PREFIX) and name.count(":") == 3:
        ns, sa = name[len(tokens.SA_PREFIX):].split(":")
        attrs = rbac.Attributes("impersonate", "", "serviceaccounts", "", ns, sa)
    else:
        ns = sa = None
        attrs = rbac.Attributes("impersonate", "", "users", "", "", name)
    auth.authorize(authorizer, user, attrs)
    for g in groups:
        auth.authorize(authorizer, user, rbac.Attributes("impersonate", "", "groups", "", "", g))
    if sa is not None and not groups:
        out = tokens.service_account_user(ns, sa)
    else:
        out = tokens.User(name, groups)
    if name != auth.ANONYMOUS.name and "system:authenticated" not in out.groups:
        out.groups.append("system:authenticated")
    return out


def self_subject_access_review(authorizer, user, review):
    """The answered review (201): spec.resourceAttributes or
    spec.nonResourceAttributes, checked for user as RBAC would."""
    out = copy.deepcopy(review)
    spec = out.get("spec") or {}
    res, non = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if bool(res) == bool(non):
        raise bad_request('SelfSubjectAccessReview.authorization.k8s.io "" is invalid: '
                          "spec.resourceAttributes: Invalid value: \"null\": exactly one of "
                          "nonResourceAttributes or resourceAttributes must be specified")
    if res:
        attrs = rbac.Attributes(res.get("verb", ""), res.get("group", ""),
                                res.get("resource", ""), res.get("subresource", ""),
                                res.get("namespace", ""), res.get("name", ""))
    else:
        attrs = rbac.Attributes(non.get("verb", ""), path=non.get("path", ""))
    allowed, reason = authorizer.authorize(user, attrs)
    status = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    out["status"] = status
    out["apiVersion"], out["kind"] = GROUP_VERSION, "SelfSubjectAccessReview"
    out.setdefault("metadata", {})
    return out
