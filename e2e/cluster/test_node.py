"""The node's pure parts: image names, $(VAR) references, downward-API
fields, and cluster DNS: the records a headless Service's pods get, the
file they are kept in (written once per change, however many pods), the
DNS server that answers from it, and a pod's own /etc/hosts and
resolv.conf."""
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

from node_const import PODS, SERVICES
from node_dns import DnsRecords, hosts_text, records, resolv_conf
from node_dnsd import answer
from node_exec import expand, image_repository
from node_volumes import field_value
from store import Store

HERE = os.path.dirname(os.path.abspath(__file__))
FQDN = "job-worker-%d.job.default.svc.cluster.local"
SVC = "job.default.svc.cluster.local"


def pod(name, ip, ready=True, labels=None, subdomain="job", ns="default", phase="Running",
        hostname=True):
    spec = {"subdomain": subdomain, "containers": []}
    if hostname:
        spec["hostname"] = name
    return {"metadata": {"name": name, "namespace": ns, "uid": name + "-uid",
                         "labels": labels or {"job": "job"}},
            "spec": spec,
            "status": {"podIP": ip, "phase": phase, "conditions": [
                {"type": "Ready", "status": "True" if ready else "False"}]}}


def service(name, publish, ns="default", cluster_ip="None"):
    return {"metadata": {"name": name, "namespace": ns},
            "spec": {"clusterIP": cluster_ip, "selector": {"job": "job"},
                     "publishNotReadyAddresses": publish}}


def query(name, qtype=1, qid=7):
    """A DNS query for name, as glibc sends it (recursion desired)."""
    q = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + q + struct.pack("!HH", qtype, 1)


def parse_reply(msg):
    """(rcode, [addresses]) of a reply to one question."""
    qid, flags, qd, an = struct.unpack_from("!HHHH", msg, 0)
    i = 12
    while msg[i]:
        i += 1 + msg[i]
    i += 5
    addrs = []
    for _ in range(an):
        i += 2  # the name: a pointer
        rtype, _, _, rdlen = struct.unpack_from("!HHIH", msg, i)
        i += 10
        if rtype == 1:
            addrs.append(socket.inet_ntoa(msg[i:i + rdlen]))
        i += rdlen
    return flags & 0xF, addrs


class NodeTest(unittest.TestCase):
    def test_image_repository_drops_registry_tag_and_digest(self):
        self.assertEqual(image_repository("mwj-worker"), "mwj-worker")
        self.assertEqual(image_repository("mwj-worker:latest"), "mwj-worker")
        self.assertEqual(image_repository("registry:5000/team/mwj-worker:1.0@sha256:ab"),
                         "mwj-worker")

    def test_var_references_expand_as_kubernetes_does(self):
        env = {"A": "x", "B": "y"}
        self.assertEqual(expand("$(A)-$(B)", env), "x-y")
        self.assertEqual(expand("$(MISSING)", env), "$(MISSING)")
        self.assertEqual(expand("$$(A) $$", env), "$(A) $")

    def test_downward_api_fields(self):
        p = pod("w-0", "127.0.0.5", labels={"team": "vision"})
        p["spec"]["nodeName"] = "n"
        self.assertEqual(field_value(p, "metadata.name"), "w-0")
        self.assertEqual(field_value(p, "status.podIP"), "127.0.0.5")
        self.assertEqual(field_value(p, "metadata.labels['team']"), "vision")
        self.assertEqual(field_value(p, "metadata.labels['none']"), "")
        with self.assertRaises(ValueError):
            field_value(p, "spec.containers")


class RecordsTest(unittest.TestCase):
    """What cluster DNS answers for the pods behind headless Services."""

    def test_every_pod_behind_a_headless_service_has_its_name_and_the_services(self):
        a, b = pod("job-worker-0", "127.0.0.2"), pod("job-worker-1", "127.0.0.3", ready=False)
        self.assertEqual(records([a, b], [service("job", True)]), [
            (FQDN % 0, "127.0.0.2"), (SVC, "127.0.0.2"),
            (FQDN % 1, "127.0.0.3"), (SVC, "127.0.0.3")])

    def test_not_ready_pods_are_left_out_unless_the_service_publishes_them(self):
        a, b = pod("job-worker-0", "127.0.0.2"), pod("job-worker-1", "127.0.0.3", ready=False)
        self.assertEqual([ip for _, ip in records([a, b], [service("job", False)])],
                         ["127.0.0.2", "127.0.0.2"])

    def test_finished_pods_other_namespaces_and_cluster_ip_services(self):
        a = pod("job-worker-0", "127.0.0.2")
        done = pod("job-worker-1", "127.0.0.3", phase="Succeeded")
        other = pod("job-worker-2", "127.0.0.4", ns="team")
        names = [n for n, _ in records([a, done, other], [service("job", True),
                                                          service("job", True, ns="team")])]
        self.assertEqual(names, [FQDN % 0, SVC, "job-worker-2.job.team.svc.cluster.local",
                                 "job.team.svc.cluster.local"])
        self.assertEqual(records([a], [service("job", True, cluster_ip="10.0.0.1")]), [])

    def test_a_pod_without_hostname_or_of_another_subdomain_is_named_by_its_address(self):
        # The endpoints controller names an address only for a pod with a
        # hostname whose subdomain is the Service; CoreDNS uses the
        # address, dashed, for the others.
        a = pod("job-worker-0", "127.0.0.2", hostname=False)
        b = pod("job-worker-1", "127.0.0.3", subdomain="other")
        self.assertEqual([n for n, _ in records([a, b], [service("job", True)])],
                         ["127-0-0-2." + SVC, SVC, "127-0-0-3." + SVC, SVC])


class HostsTest(unittest.TestCase):
    def test_hosts_are_the_kubelets_with_the_pods_own_names_only(self):
        p = pod("job-worker-0", "127.0.0.2")
        p["spec"]["hostAliases"] = [{"ip": "10.1.2.3", "hostnames": ["db", "db.local"]}]
        text = hosts_text(p, "127.0.0.2")
        self.assertTrue(text.startswith("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"))
        self.assertIn("\n127.0.0.2\t%s\tjob-worker-0\n" % (FQDN % 0), text)
        self.assertTrue(text.endswith("\n\n# Entries added by HostAliases.\n"
                                      "10.1.2.3\tdb\tdb.local\n"))
        bare = pod("solo", "127.0.0.9", subdomain="")
        self.assertIn("\n127.0.0.9\tsolo\n", hosts_text(bare, "127.0.0.9"))

    def test_resolv_conf_names_the_server_with_the_namespaces_search_path(self):
        self.assertEqual(resolv_conf("team", "127.0.5.6"),
                         "search team.svc.cluster.local svc.cluster.local cluster.local\n"
                         "nameserver 127.0.5.6\noptions ndots:5\n")


class DnsRecordsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mwj-dns-test-")
        self.path = os.path.join(self.dir, "records")
        self.store = Store()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def read(self):
        with open(self.path) as f:
            return f.read()

    def test_the_file_follows_the_store_and_is_written_only_when_it_changes(self):
        dns = DnsRecords(self.store, self.path, "127.0.9.9")
        self.assertEqual(self.read(), "")
        self.store.create(SERVICES, "default", service("job", False))
        self.store.create(PODS, "default", pod("job-worker-0", "127.0.0.2"))
        self.assertTrue(dns.write())
        self.assertEqual(self.read(), "%s 127.0.0.2\n%s 127.0.0.2\n" % (FQDN % 0, SVC))
        inode = os.stat(self.path).st_ino
        self.assertFalse(dns.write())  # nothing changed: not written
        self.assertEqual(os.stat(self.path).st_ino, inode)
        cur = self.store.get(PODS, "default", "job-worker-0")
        cur["status"]["conditions"][0]["status"] = "False"
        self.store.replace(PODS, "default", "job-worker-0", cur)
        self.assertTrue(dns.write())
        self.assertEqual(self.read(), "")

    def test_a_burst_of_changes_is_one_write_per_pass_whatever_the_number_of_pods(self):
        self.store.create(SERVICES, "default", service("job", True))
        dns = DnsRecords(self.store, self.path, "127.0.9.9")
        dns.start()
        try:
            for i in range(2000):
                self.store.create(PODS, "default", pod("job-worker-%d" % i,
                                                       "127.0.%d.%d" % (i // 250, i % 250 + 1)))
                dns.mark()
            deadline = time.monotonic() + 30
            while self.read().count("\n") < 4000 and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertEqual(self.read().count("\n"), 4000)
        finally:
            dns.stop()


class DnsServerTest(unittest.TestCase):
    """node_dnsd.py's answers, and the server on a real socket."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mwj-dnsd-test-")
        self.path = os.path.join(self.dir, "records")
        with open(self.path, "w") as f:
            f.write("%s 127.0.0.2\n%s 127.0.0.2\n%s 127.0.0.3\n%s 127.0.0.3\n"
                    % (FQDN % 0, SVC, FQDN % 1, SVC))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def ask(self, name, qtype=1):
        names = {}
        with open(self.path) as f:
            for line in f:
                n, ip = line.split()
                names.setdefault(n, []).append(socket.inet_aton(ip))
        return parse_reply(answer(query(name, qtype), names))

    def test_a_pod_name_and_a_service_name_resolve_case_insensitively(self):
        self.assertEqual(self.ask(FQDN % 1), (0, ["127.0.0.3"]))
        self.assertEqual(self.ask(SVC.upper()), (0, ["127.0.0.2", "127.0.0.3"]))

    def test_unknown_names_other_types_and_outside_names(self):
        self.assertEqual(self.ask("job-worker-9.job.default.svc.cluster.local"), (3, []))
        self.assertEqual(self.ask(FQDN % 0, qtype=28), (0, []))  # AAAA: no data
        self.assertEqual(self.ask("example.com"), (5, []))        # REFUSED

    def test_malformed_queries_get_formerr_or_nothing(self):
        self.assertEqual(answer(b"\x00\x07", {}), None)
        bad = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"\x40abc"
        self.assertEqual(struct.unpack_from("!H", answer(bad, {}), 2)[0] & 0xF, 1)
        self.assertIsNone(answer(struct.pack("!HHHHHH", 7, 0x8000, 1, 0, 0, 0) + b"\x01", {}))

    def test_the_server_answers_on_its_socket_and_rereads_a_replaced_file(self):
        port = 20000 + os.getpid() % 20000
        proc = subprocess.Popen([sys.executable, os.path.join(HERE, "node_dnsd.py"),
                                 "--address", "127.0.0.1", "--port", str(port),
                                 "--records", self.path], stdout=subprocess.PIPE)
        try:
            self.assertEqual(proc.stdout.readline().strip(), b"ready")
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.addCleanup(sock.close)
            sock.settimeout(5)
            sock.sendto(query(FQDN % 0), ("127.0.0.1", port))
            self.assertEqual(parse_reply(sock.recv(512)), (0, ["127.0.0.2"]))
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                f.write("%s 127.0.0.7\n" % (FQDN % 0))
            os.replace(tmp, self.path)
            sock.sendto(query(FQDN % 0), ("127.0.0.1", port))
            self.assertEqual(parse_reply(sock.recv(512)), (0, ["127.0.0.7"]))
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()


if __name__ == "__main__":
    unittest.main()
