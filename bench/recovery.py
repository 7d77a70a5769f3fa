#!/usr/bin/python3
"""Recovery time: how long training stops when a worker is killed.

Two mwj-worker processes on 127.0.0.1 (as two pods would be), each with its
own TF_CONFIG, train `cnn` at batch 64, one thread each, with backups every
100 steps. This script plays the operator: once the chief has passed a
step, it kills one worker with SIGKILL and starts it again at once with the
same TF_CONFIG and flags. The recovery time is from the kill to the end of
the first step completed after the ring has formed again (the survivor's
log line "first step after resynchronizing done"), minus the time this
script itself took to start the replacement. Each kill is one sample; the
victim alternates between a non-chief and the chief.

Printed per sample: the recovery time and its parts, from the log lines'
timestamps: the replacement's start-up until it has loaded the data and
its backup, the rendezvous, and the state handed over plus the first step.

With --key, every worker holds the job's key (--job-secret-file, 32 random
bytes, as the operator mounts it), so every rendezvous, the replacement's
included, runs the authenticated handshake.

usage: recovery.py [--kills N] [--model cnn] [--key]
With RECOVERY_KEEP_LOGS=1 the workers' logs are copied to /tmp/recovery-logs.
"""
import argparse
import datetime
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import BIN_DIR

DATA = os.environ.get("MWJ_TEST_DATA", "/usr/share/datasets/fashion-mnist")
WORKER = os.path.join(BIN_DIR, "mwj-worker")


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def tf_config(ports, i):
    return json.dumps({"cluster": {"worker": ["127.0.0.1:%d" % p for p in ports]},
                       "task": {"type": "worker", "index": i}})


def log_events(path):
    """The JSON log lines of a worker's stderr file, as (unix time, msg)."""
    events = []
    with open(path) as f:
        for line in f:
            if not line.startswith("{"):
                continue
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if "ts" not in o or "msg" not in o:
                continue
            ts = datetime.datetime.strptime(o["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
            ts = ts.replace(tzinfo=datetime.timezone.utc).timestamp()
            events.append((ts, o["msg"]))
    return events


def first(events, text, after):
    for ts, msg in events:
        if ts >= after and text in msg:
            return ts
    return None


class Job:
    def __init__(self, workdir, model, key):
        self.dir = workdir
        self.key = key
        self.ports = free_ports(2)
        self.procs = [None, None]
        self.runs = [0, 0]
        self.args = [WORKER, "train", "--model", model, "--threads", "1",
                     "--batch-size", "64", "--steps-per-epoch", "1000000",
                     "--data-dir", DATA, "--backup-dir", os.path.join(workdir, "backups"),
                     "--save-freq", "100", "--log-format", "json", "--log-level", "info",
                     "--log-every", "10"]
        if key:
            path = os.path.join(workdir, "job-key")
            with open(path, "wb") as f:
                f.write(os.urandom(32))
            self.args += ["--job-secret-file", path]

    def start(self, i):
        env = dict(os.environ, TF_CONFIG=tf_config(self.ports, i))
        self.runs[i] += 1
        err = open(self.err_path(i), "w")
        out = open(os.path.join(self.dir, "w%d.out" % i), "w")
        self.procs[i] = subprocess.Popen(self.args, env=env, stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL)
        err.close()
        out.close()

    def err_path(self, i, run=None):
        return os.path.join(self.dir, "w%d.err.%d" % (i, self.runs[i] if run is None else run))

    def chief_step(self):
        step = 0
        with open(os.path.join(self.dir, "w0.out")) as f:
            for line in f:
                if line.startswith("{"):
                    try:
                        step = max(step, json.loads(line).get("global_step", 0))
                    except ValueError:
                        pass
        return step

    def stop(self):
        for p in self.procs:
            if p and p.poll() is None:
                p.kill()
                p.wait()


def wait_step(job, step, timeout=600):
    deadline = time.time() + timeout
    while job.chief_step() < step:
        for i, p in enumerate(job.procs):
            if p.poll() is not None:
                sys.exit("worker %d exited %d; see %s" % (i, p.returncode, job.err_path(i)))
        if time.time() > deadline:
            sys.exit("no step %d in %d s" % (step, timeout))
        time.sleep(0.05)


def one_kill(job, victim):
    survivor = 1 - victim
    t_kill = time.time()
    job.procs[victim].kill()
    job.procs[victim].wait()
    job.start(victim)
    t_restart = time.time()
    deadline = time.time() + 300
    while True:
        ev = log_events(job.err_path(survivor))
        done = first(ev, "first step after resynchronizing done", t_kill)
        if done:
            break
        if time.time() > deadline:
            sys.exit("no recovery in 300 s; see %s" % job.err_path(survivor))
        time.sleep(0.05)
    new = log_events(job.err_path(victim))
    loaded = first(new, "going on from step", 0) or first(new, "restored the backup", 0) \
        or first(new, "no backup in", 0)
    formed = first(new, "ring of 2 formed", 0)
    restart = t_restart - t_kill
    total = done - t_kill - restart
    r = {"bench": "recovery", "model": job.args[3], "workers": 2, "key": job.key,
         "victim": "chief" if victim == 0 else "worker",
         "recovery_s": round(total, 3), "supervisor_restart_delay_s": round(restart, 3)}
    if loaded and formed:
        start = first(new, "config:", 0)
        r["replacement_startup_s"] = round((start or t_restart) - t_restart, 3)
        r["data_and_backup_load_s"] = round(first(new, "model ", 0) - (start or t_restart), 3) \
            if first(new, "model ", 0) else None
        r["rendezvous_done_after_restart_s"] = round(formed - t_restart, 3)
        r["first_step_after_ring_s"] = round(done - formed, 3)
    print(json.dumps(r))
    sys.stdout.flush()
    return total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kills", type=int, default=6)
    p.add_argument("--model", default="cnn")
    p.add_argument("--key", action="store_true", help="give the workers a job key")
    a = p.parse_args()
    samples = []
    with tempfile.TemporaryDirectory(prefix="mwj-recovery-") as d:
        job = Job(d, a.model, a.key)
        try:
            for i in range(2):
                job.start(i)
            step = 150
            for k in range(a.kills):
                wait_step(job, step)
                samples.append(one_kill(job, 1 if k % 2 == 0 else 0))
                # A restarted chief's output starts again: go by what it prints.
                wait_step(job, 1)
                step = job.chief_step() + 150
        finally:
            job.stop()
            if os.environ.get("RECOVERY_KEEP_LOGS"):
                os.system("cp -r %s /tmp/recovery-logs" % d)
    print(json.dumps({"bench": "recovery_summary", "model": a.model, "key": a.key,
                      "kills": len(samples),
                      "recovery_s_median": round(statistics.median(samples), 3),
                      "recovery_s_max": round(max(samples), 3), "target_s": 2.0}))


if __name__ == "__main__":
    main()
