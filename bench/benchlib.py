"""What the comparison scripts share: where the built binaries are, the
settings that are PyTorch's best (glibc malloc thresholds, and the OpenBLAS
kernel set mwj runs with), and running a benchmark that prints JSON
lines."""
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
BIN_DIR = os.environ.get("MWJ_BIN_DIR", os.path.join(HERE, "..", "build", "bin"))
TUNED_MALLOC = ("glibc.malloc.mmap_threshold=33554432:"
                "glibc.malloc.trim_threshold=4294967296")


def run_json(cmd, env_extra, timeout=None):
    """Runs cmd with env_extra added to the environment and returns the JSON
    objects it printed, one per line starting with '{'. Raises if it fails."""
    env = dict(os.environ, **env_extra)
    out = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, timeout=timeout).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def tuned_env():
    """PyTorch's best environment: malloc thresholds that stop it
    page-faulting every step, and the OpenBLAS kernels mwj-worker runs with
    on this machine. mwj corrects OpenBLAS's fallback to generic kernels on
    CPUs the library does not know (worker/src/blas_cpu.h); PyTorch loads the
    same library, so it gets the same kernels through OPENBLAS_CORETYPE."""
    line = run_json([os.path.join(BIN_DIR, "bench_train"), "--steps", "10", "--model",
                     "cnn-pool", "--threads", "1"], {})[0]
    return {"GLIBC_TUNABLES": TUNED_MALLOC, "OPENBLAS_CORETYPE": line["blas_core"]}
