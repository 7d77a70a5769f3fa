#!/usr/bin/env bash
# The GPU checks of the CUDA build, for a machine with an NVIDIA GPU:
#   1. the GPU tests (worker/tests/cuda/test_gpu.c): every layer against the
#      CPU, the optimizers, NCCL against a serial sum, a training run's
#      accuracy against the CPU's, a backup moved between GPU and CPU, an
#      exact resume, and --device cuda without a GPU;
#   2. bench_gpu: throughput of both models at batch 64 and 1024, the step
#      split into compute and all-reduce, NCCL's bandwidth 4 KB to 64 MB;
#   3. bench/torch_gpu.py: PyTorch eager on the same GPU, models and batches.
# Each part has a time limit and writes its own file, so that what ran is
# kept even when a later part runs out of time.
#
#   scripts/gpu-check.sh BIN_DIR DATA_DIR OUT_DIR [LIB_DIR]
#
# BIN_DIR holds mwj-worker, worker_cuda_test_gpu and bench_gpu of a CUDA
# build (make CUDA=1 build-cuda/bin/...), DATA_DIR the Fashion-MNIST files.
# LIB_DIR, if given, holds shared libraries the binaries need that the
# machine lacks (scripts/gpu-pack.sh makes one); cuBLAS and NCCL are looked
# for in the CUDA toolkit and in the Python packages of PyTorch.
set -u
bin=$(cd "$1" && pwd)
data=$(cd "$2" && pwd)
out=$3
libs=${4:-}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"

# cuBLAS 13 and NCCL 2: the toolkit's, else PyTorch's wheels'.
libpath=$libs
for name in libcublas.so.13 libnccl.so.2; do
	dir=$(find -H /usr/local/cuda/lib64 /usr/local/cuda/targets /opt /usr/lib /usr/local/lib \
		-name "$name" -print -quit 2>/dev/null | xargs -r dirname)
	[ -n "$dir" ] && libpath=$libpath:$dir
done
run() { env LD_LIBRARY_PATH="$libpath" "$@"; }
{
	echo "LD_LIBRARY_PATH=$libpath"
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
	run ldd "$bin/mwj-worker"
} > "$out/machine.txt" 2>&1

echo "== GPU tests"
MWJ_TEST_DATA=$data MWJ_CUDA_WORKER_BIN=$bin/mwj-worker \
	run timeout 150 "$bin/worker_cuda_test_gpu" > "$out/test_gpu.txt" 2>&1
echo "test_gpu exit $?" >> "$out/test_gpu.txt"
tail -n 15 "$out/test_gpu.txt"

echo "== bench_gpu"
MWJ_TEST_DATA=$data run timeout 90 "$bin/bench_gpu" > "$out/bench_gpu.jsonl" \
	2> "$out/bench_gpu.err"
echo "bench_gpu exit $?" >> "$out/bench_gpu.err"
cat "$out/bench_gpu.jsonl"

echo "== PyTorch"
timeout 90 python3 "$here/bench/torch_gpu.py" --data-dir "$data" > "$out/torch_gpu.jsonl" \
	2> "$out/torch_gpu.err"
echo "torch_gpu exit $?" >> "$out/torch_gpu.err"
cat "$out/torch_gpu.jsonl"

echo "== a training run as a user sees it"
MWJ_DATA_DIR=$data run timeout 60 "$bin/mwj-worker" train --device cuda --model cnn \
	--epochs 2 --batch-size 256 --optimizer adam --validation-steps all --log-every 100 \
	> "$out/train_log.txt" 2>&1
echo "mwj-worker exit $?" >> "$out/train_log.txt"
tail -n 12 "$out/train_log.txt"
