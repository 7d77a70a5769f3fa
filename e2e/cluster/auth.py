"""Authentication and authorization of a request, as the real API server's
filters do them before a handler runs:

- authentication, as kube-apiserver's chain does it (k8s.io/apiserver
  pkg/authentication/request/bearertoken, union and anonymous; the token
  authenticators of pkg/kubeapiserver/authenticator/config.go): the
  cluster's bearer token (written by up.sh into the kubeconfig) is
  system:admin in the group system:masters, as a kubeadm cluster's admin
  certificate is, and, like a static token, is valid for the API server's
  audiences only; a ServiceAccount token (tokens.py) is its
  ServiceAccount, for the audiences it names; a request with no bearer
  token (no Authorization header, another scheme, an empty token) is
  system:anonymous in system:unauthenticated; any other bearer token is
  401 Unauthorized, and the error the chain gives it ("invalid bearer
  token" for one no authenticator takes) is what a TokenReview
  (tokenreview.py) reports;
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
import tokens
from errors import ApiError
from tokens import TokenError, User

ANONYMOUS = User("system:anonymous", ["system:unauthenticated"])
ADMIN = User("system:admin", [rbac.MASTERS, "system:authenticated"])
VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
# bearertoken.go: the error of a bearer token no token authenticator takes.
INVALID_TOKEN = "invalid bearer token"


class Authenticator:
    """token: the cluster's admin token; issuer: the ServiceAccount token
    issuer (tokens.Issuer), or None."""

    def __init__(self, token, issuer=None):
        self.token = token
        self.issuer = issuer

    def token_user(self, token, audiences):
        """The union of the token authenticators (tokenunion): (User, the
        audiences it holds for) or None when none takes the token; raises
        TokenError. The admin token is audience-agnostic
        (authenticator.WrapAudienceAgnosticToken): valid only where the
        audiences asked for meet the API server's."""
        if hmac.compare_digest(token.encode(), self.token.encode()):
            auds = tokens.intersect(tokens.AUDIENCES, audiences)
            return (ADMIN, auds) if auds else None
        return self.issuer.review(token, audiences) if self.issuer else None

    def request(self, header, audiences=None):
        """(User, audiences) of a request with this Authorization header,
        for audiences (None: the API server's): the bearer token's user
        (bearertoken.go: the header trimmed, split in at most 3 on spaces,
        the second part the token), else, with no token to look at,
        ANONYMOUS (union.NewFailOnError with the anonymous authenticator,
        which answers with the audiences asked for). Raises TokenError."""
        audiences = list(audiences or tokens.AUDIENCES)
        parts = (header or "").strip().split(" ", 2)
        if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
            return ANONYMOUS, audiences
        found = self.token_user(parts[1], audiences)
        if found is None:
            raise TokenError(INVALID_TOKEN)
        return found

    def user(self, header):
        """The User of a request to this API server: 401 for a bearer
        token that does not authenticate."""
        try:
            return self.request(header)[0]
        except TokenError:
            raise tokens.unauthorized() from None


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
