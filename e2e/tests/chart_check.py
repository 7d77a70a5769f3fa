#!/usr/bin/python3
"""Checks of what `helm template` renders from charts/mwj-operator, for
e2e/tests/chart.sh. Each subcommand reads one rendered file (every
document of the release), exits 0 when it holds, else prints why and
exits 1:

  chart_check.py kinds FILE KIND...        valid YAML, these kinds exactly
  chart_check.py deployment FILE NS ARG... the pod: security, probes, args
  chart_check.py rbac FILE NS LIST WATCH ELECT [ADMISSION [STATUS]]
        the roles grant exactly LIST's calls, each scope through its own
        role: the watched ones through the ClusterRole <fullname>
        (WATCH "") or the Role <fullname> in namespace WATCH; the Lease's
        through the Role <fullname>-leader-election in NS when ELECT is
        "true"; the cluster ones through the ClusterRole
        <fullname>-tokenreview when STATUS is "true"; ADMISSION "true"
        adds the list's admission lines to the watched role. No other
        role; each bound once, by a binding of its own kind in its own
        namespace, to the chart's ServiceAccount in NS
  chart_check.py status FILE NS on [SECRET]
        the status endpoint wired up: --status-url is
        https://<the status Service>.NS.svc:<its port>, that Service
        selects the pods and targets the container port --status-addr
        names, --status-ca-dir is a read-only mount of the CA Secret:
        SECRET, which the chart must not render, else the chart's own
        kubernetes.io/tls Secret holding a CA and its key
  chart_check.py status FILE NS off
        none of it: no --status-* flag, no status port, Service, Secret
        or mount, no role granting tokenreviews
  chart_check.py metrics FILE NS           Service, ServiceMonitor and PDB
                                           select the Deployment's pods
  chart_check.py notes FILE WORD...        the rendered NOTES.txt says each

<fullname> is the Deployment's name: the chart names every object after
the release's full name.
"""
import base64
import os
import re
import subprocess
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
    # A read-only root: anything written goes to an emptyDir; what is only
    # read (the status CA) is a Secret mounted read-only.
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        v = vols.get(m["name"], {})
        need("emptyDir" in v or ("secret" in v and m.get("readOnly") is True),
             "mount %s is no emptyDir nor a Secret mounted read-only", m["name"])
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


def check_rbac(path, ns, listfile, watch, elect, admission="false", status="false"):
    docs = load(path)
    listed = api_calls.read_list(listfile)
    full = only(docs, "Deployment")["metadata"]["name"]
    sa = only(docs, "ServiceAccount")["metadata"]["name"]
    # The role each scope of the list is granted through: (kind, namespace,
    # name), or None where the chart must render no such role.
    slots = {
        "watched": ("Role", watch, full) if watch else ("ClusterRole", None, full),
        "lease": ("Role", ns, full + "-leader-election") if elect == "true" else None,
        "cluster": ("ClusterRole", None, full + "-tokenreview") if status == "true" else None,
    }
    want = {}
    for t, scope in listed.items():
        if scope == "admission":
            if admission == "true":
                want.setdefault(slots["watched"], set()).add(t)
            continue
        need(scope in slots, "%s: scope %r, which this check does not know", listfile, scope)
        if slots[scope] is not None:
            want.setdefault(slots[scope], set()).add(t)
    roles = {}
    for d in docs:
        if d["kind"] in ("Role", "ClusterRole"):
            key = (d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
            need(key not in roles, "two %ss named %s", d["kind"], key[2])
            roles[key] = d

    def show_role(key):
        return "%s %s%s" % (key[0], key[1] + "/" if key[1] else "", key[2])

    for key in sorted(set(want) - set(roles), key=str):
        raise Failed("no %s, which would grant %s" % (
            show_role(key), ", ".join(api_calls.show(t) for t in sorted(want[key]))))
    for key in sorted(set(roles) - set(want), key=str):
        raise Failed("%s, which these values must not render (it grants %s)" % (
            show_role(key), ", ".join(api_calls.show(t) for t in sorted(triples(roles[key])))))
    for key, role in sorted(roles.items(), key=lambda kv: str(kv[0])):
        got = triples(role)
        for t in sorted(want[key] - got):
            raise Failed("%s does not grant %s" % (show_role(key), api_calls.show(t)))
        for t in sorted(got - want[key]):
            if t in listed:
                raise Failed("%s grants %s, which the list's scope %s gives another role" %
                             (show_role(key), api_calls.show(t), listed[t]))
            raise Failed("%s grants %s, which the operator never calls" %
                         (show_role(key), api_calls.show(t)))
    lease = slots["lease"]
    for rule in roles[lease]["rules"] if lease else []:
        # Only create, whose path names no object, may go unnamed.
        need(rule["verbs"] == ["create"] or len(rule.get("resourceNames", [])) == 1,
             "the Lease's %s is not limited to one Lease", rule["verbs"])
    # Each role bound once, by its own kind of binding: a RoleBinding of a
    # ClusterRole would grant a cluster-scoped resource nowhere, and a
    # ClusterRoleBinding of the watched role every namespace.
    bound = {}
    for b in [d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")]:
        ref, bns = b["roleRef"], b["metadata"].get("namespace")
        name = "%s %s" % (b["kind"], b["metadata"]["name"])
        need(ref["kind"] + "Binding" == b["kind"], "%s binds a %s", name, ref["kind"])
        key = (ref["kind"], bns, ref["name"])
        need(key in roles, "%s binds nothing the chart renders", name)
        need(key not in bound, "%s binds %s again", name, show_role(key))
        bound[key] = b
        need(b["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
             "%s binds %r, not the chart's ServiceAccount", name, b["subjects"])
    for key in sorted(set(roles) - set(bound), key=str):
        raise Failed("%s is bound by nothing" % show_role(key))


STATUS_FLAGS = ("--status-url", "--status-addr", "--status-audience", "--status-ca-dir")


def flag(args, name):
    """The value of the one --name=VALUE in args, or None when none."""
    found = [a.split("=", 1)[1] for a in args if a.startswith(name + "=")]
    need(len(found) <= 1, "%s given %d times", name, len(found))
    return found[0] if found else None


def openssl(*args, stdin):
    """openssl ARGS... reading stdin (bytes): its output, or Failed."""
    r = subprocess.run(("openssl",) + args, input=stdin, capture_output=True)
    need(r.returncode == 0, "openssl %s: %s", " ".join(args), r.stderr.decode().strip())
    return r.stdout.decode()


def check_ca_secret(secret, ns):
    """The chart's own CA Secret: a kubernetes.io/tls Secret whose tls.crt
    is a CA's certificate (the operator signs its serving certificate
    with it, and refuses one that is not a CA's) and whose tls.key is that
    certificate's key. Read by the openssl command, which install-deps.sh
    installs."""
    name = secret["metadata"]["name"]
    need(secret["metadata"].get("namespace") == ns, "Secret %s not in %s", name, ns)
    need(secret.get("type") == "kubernetes.io/tls", "Secret %s: type %r, not kubernetes.io/tls",
         name, secret.get("type"))
    data = secret.get("data") or {}
    need(set(data) == {"tls.crt", "tls.key"}, "Secret %s holds %s, want tls.crt and tls.key",
         name, sorted(data))
    crt, key = base64.b64decode(data["tls.crt"]), base64.b64decode(data["tls.key"])
    text = openssl("x509", "-noout", "-text", stdin=crt)
    need(re.search(r"X509v3 Basic Constraints: critical\s+CA:TRUE", text),
         "Secret %s: the certificate is no CA's (no critical CA:TRUE)", name)
    need(re.search(r"X509v3 Key Usage:.*\n.*Certificate Sign", text),
         "Secret %s: the certificate may not sign certificates", name)
    need(openssl("x509", "-noout", "-pubkey", stdin=crt) ==
         openssl("pkey", "-pubout", stdin=key),
         "Secret %s: tls.key is not the certificate's key", name)
    # A CA that expires takes every job's reports with it: years, not days.
    r = subprocess.run(("openssl", "x509", "-noout", "-checkend", str(5 * 365 * 86400)),
                       input=crt, capture_output=True)
    need(r.returncode == 0, "Secret %s: the CA expires within five years", name)


def check_status(path, ns, mode, secret=None):
    docs = load(path)
    dep = only(docs, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    args = c.get("args", [])
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    services = [d for d in docs if d["kind"] == "Service"]
    secrets = [d for d in docs if d["kind"] == "Secret"]
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    if mode == "off":
        for f in STATUS_FLAGS:
            need(flag(args, f) is None, "%s with the status endpoint off", f)
        need("status" not in ports, "a container port 'status' with the status endpoint off")
        for svc in services:
            need(all(p.get("name") != "status" for p in svc["spec"]["ports"]) and
                 svc["metadata"]["labels"].get("app.kubernetes.io/component") != "status",
                 "Service %s with the status endpoint off", svc["metadata"]["name"])
        need(not secrets, "Secret %s with the status endpoint off",
             [d["metadata"]["name"] for d in secrets])
        need(not [v for v in vols.values() if "secret" in v], "a Secret mounted with it off")
        for role in [d for d in docs if d["kind"] in ("Role", "ClusterRole")]:
            need(not [t for t in triples(role) if t[1] == "tokenreviews"],
                 "%s %s grants tokenreviews with the status endpoint off", role["kind"],
                 role["metadata"]["name"])
        return
    need(mode == "on", "status mode %r is neither on nor off", mode)
    # The URL names the Service in the release's namespace, and its port.
    url = flag(args, "--status-url")
    need(url is not None, "no --status-url")
    m = re.fullmatch(r"https://([a-z0-9-]+)\.([a-z0-9-]+)\.svc:([0-9]+)", url)
    need(m is not None, "--status-url=%s is not https://<service>.<namespace>.svc:<port>", url)
    svc_name, svc_ns, url_port = m.group(1), m.group(2), int(m.group(3))
    need(svc_ns == ns, "--status-url=%s: namespace %s, not the release's %s", url, svc_ns, ns)
    named = [d for d in services if d["metadata"]["name"] == svc_name]
    need(len(named) == 1, "--status-url=%s names no Service the chart renders", url)
    svc = named[0]
    need(svc["metadata"].get("namespace") == ns, "Service %s not in %s", svc_name, ns)
    need(selects(svc["spec"]["selector"], dep["spec"]["template"]["metadata"]["labels"]),
         "Service %s selects no operator pod", svc_name)
    sp = [p for p in svc["spec"]["ports"] if p["port"] == url_port]
    need(len(sp) == 1, "Service %s has no port %d (--status-url's)", svc_name, url_port)
    target = sp[0].get("targetPort", url_port)
    target = ports.get(target) if isinstance(target, str) else target
    addr = flag(args, "--status-addr")
    need(addr is not None and re.fullmatch(r":[0-9]+", addr), "--status-addr=%s is not :PORT", addr)
    need(ports.get("status") == int(addr[1:]) and target == int(addr[1:]),
         "--status-addr=%s, container port 'status' %s, Service %s targets %s: not one port",
         addr, ports.get("status"), svc_name, target)
    need(flag(args, "--status-audience"), "no --status-audience")
    # The CA, mounted read-only where --status-ca-dir says.
    ca_dir = flag(args, "--status-ca-dir")
    need(ca_dir, "no --status-ca-dir: the operator would make a CA that dies with it")
    mounts = [mt for mt in c.get("volumeMounts", []) if mt["mountPath"] == ca_dir]
    need(len(mounts) == 1 and mounts[0].get("readOnly") is True,
         "--status-ca-dir=%s is no read-only mount", ca_dir)
    mounted = (vols.get(mounts[0]["name"]) or {}).get("secret", {}).get("secretName")
    need(mounted, "--status-ca-dir=%s is no Secret's", ca_dir)
    if secret:
        need(mounted == secret, "the CA mounted is Secret %s, not status.ca.secretName's %s",
             mounted, secret)
        need(not secrets, "Secret %s rendered beside status.ca.secretName=%s",
             [d["metadata"]["name"] for d in secrets], secret)
        return
    need(len(secrets) == 1, "want the chart's CA Secret, found %d Secrets", len(secrets))
    need(secrets[0]["metadata"]["name"] == mounted, "the CA mounted is Secret %s, the chart's %s",
         mounted, secrets[0]["metadata"]["name"])
    check_ca_secret(secrets[0], ns)


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
        # The metrics Service only: /metrics is not served on another.
        picked = [d["metadata"]["name"] for d in docs if d["kind"] == "Service" and
                  selects(mon["spec"]["selector"]["matchLabels"], d["metadata"]["labels"])]
        metrics = [d["metadata"]["name"] for d in docs if d["kind"] == "Service" and
                   [p for p in d["spec"]["ports"] if p.get("name") == "metrics"]]
        need(len(metrics) == 1 and picked == metrics,
             "the ServiceMonitor selects Services %s, want the metrics one %s", picked, metrics)
        need(mon["spec"]["namespaceSelector"]["matchNames"] == [ns], "ServiceMonitor namespace")
        ep = mon["spec"]["endpoints"]
        need([(e["port"], e["path"]) for e in ep] == [("metrics", "/metrics")],
             "ServiceMonitor endpoints %r", ep)
    for mon in [d for d in docs if d["kind"] == "PodMonitor"]:
        # The workers' pods, as the operator labels them (pod_spec.h), on
        # the port it declares in each (pod_spec.c): a worker of any job.
        need(mon["apiVersion"] == "monitoring.coreos.com/v1", "PodMonitor apiVersion")
        need(mon["metadata"].get("namespace") == ns, "PodMonitor not in %s", ns)
        worker = {"app.kubernetes.io/managed-by": "mwj-operator",
                  "training.mwj.io/job-name": "mnist", "training.mwj.io/replica-index": "0"}
        sel = mon["spec"]["selector"]
        need(selects(sel["matchLabels"], worker) and
             all(e["operator"] == "Exists" and e["key"] in worker
                 for e in sel.get("matchExpressions", [])),
             "the PodMonitor selects no worker pod: %r", sel)
        need(not selects(sel["matchLabels"], pod_labels), "the PodMonitor selects the operator")
        watch = mon["spec"]["namespaceSelector"]
        need(watch == {"any": True} or (list(watch) == ["matchNames"] and
                                        len(watch["matchNames"]) == 1),
             "PodMonitor namespaceSelector %r", watch)
        ep = mon["spec"]["podMetricsEndpoints"]
        need([(e["port"], e["path"]) for e in ep] == [("metrics", "/metrics")],
             "PodMonitor endpoints %r", ep)
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
              "status": check_status, "metrics": check_metrics, "notes": check_notes}
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
