#!/usr/bin/env bash
# Saves what a failed end-to-end run needs looked at, from any cluster
# kubectl reaches: e2e/collect-logs.sh DIR [JOBS_NAMESPACE] [OPERATOR_NAMESPACE]
# DIR gets the jobs, pods, events and their descriptions in both
# namespaces, and each pod's log (and its previous container's). Nothing
# here fails: a cluster half gone still gives what it has.
set -u
dir=$1
ns=${2:-mwj-e2e}
op_ns=${3:-mwj-system}
kubectl=${KUBECTL:-kubectl}
mkdir -p "$dir"
"$kubectl" get nodes -o wide > "$dir/nodes.txt" 2>&1
"$kubectl" get crd multiworkerjobs.training.mwj.io -o yaml > "$dir/crd.yaml" 2>&1
for n in "$ns" "$op_ns"; do
	"$kubectl" -n "$n" get all,mwj,secrets,networkpolicies,pvc,leases -o wide > "$dir/$n-objects.txt" 2>&1
	"$kubectl" -n "$n" get mwj -o yaml > "$dir/$n-mwj.yaml" 2>&1
	"$kubectl" -n "$n" get events --sort-by=.lastTimestamp > "$dir/$n-events.txt" 2>&1
	"$kubectl" -n "$n" describe mwj,pods,deployments > "$dir/$n-describe.txt" 2>&1
	for pod in $("$kubectl" -n "$n" get pods -o name 2> /dev/null); do
		"$kubectl" -n "$n" logs "$pod" --all-containers > "$dir/$n-${pod#pod/}.log" 2>&1
		"$kubectl" -n "$n" get "$pod" -o jsonpath='{.status.containerStatuses[*].restartCount}' 2> /dev/null |
			grep -q '[1-9]' &&
			"$kubectl" -n "$n" logs "$pod" --all-containers --previous > "$dir/$n-${pod#pod/}.previous.log" 2>&1
	done
done
echo "collect-logs: saved in $dir"
