#!/usr/bin/python3
"""End-to-end accuracy against an independent implementation: mwj-worker
and PyTorch train the same Keras model JSON on the same data, with the same
optimizer, loss, batch size and epochs, and both are evaluated on the test
split. The question is whether mwj's training reaches what PyTorch reaches,
not whether the weights agree (test_reference.c checks those, step by
step): each side draws its own initial weights, data order and dropout
masks, so the per-seed results differ, and the difference of the means is
set against the run-to-run spread of each side.

The models:
  cnn         examples/models/cnn.json (TensorFlow's multi-worker tutorial:
              SGD 0.001, sparse CE from logits) on Fashion-MNIST, pixels
              rescaled by 1/255; metric: test accuracy;
  cnn-deep    examples/models/cnn-deep.json (BatchNormalization, Dropout,
              same padding; Adam 0.001, sparse CE) on the same; test accuracy;
  regression  examples/models/regression.json (Dense(1), Adagrad 0.05, mse)
              on regression.npz; metric: test mse (the loss).
The data sets come from scripts/make-datasets.py, made into a temporary
folder unless --data-dir names one that holds them.

mwj: `mwj-worker train --model FILE --data NPZ --epochs E --batch-size 64
--seed S --threads T --model-dir DIR` (with --rescale 0.00392156862745098
for the pixels), then `mwj-worker evaluate` on x_test, y_test of the same
.npz, its JSON line's loss and accuracy.

PyTorch (Debian's python3-torch): the model is built from the same JSON by
scripts/torch_reference.py's Net (Keras 3's computation under TensorFlow:
NHWC, TensorFlow's same padding, Keras' batch normalization and moving
statistics, its losses with _get_logits and the clip), trained with its
Optimizer (Keras 3's update_step in float32; for cnn's plain SGD that is
torch.optim.SGD's rule, for Adam and Adagrad it is not, and torch.optim is
not used). From torch's own generator, seeded with the seed: the initial
weights, by the initializers the JSON names (Glorot uniform over Keras'
fans, zeros, ones), the data order and the dropout masks
(F.dropout, inverted dropout as Keras'). Dropout and batch normalization
train in training mode (batch statistics, moving statistics updated) and
are evaluated in inference mode (identity; the moving statistics).
torch.set_num_threads and OpenBLAS get --threads, as mwj does.

Both sides read the training data as mwj does, a stream like tf.data's
shuffle().repeat().batch(): a new permutation for each pass over the set,
the passes following each other, every batch full, ceil(examples / 64)
steps an epoch unless --steps-per-epoch says otherwise (an epoch is then
that many batches of the stream; the output's examples_per_epoch says so).

Output, one JSON line per implementation and model: the per-seed test
metric and loss, their mean, sample standard deviation and median, and the
training seconds (mwj: the train command, start-up and data included;
torch: its training loop); then one "accuracy_margin" line per model:
mwj's mean minus torch's, both standard deviations, the margin's standard
error and Welch's t (margin / standard error), and whether |t| < 2: a
difference that the seeds' spread explains. For the mse a negative margin favours mwj. The
regression's mse is heavy-tailed: Glorot's limit for Dense(2 -> 1) is 1.41,
and from the worst starts Adagrad's shrinking steps have not reached the
noise floor (1e-4) after 100 epochs on either side, hence its 10 seeds and
the median beside the mean.

    /usr/bin/python3 bench/accuracy_torch.py
    /usr/bin/python3 bench/accuracy_torch.py --quick
    /usr/bin/python3 bench/accuracy_torch.py --models cnn --seeds 1,2,3,4,5 --epochs-cnn 5

The default (seeds x full epochs: cnn 3 x 3, cnn-deep 6 x 1, regression
10 x 100, on 2 threads) takes about 20 minutes on a free 2-core machine
(cnn-deep alone, 6 seeds: 13 minutes); --quick (one seed, one epoch of 20
steps each) under half a minute, for development.
"""
import argparse
import importlib.util
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import BIN_DIR, HERE, run_json

ROOT = os.path.dirname(HERE)
RESCALE_PIXELS = "0.00392156862745098"  # 1/255, as the tutorial's x / 255

MODELS = {
    # name: model file, data set, mwj's --rescale, metric, default seeds, epochs
    "cnn": ("examples/models/cnn.json", "fashion-mnist", RESCALE_PIXELS, "accuracy",
            [1, 2, 3], 3),
    "cnn-deep": ("examples/models/cnn-deep.json", "fashion-mnist", RESCALE_PIXELS,
                 "accuracy", [1, 2, 3, 4, 5, 6], 1),
    "regression": ("examples/models/regression.json", "regression", None, "mse",
                   list(range(1, 11)), 100),
}
BATCH = 64


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default=",".join(MODELS),
                   help="comma-separated, of " + ", ".join(MODELS))
    p.add_argument("--seeds", default=None,
                   help="comma-separated seeds for every model (default: per model)")
    for name, spec in MODELS.items():
        p.add_argument(f"--epochs-{name}", type=int, default=spec[5], metavar="N")
    p.add_argument("--steps-per-epoch", type=int, default=0,
                   help="steps an epoch for every model (default: one pass)")
    p.add_argument("--threads", type=int, default=2,
                   help="mwj's --threads, torch's threads and OpenBLAS's")
    p.add_argument("--data-dir", default=None,
                   help="folder with fashion-mnist.npz and regression.npz "
                        "(default: made by scripts/make-datasets.py into a temporary one)")
    p.add_argument("--quick", action="store_true",
                   help="one seed, one epoch of 20 steps each: a check that it all runs")
    a = p.parse_args()
    a.models = a.models.split(",")
    for m in a.models:
        if m not in MODELS:
            p.error(f"unknown model '{m}' ({', '.join(MODELS)})")
    if a.seeds is not None:
        a.seeds = [int(s) for s in a.seeds.split(",")]
    if a.quick:
        a.seeds = a.seeds or [1]
        a.steps_per_epoch = a.steps_per_epoch or 20
        for name in MODELS:
            setattr(a, "epochs_" + name.replace("-", "_"), 1)
    if a.threads < 1 or a.steps_per_epoch < 0:
        p.error("--threads must be >= 1, --steps-per-epoch >= 0")
    return a


ARGS = parse_args()
# OpenBLAS (Debian's torch runs its dense layers in it) and libgomp read
# these when they are loaded: before torch is imported. Sleep rather than
# spin between parallel regions, as torch_train.py explains.
os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def load_reference():
    """scripts/torch_reference.py as a module (scripts/ is no package)."""
    path = os.path.join(ROOT, "scripts", "torch_reference.py")
    spec = importlib.util.spec_from_file_location("torch_reference", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ref = load_reference()


def stats(values):
    """mean, sample standard deviation (None for one value) and median."""
    return (statistics.fmean(values),
            statistics.stdev(values) if len(values) > 1 else None,
            statistics.median(values))


# --- mwj ---


def mwj_run(model, npz, rescale, seed, epochs, steps, workdir):
    """Trains and evaluates one seed: (test loss, test accuracy or None, seconds)."""
    model_dir = os.path.join(workdir, f"mwj-seed{seed}")
    cmd = [os.path.join(BIN_DIR, "mwj-worker"), "train", "--model", model, "--data", npz,
           "--epochs", str(epochs), "--batch-size", str(BATCH), "--seed", str(seed),
           "--threads", str(ARGS.threads), "--model-dir", model_dir, "--log-format", "json"]
    if rescale is not None:
        cmd += ["--rescale", rescale]
    if steps:
        cmd += ["--steps-per-epoch", str(steps)]
    t0 = time.monotonic()
    run_json(cmd, {})
    seconds = time.monotonic() - t0
    cmd = [os.path.join(BIN_DIR, "mwj-worker"), "evaluate", "--model-dir", model_dir,
           "--data", npz, "--threads", str(ARGS.threads), "--log-format", "json"]
    if rescale is not None:
        cmd += ["--rescale", rescale]
    ev = [r for r in run_json(cmd, {}) if r.get("event") == "evaluate"][-1]
    shutil.rmtree(model_dir)
    return ev["loss"], ev.get("accuracy"), seconds


# --- PyTorch, from torch_reference's Net ---


def initializers(layers):
    """The initializer of each of Net's inits, and the (moving mean,
    moving variance) initializers of each of its sinits, in Net's order:
    layer by layer, kernel then bias, gamma then beta."""
    params, state = [], []
    for layer in layers[1:]:
        cls, c = layer["class_name"], layer["config"]
        if cls in ("Conv2D", "Dense"):
            params.append(c["kernel_initializer"])
            if c["use_bias"]:
                params.append(c["bias_initializer"])
        elif cls == "BatchNormalization":
            if c["scale"]:
                params.append(c["gamma_initializer"])
            if c["center"]:
                params.append(c["beta_initializer"])
            state.append((c["moving_mean_initializer"], c["moving_variance_initializer"]))
    return params, state


def draw(spec, n, fans):
    """n values of a Keras initializer, from torch's generator."""
    cls = spec["class_name"]
    if (spec.get("config") or {}).get("seed") is not None:
        raise ValueError(f"{cls}: a seeded initializer is not supported here")
    if cls == "Zeros":
        return torch.zeros(n)
    if cls == "Ones":
        return torch.ones(n)
    if cls == "GlorotUniform":
        limit = math.sqrt(6.0 / (fans[0] + fans[1]))
        return torch.empty(n).uniform_(-limit, limit)
    raise ValueError(f"initializer {cls} is not supported here")


def keras_init(net, layers):
    """Parameters and moving statistics as Keras initializes them."""
    specs, sspecs = initializers(layers)
    assert len(specs) == len(net.inits) and len(sspecs) == len(net.sinits)
    p = torch.zeros(net.nparams)
    for (off, n, _, fans), spec in zip(net.inits, specs):
        p[off:off + n] = draw(spec, n, fans)
    st = torch.zeros(net.nstate)
    for (off, C), (mean, var) in zip(net.sinits, sspecs):
        st[off:off + C] = draw(mean, C, None)
        st[off + C:off + 2 * C] = draw(var, C, None)
    return p, st


def batchnorm_layout(net, layers):
    """(gamma offset or None, beta offset or None, state offset, channels,
    epsilon) of each BatchNormalization, in layer order."""
    gammas = [off for off, _, kind, _ in net.inits if kind == "gamma"]
    betas = [off for off, _, kind, _ in net.inits if kind == "beta"]
    out = []
    for layer in layers[1:]:
        c = layer["config"]
        if layer["class_name"] == "BatchNormalization":
            s, C = net.sinits[len(out)]
            out.append((gammas.pop(0) if c["scale"] else None,
                        betas.pop(0) if c["center"] else None, s, C, c["epsilon"]))
    return out


def mode_ops(net, layers):
    """Net's ops for training and for inference. Net's Dropout applies
    mwj's own mask: torch's F.dropout takes its place here, so that the
    masks come from torch's generator. Net's batch normalization is the
    training pass; the inference pass is Keras' with the moving
    statistics: tf.nn.batch_normalization as Net computes it."""
    bns = iter(batchnorm_layout(net, layers))
    train, infer = [], []
    for layer, op in zip(layers[1:], net.ops):
        cls, c = layer["class_name"], layer["config"]
        if cls == "Dropout":
            rate = c["rate"]
            train.append(lambda x, p, run, rate=rate: F.dropout(x, rate, training=True))
            infer.append(lambda x, p, run: x)
        elif cls == "BatchNormalization":
            g, b, s, C, eps = next(bns)

            def batchnorm(x, p, run, g=g, b=b, s=s, C=C, eps=eps):
                st = run["state"]
                mean, var = st[s:s + C], st[s + C:s + 2 * C]
                inv = torch.rsqrt(var + ref.f32(eps))
                if g is not None:
                    inv = inv * p[g:g + C]
                beta = p[b:b + C] if b is not None else torch.zeros(C)
                return x * inv + (beta - mean * inv)
            train.append(op)
            infer.append(batchnorm)
        else:
            train.append(op)
            infer.append(op)
    return train, infer


class Stream:
    """mwj's training stream: a permutation of the set for each pass, the
    passes following each other, every batch full."""

    def __init__(self, n):
        self.n, self.order = n, torch.empty(0, dtype=torch.long)

    def next(self, b):
        while len(self.order) < b:
            self.order = torch.cat([self.order, torch.randperm(self.n)])
        idx, self.order = self.order[:b], self.order[b:]
        return idx


def torch_run(model, data, seed, epochs, steps):
    """Trains and evaluates one seed: (test loss, test accuracy or None, seconds)."""
    torch.manual_seed(seed)
    layers = model["config"]["layers"]
    net = ref.Net(model)
    train_ops, infer_ops = mode_ops(net, layers)
    net.ops = train_ops
    w, st = keras_init(net, layers)
    cc = model["compile_config"]
    opt = ref.Optimizer(cc["optimizer"], net.nparams)
    x, y, x_test, y_test = data
    stream = Stream(len(x))
    t0 = time.monotonic()
    for _ in range(epochs):
        for _ in range(steps):
            idx = stream.next(BATCH)
            p = w.detach().requires_grad_(True)
            out, st_new = net.forward(p, st, x[idx], seed, 0)
            loss = ref.keras_loss(cc["loss"], y[idx], out)
            loss.backward()
            st = st_new.detach()
            with torch.no_grad():
                w = opt.step(w, p.grad)
    seconds = time.monotonic() - t0
    total, correct = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(x_test), 1000):
            xb, yb = x_test[i:i + 1000], y_test[i:i + 1000]
            out = xb
            for op in infer_ops:
                out = op(out, w, {"state": st})
            total += float(ref.keras_loss(cc["loss"], yb, out)) * len(xb)
            if yb.shape[1] == 1 and out.shape[-1] > 1:
                correct += int((out.argmax(dim=-1) == yb[:, 0].long()).sum())
    accuracy = correct / len(x_test) if "accuracy" in (cc.get("metrics") or []) else None
    return total / len(x_test), accuracy, seconds


def torch_data(npz, rescale):
    """x_train, y_train, x_test, y_test as float32 tensors, targets (N, T),
    inputs multiplied by the rescale in float32 as mwj does."""
    with np.load(npz) as z:
        arrays = [z[k] for k in ("x_train", "y_train", "x_test", "y_test")]
    out = []
    for k, a in enumerate(arrays):
        a = a.astype(np.float32)
        if k % 2 == 0 and rescale is not None:
            a = a * np.float32(float(rescale))
        if k % 2 == 1 and a.ndim == 1:
            a = a[:, None]
        out.append(torch.from_numpy(np.ascontiguousarray(a)))
    return out


# --- The comparison ---


def main():
    torch.set_num_threads(ARGS.threads)
    torch.set_default_dtype(torch.float32)
    with tempfile.TemporaryDirectory(prefix="mwj-accuracy-") as tmp:
        data_dir = ARGS.data_dir
        if data_dir is None:
            data_dir = os.path.join(tmp, "data")
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make-datasets.py"),
                            data_dir], check=True, stdout=subprocess.DEVNULL)
        for name in ARGS.models:
            path, dataset, rescale, metric, seeds, epochs = MODELS[name]
            seeds = ARGS.seeds or seeds
            epochs = getattr(ARGS, "epochs_" + name.replace("-", "_"))
            model_file = os.path.join(ROOT, path)
            npz = os.path.join(data_dir, dataset + ".npz")
            with open(model_file) as f:
                model = json.load(f)
            data = torch_data(npz, rescale)
            n = len(data[0])
            steps = ARGS.steps_per_epoch or -(-n // BATCH)
            results = {"mwj": [], "torch": []}
            for seed in seeds:
                results["mwj"].append(mwj_run(model_file, npz, rescale, seed, epochs,
                                              ARGS.steps_per_epoch, tmp))
                results["torch"].append(torch_run(model, data, seed, epochs, steps))
            key = "test_accuracy" if metric == "accuracy" else "test_mse"
            means = {}
            for impl, runs in results.items():
                values = [r[1] if metric == "accuracy" else r[0] for r in runs]
                mean, std, median = stats(values)
                means[impl] = (mean, std)
                line = {"bench": "accuracy", "model": name, "impl": impl, "metric": key,
                        "seeds": seeds, "values": values, "mean": mean, "std": std,
                        "median": median,
                        "test_loss": [r[0] for r in runs],
                        "epochs": epochs, "steps_per_epoch": steps,
                        "examples_per_epoch": steps * BATCH, "train_examples": n,
                        "test_examples": len(data[2]), "batch": BATCH,
                        "threads": ARGS.threads, "train_seconds": [round(r[2], 2) for r in runs]}
                if impl == "torch":
                    line.update({"torch": torch.__version__,
                                 "optimizer": "torch_reference.Optimizer (Keras 3 update_step)",
                                 "dropout": "F.dropout (torch's generator)"})
                print(json.dumps(line))
            (mm, ms), (tm, ts) = means["mwj"], means["torch"]
            # The margin against its standard error (Welch): |t| < 2 is a
            # difference the seeds' spread explains.
            se = (math.sqrt((ms * ms + ts * ts) / len(seeds))
                  if ms is not None and ts is not None else None)
            t = (mm - tm) / se if se else None
            print(json.dumps({"bench": "accuracy_margin", "model": name, "metric": key,
                              "margin": mm - tm, "mwj_mean": mm, "torch_mean": tm,
                              "mwj_std": ms, "torch_std": ts, "seeds": len(seeds),
                              "margin_se": se, "welch_t": t,
                              "within_2se": abs(t) < 2 if t is not None else None}))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
