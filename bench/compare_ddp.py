#!/usr/bin/python3
"""Side by side: mwj's data-parallel training on 2 workers against PyTorch
DDP with the gloo backend, same model, same per-worker batch (64), one
thread per worker, both over TCP on 127.0.0.1, in the same run.

mwj is bench_train --workers 2 (two processes, each with its own TF_CONFIG,
gradients summed by the ring all-reduce behind the backward pass). Beside it,
bench_train --workers 2 --independent: the same two processes sharing the
machine, each training alone with no communication at all, which is the
most any data-parallel implementation could reach here. PyTorch
is torch_ddp.py, at its defaults and at its best: with the malloc
thresholds that stop it page-faulting every step and the OpenBLAS kernels
mwj runs with (benchlib.tuned_env). Each runs --reps times, interleaved,
and the medians count. Alongside, mwj on one worker at one thread gives the
scaling. One JSON line per result, then a "ratio" line per model, which also
says how far each side is from that no-communication ceiling.

usage: compare_ddp.py [--reps N] [--steps N] [--models cnn,cnn-pool]
"""
import argparse
import json
import os
import statistics
import sys

from benchlib import BIN_DIR, HERE, run_json, tuned_env


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--models", default="cnn,cnn-pool")
    a = p.parse_args()
    bench = os.path.join(BIN_DIR, "bench_train")
    tuned = tuned_env()  # malloc thresholds, and the OpenBLAS kernels mwj runs with
    for model in a.models.split(","):
        runs = {"mwj_2_workers": [], "mwj_1_worker": [], "no_comm_2_independent": [],
                "ddp_malloc_default": [], "ddp_malloc_tuned": []}
        two = [bench, "--model", model, "--threads", "1", "--workers", "2",
               "--steps", str(a.steps)]
        for _ in range(a.reps):
            for r in run_json(two, {}, 900):
                runs["mwj_2_workers"].append(r["global_samples_per_s"])
            for r in run_json(two + ["--independent"], {}, 900):
                runs["no_comm_2_independent"].append(r["global_samples_per_s"])
            for r in run_json([bench, "--model", model, "--threads", "1",
                               "--steps", str(a.steps)], {}, 900):
                runs["mwj_1_worker"].append(r["samples_per_s"])
            for label, env in (("ddp_malloc_default", {}), ("ddp_malloc_tuned", tuned)):
                for r in run_json(["/usr/bin/python3", os.path.join(HERE, "torch_ddp.py"),
                                   "--model", model, "--steps", str(a.steps)], env, 900):
                    runs[label].append(r["global_samples_per_s"])
        med = {k: statistics.median(v) for k, v in runs.items()}
        for k, v in runs.items():
            print(json.dumps({"bench": "ddp_compare", "model": model, "config": k,
                              "workers": 1 if k == "mwj_1_worker" else 2,
                              "threads_per_worker": 1, "batch_per_worker": 64,
                              "global_samples_per_s_median": med[k],
                              "global_samples_per_s_all": v}))
        best = max(med["ddp_malloc_default"], med["ddp_malloc_tuned"])
        ceiling = med["no_comm_2_independent"]
        print(json.dumps({"bench": "ratio", "what": "mwj 2 workers / PyTorch DDP gloo 2 workers",
                          "model": model, "mwj_global_samples_per_s": med["mwj_2_workers"],
                          "ddp_best_global_samples_per_s": best,
                          "ratio_vs_ddp_best": round(med["mwj_2_workers"] / best, 3),
                          "ratio_vs_ddp_tuned": round(med["mwj_2_workers"] /
                                                      med["ddp_malloc_tuned"], 3),
                          "scaling_2_workers_over_1": round(med["mwj_2_workers"] /
                                                            med["mwj_1_worker"], 3),
                          "no_comm_ceiling_global_samples_per_s": ceiling,
                          "mwj_share_of_ceiling": round(med["mwj_2_workers"] / ceiling, 3),
                          "ddp_best_share_of_ceiling": round(best / ceiling, 3),
                          "ceiling_over_ddp_best": round(ceiling / best, 3)}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
