#!/usr/bin/python3
"""The local test cluster's node (e2e/cluster/node.py) at the size of the
largest job the schema allows: 4,096 pods behind one headless Service
(publishNotReadyAddresses, as the operator makes it), each with a
hostname and subdomain and one container, created through the API at
once. Each container waits until the last pod's DNS name resolves, then
exits 0 (the last pod waits for the first's, then a minute): so every pod
runs until the last has started, as a job's workers wait for their peers,
and the names of all of them are served at once. Prints one JSON line:

  pods            how many were created
  create_s        from the first create to the last one answered
  started_s       from the first create to the last pod's container
                  started (to the second, from the pods' statuses)
  succeeded_s     from the first create to every pod Succeeded (the last
                  pod's minute included)
  cluster_cpu_s   CPU seconds of the API server's process (which runs the
                  node) and its DNS process over the whole run
  peak_rss_mb     the API server's peak resident memory (VmHWM)
  peak_threads    the most threads it had at once (sampled every 0.5 s)
  written_mb      what the API server's process wrote (write calls, files
                  and sockets: /proc's wchar), the node's files among it

  node_scale.py [--pods N] [--keep]

Needs root, as the local cluster does. Timing is reported, never asserted.
"""
import argparse
import calendar
import http.client
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CLK_TCK = os.sysconf("SC_CLK_TCK")
NS = "default"
SERVICE = "scale"


def emit(**kv):
    print(json.dumps({"bench": "node_scale", **kv}), flush=True)


class Client:
    """One keep-alive HTTPS connection to the cluster, as a client holds."""

    def __init__(self, state):
        with open(os.path.join(state, "kubeconfig")) as f:
            self.port = int(re.search(r"server: https://127\.0\.0\.1:(\d+)", f.read()).group(1))
        with open(os.path.join(state, "token")) as f:
            self.token = f.read().strip()
        self.ctx = ssl.create_default_context(cafile=os.path.join(state, "ca.crt"))
        self.conn = None

    def call(self, method, path, body=None):
        for attempt in range(3):
            if self.conn is None:
                self.conn = http.client.HTTPSConnection("127.0.0.1", self.port,
                                                        context=self.ctx, timeout=120)
            try:
                self.conn.request(method, path, body=json.dumps(body) if body else None,
                                  headers={"Authorization": "Bearer " + self.token,
                                           "Content-Type": "application/json"})
                resp = self.conn.getresponse()
                data = resp.read()
                if resp.status >= 300:
                    raise RuntimeError("%s %s: %d %s" % (method, path, resp.status, data[:300]))
                return json.loads(data)
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        return None


def pod(i, n):
    """Pod i of n: it waits for the last pod's name; the last pod, once it
    resolves the first's, stays a minute, while the others' next look-ups
    find it (a pod that has finished has no name any more)."""
    name = "scale-worker-%d" % i
    last = i == n - 1
    peer = "scale-worker-%d.%s.%s.svc.cluster.local" % (0 if last else n - 1, SERVICE, NS)
    # Looked up again after 1, 2, 4, 8, then every 16 s: 4,096 shells
    # polling every second would take the 2 cores.
    script = ("t=1; until getent hosts %s > /dev/null; do sleep $t; "
              "if [ $t -lt 16 ]; then t=$((t * 2)); fi; done; %s"
              % (peer, "sleep 60" if last else "exit 0"))
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"job": SERVICE}},
            "spec": {"hostname": name, "subdomain": SERVICE, "restartPolicy": "Never",
                     "terminationGracePeriodSeconds": 5,
                     "containers": [{"name": "worker", "image": "busybox:1.36",
                                     "command": ["sh", "-c", script]}]}}


def written_mb(pid):
    with open("/proc/%d/io" % pid) as f:
        for line in f:
            if line.startswith("wchar:"):
                return int(line.split()[1]) / 1e6
    return 0.0


def last_started(client, t0_wall):
    """Seconds from t0_wall to the latest container start of the pods."""
    latest = 0.0
    body = client.call("GET", "/api/v1/namespaces/%s/pods?labelSelector=job%%3D%s"
                       % (NS, SERVICE))
    for p in body["items"]:
        for cs in p["status"].get("containerStatuses") or []:
            stamp = (cs["state"].get("terminated") or cs["state"].get("running") or {}).get(
                "startedAt")
            if stamp:
                latest = max(latest, calendar.timegm(time.strptime(stamp,
                                                                   "%Y-%m-%dT%H:%M:%SZ")))
    return latest - t0_wall


def process_use(pid):
    """(CPU seconds, VmHWM in MB, threads) of process pid."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # Its own and its reaped children's: the containers' processes.
    cpu = sum(int(x) for x in fields[11:15]) / CLK_TCK
    hwm = threads = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return cpu, hwm, threads


def children_cpu(pid):
    """CPU seconds of pid's child processes that still run (the DNS server)."""
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and "dns" in open("/proc/%s/cmdline" % entry).read():
            total += sum(int(x) for x in fields[11:15]) / CLK_TCK
    return total


def create_all(state, n, workers=4):
    """Creates the Service and n pods over `workers` connections."""
    Client(state).call("POST", "/api/v1/namespaces/%s/services" % NS, {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": SERVICE},
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                 "selector": {"job": SERVICE}, "ports": [{"port": 2222}]}})
    errors = []

    def part(k):
        c = Client(state)
        try:
            for i in range(k, n, workers):
                c.call("POST", "/api/v1/namespaces/%s/pods" % NS, pod(i, n))
        except Exception as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=part, args=(k,)) for k in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pods", type=int, default=4096)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--keep", action="store_true", help="keep the state folder")
    a = p.parse_args()
    if os.geteuid() != 0:
        emit(skipped="the local test cluster's node needs root")
        return 0
    # Stopped from outside, it still takes its cluster down (finally).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    state = tempfile.mkdtemp(prefix="mwj-node-scale-")
    up = subprocess.run([os.path.join(ROOT, "e2e/cluster/up.sh"), state],
                        capture_output=True, text=True)
    if up.returncode != 0:
        emit(error="up.sh failed: " + up.stderr.strip())
        return 1
    try:
        with open(os.path.join(state, "apiserver.pid")) as f:
            server = int(f.read())
        cpu0, _, _ = process_use(server)
        wrote0 = written_mb(server)
        peak_threads = [0]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak_threads[0] = max(peak_threads[0], process_use(server)[2])
                done.wait(0.5)
        threading.Thread(target=sample, daemon=True).start()
        t0, t0_wall = time.monotonic(), time.time()
        create_all(state, a.pods)
        created = time.monotonic() - t0
        client = Client(state)
        left = a.pods
        while time.monotonic() - t0 < a.timeout:
            # One item at most: whether any is left, not a list of thousands.
            left = len(client.call("GET", "/api/v1/namespaces/%s/pods?labelSelector=job%%3D%s"
                                   "&fieldSelector=status.phase!%%3DSucceeded&limit=1"
                                   % (NS, SERVICE))["items"])
            if left == 0:
                break
            time.sleep(2)
        succeeded = time.monotonic() - t0
        done.set()
        cpu1, hwm, _ = process_use(server)
        wrote = written_mb(server) - wrote0
        emit(pods=a.pods, create_s=round(created, 1),
             started_s=round(last_started(client, t0_wall)),
             succeeded_s=round(succeeded, 1) if left == 0 else None,
             not_succeeded=left, cluster_cpu_s=round(cpu1 - cpu0 + children_cpu(server), 1),
             peak_rss_mb=round(hwm, 1), peak_threads=peak_threads[0],
             written_mb=round(wrote, 1))
        return 0 if left == 0 else 1
    finally:
        subprocess.run([os.path.join(ROOT, "e2e/cluster/down.sh"), state],
                       capture_output=True)
        if a.keep:
            print("kept " + state, file=sys.stderr)
        else:
            subprocess.run(["rm", "-rf", state])


if __name__ == "__main__":
    sys.exit(main())
