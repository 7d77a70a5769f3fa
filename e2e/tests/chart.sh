#!/usr/bin/env bash
# The Helm chart charts/mwj-operator. helm lint; helm template in every
# mode (defaults, one namespace, two replicas, a PDB, a ServiceMonitor,
# metrics off, the status endpoint off or with a CA of the user's,
# everything at once), each checked to be valid YAML of exactly the
# expected kinds, with the expected securityContext, args, probes, RBAC
# and status endpoint (its Service, URL, port and CA); values that cannot
# work refused; the RBAC held to operator/api_calls.txt, and that list to
# the operator's code (api_calls.py), each check shown able to fail; the
# chart's CRD byte-identical to crds/ (`make chart-crds` copies it).
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

removed() { # removed FILE SED WANT: operator/src/FILE with SED applied fails the check saying WANT
	local src=$state/src out
	rm -rf "$src" && cp -r "$root/operator/src" "$src" && sed -i "$2" "$src/$1" &&
		! cmp -s "$src/$1" "$root/operator/src/$1" || return 1
	out=$("$py" "$root/e2e/tests/api_calls.py" check "$src" "$list") && return 1
	printf '%s\n' "$out" | grep -q "$3"
}
check "a call removed from the code and not from the list fails the check" removed \
	controller/actions.c \
	's/kube_delete(ctx->api, path, j->uid, "Background"/(void)(ctx->api, path, j->uid, "Background"/' \
	'lists training.mwj.io multiworkerjobs delete, which the operator never calls'
# kube_send's method is read from its argument: the TokenReview's POST is
# a create, and the list's only cluster-scoped call.
check "the TokenReview (kube_send POST) is read from the code: removed, it fails the check" removed \
	serve/status_endpoint.c 's/rc = kube_send(e->api, "POST", path,/rc = (void)(e->api, path,/' \
	'lists authentication.k8s.io tokenreviews create, which the operator never calls'
check "a kube_send of another method is a call of that verb" removed \
	serve/status_endpoint.c 's/kube_send(e->api, "POST", path,/kube_send(e->api, "PUT", path,/' \
	'calls authentication.k8s.io tokenreviews update, missing from'

# --- Each mode, rendered and checked ---

base_args=(--log-format=text --log-level=info)
elect_args=(--leader-elect=true --leader-election-namespace="$ns" --leader-election-id=mwj-operator)
addrs=(--metrics-addr=:8080 --health-addr=:8081)
# The status endpoint, on by default: the Service's in-cluster name in the
# release's namespace, and the CA mounted from its Secret.
status_url=https://mwj-mwj-operator-status.$ns.svc:8443
status_args=(--status-url="$status_url" --status-addr=:8443 --status-audience=mwj-operator
	--status-ca-dir=/etc/mwj/status-ca)
# What every mode with the status endpoint on renders beside its own: the
# status Service, the chart's CA Secret, the TokenReviews' ClusterRole and
# binding.
status_kinds=(Service Secret ClusterRole ClusterRoleBinding)

check "defaults render" render default
check "defaults: ServiceAccount, ClusterRole and binding, the Lease and its Role and binding, metrics Service, Deployment; the status Service, CA Secret, TokenReview ClusterRole and binding" \
	py_check kinds "$state/default.yaml" ServiceAccount ClusterRole ClusterRoleBinding Role \
	RoleBinding Lease Service Deployment "${status_kinds[@]}"
check "defaults: non-root, read-only root, no escalation, no capabilities, RuntimeDefault; probes; args" \
	py_check deployment "$state/default.yaml" "$ns" "${base_args[@]}" "${elect_args[@]}" \
	"${addrs[@]}" "${status_args[@]}"
check "defaults: the ClusterRole grants exactly the listed calls, finalizers for admission; one replica elects, through that Lease only; TokenReviews through a ClusterRole of their own" \
	py_check rbac "$state/default.yaml" "$ns" "$list" "" true true true
check "defaults: --status-url is $status_url, the status Service's port, which targets --status-addr; the chart's CA Secret mounted read-only at --status-ca-dir" \
	py_check status "$state/default.yaml" "$ns" on
check "owner-reference enforcement off renders" render no-owner-refs \
	--set rbac.ownerReferencesPermissionEnforcement=false
check "owner-reference enforcement off: exactly the calls, no finalizers" \
	py_check rbac "$state/no-owner-refs.yaml" "$ns" "$list" "" true false true
image_tag() { grep -q "image: \"mwj-operator:$version\"" "$state/default.yaml"; }
check "defaults: the image is mwj-operator:<appVersion>" image_tag

check "one namespace renders" render one-ns --set watchNamespace=ml
check "one namespace: a Role and RoleBinding in it (and the Lease's); cluster-wide only the TokenReviews' ClusterRole" \
	py_check kinds "$state/one-ns.yaml" ServiceAccount Role RoleBinding Role RoleBinding Lease \
	Service Deployment "${status_kinds[@]}"
check "one namespace: --namespace=ml" \
	py_check deployment "$state/one-ns.yaml" "$ns" "${base_args[@]}" --namespace=ml \
	"${elect_args[@]}" "${addrs[@]}" "${status_args[@]}"
check "one namespace: the Role in ml grants exactly the listed calls; TokenReviews (cluster-scoped) still through a ClusterRole" \
	py_check rbac "$state/one-ns.yaml" "$ns" "$list" ml true true true
check "one namespace: the status endpoint as in the defaults" py_check status "$state/one-ns.yaml" "$ns" on

check "two replicas render" render replicas2 --set replicas=2
check "two replicas: the Lease, and a Role and RoleBinding for it" \
	py_check kinds "$state/replicas2.yaml" ServiceAccount ClusterRole ClusterRoleBinding Role \
	RoleBinding Lease Service Deployment "${status_kinds[@]}"
check "two replicas: leader election on, the Lease in the release's namespace, Recreate" \
	py_check deployment "$state/replicas2.yaml" "$ns" "${base_args[@]}" "${elect_args[@]}" \
	"${addrs[@]}" "${status_args[@]}"
check "two replicas: the Lease's Role grants get, create, update of that Lease only" \
	py_check rbac "$state/replicas2.yaml" "$ns" "$list" "" true true true

check "a PDB renders (two replicas)" render pdb --set replicas=2 --set pdb.enabled=true
check "a PDB: a PodDisruptionBudget more" \
	py_check kinds "$state/pdb.yaml" ServiceAccount ClusterRole ClusterRoleBinding Role RoleBinding \
	Lease Service Deployment PodDisruptionBudget "${status_kinds[@]}"
check "a PDB: policy/v1, selects the operator's pods, lets one go" py_check metrics "$state/pdb.yaml" "$ns"

check "a ServiceMonitor renders" render monitor --set serviceMonitor.enabled=true
check "a ServiceMonitor: one more" \
	py_check kinds "$state/monitor.yaml" ServiceAccount ClusterRole ClusterRoleBinding Role \
	RoleBinding Lease Service Deployment ServiceMonitor "${status_kinds[@]}"
check "a ServiceMonitor: selects the metrics Service (not the status one), port metrics, /metrics" \
	py_check metrics "$state/monitor.yaml" "$ns"

check "a PodMonitor renders" render podmon --set podMonitor.enabled=true
check "a PodMonitor: one more" \
	py_check kinds "$state/podmon.yaml" ServiceAccount ClusterRole ClusterRoleBinding Role \
	RoleBinding Lease Service Deployment PodMonitor "${status_kinds[@]}"
check "a PodMonitor: selects every job's workers (not the operator) in any namespace, port metrics" \
	eval 'py_check metrics "$state/podmon.yaml" "$ns" && grep -q "any: true" "$state/podmon.yaml"'

check "metrics off renders" render no-metrics --set metrics.enabled=false
check "metrics off: no metrics Service" \
	py_check kinds "$state/no-metrics.yaml" ServiceAccount ClusterRole ClusterRoleBinding Role \
	RoleBinding Lease Deployment "${status_kinds[@]}"
check "metrics off: --metrics-addr=0" \
	py_check deployment "$state/no-metrics.yaml" "$ns" "${base_args[@]}" "${elect_args[@]}" \
	--metrics-addr=0 --health-addr=:8081 "${status_args[@]}"

check "the status endpoint off renders" render no-status --set status.enabled=false
check "status off: no status Service, no CA Secret, no TokenReview ClusterRole" \
	py_check kinds "$state/no-status.yaml" ServiceAccount ClusterRole ClusterRoleBinding Role \
	RoleBinding Lease Service Deployment
check "status off: no --status-* flag, no status port, no mount" \
	py_check deployment "$state/no-status.yaml" "$ns" "${base_args[@]}" "${elect_args[@]}" "${addrs[@]}"
check "status off: none of the endpoint's objects, flags or mounts, no role grants tokenreviews" \
	py_check status "$state/no-status.yaml" "$ns" off
check "status off: exactly the listed calls but the TokenReviews" \
	py_check rbac "$state/no-status.yaml" "$ns" "$list" "" true true false
check "status off, one namespace, renders" render no-status-ns --set status.enabled=false \
	--set watchNamespace=ml
check "status off, one namespace: nothing cluster-wide at all" \
	py_check kinds "$state/no-status-ns.yaml" ServiceAccount Role RoleBinding Role RoleBinding \
	Lease Service Deployment
check "status off, one namespace: the Role in ml, the Lease's; no TokenReviews" \
	py_check rbac "$state/no-status-ns.yaml" "$ns" "$list" ml true true false

check "a CA Secret of the user's renders" render own-ca --set status.ca.secretName=mwj-ca
check "a CA of the user's: the chart makes no Secret" \
	py_check kinds "$state/own-ca.yaml" ServiceAccount ClusterRole ClusterRoleBinding Role \
	RoleBinding Lease Service Deployment Service ClusterRole ClusterRoleBinding
check "a CA of the user's: Secret mwj-ca mounted at --status-ca-dir, none rendered" \
	py_check status "$state/own-ca.yaml" "$ns" on mwj-ca
check "a CA of the user's: the pod and its flags as in the defaults" \
	py_check deployment "$state/own-ca.yaml" "$ns" "${base_args[@]}" "${elect_args[@]}" \
	"${addrs[@]}" "${status_args[@]}"
# helm template has no cluster for lookup to read: each render makes a new
# CA, which is valid each time (the status check reads it). That an
# installed release keeps its CA across upgrades is checked against a
# cluster (chart_install.sh).
new_ca() { # two renders, two CAs: the chart makes the CA itself when lookup finds none
	render ca-again && ! cmp -s <(grep 'tls.crt:' "$state/default.yaml") <(grep 'tls.crt:' "$state/ca-again.yaml") &&
		py_check status "$state/ca-again.yaml" "$ns" on
}
check "without a cluster (helm template) each render makes a new, valid CA" new_ca

all=(--set watchNamespace=ml --set replicas=3 --set pdb.enabled=true --set serviceMonitor.enabled=true
	--set podMonitor.enabled=true
	--set logFormat=json --set logLevel=debug --set metrics.port=9090 --set health.port=9091
	--set leaderElection.id=mwj-lead --set leaderElection.leaseDuration=20s
	--set rbac.ownerReferencesPermissionEnforcement=true --set 'extraArgs={--workers=8}'
	--set status.port=9443 --set status.audience=mwj-progress --set status.ca.secretName=mwj-ca
	--set status.service.type=NodePort --set status.service.annotations.a=b)
check "everything at once renders" render all "${all[@]}"
check "everything at once: every kind, RBAC in namespaces only but the TokenReviews'" \
	py_check kinds "$state/all.yaml" ServiceAccount Role RoleBinding Role RoleBinding Lease Service \
	Deployment PodDisruptionBudget ServiceMonitor PodMonitor Service ClusterRole ClusterRoleBinding
check "everything at once: every value becomes its flag" \
	py_check deployment "$state/all.yaml" "$ns" --log-format=json --log-level=debug --namespace=ml \
	--leader-elect=true --leader-election-namespace="$ns" --leader-election-id=mwj-lead \
	--leader-elect-lease-duration=20s --metrics-addr=:9090 --health-addr=:9091 \
	--status-url="https://mwj-mwj-operator-status.$ns.svc:9443" --status-addr=:9443 \
	--status-audience=mwj-progress --status-ca-dir=/etc/mwj/status-ca --workers=8
check "everything at once: the listed calls, plus multiworkerjobs/finalizers for admission" \
	py_check rbac "$state/all.yaml" "$ns" "$list" ml true true true
check "everything at once: the status endpoint on port 9443, the user's CA" \
	py_check status "$state/all.yaml" "$ns" on mwj-ca
check "everything at once: Service, ServiceMonitor, PodMonitor (namespace ml) and PDB line up" \
	eval 'py_check metrics "$state/all.yaml" "$ns" && grep -q "matchNames: \[ml\]" "$state/all.yaml"'
check "everything at once passes helm lint --strict" "$helm" lint --strict "$chart" "${all[@]}"
check "the status endpoint off passes helm lint --strict" "$helm" lint --strict "$chart" \
	--set status.enabled=false

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
check "refused: the status endpoint on the health port" \
	refused "status.port must differ from metrics.port and health.port" --set status.port=8081
check "refused: the status endpoint on the metrics port" \
	refused "status.port must differ from metrics.port and health.port" --set status.port=8080
check "refused: a --status-* flag in extraArgs (the Service and the CA follow status)" \
	refused "extraArgs: --status-url=https://x:1 is set from the chart's values" \
	--set 'extraArgs={--status-url=https://x:1}'
check "refused: a status Service of type ExternalName (it would select no pod)" \
	refused "status.service.type must be one of" --set status.service.type=ExternalName
check "refused: a status.ca.secretName that is no Secret name" \
	refused "status.ca.secretName: Does not match pattern" --set status.ca.secretName=My_CA
check "refused: an empty status.audience" \
	refused "status.audience: String length must be greater than or equal to 1" --set status.audience=

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

tamper() { # tamper FILE SED: a copy of the chart in $state/chart, SED changing its templates/FILE
	rm -rf "$state/chart" && cp -r "$chart" "$state/chart" &&
		sed -i "$2" "$state/chart/templates/$1" &&
		! cmp -s "$chart/templates/$1" "$state/chart/templates/$1"
}
tampered_in() { # tampered_in WATCH STATUS SED HELM-ARGS...: the RBAC check passes on what the
	# chart renders with HELM-ARGS, and refuses it with SED applied to rbac.yaml
	local watch=$1 status=$2 sed=$3
	shift 3
	render untampered --set replicas=2 "$@" &&
		py_check rbac "$state/untampered.yaml" "$ns" "$list" "$watch" true true "$status" &&
		tamper rbac.yaml "$sed" && CHART=$state/chart render tampered --set replicas=2 "$@" &&
		fails py_check rbac "$state/tampered.yaml" "$ns" "$list" "$watch" true true "$status"
}
tampered() { tampered_in "" true "$1"; } # tampered SED: the defaults, two replicas
check "the RBAC check refuses a verb the operator never calls" \
	tampered 's/verbs: \[get, list, watch, create, delete\]/verbs: [get, list, watch, create, delete, update]/'
check "the RBAC check refuses a missing verb" \
	tampered 's/verbs: \[get, list, watch, create, delete\]/verbs: [get, list, watch, create]/'
check "the RBAC check refuses a wildcard" tampered 's/resources: \[secrets, configmaps\]/resources: ["*"]/'
check "the RBAC check refuses a read of Secrets" \
	tampered '/resources: \[secrets, configmaps\]/{n;s/verbs: \[create\]/verbs: [create, get, list, watch]/}'
check "the RBAC check refuses a Lease rule for every Lease" tampered '/resourceNames:/d'
check "the RBAC check refuses a verb on tokenreviews the operator never calls" \
	tampered '/resources: \[tokenreviews\]/{n;s/verbs: \[create\]/verbs: [create, get]/}'
check "the RBAC check refuses TokenReviews not granted" \
	tampered '/resources: \[tokenreviews\]/{n;s/verbs: \[create\]/verbs: [get]/}'
check "the RBAC check refuses the TokenReviews' ClusterRole bound in one namespace only (a RoleBinding)" \
	tampered 's/^kind: ClusterRoleBinding$/kind: RoleBinding/'
check "the RBAC check refuses TokenReviews granted by the jobs' role (a Role with watchNamespace)" \
	tampered '/verbs: \[create, patch\]/a\  - apiGroups: [authentication.k8s.io]\n    resources: [tokenreviews]\n    verbs: [create]'
check "the RBAC check refuses no TokenReviews with watchNamespace (a cluster-scoped call needs a ClusterRole)" \
	tampered_in ml true 's/if .Values.status.enabled }}/if and .Values.status.enabled (not .Values.watchNamespace) }}/' \
	--set watchNamespace=ml
check "the RBAC check refuses TokenReviews granted with the status endpoint off" \
	tampered_in "" false 's/if .Values.status.enabled }}/if true }}/' --set status.enabled=false

# --- The status check can fail ---

status_tampered() { # status_tampered FILE SED MODE SECRET HELM-ARGS...: the status check passes on
	# what the chart renders with HELM-ARGS, and refuses it with SED applied to templates/FILE
	local file=$1 sed=$2 mode=$3 secret=$4
	shift 4
	render untampered "$@" && py_check status "$state/untampered.yaml" "$ns" "$mode" ${secret:+"$secret"} &&
		tamper "$file" "$sed" && CHART=$state/chart render tampered "$@" &&
		fails py_check status "$state/tampered.yaml" "$ns" "$mode" ${secret:+"$secret"}
}
check "the status check refuses --status-url with the status endpoint off" \
	status_tampered deployment.yaml '0,/if .Values.status.enabled/s//if true/' off "" \
	--set status.enabled=false
check "the status check refuses a status Service with it off" \
	status_tampered status-service.yaml 's/if .Values.status.enabled/if true/' off "" \
	--set status.enabled=false
check "the status check refuses a CA Secret with it off" \
	status_tampered status-ca.yaml 's/and .Values.status.enabled (not .Values.status.ca.secretName)/not .Values.status.ca.secretName/' \
	off "" --set status.enabled=false
check "the status check refuses a Secret made beside status.ca.secretName's" \
	status_tampered status-ca.yaml 's/(not .Values.status.ca.secretName)/true/' on mwj-ca \
	--set status.ca.secretName=mwj-ca
check "the status check refuses the chart's CA mounted in place of status.ca.secretName's" \
	status_tampered _helpers.tpl 's/ .Values.status.ca.secretName -}}/ "" -}}/' on mwj-ca \
	--set status.ca.secretName=mwj-ca
check "the status check refuses a --status-url in another namespace than the release's" \
	status_tampered _helpers.tpl 's/.Release.Namespace (int .Values.status.port)/"default" (int .Values.status.port)/' on ""
check "the status check refuses a --status-url whose port is not the Service's" \
	status_tampered status-service.yaml 's/      port: {{ .Values.status.port }}/      port: 443/' on ""
check "the status check refuses a --status-addr that is not the container port" \
	status_tampered deployment.yaml 's/--status-addr=:{{ .Values.status.port }}/--status-addr=:9443/' on ""
check "the status check refuses the CA mounted writable" \
	status_tampered deployment.yaml '/mountPath: {{ include "mwj-operator.statusCADir" . }}/{n;s/readOnly: true/readOnly: false/}' on ""
check "the status check refuses a CA Secret whose certificate is no CA's" \
	status_tampered status-ca.yaml 's/genCA (printf "%s status CA" (include "mwj-operator.fullname" .)) 3650/genSelfSignedCert "mwj" nil nil 3650/' on ""
check "the status check refuses a CA that expires in a month" \
	status_tampered status-ca.yaml 's/ 3650 -}}/ 30 -}}/' on ""

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
check "NOTES.txt: wait for the rollout, apply a job, watch it, read the logs and metrics; where the chiefs report" \
	notes_say notes-default -- "rollout status deployment/mwj-mwj-operator" \
	"every namespace" "kubectl apply -n default -f examples/minimal.yaml" "kubectl get mwj" \
	"logs deployment/mwj-mwj-operator" "port-forward service/mwj-mwj-operator-metrics 8080" \
	"The replica leads through the Lease mwj-system/mwj-operator" \
	"status endpoint" "$status_url" "the audience mwj-operator" "TokenReview" \
	"Secret mwj-system/mwj-mwj-operator-status-ca (made by this chart, kept across upgrades)"
check "NOTES.txt: the status endpoint off says so" \
	notes_say notes-status --set status.enabled=false -- "status.enabled=false: the chiefs report no progress"
check "NOTES.txt: a CA of the user's is named" \
	notes_say notes-own-ca --set status.ca.secretName=mwj-ca -- "Secret mwj-system/mwj-ca (yours)"
check "NOTES.txt: one namespace, two replicas: where jobs go, who leads" \
	notes_say notes-ns --set watchNamespace=ml --set replicas=2 -- "in namespace ml only" \
	"kubectl apply -n ml" "Lease mwj-system/mwj-operator" "get lease mwj-operator"

# --- helm install, upgrade, uninstall ---

. "$root/e2e/tests/chart_install.sh"
finish
