#!/usr/bin/env bash
# Deletes the kind cluster that e2e/kind/up.sh made, and what its jobs left
# in the shared folder. MWJ_KIND_CLUSTER and MWJ_KIND_KUBECONFIG as for up.sh.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cluster=${MWJ_KIND_CLUSTER:-mwj-e2e}
kubeconfig=${MWJ_KIND_KUBECONFIG:-$root/build/kind/kubeconfig}
for node in $(kind get nodes --name "$cluster" 2> /dev/null); do
	docker exec "$node" sh -c 'rm -rf /mwj-shared/*' 2> /dev/null
done
kind delete cluster --name "$cluster" --kubeconfig "$kubeconfig"
