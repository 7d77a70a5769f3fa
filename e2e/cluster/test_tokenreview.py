"""TokenReview (tokenreview.py) and audience-bound ServiceAccount tokens
(tokens.py, node_volumes.py): first over a store of their own, a table of
tokens and the review the real v1.31 server answers for each (a good
pod-bound token for its audience, the wrong audience either way, expired,
of a deleted or recreated pod, of a recreated ServiceAccount, tampered,
garbage, empty, the admin's), the kubelet's refresh of a projected token
once 80% of its life has passed, and the 400 and 500 of REST.Create; then
against a running local test cluster: discovery, the 403 of a caller
without RBAC and the 201 once system:auth-delegator is bound, a pod's
projected token for the audience mwj-operator accepted by a review for
that audience and by no one else, and real kubectl creating a token for
an audience and a review of it."""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import auth
import rbac
import tokenreview
import tokens
from client import Cluster
from errors import ApiError
from node_volumes import mount_volume, refresh_due, refresh_tokens
from registry import Registry, Request
from store import Store, now

AUD = "mwj-operator"
API_AUD = tokens.ISSUER
TOKEN_SOURCE = {"audience": AUD, "expirationSeconds": 3600, "path": "token"}
SA_GROUPS = ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"]


def claims_of(token):
    return json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))


class ReviewBase(unittest.TestCase):
    """A store with the namespace team, its ServiceAccount bot, a node n1
    and a pod p of bot bound to it."""

    def setUp(self):
        self.store = Store()
        self.registry = Registry(self.store)
        for key, obj in rbac.BOOTSTRAP:
            self.registry._create(self.registry.kind_of_key(key), None, obj, Request({}))
        self.create("namespaces", None, {"kind": "Namespace", "metadata": {"name": "team"}})
        self.sa = self.create("serviceaccounts", "team", {"kind": "ServiceAccount",
                                                           "metadata": {"name": "bot"}})
        self.node = self.create("nodes", None, {"kind": "Node", "metadata": {"name": "n1"}})
        self.pod = self.create_pod("p")
        self.issuer = tokens.Issuer(self.store, "admin-token")
        self.authn = auth.Authenticator("admin-token", self.issuer)

    def create(self, plural, ns, obj):
        return self.registry._create(self.registry.kind("v1", plural), ns,
                                     dict(obj, apiVersion="v1"), Request({}))

    def create_pod(self, name, volumes=()):
        return self.create("pods", "team", {"kind": "Pod", "metadata": {"name": name}, "spec": {
            "containers": [{"name": "c", "image": "i"}], "schedulerName": "none",
            "nodeName": "n1", "serviceAccountName": "bot", "volumes": list(volumes)}})

    def pod_token(self, audiences=(AUD,), seconds=3600, t=None):
        token, _ = self.issuer.request(self.sa, list(audiences), seconds,
                                       dict(self.pod, kind="Pod"), t)
        return token

    def review(self, token, audiences=None, status=None):
        body = {"apiVersion": tokenreview.GROUP_VERSION, "kind": "TokenReview",
                "spec": {"token": token}}
        if audiences is not None:
            body["spec"]["audiences"] = audiences
        if status is not None:
            body["status"] = status
        return tokenreview.create(self.authn, body)


class TokenReviewTest(ReviewBase):
    def test_a_pod_token_for_its_audience_is_the_pod_s_service_account(self):
        token = self.pod_token()
        out = self.review(token, [AUD])
        jti = claims_of(token)["jti"]
        self.assertEqual(out, {
            "kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "spec": {"token": token, "audiences": [AUD]},
            "status": {"authenticated": True, "user": {
                "username": "system:serviceaccount:team:bot",
                "uid": self.sa["metadata"]["uid"], "groups": SA_GROUPS,
                "extra": {"authentication.kubernetes.io/credential-id": ["JTI=" + jti],
                          "authentication.kubernetes.io/node-name": ["n1"],
                          "authentication.kubernetes.io/node-uid": [
                              self.node["metadata"]["uid"]],
                          "authentication.kubernetes.io/pod-name": ["p"],
                          "authentication.kubernetes.io/pod-uid": [
                              self.pod["metadata"]["uid"]]}},
                "audiences": [AUD]}})
        # Only the audiences asked for that the token names come back.
        self.assertEqual(self.review(token, ["vault", AUD])["status"]["audiences"], [AUD])

    def test_a_token_is_refused_with_the_error_the_real_authenticator_gives(self):
        cases = [
            ("of another audience", self.pod_token(), None,
             'token audiences ["mwj-operator"] is invalid for the target audiences '
             '["https://kubernetes.default.svc.cluster.local"]'),
            ("of the API server's audience, reviewed for another", self.pod_token([API_AUD]),
             [AUD], 'token audiences ["https://kubernetes.default.svc.cluster.local"] is '
             'invalid for the target audiences ["mwj-operator"]'),
            ("expired a minute and a second ago", self.pod_token(seconds=600,
                                                                  t=time.time() - 661),
             [AUD], "service account token has expired"),
            ("garbage", "not-a-token", [AUD], "invalid bearer token"),
            ("a JWT of another issuer", "eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.", [AUD],
             "invalid bearer token"),
            ("tampered", self.tampered(self.pod_token()), [AUD],
             "go-jose/go-jose: error in cryptographic primitive"),
            ("the admin's, for another audience", "admin-token", [AUD], "invalid bearer token"),
        ]
        for what, token, audiences, error in cases:
            with self.subTest(what):
                out = self.review(token, audiences)
                self.assertEqual(out["status"], {"user": {}, "error": error})

    @staticmethod
    def tampered(token):
        head, body, sig = token.split(".")
        claims = json.loads(base64.urlsafe_b64decode(body + "=="))
        claims["kubernetes.io"]["serviceaccount"]["name"] = "admin"
        body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
        return "%s.%s.%s" % (head, body, sig)

    def test_a_token_of_a_deleted_pod_lasts_its_grace_period_and_a_minute(self):
        token = self.pod_token()
        marked = dict(self.pod, metadata=dict(self.pod["metadata"], deletionTimestamp=now(30)))
        self.store.replace("/v1/pods", "team", "p", marked)
        self.assertTrue(self.review(token, [AUD])["status"]["authenticated"])
        past = dict(self.pod, metadata=dict(self.pod["metadata"], deletionTimestamp=now(-61)))
        self.store.replace("/v1/pods", "team", "p", past)
        self.assertEqual(self.review(token, [AUD])["status"]["error"],
                         "service account token has been invalidated")
        self.store.remove("/v1/pods", "team", "p")
        self.assertEqual(self.review(token, [AUD])["status"]["error"],
                         "service account token has been invalidated")
        again = self.create_pod("p")
        self.assertEqual(self.review(token, [AUD])["status"]["error"],
                         "pod UID (%s) does not match service account pod ref claim (%s)"
                         % (again["metadata"]["uid"], self.pod["metadata"]["uid"]))

    def test_a_token_of_a_recreated_service_account_is_refused(self):
        token = self.pod_token()
        self.store.remove("/v1/serviceaccounts", "team", "bot")
        self.assertEqual(self.review(token, [AUD])["status"]["error"],
                         'serviceaccounts "bot" not found')
        again = self.create("serviceaccounts", "team", {"kind": "ServiceAccount",
                                                        "metadata": {"name": "bot"}})
        self.assertEqual(self.review(token, [AUD])["status"]["error"],
                         "service account UID (%s) does not match claim (%s)"
                         % (again["metadata"]["uid"], self.sa["metadata"]["uid"]))

    def test_a_token_for_another_audience_does_not_reach_the_api_server(self):
        self.assertIsNotNone(self.issuer.authenticate(self.pod_token([API_AUD])))
        with self.assertRaises(ApiError) as e:
            self.authn.user("Bearer " + self.pod_token())
        self.assertEqual((e.exception.code, e.exception.message), (401, "Unauthorized"))

    def test_the_admin_token_and_no_token_at_all(self):
        out = self.review("admin-token")
        self.assertEqual(out["status"], {"authenticated": True, "user": {
            "username": "system:admin", "groups": [rbac.MASTERS, "system:authenticated"]},
            "audiences": [API_AUD]})
        # bearertoken.go takes the token up to a space; one of spaces only is
        # no token, and the request anonymous.
        self.assertEqual(self.review(" ")["status"], {"authenticated": True, "user": {
            "username": "system:anonymous", "groups": ["system:unauthenticated"]},
            "audiences": [API_AUD]})
        self.assertIs(self.authn.user("Basic Zm9vOmJhcg=="), auth.ANONYMOUS)

    def test_an_empty_token_is_a_400_and_the_status_sent_is_kept_where_not_written(self):
        with self.assertRaises(ApiError) as e:
            self.review("")
        self.assertEqual((e.exception.code, e.exception.reason, e.exception.message),
                         (400, "BadRequest", "token is required for TokenReview in "
                          "authentication"))
        out = self.review("garbage", status={"authenticated": True,
                                             "user": {"username": "root"}})
        self.assertEqual(out["status"], {"user": {"username": "root"},
                                         "error": "invalid bearer token"})

    def test_an_authenticator_answering_for_other_audiences_is_a_500(self):
        class Odd:
            def request(self, header, audiences):
                return tokens.User("x"), ["elsewhere"]
        with self.assertRaises(ApiError) as e:
            tokenreview.create(Odd(), {"spec": {"token": "t"}})
        self.assertEqual(e.exception.status(), {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Internal error occurred: error validating audiences",
            "reason": "InternalError", "code": 500,
            "details": {"causes": [{"message": "error validating audiences"}]}})

    def test_a_kube_api_access_token_lives_a_year_and_the_request_reports_the_hour(self):
        t = int(time.time())
        token, exp = self.issuer.request(self.sa, [API_AUD], tokens.WARN_ONLY_EXPIRATION,
                                         dict(self.pod, kind="Pod"), t)
        c = claims_of(token)
        self.assertEqual(exp, t + 3607)
        self.assertEqual(c["exp"], t + tokens.EXTENDED_EXPIRATION)
        self.assertEqual(c["kubernetes.io"]["warnafter"], t + 3607)
        token, _ = self.issuer.request(self.sa, [AUD], tokens.WARN_ONLY_EXPIRATION,
                                       dict(self.pod, kind="Pod"), t)
        self.assertEqual(claims_of(token)["exp"], t + 3607)  # not the API server's audience

    def test_a_token_request_binds_only_what_the_real_server_binds(self):
        def request(ref):
            return self.issuer.token_request("team", "bot", {"spec": {"boundObjectRef": ref}})
        cases = [
            ({"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}, 400,
             "cannot bind token to object of type /v1, Kind=ConfigMap"),
            ({"kind": "Pod", "apiVersion": "v1", "name": "ghost"}, 404, 'pods "ghost" not found'),
            ({"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "0000"}, 409,
             'Operation cannot be fulfilled on Pod "p": the UID in the bound object reference '
             '(0000) does not match the UID in record. The object might have been deleted and '
             'then recreated'),
        ]
        for ref, code, message in cases:
            with self.subTest(ref["name"]):
                with self.assertRaises(ApiError) as e:
                    request(ref)
                self.assertEqual((e.exception.code, e.exception.message), (code, message))
        out = request({"kind": "Node", "apiVersion": "v1", "name": "n1"})
        self.assertEqual(claims_of(out["status"]["token"])["kubernetes.io"]["node"],
                         {"name": "n1", "uid": self.node["metadata"]["uid"]})


class FakeNode:
    """What node_volumes reads of a node: its store, API and log."""

    def __init__(self, store, issuer):
        self.store = store
        self.api = type("Api", (), {"tokens": issuer})()
        self.logged = []

    def log(self, message):
        self.logged.append(message)


class FakeRun:
    def __init__(self, pod, folder):
        md = pod["metadata"]
        self.ns, self.name, self.uid, self.pod = md["namespace"], md["name"], md["uid"], pod
        self.dir = folder
        self.tokens = {}


@unittest.skipUnless(os.geteuid() == 0, "the node writes its volumes' files as root")
class ProjectedTokenTest(ReviewBase):
    def setUp(self):
        super().setUp()
        self.folder = tempfile.mkdtemp(prefix="mwj-token-test-")
        self.addCleanup(shutil.rmtree, self.folder)
        volume = {"name": "operator-token", "projected": {"sources": [
            {"serviceAccountToken": TOKEN_SOURCE}]}}
        self.pod = self.create_pod("q", [volume])
        self.node_ = FakeNode(self.store, self.issuer)
        self.run_ = FakeRun(self.pod, self.folder)
        self.path = os.path.join(mount_volume(self.node_, self.run_, volume), "token")

    def read(self):
        with open(self.path) as f:
            return f.read()

    def test_a_projected_token_is_bound_to_the_pod_for_the_volume_s_audience(self):
        token = self.read()
        c = claims_of(token)
        self.assertEqual((c["aud"], c["exp"] - c["iat"]), ([AUD], 3600))
        self.assertEqual(c["kubernetes.io"]["pod"], {"name": "q",
                                                     "uid": self.pod["metadata"]["uid"]})
        self.assertTrue(self.review(token, [AUD])["status"]["authenticated"])
        self.assertIn("invalid for the target audiences", self.review(token)["status"]["error"])

    def test_the_token_is_refreshed_once_80_percent_of_its_life_has_passed(self):
        first = self.read()
        held = self.run_.tokens[self.path]
        issued = claims_of(first)["iat"]
        self.assertEqual(held.due, issued + 3600 - 720 - held.jitter)
        refresh_tokens(self.node_, self.run_, now=held.due)
        self.assertEqual(self.read(), first)
        refresh_tokens(self.node_, self.run_, now=held.due + 1)
        second = self.read()
        self.assertNotEqual(second, first)
        self.assertEqual(claims_of(second)["iat"], int(held.due + 1))
        user, auds = self.issuer.review(second, [AUD], now=held.due + 2)
        self.assertEqual((user.name, auds), ("system:serviceaccount:team:bot", [AUD]))
        # A pod that is gone keeps its last token; the refresh is tried again.
        self.store.remove("/v1/pods", "team", "q")
        due = self.run_.tokens[self.path].due
        refresh_tokens(self.node_, self.run_, now=due + 1)
        self.assertEqual(self.read(), second)
        self.assertEqual(self.run_.tokens[self.path].due, due + 1 + 60)
        self.assertEqual(len(self.node_.logged), 1)

    def test_refresh_comes_at_80_percent_of_the_ttl_or_after_a_day(self):
        cases = [(600, 1000 + 600 - 120), (3600, 1000 + 3600 - 720),
                 (7 * 86400, 1000 + 86400)]
        for seconds, due in cases:
            with self.subTest(seconds=seconds):
                self.assertEqual(refresh_due(1000 + seconds, seconds, 0), due)
                self.assertEqual(refresh_due(1000 + seconds, seconds, 9), due - 9)


class LiveTokenReviewTest(unittest.TestCase):
    """Against a running local test cluster."""

    @classmethod
    def setUpClass(cls):
        cls.k = Cluster()
        ns = "/api/v1/namespaces/default"
        cls.k.call("POST", ns + "/serviceaccounts", {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "reviewer"}})
        code, body = cls.k.call("POST", ns + "/serviceaccounts/reviewer/token", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
        assert code == 201, body
        cls.reviewer = body["status"]["token"]

    @classmethod
    def tearDownClass(cls):
        cls.k.stop()

    def post(self, token, spec, as_token=True):
        r = self.k.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec},
            token=as_token)
        return r.status, r.body

    def test_discovery_lists_tokenreviews(self):
        code, body = self.k.call("GET", "/apis/authentication.k8s.io/v1")
        self.assertEqual(code, 200)
        self.assertEqual(body["resources"], tokenreview.RESOURCES)
        groups = {g["name"]: g for g in self.k.call("GET", "/apis")[1]["groups"]}
        self.assertEqual(groups["authentication.k8s.io"]["preferredVersion"]["groupVersion"],
                         "authentication.k8s.io/v1")

    def test_a_caller_needs_rbac_create_on_tokenreviews(self):
        code, body = self.post(self.k.token, {"token": "x"}, self.reviewer)
        self.assertEqual(code, 403)
        self.assertEqual(body, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'tokenreviews.authentication.k8s.io is forbidden: User '
                       '"system:serviceaccount:default:reviewer" cannot create resource '
                       '"tokenreviews" in API group "authentication.k8s.io" at the cluster '
                       'scope',
            "reason": "Forbidden",
            "details": {"group": "authentication.k8s.io", "kind": "tokenreviews"}, "code": 403})
        code, body = self.k.call("POST", "/apis/rbac.authorization.k8s.io/v1/"
                                 "clusterrolebindings", {
                                     "apiVersion": "rbac.authorization.k8s.io/v1",
                                     "kind": "ClusterRoleBinding",
                                     "metadata": {"name": "reviewer-auth-delegator"},
                                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                 "kind": "ClusterRole",
                                                 "name": "system:auth-delegator"},
                                     "subjects": [{"kind": "ServiceAccount", "name": "reviewer",
                                                   "namespace": "default"}]})
        self.assertEqual(code, 201, body)
        code, body = self.post(None, {"token": self.reviewer}, self.reviewer)
        self.assertEqual(code, 201, body)
        self.assertEqual(body["status"]["user"]["username"],
                         "system:serviceaccount:default:reviewer")

    def test_an_empty_token_is_a_400_and_a_get_a_405(self):
        code, body = self.post(None, {})
        self.assertEqual((code, body["reason"], body["message"]), (
            400, "BadRequest", "token is required for TokenReview in authentication"))
        r = self.k.request("GET", "/apis/authentication.k8s.io/v1/tokenreviews")
        self.assertEqual((r.status, r.body["reason"]), (405, "MethodNotAllowed"))
        r = self.k.request("POST", "/apis/authentication.k8s.io/v1/namespaces/default/"
                           "tokenreviews", {"spec": {"token": "x"}})
        self.assertEqual(r.status, 404)

    def test_a_pod_s_projected_token_for_mwj_operator_is_accepted_for_that_audience(self):
        ns = "/api/v1/namespaces/default"
        code, body = self.k.call("POST", ns + "/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "worker"},
            "spec": {"serviceAccountName": "reviewer",
                     "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "60"],
                                     "volumeMounts": [{"name": "operator-token",
                                                       "mountPath": "/var/run/mwj"}]}],
                     "volumes": [{"name": "operator-token", "projected": {"sources": [
                         {"serviceAccountToken": TOKEN_SOURCE}]}}]}})
        self.assertEqual(code, 201, body)
        path = os.path.join(self.k.dir, "node", "pods", "default", "worker-%s" %
                            body["metadata"]["uid"][:8], "volumes", "operator-token", "token")
        for _ in range(100):
            if os.path.exists(path) and os.path.getsize(path) > 0:
                break
            time.sleep(0.1)
        with open(path) as f:
            token = f.read()
        code, out = self.post(None, {"token": token, "audiences": [AUD]})
        self.assertEqual(code, 201, out)
        self.assertEqual(out["status"]["audiences"], [AUD])
        extra = out["status"]["user"]["extra"]
        self.assertEqual(extra["authentication.kubernetes.io/pod-name"], ["worker"])
        self.assertEqual(extra["authentication.kubernetes.io/pod-uid"],
                         [body["metadata"]["uid"]])
        self.assertEqual(extra["authentication.kubernetes.io/node-name"], ["mwj-local-node"])
        code, out = self.post(None, {"token": token})
        self.assertEqual(out["status"]["error"], 'token audiences ["mwj-operator"] is invalid '
                         'for the target audiences '
                         '["https://kubernetes.default.svc.cluster.local"]')
        self.assertEqual(self.k.request("GET", ns + "/pods", token=token).status, 401)
        self.k.call("DELETE", ns + "/pods/worker?gracePeriodSeconds=0")

    @unittest.skipUnless(shutil.which("kubectl"), "no kubectl on PATH")
    def test_kubectl_creates_a_token_for_an_audience_and_a_review_of_it(self):
        env = dict(os.environ, KUBECONFIG=os.path.join(self.k.dir, "kubeconfig"))

        def kubectl(*args, stdin=None):
            return subprocess.run(["kubectl"] + list(args), input=stdin, env=env,
                                  capture_output=True, text=True, timeout=60)
        made = kubectl("create", "token", "reviewer", "--audience", AUD, "--duration", "10m")
        self.assertEqual(made.returncode, 0, made.stderr)
        token = made.stdout.strip()
        self.assertEqual(claims_of(token)["aud"], [AUD])
        review = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                             "spec": {"token": token, "audiences": [AUD]}})
        out = kubectl("create", "--raw", "/apis/authentication.k8s.io/v1/tokenreviews",
                      "-f", "-", stdin=review)
        self.assertEqual(out.returncode, 0, out.stderr)
        status = json.loads(out.stdout)["status"]
        self.assertEqual((status["authenticated"], status["user"]["username"]),
                         (True, "system:serviceaccount:default:reviewer"))
        out = kubectl("create", "-f", "-", "-o", "json", stdin=review)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout)["status"]["audiences"], [AUD])


if __name__ == "__main__":
    unittest.main()
