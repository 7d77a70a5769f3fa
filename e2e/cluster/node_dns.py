"""Cluster DNS of the local test cluster's node, as files: each pod's
/etc/resolv.conf, and its /etc/hosts with the names of the pods behind
headless Services, rewritten in place as pods and Services change (see
DNS in node.py).

Standard library only.
"""
import os

from node_const import PODS, SERVICES


def prepare_pod(node, run):
    """The pod's /etc/resolv.conf, and its /etc/hosts filled in, before any
    container starts (the sandbox bind-mounts both). Its hosts take what
    cluster DNS answered last; the node's loop rewrites them when that
    changes."""
    with open(os.path.join(run.dir, "resolv.conf"), "w") as f:
        f.write("nameserver 127.0.0.1\nsearch %s.svc.cluster.local svc.cluster.local "
                "cluster.local\noptions ndots:5 attempts:1 timeout:1\n" % run.ns)
    with node.dns_lock:
        run.dns_ready = True
        _write_hosts(node, run, node.dns_records)
    node.dns_dirty.set()


def headless_records(pods, services):
    """What cluster DNS answers for the pods behind headless Services, in
    Service then pod order: (namespace, pod IP, names as a pod of that
    namespace sees them, names as a pod of another sees them)."""
    headless = [s for s in services if (s.get("spec") or {}).get("clusterIP") == "None" and
                (s.get("spec") or {}).get("selector")]
    if not headless:
        return []
    # Pods by one label each, so that a Service looks at the pods that may
    # match it rather than at every pod: with hundreds of each, every pod
    # start made this quadratic.
    by_label = {}
    for p in pods:
        pmd, pst = p["metadata"], p.get("status") or {}
        if not pst.get("podIP") or pst.get("phase") in ("Succeeded", "Failed"):
            continue
        for k, v in (pmd.get("labels") or {}).items():
            by_label.setdefault((pmd["namespace"], k, v), []).append(p)
    out = []
    for svc in headless:
        smd, sspec = svc["metadata"], svc["spec"]
        ns, sname = smd["namespace"], smd["name"]
        first = next(iter(sspec["selector"].items()))
        for p in by_label.get((ns, first[0], first[1]), []):
            pmd, pspec, pst = p["metadata"], p.get("spec") or {}, p["status"]
            labels = pmd.get("labels") or {}
            if any(labels.get(k) != v for k, v in sspec["selector"].items()):
                continue
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in pst.get("conditions", []))
            if not ready and not sspec.get("publishNotReadyAddresses"):
                continue
            service = ["%s.%s.svc.cluster.local" % (sname, ns), "%s.%s.svc" % (sname, ns)]
            own, short = [], []
            if pspec.get("subdomain") == sname:
                host = "%s.%s" % (pspec.get("hostname") or pmd["name"], sname)
                own = ["%s.%s.svc.cluster.local" % (host, ns), "%s.%s.svc" % (host, ns)]
                short = ["%s.%s" % (host, ns), host]
            out.append((ns, pst["podIP"], own + short + service + [sname + "." + ns, sname],
                        own + service))
    return out


def hosts_text(run, records):
    """run's /etc/hosts, given what cluster DNS answers (headless_records)."""
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    spec = run.pod.get("spec") or {}
    own = [run.hostname]
    if spec.get("subdomain"):
        own.insert(0, "%s.%s.%s.svc.cluster.local" % (run.hostname, spec["subdomain"],
                                                      run.ns))
    lines.append("%s\t%s" % (run.ip, " ".join(own)))
    for ns, ip, same, other in records:
        lines.append("%s\t%s" % (ip, " ".join(same if ns == run.ns else other)))
    return "\n".join(lines) + "\n"


def hosts_for(run, pods, services):
    """The lines of run's /etc/hosts."""
    return hosts_text(run, headless_records(pods, services))


def write_dns(node):
    """Rewrites the /etc/hosts of every pod the node runs, when what
    cluster DNS answers has changed."""
    with node.dns_lock:
        services = node.store.items(SERVICES)
        pods = node.store.items(PODS) if any(
            (s.get("spec") or {}).get("clusterIP") == "None" for s in services) else []
        records = headless_records(pods, services)
        if records == node.dns_records:
            return
        node.dns_records = records
        with node.lock:
            runs = [r for r in node.runs.values() if r.dns_ready]
        for r in runs:
            _write_hosts(node, r, records)


def _write_hosts(node, run, records):
    path = os.path.join(run.dir, "hosts")
    # In place, never by rename: the pod's bind mount holds the inode.
    try:
        with open(path, "r+b" if os.path.exists(path) else "wb") as f:
            f.write(hosts_text(run, records).encode())
            f.truncate()
    except OSError as e:
        node.log("node: hosts of %s/%s: %s" % (run.ns, run.name, e))
