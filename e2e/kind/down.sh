#!/usr/bin/env bash
# Deletes the kind cluster that e2e/kind/up.sh made, and what its jobs left
# in the shared folder. MWJ_KIND_CLUSTER names it (mwj-e2e).
set -uo pipefail
cluster=${MWJ_KIND_CLUSTER:-mwj-e2e}
for node in $(kind get nodes --name "$cluster" 2> /dev/null); do
	docker exec "$node" sh -c 'rm -rf /mwj-shared/*' 2> /dev/null
done
kind delete cluster --name "$cluster"
