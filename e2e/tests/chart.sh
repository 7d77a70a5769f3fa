#!/usr/bin/env bash
# The Helm chart charts/mwj-operator. helm lint; helm template in every
# mode (defaults, one namespace, two replicas, a PDB, a ServiceMonitor,
# metrics off, everything at once), each checked to be valid YAML of
# exactly the expected kinds, with the expected securityContext, args,
# probes and RBAC; values that cannot work refused; the RBAC held to
# operator/api_calls.txt, and that list to the operator's code
# (api_calls.py), each check shown able to fail; the chart's CRD
# byte-identical to crds/ (`make chart-crds` copies it).
#
# Then helm install, upgrade and uninstall against a local test cluster of
# its own, the operator running in a pod under the chart's ServiceAccount
# and RBAC (chart_install.sh). Ends with "N passed, N failed".
set -u
. "$(dirname "$0")/lib.sh"

helm=${HELM:-helm}
py=/usr/bin/python3
chart=$root/charts/mwj-operator
list=$root/operator/api_calls.txt
ns=mwj-system
version=$(sed -n 's/^#define MWJ_RELEASE "\(.*\)"$/\1/p' "$root/common/version.h")
if ! command -v "$helm" > /dev/null; then
	echo "$(basename "$0"): no helm on PATH (scripts/install-deps.sh installs it)"
	echo "0 passed, 1 failed"
	exit 1
fi

render() { # render NAME [HELM ARGS]: the release as `helm template` makes it, into $state/NAME.yaml
	local name=$1
	shift
	"$helm" template mwj "${CHART:-$chart}" -n "$ns" "$@" > "$state/$name.yaml"
}
py_check() { "$py" "$root/e2e/tests/chart_check.py" "$@"; }
fails() { ! "$@"; } # fails CMD...: CMD must fail (its output is shown by check on success only)

# --- The chart as a whole ---

check "helm lint" "$helm" lint --strict "$chart"
chart_version() { grep -qx "appVersion: \"$version\"" "$chart/Chart.yaml"; }
check "appVersion is what mwj-operator --version prints ($version)" chart_version
same_crds() { # the chart's crds/ holds the same files as crds/, byte for byte
	diff -r "$root/crds" "$chart/crds"
}
check "the chart's crds/ is byte-identical to crds/ (make chart-crds copies it)" same_crds
packaged() {
	"$helm" package "$chart" -d "$state" > /dev/null &&
		tar tzf "$state/mwj-operator-0"*.tgz | grep -qx 'mwj-operator/crds/training.mwj.io_multiworkerjobs.yaml'
}
check "helm package ships the CRD in crds/" packaged

# --- RBAC: the code, the list and the chart agree ---

check "the operator calls exactly what operator/api_calls.txt lists" \
	"$py" "$root/e2e/tests/api_calls.py" check "$root/operator/src" "$list"
# The reader must see a call added anywhere: a claim created through
# actions.c's create(), and a delete of a path it cannot resolve.
planted() { # planted CODE WANT: CODE appended to a copy of actions.c fails the check saying WANT
	local src=$state/src out
	rm -rf "$src" && cp -r "$root/operator/src" "$src" && printf '%s\n' "$1" >> "$src/controller/actions.c"
	out=$("$py" "$root/e2e/tests/api_calls.py" check "$src" "$list") && return 1
	printf '%s\n' "$out" | grep -q "$2"
}
check "a call added to the code and not to the list fails the check" planted \
	'static int extra(const struct actions_ctx *ctx, const char *ns, const cJSON *o,
                 struct kube_result *res, char *err)
{
	return create(ctx, "", ns, "persistentvolumeclaims", o, NULL, res, err);
}' 'calls core persistentvolumeclaims create, missing from'
check "a call the reader cannot attribute fails the check" planted \
	'static void extra(struct kube_api *api, const char *p, char *err)
{
	kube_delete(api, p, NULL, NULL, -1, 1, NULL, err);
}' 'cannot attribute an API call: actions.c:[0-9]* (extra)'

removed() { # removed SED WANT: actions.c with SED applied fails the check saying WANT
	local src=$state/src out
	rm -rf "$src" && cp -r "$root/operator/src" "$src" && sed -i "$1" "$src/controller/actions.c" &&
		! cmp -s "$src/controller/actions.c" "$root/operator/src/controller/actions.c" || return 1
	out=$("$py" "$root/e2e/tests/api_calls.py" check "$src" "$list") && return 1
	printf '%s\n' "$out" | grep -q "$2"
}
check "a call removed from the code and not from the list fails the check" removed \
	's/kube_delete(ctx->api, path, j->uid, "Background"/(void)(ctx->api, path, j->uid, "Background"/' \
	'lists training.mwj.io multiworkerjobs delete, which the operator never calls'

# --- Each mode, rendered and checked ---

base_args=(--log-format=text --log-level=info)
elect_args=(--leader-elect=true --leader-election-namespace="$ns" --leader-election-id=mwj-operator)
addrs=(--metrics-addr=:8080 --health-addr=:8081)

check "defaults render" render default
check "defaults: ServiceAccount, ClusterRole and binding, the Lease and its Role and binding, metrics Service, Deployment" \
	py_check kinds "$state/default.yaml" ServiceAccount ClusterRole ClusterRoleBinding Role \
	RoleBinding Lease Service Deployment
check "defaults: non-root, read-only root, no escalation, no capabilities, RuntimeDefault; probes; args" \
	py_check deployment "$state/default.yaml" "$ns" "${base_args[@]}" "${elect_args[@]}" "${addrs[@]}"
check "defaults: the ClusterRole grants exactly the listed calls, finalizers for admission; one replica elects, through that Lease only" \
	py_check rbac "$state/default.yaml" "$ns" "$list" "" true true
check "owner-reference enforcement off renders" render no-owner-refs \
	--set rbac.ownerReferencesPermissionEnforcement=false
check "owner-reference enforcement off: exactly the calls, no finalizers" \
	py_check rbac "$state/no-owner-refs.yaml" "$ns" "$list" "" true false
image_tag() { grep -q "image: \"mwj-operator:$version\"" "$state/default.yaml"; }
check "defaults: the image is mwj-operator:<appVersion>" image_tag

check "one namespace renders" render one-ns --set watchNamespace=ml
check "one namespace: a Role and RoleBinding in it (and the Lease's), nothing cluster-wide" \
	py_check kinds "$state/one-ns.yaml" ServiceAccount Role RoleBinding Role RoleBinding Lease \
	Service Deployment
check "one namespace: --namespace=ml" \
	py_check deployment "$state/one-ns.yaml" "$ns" "${base_args[@]}" --namespace=ml \
	"${elect_args[@]}" "${addrs[@]}"
check "one namespace: the Role in ml grants exactly the listed calls" \
	py_check rbac "$state/one-ns.yaml" "$ns" "$list" ml true true

check "two replicas render" render replicas2 --set replicas=2
check "two replicas: the Lease, and a Role and RoleBinding for it" \
	py_check kinds "$state/replicas2.yaml" ServiceAccount ClusterRole ClusterRoleBinding Role \
	RoleBinding Lease Service Deployment
check "two replicas: leader election on, the Lease in the release's namespace, Recreate" \
	py_check deployment "$state/replicas2.yaml" "$ns" "${base_args[@]}" "${elect_args[@]}" "${addrs[@]}"
check "two replicas: the Lease's Role grants get, create, update of that Lease only" \
	py_check rbac "$state/replicas2.yaml" "$ns" "$list" "" true true

check "a PDB renders (two replicas)" render pdb --set replicas=2 --set pdb.enabled=true
check "a PDB: a PodDisruptionBudget more" \
	py_check kinds "$state/pdb.yaml" ServiceAccount ClusterRole ClusterRoleBinding Role RoleBinding \
	Lease Service Deployment PodDisruptionBudget
check "a PDB: policy/v1, selects the operator's pods, lets one go" py_check metrics "$state/pdb.yaml" "$ns"

check "a ServiceMonitor renders" render monitor --set serviceMonitor.enabled=true
check "a ServiceMonitor: one more" \
	py_check kinds "$state/monitor.yaml" ServiceAccount ClusterRole ClusterRoleBinding Role \
	RoleBinding Lease Service Deployment ServiceMonitor
check "a ServiceMonitor: selects the metrics Service, port metrics, /metrics" \
	py_check metrics "$state/monitor.yaml" "$ns"

check "metrics off renders" render no-metrics --set metrics.enabled=false
check "metrics off: no Service" \
	py_check kinds "$state/no-metrics.yaml" ServiceAccount ClusterRole ClusterRoleBinding Role \
	RoleBinding Lease Deployment
check "metrics off: --metrics-addr=0" \
	py_check deployment "$state/no-metrics.yaml" "$ns" "${base_args[@]}" "${elect_args[@]}" \
	--metrics-addr=0 --health-addr=:8081

all=(--set watchNamespace=ml --set replicas=3 --set pdb.enabled=true --set serviceMonitor.enabled=true
	--set logFormat=json --set logLevel=debug --set metrics.port=9090 --set health.port=9091
	--set leaderElection.id=mwj-lead --set leaderElection.leaseDuration=20s
	--set rbac.ownerReferencesPermissionEnforcement=true --set 'extraArgs={--workers=8}')
check "everything at once renders" render all "${all[@]}"
check "everything at once: every kind, RBAC in namespaces only" \
	py_check kinds "$state/all.yaml" ServiceAccount Role RoleBinding Role RoleBinding Lease Service \
	Deployment PodDisruptionBudget ServiceMonitor
check "everything at once: every value becomes its flag" \
	py_check deployment "$state/all.yaml" "$ns" --log-format=json --log-level=debug --namespace=ml \
	--leader-elect=true --leader-election-namespace="$ns" --leader-election-id=mwj-lead \
	--leader-elect-lease-duration=20s --metrics-addr=:9090 --health-addr=:9091 --workers=8
check "everything at once: the listed calls, plus multiworkerjobs/finalizers for admission" \
	py_check rbac "$state/all.yaml" "$ns" "$list" ml true true
check "everything at once: Service, ServiceMonitor and PDB line up" py_check metrics "$state/all.yaml" "$ns"
check "everything at once passes helm lint --strict" "$helm" lint --strict "$chart" "${all[@]}"

# --- Values that cannot work are refused ---

refused() { # refused WANT HELM-ARGS...: helm refuses to render, saying WANT
	local want=$1 out
	shift
	out=$(render refused "$@" 2>&1) && return 1
	printf '%s\n' "$out" | grep -q -- "$want"
}
check "refused: a PDB with one replica (it would block every drain)" \
	refused "would block every node drain" --set pdb.enabled=true
check "refused: leader election off, saying why (two operators could act at once)" \
	refused "leaderElection.enabled=false is no longer possible: the operator always elects" \
	--set leaderElection.enabled=false
check "refused: a ServiceMonitor with metrics off" \
	refused "serviceMonitor.enabled needs metrics.enabled" --set serviceMonitor.enabled=true \
	--set metrics.enabled=false
check "refused: an unknown log level (values.schema.json)" \
	refused "logLevel must be one of" --set logLevel=loud
check "refused: a watchNamespace that is no namespace name" \
	refused "watchNamespace: Does not match pattern" --set watchNamespace=ML_1
check "refused: replicas 0" refused "replicas: Must be greater than or equal to 1" --set replicas=0
check "refused: one port for metrics and health" \
	refused "metrics.port and health.port must differ" --set metrics.port=8081
check "refused: a flag in extraArgs that the chart sets (the RBAC follows --namespace)" \
	refused "extraArgs: --namespace=ml is set from the chart's values" --set 'extraArgs={--namespace=ml}'
check "refused: leaderElection.enabled neither auto nor true" \
	refused "leaderElection.enabled must be one of" --set leaderElection.enabled=maybe

# --- The pod checks can fail ---

insecure() { # insecure HELM-ARGS...: the pod check refuses what these values render
	render insecure "$@" &&
		fails py_check deployment "$state/insecure.yaml" "$ns" "${base_args[@]}" \
			"${elect_args[@]}" "${addrs[@]}"
}
check "the pod check refuses a writable root filesystem" \
	insecure --set securityContext.readOnlyRootFilesystem=false
check "the pod check refuses privilege escalation" \
	insecure --set securityContext.allowPrivilegeEscalation=true
check "the pod check refuses a pod that may run as root" insecure --set podSecurityContext.runAsNonRoot=false
check "the pod check refuses capabilities kept" insecure --set 'securityContext.capabilities.drop=null'
check "the pod check refuses an extra flag it was not told of" insecure --set 'extraArgs={--workers=2}'

# --- The RBAC check can fail ---

tampered() { # tampered SED: the chart with SED applied to rbac.yaml renders RBAC the check refuses
	rm -rf "$state/chart" && cp -r "$chart" "$state/chart" &&
		sed -i "$1" "$state/chart/templates/rbac.yaml" &&
		! cmp -s "$chart/templates/rbac.yaml" "$state/chart/templates/rbac.yaml" &&
		CHART=$state/chart render tampered --set replicas=2 &&
		fails py_check rbac "$state/tampered.yaml" "$ns" "$list" "" true true
}
check "the RBAC check refuses a verb the operator never calls" \
	tampered 's/verbs: \[get, list, watch, create, delete\]/verbs: [get, list, watch, create, delete, update]/'
check "the RBAC check refuses a missing verb" \
	tampered 's/verbs: \[get, list, watch, create, delete\]/verbs: [get, list, watch, create]/'
check "the RBAC check refuses a wildcard" tampered 's/resources: \[secrets, configmaps\]/resources: ["*"]/'
check "the RBAC check refuses a read of Secrets" \
	tampered '/resources: \[secrets, configmaps\]/{n;s/verbs: \[create\]/verbs: [create, get, list, watch]/}'
check "the RBAC check refuses a Lease rule for every Lease" tampered '/resourceNames:/d'

# --- NOTES.txt tells the user what to do next ---

# helm renders NOTES.txt only at install; a copy of the chart renders it
# as a ConfigMap's data, so that helm template shows it.
notes() { # notes NAME [HELM ARGS]: the rendered NOTES.txt into $state/NAME.yaml
	local name=$1
	shift
	rm -rf "$state/notes-chart" && cp -r "$chart" "$state/notes-chart" &&
		{
			printf '{{- define "notes" -}}\n'
			cat "$chart/templates/NOTES.txt"
			printf '{{- end -}}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\n'
			printf 'data:\n  notes: {{ include "notes" . | toJson }}\n'
		} > "$state/notes-chart/templates/notes.yaml" &&
		CHART=$state/notes-chart render "$name" --show-only templates/notes.yaml "$@"
}
notes_say() { # notes_say NAME HELM-ARGS... -- WORDS...
	local name=$1 args=()
	shift
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	notes "$name" "${args[@]}" && py_check notes "$state/$name.yaml" "$@"
}
check "NOTES.txt: wait for the rollout, apply a job, watch it, read the logs and metrics" \
	notes_say notes-default -- "rollout status deployment/mwj-mwj-operator" \
	"every namespace" "kubectl apply -n default -f examples/minimal.yaml" "kubectl get mwj" \
	"logs deployment/mwj-mwj-operator" "port-forward service/mwj-mwj-operator-metrics 8080" \
	"The replica leads through the Lease mwj-system/mwj-operator"
check "NOTES.txt: one namespace, two replicas: where jobs go, who leads" \
	notes_say notes-ns --set watchNamespace=ml --set replicas=2 -- "in namespace ml only" \
	"kubectl apply -n ml" "Lease mwj-system/mwj-operator" "get lease mwj-operator"

# --- helm install, upgrade, uninstall ---

. "$root/e2e/tests/chart_install.sh"
finish
