"""Authentication and authorization of a request, as the real API server's
filters do them before a handler runs:

- authentication: the cluster's bearer token (written by up.sh into the
  kubeconfig) is system:admin in the group system:masters, as a kubeadm
  cluster's admin certificate is; a ServiceAccount token (tokens.py) is
  its ServiceAccount; no Authorization header is system:anonymous in
  system:unauthenticated; any other bearer token is 401 Unauthorized;
- authorization: RBAC (rbac.py) over the cluster's roles and bindings,
  which start with the real bootstrap policy, so that system:masters may
  do everything, every authenticated user may use discovery, and the
  anonymous user may read only /version, /healthz, /livez and /readyz;
  a request RBAC does not allow is answered 403 with the real server's
  Status (responsewriters.Forbidden): `<resource> "<name>" is forbidden:
  User "<user>" cannot <verb> resource "<resource>" in API group "<group>"
  in the namespace "<ns>"`, or `forbidden: User "<user>" cannot get path
  "<path>"` for a path.

Standard library only.
"""
import hmac

import rbac
from errors import ApiError
from tokens import User

ANONYMOUS = User("system:anonymous", ["system:unauthenticated"])
ADMIN = User("system:admin", [rbac.MASTERS, "system:authenticated"])
VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class Authenticator:
    """token: the cluster's admin token; issuer: the ServiceAccount token
    issuer (tokens.Issuer), or None."""

    def __init__(self, token, issuer=None):
        self.token = token
        self.issuer = issuer

    def user(self, header):
        """The User of an Authorization header: ANONYMOUS without one, 401
        for a bearer token that is neither the cluster's nor a valid
        ServiceAccount token."""
        if not header:
            return ANONYMOUS
        scheme, _, value = header.partition(" ")
        value = value.strip()
        if scheme.lower() != "bearer":
            raise ApiError(401, "Unauthorized", "Unauthorized")
        if hmac.compare_digest(value, self.token):
            return ADMIN
        user = self.issuer.authenticate(value) if self.issuer else None
        if user is None:
            raise ApiError(401, "Unauthorized", "Unauthorized")
        return user


def verb(method, name, watch):
    """The authorization verb of a resource request."""
    if method == "GET":
        return "watch" if watch else ("get" if name else "list")
    if method == "DELETE" and not name:
        return "deletecollection"
    return VERBS.get(method, method.lower())


def authorize(authorizer, user, attrs):
    """Raises 403 unless authorizer (rbac.Authorizer) allows attrs
    (rbac.Attributes) to user."""
    allowed, reason = authorizer.authorize(user, attrs)
    if allowed:
        return
    why = rbac.forbidden_message(user, attrs)
    if reason:
        why += ": " + reason
    if not attrs.is_resource:
        raise ApiError(403, "Forbidden", "forbidden: " + why, {})
    what = "%s.%s" % (attrs.resource, attrs.group) if attrs.group else attrs.resource
    message = '%s "%s" is forbidden: %s' % (what, attrs.name, why) if attrs.name else \
        "%s is forbidden: %s" % (what, why)
    details = {"kind": attrs.resource}
    if attrs.name:
        details["name"] = attrs.name
    if attrs.group:
        details["group"] = attrs.group
    raise ApiError(403, "Forbidden", message, details)
