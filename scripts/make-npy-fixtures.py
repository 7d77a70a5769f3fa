#!/usr/bin/python3
"""Writes the NumPy fixtures of worker/tests/test_npy.c and the seed corpus
of worker/fuzz/fuzz_npy.c, with numpy itself, so that the C reader is
checked against what numpy writes and what numpy's astype(np.float32) gives.

numpy is not installed in CI, so the outputs are committed; rerun this
after changing it (Debian's python3-numpy is enough):

    /usr/bin/python3 scripts/make-npy-fixtures.py

It writes, in worker/tests/data/npy/:
  <dtype>.npy, <dtype>.f32   one array per accepted dtype, with the values
                             that are hard to convert (extremes, ties,
                             subnormals, inf, NaN), and the float32
                             little-endian bytes numpy's astype gives
  u1_all.npy, u1_all_scaled.f32
                             0..255 and astype(float32) * float32(1/255)
  rank3.npy, scalar.npy, v2.npy, v3.npy
                             shapes (2, 3, 4) and (), format versions 2.0, 3.0
  f4_be.npy, fortran.npy, object.npy, structured.npy, unicode.npy,
  complex.npy                what the reader refuses
  set.npz                    np.savez: x_train, y_train, x_test, y_test (stored)
  set_compressed.npz         np.savez_compressed of the same (deflated)
  set_zip64.npz              np.savez of the same with zipfile's zip64 limits
                             lowered for the call, so that a small file
                             carries the zip64 end-of-directory records and
                             zip64 directory fields a >4 GiB one would
  set_zip64_compressed.npz   the same with np.savez_compressed
  set_dir/                   the same four arrays as .npy files
  train_only.npz             x_train and y_train only
  positional.npz             np.savez(path, x, y): arr_0 and arr_1
The set's arrays: x_train (6, 4, 3) uint8 holding 0..71 in C order,
y_train (6,) uint8 i % 3, x_test (2, 4, 3) uint8 holding 200..223, y_test
(2,) uint8 [2, 1].

And in worker/fuzz/corpus/npy/, inputs for fuzz_npy.c: a mode byte (see
there) followed by a file. Only the seeds named here are rewritten; inputs
a fuzzing run found and someone kept there stay.
"""

import contextlib
import io
import os
import shutil
import time
import zipfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "worker", "tests", "data", "npy")
CORPUS = os.path.join(ROOT, "worker", "fuzz", "corpus", "npy")

# Modes of fuzz_npy.c's first byte.
MODE_NPY, MODE_NPZ, MODE_WRAP_STORED, MODE_WRAP_DEFLATED = 0, 1, 2, 3

DTYPE_VALUES = {
    "b1": (np.bool_, [True, False, True, True, False]),
    "u1": (np.uint8, [0, 1, 127, 128, 254, 255]),
    "i1": (np.int8, [-128, -1, 0, 1, 127]),
    "i2": (np.int16, [-32768, -1, 0, 12345, 32767]),
    "u2": (np.uint16, [0, 1, 40000, 65535]),
    "i4": (np.int32, [-2**31, -1, 0, 2**24 + 1, 2**24 + 3, 2**31 - 1, 123456789]),
    "u4": (np.uint32, [0, 2**24 + 1, 2**32 - 1, 3000000001, 2**31]),
    "i8": (np.int64, [-2**63, -1, 0, 2**53 + 1, 2**63 - 1, 2**24 + 1,
                      -(2**24 + 3), 2**40 + 2**16 + 1]),
    "u8": (np.uint64, [0, 2**64 - 1, 2**63, 2**63 + 2**40 + 1, 2**24 + 1,
                       2**64 - 2**39, 2**64 - 2**39 - 1]),
    "f4": (np.float32, [0.0, -0.0, 1.5, 3.4028234663852886e38, 1e-45,
                        float("inf"), float("nan"), -1e-38, 0.1]),
    "f8": (np.float64, [0.0, 0.1, 1e300, -1e300, 1e-50, -1e-50,
                        1.0000000596046448, 3.4028235677973366e38,
                        3.4028234663852886e38, float("nan"), 2.0**-149,
                        2.0**-150, 3 * 2.0**-151, -0.0, 1 / 3]),
}


def float16_values():
    """Specials (subnormals, the smallest normal, the largest value, inf,
    NaN, signed zeros), then every 61st bit pattern of the 65536."""
    specials = np.array([0.0, -0.0, 1.0, -2.5, 65504.0, -65504.0, 2.0**-24,
                         -(2.0**-24), 2.0**-14 - 2.0**-24, 2.0**-14,
                         float("inf"), float("-inf"), float("nan"), 0.1],
                        dtype=np.float16)
    sweep = np.arange(0, 65536, 61, dtype=np.uint32).astype(np.uint16).view(np.float16)
    return np.concatenate([specials, sweep])


@contextlib.contextmanager
def fixed_clock():
    """zipfile stamps each member with the time: a fixed one, in UTC, so
    that a rerun writes the same bytes."""
    real, tz = time.time, os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    time.time = lambda: 1704067200.0  # 2024-01-01 00:00:00
    try:
        yield
    finally:
        time.time = real
        if tz is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = tz
        time.tzset()


@contextlib.contextmanager
def zip64_everywhere():
    """zipfile writes zip64 records only past 4 GiB or 65535 members; with
    its limits at 0 for the call it writes them for any size."""
    saved = zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT
    zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = 0, 0
    try:
        yield
    finally:
        zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = saved


def npy_bytes(a, version=None, allow_pickle=False):
    f = io.BytesIO()
    np.lib.format.write_array(f, a, version=version, allow_pickle=allow_pickle)
    return f.getvalue()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def the_set():
    return {
        "x_train": np.arange(72, dtype=np.uint8).reshape(6, 4, 3),
        "y_train": (np.arange(6) % 3).astype(np.uint8),
        "x_test": (200 + np.arange(24)).astype(np.uint8).reshape(2, 4, 3),
        "y_test": np.array([2, 1], dtype=np.uint8),
    }


def savez(path, fn, **arrays):
    with fixed_clock():
        fn(path, **arrays)
    back = np.load(path)
    assert sorted(back.files) == sorted(arrays), back.files
    for k, v in arrays.items():
        assert back[k].dtype == v.dtype and np.array_equal(back[k], v), k


def write_dtypes():
    for name, (dt, values) in DTYPE_VALUES.items():
        a = np.array(values, dtype=dt)
        write_pair(name, a)
    write_pair("f2", float16_values())
    a = np.arange(256, dtype=np.uint8)
    write(os.path.join(DATA, "u1_all.npy"), npy_bytes(a))
    scaled = a.astype(np.float32) * np.float32(1 / 255)
    write(os.path.join(DATA, "u1_all_scaled.f32"), scaled.astype("<f4").tobytes())


def write_pair(name, a):
    """<name>.npy and the bytes of its astype(np.float32)."""
    with np.errstate(over="ignore", invalid="ignore"):
        f32 = a.astype(np.float32)
    write(os.path.join(DATA, name + ".npy"), npy_bytes(a))
    write(os.path.join(DATA, name + ".f32"), f32.astype("<f4").tobytes())


def write_shapes_and_refusals():
    d = DATA
    write(os.path.join(d, "rank3.npy"), npy_bytes(np.arange(24, dtype=np.int16).reshape(2, 3, 4)))
    write(os.path.join(d, "scalar.npy"), npy_bytes(np.array(2.5, dtype=np.float32)))
    write(os.path.join(d, "v2.npy"), npy_bytes(np.arange(5, dtype=np.float32), version=(2, 0)))
    write(os.path.join(d, "v3.npy"), npy_bytes(np.arange(5, dtype=np.int64), version=(3, 0)))
    write(os.path.join(d, "f4_be.npy"), npy_bytes(np.arange(4, dtype=">f4")))
    fortran = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    write(os.path.join(d, "fortran.npy"), npy_bytes(fortran))
    write(os.path.join(d, "object.npy"),
          npy_bytes(np.array([1, "a", None], dtype=object), allow_pickle=True))
    write(os.path.join(d, "structured.npy"),
          npy_bytes(np.zeros(3, dtype=[("a", "<f4"), ("b", "<i4")])))
    write(os.path.join(d, "unicode.npy"), npy_bytes(np.array(["ab", "c"])))
    write(os.path.join(d, "complex.npy"), npy_bytes(np.zeros(2, dtype=np.complex64)))


def write_sets():
    s = the_set()
    savez(os.path.join(DATA, "set.npz"), np.savez, **s)
    savez(os.path.join(DATA, "set_compressed.npz"), np.savez_compressed, **s)
    with zip64_everywhere():
        savez(os.path.join(DATA, "set_zip64.npz"), np.savez, **s)
        savez(os.path.join(DATA, "set_zip64_compressed.npz"), np.savez_compressed, **s)
    with open(os.path.join(DATA, "set_zip64.npz"), "rb") as f:
        assert b"PK\x06\x06" in f.read(), "no zip64 end of central directory record"
    savez(os.path.join(DATA, "train_only.npz"), np.savez,
          x_train=s["x_train"], y_train=s["y_train"])
    with fixed_clock():
        np.savez(os.path.join(DATA, "positional.npz"), s["x_train"], s["y_train"])
    folder = os.path.join(DATA, "set_dir")
    os.makedirs(folder, exist_ok=True)
    for k, v in s.items():
        np.save(os.path.join(folder, k + ".npy"), v)
    for name in ("set_compressed.npz",):
        with zipfile.ZipFile(os.path.join(DATA, name)) as z:
            assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist())
    with zipfile.ZipFile(os.path.join(DATA, "set.npz")) as z:
        assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())


def damaged_crc(npz):
    """npz with one byte of its first member's data flipped: the directory's
    CRC-32 no longer matches."""
    b = bytearray(npz)
    magic = b.index(b"\x93NUMPY")
    hlen = int.from_bytes(b[magic + 8:magic + 10], "little")
    at = magic + 10 + hlen + 1
    b[at] ^= 0x01
    return bytes(b)


def write_corpus():
    def seed(name, mode, data):
        write(os.path.join(CORPUS, name), bytes([mode]) + data)

    s = the_set()
    f4 = np.array([0.5, -1.0, 3.0], dtype=np.float32)
    seed("npy-f4", MODE_NPY, npy_bytes(f4))
    seed("npy-u1-rank3", MODE_NPY, npy_bytes(s["x_test"]))
    seed("npy-f2-v2", MODE_NPY, npy_bytes(float16_values()[:16], version=(2, 0)))
    seed("npy-i8-v3", MODE_NPY, npy_bytes(np.array([-1, 2**62], dtype=np.int64), version=(3, 0)))
    seed("npy-scalar-b1", MODE_NPY, npy_bytes(np.array(True)))
    seed("npy-big-endian", MODE_NPY, npy_bytes(np.arange(3, dtype=">f8")))
    seed("npy-fortran", MODE_NPY,
         npy_bytes(np.asfortranarray(np.arange(6, dtype=np.uint16).reshape(2, 3))))
    seed("npy-object", MODE_NPY, npy_bytes(np.array([None], dtype=object), allow_pickle=True))
    good = npy_bytes(f4)
    seed("npy-truncated-header", MODE_NPY, good[:40])
    seed("npy-trailing-bytes", MODE_NPY, good + b"\0\0\0\0")
    header = (b"{'descr': '<f4', 'fortran_order': False, "
              b"'shape': (4294967296, 4294967296, 4), }").ljust(127) + b"\n"
    seed("npy-shape-overflow", MODE_NPY, b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little")
         + header)
    buf = io.BytesIO()
    with fixed_clock():
        np.savez(buf, x_train=s["x_train"][:2], y_train=s["y_train"][:2])
    seed("npz-stored", MODE_NPZ, buf.getvalue())
    seed("npz-stored-bad-crc", MODE_NPZ, damaged_crc(buf.getvalue()))
    buf = io.BytesIO()
    with fixed_clock():
        np.savez_compressed(buf, x_train=s["x_train"], y_train=s["y_train"])
    seed("npz-deflated", MODE_NPZ, buf.getvalue())
    buf = io.BytesIO()
    with fixed_clock(), zip64_everywhere():
        np.savez(buf, x_train=s["x_train"][:1], y_train=s["y_train"][:1])
    seed("npz-zip64", MODE_NPZ, buf.getvalue())
    buf = io.BytesIO()
    with fixed_clock():
        np.savez(buf, **s)
    seed("npz-set-with-test", MODE_NPZ, buf.getvalue())
    buf = io.BytesIO()
    with fixed_clock():
        np.savez(buf, x_train=s["x_train"][:1], y_train=s["y_train"][:1], x_test=s["x_test"][:1])
    seed("npz-x-test-without-y-test", MODE_NPZ, buf.getvalue())
    literal = (b"{ \"shape\" : ( 2L , 1 , ) ,\n\t'descr':'<u8' , 'fortran_order':True , }")
    literal = literal.ljust(117) + b"\n"
    seed("npy-python-literal-forms", MODE_NPY, b"\x93NUMPY\x01\x00" + len(literal).to_bytes(2, "little")
         + literal + bytes(16))
    seed("wrap-stored-u1", MODE_WRAP_STORED, npy_bytes(s["y_train"]))
    seed("wrap-deflated-f8", MODE_WRAP_DEFLATED, npy_bytes(np.array([1.0, 2.5], dtype=np.float64)))


def main():
    shutil.rmtree(DATA, ignore_errors=True)
    os.makedirs(DATA)
    os.makedirs(CORPUS, exist_ok=True)
    write_dtypes()
    write_shapes_and_refusals()
    write_sets()
    write_corpus()
    print(f"wrote {len(os.listdir(DATA))} fixtures in {os.path.relpath(DATA, ROOT)} "
          f"and {len(os.listdir(CORPUS))} seeds in {os.path.relpath(CORPUS, ROOT)}")


if __name__ == "__main__":
    main()
