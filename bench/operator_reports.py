#!/usr/bin/python3
"""Training progress in the job's status, what it costs: mwj-operator on
the local test cluster (e2e/cluster), serving its status endpoint
(--status-url), with 100 MultiWorkerJobs of 1 worker whose container is
`sleep`. The bench plays the 100 chiefs: each job's chief token (the
projected one the cluster's node wrote into the pod's volume) POSTs a
report as mwj-worker writes one (status_report_body), globalStep rising,
every 2 s per job, spread evenly, over HTTPS trusting the CA file of the
job's pod, keep-alive connections from a pool of threads: 10 s of
warm-up, then a window of 60 s. Then mwj-worker itself, trained with and
without reporting to a local HTTPS server. Prints JSON lines:

  reports     over the window: the operator's CPU seconds, a second and
              as % of one core; reports sent a second, the answers by HTTP
              status, POST latency median, p99 and max (ms, a new TLS
              connection's handshake included); the status writes
              (PATCH or PUT of multiworkerjobs/NAME/status, from the API
              server's access log: the operator's /metrics counts API
              requests by method and code only) a second, against the
              bound the operator promises (a write a job per 5 s: 20/s),
              and the most of one job's (at most 60/5 + 1: within_bound);
              TokenReviews; the operator's own API requests (all, and its
              PATCH and PUT) and reconcile passes;
              mwj_operator_status_reports_total by result (read at the
              window's ends: a report in flight then may fall on either
              side); the local cluster's CPU seconds
  freshness   status.training.globalStep of every job (kubectl get mwj -A
              -o json) against the reports: right after the last one, how
              many show the last step accepted (current), and how many
              show at least what had been accepted one write interval
              (plus 1 s for the write itself) before; then one interval
              after the last report, how many are current
  slowdown_run  one run of `mwj-worker train` (cnn, 1 thread, batch 64,
              one epoch of the steps that take about 20 s here) with or
              without MWJ_STATUS_URL, MWJ_STATUS_CA_FILE and
              MWJ_STATUS_TOKEN_FILE: steps/s from the worker's own epoch
              line (its "seconds"), its CPU seconds (all its threads, the
              reporter's included) in all and a step, and the reports the
              server got during the run
  slowdown    5 pairs of runs, interleaved (off, on, ...): steps/s and CPU
              ms a step, median, min and max of each, the ratio of the
              steps/s medians on/off, and the reports the server got in all

The operator's figures come from its own /metrics (read with Prometheus'
parser) and /proc; the cluster's CPU from /proc of its processes. The
exit status is 1 when the measurement itself failed: no report accepted
in the window, an "on" run whose server got no report, or an "off" run
whose server got one; a write rate over the bound or a stale status is
a finding, printed, not a failure of the bench.
"""
import functools
import http.client
import http.server
import json
import os
import re
import resource
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

from benchlib import BIN_DIR, HERE, wait_for, sleep_jobs_yaml
from operator_scale import Operator, cluster_cpu, cpu_seconds, kubectl, local_cluster

ROOT = os.path.dirname(HERE)
JOBS = 100
PERIOD_S = 2.0             # each chief's reports
WARMUP_S, WINDOW_S = 10.0, 60.0
WRITE_INTERVAL_S = 5.0     # the operator's REPORTS_WRITE_INTERVAL_MS
WRITE_SLACK_S = 1.0        # the status write's own time, for freshness
SENDERS = 10               # threads; each owns JOBS / SENDERS chiefs
AUDIENCE = "mwj-operator"
STEPS_PER_REPORT = 100     # a chief at 50 steps/s
STEPS_PER_EPOCH, EPOCHS = 10000, 100
PAIRS = 5
RUN_TARGET_S = 20.0        # each training run: the 5 s report fires 4 times
DATA = os.environ.get("MWJ_TEST_DATA", "/usr/share/datasets/fashion-mnist")
REPORT_PATH = "/apis/training.mwj.io/v1/namespaces/{ns}/multiworkerjobs/{name}/status"
STATUS_OK = json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Success", "code": 200}).encode()


def emit(**kv):
    print(json.dumps({"bench": "operator_reports", **kv}), flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values, q):
    """The q-th percentile (0-100) by the nearest rank."""
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(-(-q * len(s) // 100)) - 1))]


class ReportingOperator(Operator):
    """Operator, started with its status endpoint on 127.0.0.1:port."""

    def __init__(self, state, log_name, port):
        self.log = os.path.join(state, log_name)
        self.url = f"https://127.0.0.1:{port}"
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [os.path.join(BIN_DIR, "mwj-operator"), "--metrics-addr", "127.0.0.1:0",
                 "--health-addr", "127.0.0.1:0", "--status-url", self.url,
                 "--status-addr", f"127.0.0.1:{port}", "--status-audience", AUDIENCE],
                stdout=out, stderr=subprocess.STDOUT)
        self.metrics_port = wait_for("the metrics port", lambda: self._port("/metrics"),
                                     timeout=600)
        self.health_port = wait_for("the health port", lambda: self._port("/healthz"),
                                    timeout=600)
        wait_for("the status endpoint", lambda: "status: chiefs report to" in open(
            self.log).read(), timeout=60)


# --- The chiefs ---


def report_body(step):
    """A report as mwj-worker's status_report_body writes one, at step."""
    epoch = step // STEPS_PER_EPOCH + 1
    total = STEPS_PER_EPOCH * EPOCHS
    return json.dumps({"training": {
        "epochs": EPOCHS, "epoch": epoch, "stepsPerEpoch": STEPS_PER_EPOCH,
        "step": step % STEPS_PER_EPOCH, "globalStep": step, "totalSteps": total,
        "loss": round(0.3 + 2.0 / (1 + step / 1000), 6),
        "metrics": {"accuracy": round(0.9 - 0.8 / (1 + step / 1000), 6)},
        "samplesPerSecond": STEPS_PER_REPORT / PERIOD_S * 64,
        "estimatedSecondsLeft": int((total - step) * PERIOD_S / STEPS_PER_REPORT),
        "lastBackupStep": step - step % 500, "learningRate": 0.001}}).encode()


class Chief:
    """One job's chief: its token and CA files (the pod's projected
    volume, as the node wrote it), and a keep-alive connection."""

    def __init__(self, name, volume, port):
        self.name, self.port = name, port
        self.path = REPORT_PATH.format(ns="default", name=name)
        self.token_file = os.path.join(volume, "token")
        self.ctx = ssl.create_default_context(cafile=os.path.join(volume, "ca.crt"))
        self.conn = None
        self.accepted = []  # (answered, step), in order

    def post(self, step):
        """One report: (HTTP status or 0 for none, seconds, whether a new
        TLS connection was made). A kept connection the server closed in
        the meantime is made again once."""
        with open(self.token_file) as f:
            token = f.read().strip()  # read each time: the node rotates it
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        body = report_body(step)
        t0 = time.monotonic()
        fresh = False
        while True:
            if self.conn is None:
                self.conn = http.client.HTTPSConnection("127.0.0.1", self.port,
                                                        context=self.ctx, timeout=10)
                fresh = True
            try:
                self.conn.request("POST", self.path, body=body, headers=headers)
                resp = self.conn.getresponse()
                resp.read()
                if resp.will_close:
                    self.close()
                return resp.status, time.monotonic() - t0, fresh
            except (OSError, http.client.HTTPException):
                self.close()
                if fresh:
                    return 0, time.monotonic() - t0, fresh

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class Sender(threading.Thread):
    """Sends the reports of its chiefs on their schedule: chief i at t0 +
    offset_i + PERIOD_S * n, until end. Records what each got."""

    def __init__(self, chiefs, offsets, t0, end, stop):
        super().__init__(daemon=True)
        self.chiefs, self.offsets = chiefs, offsets
        self.t0, self.end, self.stop = t0, end, stop
        self.sent = []  # (due, answered, code, seconds, fresh)

    def run(self):
        n = [0] * len(self.chiefs)
        while not self.stop.is_set():
            due = [self.t0 + o + PERIOD_S * k for o, k in zip(self.offsets, n)]
            i = min(range(len(due)), key=due.__getitem__)
            if due[i] >= self.end:
                return
            if self.stop.wait(max(0.0, due[i] - time.monotonic())):
                return
            step = STEPS_PER_REPORT * (n[i] + 1)
            code, seconds, fresh = self.chiefs[i].post(step)
            answered = time.monotonic()
            if code == 200:
                self.chiefs[i].accepted.append((answered, step))
            self.sent.append((due[i], answered, code, seconds, fresh))
            n[i] += 1


def chief_volumes(state):
    """{job name: the folder of its chief's projected status volume}, once
    every chief runs and the node has written its token and CA."""
    pods = json.loads(kubectl("get", "pods", "-o", "json"))["items"]
    out = {}
    for p in pods:
        name = p["metadata"]["name"]
        if not name.endswith("-worker-0") or p.get("status", {}).get("phase") != "Running":
            continue
        volume = os.path.join(state, "node", "pods", "default",
                              f"{name}-{p['metadata']['uid'][:8]}", "volumes", "mwj-status")
        if os.path.isfile(os.path.join(volume, "token")) and os.path.isfile(
                os.path.join(volume, "ca.crt")):
            out[name[:-len("-worker-0")]] = volume
    return out if len(out) == JOBS else None


# --- The API server's access log ---

STATUS_WRITE = re.compile(r'"(?:PATCH|PUT) /apis/training\.mwj\.io/v1/namespaces/[^/]+/'
                          r'multiworkerjobs/([^/ ?]+)/status[ ?][^"]*" (\d{3})')
TOKEN_REVIEW = re.compile(r'"POST /apis/authentication\.k8s\.io/v1/tokenreviews[ ?]')


def status_writes(path, start, end):
    """The status writes and TokenReviews logged between byte offsets
    start and end: per job, by HTTP status, and the reviews' count."""
    with open(path, "rb") as f:
        f.seek(start)
        text = f.read(end - start).decode(errors="replace")
    per_job, codes, reviews = Counter(), Counter(), 0
    for line in text.splitlines():
        m = STATUS_WRITE.search(line)
        if m:
            per_job[m.group(1)] += 1
            codes[m.group(2)] += 1
        elif TOKEN_REVIEW.search(line):
            reviews += 1
    return per_job, codes, reviews


def status_steps():
    """{job name: status.training.globalStep, or None}."""
    out = {}
    for j in json.loads(kubectl("get", "mwj", "-A", "-o", "json"))["items"]:
        out[j["metadata"]["name"]] = j.get("status", {}).get("training", {}).get("globalStep")
    return out


def freshness(chiefs, steps, asked):
    """How many jobs' status shows the last accepted step, and how many
    at least the step accepted by one write interval (plus the write's
    own time) before asked; the largest lag in steps."""
    current = within = 0
    lag = 0
    for c in chiefs:
        s = steps.get(c.name)
        if not c.accepted or s is None:
            continue
        last = c.accepted[-1][1]
        owed = [step for answered, step in c.accepted
                if answered <= asked - WRITE_INTERVAL_S - WRITE_SLACK_S]
        current += s == last
        within += s >= (owed[-1] if owed else 0)
        lag = max(lag, last - s)
    return current, within, lag


def reports_phase(op, state):
    volumes = wait_for("every chief running with its token", lambda: chief_volumes(state),
                       timeout=600, every=1)
    port = int(op.url.rsplit(":", 1)[1])
    chiefs = [Chief(f"r{i}", volumes[f"r{i}"], port) for i in range(JOBS)]
    stop = threading.Event()
    t0 = time.monotonic() + 0.5
    w0, w1 = t0 + WARMUP_S, t0 + WARMUP_S + WINDOW_S
    senders = []
    for k in range(SENDERS):
        mine = list(range(k, JOBS, SENDERS))
        senders.append(Sender([chiefs[i] for i in mine], [i * PERIOD_S / JOBS for i in mine],
                              t0, w1, stop))
    access = os.path.join(state, "nginx-access.log")
    try:
        for s in senders:
            s.start()
        time.sleep(max(0.0, w0 - time.monotonic()))
        c0, k0, m0 = cpu_seconds(op.proc.pid), cluster_cpu(state), op.metrics()
        a0 = os.path.getsize(access)
        time.sleep(max(0.0, w1 - time.monotonic()))
        c1, k1, m1 = cpu_seconds(op.proc.pid), cluster_cpu(state), op.metrics()
        a1 = os.path.getsize(access)
        for s in senders:
            s.join(timeout=30)
    finally:
        stop.set()
        for c in chiefs:
            c.close()

    asked = time.monotonic()
    at_stop = freshness(chiefs, status_steps(), asked)
    last = max((c.accepted[-1][0] for c in chiefs if c.accepted), default=asked)
    time.sleep(max(0.0, last + WRITE_INTERVAL_S + WRITE_SLACK_S - time.monotonic()))
    settled = freshness(chiefs, status_steps(), time.monotonic())

    sent = [r for s in senders for r in s.sent]
    window = [r for r in sent if w0 <= r[0] < w1]
    warmup = [r for r in sent if r[0] < w0]
    ms = [r[3] * 1000 for r in window]
    per_job, write_codes, reviews = status_writes(access, a0, a1)
    writes = sum(per_job.values())
    most, allowed = max(per_job.values(), default=0), int(WINDOW_S // WRITE_INTERVAL_S) + 1

    def delta(name, **labels):
        key = (name, tuple(sorted(labels.items())))
        return m1.get(key, 0) - m0.get(key, 0)

    def summed(name, pred):
        return sum(v - m0.get(k, 0) for k, v in m1.items() if k[0] == name and pred(dict(k[1])))

    results = ("accepted", "unauthorized", "forbidden", "limited", "bad", "unavailable")
    op_cpu, k_cpu = c1 - c0, k1 - k0
    emit(phase="reports", jobs=JOBS, report_every_s=PERIOD_S, warmup_s=WARMUP_S,
         window_s=WINDOW_S,
         operator_cpu_s=round(op_cpu, 3), operator_cpu_s_per_s=round(op_cpu / WINDOW_S, 4),
         operator_cpu_pct_of_core=round(100 * op_cpu / WINDOW_S, 2),
         reports_sent=len(window), reports_per_s=round(len(window) / WINDOW_S, 2),
         answers={str(k): v for k, v in sorted(Counter(r[2] for r in window).items())},
         warmup_answers={str(k): v for k, v in sorted(Counter(r[2] for r in warmup).items())},
         post_ms_median=round(statistics.median(ms), 2) if ms else None,
         post_ms_p99=round(percentile(ms, 99), 2) if ms else None,
         post_ms_max=round(max(ms), 2) if ms else None,
         tls_connections=sum(1 for r in window if r[4]),
         status_writes=writes, status_writes_per_s=round(writes / WINDOW_S, 2),
         status_write_codes=dict(sorted(write_codes.items())),
         status_writes_bound_per_s=round(JOBS / WRITE_INTERVAL_S, 2),
         max_status_writes_of_a_job=most, max_allowed_of_a_job=allowed,
         within_bound=most <= allowed,
         token_reviews=reviews,
         operator_api_requests=int(summed("mwj_operator_api_requests_total", lambda l: True)),
         operator_patch_put=int(summed("mwj_operator_api_requests_total",
                                       lambda l: l["method"] in ("PATCH", "PUT"))),
         reconciles_per_s=round(delta("mwj_operator_reconcile_total") / WINDOW_S, 2),
         status_reports_total={r: int(delta("mwj_operator_status_reports_total", result=r))
                               for r in results},
         cluster_cpu_s=round(k_cpu, 2), cluster_cpu_s_per_s=round(k_cpu / WINDOW_S, 4))
    emit(phase="freshness", jobs=JOBS, write_interval_s=WRITE_INTERVAL_S,
         at_stop_current=at_stop[0], at_stop_within_one_interval=at_stop[1],
         at_stop_max_lag_steps=at_stop[2],
         after_one_interval_current=settled[0], after_one_interval_max_lag_steps=settled[2],
         ok=at_stop[1] == JOBS and settled[0] == JOBS)
    return int(delta("mwj_operator_status_reports_total", result="accepted")) > 0


# --- The cost to training ---

def openssl(*args):
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def make_certs(d):
    """A throwaway CA and a serving certificate for 127.0.0.1 under d."""
    p = functools.partial(os.path.join, d)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", p("ca.key"), "-out", p("ca.crt"), "-days", "1",
            "-subj", "/CN=bench-ca", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", p("tls.key"), "-out", p("tls.csr"), "-subj", "/CN=127.0.0.1")
    with open(p("ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                "extendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", p("tls.csr"), "-CA", p("ca.crt"), "-CAkey", p("ca.key"),
            "-CAcreateserial", "-out", p("tls.crt"), "-days", "1", "-extfile", p("ext.cnf"))


class ReportServer(http.server.ThreadingHTTPServer):
    """Answers a report with a token and a body that names
    training.globalStep 200 and a Status, as the operator does, and counts
    them; anything else 400."""
    daemon_threads = True

    def __init__(self, d, token):
        super().__init__(("127.0.0.1", 0), ReportHandler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(d, "tls.crt"), os.path.join(d, "tls.key"))
        self.socket = ctx.wrap_socket(self.socket, server_side=True)
        self.token = token
        self.lock = threading.Lock()
        self.reports = self.refused = 0
        self.last_step = -1


class ReportHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as libcurl uses it

    def do_POST(self):
        s = self.server
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n) if 0 <= n <= 16384 else b""
        try:
            step = json.loads(body)["training"]["globalStep"]
            ok = self.headers.get("Authorization") == f"Bearer {s.token}" and isinstance(
                step, int)
        except (ValueError, KeyError, TypeError):
            ok = False
        with s.lock:
            if ok:
                s.reports += 1
                s.last_step = step
            else:
                s.refused += 1
        data = STATUS_OK if ok else b'{"kind":"Status","status":"Failure","code":400}'
        self.send_response(200 if ok else 400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        pass


def train(steps, env, procs):
    """One mwj-worker train run: (steps/s from its epoch line, CPU
    seconds). procs holds the process while it runs, for the clean-up."""
    cmd = [os.path.join(BIN_DIR, "mwj-worker"), "train", "--model", "cnn", "--threads", "1",
           "--batch-size", "64", "--epochs", "1", "--steps-per-epoch", str(steps),
           "--data-dir", DATA, "--log-format", "json", "--log-level", "info"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    procs.append(p)
    out, err = p.communicate(timeout=600)
    procs.remove(p)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"mwj-worker train exited {p.returncode}: {err[-2000:]}")
    epoch = [o for o in (json.loads(line) for line in out.splitlines() if line.startswith("{"))
             if o.get("event") == "epoch"]
    if len(epoch) != 1 or epoch[0]["step"] != steps:
        raise RuntimeError(f"mwj-worker train printed no epoch line of {steps} steps")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return steps / epoch[0]["seconds"], cpu, err


def spread(values):
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2),
            "max": round(max(values), 2)}


def slowdown_phase():
    d = tempfile.mkdtemp(prefix="mwj-reports-tls-")
    procs = []
    server = None
    try:
        make_certs(d)
        token = os.urandom(24).hex()
        with open(os.path.join(d, "token"), "w") as f:
            f.write(token + "\n")
        server = ReportServer(d, token)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = (f"https://127.0.0.1:{server.server_address[1]}" +
               REPORT_PATH.format(ns="default", name="bench"))
        off = {k: v for k, v in os.environ.items() if not k.startswith("MWJ_STATUS_")}
        on = dict(off, MWJ_STATUS_URL=url, MWJ_STATUS_CA_FILE=os.path.join(d, "ca.crt"),
                  MWJ_STATUS_TOKEN_FILE=os.path.join(d, "token"))
        # The steps that take about RUN_TARGET_S here, from a short run.
        rate, _, _ = train(150, off, procs)
        steps = max(300, int(rate * RUN_TARGET_S / 50) * 50)
        rates = {"off": [], "on": []}
        cpu_ms = {"off": [], "on": []}
        got = {"off": 0, "on": 0}
        valid = True
        for pair in range(PAIRS):
            for mode, env in (("off", off), ("on", on)):
                with server.lock:
                    n0 = server.reports
                r, cpu, err = train(steps, env, procs)
                with server.lock:
                    n = server.reports - n0
                rates[mode].append(r)
                cpu_ms[mode].append(1000 * cpu / steps)
                got[mode] += n
                valid &= (n > 0) == (mode == "on")
                emit(phase="slowdown_run", pair=pair, reporting=mode == "on", steps=steps,
                     steps_per_s=round(r, 2), cpu_s=round(cpu, 2),
                     cpu_ms_per_step=round(1000 * cpu / steps, 3), reports_received=n,
                     worker_warned="status: a report" in err)
        emit(phase="slowdown", pairs=PAIRS, steps=steps, model="cnn", threads=1,
             off_steps_per_s=spread(rates["off"]), on_steps_per_s=spread(rates["on"]),
             ratio_on_off=round(statistics.median(rates["on"]) /
                                statistics.median(rates["off"]), 4),
             off_cpu_ms_per_step=spread(cpu_ms["off"]),
             on_cpu_ms_per_step=spread(cpu_ms["on"]),
             reports_received_on=got["on"], reports_received_off=got["off"],
             reports_refused=server.refused, last_reported_step=server.last_step,
             valid=valid)
        return valid
    finally:
        for p in procs:
            p.kill()
            p.wait()
        if server is not None:
            server.shutdown()
            server.server_close()
        shutil.rmtree(d, ignore_errors=True)


def on_sigterm(signum, frame):
    sys.exit(128 + signum)  # through every finally: the cluster goes down


def main():
    signal.signal(signal.SIGTERM, on_sigterm)
    ops = []
    with local_cluster("mwj-reports-", ops) as state:
        kubectl("apply", "-f", os.path.join(ROOT, "crds"))
        wait_for("the CRD", lambda: kubectl(
            "get", "crd", "multiworkerjobs.training.mwj.io", "-o",
            "jsonpath={.status.conditions[?(@.type==\"Established\")].status}") == "True",
            timeout=600)
        op = ReportingOperator(state, "operator.log", free_port())
        ops.append(op)
        wait_for("readiness", op.ready, timeout=600)
        kubectl("create", "-f", "-", stdin=sleep_jobs_yaml("r", JOBS, 1))
        accepted = reports_phase(op, state)
        rc = op.stop()
        if rc != 0:
            print(f"mwj-operator exited {rc} on SIGTERM; see {op.log}", file=sys.stderr)
    trained = slowdown_phase()
    return 0 if accepted and trained else 1


if __name__ == "__main__":
    sys.exit(main())
