#!/usr/bin/python3
"""mwj-operator at scale, against the local test cluster (e2e/cluster):
100 MultiWorkerJobs of 4 workers whose container is `sleep` (so that 400
pods fit on one machine), applied at once. Prints JSON lines:

  idle        the operator's RSS (anon and file pages apart), CPU use and
              wake-ups with no jobs, over 10 s
  apply       from `kubectl create` of the 100 jobs to the 400th pod created:
              seconds, the operator's CPU seconds and API requests for it,
              and the local cluster's CPU seconds for the same work
  loaded      the same with 100 jobs and 400 pods cached, every pod running
  preemption  50 worker pods preempted one after another: from the
              operator receiving the deletion event (its "pod X is gone"
              line) to the replacement's create call answered ("created pod
              X"), median and max in ms
  restart     the operator stopped (SIGTERM) and started again while the
              jobs run: seconds to /readyz 200 and to a full resync (every
              job reconciled, queue empty), and pods created by the new
              process (0: no duplicate)

The operator's figures come from its own /metrics (read with Prometheus'
parser) and /proc; the cluster's CPU from /proc of its processes.
"""
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime

from prometheus_client.parser import text_string_to_metric_families

from benchlib import BIN_DIR, HERE, wait_for, sleep_jobs_yaml

ROOT = os.path.dirname(HERE)
JOBS, WORKERS, PREEMPTIONS = 100, 4, 50
CLK_TCK = os.sysconf("SC_CLK_TCK")


def emit(**kv):
    print(json.dumps({"bench": "operator_scale", **kv}), flush=True)


def kubectl(*args, stdin=None):
    return subprocess.run(["kubectl", *args], input=stdin, check=True, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def idle_use(pid, seconds=10):
    """CPU ms a second and wake-ups a second over seconds, from every
    thread's scheduler statistics (nanoseconds; /proc's stat counts only
    whole 10 ms ticks). Threads must not come or go meanwhile."""
    def sample():
        ns = switches = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns += int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        switches += int(line.split()[1])
        return ns, switches
    ns0, sw0 = sample()
    time.sleep(seconds)
    ns1, sw1 = sample()
    return {"cpu_ms_per_s": round((ns1 - ns0) / 1e6 / seconds, 3),
            "wakeups_per_s": round((sw1 - sw0) / seconds, 2)}


def rss_mb(pid):
    """RSS in MB, whole and split: anon (the operator's own heap and
    stacks) and file (the pages of its binary and shared libraries that
    it has touched, which other processes mapping them share)."""
    kb = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                kb[key] = int(rest.split()[0])
    return {"rss_mb": round(kb["VmRSS"] / 1024, 2), "rss_anon_mb": round(kb["RssAnon"] / 1024, 2),
            "rss_file_mb": round(kb["RssFile"] / 1024, 2)}


class Operator:
    def __init__(self, state, log_name):
        self.log = os.path.join(state, log_name)
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [os.path.join(BIN_DIR, "mwj-operator"), "--metrics-addr", "127.0.0.1:0",
                 "--health-addr", "127.0.0.1:0"], stdout=out, stderr=subprocess.STDOUT)
        self.metrics_port = wait_for("the metrics port", lambda: self._port("/metrics"),
                                     timeout=600)
        self.health_port = wait_for("the health port", lambda: self._port("/healthz"),
                                    timeout=600)

    def _port(self, what):
        with open(self.log) as f:
            m = re.search(rf"serving {what}[^0-9]* port (\d+)", f.read())
        return m and int(m.group(1))

    def ready(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=5):
                return True
        except OSError:
            return False

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics",
                                    timeout=10) as r:
            text = r.read().decode()
        out = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return out

    def value(self, name, **labels):
        return self.metrics().get((name, tuple(sorted(labels.items()))), 0)

    def api_requests(self):
        return sum(v for (n, _), v in self.metrics().items()
                   if n == "mwj_operator_api_requests_total")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)


@contextlib.contextmanager
def local_cluster(prefix, operators):
    """A local test cluster of its own for the with block, KUBECONFIG
    pointing at it; yields its state folder. At the end every Operator in
    the list operators that still runs is killed, and the cluster stopped."""
    state = tempfile.mkdtemp(prefix=prefix)
    subprocess.run([os.path.join(ROOT, "e2e", "cluster", "up.sh"), state], check=True,
                   stdout=subprocess.DEVNULL)
    os.environ["KUBECONFIG"] = os.path.join(state, "kubeconfig")
    try:
        yield state
    finally:
        for op in operators:
            if op.proc.poll() is None:
                op.proc.kill()
        subprocess.run([os.path.join(ROOT, "e2e", "cluster", "down.sh"), state],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def cluster_pids(state):
    pids = []
    for name in ("apiserver.pid", "nginx.pid"):
        try:
            with open(os.path.join(state, name)) as f:
                pids.append(int(f.read().split()[0]))
        except (OSError, ValueError):
            pass
    return pids


def cluster_cpu(state):
    total = 0.0
    for pid in cluster_pids(state):
        try:
            total += cpu_seconds(pid)
            # nginx's workers and the node's helpers are children.
            for child in open(f"/proc/{pid}/task/{pid}/children").read().split():
                total += cpu_seconds(int(child))
        except OSError:
            pass
    return total


def log_times(path, pattern):
    """Time stamps (s) of the log lines matching pattern, by its group 1."""
    out = {}
    with open(path) as f:
        for line in f:
            m = re.search(pattern, line)
            if m:
                ts = datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ")
                out.setdefault(m.group(1), ts.timestamp())
    return out


def main():
    ops = []
    with local_cluster("mwj-scale-", ops) as state:
        kubectl("apply", "-f", os.path.join(ROOT, "crds"))
        wait_for("the CRD", lambda: kubectl(
            "get", "crd", "multiworkerjobs.training.mwj.io", "-o",
            "jsonpath={.status.conditions[?(@.type==\"Established\")].status}") == "True",
            timeout=600)
        op = Operator(state, "operator.log")
        ops.append(op)
        wait_for("readiness", op.ready, timeout=600)
        time.sleep(2)
        emit(phase="idle", jobs=0, **rss_mb(op.proc.pid), **idle_use(op.proc.pid))

        c0, k0, r0 = cpu_seconds(op.proc.pid), cluster_cpu(state), op.api_requests()
        t0 = time.monotonic()
        kubectl("create", "-f", "-", stdin=sleep_jobs_yaml("s", JOBS, WORKERS))
        t_apply = time.monotonic() - t0
        wait_for("400 pods", lambda: op.value("mwj_operator_pods_created_total") >=
                 JOBS * WORKERS, timeout=600, every=0.2)
        t_all = time.monotonic() - t0
        op_cpu, k_cpu = cpu_seconds(op.proc.pid) - c0, cluster_cpu(state) - k0
        emit(phase="apply", jobs=JOBS, pods=JOBS * WORKERS, kubectl_create_s=round(t_apply, 2),
             all_pods_created_s=round(t_all, 2), operator_cpu_s=round(op_cpu, 3),
             operator_api_requests=int(op.api_requests() - r0),
             cluster_cpu_s=round(k_cpu, 2),
             operator_cpu_share=round(op_cpu / (op_cpu + k_cpu), 4))

        # Loaded and idle: every pod running, so no status changes come.
        wait_for("every pod to run", lambda: kubectl(
            "get", "pods", "-o", "jsonpath={.items[*].status.phase}").split().count(
                "Running") == JOBS * WORKERS, timeout=1800, every=2)
        time.sleep(5)
        use = idle_use(op.proc.pid)
        emit(phase="loaded", jobs=JOBS, pods_cached=int(op.value(
            "mwj_operator_cached_objects", resource="pods")),
             **rss_mb(op.proc.pid), **use)

        fault = os.path.join(ROOT, "e2e", "cluster", "fault.sh")
        targets = [f"s{i}-worker-1" for i in range(PREEMPTIONS)]
        for pod in targets:
            subprocess.run([fault, "-d", state, "preempt", pod, "--grace", "0"], check=True,
                           stdout=subprocess.DEVNULL)
            wait_for(f"{pod} again", lambda p=pod: kubectl(
                "get", "pod", p, "--ignore-not-found", "-o",
                "jsonpath={.metadata.annotations.training\\.mwj\\.io/restart-attempt}") == "1",
                timeout=60)
        gone = log_times(op.log, r"pod (s\d+-worker-1) is gone")
        made = log_times(op.log, r"created pod (s\d+-worker-1) \(attempt 1\)")
        ms = [(made[p] - gone[p]) * 1000 for p in gone if p in made]
        emit(phase="preemption", preemptions=len(ms),
             event_to_create_ms_median=round(statistics.median(ms), 1),
             event_to_create_ms_max=round(max(ms), 1))

        assert op.stop() == 0
        created_before = kubectl("get", "pods", "-o", "name").count("\n")
        t0 = time.monotonic()
        op = Operator(state, "operator-2.log")
        ops.append(op)
        wait_for("readiness", op.ready, timeout=600)
        t_ready = time.monotonic() - t0
        wait_for("the resync", lambda: op.value("mwj_operator_reconcile_total") >= JOBS and
                 op.value("mwj_operator_workqueue_depth") == 0, timeout=600, every=0.05)
        t_sync = time.monotonic() - t0
        emit(phase="restart", ready_s=round(t_ready, 3), resynced_s=round(t_sync, 3),
             pods_created_after_restart=int(op.value("mwj_operator_pods_created_total")),
             pods=kubectl("get", "pods", "-o", "name").count("\n"), pods_before=created_before,
             **rss_mb(op.proc.pid))


if __name__ == "__main__":
    sys.exit(main())
