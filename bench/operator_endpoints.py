#!/usr/bin/python3
"""mwj-operator's /healthz, /readyz and /metrics under misbehaving clients,
against the local test cluster (e2e/cluster): e2e/tests/http_flood.py
holds 500 idle connections to each listener and then adds a burst of
1,000 connections to each, while a probe asks the three paths as kubelet
and Prometheus do. Prints JSON lines:

  latency  for each phase (quiet, idle, burst, after) and path: probes
           answered, failed (no whole answer within 10 s), and the
           answer's time in ms at p50, p99 and max
  memory   the operator's RSS in MB before the load and its peak during
           it (sampled every 50 ms), and the connections the server
           closed as idle (idle_reopened: the flood opens each again)

e2e/tests/operator_ha.sh checks that every probe is answered; the
latencies are this file's to report.
"""
import json
import os
import subprocess
import sys
import threading
import time

from benchlib import wait_for
from operator_scale import ROOT, Operator, kubectl, local_cluster, rss_mb

IDLE, BURST = 500, 1000


def emit(**kv):
    print(json.dumps({"bench": "operator_endpoints", **kv}), flush=True)


def peak_rss(pid, stop, out):
    while not stop.is_set():
        try:
            out.append(rss_mb(pid)["rss_mb"])
        except OSError:
            return
        time.sleep(0.05)


def main():
    ops = []
    with local_cluster("mwj-endpoints-", ops) as state:
        kubectl("apply", "-f", os.path.join(ROOT, "crds"))
        op = Operator(state, "operator.log")
        ops.append(op)
        wait_for("readiness", op.ready, timeout=600)
        before = rss_mb(op.proc.pid)["rss_mb"]
        samples, stop = [], threading.Event()
        sampler = threading.Thread(target=peak_rss, args=(op.proc.pid, stop, samples))
        sampler.start()
        flood = subprocess.run(
            [sys.executable, os.path.join(ROOT, "e2e", "tests", "http_flood.py"),
             "--idle", str(IDLE), "--burst", str(BURST),
             f"http://127.0.0.1:{op.health_port}/healthz",
             f"http://127.0.0.1:{op.health_port}/readyz",
             f"http://127.0.0.1:{op.metrics_port}/metrics"],
            stdout=subprocess.PIPE, text=True, timeout=600)
        stop.set()
        sampler.join()
        reopened = 0
        for line in flood.stdout.splitlines():
            r = json.loads(line)
            reopened = max(reopened, r.pop("idle_opened", 0) - 2 * IDLE)
            r["path"] = "/" + r.pop("url").split("/", 3)[3]
            emit(what="latency", idle=IDLE, burst=BURST, **r)
        emit(what="memory", rss_before_mb=before, rss_peak_mb=max(samples, default=before),
             idle_reopened=reopened)
        return flood.returncode


if __name__ == "__main__":
    sys.exit(main())
