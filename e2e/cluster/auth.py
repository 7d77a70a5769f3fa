"""Authentication and authorization of a request, as far as the local test
cluster has them: the cluster's bearer token is an administrator; a request
without a token is system:anonymous, which may read only the public paths
(/version, /healthz, /livez, /readyz), as RBAC's system:public-info-viewer
allows, and is refused everything else with 403 and RBAC's wording; a token
that is not the cluster's is 401.

Standard library only.
"""
import hmac

from errors import ApiError

ANONYMOUS = "system:anonymous"
ADMIN = "system:admin"
PUBLIC = ("/version", "/healthz", "/livez", "/readyz")
VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class Authenticator:
    def __init__(self, token):
        self.token = token

    def user(self, header):
        """The user of an Authorization header: ANONYMOUS without one, 401
        for a bearer token that is not the cluster's."""
        if not header:
            return ANONYMOUS
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip(), self.token):
            raise ApiError(401, "Unauthorized", "Unauthorized")
        return ADMIN


def verb(method, name, watch):
    """The authorization verb of a request."""
    if method == "GET":
        return "watch" if watch else ("get" if name else "list")
    if method == "DELETE" and not name:
        return "deletecollection"
    return VERBS.get(method, method.lower())


def authorize(user, path, resource=None):
    """Raises 403 unless user may make the request. resource, for a
    resource request, is (verb, group, plural with subresource, namespace,
    name); None for a path."""
    if user != ANONYMOUS or (resource is None and path in PUBLIC):
        return
    if resource is None:
        raise ApiError(403, "Forbidden", 'forbidden: User "%s" cannot get path "%s"'
                       % (user, path), {})
    v, group, plural, ns, name = resource
    where = 'in the namespace "%s"' % ns if ns else "at the cluster scope"
    why = 'User "%s" cannot %s resource "%s" in API group "%s" %s' % (user, v, plural, group,
                                                                       where)
    what = "%s.%s" % (plural.split("/")[0], group) if group else plural.split("/")[0]
    message = '%s "%s" is forbidden: %s' % (what, name, why) if name else \
        "%s is forbidden: %s" % (what, why)
    details = {"kind": plural.split("/")[0]}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    raise ApiError(403, "Forbidden", message, details)
