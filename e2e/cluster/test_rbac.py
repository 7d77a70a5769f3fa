"""RBAC (rbac.py) and ServiceAccount tokens (tokens.py) over a store of
their own, as a table of requests a ServiceAccount makes and what the real
RBAC authorizer answers: verbs, API groups, subresources, resourceNames,
namespaced and cluster bindings, missing roles, aggregated ClusterRoles,
non-resource paths; then the 403's wording, impersonation and access
reviews, escalation prevention, and which tokens authenticate (expired,
wrong signature, ServiceAccount or bound pod gone)."""
import email.message
import json
import time
import unittest

import access
import auth
import rbac
import tokens
from errors import ApiError
from registry import Registry, Request
from store import Store, now

A = rbac.Attributes
SA = tokens.service_account_user("team", "bot")


class RbacBase(unittest.TestCase):
    """A store with two namespaces and the bootstrap policy."""

    def setUp(self):
        self.store = Store()
        self.registry = Registry(self.store)
        for ns in ("team", "other"):
            self.create("v1", "namespaces", None, {"metadata": {"name": ns}}, "Namespace")
        for key, obj in rbac.BOOTSTRAP:
            self.registry._create(self.registry.kind_of_key(key), None, obj, Request({}))
        self.authz = rbac.Authorizer(self.store)

    def create(self, gv, plural, ns, obj, kind):
        obj = dict(obj, apiVersion=gv, kind=kind)
        return self.registry.create(self.registry.kind(gv, plural), ns,
                                    json.dumps(obj).encode(), Request({})).body

    def role(self, name, rules, ns="team", labels=None, aggregate=None):
        obj = {"metadata": {"name": name, "labels": labels or {}}, "rules": rules}
        if aggregate:
            obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": aggregate}]}
        gv = "rbac.authorization.k8s.io/v1"
        if ns:
            return self.create(gv, "roles", ns, obj, "Role")
        return self.create(gv, "clusterroles", None, obj, "ClusterRole")

    def bind(self, name, role_kind, role, ns="team", subject=None):
        subject = subject or {"kind": "ServiceAccount", "name": "bot", "namespace": "team"}
        obj = {"metadata": {"name": name}, "subjects": [subject],
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                           "name": role}}
        gv = "rbac.authorization.k8s.io/v1"
        if ns:
            return self.create(gv, "rolebindings", ns, obj, "RoleBinding")
        return self.create(gv, "clusterrolebindings", None, obj, "ClusterRoleBinding")

    def allowed(self, attrs, user=SA):
        return self.authz.authorize(user, attrs)[0]


class RbacTest(RbacBase):
    def test_a_role_allows_its_verbs_resources_and_groups_in_its_namespace_only(self):
        self.role("pods", [{"apiGroups": [""], "resources": ["pods"],
                            "verbs": ["get", "list", "watch"]}])
        self.bind("pods", "Role", "pods")
        cases = [
            (A("get", "", "pods", "", "team", "p"), True),
            (A("list", "", "pods", "", "team"), True),
            (A("watch", "", "pods", "", "team"), True),
            (A("create", "", "pods", "", "team"), False),
            (A("delete", "", "pods", "", "team", "p"), False),
            (A("deletecollection", "", "pods", "", "team"), False),
            (A("get", "", "pods", "", "other", "p"), False),
            (A("list", "", "pods"), False),                       # all namespaces
            (A("get", "", "pods", "status", "team", "p"), False),  # a subresource
            (A("get", "", "pods", "log", "team", "p"), False),
            (A("get", "apps", "pods", "", "team", "p"), False),    # another group
            (A("get", "", "secrets", "", "team", "s"), False),
        ]
        for attrs, want in cases:
            with self.subTest(verb=attrs.verb, resource=attrs.resource, sub=attrs.subresource,
                              ns=attrs.namespace, group=attrs.group):
                self.assertEqual(self.allowed(attrs), want)

    def test_subresources_wildcards_and_resource_names_match_as_in_kubernetes(self):
        self.role("mixed", [
            {"apiGroups": ["training.mwj.io"], "resources": ["multiworkerjobs/status"],
             "verbs": ["patch", "update"]},
            {"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cfg"],
             "verbs": ["get", "update", "list", "create"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["*"], "verbs": ["*"]}])
        self.bind("mixed", "Role", "mixed")
        cases = [
            (A("patch", "training.mwj.io", "multiworkerjobs", "status", "team", "j"), True),
            (A("patch", "training.mwj.io", "multiworkerjobs", "", "team", "j"), False),
            (A("get", "apps", "deployments", "scale", "team", "d"), True),
            (A("get", "apps", "deployments", "", "team", "d"), False),
            (A("get", "", "configmaps", "", "team", "cfg"), True),
            (A("update", "", "configmaps", "", "team", "cfg"), True),
            (A("get", "", "configmaps", "", "team", "other"), False),
            # resourceNames never match a request without a name.
            (A("list", "", "configmaps", "", "team"), False),
            (A("create", "", "configmaps", "", "team"), False),
            (A("deletecollection", "coordination.k8s.io", "leases", "", "team"), True),
            (A("update", "coordination.k8s.io", "leases", "status", "team", "l"), True),
        ]
        for attrs, want in cases:
            with self.subTest(verb=attrs.verb, resource=attrs.resource, sub=attrs.subresource,
                              name=attrs.name):
                self.assertEqual(self.allowed(attrs), want)

    def test_cluster_roles_bound_in_a_namespace_or_cluster_wide(self):
        self.role("reader", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
                  ns=None)
        self.bind("reader", "ClusterRole", "reader", ns="other")
        self.assertTrue(self.allowed(A("get", "", "secrets", "", "other", "s")))
        self.assertFalse(self.allowed(A("get", "", "secrets", "", "team", "s")))
        self.assertFalse(self.allowed(A("get", "", "secrets", "", "", "s")))
        self.bind("reader", "ClusterRole", "reader", ns=None)
        self.assertTrue(self.allowed(A("get", "", "secrets", "", "team", "s")))
        self.assertTrue(self.allowed(A("get", "", "secrets", "", "", "s")))

    def test_a_service_account_subject_defaults_to_the_binding_namespace(self):
        self.role("pods", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])
        self.bind("pods", "Role", "pods", subject={"kind": "ServiceAccount", "name": "bot"})
        self.assertTrue(self.allowed(A("get", "", "pods", "", "team", "p")))
        other = tokens.service_account_user("other", "bot")
        self.assertFalse(self.allowed(A("get", "", "pods", "", "team", "p"), other))

    def test_groups_and_users_are_subjects_too(self):
        self.role("pods", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])
        self.bind("all-sas", "Role", "pods", subject={
            "kind": "Group", "name": "system:serviceaccounts:team",
            "apiGroup": "rbac.authorization.k8s.io"})
        self.assertTrue(self.allowed(A("get", "", "pods", "", "team", "p")))
        self.assertTrue(self.allowed(A("get", "", "pods", "", "team", "p"),
                                     tokens.service_account_user("team", "other")))
        self.assertFalse(self.allowed(A("get", "", "pods", "", "team", "p"),
                                      tokens.service_account_user("other", "bot")))

    def test_a_binding_to_a_missing_role_denies_and_says_so(self):
        self.bind("ghost", "ClusterRole", "ghost", ns=None)
        allowed, reason = self.authz.authorize(SA, A("get", "", "pods", "", "team", "p"))
        self.assertFalse(allowed)
        self.assertEqual(reason, 'RBAC: clusterrole.rbac.authorization.k8s.io "ghost" not found')

    def test_an_aggregated_cluster_role_has_the_rules_of_the_roles_it_selects(self):
        self.role("agg", [], ns=None, aggregate={"rbac.example.com/aggregate-to-agg": "true"})
        self.role("part", [{"apiGroups": ["apps"], "resources": ["deployments"],
                            "verbs": ["list"]}], ns=None,
                  labels={"rbac.example.com/aggregate-to-agg": "true"})
        self.bind("agg", "ClusterRole", "agg", ns=None)
        self.assertTrue(self.allowed(A("list", "apps", "deployments", "", "team")))

    def test_every_authenticated_user_has_discovery_and_the_anonymous_only_public_paths(self):
        for path in ("/api", "/apis/apps/v1", "/openapi/v2", "/version"):
            self.assertTrue(self.allowed(A("get", path=path)), path)
        self.assertFalse(self.allowed(A("get", path="/mwj-test/errors")))
        self.assertFalse(self.allowed(A("post", path="/api")))
        self.assertTrue(self.allowed(A("get", path="/version"), auth.ANONYMOUS))
        self.assertFalse(self.allowed(A("get", path="/api"), auth.ANONYMOUS))
        self.assertTrue(self.allowed(A("delete", "", "nodes", "", "", "n"), auth.ADMIN))

    def test_the_403_reads_as_the_real_servers(self):
        cases = [
            (A("get", "", "secrets", "", "team", "s"),
             'secrets "s" is forbidden: User "system:serviceaccount:team:bot" cannot get '
             'resource "secrets" in API group "" in the namespace "team"',
             {"name": "s", "kind": "secrets"}),
            (A("list", "apps", "deployments", "", "team"),
             'deployments.apps is forbidden: User "system:serviceaccount:team:bot" cannot list '
             'resource "deployments" in API group "apps" in the namespace "team"',
             {"group": "apps", "kind": "deployments"}),
            (A("update", "", "pods", "status", "team", "p"),
             'pods "p" is forbidden: User "system:serviceaccount:team:bot" cannot update '
             'resource "pods/status" in API group "" in the namespace "team"',
             {"name": "p", "kind": "pods"}),
            (A("list", "", "nodes"),
             'nodes is forbidden: User "system:serviceaccount:team:bot" cannot list resource '
             '"nodes" in API group "" at the cluster scope', {"kind": "nodes"}),
            (A("post", path="/mwj-test/compact"),
             'forbidden: User "system:serviceaccount:team:bot" cannot post path '
             '"/mwj-test/compact"', {}),
        ]
        for attrs, message, details in cases:
            with self.subTest(message=message):
                with self.assertRaises(ApiError) as e:
                    auth.authorize(self.authz, SA, attrs)
                st = e.exception.status()
                self.assertEqual((st["code"], st["reason"]), (403, "Forbidden"))
                self.assertEqual(st["message"], message)
                self.assertEqual(st.get("details"), details)

    def test_binding_validation_refuses_what_the_real_server_refuses(self):
        kind = self.registry.kind("rbac.authorization.k8s.io/v1", "rolebindings")
        bad = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "b"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Pod", "name": ""},
               "subjects": [{"kind": "Robot", "name": "r"}]}
        with self.assertRaises(ApiError) as e:
            self.registry.create(kind, "team", json.dumps(bad).encode(), Request({}))
        self.assertEqual(e.exception.code, 422)
        fields = [c["field"] for c in e.exception.details["causes"]]
        self.assertEqual(fields, ["roleRef.kind", "roleRef.name", "subjects[0].kind"])
        good = self.bind("b", "ClusterRole", "view")
        good["roleRef"]["name"] = "edit"
        with self.assertRaises(ApiError) as e:
            self.registry.update(kind, "team", "b", json.dumps(good).encode(), Request({}))
        self.assertIn("cannot change roleRef", e.exception.message)


class AccessTest(RbacBase):
    """Impersonation (kubectl --as) and SelfSubjectAccessReview (kubectl
    auth can-i) answer as RBAC decides."""

    def headers(self, user=None, groups=()):
        h = email.message.Message()
        if user:
            h["Impersonate-User"] = user
        for g in groups:
            h["Impersonate-Group"] = g
        return h

    def test_the_admin_may_impersonate_a_service_account_which_then_is_authorized(self):
        u = access.impersonate(self.authz, auth.ADMIN,
                               self.headers("system:serviceaccount:team:bot"))
        self.assertEqual((u.name, u.groups), (SA.name, SA.groups))
        u = access.impersonate(self.authz, auth.ADMIN, self.headers("jane", ["devs"]))
        self.assertEqual((u.name, u.groups), ("jane", ["devs", "system:authenticated"]))
        self.assertIs(access.impersonate(self.authz, SA, self.headers()), SA)

    def test_impersonating_without_the_verb_is_forbidden(self):
        with self.assertRaises(ApiError) as e:
            access.impersonate(self.authz, SA, self.headers("system:serviceaccount:other:x"))
        self.assertEqual(e.exception.message, 'serviceaccounts "x" is forbidden: User '
                         '"system:serviceaccount:team:bot" cannot impersonate resource '
                         '"serviceaccounts" in API group "" in the namespace "other"')
        with self.assertRaises(ApiError) as e:
            access.impersonate(self.authz, SA, self.headers("jane"))
        self.assertEqual(e.exception.code, 403)

    def test_a_self_subject_access_review_says_yes_or_no(self):
        self.role("pods", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}])
        self.bind("pods", "Role", "pods")

        def can(verb, resource, ns="team"):
            return access.self_subject_access_review(self.authz, SA, {"spec": {
                "resourceAttributes": {"verb": verb, "resource": resource,
                                       "namespace": ns}}})["status"]["allowed"]
        self.assertTrue(can("list", "pods"))
        self.assertFalse(can("list", "secrets"))
        self.assertFalse(can("list", "pods", "other"))
        out = access.self_subject_access_review(self.authz, SA, {"spec": {
            "nonResourceAttributes": {"verb": "get", "path": "/apis"}}})
        self.assertEqual(out["status"], {"allowed": True})


class EscalationTest(RbacBase):
    """A ServiceAccount allowed to write roles and bindings may not grant
    more than it holds, as the RBAC registry's escalation check decides."""

    def setUp(self):
        super().setUp()
        self.role("rbac-writer", [
            {"apiGroups": ["rbac.authorization.k8s.io"],
             "resources": ["roles", "rolebindings"], "verbs": ["create", "update"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}])
        self.bind("rbac-writer", "Role", "rbac-writer")

    def write_as_bot(self, plural, obj, kind):
        obj = dict(obj, apiVersion="rbac.authorization.k8s.io/v1", kind=kind)
        return self.registry.create(self.registry.kind("rbac.authorization.k8s.io/v1", plural),
                                    "team", json.dumps(obj).encode(), Request({}, SA))

    def test_a_role_with_rules_the_user_holds_may_be_written(self):
        res = self.write_as_bot("roles", {"metadata": {"name": "pod-reader"}, "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}, "Role")
        self.assertEqual(res.code, 201)

    def test_a_role_with_more_is_refused_naming_what_is_missing(self):
        with self.assertRaises(ApiError) as e:
            self.write_as_bot("roles", {"metadata": {"name": "greedy"}, "rules": [
                {"apiGroups": [""], "resources": ["pods", "secrets"],
                 "verbs": ["get", "list", "delete"]}]}, "Role")
        self.assertEqual(e.exception.code, 403)
        self.assertEqual(e.exception.message,
                         'roles.rbac.authorization.k8s.io "greedy" is forbidden: user '
                         '"system:serviceaccount:team:bot" (groups=["system:serviceaccounts" '
                         '"system:serviceaccounts:team" "system:authenticated"]) is attempting '
                         'to grant RBAC permissions not currently held:\n'
                         '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}\n'
                         '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "delete"]}')

    def test_binding_a_role_the_user_does_not_hold_needs_the_bind_verb(self):
        binding = {"metadata": {"name": "admin"}, "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
            "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}]}
        with self.assertRaises(ApiError) as e:
            self.write_as_bot("rolebindings", binding, "RoleBinding")
        self.assertEqual(e.exception.code, 403)
        self.assertIn("is attempting to grant RBAC permissions not currently held",
                      e.exception.message)
        self.role("binder", [{"apiGroups": ["rbac.authorization.k8s.io"],
                              "resources": ["clusterroles"], "verbs": ["bind"],
                              "resourceNames": ["cluster-admin"]}])
        self.bind("binder", "Role", "binder")
        self.assertEqual(self.write_as_bot("rolebindings", binding, "RoleBinding").code, 201)


class TokenTest(unittest.TestCase):
    def setUp(self):
        self.store = Store()
        self.registry = Registry(self.store)
        self.registry._create(self.registry.kind("v1", "namespaces"), None, {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}, Request({}))
        self.sa = self.registry._create(self.registry.kind("v1", "serviceaccounts"), "team", {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}},
            Request({}))
        self.issuer = tokens.Issuer(self.store, "admin-token")

    def test_a_token_is_its_service_account_until_it_expires(self):
        token, exp = self.issuer.issue(self.sa, seconds=600, now=1000)
        user = self.issuer.authenticate(token, now=1500)
        self.assertEqual(user.name, "system:serviceaccount:team:bot")
        self.assertEqual(user.groups, ["system:serviceaccounts", "system:serviceaccounts:team",
                                       "system:authenticated"])
        self.assertEqual(exp, 1600)
        # go-jose's one-minute leeway (claims.go Validate).
        self.assertIsNotNone(self.issuer.authenticate(token, now=1660))
        with self.assertRaises(ApiError) as e:
            self.issuer.authenticate(token, now=1661)
        self.assertEqual(e.exception.code, 401)

    def test_a_token_of_another_key_or_audience_or_a_gone_account_is_refused(self):
        token, _ = self.issuer.issue(self.sa)
        # Our issuer's name with another signature: refused, not passed on.
        with self.assertRaises(ApiError):
            tokens.Issuer(self.store, "other").authenticate(token)
        self.assertIsNone(self.issuer.authenticate("not-a-jwt"))
        wrong_aud, _ = self.issuer.issue(self.sa, audiences=["vault"])
        with self.assertRaises(ApiError):
            self.issuer.authenticate(wrong_aud)
        self.store.remove("/v1/serviceaccounts", "team", "bot")
        with self.assertRaises(ApiError):
            self.issuer.authenticate(token)

    def test_a_token_bound_to_a_pod_ends_with_the_pod(self):
        pod = self.registry._create(self.registry.kind("v1", "pods"), "team", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i"}], "schedulerName": "none",
                     "serviceAccountName": "bot"}},
            Request({}))
        token, _ = self.issuer.issue(self.sa, bound=dict(pod, kind="Pod"))
        self.assertIsNotNone(self.issuer.authenticate(token))
        # Marked for deletion, it keeps its token through its grace period
        # and a minute more.
        marked = dict(pod, metadata=dict(pod["metadata"], deletionTimestamp=now(30)))
        self.store.replace("/v1/pods", "team", "p", marked)
        self.assertIsNotNone(self.issuer.authenticate(token))
        self.assertIsNotNone(self.issuer.authenticate(token, now=time.time() + 80))
        with self.assertRaises(ApiError):
            self.issuer.authenticate(token, now=time.time() + 95)
        self.store.remove("/v1/pods", "team", "p")
        with self.assertRaises(ApiError):
            self.issuer.authenticate(token)

    def test_a_token_request_is_answered_as_the_real_server_answers_it(self):
        out = self.issuer.token_request("team", "bot", {"spec": {"expirationSeconds": 900}})
        self.assertEqual(out["kind"], "TokenRequest")
        self.assertEqual(out["metadata"]["name"], "bot")
        self.assertEqual(out["spec"]["audiences"], tokens.AUDIENCES)
        self.assertEqual(self.issuer.authenticate(out["status"]["token"]).name,
                         "system:serviceaccount:team:bot")
        with self.assertRaises(ApiError) as e:
            self.issuer.token_request("team", "bot", {"spec": {"expirationSeconds": 60}})
        self.assertEqual(e.exception.message, 'TokenRequest.authentication.k8s.io "" is '
                         'invalid: spec.expirationSeconds: Invalid value: 60: may not specify '
                         'a duration less than 10 minutes')
        with self.assertRaises(ApiError) as e:
            self.issuer.token_request("team", "nobody", {})
        self.assertEqual(e.exception.message, 'serviceaccounts "nobody" not found')


if __name__ == "__main__":
    unittest.main()
