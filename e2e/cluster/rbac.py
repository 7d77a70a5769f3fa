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

BOOTSTRAP is the part of the real server's bootstrap policy (its
ClusterRoles and ClusterRoleBindings, made at start) that a client
notices: cluster-admin, and discovery, basic-user and public-info-viewer
for everyone (authenticated, or not for the public paths).

Standard library only.
"""
from apps import selector_matches

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
    (CLUSTER_ROLE_BINDINGS, _binding("cluster-admin", "cluster-admin", [MASTERS])),
    (CLUSTER_ROLE_BINDINGS, _binding("system:discovery", "system:discovery",
                                     ["system:authenticated"])),
    (CLUSTER_ROLE_BINDINGS, _binding("system:basic-user", "system:basic-user",
                                     ["system:authenticated"])),
    (CLUSTER_ROLE_BINDINGS, _binding("system:public-info-viewer", "system:public-info-viewer",
                                     ["system:authenticated", "system:unauthenticated"])),
]
