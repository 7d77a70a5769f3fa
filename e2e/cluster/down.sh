#!/usr/bin/env bash
# Stops the local test cluster started by up.sh, and every pod it runs:
# e2e/cluster/down.sh [STATE_DIR]
set -euo pipefail
dir=${1:-/tmp/mwj-cluster}
if [ -f "$dir/apiserver.pid" ]; then
	pid=$(cat "$dir/apiserver.pid")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$dir/apiserver.pid"
fi
echo "down: stopped"
