#!/usr/bin/env bash
# Stops the local test cluster started by up.sh: e2e/cluster/down.sh [STATE_DIR]
set -euo pipefail
dir=${1:-/tmp/mwj-cluster}
if [ -f "$dir/apiserver.pid" ]; then
	kill "$(cat "$dir/apiserver.pid")" 2>/dev/null || true
	rm -f "$dir/apiserver.pid"
fi
echo "down: stopped"
