#!/usr/bin/env bash
# Creates the kind cluster of the e2e scenarios and loads the images into
# it; prints the path of its kubeconfig, the only line on stdout:
#
#   export KUBECONFIG=$(e2e/kind/up.sh)
#
# Needs docker, kind, kubectl. Builds mwj-operator:VERSION and
# mwj-worker:VERSION with `make images` and Docker first, unless
# MWJ_KIND_BUILD=0 (then they must exist). MWJ_KIND_CLUSTER names the
# cluster (mwj-e2e); MWJ_KIND_KUBECONFIG is where its kubeconfig goes
# (build/kind/kubeconfig). e2e/kind/down.sh deletes it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cluster=${MWJ_KIND_CLUSTER:-mwj-e2e}
kubeconfig=${MWJ_KIND_KUBECONFIG:-$root/build/kind/kubeconfig}
for tool in docker kind kubectl; do
	command -v "$tool" > /dev/null || { echo "kind/up: no $tool on PATH" >&2; exit 1; }
done
version=$(awk '$2 == "OPERATOR_VERSION" { gsub(/"/, "", $3); print $3 }' "$root/operator/src/cmd/cli.h")
if [ "${MWJ_KIND_BUILD:-1}" = 1 ]; then
	make -C "$root" images CONTAINER_ENGINE=docker >&2
fi
mkdir -p "$(dirname "$kubeconfig")" /tmp/mwj-kind-shared
kind create cluster --name "$cluster" --config "$here/kind-config.yaml" --kubeconfig "$kubeconfig" \
	--wait 180s >&2
# Root in each node empties what an earlier run left (its files are user
# 65532's) and lets the images' user write there.
for node in $(kind get nodes --name "$cluster"); do
	docker exec "$node" sh -c 'mkdir -p /mwj-shared && rm -rf /mwj-shared/* && chmod 1777 /mwj-shared' >&2
done
kind load docker-image --name "$cluster" "mwj-operator:$version" "mwj-worker:$version" >&2
echo "$kubeconfig"
