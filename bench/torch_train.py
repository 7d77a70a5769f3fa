#!/usr/bin/python3
"""PyTorch reference benchmark for mwj's trainer on Fashion-MNIST.

Trains the same Keras-style models as the C trainer (`cnn`, `cnn-pool`,
`cnn-deep`: examples/models/<name>.json) and prints exactly one JSON line on
stdout with the measured training throughput. Diagnostics (effective thread
counts, final loss) go to stderr. The optimizer is --optimizer's, SGD at
0.001 unless told otherwise; compare_torch.py passes the one the model
file's compile config names, with its hyper-parameters (cnn, cnn-pool: SGD
at 0.001; cnn-deep: Adam at 0.001 with Keras' epsilon 1e-7).

Run it with Debian's interpreter, which has python3-torch (1.13, CPU):

    /usr/bin/python3 bench/torch_train.py --model cnn --threads 1
    GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296 \
        /usr/bin/python3 bench/torch_train.py --model cnn-pool --threads 2

One "step" = gather a batch from the preloaded tensor + forward + backward +
optimizer step, the same work the C trainer does per step.
"""
import argparse
import ctypes
import gzip
import json
import os
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=["cnn", "cnn-pool", "cnn-deep"], default="cnn")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads (torch.set_num_threads)")
    p.add_argument("--blas-threads", type=int, default=0,
                   help="OpenBLAS threads for the dense layers (default: --threads)")
    p.add_argument("--steps", type=int, default=300, help="timed steps")
    p.add_argument("--warmup", type=int, default=30, help="untimed steps")
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    p.add_argument("--lr", type=float, default=0.001, help="learning rate (Keras' 0.001)")
    p.add_argument("--momentum", type=float, default=0.0, help="SGD only")
    p.add_argument("--beta-1", type=float, default=0.9, help="Adam only")
    p.add_argument("--beta-2", type=float, default=0.999, help="Adam only")
    # Keras' Adam epsilon, not PyTorch's 1e-8.
    p.add_argument("--epsilon", type=float, default=1e-7, help="Adam only")
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--label", default="")
    a = p.parse_args()
    if a.blas_threads == 0:
        a.blas_threads = a.threads
    if min(a.threads, a.blas_threads, a.batch_size, a.steps) < 1 or a.warmup < 0:
        p.error("--threads/--blas-threads/--batch-size/--steps must be >= 1, --warmup >= 0")
    if a.lr <= 0 or a.momentum < 0 or a.epsilon <= 0 or not (
            0 <= a.beta_1 < 1 and 0 <= a.beta_2 < 1):
        p.error("--lr/--epsilon must be > 0, --momentum >= 0, --beta-1/--beta-2 in [0, 1)")
    return a


def die(msg):
    print(f"torch_train.py: error: {msg}", file=sys.stderr)
    sys.exit(1)


ARGS = parse_args()
# OpenBLAS (used by Debian's torch for dense layers, and by numpy) and libgomp
# read these once, when the library is loaded: they must be set before the
# imports below.
os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.blas_threads)
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
# Torch's OpenMP (libgomp) pool and OpenBLAS's pthread pool take turns on the
# same cores; libgomp's default spin-wait then starves the OpenBLAS threads and
# --threads 2 ends up far slower than 1 on a 2-core box. Sleep instead of
# spinning, unless the caller chose a policy explicitly.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

try:
    import numpy as np
    import torch
    from torch import nn
except ImportError as e:
    die(f"cannot import torch/numpy ({e}); run with /usr/bin/python3 "
        "(Debian's python3-torch), not the pyenv python3")


def set_openblas_threads(n):
    """Set the thread count of the libopenblas already mapped in this process.

    Returns the effective count reported by OpenBLAS, or None if not found."""
    with open("/proc/self/maps") as f:
        paths = {ln.split()[-1] for ln in f if "libopenblas" in ln}
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)  # already loaded: just returns a handle
            lib.openblas_set_num_threads(ctypes.c_int(n))
            return lib.openblas_get_num_threads(), path
        except (OSError, AttributeError):
            continue
    return None, None


def read_idx(path, magic):
    """Parse a gzipped IDX file (big-endian header) into a numpy array."""
    if not os.path.isfile(path):
        die(f"missing data file {path} (see --data-dir)")
    with gzip.open(path, "rb") as f:
        raw = f.read()
    m, ndim = int.from_bytes(raw[0:4], "big"), raw[3]
    if m != magic:
        die(f"{path}: bad IDX magic {m:#x}, expected {magic:#x}")
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_train(data_dir):
    x = read_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz"), 0x803)
    y = read_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"), 0x801)
    if len(x) != len(y):
        die(f"image/label count mismatch: {len(x)} vs {len(y)}")
    xs = torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1)  # N,1,28,28
    ys = torch.from_numpy(y.astype(np.int64))
    return xs.contiguous(), ys


def build_model(name):
    if name == "cnn-deep":
        m = cnn_deep()
    elif name == "cnn":
        m = nn.Sequential(
            nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Flatten(),
            nn.Linear(26 * 26 * 32, 128), nn.ReLU(), nn.Linear(128, 10))
    else:  # cnn-pool
        m = nn.Sequential(
            nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(13 * 13 * 32, 64), nn.ReLU(), nn.Linear(64, 10))
    for layer in m:  # Keras defaults: Glorot-uniform kernels, zero biases
        if isinstance(layer, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(layer.weight)
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)
    return m


def cnn_deep():
    """examples/models/cnn-deep.json, layer for layer: Keras'
    BatchNormalization(momentum 0.99, epsilon 1e-3) is PyTorch's
    BatchNorm2d(eps=1e-3, momentum=0.01), and same padding of a 3x3 kernel
    at stride 1 is padding=1. The file's last Dense has a softmax and its
    loss from_logits=False; Keras (and mwj, model_loss_reads) compute that
    cross-entropy from the softmax's input, the logits, which is what
    CrossEntropyLoss on the last Linear's output does. Flatten sees (C, H, W)
    here and (H, W, C) in Keras: a permutation of the Dense kernel's rows,
    the same work."""
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32, eps=1e-3, momentum=0.01),
        nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Dropout(0.25),
        nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64, eps=1e-3, momentum=0.01),
        nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(),
        nn.Linear(7 * 7 * 64, 128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10))


def batches(n, bs, seed):
    """Endless stream of index batches: a fresh shuffle per epoch, fixed seed.
    The incomplete tail batch of each epoch is dropped."""
    g = torch.Generator().manual_seed(seed)
    while True:
        perm = torch.randperm(n, generator=g)
        for i in range(0, n - bs + 1, bs):
            yield perm[i:i + bs]


def main():
    a = ARGS
    torch.set_num_threads(a.threads)
    blas_n, blas_path = set_openblas_threads(a.blas_threads)
    print(f"threads: torch={torch.get_num_threads()} "
          f"openblas={blas_n} ({blas_path or 'libopenblas not loaded'}) "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')} "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')} "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}",
          file=sys.stderr)
    if torch.get_num_threads() != a.threads or blas_n not in (None, a.blas_threads):
        print("warning: requested thread count did not take effect",
              file=sys.stderr)

    xs, ys = load_train(a.data_dir)
    if a.batch_size > len(xs):
        die(f"--batch-size {a.batch_size} exceeds dataset size {len(xs)}")
    torch.manual_seed(0)
    model = build_model(a.model)
    model.train()
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    else:
        # Keras (and mwj) add epsilon to sqrt(v) and fold v's bias
        # correction into the step size; PyTorch adds it to the corrected
        # sqrt(v). The same work per step; steps that differ slightly while
        # 1 - beta_2^t is far from 1.
        opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(a.beta_1, a.beta_2),
                               eps=a.epsilon)
    loss_fn = nn.CrossEntropyLoss()  # logits in, mean over the batch
    stream = batches(len(xs), a.batch_size, seed=1234)

    def step():
        idx = next(stream)
        xb, yb = xs[idx], ys[idx]  # gather, as the C trainer does
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    dt = time.perf_counter() - t0
    print(f"final loss {loss.item():.4f}, {dt:.3f}s for {a.steps} steps",
          file=sys.stderr)

    print(json.dumps({
        "bench": "train", "impl": "pytorch", "torch": torch.__version__,
        "model": a.model, "batch": a.batch_size, "threads": a.threads,
        "blas_threads": a.blas_threads,
        "optimizer": a.optimizer, "steps": a.steps,
        "samples_per_s": round(a.steps * a.batch_size / dt, 1),
        "ms_per_step": round(dt * 1000.0 / a.steps, 3),
        "glibc_tunables": os.environ.get("GLIBC_TUNABLES", ""),
        "label": a.label,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
    }, separators=(",", ":")))


if __name__ == "__main__":
    main()
