#!/usr/bin/env bash
# Stops the local test cluster started by up.sh, every pod it runs, and
# its nginx front: e2e/cluster/down.sh [STATE_DIR]
set -euo pipefail
dir=${1:-/tmp/mwj-cluster}
if [ -f "$dir/apiserver.pid" ]; then
	pid=$(cat "$dir/apiserver.pid")
	kill "$pid" 2>/dev/null || true # it stops its pods on SIGTERM
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	# Had it died or hung, its pods would still run: any process left in a
	# pod's process group that carries the node's pod marker goes too.
	if [ -f "$dir/node/process-groups" ]; then
		while read -r pgid; do
			for p in $(pgrep -g "$pgid" 2>/dev/null); do
				if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -q '^MWJ_LOCAL_POD_IP='; then
					kill -9 "$p" 2>/dev/null || true
				fi
			done
		done < "$dir/node/process-groups"
	fi
	rm -f "$dir/apiserver.pid"
fi
# The front goes last, so that pods can reach the API server while they
# stop. SIGTERM is nginx's fast shutdown: a graceful one (SIGQUIT) would
# wait for the open watches to end.
if [ -f "$dir/nginx.pid" ]; then
	pid=$(cat "$dir/nginx.pid")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$dir/nginx.pid"
fi
echo "down: stopped"
