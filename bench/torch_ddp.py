#!/usr/bin/python3
"""PyTorch DDP reference for mwj's two-worker training, over gloo on 127.0.0.1.

Same models and per-worker batch as mwj-worker. Starts --workers processes
(default 2), each with one torch thread and one OpenBLAS thread, trains on
random inputs (data loading is not what is measured) and prints exactly one
JSON line on stdout from rank 0 with the global training throughput.
Diagnostics go to stderr. The malloc field says whether the caller set the
glibc malloc thresholds in GLIBC_TUNABLES (read by each process at start).

    /usr/bin/python3 bench/torch_ddp.py --model cnn
    GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296 \\
        /usr/bin/python3 bench/torch_ddp.py --model cnn-pool --steps 300

One "step" = forward + backward (with DDP's bucketed gradient all-reduce,
overlapped with the backward pass) + SGD step, on every worker at once. The
launcher runs the workers as child processes with the usual env:// contract
(MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), waits for all of them, stops
the rest if one fails, and exits non-zero if any failed.
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
POOL_BATCHES = 8  # distinct random batches per worker, cycled


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=["cnn", "cnn-pool"], default="cnn")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64, help="per worker")
    p.add_argument("--steps", type=int, default=300, help="timed steps")
    p.add_argument("--warmup", type=int, default=30, help="untimed steps")
    p.add_argument("--bucket-cap-mb", type=float, default=None,
                   help="DDP gradient bucket size (default: DDP's own, 25)")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds before the launcher stops the workers")
    p.add_argument("--label", default="")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if min(a.workers, a.batch_size, a.steps) < 1 or a.warmup < 0:
        p.error("--workers/--batch-size/--steps must be >= 1, --warmup >= 0")
    if a.bucket_cap_mb is not None and a.bucket_cap_mb <= 0:
        p.error("--bucket-cap-mb must be > 0")
    return a


def die(msg):
    print(f"torch_ddp.py: error: {msg}", file=sys.stderr)
    sys.exit(1)


def free_port():
    """A port the kernel just handed out on 127.0.0.1. Another process could
    take it before rank 0 listens on it; on this quiet box that is unlikely
    and would fail loudly, not silently."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(a):
    """Runs the workers; returns the exit status for the whole job."""
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               WORLD_SIZE=str(a.workers))
    # gloo otherwise binds to whatever the host name resolves to.
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    argv = [sys.executable, os.path.abspath(__file__), "--worker"] + sys.argv[1:]
    procs = []
    try:
        for rank in range(a.workers):
            procs.append(subprocess.Popen(argv, env=dict(env, RANK=str(rank))))
        deadline = time.monotonic() + a.timeout
        while any(p.poll() is None for p in procs):
            failed = [p for p in procs if p.returncode not in (None, 0)]
            if failed or time.monotonic() > deadline:
                why = "timed out" if not failed else f"exited with {failed[0].returncode}"
                print(f"torch_ddp.py: a worker {why}; stopping the others", file=sys.stderr)
                break
            time.sleep(0.05)
    finally:
        for p in procs:  # no-ops for the workers that have exited
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    codes = [p.returncode for p in procs]
    if any(c != 0 for c in codes):
        print(f"torch_ddp.py: worker exit codes {codes}", file=sys.stderr)
        return 1
    return 0


def import_torch_train():
    """torch_train.py parses sys.argv and sets thread variables when it is
    imported. Import it with an empty command line after torch is loaded
    (so its settings reach no thread pool), then put the environment back
    (so they do not reach anything else either). We want its build_model,
    to train exactly the same network, and its OpenBLAS thread helper."""
    saved_argv, saved_env = sys.argv, dict(os.environ)
    sys.argv = [os.path.join(HERE, "torch_train.py")]
    sys.path.insert(0, HERE)
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    try:
        import torch_train
    finally:
        sys.argv = saved_argv
        sys.path.remove(HERE)
        os.environ.clear()
        os.environ.update(saved_env)
    return torch_train


def worker(a):
    # Read once when the libraries load: before importing torch.
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as torch_train.py
    try:
        import torch
        import torch.distributed as dist
        from torch import nn
        from torch.nn.parallel import DistributedDataParallel as DDP
    except ImportError as e:
        die(f"cannot import torch ({e}); run with /usr/bin/python3 "
            "(Debian's python3-torch), not the pyenv python3")
    tt = import_torch_train()

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    blas_n, _ = tt.set_openblas_threads(1)
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
    if rank == 0:
        print(f"threads per worker: torch={torch.get_num_threads()} openblas={blas_n} "
              f"GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES', '')!r}", file=sys.stderr)

    torch.manual_seed(0)  # the same start everywhere; DDP broadcasts rank 0's anyway
    kwargs = {} if a.bucket_cap_mb is None else {"bucket_cap_mb": a.bucket_cap_mb}
    model = DDP(tt.build_model(a.model), **kwargs)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(1000 + rank)  # each worker its own shard
    xs = torch.rand(POOL_BATCHES, a.batch_size, 1, 28, 28, generator=g)
    ys = torch.randint(0, 10, (POOL_BATCHES, a.batch_size), generator=g)

    def step(i):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xs[i % POOL_BATCHES]), ys[i % POOL_BATCHES])
        loss.backward()  # returns once DDP's all-reduces are done
        opt.step()
        return loss

    for i in range(a.warmup):
        step(i)
    dist.barrier()
    t0 = time.perf_counter()
    for i in range(a.steps):
        loss = step(i)
    dist.barrier()  # the job is done when the slowest worker is
    dt = time.perf_counter() - t0
    dist.destroy_process_group()
    if rank != 0:
        return
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    print(f"final loss {loss.item():.4f}, {dt:.3f}s for {a.steps} steps", file=sys.stderr)
    print(json.dumps({
        "bench": "torch_ddp", "impl": "pytorch", "torch": torch.__version__,
        "model": a.model, "workers": world, "batch_per_worker": a.batch_size,
        "threads_per_worker": 1, "backend": "gloo",
        "bucket_cap_mb": a.bucket_cap_mb if a.bucket_cap_mb is not None else "default",
        "global_samples_per_s": round(a.steps * a.batch_size * world / dt, 1),
        "ms_per_step": round(dt * 1000.0 / a.steps, 3), "steps": a.steps,
        "malloc": "tuned" if "glibc.malloc.mmap_threshold" in tunables else "default",
        "glibc_tunables": tunables, "label": a.label,
    }, separators=(",", ":")), flush=True)


def main():
    a = parse_args()
    if a.worker:
        worker(a)
    else:
        sys.exit(launch(a))


if __name__ == "__main__":
    main()
