#!/usr/bin/env python3
"""Writes the NumPy data sets mwj's examples, tests and benchmarks train on,
from what Debian ships and from a documented function, with Python's standard
library alone (no numpy: CI does not install it). Nothing is downloaded.

  fashion-mnist.npz  Debian's dataset-fashion-mnist IDX files as Keras'
                     keras.datasets.fashion_mnist.load_data() returns them:
                     x_train uint8 (60000, 28, 28), y_train uint8 (60000,),
                     x_test uint8 (10000, 28, 28), y_test uint8 (10000,);
                     stored (np.savez), so mwj-worker memory-maps it.
  regression.npz     the regression of TensorFlow's guide to migrating
                     multi-worker training (a Dense(1) trained with Adagrad on
                     the mean squared error), made larger: x uniform in
                     [0, 4)^2, y = 0.2 x0 + 0.1 + N(0, 0.01^2), float32,
                     x_train (4096, 2), y_train (4096, 1), x_test (1024, 2),
                     y_test (1024, 1), from random.Random(20260101).

usage: make-datasets.py [--idx-dir DIR] OUT_DIR [fashion-mnist|regression ...]
"""
import argparse
import gzip
import io
import os
import random
import struct
import sys
import zipfile

IDX_DIR = "/usr/share/datasets/fashion-mnist"


def npy_bytes(descr, shape, data):
    """A version 1.0 .npy file: magic, header padded to 64 bytes, data."""
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


def write_npz(path, arrays):
    """arrays: (name, descr, shape, bytes); stored, as np.savez writes them."""
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
        for name, descr, shape, data in arrays:
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            z.writestr(info, npy_bytes(descr, shape, data))
    os.replace(tmp, path)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic, = struct.unpack(">I", raw[:4])
    ndim = magic & 0xFF
    if magic >> 8 != 0x08:
        sys.exit(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    data = raw[4 + 4 * ndim:]
    n = 1
    for d in dims:
        n *= d
    if len(data) != n:
        sys.exit(f"{path}: {len(data)} bytes of data, the header says {n}")
    return dims, data


def fashion_mnist(out, idx_dir):
    arrays = []
    for split, name in (("train", "train"), ("t10k", "test")):
        dims, data = read_idx(os.path.join(idx_dir, f"{split}-images-idx3-ubyte.gz"))
        arrays.append((f"x_{name}", "|u1", dims, data))
        dims, data = read_idx(os.path.join(idx_dir, f"{split}-labels-idx1-ubyte.gz"))
        arrays.append((f"y_{name}", "|u1", dims, data))
    # keras.datasets' order: x_train, y_train, x_test, y_test
    write_npz(os.path.join(out, "fashion-mnist.npz"), arrays)


def regression(out):
    rng = random.Random(20260101)
    arrays = []
    for name, n in (("train", 4096), ("test", 1024)):
        x, y = io.BytesIO(), io.BytesIO()
        for _ in range(n):
            x0, x1 = rng.uniform(0, 4), rng.uniform(0, 4)
            x.write(struct.pack("<2f", x0, x1))
            y.write(struct.pack("<f", 0.2 * x0 + 0.1 + rng.gauss(0, 0.01)))
        arrays.append((f"x_{name}", "<f4", (n, 2), x.getvalue()))
        arrays.append((f"y_{name}", "<f4", (n, 1), y.getvalue()))
    write_npz(os.path.join(out, "regression.npz"), arrays)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--idx-dir", default=IDX_DIR)
    p.add_argument("out")
    p.add_argument("sets", nargs="*", default=["fashion-mnist", "regression"])
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for s in a.sets:
        if s == "fashion-mnist":
            fashion_mnist(a.out, a.idx_dir)
        elif s == "regression":
            regression(a.out)
        else:
            sys.exit(f"unknown data set '{s}' (fashion-mnist, regression)")
        print(os.path.join(a.out, s + ".npz"))


if __name__ == "__main__":
    main()
