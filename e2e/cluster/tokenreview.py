"""The TokenReview API (authentication.k8s.io/v1, cluster-scoped, create
only), which a server that delegates authentication to the cluster (the
operator, checking its workers' projected ServiceAccount tokens) calls, as
kube-apiserver v1.31 serves it (pkg/registry/authentication/tokenreview/
storage.go, REST.Create):

- spec.token empty: 400 BadRequest "token is required for TokenReview in
  authentication";
- the token is authenticated as a request carrying only
  `Authorization: Bearer <token>` would be, by the server's whole chain
  (auth.py), for spec.audiences, or the API server's own audiences when
  there are none;
- a token that does not authenticate is no HTTP error: 201 with
  status.authenticated left out (false) and status.error the chain's
  error ("invalid bearer token", "service account token has expired",
  `token audiences ["x"] is invalid for the target audiences ["y"]`, ...);
- one that does: status.authenticated true, status.user (username, uid,
  groups, extra) and status.audiences, the audiences it was found valid
  for; an authenticator that answers for none of those asked is a 500
  InternalError "error validating audiences".

The caller needs RBAC's create on tokenreviews (the bootstrap ClusterRole
system:auth-delegator grants it, rbac.py); apiserver.py checks that.

Standard library only.
"""
import copy

import tokens
from errors import ApiError, bad_request

GROUP_VERSION = "authentication.k8s.io/v1"
# Discovery of what this server serves of the group.
RESOURCES = [{"name": "tokenreviews", "singularName": "tokenreview", "namespaced": False,
              "kind": "TokenReview", "verbs": ["create"]}]


def bad_audiences():
    """storage.go badAuthenticatorAuds: apierrors.NewInternalError."""
    why = "error validating audiences"
    return ApiError(500, "InternalError", "Internal error occurred: " + why,
                    {"causes": [{"message": why}]})


def user_info(user):
    """authentication.UserInfo of a user.Info, as JSON writes it: empty
    fields left out, the extra keys sorted (a Go map)."""
    info = {"username": user.name, "uid": user.uid, "groups": list(user.groups),
            "extra": {k: list(user.extra[k]) for k in sorted(user.extra)}}
    return {k: v for k, v in info.items() if v}


def create(authenticator, review):
    """The TokenReview answered (201) for review, a decoded body;
    authenticator: auth.Authenticator. Raises ApiError 400 or 500."""
    spec = review.get("spec") or {}
    token = spec.get("token") or ""
    if not token:
        raise bad_request("token is required for TokenReview in authentication")
    wanted = list(spec.get("audiences") or tokens.AUDIENCES)
    # The status the client sent stays where REST.Create writes nothing.
    status = copy.deepcopy(review.get("status") or {})
    try:
        user, auds = authenticator.request("Bearer " + token, wanted)
    except tokens.TokenError as e:
        user, auds = None, None
        status["error"] = str(e)
    status["authenticated"] = user is not None
    if user is not None:
        if not tokens.intersect(auds, wanted):
            raise bad_audiences()
        status["user"] = user_info(user)
        status["audiences"] = auds
    return {"kind": "TokenReview", "apiVersion": GROUP_VERSION,
            "metadata": _metadata(review.get("metadata") or {}),
            "spec": _omit_empty(spec, ("token", "audiences")),
            "status": _status(status)}


def _metadata(md):
    """ObjectMeta as JSON writes an object never stored: creationTimestamp
    null (a struct, which omitempty does not drop)."""
    out = dict(md)
    out.setdefault("creationTimestamp", None)
    return out


def _omit_empty(obj, order):
    """obj's fields in the Go struct's order, those omitempty drops left
    out."""
    out = {k: obj[k] for k in order if obj.get(k) not in (None, "", [], {}, False)}
    out.update({k: v for k, v in obj.items() if k not in order})
    return out


def _status(status):
    """TokenReviewStatus as JSON writes it: user always there (a struct),
    {} when nobody was authenticated."""
    out = _omit_empty(status, ("authenticated", "user", "audiences", "error"))
    user = status.get("user") or {}
    out["user"] = _omit_empty(user, ("username", "uid", "groups", "extra"))
    return {k: out[k] for k in ("authenticated", "user", "audiences", "error") if k in out}
