#!/usr/bin/env bash
# make bench: every benchmark, as JSON lines on stdout.
#   1. bench_train: mwj's training throughput for both models at 1 and 2
#      threads, with achieved GFLOP/s beside the sgemm rate of this machine.
#   2. compare_torch.py: the same against PyTorch (needs python3-torch),
#      at PyTorch's defaults and at its best, with the ratio.
# BENCH_REPS (default 3) sets how often each comparison configuration runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${MWJ_BIN_DIR:-$here/../build/bin}

"$bin/bench_train" --steps 300
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	MWJ_BIN_DIR=$bin /usr/bin/python3 "$here/compare_torch.py" --reps "${BENCH_REPS:-3}"
else
	echo '{"bench":"torch","skipped":"python3-torch is not installed; run scripts/install-deps.sh"}'
fi
