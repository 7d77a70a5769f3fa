# Shared by the end-to-end scripts in e2e/tests: start a local test cluster
# of their own, count checks, and end with "N passed, N failed".
#   . "$(dirname "$0")/lib.sh"; cluster_up; check NAME CMD...; finish
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
state=$(mktemp -d /tmp/mwj-e2e-XXXXXX)
# A script may define at_exit, to stop what it started, before the cluster
# goes. MWJ_E2E_KEEP=1 keeps the state folder (logs) for a look afterwards.
trap 'declare -F at_exit > /dev/null && at_exit; "$root/e2e/cluster/down.sh" "$state" > /dev/null
	[ "${MWJ_E2E_KEEP:-0}" = 1 ] && echo "kept $state" || rm -rf "$state"' EXIT
. "$root/e2e/checks.sh"
kubectl=${KUBECTL:-kubectl}

cluster_up() { # starts the cluster and points kubectl at it, or gives up
	if ! command -v "$kubectl" > /dev/null; then
		echo "$(basename "$0"): no kubectl on PATH"
		echo "0 passed, 1 failed"
		exit 1
	fi
	"$root/e2e/cluster/up.sh" "$state" > /dev/null || {
		echo "0 passed, 1 failed"
		exit 1
	}
	export KUBECONFIG=$state/kubeconfig
}

k() { "$kubectl" "$@"; }

fault() { "$root/e2e/cluster/fault.sh" -d "$state" "$@"; }
