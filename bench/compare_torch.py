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

A model is named as in examples/models/ (cnn, cnn-pool, cnn-deep); mwj's
bench_train gets the built-in model of that name where the build embeds
one (cnn, cnn-pool) and the file's path otherwise (cnn-deep). Both sides
train with the optimizer the file's compile config names (cnn, cnn-pool:
SGD; cnn-deep: Adam), mwj because it compiles the model as the file says
and torch_train.py because it is given the same optimizer and
hyper-parameters here; a run whose two sides report different optimizers
is an error.

usage: compare_torch.py [--reps N] [--steps N] [--models cnn,cnn-pool,cnn-deep]
                        [--threads 1,2]
"""
import argparse
import json
import os
import statistics
import sys

from benchlib import BIN_DIR, HERE, run_json, tuned_env

MODELS_DIR = os.path.join(HERE, "..", "examples", "models")
# The models the build compiles into the binaries (KERAS_MODELS in the
# Makefile): bench_train takes these by name, as it always has.
BUILTIN = ("cnn", "cnn-pool")


def mwj_model(name):
    """What bench_train's --model gets for the model of that name."""
    return name if name in BUILTIN else os.path.join(MODELS_DIR, name + ".json")


def torch_optimizer(name):
    """torch_train.py's optimizer flags for the optimizer the model file's
    compile config names. Raises SystemExit for one torch_train.py cannot
    run as Keras would."""
    path = os.path.join(MODELS_DIR, name + ".json")
    with open(path) as f:
        opt = json.load(f)["compile_config"]["optimizer"]
    kind, c = opt["class_name"].lower(), opt["config"]
    for key in ("weight_decay", "clipnorm", "global_clipnorm", "clipvalue",
                "loss_scale_factor", "gradient_accumulation_steps"):
        if c.get(key) is not None:
            sys.exit(f"compare_torch.py: {path}: optimizer {key} is not supported")
    if c.get("use_ema") or c.get("amsgrad") or c.get("nesterov"):
        sys.exit(f"compare_torch.py: {path}: optimizer options beyond the plain rule")
    args = ["--optimizer", kind, "--lr", repr(float(c["learning_rate"]))]
    if kind == "sgd":
        return args + ["--momentum", repr(float(c.get("momentum", 0.0)))]
    if kind == "adam":
        return args + ["--beta-1", repr(float(c["beta_1"])), "--beta-2",
                       repr(float(c["beta_2"])), "--epsilon", repr(float(c["epsilon"]))]
    sys.exit(f"compare_torch.py: {path}: optimizer {opt['class_name']} is not in torch_train.py")


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
    p.add_argument("--models", default="cnn,cnn-pool,cnn-deep")
    p.add_argument("--threads", default="1,2")
    a = p.parse_args()
    tuned = tuned_env()
    for model in a.models.split(","):
        opt_args = torch_optimizer(model)
        for threads in [int(t) for t in a.threads.split(",")]:
            mwj, torch = [], {}
            for _ in range(a.reps):
                mwj += run_json([os.path.join(BIN_DIR, "bench_train"), "--steps",
                                 str(a.steps), "--model", mwj_model(model), "--threads",
                                 str(threads)], {})
                for label, t, b, env in torch_configs(threads, tuned):
                    torch.setdefault(label, []).extend(run_json(
                        ["/usr/bin/python3", os.path.join(HERE, "torch_train.py"),
                         "--model", model, "--threads", str(t), "--blas-threads",
                         str(b), "--steps", str(a.steps)] + opt_args, env))
            optimizers = {r["optimizer"] for r in mwj + sum(torch.values(), [])}
            if len(optimizers) != 1:
                sys.exit(f"compare_torch.py: {model}: mwj and torch trained with "
                         f"different optimizers: {sorted(optimizers)}")
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
                              "threads": threads, "optimizer": optimizers.pop(),
                              "mwj_samples_per_s_median": mwj_med,
                              "mwj_samples_per_s_all": [r["samples_per_s"] for r in mwj],
                              "torch_default_samples_per_s": default_med,
                              "torch_best_samples_per_s": best_med,
                              "torch_best_config": best_label,
                              "ratio_vs_best": round(mwj_med / best_med, 3),
                              "ratio_vs_default": round(mwj_med / default_med, 3)}))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
