"""Cluster DNS of the local test cluster's node: each pod's
/etc/resolv.conf and /etc/hosts, and the records that node_dnsd.py (the
cluster's DNS server, a process of its own) answers with (see DNS in
node.py).

- /etc/hosts is the kubelet's managed hosts file
  (pkg/kubelet/kubelet_pods.go, managedHostsFileContent): localhost, the
  pod's own address with its FQDN when it has a subdomain, and its
  hostAliases. Written once, before the first container starts.
- /etc/resolv.conf names the DNS server, with the search path and ndots
  of dnsPolicy ClusterFirst.
- The records are what CoreDNS serves for headless Services with a
  selector: <svc>.<ns>.svc.cluster.local for the address of every pod
  behind it (ready ones, and not-ready ones when the Service has
  publishNotReadyAddresses; never finished ones), and
  <hostname>.<svc>.<ns>.svc.cluster.local for each pod with a hostname
  whose subdomain is the Service (the endpoints controller names an
  address only then: pkg/controller/endpoint), else the address with
  dashes for dots in place of the hostname, as CoreDNS does.

The records go to one file, written whole and renamed into place by a
thread of the node that waits for a change, at most RECORDS_PER_SECOND
times a second: a change costs one pass over the pods, however many pods
there are, where rewriting every pod's /etc/hosts with every other pod's
name cost the square of their number (4,096 pods behind one Service:
4,096 files of 4,096 lines, for each pod that started).

Standard library only.
"""
import os
import threading
import time

from node_const import PODS, SERVICES

RECORDS_PER_SECOND = 5
DOMAIN = "cluster.local"


def resolv_conf(ns, nameserver):
    """A pod's /etc/resolv.conf under dnsPolicy ClusterFirst
    (pkg/kubelet/network/dns: the search path of the pod's namespace,
    ndots:5)."""
    return ("search %s.svc.%s svc.%s %s\nnameserver %s\noptions ndots:5\n"
            % (ns, DOMAIN, DOMAIN, DOMAIN, nameserver))


def hosts_text(pod, ip):
    """The kubelet's managed /etc/hosts for pod at address ip."""
    md, spec = pod["metadata"], pod.get("spec") or {}
    hostname = spec.get("hostname") or md["name"]
    lines = ["# Kubernetes-managed hosts file.", "127.0.0.1\tlocalhost",
             "::1\tlocalhost ip6-localhost ip6-loopback", "fe00::0\tip6-localnet",
             "fe00::0\tip6-mcastprefix", "fe00::1\tip6-allnodes", "fe00::2\tip6-allrouters"]
    if spec.get("subdomain"):
        lines.append("%s\t%s.%s.%s.svc.%s\t%s" % (ip, hostname, spec["subdomain"],
                                                 md["namespace"], DOMAIN, hostname))
    else:
        lines.append("%s\t%s" % (ip, hostname))
    aliases = [a for a in spec.get("hostAliases") or [] if isinstance(a, dict)]
    if aliases:
        lines.append("\n# Entries added by HostAliases.")
        for a in aliases:
            lines.append("%s\t%s" % (a.get("ip", ""), "\t".join(a.get("hostnames") or [])))
    return "\n".join(lines) + "\n"


def prepare_pod(node, run):
    """The pod's /etc/resolv.conf and /etc/hosts, before any container
    starts (the sandbox bind-mounts both)."""
    with open(os.path.join(run.dir, "resolv.conf"), "w") as f:
        f.write(resolv_conf(run.ns, node.dns.address))
    with open(os.path.join(run.dir, "hosts"), "w") as f:
        f.write(hosts_text(run.pod, run.ip))


def _ready(status):
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in status.get("conditions") or [])


def records(pods, services):
    """What cluster DNS answers: [(FQDN, address)], Services in order,
    each Service's pods in the order given."""
    headless = [s for s in services if (s.get("spec") or {}).get("clusterIP") == "None" and
                (s.get("spec") or {}).get("selector")]
    if not headless:
        return []
    # Pods by one label each, so that a Service looks at the pods that may
    # match it rather than at every pod.
    by_label = {}
    for p in pods:
        pmd, pst = p["metadata"], p.get("status") or {}
        if not pst.get("podIP") or pst.get("phase") in ("Succeeded", "Failed"):
            continue
        for k, v in (pmd.get("labels") or {}).items():
            by_label.setdefault((pmd["namespace"], k, v), []).append(p)
    out = []
    for svc in headless:
        ns, sname = svc["metadata"]["namespace"], svc["metadata"]["name"]
        sspec = svc["spec"]
        service = "%s.%s.svc.%s" % (sname, ns, DOMAIN)
        first = next(iter(sspec["selector"].items()))
        for p in by_label.get((ns, first[0], first[1]), []):
            labels = p["metadata"].get("labels") or {}
            if any(labels.get(k) != v for k, v in sspec["selector"].items()):
                continue
            pst, pspec = p["status"], p.get("spec") or {}
            if not sspec.get("publishNotReadyAddresses") and not _ready(pst):
                continue
            ip = pst["podIP"]
            host = pspec.get("hostname") if pspec.get("subdomain") == sname else None
            out.append(("%s.%s" % (host or ip.replace(".", "-"), service), ip))
            out.append((service, ip))
    return out


class DnsRecords:
    """Keeps the records file in step with the store: mark() after any
    change of pods or Services; a thread rewrites the file (when what it
    holds has changed) at most RECORDS_PER_SECOND times a second."""

    def __init__(self, store, path, address, log=print):
        self.store = store
        self.path = path
        self.address = address  # the DNS server's, which resolv.conf names
        self.log = log
        self.dirty = threading.Event()
        self.written = None
        self.stopping = False
        self.write()

    def start(self):
        threading.Thread(target=self._loop, daemon=True, name="node-dns").start()

    def mark(self):
        self.dirty.set()

    def stop(self):
        self.stopping = True
        self.dirty.set()

    def write(self):
        """Writes the records now, if they changed; True if it wrote."""
        services = self.store.items(SERVICES)
        pods = self.store.items(PODS) if any(
            (s.get("spec") or {}).get("clusterIP") == "None" for s in services) else []
        text = "".join("%s %s\n" % r for r in records(pods, services))
        if text == self.written:
            return False
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.path)
        self.written = text
        return True

    def _loop(self):
        while not self.stopping:
            self.dirty.wait()
            self.dirty.clear()
            if self.stopping:
                return
            try:
                self.write()
            except Exception as e:  # keep the records going; say what went wrong
                self.log("node: DNS records: %r" % e)
            time.sleep(1.0 / RECORDS_PER_SECOND)
