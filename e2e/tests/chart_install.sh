# helm install, upgrade and uninstall of charts/mwj-operator against a
# local test cluster of its own, the operator running in a pod (in-cluster
# config, the chart's ServiceAccount, only the chart's RBAC). Sourced by
# e2e/tests/chart.sh; uses its check, render and variables.

operator_bin=${MWJ_OPERATOR_BIN:-$root/build/bin/mwj-operator}
release=mwj-mwj-operator # the chart's full name for the release "mwj"
# With OwnerReferencesPermissionEnforcement on, as OpenShift runs it: the
# chart must grant what that plugin asks.
if ! MWJ_CLUSTER_ADMISSION_PLUGINS=OwnerReferencesPermissionEnforcement \
	"$root/e2e/cluster/up.sh" "$state" --image "mwj-operator=$operator_bin" > /dev/null; then
	echo "FAIL the local test cluster starts"
	failed=$((failed + 1))
	return 0
fi
export KUBECONFIG=$state/kubeconfig

install_args=(-n "$ns" --wait --timeout 180s --set logFormat=text --set logLevel=debug)
operator_pod() { k -n "$ns" get pods -l app.kubernetes.io/instance=mwj \
	-o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{"\n"}{end}' | head -1; }
operator_log() { k -n "$ns" logs "$(operator_pod)"; }
mwj() { # mwj NAME NAMESPACE: a one-worker job whose worker exits 0 at once
	printf '%s\n' 'apiVersion: training.mwj.io/v1' 'kind: MultiWorkerJob' \
		"metadata: {name: $1, namespace: $2}" \
		'spec: {workers: 1, template: {spec: {containers: [{name: worker, image: busybox, command: [sh, -c, "exit 0"]}]}}}' |
		k apply -f -
}
phase_of() { [ "$(k -n "$2" get mwj "$1" -o jsonpath='{.status.phase}' 2> /dev/null)" = "$3" ]; }
succeeds() { # succeeds NAME NAMESPACE: the job is created and reaches Succeeded
	mwj "$1" "$2" > /dev/null && until_true 90 "mwj/$1 to succeed" phase_of "$1" "$2" Succeeded
}

check "helm install waits until the operator is ready" \
	"$helm" install mwj "$chart" --create-namespace "${install_args[@]}"
check "the chart's CRD is established" \
	k wait --for=condition=Established --timeout=30s crd/multiworkerjobs.training.mwj.io
sa_is() { [ "$(k -n "$ns" get pod "$(operator_pod)" -o jsonpath='{.spec.serviceAccountName}')" = "$release" ]; }
check "the operator runs as the chart's ServiceAccount" sa_is
in_cluster() { operator_log | grep -q 'from in-cluster' && operator_log | grep -q 'caches filled'; }
check "it found the API server in-cluster and filled its caches under the chart's RBAC" in_cluster
events_ok() { k get events --field-selector involvedObject.name=hello -o jsonpath='{.items[*].reason}' | grep -q CreatedPod; }
check "a job runs to Succeeded: pods, Service, Secret, NetworkPolicy, status, events all allowed" \
	succeeds hello default
check "its events were written" events_ok
secret_read_refused() { # VERB ARGS...: the operator's ServiceAccount gets the real 403
	local out
	out=$(k "$@" --as="system:serviceaccount:$ns:$release" 2>&1) && return 1
	echo "$out"
	grep -q "is forbidden: User \"system:serviceaccount:$ns:$release\" cannot" <<< "$out"
}
check "the operator may not list Secrets in any namespace (403)" \
	secret_read_refused get secrets -n default
check "nor read its own job's ring key" secret_read_refused get secret -n default \
	"$(k get mwj hello -n default -o jsonpath='{.status.ringKeySecret}')"
check "nor watch Secrets cluster-wide" secret_read_refused get secrets -A --watch --request-timeout=5s

# --- The status endpoint: the chart's Service name, CA and TokenReviews ---

status_host=$release-status.$ns.svc
ca_crt() { k -n "$ns" get secret "$release-status-ca" -o jsonpath='{.data.tls\.crt}'; }
installed_ca=$(ca_crt)
check "helm install made the status CA Secret" test -n "$installed_ca"
serving() {
	operator_log | grep -q "status: chiefs report to https://$status_host:8443 (served on :8443" &&
		! operator_log | grep -q 'no --status-ca-dir'
}
check "the operator takes reports at https://$status_host:8443, under the chart's CA" \
	until_true 30 "the status endpoint" serving
may_review() {
	[ "$(k auth can-i create tokenreviews.authentication.k8s.io --as="system:serviceaccount:$ns:$release")" = yes ]
}
check "the operator's ServiceAccount may create TokenReviews (cluster-scoped)" may_review
# A report for the job hello as a chief sends it: to the status Service's
# name (no cluster DNS for a ClusterIP Service here, so curl is told the
# operator pod's address), its certificate verified with the CA in the
# chart's Secret. Prints the HTTP status; a 429 (five a second per job)
# is waited out.
report_code() { # report_code [TOKEN]
	local ip code i
	ip=$(k -n "$ns" get pod "$(operator_pod)" -o jsonpath='{.status.podIP}') &&
		ca_crt | base64 -d > "$state/status-ca.crt" || return 1
	for i in 1 2 3 4 5 6 7 8 9 10; do
		code=$(curl -sS -o "$state/report.out" -w '%{http_code}' --max-time 10 \
			--cacert "$state/status-ca.crt" --resolve "$status_host:8443:$ip" \
			${1:+-H "Authorization: Bearer $1"} -H 'Content-Type: application/json' -d '{}' \
			"https://$status_host:8443/apis/training.mwj.io/v1/namespaces/default/multiworkerjobs/hello/status")
		[ "$code" = 429 ] || break
		sleep 1
	done
	echo "$code"
	cat "$state/report.out"
}
answers() { # answers CODE [TOKEN]: the operator answers a report CODE
	local said
	said=$(report_code "${2-}") && printf '%s\n' "$said" && [ "$(head -1 <<< "$said")" = "$1" ]
}
check "the operator's certificate is valid for the Service's name, from the chart's CA: a report with no token is 401" \
	answers 401
# A token for the operator's audience, but not a chief's: the API server
# reviews it (the chart's ClusterRole allows that), and the operator
# refuses it as no worker of the job: 403. Were the review refused, 503.
review_token() { k -n "$ns" create token "$release" --audience mwj-operator --duration "$1"; }
check "a token for the audience is reviewed (TokenReview allowed) and refused as no chief's: 403" \
	answers 403 "$(review_token 10m)"
no_review() {
	rm -rf "$state/chart-noreview" && cp -r "$chart" "$state/chart-noreview" &&
		sed -i 's/if .Values.status.enabled }}/if false }}/' "$state/chart-noreview/templates/rbac.yaml" &&
		"$helm" upgrade mwj "$state/chart-noreview" "${install_args[@]}" > /dev/null &&
		! k get clusterrole "$release-tokenreview" > /dev/null 2>&1 &&
		answers 503 "$(review_token 11m)" && operator_log | grep -q "token could not be reviewed"
}
check "without the TokenReview ClusterRole no token can be reviewed: 503, and the log says why" no_review
reviewed_again() { "$helm" upgrade mwj "$chart" "${install_args[@]}" > /dev/null &&
	answers 403 "$(review_token 12m)"; }
check "with the chart's RBAC back, tokens are reviewed again" reviewed_again

forbidden() { operator_log | grep -q "create pods.*403"; }
# A rule missing from the chart must break the operator: the same chart
# without create on pods, and a job that never gets its worker.
no_pod_create() {
	rm -rf "$state/chart-deny" && cp -r "$chart" "$state/chart-deny" &&
		sed -i 's/verbs: \[get, list, watch, create, delete\]/verbs: [get, list, watch, delete]/' \
			"$state/chart-deny/templates/rbac.yaml" &&
		"$helm" upgrade mwj "$state/chart-deny" "${install_args[@]}" > /dev/null &&
		mwj denied default > /dev/null || return 1
	until_true 30 "a 403 on the pod's create" forbidden &&
		! k get pod denied-worker-0 > /dev/null 2>&1
}
check "without create on pods the API server refuses the worker (403) and none is made" no_pod_create
restored() { "$helm" upgrade mwj "$chart" "${install_args[@]}" > /dev/null &&
	until_true 90 "mwj/denied to succeed" phase_of denied default Succeeded; }
check "with the chart's RBAC back, the job goes on" restored
plugin_refused() {
	k get mwj orphaned -o jsonpath='{.status.conditions[?(@.type=="Created")].message}' |
		grep -q "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on"
}
no_finalizers() {
	"$helm" upgrade mwj "$chart" "${install_args[@]}" \
		--set rbac.ownerReferencesPermissionEnforcement=false > /dev/null &&
		mwj orphaned default > /dev/null &&
		until_true 60 "the plugin's refusal in the job's Created condition" plugin_refused
}
check "OwnerReferencesPermissionEnforcement without finalizers granted: every create refused, CreateRefused says why" \
	no_finalizers
healed() { "$helm" upgrade mwj "$chart" "${install_args[@]}" > /dev/null &&
	until_true 120 "mwj/orphaned to succeed" phase_of orphaned default Succeeded; }
check "the chart's default grants it, and the job goes on" healed
check "after the helm upgrades above the status CA is still the one made at install (lookup keeps it)" \
	test "$(ca_crt)" = "$installed_ca"
chief_trusts() { # the CA the operator gave the job's chief is the chart's
	local map
	map=$(k -n default get mwj hello -o jsonpath='{.status.statusCAConfigMap}') && [ -n "$map" ] &&
		[ "$(k -n default get configmap "$map" -o jsonpath='{.data.ca\.crt}')" = "$(ca_crt | base64 -d)" ]
}
check "the job's chief was handed that CA (its status CA ConfigMap)" chief_trusts

holder() { [ -n "$(k -n "$ns" get lease mwj-operator -o jsonpath='{.spec.holderIdentity}' 2> /dev/null)" ]; }
two() { "$helm" upgrade mwj "$chart" "${install_args[@]}" --set replicas=2 > /dev/null &&
	until_true 60 "a leader" holder; }
check "helm upgrade to 2 replicas: one leads through the chart's Lease in $ns" two
check "with 2 replicas a job still succeeds" \
	succeeds hello2 default

one_ns() {
	k create namespace ml > /dev/null &&
		"$helm" upgrade mwj "$chart" "${install_args[@]}" --set watchNamespace=ml > /dev/null &&
		! k get clusterrole "$release" > /dev/null 2>&1 && k -n ml get role "$release" > /dev/null &&
		until_true 30 "a leader" holder
}
check "helm upgrade to one namespace, one replica: a Role in it; the ClusterRole gone; the one replica leads through the Lease" one_ns
check "one namespace: TokenReviews still through their ClusterRole" may_review
check "a job in the watched namespace succeeds under the Role" \
	succeeds hello3 ml
# The CA check above can fail: without lookup the chart makes a new CA at
# every upgrade, and every running job's chief would then distrust the
# operator.
no_lookup() {
	local before
	before=$(ca_crt) && [ -n "$before" ] &&
		rm -rf "$state/chart-nolookup" && cp -r "$chart" "$state/chart-nolookup" &&
		sed -i 's/lookup "v1" "Secret" .Release.Namespace $name/dict/' \
			"$state/chart-nolookup/templates/status-ca.yaml" &&
		! cmp -s "$chart/templates/status-ca.yaml" "$state/chart-nolookup/templates/status-ca.yaml" &&
		"$helm" upgrade mwj "$state/chart-nolookup" "${install_args[@]}" --set watchNamespace=ml > /dev/null &&
		[ -n "$(ca_crt)" ] && [ "$(ca_crt)" != "$before" ]
}
check "without lookup an upgrade makes a new CA, which the CA check would refuse" no_lookup

leftovers() {
	local left
	left=$(k get deployments,replicasets,pods,services,serviceaccounts,roles,rolebindings,secrets,leases \
		-A -l app.kubernetes.io/instance=mwj -o name 2> /dev/null
		k get clusterroles,clusterrolebindings -l app.kubernetes.io/instance=mwj -o name 2> /dev/null
		k -n "$ns" get secrets -l owner=helm,name=mwj -o name 2> /dev/null)
	[ -z "$left" ] || { echo "left: $left"; return 1; }
}
uninstall() { "$helm" uninstall mwj -n "$ns" --wait > /dev/null && until_true 60 "nothing left" leftovers; }
check "helm uninstall leaves nothing of the release (nor helm's release Secrets)" uninstall
# The leader cannot release the Lease at uninstall (its ServiceAccount and
# RBAC go first); the Lease is the release's, so it goes with it.
check "helm uninstall deletes the Lease too" fails k -n "$ns" get lease mwj-operator
