#!/usr/bin/python3
"""Side by side: mwj's ring all-reduce against Open MPI's MPI_Allreduce over
TCP on loopback, and against a plain simultaneous two-way TCP exchange of the
same bytes (the least any two-worker all-reduce over TCP must cost).

Every benchmark runs --reps times, interleaved, so that a slow moment of the
machine lands on all of them alike; each run reports a median per size, and
the median of those counts. One JSON line per (ranks, bytes) with the three
side by side, then one "ratio" line per rank count for the `cnn` gradient
(11,082,536 bytes): ring time over MPI time and over the plain exchange
(below 1: the ring is faster).

MPI runs with the TCP transport only (no shared memory), oversubscribed when
there are more ranks than cores. bench_allreduce (the ring) is skipped if it
is not built.

usage: compare_allreduce.py [--reps N] [--ranks 2,4]
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BIN_DIR = os.environ.get("MWJ_BIN_DIR", os.path.join(HERE, "..", "build", "bin"))
CNN_BYTES = 2770634 * 4
BENCH_NAMES = {"mpi": "mpi_allreduce", "ring": "ring_allreduce", "tcp_exchange": "tcp_exchange"}
MPIRUN_TCP = ["--oversubscribe", "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
              "--mca", "btl_tcp_if_include", "lo"]


def run_json(cmd, timeout):
    """Runs cmd; returns (its JSON lines, None) or (None, why it failed).

    The benchmarks fork their ranks, so each runs in a session of its own
    and a timeout kills the whole process group, not just the parent."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, f"timed out after {timeout:g}s"
    finally:
        if p.poll() is None:  # interrupted: leave nothing behind
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    if p.returncode != 0:
        return None, f"exit status {p.returncode}: {err.strip()[-500:]}"
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")], None


def executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def benchmarks(ranks):
    """(name, ranks, command) for everything that can run here, and a list
    of skip notices for the rest."""
    mpi_bin = os.path.join(BIN_DIR, "mpi_allreduce")
    ring_bin = os.path.join(BIN_DIR, "bench_allreduce")
    tcp_bin = os.path.join(BIN_DIR, "bench_tcp_exchange")
    mpirun = shutil.which("mpirun")
    runs, skipped = [], []
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    for n in ranks:
        if mpirun and executable(mpi_bin):
            runs.append(("mpi", n, [mpirun] + root + MPIRUN_TCP + ["-np", str(n), mpi_bin]))
        elif n == ranks[0]:
            skipped.append({"bench": "mpi_allreduce", "skipped": "mpirun or " + mpi_bin +
                            " missing; see the build command in bench/mpi_allreduce.c"})
        if executable(ring_bin):
            runs.append(("ring", n, [ring_bin, "--ranks", str(n)]))
        elif n == ranks[0]:
            skipped.append({"bench": "ring_allreduce", "skipped": ring_bin + " not built"})
        if n == 2:  # an exchange has two ends
            if executable(tcp_bin):
                runs.append(("tcp_exchange", 2, [tcp_bin]))
            else:
                skipped.append({"bench": "tcp_exchange", "skipped": tcp_bin + " not built"})
    return runs, skipped


def median_or_none(xs):
    return statistics.median(xs) if xs else None


def ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--ranks", default="2,4")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per benchmark run")
    a = p.parse_args()
    ranks = [int(n) for n in a.ranks.split(",")]
    if a.reps < 1 or min(ranks) < 2:
        p.error("--reps must be >= 1 and every rank count >= 2")
    runs, skipped = benchmarks(ranks)
    for s in skipped:
        print(json.dumps(s))
    ms = {}  # (name, ranks, bytes) -> [ms_median of each run]
    failures = 0
    for _ in range(a.reps):
        for name, n, cmd in runs:
            lines, why = run_json(cmd, a.timeout)
            if why:  # keep going: the other baselines are still worth having
                failures += 1
                print(json.dumps({"bench": BENCH_NAMES[name], "ranks": n, "failed": why,
                                  "command": " ".join(cmd)}), flush=True)
                continue
            for r in lines:
                ms.setdefault((name, n, r["bytes"]), []).append(r["ms_median"])
    for n in ranks:
        for b in sorted({k[2] for k in ms if k[1] == n}):
            line = {"bench": "allreduce_compare", "ranks": n, "bytes": b}
            if b == CNN_BYTES:
                line["label"] = "cnn"
            for name in ("ring", "mpi", "tcp_exchange"):
                runs_ms = ms.get((name, n, b))
                if runs_ms is None:
                    continue
                med = statistics.median(runs_ms)
                line[f"{name}_ms_median"] = med
                line[f"{name}_ms_all"] = runs_ms
                if name == "tcp_exchange":
                    line[f"{name}_gbs"] = round(b / med / 1e6, 4)
                else:
                    line[f"{name}_busbw_gbs"] = round(2 * (n - 1) / n * b / med / 1e6, 4)
            print(json.dumps(line))
        ring = median_or_none(ms.get(("ring", n, CNN_BYTES)))
        mpi = median_or_none(ms.get(("mpi", n, CNN_BYTES)))
        tcp = median_or_none(ms.get(("tcp_exchange", n, CNN_BYTES)))
        out = {"bench": "ratio", "ranks": n, "bytes": CNN_BYTES, "label": "cnn",
               "ring_ms": ring, "mpi_ms": mpi, "ring_over_mpi": ratio(ring, mpi)}
        if n == 2:
            out.update(tcp_exchange_ms=tcp, ring_over_tcp_exchange=ratio(ring, tcp))
        print(json.dumps(out))
        sys.stdout.flush()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
