#!/usr/bin/python3
"""mwj-operator under faults, for a few minutes (`make soak`): 20 small
MultiWorkerJobs of 2 workers that really train (mwj-worker, cnn-pool on
Fashion-MNIST, backups on a shared claim), at most 4 at a time, against the
local test cluster (e2e/cluster), with two operator replicas under leader
election. While they run it injects, at random times and in a random order
(seeded: --seed replays a run's choices), a deck of faults dealt again
whenever it is used up:

  drop_watches  fault.sh drop-watches: every open watch ends
  compact       fault.sh compact: watches from older versions get 410 Gone
  errors_500    fault.sh errors 500 S, S from 1 to 2 s
  errors_429    fault.sh errors 429 S, the same
  kill_leader   SIGKILL of the replica that leads, while a ready standby
                is there; a new replica is started at once, so that a
                standby is always present
  preempt       fault.sh preempt of a running worker pod: deleted as the
                scheduler preempts (two times in three) or, with --evict,
                left Failed as the kubelet evicts (one in three)

(preempt is in the deck twice). Once every job is done the soak deletes
them and waits for the replicas' caches to empty, then stops the
replicas with SIGTERM. The end checks, each one JSON line:

  succeeded_once      every job reached Succeeded, exactly once, and never
                      left it (from the jobs' history), with at most one
                      Succeeded Event each
  history_complete    the pod history saw every pod the API server created
                      (its front's access log counts the 201s, and the 499s
                      of creates whose client died first), so that the
                      next two checks are not blind where the watch had gaps
  one_pod_per_index   no two pods of one worker index ever ran at once
                      (see History and check_overlap for what that means)
  one_pod_per_attempt no two pods were created for one (job, index,
                      restart attempt); creates refused with 409 are counted
  memory              each replica that lived long enough ends, caches
                      empty again, with an RSS no more than a margin above
                      its RSS after its first sync (see check_memory)
  sigterm             the replicas alive at the end exit 0 on SIGTERM
  leaks               with --leak-operator BIN: e2e/tests/operator.sh with
                      that (ASan/LeakSanitizer) build ends with the
                      operator's SIGTERM exit 0 and its log holds no
                      sanitizer report (a scenario that fails otherwise,
                      on its timings under ASan, is shown; make test
                      judges the scenarios)

Then one line per fault (injected, and survived: all end checks passed
after it), and "N passed, N failed" over the checks; the exit status is 1
if any failed. Timings are reported, never judged, but for --timeout. The
state folder (logs, and the soak's faults.jsonl and history-*.jsonl) is
removed when all passed, and kept (its path printed) otherwise, or with
--keep. A seed replays the choices (which fault, which pod, how long), not
the timings of a loaded machine.
"""
import argparse
import http.client
import json
import os
import random
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from benchlib import BIN_DIR, HERE, wait_for

ROOT = os.path.dirname(HERE)
FAULT_SH = os.path.join(ROOT, "e2e", "cluster", "fault.sh")
NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"
JOBS_PATH = f"/apis/training.mwj.io/v1/namespaces/{NS}/multiworkerjobs"
JOBS, WORKERS, CONCURRENT = 20, 2, 4
# Steps per job, drawn per job: with 4 jobs (8 worker processes) on 2
# cores a job takes some 15-40 s, long enough to be hit by faults.
STEPS = (600, 1200)
# Short leader election durations, as in e2e/tests/operator_ha.sh, so that
# a hand-over takes seconds; the rules are those of the defaults.
LEASE_S, RENEW_S, RETRY_S = 4, 3, 0.5
FAULT_GAP_S = (0.5, 2.0)   # between two faults
BURST_S = (1.0, 2.0)       # an errors burst
DECK = ("drop_watches", "compact", "errors_500", "errors_429", "kill_leader", "preempt",
        "preempt")
FAULTS = DECK[:-1]
# What each fault's line reports beside its counts (Soak.fault_info).
FAULT_INFO = {"drop_watches": (), "compact": (), "errors_500": ("errors_500_answered",),
              "errors_429": ("errors_429_answered",),
              "kill_leader": ("kill_skipped", "takeover_s", "two_leaders_seen"),
              "preempt": ("evictions", "preempt_skipped")}
# Leaders are killed only while fewer than this share of the jobs has
# finished, so that the last replicas live through the rest of the soak
# and their memory can be judged over a real stretch of work.
KILL_UNTIL_DONE = 0.6
MAX_KILLS = 4
# A replica's memory is judged when it lived this long after its first
# sync; the margin is justified at check_memory.
MEMORY_MIN_LIFE_S = 30
MEMORY_MARGIN_MB = 4.0
SAMPLE_EVERY_S = 1.0
PAGE = os.sysconf("SC_PAGESIZE")
SAN_REPORT = re.compile(r"ERROR: LeakSanitizer|ERROR: AddressSanitizer|runtime error:")


def emit(**kv):
    print(json.dumps({"bench": "operator_soak", **kv}), flush=True)


class Api:
    """The cluster's API through its front (nginx, TLS), with its token:
    the history's watches and lists, and the few reads the soak makes."""

    def __init__(self, state):
        with open(os.path.join(state, "token")) as f:
            self.token = f.read().strip()
        with open(os.path.join(state, "kubeconfig")) as f:
            server = re.search(r"server: https://([^:]+):(\d+)", f.read())
        self.host, self.port = server.group(1), int(server.group(2))
        self.ctx = ssl.create_default_context(cafile=os.path.join(state, "ca.crt"))

    def conn(self, timeout):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                           timeout=timeout)

    def headers(self):
        return {"Authorization": "Bearer " + self.token}

    def get(self, path, timeout=30):
        """(status, parsed body); raises OSError or HTTPException."""
        c = self.conn(timeout)
        try:
            c.request("GET", path, headers=self.headers())
            r = c.getresponse()
            raw = r.read()
            return r.status, json.loads(raw) if raw.startswith(b"{") else raw
        finally:
            c.close()

    def get_retrying(self, path, tries=100):
        """A GET that outlasts the injected error bursts."""
        for _ in range(tries):
            try:
                status, body = self.get(path)
                if status == 200:
                    return body
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"GET {path} kept failing")


def pod_summary(obj):
    md, st = obj["metadata"], obj.get("status") or {}
    labels, ann = md.get("labels") or {}, md.get("annotations") or {}
    return {"uid": md["uid"], "name": md["name"], "rv": int(md["resourceVersion"]),
            "job": labels.get("training.mwj.io/job-name"),
            "index": labels.get("training.mwj.io/replica-index"),
            "attempt": ann.get("training.mwj.io/restart-attempt"),
            "phase": st.get("phase"), "deleting": bool(md.get("deletionTimestamp"))}


def job_summary(obj):
    md, st = obj["metadata"], obj.get("status") or {}
    return {"uid": md["uid"], "name": md["name"], "rv": int(md["resourceVersion"]),
            "phase": st.get("phase"),
            "restarts": st.get("restarts") or {}}


class History:
    """Everything that happened to one resource during the soak, as a
    watch sees it, on a thread of its own.

    The watch is resumed from the last version seen whenever it ends (a
    drop, a time-out, an error burst): that loses nothing. After 410 Gone
    (a compaction) the changes since that version are lost, so it lists
    again and records the difference from what it knew as changes whose
    exact version is not known: each entry holds the range [lo, hi] of
    resourceVersions in which its change happened (lo == hi when the watch
    delivered it). On this cluster, as with etcd's revision, versions are
    one counter for every object, so they order the changes of all pods.
    """

    def __init__(self, api, path, summarize):
        self.api, self.path, self.summarize = api, path, summarize
        self.entries = []     # dicts: type, lo, hi, gap, and the summary
        self.known = {}       # uid -> the last summary seen
        self.rv = None        # the version to resume from; None: list first
        self.seen_to = 0      # every change up to this version is recorded
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.counts = {"watches": 0, "ended": 0, "expired": 0, "relists": 0,
                       "refused": 0, "io_errors": 0}
        self.thread = threading.Thread(target=self.run, daemon=True)

    def start(self):
        self.relist(initial=True)
        self.thread.start()

    def stop(self):
        """Stops the watch, then lists once more to record anything it had
        not delivered yet."""
        self.stopping.set()
        self.thread.join(timeout=15)
        self.relist()

    def run(self):
        while not self.stopping.is_set():
            try:
                if self.rv is None:
                    self.relist()
                else:
                    self.follow()
            except (OSError, http.client.HTTPException, ValueError):
                self.counts["io_errors"] += 1
                time.sleep(0.1)

    def follow(self):
        self.counts["watches"] += 1
        # A short read time-out, so that a stop is noticed; resuming
        # from self.rv after it loses nothing.
        c = self.api.conn(timeout=5)
        try:
            c.request("GET", f"{self.path}?watch=true&allowWatchBookmarks=true&"
                      f"resourceVersion={self.rv}&timeoutSeconds=60", headers=self.api.headers())
            r = c.getresponse()
            if r.status == 410:
                self.expire()
                return
            if r.status != 200:
                r.read()
                self.counts["refused"] += 1
                time.sleep(0.1)
                return
            for line in iter(r.readline, b""):
                ev = json.loads(line)
                obj = ev.get("object") or {}
                if ev.get("type") == "ERROR":
                    if obj.get("code") == 410:
                        self.expire()
                    return
                rv = int(obj["metadata"]["resourceVersion"])
                if ev["type"] != "BOOKMARK":
                    self.record(ev["type"], self.summarize(obj), rv, rv, gap=False)
                self.rv = self.seen_to = rv
                if self.stopping.is_set():
                    return
            self.counts["ended"] += 1
        finally:
            c.close()

    def expire(self):
        self.counts["expired"] += 1
        self.rv = None

    def record(self, etype, s, lo, hi, gap):
        with self.lock:
            prev = self.known.get(s["uid"])
            if etype == "DELETED":
                self.known.pop(s["uid"], None)
            else:
                self.known[s["uid"]] = s
            self.entries.append({**s, "type": etype, "lo": lo, "hi": hi, "gap": gap,
                                 "prev": prev})

    def relist(self, initial=False):
        status, body = self.api.get(self.path)
        if status != 200:
            self.counts["refused"] += 1
            time.sleep(0.1)
            return
        list_rv = int(body["metadata"]["resourceVersion"])
        if not initial:
            self.counts["relists"] += 1
        # What changed after seen_to and before the list is known only
        # to have happened in that range (for an object seen before: after
        # its last version seen).
        base = self.seen_to
        items = {o["metadata"]["uid"]: self.summarize(o) for o in body.get("items") or []}
        for uid, s in items.items():
            prev = self.known.get(uid)
            if prev is None:
                self.record("ADDED", s, base + 1, s["rv"], gap=not initial)
            elif prev["rv"] != s["rv"]:
                self.record("MODIFIED", s, max(base, prev["rv"]) + 1, s["rv"], gap=True)
        for uid, prev in list(self.known.items()):
            if uid not in items:
                self.record("DELETED", dict(prev, rv=list_rv), max(base, prev["rv"]) + 1,
                            list_rv, gap=True)
        self.rv = self.seen_to = list_rv

    def current(self):
        with self.lock:
            return list(self.known.values())


class Operator:
    """One replica of mwj-operator, with leader election, its log in the
    state folder, and its RSS sampled for the whole of its life."""

    def __init__(self, binary, state, n, kubeconfig, t0):
        self.name = f"op{n}"
        self.log = os.path.join(state, f"operator-{n}.log")
        self.t0 = t0
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [binary, "--kubeconfig", kubeconfig, "--leader-elect",
                 "--leader-election-namespace", NS,
                 "--leader-elect-lease-duration", f"{LEASE_S}s",
                 "--leader-elect-renew-deadline", f"{RENEW_S}s",
                 "--leader-elect-retry-period", f"{RETRY_S}s",
                 "--metrics-addr", "127.0.0.1:0", "--health-addr", "127.0.0.1:0"],
                stdout=out, stderr=subprocess.STDOUT)
        self.started = time.monotonic()
        self.metrics_port = wait_for("the metrics port", lambda: self._find(
            r"serving /metrics[^0-9]* port (\d+)"), timeout=30)
        self.health_port = wait_for("the health port", lambda: self._find(
            r"serving /healthz[^0-9]* port (\d+)"), timeout=30)
        self.synced = None     # when its caches were first filled
        self.rss = []          # (seconds since the soak began, bytes)
        self.end = None        # how it ended: "SIGKILL" or its exit status
        self.final_metrics = {}  # /metrics just before a SIGTERM at the end

    def _find(self, pattern):
        with open(self.log) as f:
            m = re.search(pattern, f.read())
        return m and m.group(1)

    def alive(self):
        return self.proc.poll() is None

    def ready(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz",
                                        timeout=2):
                return True
        except OSError:
            return False

    def metrics(self):
        """{(name, labels): value} from /metrics, through Prometheus'
        parser; {} when it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics",
                                        timeout=2) as r:
                text = r.read().decode()
        except OSError:
            return {}
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(text) for s in family.samples}

    def leads(self):
        return self.metrics().get(("mwj_operator_leader", ())) == 1

    def cached(self):
        """Objects in its informers' caches (None when it does not say)."""
        m = self.metrics()
        return sum(v for (n, _), v in m.items() if n == "mwj_operator_cached_objects") \
            if m else None

    def sample(self):
        """One RSS sample; the first one after 'caches filled' marks the
        first sync."""
        try:
            with open(f"/proc/{self.proc.pid}/statm") as f:
                rss = int(f.read().split()[1]) * PAGE
        except OSError:
            return
        if self.synced is None and self._find(r"(caches filled)"):
            self.synced = len(self.rss)
        self.rss.append((round(time.monotonic() - self.t0, 1), rss))

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        self.end = "SIGKILL"

    def terminate(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.end = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.end = "hung"
        return self.end


def job_yaml(name, steps):
    return f"""apiVersion: training.mwj.io/v1
kind: MultiWorkerJob
metadata: {{name: {name}}}
spec:
  workers: {WORKERS}
  checkpoint: {{volume: {{persistentVolumeClaim: {{claimName: ckpt}}}}}}
  template:
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: worker
        image: mwj-worker:latest
        args: [train, --model, cnn-pool, --epochs, '1', --steps-per-epoch, '{steps}',
               --batch-size, '32', --threads, '1', --save-freq, '50', --log-every, '100',
               --model-dir, /mwj/checkpoint/models/{name}]
"""


CLAIM = """apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ckpt}
spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}
"""


def kubectl(*args, stdin=None, tries=1):
    """kubectl, tried again through error bursts."""
    for i in range(tries):
        p = subprocess.run(["kubectl", *args], input=stdin, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode == 0:
            return p.stdout
        if i + 1 < tries:
            time.sleep(0.5)
    raise RuntimeError(f"kubectl {' '.join(args)}: {p.stderr.strip()}")


class Soak:
    def __init__(self, args, state):
        self.args = args
        self.state = state
        self.rng = random.Random(args.seed)
        self.t0 = time.monotonic()
        self.kubeconfig = os.path.join(state, "kubeconfig")
        self.api = Api(state)
        self.pods = History(self.api, PODS, pod_summary)
        self.jobs = History(self.api, JOBS_PATH, job_summary)
        self.ops = []
        self.ops_lock = threading.Lock()
        self.done = set()      # jobs seen Succeeded or Failed
        self.all_done = threading.Event()
        self.injected = {f: 0 for f in FAULTS}
        self.fault_info = {"errors_500_answered": 0, "errors_429_answered": 0,
                           "evictions": 0, "preempt_skipped": 0, "kill_skipped": 0,
                           "takeover_s": [], "two_leaders_seen": 0}
        self.kill_at = None
        self.deck = []
        self.fault_log = []    # what was injected when (UTC, as the logs)
        self.errors = []       # the soak's own failures on the way
        self.stopped = threading.Event()
        self.caches_emptied = False

    # --- operators ---

    def start_operator(self):
        with self.ops_lock:
            n = len(self.ops) + 1
        op = Operator(os.path.join(BIN_DIR, "mwj-operator"), self.state, n, self.kubeconfig,
                      self.t0)
        with self.ops_lock:
            self.ops.append(op)
        return op

    def live_ops(self):
        with self.ops_lock:
            return [op for op in self.ops if op.alive()]

    def sampler(self):
        """RSS of every live replica each second, and who leads: a takeover
        after a kill is timed here."""
        while not self.stopped.is_set():
            leaders = []
            for op in self.live_ops():
                op.sample()
                if op.leads():
                    leaders.append(op)
            if len(leaders) > 1:
                self.fault_info["two_leaders_seen"] += 1
            if self.kill_at is not None and leaders:
                self.fault_info["takeover_s"].append(round(time.monotonic() - self.kill_at, 2))
                self.kill_at = None
            self.stopped.wait(SAMPLE_EVERY_S)

    # --- faults ---

    def fault_sh(self, *args):
        p = subprocess.run([FAULT_SH, "-d", self.state, *args], text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return p.returncode == 0

    def errors_answered(self):
        try:
            status, body = self.api.get("/mwj-test/errors")
            return body.get("answered", 0) if status == 200 else 0
        except (OSError, http.client.HTTPException):
            return 0

    def inject(self, fault):
        """Injects one fault; returns what it did (a dict), or None when it
        could not be now (no target)."""
        if fault in ("drop_watches", "compact"):
            return {} if self.fault_sh(fault.replace("_", "-")) else None
        if fault.startswith("errors_"):
            code = fault.split("_")[1]
            seconds = round(self.rng.uniform(*BURST_S), 1)
            if not self.fault_sh("errors", code, str(seconds)):
                return None
            # One burst at a time; the count of answers is reset by the next.
            time.sleep(seconds + 0.2)
            answered = self.errors_answered()
            self.fault_info[f"errors_{code}_answered"] += answered
            return {"seconds": seconds, "answered": answered}
        if fault == "kill_leader":
            return self.kill_leader()
        return self.preempt()

    def kill_leader(self):
        if len(self.done) >= KILL_UNTIL_DONE * JOBS or \
                self.injected["kill_leader"] >= MAX_KILLS or self.kill_at is not None:
            self.fault_info["kill_skipped"] += 1
            return None
        live = self.live_ops()
        leaders = [op for op in live if op.leads()]
        standbys = [op for op in live if op not in leaders and op.ready()]
        if len(leaders) != 1 or not standbys:
            self.fault_info["kill_skipped"] += 1
            return None
        leaders[0].kill()
        self.kill_at = time.monotonic()
        return {"killed": leaders[0].name, "started": self.start_operator().name}

    def preempt(self):
        running = [p for p in self.pods.current() if p["phase"] == "Running" and
                   not p["deleting"] and p["job"] not in self.done]
        if not running:
            self.fault_info["preempt_skipped"] += 1
            return None
        pod = self.rng.choice(sorted(running, key=lambda p: p["name"]))
        evict = self.rng.random() < 1 / 3
        if not self.fault_sh("preempt", f"{NS}/{pod['name']}", *(["--evict"] if evict else [])):
            self.fault_info["preempt_skipped"] += 1
            return None
        self.fault_info["evictions"] += evict
        return {"pod": pod["name"], "attempt": pod["attempt"], "evict": evict}

    def faults(self):
        """Deals the deck, in a random order, one fault after a random gap,
        until every job is done."""
        while not self.all_done.wait(self.rng.uniform(*FAULT_GAP_S)):
            if not self.deck:
                self.deck = list(DECK)
                self.rng.shuffle(self.deck)
            fault = self.deck.pop()
            at = time.strftime("%H:%M:%S", time.gmtime())
            try:
                done = self.inject(fault)
            except (OSError, RuntimeError, TimeoutError) as e:
                self.errors.append(f"{at} {fault}: {e}")
                continue
            if done is not None:
                self.injected[fault] += 1
                self.fault_log.append({"at": at, "fault": fault, **done})
            elif fault == "preempt":
                self.deck.insert(0, fault)  # no pod to preempt now: later

    # --- jobs ---

    def run_jobs(self):
        """Keeps CONCURRENT jobs running until all JOBS are done."""
        names = [f"soak-{i:02d}" for i in range(JOBS)]
        steps = {n: self.rng.randint(*STEPS) for n in names}
        waiting, active = list(names), set()
        deadline = time.monotonic() + self.args.timeout
        while active or waiting:
            for s in self.jobs.current():
                if s["name"] in active and s["phase"] in ("Succeeded", "Failed"):
                    active.discard(s["name"])
                    self.done.add(s["name"])
            while waiting and len(active) < CONCURRENT:
                name = waiting.pop(0)
                kubectl("apply", "-f", "-", stdin=job_yaml(name, steps[name]), tries=40)
                active.add(name)
            if time.monotonic() > deadline:
                return sorted(active | set(waiting))
            time.sleep(0.5)
        return []

    # --- the run ---

    def run(self):
        kubectl("apply", "-f", os.path.join(ROOT, "crds"), tries=10)
        wait_for("the CRD", lambda: kubectl(
            "get", "crd", "multiworkerjobs.training.mwj.io", "-o",
            "jsonpath={.status.conditions[?(@.type==\"Established\")].status}") == "True",
            timeout=60)
        kubectl("apply", "-f", "-", stdin=CLAIM, tries=10)
        self.pods.start()
        self.jobs.start()
        first = self.start_operator()
        wait_for("a leader", first.leads, timeout=30)
        second = self.start_operator()
        wait_for("a ready standby", second.ready, timeout=30)
        sampler = threading.Thread(target=self.sampler, daemon=True)
        sampler.start()
        faults = threading.Thread(target=self.faults, daemon=True)
        t_jobs = time.monotonic()
        faults.start()
        late = self.run_jobs()
        self.all_done.set()
        faults.join()
        jobs_s = time.monotonic() - t_jobs
        time.sleep(2)
        self.final_jobs = self.api.get_retrying(JOBS_PATH)["items"]
        self.final_events = self.api.get_retrying(f"/api/v1/namespaces/{NS}/events")["items"]
        self.empty_caches()
        self.stopped.set()
        sampler.join()
        for op in self.live_ops():
            op.sample()
            op.final_metrics = op.metrics()
            op.terminate()
        time.sleep(1)
        self.pods.stop()
        self.jobs.stop()
        return late, jobs_s

    def empty_caches(self):
        """Deletes every job (the cluster's garbage collector deletes what
        they own) and waits until the replicas' caches are empty, as they
        were at their first sync, so that their memory then and now can be
        compared; then lets them idle a little."""
        kubectl("delete", "mwj", "--all", "--wait=false", tries=20)
        try:
            wait_for("the replicas' caches to empty", lambda: all(
                op.cached() == 0 for op in self.live_ops()), timeout=120, every=0.5)
            self.caches_emptied = True
        except TimeoutError as e:
            self.errors.append(str(e))
        time.sleep(3)


# --- the end checks ---

def check_succeeded_once(soak, names, late):
    """Each job: Succeeded now, entered once in the history and never left,
    and at most one Succeeded Event (a second would mean the operator
    decided twice; none can happen when an error burst ate the Event)."""
    final = {o["metadata"]["name"]: (o.get("status") or {}).get("phase")
             for o in soak.final_jobs}
    why = {o["metadata"]["name"]: c.get("message") for o in soak.final_jobs
           for c in (o.get("status") or {}).get("conditions") or []
           if c.get("type") == "Failed" and c.get("status") == "True"}
    events = {}
    for e in soak.final_events:
        inv = e.get("involvedObject") or {}
        if inv.get("kind") == "MultiWorkerJob" and e.get("reason") == "Succeeded":
            events[inv.get("name")] = events.get(inv.get("name"), 0) + e.get("count", 1)
    entered, left = {n: 0 for n in names}, {n: 0 for n in names}
    last = {}
    # The soak deletes the jobs at its end: a deletion is no phase change.
    for e in (e for e in soak.jobs.entries if e["type"] != "DELETED"):
        was, now = last.get(e["name"]), e["phase"]
        if now == "Succeeded" and was != "Succeeded":
            entered[e["name"]] = entered.get(e["name"], 0) + 1
        if was == "Succeeded" and now != "Succeeded":
            left[e["name"]] = left.get(e["name"], 0) + 1
        last[e["name"]] = now
    bad = {n: {"phase": final.get(n), "entered": entered[n], "left": left[n],
               "events": events.get(n, 0), **({"failed": why[n]} if n in why else {})}
           for n in names
           if final.get(n) != "Succeeded" or entered[n] != 1 or left[n] or events.get(n, 0) > 1}
    restarts = [(o.get("status") or {}).get("restarts") or {} for o in soak.final_jobs]
    return not bad and not late, {
        "jobs": len(names), "succeeded": sum(final.get(n) == "Succeeded" for n in names),
        "succeeded_events": sum(events.values()), "not_done_in_time": late, "bad": bad,
        "preemptions_counted": sum(r.get("preemptions", 0) for r in restarts),
        "failures_counted": sum(r.get("failures", 0) for r in restarts)}


def access_log_pod_creates(state):
    """Answers to pod creates, by status, from the API front's access log
    (as e2e/tests/operator.sh counts them)."""
    out = {}
    pat = re.compile(r'"POST /api/v1/namespaces/[^/]+/pods HTTP/[0-9.]+" (\d+)')
    with open(os.path.join(state, "nginx-access.log")) as f:
        for line in f:
            m = pat.search(line)
            if m:
                out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


def pod_lives(entries):
    """Each pod's life as two ranges of versions, [lo, hi] of its start
    and of its end, from the pod history (see check_overlap)."""
    lives = {}
    for e in entries:
        life = lives.get(e["uid"])
        if life is None:
            life = lives[e["uid"]] = {"name": e["name"], "key": (e["job"], e["index"]),
                                      "attempt": e["attempt"], "start": (e["lo"], e["hi"]),
                                      "end": None, "unsafe_delete": False}
        if life["end"] is None and (e["type"] == "DELETED" or
                                    e["phase"] in ("Succeeded", "Failed")):
            life["end"] = (e["lo"], e["hi"])
            # A delete that the watch saw (not in a gap) of a pod it last saw
            # running and not being deleted: a delete without a grace
            # period, after which a real kubelet may still be running the
            # pod's processes while a new pod of its index starts.
            prev = e["prev"]
            if e["type"] == "DELETED" and not e["gap"] and prev and \
                    prev["phase"] not in ("Succeeded", "Failed") and not prev["deleting"]:
                life["unsafe_delete"] = True
    return lives


def check_overlap(soak):
    """No two pods of one (job, worker index) ran at once.

    What "ran" means: a pod may have processes from the moment it is
    created (the node starts it as soon as it sees it) until it is known to
    have none: its phase is Succeeded or Failed (the node writes that after
    its containers exited), or it is deleted for good. A graceful deletion
    ends with the node's own delete, sent once the processes have stopped
    (SIGTERM, the grace period, SIGKILL), so the DELETED event marks their
    end; a delete without a grace period of a running pod does not (on a
    real node its processes outlive the object) and is counted as a
    violation of its own. Two pods of one name cannot exist at once, so
    what this catches is a replacement created under another name or
    started before its predecessor's processes were known to be gone.

    Two lives overlap for sure when both had started before either ended:
    max(start.hi) < min(end.lo). They are apart for sure when one ended
    before the other started: end.hi < start.lo. Anything else, possible
    only when both changes fell in the same gap of the history, cannot be
    decided and fails the check too, so that a gap never passes for a
    success."""
    lives = pod_lives(soak.pods.entries)
    inf = float("inf")
    by_key = {}
    for life in lives.values():
        by_key.setdefault(life["key"], []).append(life)
    overlaps, undecided, pairs = [], [], 0
    for key, group in by_key.items():
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                pairs += 1
                a_end, b_end = a["end"] or (inf, inf), b["end"] or (inf, inf)
                if max(a["start"][1], b["start"][1]) < min(a_end[0], b_end[0]):
                    overlaps.append((a["name"], a["attempt"], b["attempt"]))
                elif not (a_end[1] < b["start"][0] or b_end[1] < a["start"][0]):
                    undecided.append((a["name"], a["attempt"], b["attempt"]))
    unsafe = sorted(life["name"] for life in lives.values() if life["unsafe_delete"])
    gaps = sum(e["gap"] for e in soak.pods.entries)
    return not overlaps and not undecided and not unsafe, {
        "pods": len(lives), "indices": len(by_key), "pairs_checked": pairs,
        "overlapping": overlaps, "undecidable": undecided, "deleted_without_grace": unsafe,
        "changes_seen_through_gaps": gaps, "history": soak.pods.counts}


def check_history_complete(soak, creates):
    """The pod history holds every pod created: without this a pod that
    came and went inside a gap would escape the two checks around it. A
    create whose client went away before the answer (nginx logs 499: a
    leader killed mid-request) may have been carried out or not, so the
    pods seen lie between the 201s and the 201s and 499s together."""
    seen = len({e["uid"] for e in soak.pods.entries})
    answered, unanswered = creates.get("201", 0), creates.get("499", 0)
    return answered <= seen <= answered + unanswered, {
        "pods_in_history": seen, "pod_creates_201": answered,
        "pod_creates_499": unanswered}


def check_one_per_attempt(soak, creates):
    """No two pods for one (job, index, restart attempt). The operator
    creates pods under their fixed names, so a second create of a name
    still in use is refused with 409 AlreadyExists: those are counted,
    and do not fail the check (nothing was created), but are listed. For a
    duplicate, the operators' log lines of its creates say who made each."""
    uids = {}
    for e in soak.pods.entries:
        uids.setdefault((e["job"], e["index"], e["attempt"]), set()).add(e["uid"])
    dups = []
    for (job, index, attempt), u in sorted(uids.items()):
        if len(u) > 1:
            name = f"{job}-worker-{index}"
            dups.append({"pod": name, "attempt": attempt, "pods": len(u), "created_by": [
                f"{op.name} {line.split()[0]}" for op in soak.ops for line in open(op.log)
                if f"created pod {name} (attempt {attempt})" in line]})
    return not dups, {"attempts": len(uids), "duplicates": dups,
                      "creates_refused_409": creates.get("409", 0),
                      "creates_answered": creates}


def check_memory(soak):
    """The replicas alive at the end, that lived at least
    MEMORY_MIN_LIFE_S after their first sync: RSS at the end at most
    MEMORY_MARGIN_MB above their RSS right after that sync. Both are taken
    with the same, empty caches (the soak deletes its jobs and waits for
    the caches to empty before the last sample; the replicas killed on the
    way are shown, not judged).

    The margin is for what glibc's malloc keeps once, not for what grows:
    each thread allocates in an arena of its own, and the pages of an
    arena's peak mostly stay resident after they are freed. A replica
    that starts to lead gains 1.5 to 2.2 MB within seconds (four reconcile
    threads' arenas, the connections and buffers of its writes: seen in
    every run, before the first job too), a standby 0.5 MB; a relist of
    every pod after a compaction parses the whole list at once (with 40
    jobs, repeated relists lifted RSS by 2 MB, then 30 more by 20 KB, the
    heap in use unchanged). Each row gives the reconcile passes and API
    requests of the replica, so the margin can be read as a leak per pass
    or per request that this check would catch."""
    out, ok, judged = [], True, 0
    for op in soak.ops:
        if op.synced is None or not op.rss:
            continue
        t_sync, base = op.rss[op.synced]
        t_end, end = op.rss[-1]
        life = t_end - t_sync
        m = op.final_metrics
        row = {"operator": op.name, "ended": op.end, "life_after_sync_s": round(life, 1),
               "rss_mb_after_sync": round(base / 2**20, 2), "rss_mb_end": round(end / 2**20, 2),
               "rss_mb_max": round(max(r for _, r in op.rss) / 2**20, 2),
               "reconciles": int(m.get(("mwj_operator_reconcile_total", ()), 0)),
               "api_requests": int(sum(v for (n, _), v in m.items()
                                       if n == "mwj_operator_api_requests_total")),
               "samples": [[t, round(r / 2**20, 2)] for t, r in op.rss[::10] + op.rss[-1:]]}
        if op.end != "SIGKILL" and life >= MEMORY_MIN_LIFE_S:
            judged += 1
            row["ok"] = end <= base + MEMORY_MARGIN_MB * 2**20
            ok = ok and row["ok"]
        out.append(row)
    return ok and judged > 0 and soak.caches_emptied, {
        "judged": judged, "margin_mb": MEMORY_MARGIN_MB, "min_life_s": MEMORY_MIN_LIFE_S,
        "caches_emptied": soak.caches_emptied, "replicas": out}


def save_records(soak, state):
    """The soak's own records, beside the cluster's and operators' logs in
    the state folder: what was injected when, and the two histories."""
    for name, rows in (("faults.jsonl", soak.fault_log),
                       ("history-pods.jsonl", soak.pods.entries),
                       ("history-jobs.jsonl", soak.jobs.entries)):
        with open(os.path.join(state, name), "w") as f:
            for row in rows:
                f.write(json.dumps({k: v for k, v in row.items() if k != "prev"}) + "\n")


def log_evidence(soak):
    """What the operators' logs say they went through."""
    pats = {"watch_expired_410": r"expired \(410 Gone", "watch_resumed": r"resuming from",
            "watch_restarted": r"restarting the watch", "became_leader": r"became the leader",
            "lost_lease": r"lost the Lease", "pod_creates_logged": r"created pod ",
            "still_terminating": r"still terminating",
            "settled_by_relist": r"the pods' relist settles",
            "gone_before_seen": r"deleted before the operator saw it",
            "create_unconfirmed": r"CreateUnconfirmed"}
    out = {k: 0 for k in pats}
    for op in soak.ops:
        with open(op.log) as f:
            text = f.read()
        for k, p in pats.items():
            out[k] += len(re.findall(p, text))
    return out


def leak_run(binary):
    """e2e/tests/operator.sh with the sanitizer build of the operator:
    every scenario, the operator's SIGTERM exit (where LeakSanitizer
    reports, and makes the exit status non-zero) included; then its log
    is searched for any sanitizer report."""
    env = dict(os.environ, MWJ_OPERATOR_BIN=binary, MWJ_E2E_KEEP="1",
               MWJ_WORKER_BIN=os.path.join(BIN_DIR, "mwj-worker"),
               ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:" +
               os.environ.get("ASAN_OPTIONS", ""),
               UBSAN_OPTIONS="print_stacktrace=1:" + os.environ.get("UBSAN_OPTIONS", ""))
    t = time.monotonic()
    p = subprocess.run([os.path.join(ROOT, "e2e", "tests", "operator.sh")], env=env, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines = p.stdout.strip().splitlines()
    kept = re.search(r"^kept (\S+)$", p.stdout, re.M)
    reports, excerpt = 0, []
    if kept:
        for name in sorted(os.listdir(kept.group(1))):
            if name.endswith(".log") and "operator" in name:
                with open(os.path.join(kept.group(1), name), errors="replace") as f:
                    for line in f:
                        if SAN_REPORT.search(line):
                            reports += 1
                            excerpt.append(line.strip()[:200])
    summary = next((ln for ln in reversed(lines) if re.fullmatch(r"\d+ passed, \d+ failed", ln)),
                   None)
    failed = [ln for ln in lines if ln.startswith("FAIL")]
    # Where LeakSanitizer speaks: at the operator's exit, which must be 0.
    # A scenario of the e2e that fails for another reason (its timings
    # under ASan, say) is shown, and is for `make test` to judge.
    exited = any(re.fullmatch(r"ok   the operator stops on SIGTERM with exit status 0( \(\d+ s\))?", ln)
                 for ln in lines)
    ok = kept is not None and exited and reports == 0
    if ok:
        shutil.rmtree(kept.group(1), ignore_errors=True)
    return ok, {"e2e": "e2e/tests/operator.sh", "operator": binary, "e2e_result": summary,
                "e2e_failed": failed, "sanitizer_reports": reports, "excerpt": excerpt[:10],
                "wall_s": round(time.monotonic() - t, 1),
                "kept": None if ok or not kept else kept.group(1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None, help="replays a run's random choices")
    # The jobs take about 100 s here (2 cores); a stall much longer than
    # that is a finding, reported as jobs not done in time.
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds the jobs may take, faults and all (default 300)")
    ap.add_argument("--leak-operator", metavar="BIN",
                    help="also run e2e/tests/operator.sh with this sanitizer build")
    ap.add_argument("--keep", action="store_true", help="keep the state folder")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2**31)
    t_start = time.monotonic()
    state = tempfile.mkdtemp(prefix="mwj-soak-")
    emit(phase="start", seed=args.seed, jobs=JOBS, workers=WORKERS, concurrent=CONCURRENT,
         state=state, replay=f"bench/operator_soak.py --seed {args.seed}")
    subprocess.run([os.path.join(ROOT, "e2e", "cluster", "up.sh"), state], check=True,
                   stdout=subprocess.DEVNULL,
                   env=dict(os.environ, MWJ_WORKER_BIN=os.path.join(BIN_DIR, "mwj-worker")))
    os.environ["KUBECONFIG"] = os.path.join(state, "kubeconfig")
    soak = Soak(args, state)
    checks = []
    try:
        try:
            late, jobs_s = soak.run()
        except (OSError, RuntimeError, TimeoutError, subprocess.SubprocessError) as e:
            soak.errors.append(f"the soak stopped: {e!r}")
            late = None
        if late is not None:
            names = [f"soak-{i:02d}" for i in range(JOBS)]
            creates = access_log_pod_creates(state)
            ok, info = check_succeeded_once(soak, names, late)
            checks.append(("succeeded_once", ok, dict(info, jobs_s=round(jobs_s, 1))))
            checks.append(("history_complete", *check_history_complete(soak, creates)))
            checks.append(("one_pod_per_index", *check_overlap(soak)))
            checks.append(("one_pod_per_attempt", *check_one_per_attempt(soak, creates)))
            checks.append(("memory", *check_memory(soak)))
            ends = {op.name: op.end for op in soak.ops}
            checks.append(("sigterm", all(e in (0, "SIGKILL") for e in ends.values()),
                           {"ended": ends}))
            emit(phase="operator_logs", **log_evidence(soak))
        if soak.errors:
            checks.append(("soak_errors", False, {"errors": soak.errors}))
        save_records(soak, state)
    finally:
        soak.pods.stopping.set()
        soak.jobs.stopping.set()
        for op in soak.ops:
            if op.alive():
                op.proc.kill()
        subprocess.run([os.path.join(ROOT, "e2e", "cluster", "down.sh"), state],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if args.leak_operator:
        checks.append(("leaks", *leak_run(args.leak_operator)))
    passed = all(ok for _, ok, _ in checks)
    for name, ok, info in checks:
        emit(phase="check", check=name, ok=ok, **info)
    for f in FAULTS:
        extra = {k: soak.fault_info[k] for k in FAULT_INFO[f]}
        emit(phase="fault", fault=f, injected=soak.injected[f],
             survived=soak.injected[f] if passed else 0, **extra)
    if passed and not args.keep:
        shutil.rmtree(state, ignore_errors=True)
        state = None
    n_ok = sum(ok for _, ok, _ in checks)
    emit(phase="total", seed=args.seed, wall_s=round(time.monotonic() - t_start, 1),
         state_kept=state)
    print(f"{n_ok} passed, {len(checks) - n_ok} failed")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
