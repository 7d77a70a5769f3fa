"""What the comparison scripts share: where the built binaries are, the
settings that are PyTorch's best (glibc malloc thresholds, and the OpenBLAS
kernel set mwj runs with), running a benchmark that prints JSON lines, and
polling for a condition with a time limit."""
import json
import os
import subprocess
import time

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


def wait_for(what, fn, *, timeout, every=0.1):
    """Calls fn every `every` seconds until it returns something true, and
    returns that. Raises TimeoutError naming what ("timed out waiting for
    the CRD after 60 s") when timeout seconds pass first. There is no default
    timeout: each caller says how long its wait may take. What fn raises
    is not caught."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(every)
    raise TimeoutError(f"timed out waiting for {what} after {timeout:g} s")


def sleep_jobs_yaml(prefix, jobs, workers):
    """jobs MultiWorkerJobs named PREFIX0, PREFIX1...: each of workers pods
    whose container sleeps, so that hundreds fit on one machine."""
    docs = []
    for i in range(jobs):
        docs.append(f"""apiVersion: training.mwj.io/v1
kind: MultiWorkerJob
metadata: {{name: {prefix}{i}}}
spec:
  workers: {workers}
  template:
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {{name: worker, image: 'busybox:1.36', command: [sh, -c, 'sleep 3600']}}
""")
    return "---\n".join(docs)
