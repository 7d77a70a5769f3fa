"""ServiceAccount tokens: the bound tokens the real API server issues
through the TokenRequest API (POST serviceaccounts/NAME/token, which
`kubectl create token` calls) and that the kubelet puts in a pod's
projected serviceAccountToken volume, and their authentication.

A token is a JWT with the claims of pkg/serviceaccount/claims.go: iss,
sub (system:serviceaccount:<namespace>:<name>), aud, exp, iat, nbf, jti and
the private "kubernetes.io" claim (namespace, serviceaccount name and uid,
and the bound pod or secret with its uid). It is valid, as the real
validator decides, while it has not expired, its audience is the API
server's, its ServiceAccount still exists with the same uid, and the object
it is bound to (if any) still exists with the same uid, and was not
marked for deletion to be gone more than a minute ago. A real cluster signs with RS256 and a key pair; this one signs
with HS256 and a key derived from the cluster's admin token, which the
standard library can do and no client looks into.

The user of a valid token is system:serviceaccount:<ns>:<name> in the
groups system:serviceaccounts, system:serviceaccounts:<ns> and
system:authenticated, which RBAC (rbac.py) then authorizes.

Standard library only.
"""
import base64
import calendar
import hashlib
import hmac
import json
import time
import uuid

from errors import ApiError, Cause, conflict_error, invalid_error, not_found_error

ISSUER = "https://kubernetes.default.svc.cluster.local"
AUDIENCES = [ISSUER]
SERVICEACCOUNTS = "/v1/serviceaccounts"
# pkg/apis/authentication/v1 SetDefaults_TokenRequestSpec, and the bounds
# of ValidateTokenRequest.
DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600
MAX_EXPIRATION = 1 << 32
BOUND_KINDS = {"Pod": "/v1/pods", "Secret": "/v1/secrets"}
SA_PREFIX = "system:serviceaccount:"
DELETED_GRACE = 60


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class User:
    """An authenticated user: name and groups (user.Info)."""

    def __init__(self, name, groups=(), service_account=None):
        self.name = name
        self.groups = list(groups)
        self.service_account = service_account  # (namespace, name) or None

    def __repr__(self):
        return "User(%r)" % self.name


def service_account_user(ns, name):
    return User(SA_PREFIX + "%s:%s" % (ns, name),
                ["system:serviceaccounts", "system:serviceaccounts:" + ns,
                 "system:authenticated"], (ns, name))


class Issuer:
    """Issues and validates the tokens of the ServiceAccounts in store."""

    def __init__(self, store, secret):
        self.store = store
        self.key = hashlib.sha256(b"mwj-local serviceaccount signing key\0" +
                                  secret.encode()).digest()

    def issue(self, sa, audiences=None, seconds=DEFAULT_EXPIRATION, bound=None, now=None):
        """(token, expiry as seconds since the epoch) for ServiceAccount sa
        (the stored object); bound: the Pod or Secret it is bound to."""
        t = int(time.time() if now is None else now)
        md = sa["metadata"]
        private = {"namespace": md["namespace"],
                   "serviceaccount": {"name": md["name"], "uid": md["uid"]}}
        if bound is not None:
            private[bound["kind"].lower()] = {"name": bound["metadata"]["name"],
                                              "uid": bound["metadata"]["uid"]}
        claims = {"aud": list(audiences or AUDIENCES), "exp": t + seconds, "iat": t,
                  "iss": ISSUER, "jti": str(uuid.uuid4()), "kubernetes.io": private,
                  "nbf": t, "sub": SA_PREFIX + "%s:%s" % (md["namespace"], md["name"])}
        head = _b64(json.dumps({"alg": "HS256", "kid": "mwj-local", "typ": "JWT"},
                               separators=(",", ":")).encode())
        body = _b64(json.dumps(claims, separators=(",", ":")).encode())
        sig = hmac.new(self.key, ("%s.%s" % (head, body)).encode(), hashlib.sha256).digest()
        return "%s.%s.%s" % (head, body, _b64(sig)), t + seconds

    def authenticate(self, token, now=None):
        """The User of a valid token, None for one that is not a JWT of
        this issuer, or raises 401 for one of ours that no longer holds."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        try:
            sig = _unb64(parts[2])
            claims = json.loads(_unb64(parts[1]))
        except ValueError:
            return None
        want = hmac.new(self.key, ("%s.%s" % (parts[0], parts[1])).encode(),
                        hashlib.sha256).digest()
        if not hmac.compare_digest(sig, want) or not isinstance(claims, dict) or \
                claims.get("iss") != ISSUER:
            return None
        t = time.time() if now is None else now
        private = claims.get("kubernetes.io") or {}
        sa_claim = private.get("serviceaccount") or {}
        ns, name = private.get("namespace"), sa_claim.get("name")
        if not (isinstance(claims.get("exp"), int) and t < claims["exp"] and
                claims.get("nbf", 0) <= t + 60 and
                set(claims.get("aud") or []) & set(AUDIENCES)):
            raise unauthorized()
        sa = self.store.find(SERVICEACCOUNTS, ns, name)
        if sa is None or sa["metadata"]["uid"] != sa_claim.get("uid"):
            raise unauthorized()
        for kind, key in BOUND_KINDS.items():
            ref = private.get(kind.lower())
            if ref is None:
                continue
            obj = self.store.find(key, ns, ref.get("name"))
            if obj is None or obj["metadata"]["uid"] != ref.get("uid"):
                raise unauthorized()
            # A pod being deleted keeps its token for its grace period and
            # a minute more (claims.go: invalidIfDeletedBefore), so that
            # it can still clean up, e.g. release a Lease, on SIGTERM.
            gone = obj["metadata"].get("deletionTimestamp")
            if gone and expiry(gone) < t - DELETED_GRACE:
                raise unauthorized()
        return service_account_user(ns, name)

    # --- the TokenRequest API ---

    def token_request(self, ns, name, req_obj):
        """POST serviceaccounts/NAME/token: the TokenRequest answered (201),
        as pkg/registry/core/serviceaccount/storage/token.go makes it."""
        gk = ("TokenRequest", "authentication.k8s.io")
        md = req_obj.setdefault("metadata", {})
        if md.get("name") and md["name"] != name:
            raise invalid_error(gk[0], gk[1], name, [Cause(
                "FieldValueInvalid", "metadata.name", "must match the service account name if "
                "specified", md["name"])])
        if md.get("namespace") and md["namespace"] != ns:
            raise invalid_error(gk[0], gk[1], name, [Cause(
                "FieldValueInvalid", "metadata.namespace", "must match the service account "
                "namespace if specified", md["namespace"])])
        sa = self.store.find(SERVICEACCOUNTS, ns, name)
        if sa is None:
            raise not_found_error("serviceaccounts", "", name)
        spec = req_obj.setdefault("spec", {})
        if not spec.get("audiences"):
            spec["audiences"] = list(AUDIENCES)
        if spec.get("expirationSeconds") is None:
            spec["expirationSeconds"] = DEFAULT_EXPIRATION
        md["name"], md["namespace"] = name, ns
        t = int(time.time())
        md["creationTimestamp"] = _stamp(t)
        seconds = spec["expirationSeconds"]
        causes = []
        if not isinstance(seconds, int) or seconds < MIN_EXPIRATION:
            causes.append(Cause("FieldValueInvalid", "spec.expirationSeconds",
                                "may not specify a duration less than 10 minutes", seconds))
        elif seconds > MAX_EXPIRATION:
            causes.append(Cause("FieldValueInvalid", "spec.expirationSeconds",
                                "may not specify a duration larger than 2^32 seconds", seconds))
        if causes:
            raise invalid_error(gk[0], gk[1], "", causes)
        bound = self._bound(ns, spec.get("boundObjectRef"))
        token, exp = self.issue(sa, spec["audiences"], seconds, bound, t)
        req_obj["status"] = {"token": token, "expirationTimestamp": _stamp(exp)}
        req_obj["apiVersion"], req_obj["kind"] = "authentication.k8s.io/v1", "TokenRequest"
        return req_obj

    def _bound(self, ns, ref):
        if not ref:
            return None
        kind = ref.get("kind")
        if kind not in BOUND_KINDS:
            raise invalid_error("TokenRequest", "authentication.k8s.io", "", [Cause(
                "FieldValueNotSupported", "spec.boundObjectRef.kind", "supported values: "
                '"Pod", "Secret"', kind)])
        obj = self.store.find(BOUND_KINDS[kind], ns, ref.get("name"))
        if obj is None:
            raise not_found_error(BOUND_KINDS[kind].split("/")[-1], "", ref.get("name"))
        if ref.get("uid") and ref["uid"] != obj["metadata"]["uid"]:
            raise conflict_error("TokenRequest", "authentication.k8s.io", ref.get("name"),
                                 "the UID in the bound object reference (%s) does not match "
                                 "the UID in record. The object might have been deleted and "
                                 "then recreated" % ref["uid"])
        return dict(obj, kind=kind)


def unauthorized():
    return ApiError(401, "Unauthorized", "Unauthorized")


def _stamp(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def expiry(stamp):
    """Seconds since the epoch of an RFC 3339 time stamp."""
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
