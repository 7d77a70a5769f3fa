#!/usr/bin/env bash
# The end-to-end scenarios (e2e/scenarios.sh) on a local test cluster of
# their own: the chart installs the operator, which runs as a pod from the
# built binary (the image mwj-operator maps to it), and the jobs' pods run
# the built mwj-worker. Preemption is tried three ways: the cluster's own
# fault injection (as the scheduler preempts), kubectl delete pod and the
# Eviction API. e2e/kind/run.sh runs the same scenarios on kind. Ends with
# "N passed, N failed".
set -u
. "$(dirname "$0")/lib.sh"

operator_bin=${MWJ_OPERATOR_BIN:-$root/build/bin/mwj-operator}
if ! command -v "${HELM:-helm}" > /dev/null || ! command -v "$kubectl" > /dev/null; then
	echo "$(basename "$0"): needs helm and kubectl on PATH (scripts/install-deps.sh installs them)"
	echo "0 passed, 1 failed"
	exit 1
fi
if ! "$root/e2e/cluster/up.sh" "$state" --image "mwj-operator=$operator_bin" > /dev/null; then
	echo "FAIL the local test cluster starts"
	echo "0 passed, 1 failed"
	exit 1
fi
export KUBECONFIG=$state/kubeconfig
# The operator logs in text at info, as the chart's defaults say; the
# scenarios then upgrade it to debug.
MWJ_E2E_PREEMPT=${MWJ_E2E_PREEMPT:-hook delete evict} \
	MWJ_E2E_PREEMPT_HOOK="$root/e2e/cluster/fault.sh -d $state preempt" \
	MWJ_E2E_ARTIFACTS=${MWJ_E2E_ARTIFACTS:-$state/artifacts} \
	"$root/e2e/scenarios.sh"
