#!/usr/bin/python3
"""Side by side: mwj-worker's training loop against PyTorch, same model,
same batch, same thread budget, on the same machine in the same run.

PyTorch is measured at its defaults and at its best: with glibc malloc
thresholds that stop it page-faulting every step and the OpenBLAS kernels
mwj runs with (benchlib.tuned_env), and, for two cores, with
every split of the cores between torch's own threads and OpenBLAS's (Debian's
torch runs its dense layers in OpenBLAS). Every configuration runs --reps
times, interleaved with mwj, and the median counts. One JSON line per result,
then one "ratio" line per model and thread count: mwj's median over the best
PyTorch configuration's median.

usage: compare_torch.py [--reps N] [--steps N] [--models cnn,cnn-pool] [--threads 1,2]
"""
import argparse
import json
import os
import statistics
import sys

from benchlib import BIN_DIR, HERE, run_json, tuned_env


def torch_configs(threads, tuned):
    """(label, torch threads, OpenBLAS threads, extra env) to try."""
    splits = [(threads, threads)]
    if threads == 2:
        splits += [(1, 2), (2, 1)]
    for name, env in (("default", {}), ("tuned", tuned)):
        for t, b in splits:
            label = f"malloc={name} torch_threads={t} blas_threads={b}"
            if "OPENBLAS_CORETYPE" in env:
                label += " blas_core=" + env["OPENBLAS_CORETYPE"]
            yield label, t, b, env


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--models", default="cnn,cnn-pool")
    p.add_argument("--threads", default="1,2")
    a = p.parse_args()
    tuned = tuned_env()
    for model in a.models.split(","):
        for threads in [int(t) for t in a.threads.split(",")]:
            mwj, torch = [], {}
            for _ in range(a.reps):
                mwj += run_json([os.path.join(BIN_DIR, "bench_train"), "--steps",
                                 str(a.steps), "--model", model, "--threads",
                                 str(threads)], {})
                for label, t, b, env in torch_configs(threads, tuned):
                    torch.setdefault(label, []).extend(run_json(
                        ["/usr/bin/python3", os.path.join(HERE, "torch_train.py"),
                         "--model", model, "--threads", str(t), "--blas-threads",
                         str(b), "--steps", str(a.steps)], env))
            mwj_med = statistics.median(r["samples_per_s"] for r in mwj)
            best_label, best_med, default_med = None, 0.0, None
            for label, runs in torch.items():
                med = statistics.median(r["samples_per_s"] for r in runs)
                print(json.dumps({"bench": "torch", "model": model, "threads": threads,
                                  "config": label, "reps": len(runs),
                                  "samples_per_s_median": med,
                                  "samples_per_s_all": [r["samples_per_s"] for r in runs]}))
                if label.startswith("malloc=default") and default_med is None:
                    default_med = med
                if med > best_med:
                    best_label, best_med = label, med
            print(json.dumps({"bench": "ratio", "model": model, "batch": 64,
                              "threads": threads, "mwj_samples_per_s_median": mwj_med,
                              "mwj_samples_per_s_all": [r["samples_per_s"] for r in mwj],
                              "torch_default_samples_per_s": default_med,
                              "torch_best_samples_per_s": best_med,
                              "torch_best_config": best_label,
                              "ratio_vs_best": round(mwj_med / best_med, 3),
                              "ratio_vs_default": round(mwj_med / default_med, 3)}))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
