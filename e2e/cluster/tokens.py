"""ServiceAccount tokens: the bound tokens the real API server issues
through the TokenRequest API (POST serviceaccounts/NAME/token, which
`kubectl create token` calls and the kubelet calls for a pod's projected
serviceAccountToken volume), and their authentication, as Kubernetes
v1.31 does both (the version of kubectl used here; its feature gates
ServiceAccountTokenJTI, ServiceAccountTokenPodNodeInfo,
ServiceAccountTokenNodeBinding and ServiceAccountTokenNodeBindingValidation
are all on by default).

A token is a JWT with the claims of pkg/serviceaccount/claims.go, Claims:
iss, sub (system:serviceaccount:<namespace>:<name>), aud, exp, iat, nbf,
jti and the private "kubernetes.io" claim (namespace, serviceaccount name
and uid, the bound pod, secret or node with its uid, the node of a bound
pod, and warnafter for an extended token). A real cluster signs with RS256
and a key pair; this one signs with HS256 and a key derived from the
cluster's admin token, which the standard library can do and no client
looks into.

Authentication (review) is the bound-token authenticator's,
pkg/serviceaccount/jwt.go AuthenticateToken, then claims.go Validate, in
their order and with their error texts:
- a token that is not a JWT of this issuer is passed on (None): the
  authenticator chain then answers "invalid bearer token" (auth.py);
- a wrong signature: go-jose's "error in cryptographic primitive";
- audiences: the token's must meet the ones asked for (a TokenReview's
  spec.audiences, else the API server's own, AUDIENCES):
  `token audiences ["x"] is invalid for the target audiences ["y"]`;
- times, with go-jose's one-minute leeway: "service account token has
  expired", "... is not valid yet", "... is issued in the future";
- the ServiceAccount, then the bound secret, pod or node, must still exist
  with the uid the token names, and not have been marked for deletion more
  than a minute ago (a pod keeps its token through its grace period).

The user of a valid token is system:serviceaccount:<ns>:<name> with the
ServiceAccount's uid, in the groups system:serviceaccounts,
system:serviceaccounts:<ns> and system:authenticated, with the extra
values of ServiceAccountInfo.UserInfo (k8s.io/apiserver/pkg/authentication/
serviceaccount/util.go): the credential id JTI=<jti>, and the pod's and its
node's names and uids; RBAC (rbac.py) then authorizes it.

Standard library only.
"""
import base64
import calendar
import hashlib
import hmac
import json
import time
import uuid

from errors import ApiError, Cause, bad_request, conflict_error, invalid_error, \
    not_found_error
from gojson import go_quote

ISSUER = "https://kubernetes.default.svc.cluster.local"
AUDIENCES = [ISSUER]
SERVICEACCOUNTS = "/v1/serviceaccounts"
NODES = "/v1/nodes"
# pkg/apis/authentication/v1 SetDefaults_TokenRequestSpec, and the bounds
# of ValidateTokenRequest.
DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600
MAX_EXPIRATION = 1 << 32
# claims.go: the expiration the ServiceAccount admission plugin gives a
# kube-api-access volume, which TokenREST.Create extends (kube-apiserver's
# --service-account-extend-token-expiration, on by default) to a year,
# warning after the hour.
WARN_ONLY_EXPIRATION = 60 * 60 + 7
EXTENDED_EXPIRATION = 24 * 365 * 60 * 60
SA_PREFIX = "system:serviceaccount:"
# go-jose's jwt.DefaultLeeway, which claims.go Validate applies to the
# times and to deletions (invalidIfDeletedBefore).
LEEWAY = 60

# What a token can be bound to: kind -> (store key, namespaced, the claim,
# the error of claims.go Validate when the object's uid is not the one the
# token names). A pod-bound token also names the pod's node, which is
# then only reported, not checked.
BOUND_KINDS = {
    "Secret": ("/v1/secrets", True, "secret",
               "secret UID (%s) does not match service account secret ref claim (%s)"),
    "Pod": ("/v1/pods", True, "pod",
            "pod UID (%s) does not match service account pod ref claim (%s)"),
    "Node": (NODES, False, "node",
             "node UID (%s) does not match service account node ref claim (%s)"),
}

# The user's extra keys (k8s.io/apiserver/pkg/authentication/serviceaccount
# util.go, v1.31).
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"

# The error texts, each from the file named.
CRYPTO_FAILURE = "go-jose/go-jose: error in cryptographic primitive"  # go-jose.v2 v2.6.3
EXPIRED = "service account token has expired"                        # claims.go
NOT_YET_VALID = "service account token is not valid yet"             # claims.go
ISSUED_IN_FUTURE = "service account token is issued in the future"   # claims.go
INVALIDATED = "service account token has been invalidated"           # claims.go


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text):
    """base64.RawURLEncoding.DecodeString: no padding allowed."""
    if "=" in text:
        raise ValueError("padding")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def go_strings(values):
    """Go's %q of a []string: ["a" "b"]."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


class TokenError(Exception):
    """What a token authenticator returns as its error (not an HTTP
    error): its text is what a TokenReview's status.error says."""


class User:
    """An authenticated user (user.Info): name, uid, groups and extra."""

    def __init__(self, name, groups=(), service_account=None, uid="", extra=None):
        self.name = name
        self.groups = list(groups)
        self.service_account = service_account  # (namespace, name) or None
        self.uid = uid
        self.extra = dict(extra or {})  # key -> [values]

    def __repr__(self):
        return "User(%r)" % self.name


def service_account_user(ns, name, uid="", extra=None):
    return User(SA_PREFIX + "%s:%s" % (ns, name),
                ["system:serviceaccounts", "system:serviceaccounts:" + ns,
                 "system:authenticated"], (ns, name), uid, extra)


def intersect(have, wanted):
    """authenticator.Audiences(have).Intersect(wanted): those of wanted,
    in its order, that have holds."""
    return [a for a in wanted if a in have]


def _deleted_before(obj, t):
    gone = obj["metadata"].get("deletionTimestamp")
    return bool(gone) and expiry(gone) < t - LEEWAY


class Issuer:
    """Issues and validates the tokens of the ServiceAccounts in store."""

    def __init__(self, store, secret):
        self.store = store
        self.key = hashlib.sha256(b"mwj-local serviceaccount signing key\0" +
                                  secret.encode()).digest()

    def _sign(self, signing_input):
        return hmac.new(self.key, signing_input.encode(), hashlib.sha256).digest()

    # --- issuing ---

    def issue(self, sa, audiences=None, seconds=DEFAULT_EXPIRATION, bound=None, now=None,
              node=None, warn_after=0):
        """(token, expiry as seconds since the epoch) for ServiceAccount sa
        (the stored object), claims.go Claims: bound is the Pod, Secret or
        Node (with its kind) it is bound to; node, for a pod, the pod's
        node (a Node, or {"metadata": {"name": n}} for one not found)."""
        t = int(time.time() if now is None else now)
        md = sa["metadata"]
        private = {"namespace": md["namespace"],
                   "serviceaccount": {"name": md["name"], "uid": md["uid"]}}
        if bound is not None:
            private[BOUND_KINDS[bound["kind"]][2]] = _ref(bound)
            if bound["kind"] == "Pod" and node is not None:
                private["node"] = _ref(node)
        if warn_after:
            private["warnafter"] = t + warn_after
        claims = {"aud": list(audiences or AUDIENCES), "exp": t + seconds, "iat": t,
                  "iss": ISSUER, "jti": str(uuid.uuid4()), "kubernetes.io": private,
                  "nbf": t, "sub": SA_PREFIX + "%s:%s" % (md["namespace"], md["name"])}
        head = _b64(json.dumps({"alg": "HS256", "kid": "mwj-local", "typ": "JWT"},
                               separators=(",", ":")).encode())
        body = _b64(json.dumps(claims, separators=(",", ":")).encode())
        sig = self._sign("%s.%s" % (head, body))
        return "%s.%s.%s" % (head, body, _b64(sig)), t + seconds

    def request(self, sa, audiences, seconds, bound=None, now=None):
        """A token as TokenREST.Create makes one once the request is
        valid (pkg/registry/core/serviceaccount/storage/token.go, v1.31):
        a pod-bound token names the pod's node; a kube-api-access token
        (WARN_ONLY_EXPIRATION, the API server's audiences) lives a year
        but warns after the hour. Returns (token, the expirationTimestamp
        the TokenRequest reports: now + seconds, as asked)."""
        t = int(time.time() if now is None else now)
        node = None
        if bound is not None and bound["kind"] == "Pod":
            name = (bound.get("spec") or {}).get("nodeName")
            if name:
                node = self.store.find(NODES, None, name) or {"metadata": {"name": name}}
        lifetime, warn_after = seconds, 0
        if bound is not None and bound["kind"] == "Pod" and \
                seconds == WARN_ONLY_EXPIRATION and set(audiences) <= set(AUDIENCES):
            lifetime, warn_after = EXTENDED_EXPIRATION, seconds
        token, _ = self.issue(sa, audiences, lifetime, bound, t, node, warn_after)
        return token, t + seconds

    # --- authentication ---

    def review(self, token, audiences=None, now=None):
        """jwt.go AuthenticateToken for the requested audiences (None: the
        API server's): None for a token this authenticator does not take
        (not a JWT of this issuer), (User, the audiences it is valid for)
        for a valid one; raises TokenError for one that is not."""
        claims = self._claims(token)
        if claims is None:
            return None
        token_auds = claims.get("aud")
        token_auds = [token_auds] if isinstance(token_auds, str) else list(token_auds or [])
        if not token_auds:
            token_auds = list(AUDIENCES)  # a legacy token: the API server's alone
        wanted = list(audiences or AUDIENCES)
        auds = intersect(token_auds, wanted)
        if not auds:
            raise TokenError("token audiences %s is invalid for the target audiences %s"
                             % (go_strings(token_auds), go_strings(wanted)))
        return self._validate(claims, time.time() if now is None else now), auds

    def _claims(self, token):
        """The claims of a token signed by this issuer; None for one that is
        not a JWT naming this issuer (hasCorrectIssuer, jwt.ParseSigned);
        raises TokenError for a signature that does not hold."""
        parts = token.split(".")
        if token.strip().startswith("{") or len(parts) != 3:
            return None
        try:
            claims = json.loads(_unb64(parts[1]))
            header = json.loads(_unb64(parts[0]))
            sig = _unb64(parts[2])
        except ValueError:
            return None
        if not isinstance(claims, dict) or claims.get("iss") != ISSUER or \
                not isinstance(header, dict):
            return None
        want = self._sign("%s.%s" % (parts[0], parts[1]))
        if header.get("alg") != "HS256" or not hmac.compare_digest(sig, want):
            raise TokenError(CRYPTO_FAILURE)
        return claims

    def _validate(self, claims, t):
        """claims.go Validate: the times, then the ServiceAccount, then the
        bound objects; the User of ServiceAccountInfo.UserInfo."""
        if isinstance(claims.get("nbf"), (int, float)) and t + LEEWAY < claims["nbf"]:
            raise TokenError(NOT_YET_VALID)
        if isinstance(claims.get("exp"), (int, float)) and t - LEEWAY > claims["exp"]:
            raise TokenError(EXPIRED)
        if isinstance(claims.get("iat"), (int, float)) and t + LEEWAY < claims["iat"]:
            raise TokenError(ISSUED_IN_FUTURE)
        private = claims.get("kubernetes.io") or {}
        ns = private.get("namespace", "")
        sa_ref = private.get("serviceaccount") or {}
        sa = self.store.find(SERVICEACCOUNTS, ns, sa_ref.get("name"))
        if sa is None:
            # The getter's error: a NotFound from the API.
            raise TokenError('serviceaccounts "%s" not found' % sa_ref.get("name", ""))
        if sa["metadata"]["uid"] != sa_ref.get("uid"):
            raise TokenError("service account UID (%s) does not match claim (%s)"
                             % (sa["metadata"]["uid"], sa_ref.get("uid", "")))
        if _deleted_before(sa, t):
            raise TokenError("service account %s/%s has been deleted" % (ns, sa_ref.get("name")))
        extra = {}
        for kind, (key, namespaced, claim, mismatch) in BOUND_KINDS.items():
            ref = private.get(claim)
            if ref is None or (kind == "Node" and "pod" in private):
                continue
            obj = self.store.find(key, ns if namespaced else None, ref.get("name"))
            if obj is None:
                raise TokenError(INVALIDATED)
            if obj["metadata"]["uid"] != ref.get("uid"):
                raise TokenError(mismatch % (obj["metadata"]["uid"], ref.get("uid", "")))
            if _deleted_before(obj, t):
                raise TokenError(INVALIDATED)
        pod, node = private.get("pod"), private.get("node")
        if pod and pod.get("name") and pod.get("uid"):
            extra[POD_NAME_KEY], extra[POD_UID_KEY] = [pod["name"]], [pod["uid"]]
        if claims.get("jti"):
            extra[CREDENTIAL_ID_KEY] = ["JTI=" + claims["jti"]]
        if node and node.get("name"):
            extra[NODE_NAME_KEY] = [node["name"]]
            if node.get("uid"):
                extra[NODE_UID_KEY] = [node["uid"]]
        return service_account_user(ns, sa_ref.get("name", ""), sa_ref.get("uid", ""), extra)

    def authenticate(self, token, now=None):
        """The User of a valid token for the API server itself, None for one
        that is not a JWT of this issuer, or raises 401 for one of ours
        that does not hold."""
        try:
            found = self.review(token, None, now)
        except TokenError:
            raise unauthorized() from None
        return found[0] if found else None

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
        bound = self.bound_object(ns, name, spec.get("boundObjectRef"))
        token, exp = self.request(sa, spec["audiences"], seconds, bound, t)
        req_obj["status"] = {"token": token, "expirationTimestamp": _stamp(exp)}
        req_obj["apiVersion"], req_obj["kind"] = "authentication.k8s.io/v1", "TokenRequest"
        return req_obj

    def bound_object(self, ns, sa_name, ref):
        """The object of spec.boundObjectRef, with its kind, as TokenREST.Create
        looks it up: 400 for a kind it cannot bind to or a pod of another
        ServiceAccount, 404 for one that is not there, 409 for another uid."""
        if not ref:
            return None
        kind = ref.get("kind", "")
        group, _, version = (ref.get("apiVersion") or "").rpartition("/")
        if group or kind not in BOUND_KINDS:
            # schema.GroupVersionKind.String()
            raise bad_request("cannot bind token to object of type %s/%s, Kind=%s"
                              % (group, version, kind))
        key, namespaced, _, _ = BOUND_KINDS[kind]
        obj = self.store.find(key, ns if namespaced else None, ref.get("name"))
        if obj is None:
            raise not_found_error(key.split("/")[-1], "", ref.get("name", ""))
        if kind == "Pod" and (obj.get("spec") or {}).get("serviceAccountName") != sa_name:
            raise bad_request("cannot bind token for serviceaccount %s to pod running with "
                              "different serviceaccount name." % go_quote(sa_name))
        if ref.get("uid") and ref["uid"] != obj["metadata"]["uid"]:
            # NewConflict with the GroupResource {"", kind}.
            raise conflict_error(kind, "", ref.get("name"),
                                 "the UID in the bound object reference (%s) does not match "
                                 "the UID in record. The object might have been deleted and "
                                 "then recreated" % ref["uid"])
        return dict(obj, kind=kind)


def _ref(obj):
    """claims.go ref: name and uid, each left out when empty."""
    md = obj["metadata"]
    return {k: md[k] for k in ("name", "uid") if md.get(k)}


def unauthorized():
    return ApiError(401, "Unauthorized", "Unauthorized")


def _stamp(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def expiry(stamp):
    """Seconds since the epoch of an RFC 3339 time stamp."""
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
