#!/usr/bin/env bash
# make bench: every benchmark, as JSON lines on stdout.
#   1. bench_train: mwj's training throughput for both built-in models at 1
#      and 2 threads, with achieved GFLOP/s beside the sgemm rate of this
#      machine; then examples/models/cnn.json read from its file against
#      the built-in cnn at 1 thread, BENCH_REPS runs each (the file is
#      found under --repo, this repository).
#   2. compare_torch.py: the same against PyTorch (needs python3-torch),
#      at PyTorch's defaults and at its best, with the ratio, for cnn,
#      cnn-pool and examples/models/cnn-deep.json (BatchNormalization,
#      Dropout, Adam), each side with the optimizer its file names.
#   3. compare_allreduce.py: the ring all-reduce for 2 and 4 ranks against
#      OpenMPI's MPI_Allreduce over TCP and a plain two-way TCP exchange.
#   4. compare_ddp.py: 2-worker data-parallel training against PyTorch DDP
#      (gloo), and against mwj on 1 worker.
#   5. bench_backup: backup save and restore time for cnn, and the training
#      overhead of --save-freq 100 against no backups.
#   6. bench_rendezvous: from a worker's arrival to the ring, without and
#      with the job key and among strangers, and the handshake's CPU cost.
#   7. recovery.py: from a worker killed to the first step after its
#      replacement has rejoined, 2 workers on 127.0.0.1, without and with
#      the job key.
#   8. operator_scale.py: mwj-operator with 100 jobs of 4 workers on the
#      local test cluster: time to 400 pods, CPU and API requests against
#      the cluster's, RSS and idle CPU, preemption to replacement, and a
#      restart's resync.
#   9. operator_endpoints.py: /healthz, /readyz and /metrics with 500 idle
#      connections held and a burst of 1,000 more: latency p50, p99, max.
#  10. node_scale.py: the local test cluster's node with 4,096 pods behind
#      one headless Service, each waiting for the last one's DNS name:
#      seconds to all created and all Succeeded, the cluster's CPU
#      seconds, peak RSS and threads.
#  11. operator_refusals.py: what a job whose creates the cluster refuses
#      (a quota of 0 Secrets, Pod Security restricted) costs the API
#      server: the operator's writes per job in the first and second
#      minute, and the seconds to every pod at attempt 0 once lifted.
#  11b. operator_reports.py: 100 chiefs reporting their training every 2 s
#      to the operator's status endpoint: its CPU, the status writes a
#      second against the 5 s bound, how fresh the status is; and
#      mwj-worker trained with and without reporting, interleaved.
#  12. accuracy_torch.py: end-to-end accuracy against PyTorch (needs
#      python3-torch): cnn, cnn-deep and the regression trained by both from
#      the same Keras JSON, several seeds each, test accuracy or mse, and
#      mwj's mean minus torch's beside both spreads.
#   0. where a GPU is visible and the CUDA build has been made (make bench
#      makes it wherever nvcc is): bench_gpu, mwj-worker on the GPU, both
#      models at batch 64 and 1024, compute and all-reduce, NCCL's
#      bandwidth; and torch_gpu.py, PyTorch eager on the same GPU.
# BENCH_REPS (default 3) sets how often each comparison configuration runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${MWJ_BIN_DIR:-$here/../build/bin}
reps=${BENCH_REPS:-3}
have_torch=0
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	have_torch=1
fi

cuda_bin=${MWJ_CUDA_BIN_DIR:-$here/../build-cuda/bin}
if [ -x "$cuda_bin/bench_gpu" ] && nvidia-smi -L > /dev/null 2>&1; then
	"$cuda_bin/bench_gpu" --steps 300
	python3 "$here/torch_gpu.py" --data-dir "${MWJ_TEST_DATA:-/usr/share/datasets/fashion-mnist}"
else
	echo '{"bench":"gpu","skipped":"no GPU visible, or no CUDA build (make CUDA=1)"}'
fi
"$bin/bench_train" --steps 300 --reps "$reps" --repo "$here/.."
if [ "$have_torch" = 1 ]; then
	MWJ_BIN_DIR=$bin /usr/bin/python3 "$here/compare_torch.py" --reps "$reps" \
		--models cnn,cnn-pool,cnn-deep
else
	echo '{"bench":"torch","skipped":"python3-torch is not installed; run scripts/install-deps.sh"}'
fi
MWJ_BIN_DIR=$bin /usr/bin/python3 "$here/compare_allreduce.py" --reps "$reps"
if [ "$have_torch" = 1 ]; then
	MWJ_BIN_DIR=$bin /usr/bin/python3 "$here/compare_ddp.py" --reps "$reps"
else
	echo '{"bench":"ddp","skipped":"python3-torch is not installed; run scripts/install-deps.sh"}'
fi
"$bin/bench_backup"
"$bin/bench_rendezvous"
MWJ_BIN_DIR=$bin /usr/bin/python3 "$here/recovery.py"
MWJ_BIN_DIR=$bin /usr/bin/python3 "$here/recovery.py" --key
MWJ_BIN_DIR=$bin /usr/bin/python3 "$here/operator_scale.py"
MWJ_BIN_DIR=$bin /usr/bin/python3 "$here/operator_endpoints.py"
/usr/bin/python3 "$here/node_scale.py"
MWJ_BIN_DIR=$bin /usr/bin/python3 "$here/operator_refusals.py"
MWJ_BIN_DIR=$bin /usr/bin/python3 "$here/operator_reports.py"
if [ "$have_torch" = 1 ]; then
	MWJ_BIN_DIR=$bin /usr/bin/python3 "$here/accuracy_torch.py"
else
	echo '{"bench":"accuracy","skipped":"python3-torch is not installed; run scripts/install-deps.sh"}'
fi
