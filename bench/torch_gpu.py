#!/usr/bin/env python3
"""PyTorch on the GPU, the reference for mwj-worker's CUDA backend.

The same models as mwj (`cnn`, `cnn-pool`), SGD at lr 0.001, batches of 64
and 1024 from Fashion-MNIST, in PyTorch's eager mode on one GPU, and one
JSON line per configuration on stdout, in bench_gpu's format.

PyTorch gets its best case for input: the whole training set sits on the
GPU as bytes, and each step indexes it with a permutation drawn on the GPU
and scales the bytes there (mwj gathers each batch on the host and copies
it), and no step waits for the loss to reach the host (mwj reads it every
step). Precision is run both ways: PyTorch's defaults, under which cuDNN's
convolutions may use TF32, and strict FP32 (TF32 off), which is what mwj
computes.

Run with the python3 that has torch with CUDA:

    python3 bench/torch_gpu.py --data-dir /usr/share/datasets/fashion-mnist
"""
import argparse
import gzip
import json
import os
import sys
import time


def read_idx(path, magic):
    import numpy as np
    with gzip.open(path, "rb") as f:
        raw = f.read()
    m, ndim = int.from_bytes(raw[0:4], "big"), raw[3]
    if m != magic:
        sys.exit(f"torch_gpu.py: {path}: bad IDX magic {m:#x}")
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def build(name, nn):
    if name == "cnn":
        m = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Flatten(),
                          nn.Linear(26 * 26 * 32, 128), nn.ReLU(), nn.Linear(128, 10))
    else:
        m = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(13 * 13 * 32, 64), nn.ReLU(), nn.Linear(64, 10))
    for layer in m:
        if isinstance(layer, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)
    return m


def run(torch, nn, xs, ys, model_name, batch, steps, warmup, strict):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = not strict
    torch.backends.cudnn.benchmark = False
    torch.manual_seed(0)
    dev = xs.device
    model = build(model_name, nn).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    loss_fn = nn.CrossEntropyLoss()
    n = xs.shape[0]
    state = {"perm": torch.randperm(n, device=dev), "at": 0}

    def step():
        if state["at"] + batch > n:
            state["perm"], state["at"] = torch.randperm(n, device=dev), 0
        idx = state["perm"][state["at"]:state["at"] + batch]
        state["at"] += batch
        xb = xs[idx].float().div_(255.0)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), ys[idx])
        loss.backward()
        opt.step()
        return loss

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = step()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return {"bench": "gpu_train", "impl": "pytorch", "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(dev), "model": model_name, "batch": batch,
            "optimizer": "sgd", "precision": "fp32" if strict else "default (cuDNN TF32)",
            "steps": steps, "samples_per_s": round(steps * batch / dt, 1),
            "ms_per_step": round(dt * 1e3 / steps, 4), "final_loss": round(loss.item(), 4)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=300)
    a = p.parse_args()
    try:
        import torch
        from torch import nn
    except ImportError as e:
        print(json.dumps({"bench": "gpu_train", "impl": "pytorch", "skipped": str(e)}))
        return
    if not torch.cuda.is_available():
        print(json.dumps({"bench": "gpu_train", "impl": "pytorch",
                          "skipped": "torch sees no GPU"}))
        return
    x = read_idx(os.path.join(a.data_dir, "train-images-idx3-ubyte.gz"), 0x803)
    y = read_idx(os.path.join(a.data_dir, "train-labels-idx1-ubyte.gz"), 0x801)
    xs = torch.from_numpy(x.copy()).unsqueeze(1).cuda()
    ys = torch.from_numpy(y.astype("int64")).cuda()
    for model_name in ("cnn", "cnn-pool"):
        for batch in (64, 1024):
            for strict in (False, True):
                r = run(torch, nn, xs, ys, model_name, batch, a.steps, a.warmup, strict)
                print(json.dumps(r, separators=(",", ":")), flush=True)


if __name__ == "__main__":
    main()
