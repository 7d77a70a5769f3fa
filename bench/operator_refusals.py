#!/usr/bin/python3
"""What a refused job costs the API server: mwj-operator against the local
test cluster (e2e/cluster), with JOBS jobs of 2 workers whose creates the
cluster refuses, as a real kube-apiserver refuses them:

  secrets   a ResourceQuota of 0 Secrets in each job's namespace (the ring
            key's create is refused: exceeded quota)
  pods      Pod Security "restricted" enforced in each job's namespace, and
            a template that breaks it (every pod create is refused)

For each, the operator's write requests (POST, PUT, PATCH, DELETE: every
attempt, from its own /metrics) per refused job in the first minute (its
back-off growing from 0.5 s) and in the second (the back-off at its
60 s cap), split into status writes, Events and creates by the API
server's own access log; then the refusals are lifted (30 s after the
second minute) and the seconds until every job has all its pods, at
attempt 0: the jobs wait for their next retry, at most the back-off's cap
of 60 s. Prints JSON lines.
"""
import json
import os
import re
import sys
import time

from benchlib import HERE, wait_for
from operator_scale import Operator, kubectl, local_cluster

ROOT = os.path.dirname(HERE)
JOBS = 10
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def emit(**kv):
    print(json.dumps({"bench": "operator_refusals", **kv}), flush=True)


def job_yaml(name, ns):
    return f"""apiVersion: training.mwj.io/v1
kind: MultiWorkerJob
metadata: {{name: {name}, namespace: {ns}}}
spec:
  workers: 2
  template:
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: worker
        image: busybox:1.36
        command: [sh, -c, 'sleep 3600']
"""


def operator_writes(op):
    """Every write the operator attempted, whatever the answer."""
    return sum(v for (name, labels), v in op.metrics().items()
               if name == "mwj_operator_api_requests_total" and dict(labels)["method"] in WRITES)


def access_writes(state, prefix):
    """The operator's write requests into namespaces starting with prefix,
    by kind: status, events, creates (everything else but kubectl's job
    creates)."""
    out = {"status": 0, "events": 0, "creates": 0}
    pat = re.compile(r'"(POST|PUT|PATCH|DELETE) /apis?/[^ ]*/namespaces/' + prefix +
                     r'[^/]*/([^ ?]*)')
    with open(os.path.join(state, "nginx-access.log")) as f:
        for line in f:
            m = pat.search(line)
            if not m:
                continue
            if m.group(2).startswith("multiworkerjobs") and m.group(1) == "POST":
                continue  # kubectl's, not the operator's
            if m.group(2).endswith("/status"):
                out["status"] += 1
            elif m.group(2).startswith("events"):
                out["events"] += 1
            else:
                out["creates"] += 1
    return out


def snapshot(op, state, prefix):
    return time.monotonic(), operator_writes(op), access_writes(state, prefix)


def minute(op, state, prefix, since, seconds=60):
    """The writes from the snapshot since to seconds after it."""
    t0, w0, a0 = since
    time.sleep(max(0.0, t0 + seconds - time.monotonic()))
    w1, a1 = operator_writes(op), access_writes(state, prefix)
    per_job = {k: round((a1[k] - a0[k]) / JOBS, 2) for k in a0}
    return {"writes_per_job": round((w1 - w0) / JOBS, 2), **{f"{k}_per_job": v
                                                              for k, v in per_job.items()}}


def all_attempt_zero(ns_prefix):
    out = kubectl("get", "pods", "-A", "-o", "jsonpath={range .items[*]}{.metadata.namespace} "
                  "{.metadata.annotations.training\\.mwj\\.io/restart-attempt}{\"\\n\"}{end}")
    attempts = [line.split()[1] for line in out.splitlines() if line.startswith(ns_prefix)]
    return len(attempts) == 2 * JOBS and all(a == "0" for a in attempts)


def case(op, state, prefix, refuse, lift):
    for i in range(JOBS):
        ns = f"{prefix}{i}"
        kubectl("create", "namespace", ns)
        refuse(ns)
    # The first minute counts from before the first job is created.
    first = snapshot(op, state, prefix)
    for i in range(JOBS):
        kubectl("apply", "-f", "-", stdin=job_yaml("held", f"{prefix}{i}"))
    emit(case=prefix.rstrip("-"), window="first minute", **minute(op, state, prefix, first))
    second = snapshot(op, state, prefix)
    emit(case=prefix.rstrip("-"), window="second minute", **minute(op, state, prefix, second))
    # Lifted half-way between two retries (they come every 60 s by now):
    # the jobs start at their next retry, at most the back-off's cap.
    time.sleep(30)
    start = time.monotonic()
    for i in range(JOBS):
        lift(f"{prefix}{i}")
    wait_for("every job's pods at attempt 0", lambda: all_attempt_zero(prefix), timeout=180)
    emit(case=prefix.rstrip("-"), window="lifted", seconds_to_all_pods=round(
        time.monotonic() - start, 2))


def main():
    operators = []
    with local_cluster("mwj-refusals-", operators) as state:
        kubectl("apply", "-f", os.path.join(ROOT, "crds"))
        op = Operator(state, "operator.log")
        operators.append(op)
        wait_for("the operator's caches", op.ready, timeout=120)
        case(op, state, "quota-",
             lambda ns: kubectl("-n", ns, "create", "quota", "q", "--hard=secrets=0"),
             lambda ns: kubectl("-n", ns, "delete", "quota", "q"))
        case(op, state, "strict-",
             lambda ns: kubectl("label", "namespace", ns,
                                "pod-security.kubernetes.io/enforce=restricted"),
             lambda ns: kubectl("label", "namespace", ns,
                                "pod-security.kubernetes.io/enforce=privileged", "--overwrite"))
        op.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
