#!/usr/bin/python3
"""Checks of what `helm template` renders from charts/mwj-operator, for
e2e/tests/chart.sh. Each subcommand reads one rendered file (every
document of the release), exits 0 when it holds, else prints why and
exits 1:

  chart_check.py kinds FILE KIND...        valid YAML, these kinds exactly
  chart_check.py deployment FILE NS ARG... the pod: security, probes, args
  chart_check.py rbac FILE NS LIST WATCH ELECT [ADMISSION]
        the roles grant exactly LIST's calls: the watched ones through a
        ClusterRole (WATCH "") or a Role in namespace WATCH, the Lease's
        through a Role in NS when ELECT is "true"; ADMISSION "true" adds
        the list's admission lines; every binding names the chart's
        ServiceAccount in NS
  chart_check.py metrics FILE NS           Service, ServiceMonitor and PDB
                                           select the Deployment's pods
  chart_check.py notes FILE WORD...        the rendered NOTES.txt says each
"""
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_calls  # noqa: E402

DNS_LABEL_MAX = 63


class Failed(Exception):
    pass


def need(cond, why, *args):
    if not cond:
        raise Failed(why % args if args else why)


def load(path):
    """The rendered documents, each a mapping with apiVersion, kind and a
    metadata.name that is a valid Kubernetes name."""
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    for d in docs:
        need(isinstance(d, dict), "a document is no mapping: %r", d)
        for key in ("apiVersion", "kind", "metadata"):
            need(key in d, "%s: no %s", d.get("kind"), key)
        name = d["metadata"].get("name", "")
        need(isinstance(name, str) and 0 < len(name) <= 253 and name == name.lower(),
             "%s: bad name %r", d["kind"], name)
    return docs


def only(docs, kind):
    found = [d for d in docs if d["kind"] == kind]
    need(len(found) == 1, "want one %s, found %d", kind, len(found))
    return found[0]


def check_kinds(path, *kinds):
    got = sorted(d["kind"] for d in load(path))
    need(got == sorted(kinds), "kinds %s, want %s", got, sorted(kinds))


def check_deployment(path, ns, *want_args):
    docs = load(path)
    dep = only(docs, "Deployment")
    need(dep["metadata"].get("namespace") == ns, "Deployment not in %s", ns)
    pod = dep["spec"]["template"]["spec"]
    need(dep["spec"]["selector"]["matchLabels"].items() <=
         dep["spec"]["template"]["metadata"]["labels"].items(),
         "the selector does not select the pod template")
    psc = pod.get("securityContext", {})
    need(psc.get("runAsNonRoot") is True, "pod: runAsNonRoot is not true")
    need(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault",
         "pod: seccompProfile is not RuntimeDefault")
    sa = only(docs, "ServiceAccount")["metadata"]["name"]
    need(pod.get("serviceAccountName") == sa, "pod runs as %r, not the chart's %r",
         pod.get("serviceAccountName"), sa)
    need(not pod.get("hostNetwork") and not pod.get("hostPID"), "pod shares the host's")
    (c,) = pod["containers"]
    sc = c.get("securityContext", {})
    for key, want in (("runAsNonRoot", True), ("readOnlyRootFilesystem", True),
                      ("allowPrivilegeEscalation", False)):
        need(sc.get(key) is want, "container: %s is %r, want %r", key, sc.get(key), want)
    need(sc.get("privileged") in (None, False), "container: privileged")
    need(sc.get("capabilities", {}).get("drop") == ["ALL"], "container: drop is not [ALL]")
    need(not sc.get("capabilities", {}).get("add"), "container: adds capabilities")
    need(sc.get("seccompProfile", {}).get("type") == "RuntimeDefault",
         "container: seccompProfile is not RuntimeDefault")
    need(c.get("args") == list(want_args), "args %s, want %s", c.get("args"), list(want_args))
    need("command" not in c, "the command overrides the image's ENTRYPOINT")
    # The probes reach the port the operator serves them on, by name.
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    health = [a for a in c["args"] if a.startswith("--health-addr=:")]
    need(len(health) == 1, "no --health-addr=:PORT")
    need(ports.get("health") == int(health[0].split(":")[-1]),
         "port 'health' %r is not --health-addr's", ports.get("health"))
    metrics = [a for a in c["args"] if a.startswith("--metrics-addr=")]
    need(len(metrics) == 1, "no --metrics-addr")
    if metrics[0] != "--metrics-addr=0":
        need(ports.get("metrics") == int(metrics[0].split(":")[-1]),
             "port 'metrics' %r is not --metrics-addr's", ports.get("metrics"))
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = c.get(probe, {}).get("httpGet", {})
        need(get.get("path") == path and get.get("port") == "health",
             "%s is not GET %s on port health: %r", probe, path, get)
    need(c.get("resources", {}).get("limits", {}).get("memory"), "no memory limit")
    # A read-only root: anything written goes to an emptyDir.
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        need("emptyDir" in vols.get(m["name"], {}), "mount %s is no emptyDir", m["name"])
    # Leader election is always on, and an upgrade stops every old pod
    # before a new one starts (deployment.yaml says why): two operators
    # never act at once, whatever the old pods run.
    need("--leader-elect=true" in c.get("args", []), "leader election is not on")
    strategy = dep["spec"].get("strategy", {})
    need(strategy.get("type") == "Recreate", "strategy %s, not Recreate", strategy.get("type"))
    # An upgrade from a RollingUpdate revision keeps the server's defaults
    # for rollingUpdate unless the chart removes them: the API server
    # refuses them beside Recreate.
    need("rollingUpdate" in strategy and strategy["rollingUpdate"] is None,
         "Recreate without rollingUpdate: null")


def triples(role):
    """(group, resource, verb) of every rule; no wildcard, no URL."""
    out = set()
    for rule in role.get("rules", []):
        need("nonResourceURLs" not in rule, "%s: nonResourceURLs", role["kind"])
        for key in ("apiGroups", "resources", "verbs", "resourceNames"):
            need("*" not in rule.get(key, []), "%s: a wildcard in %s", role["kind"], key)
        for g in rule["apiGroups"]:
            for r in rule["resources"]:
                for v in rule["verbs"]:
                    out.add((g, r, v))
    return out


def check_rbac(path, ns, listfile, watch, elect, admission="false"):
    docs = load(path)
    listed = api_calls.read_list(listfile)
    want_watched = {t for t, s in listed.items()
                    if s == "watched" or (s == "admission" and admission == "true")}
    want_lease = {t for t, s in listed.items() if s == "lease"}
    sa = only(docs, "ServiceAccount")["metadata"]["name"]
    roles = [d for d in docs if d["kind"] in ("Role", "ClusterRole")]
    bindings = [d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    kind = "Role" if watch else "ClusterRole"
    watched = [r for r in roles if r["kind"] == kind and
               r["metadata"].get("namespace") == (watch or None)]
    need(len(watched) == 1, "want one %s%s, found %d", kind,
         " in " + watch if watch else "", len(watched))
    got = triples(watched[0])
    for t in sorted(want_watched - got):
        raise Failed("%s does not grant %s" % (kind, api_calls.show(t)))
    for t in sorted(got - want_watched):
        raise Failed("%s grants %s, which the operator never calls" % (kind, api_calls.show(t)))
    lease = [r for r in roles if r is not watched[0]]
    if elect == "true":
        need(len(lease) == 1 and lease[0]["kind"] == "Role" and
             lease[0]["metadata"].get("namespace") == ns,
             "want one more Role, for the Lease, in %s", ns)
        need(triples(lease[0]) == want_lease, "the Lease's Role grants %s, want %s",
             sorted(triples(lease[0])), sorted(want_lease))
        for rule in lease[0]["rules"]:
            # Only create, whose path names no object, may go unnamed.
            need(rule["verbs"] == ["create"] or len(rule.get("resourceNames", [])) == 1,
                 "the Lease's %s is not limited to one Lease", rule["verbs"])
    else:
        need(not lease, "a Role for the Lease without leader election")
    need(len(bindings) == len(roles), "%d bindings for %d roles", len(bindings), len(roles))
    for b in bindings:
        ref = b["roleRef"]
        target = [r for r in roles if r["kind"] == ref["kind"] and
                  r["metadata"]["name"] == ref["name"] and
                  r["metadata"].get("namespace") == b["metadata"].get("namespace")]
        need(len(target) == 1, "%s %s binds nothing the chart renders", b["kind"],
             b["metadata"]["name"])
        need(b["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
             "%s %s binds %r, not the chart's ServiceAccount", b["kind"],
             b["metadata"]["name"], b["subjects"])


def selects(selector, labels):
    return selector.items() <= labels.items()


def check_metrics(path, ns):
    docs = load(path)
    pod_labels = only(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    port = {p["name"]: p["containerPort"] for p in
            only(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["ports"]}
    for svc in [d for d in docs if d["kind"] == "Service"]:
        need(svc["metadata"].get("namespace") == ns, "Service not in %s", ns)
        need(selects(svc["spec"]["selector"], pod_labels), "the Service selects no pod")
        for p in svc["spec"]["ports"]:
            need(p["targetPort"] in port, "Service port %s targets no container port", p)
    for mon in [d for d in docs if d["kind"] == "ServiceMonitor"]:
        need(mon["apiVersion"] == "monitoring.coreos.com/v1", "ServiceMonitor apiVersion")
        svc = only(docs, "Service")
        need(selects(mon["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"]),
             "the ServiceMonitor selects no Service")
        need(mon["spec"]["namespaceSelector"]["matchNames"] == [ns], "ServiceMonitor namespace")
        ep = mon["spec"]["endpoints"]
        need([(e["port"], e["path"]) for e in ep] == [("metrics", "/metrics")],
             "ServiceMonitor endpoints %r", ep)
    for pdb in [d for d in docs if d["kind"] == "PodDisruptionBudget"]:
        need(pdb["apiVersion"] == "policy/v1", "PDB apiVersion")
        need(selects(pdb["spec"]["selector"]["matchLabels"], pod_labels), "the PDB selects no pod")
        replicas = only(docs, "Deployment")["spec"]["replicas"]
        if "maxUnavailable" not in pdb["spec"]:
            need(isinstance(pdb["spec"].get("minAvailable"), int) and
                 pdb["spec"]["minAvailable"] < replicas, "the PDB blocks every drain")


def check_notes(path, *words):
    (doc,) = load(path)
    text = doc["data"]["notes"]
    for w in words:
        need(w in text, "NOTES.txt does not say %r:\n%s", w, text)


def main(argv):
    checks = {"kinds": check_kinds, "deployment": check_deployment, "rbac": check_rbac,
              "metrics": check_metrics, "notes": check_notes}
    if len(argv) < 3 or argv[1] not in checks:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        checks[argv[1]](*argv[2:])
    except Failed as e:
        print(e)
        return 1
    except (yaml.YAMLError, KeyError, TypeError, ValueError) as e:
        print("%s: %s: %s" % (argv[2], type(e).__name__, e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
