"""Authorization as the real API server's RBAC authorizer gives it
(plugin/pkg/auth/authorizer/rbac/rbac.go and pkg/apis/rbac/v1/
evaluation_helpers.go), over the Role, ClusterRole, RoleBinding and
ClusterRoleBinding objects in the store:

- a request is allowed when a rule of a role bound to the user allows it:
  ClusterRoleBindings everywhere, then the RoleBindings of the request's
  namespace (to a Role of that namespace or to a ClusterRole);
- a subject applies to a user by name (User), by one of the user's groups
  (Group), or as system:serviceaccount:<ns>:<name> (ServiceAccount, whose
  namespace defaults to the RoleBinding's);
- a resource rule matches when its verbs, apiGroups, resources and
  resourceNames do: "*" matches any verb, group or resource (subresources
  included), "pods/status" only that subresource, "*/status" that
  subresource of any resource, and a rule with resourceNames only
  requests that name one of them (so never a list, a watch, a create or a
  deletecollection); a non-resource rule matches a path exactly or by a
  prefix ending in "*";
- a ClusterRole with an aggregationRule has, besides its own rules, those
  of every ClusterRole its selectors match (what the aggregation
  controller would have written into it);
- a denial's reason lists the bindings whose role is missing, as
  "RBAC: clusterrole.rbac.authorization.k8s.io \"x\" not found".

The users of the system:masters group are allowed everything before RBAC
is asked, as by kube-apiserver's privileged-group authorizer.

Escalation prevention (Escalation) is the RBAC registry's: a user who is
not in system:masters may write a Role or ClusterRole only with rules the
user already holds, or with the "escalate" verb on it, and a binding only
to a role whose rules the user holds, or with the "bind" verb on it.

BOOTSTRAP is the part of the real server's bootstrap policy (its
ClusterRoles and ClusterRoleBindings, made at start) that a client
notices: cluster-admin, and discovery, basic-user and public-info-viewer
for everyone (authenticated, or not for the public paths), and the
unbound system:auth-delegator, which a server that delegates its
authentication and authorization to the cluster (TokenReview,
SubjectAccessReview) is bound to.

Standard library only.
"""
import json

from errors import ApiError, not_found_error
from selector import selector_matches
from tokens import User

GROUP = "rbac.authorization.k8s.io"
ROLES = GROUP + "/v1/roles"
CLUSTER_ROLES = GROUP + "/v1/clusterroles"
ROLE_BINDINGS = GROUP + "/v1/rolebindings"
CLUSTER_ROLE_BINDINGS = GROUP + "/v1/clusterrolebindings"
MASTERS = "system:masters"


class Attributes:
    """What a request asks (authorizer.Attributes)."""

    def __init__(self, verb, group="", resource="", subresource="", namespace="", name="",
                 path=None):
        self.verb = verb
        self.group = group
        self.resource = resource
        self.subresource = subresource
        self.namespace = namespace
        self.name = name
        self.path = path  # a non-resource request's path; None for a resource

    @property
    def is_resource(self):
        return self.path is None


def _verb(rule, verb):
    verbs = rule.get("verbs") or []
    return "*" in verbs or verb in verbs


def _resource_rule(rule, a):
    groups = rule.get("apiGroups") or []
    if not ("*" in groups or a.group in groups):
        return False
    combined = a.resource + ("/" + a.subresource if a.subresource else "")
    resources = rule.get("resources") or []
    if not any(r == "*" or r == combined or (a.subresource and r == "*/" + a.subresource)
               for r in resources):
        return False
    names = rule.get("resourceNames") or []
    return not names or a.name in names


def _non_resource_rule(rule, path):
    for url in rule.get("nonResourceURLs") or []:
        if url == "*" or url == path or (url.endswith("*") and
                                         path.startswith(url.rstrip("*"))):
            return True
    return False


def rule_allows(rule, a):
    """Whether one PolicyRule allows the request."""
    if not _verb(rule, a.verb):
        return False
    if a.is_resource:
        return _resource_rule(rule, a)
    return _non_resource_rule(rule, a.path)


def _applies(subject, user, ns):
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return name == user.name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa_ns = subject.get("namespace") or ns
        return bool(sa_ns) and user.name == "system:serviceaccount:%s:%s" % (sa_ns, name)
    return False


class Authorizer:
    def __init__(self, store):
        self.store = store

    def authorize(self, user, a):
        """(allowed, reason) of request a by user."""
        if MASTERS in user.groups:
            return True, ""
        errors = []
        with self.store.lock:
            for b in self.store.items(CLUSTER_ROLE_BINDINGS):
                if self._binding_allows(b, user, "", a, errors):
                    return True, ""
            if a.namespace:
                for b in self.store.items(ROLE_BINDINGS, a.namespace):
                    if self._binding_allows(b, user, a.namespace, a, errors):
                        return True, ""
        if not errors:
            return False, ""
        text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        return False, "RBAC: " + text

    def _binding_allows(self, binding, user, ns, a, errors):
        if not any(_applies(s, user, ns) for s in binding.get("subjects") or []):
            return False
        rules = self._rules(binding.get("roleRef") or {}, ns, errors)
        return any(rule_allows(r, a) for r in rules)

    def _rules(self, ref, ns, errors):
        kind, name = ref.get("kind"), ref.get("name")
        if kind == "Role" and ns:
            role = self.store.find(ROLES, ns, name)
            what = 'role.%s "%s" not found' % (GROUP, name)
        elif kind == "ClusterRole":
            role = self.store.find(CLUSTER_ROLES, None, name)
            what = 'clusterrole.%s "%s" not found' % (GROUP, name)
        else:
            return []
        if role is None:
            errors.append(what)
            return []
        rules = list(role.get("rules") or [])
        selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
        if selectors:
            for other in self.store.items(CLUSTER_ROLES):
                if other is not role and any(selector_matches(
                        s, other["metadata"].get("labels")) for s in selectors):
                    rules += other.get("rules") or []
        return rules


def forbidden_message(user, a):
    """responsewriters.forbiddenMessage: what the user cannot do."""
    if not a.is_resource:
        return 'User "%s" cannot %s path "%s"' % (user.name, a.verb, a.path)
    resource = a.resource + ("/" + a.subresource if a.subresource else "")
    if a.namespace:
        return 'User "%s" cannot %s resource "%s" in API group "%s" in the namespace "%s"' \
            % (user.name, a.verb, resource, a.group, a.namespace)
    return 'User "%s" cannot %s resource "%s" in API group "%s" at the cluster scope' \
        % (user.name, a.verb, resource, a.group)


def _meta(name):
    return {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}}


def _cluster_role(name, rules):
    return {"apiVersion": GROUP + "/v1", "kind": "ClusterRole", "metadata": _meta(name),
            "rules": rules}


def _binding(name, role, groups):
    return {"apiVersion": GROUP + "/v1", "kind": "ClusterRoleBinding", "metadata": _meta(name),
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": g} for g in groups]}


# plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go (the part a
# client notices).
PUBLIC_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
BOOTSTRAP = [
    (CLUSTER_ROLES, _cluster_role("cluster-admin", [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]}])),
    (CLUSTER_ROLES, _cluster_role("system:discovery", [
        {"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                             "/openapi", "/openapi/*", "/readyz", "/version", "/version/"],
         "verbs": ["get"]}])),
    (CLUSTER_ROLES, _cluster_role("system:basic-user", [
        {"apiGroups": ["authorization.k8s.io"],
         "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
         "verbs": ["create"]},
        {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"],
         "verbs": ["create"]}])),
    (CLUSTER_ROLES, _cluster_role("system:public-info-viewer", [
        {"nonResourceURLs": PUBLIC_URLS, "verbs": ["get"]}])),
    # "a role to use for allowing authentication and authorization
    # delegation"; "These creates are non-mutating".
    (CLUSTER_ROLES, _cluster_role("system:auth-delegator", [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"],
         "verbs": ["create"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"],
         "verbs": ["create"]}])),
    (CLUSTER_ROLE_BINDINGS, _binding("cluster-admin", "cluster-admin", [MASTERS])),
    (CLUSTER_ROLE_BINDINGS, _binding("system:discovery", "system:discovery",
                                     ["system:authenticated"])),
    (CLUSTER_ROLE_BINDINGS, _binding("system:basic-user", "system:basic-user",
                                     ["system:authenticated"])),
    (CLUSTER_ROLE_BINDINGS, _binding("system:public-info-viewer", "system:public-info-viewer",
                                     ["system:authenticated", "system:unauthenticated"])),
]


# --- escalation prevention: what pkg/registry/rbac's policy-based storage
# checks before a Role, ClusterRole or binding is written ---

ROLE_KEYS = {ROLES: "roles", CLUSTER_ROLES: "clusterroles"}
BINDING_KEYS = {ROLE_BINDINGS: "rolebindings", CLUSTER_ROLE_BINDINGS: "clusterrolebindings"}


def _breakdown(rule):
    """BreakdownRule: one rule per verb, group, resource and name (or URL)."""
    out = []
    for g in rule.get("apiGroups") or []:
        for r in rule.get("resources") or []:
            for v in rule.get("verbs") or []:
                names = rule.get("resourceNames") or [None]
                for n in names:
                    sub = {"apiGroups": [g], "resources": [r], "verbs": [v]}
                    if n is not None:
                        sub["resourceNames"] = [n]
                    out.append(sub)
    for url in rule.get("nonResourceURLs") or []:
        for v in rule.get("verbs") or []:
            out.append({"nonResourceURLs": [url], "verbs": [v]})
    return out


def _has_all(have, want):
    return all(w in have for w in want)


def _resources_cover(have, want):
    if "*" in have or _has_all(have, want):
        return True
    for path in want:
        if path in have:
            continue
        if "/" not in path or "*/" + path.split("/", 1)[1] not in have:
            return False
    return True


def _urls_cover(have, want):
    return all(any(h == w or (h.endswith("*") and w.startswith(h.rstrip("*"))) for h in have)
               for w in want)


def _covers(owner, sub):
    """ruleCovers (pkg/registry/rbac/validation/policy_comparator.go)."""
    verbs, groups = owner.get("verbs") or [], owner.get("apiGroups") or []
    names = owner.get("resourceNames") or []
    if sub.get("resourceNames"):
        names_ok = not names or _has_all(names, sub["resourceNames"])
    else:
        names_ok = not names
    return ("*" in verbs or _has_all(verbs, sub.get("verbs") or [])) and \
        ("*" in groups or _has_all(groups, sub.get("apiGroups") or [])) and \
        _resources_cover(owner.get("resources") or [], sub.get("resources") or []) and \
        _urls_cover(owner.get("nonResourceURLs") or [], sub.get("nonResourceURLs") or []) \
        and names_ok


def _go_strings(values):
    """Go's %q of a []string: ["a" "b"]."""
    return "[" + " ".join(json.dumps(v) for v in values) + "]"


def _compact_string(rule):
    """rbacv1helpers.CompactString."""
    parts = []
    for key, title in (("apiGroups", "APIGroups"), ("resources", "Resources"),
                       ("nonResourceURLs", "NonResourceURLs"),
                       ("resourceNames", "ResourceNames"), ("verbs", "Verbs")):
        if rule.get(key):
            parts.append("%s:%s" % (title, _go_strings(rule[key])))
    return "{" + ", ".join(parts) + "}"


def _compact(rules):
    """CompactRules: simple resource rules that differ only in their verb
    become one rule with all the verbs."""
    out, index = [], {}
    for r in rules:
        if r.get("nonResourceURLs"):
            out.append(r)
            continue
        key = (tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r.get("resourceNames", ())))
        if key in index:
            index[key]["verbs"] = index[key]["verbs"] + [v for v in r["verbs"]
                                                         if v not in index[key]["verbs"]]
        else:
            index[key] = dict(r, verbs=list(r["verbs"]))
            out.append(index[key])
    return out


class Escalation:
    """The check of a write of a role or binding by a user who is not in
    system:masters: a role may only hold rules the user holds (unless the
    user may "escalate" roles), and a binding may only bind a role whose
    rules the user holds (unless the user may "bind" it). 403 otherwise,
    with the real message."""

    def __init__(self, store):
        self.store = store
        self.authorizer = Authorizer(store)

    def rules_for(self, user, ns):
        """RulesFor: every rule bound to user, cluster-wide and in ns."""
        rules, errors = [], []
        for b in self.store.items(CLUSTER_ROLE_BINDINGS):
            if any(_applies(s, user, "") for s in b.get("subjects") or []):
                rules += self.authorizer._rules(b.get("roleRef") or {}, "", errors)
        if ns:
            for b in self.store.items(ROLE_BINDINGS, ns):
                if any(_applies(s, user, ns) for s in b.get("subjects") or []):
                    rules += self.authorizer._rules(b.get("roleRef") or {}, ns, errors)
        return rules

    def check(self, key, obj, ns, user):
        """Raises 403 (or 404 for a binding to a missing role) when user
        may not write obj, a role or binding of store key key."""
        if not isinstance(user, User) or MASTERS in user.groups:
            return  # the cluster's own writes, and the privileged group
        name = obj["metadata"].get("name", "")
        if key in ROLE_KEYS:
            resource = ROLE_KEYS[key]
            if self.authorizer.authorize(user, Attributes("escalate", GROUP, resource, "",
                                                          ns or "", name))[0]:
                return
            rules = obj.get("rules") or []
        elif key in BINDING_KEYS:
            resource = BINDING_KEYS[key]
            ref = obj.get("roleRef") or {}
            role_resource = "roles" if ref.get("kind") == "Role" else "clusterroles"
            if self.authorizer.authorize(user, Attributes("bind", GROUP, role_resource, "",
                                                          ns or "", ref.get("name", "")))[0]:
                return
            errors = []
            rules = self.authorizer._rules(ref, ns or "", errors)
            if errors:
                raise not_found_error(role_resource, GROUP, ref.get("name", ""))
        else:
            return
        owner = self.rules_for(user, ns)
        missing = [r for rule in rules for r in _breakdown(rule)
                   if not any(_covers(o, r) for o in owner)]
        if not missing:
            return
        lines = sorted(set(_compact_string(r) for r in _compact(missing)))
        why = "user %s (groups=%s) is attempting to grant RBAC permissions not currently " \
              "held:\n%s" % (json.dumps(user.name), _go_strings(user.groups), "\n".join(lines))
        raise ApiError(403, "Forbidden", '%s.%s "%s" is forbidden: %s' % (
            resource, GROUP, name, why), {"name": name, "group": GROUP, "kind": resource})
