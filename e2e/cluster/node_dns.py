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
    container starts (the sandbox bind-mounts both)."""
    with open(os.path.join(run.dir, "resolv.conf"), "w") as f:
        f.write("nameserver 127.0.0.1\nsearch %s.svc.cluster.local svc.cluster.local "
                "cluster.local\noptions ndots:5 attempts:1 timeout:1\n" % run.ns)
    path = os.path.join(run.dir, "hosts")
    if not os.path.exists(path):
        open(path, "w").close()
    node.dns_dirty.set()
    write_dns(node)


def hosts_for(run, pods, services):
    """The lines of run's /etc/hosts."""
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    spec = run.pod.get("spec") or {}
    own = [run.hostname]
    if spec.get("subdomain"):
        own.insert(0, "%s.%s.%s.svc.cluster.local" % (run.hostname, spec["subdomain"],
                                                      run.ns))
    lines.append("%s\t%s" % (run.ip, " ".join(own)))
    for svc in services:
        smd, sspec = svc["metadata"], svc.get("spec") or {}
        if sspec.get("clusterIP") != "None" or not sspec.get("selector"):
            continue
        ns, sname = smd["namespace"], smd["name"]
        for p in pods:
            pmd, pspec, pst = p["metadata"], p.get("spec") or {}, p.get("status") or {}
            if pmd["namespace"] != ns or not pst.get("podIP") or \
                    pst.get("phase") in ("Succeeded", "Failed"):
                continue
            labels = pmd.get("labels") or {}
            if any(labels.get(k) != v for k, v in sspec["selector"].items()):
                continue
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in pst.get("conditions", []))
            if not ready and not sspec.get("publishNotReadyAddresses"):
                continue
            names = ["%s.%s.svc.cluster.local" % (sname, ns), "%s.%s.svc" % (sname, ns)]
            if pspec.get("subdomain") == sname:
                host = "%s.%s" % (pspec.get("hostname") or pmd["name"], sname)
                names = ["%s.%s.svc.cluster.local" % (host, ns), "%s.%s.svc" % (host, ns)] \
                    + (["%s.%s" % (host, ns), host] if ns == run.ns else []) + names
            if ns == run.ns:
                names += [sname + "." + ns, sname]
            lines.append("%s\t%s" % (pst["podIP"], " ".join(names)))
    return "\n".join(lines) + "\n"


def write_dns(node):
    """Rewrites the /etc/hosts of every pod the node runs."""
    with node.dns_lock:
        _write_dns(node)


def _write_dns(node):
    pods, _ = node.store.list(PODS)
    services, _ = node.store.list(SERVICES)
    with node.lock:
        runs = list(node.runs.values())
    for r in runs:
        path = os.path.join(r.dir, "hosts")
        data = hosts_for(r, pods, services).encode()
        # In place, never by rename: the pod's bind mount holds the inode.
        try:
            with open(path, "r+b" if os.path.exists(path) else "wb") as f:
                f.write(data)
                f.truncate()
        except OSError as e:
            node.log("node: hosts of %s/%s: %s" % (r.ns, r.name, e))
