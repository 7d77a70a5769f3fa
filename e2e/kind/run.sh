#!/usr/bin/env bash
# The e2e scenarios (e2e/scenarios.sh) on a kind cluster of their own:
#
#   e2e/kind/run.sh [ARTIFACTS_DIR]
#
# builds the images, creates the cluster and loads them (up.sh), installs
# the chart and runs every scenario, a worker preempted both with kubectl
# delete pod and with the Eviction API; on failure it leaves what a look
# needs in ARTIFACTS_DIR (default build/kind/artifacts): each failed
# check's pods, logs, events and descriptions, and `kind export logs`.
# The cluster is deleted at the end, also on Ctrl-C (MWJ_KIND_KEEP=1 keeps
# it). Ends with "N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cluster=${MWJ_KIND_CLUSTER:-mwj-e2e}
artifacts=${1:-$root/build/kind/artifacts}
version=$(awk '$2 == "OPERATOR_VERSION" { gsub(/"/, "", $3); print $3 }' "$root/operator/src/cmd/cli.h")
rm -rf "$artifacts"
mkdir -p "$artifacts"
trap '[ "${MWJ_KIND_KEEP:-0}" = 1 ] || "$here/down.sh" > /dev/null 2>&1' EXIT
trap 'exit 130' INT TERM
if ! kubeconfig=$("$here/up.sh"); then
	echo "FAIL the kind cluster is created with the images loaded"
	echo "0 passed, 1 failed"
	exit 1
fi
export KUBECONFIG=$kubeconfig
MWJ_E2E_PREEMPT="delete evict" MWJ_E2E_WORKER_IMAGE="mwj-worker:$version" \
	MWJ_E2E_CHECKPOINT_VOLUME=${MWJ_E2E_CHECKPOINT_VOLUME:-'{hostPath: {path: /mwj-shared, type: Directory}}'} \
	MWJ_E2E_ARTIFACTS=$artifacts "$root/e2e/scenarios.sh"
rc=$?
if [ "$rc" != 0 ]; then
	kind export logs --name "$cluster" "$artifacts/kind" > /dev/null 2>&1
	echo "kind/run: logs in $artifacts"
fi
exit "$rc"
