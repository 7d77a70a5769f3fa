#!/usr/bin/env bash
# Real helm (3.17) and kubectl against the local test cluster, as against a
# real API server: helm install --wait of a small chart (testdata/helm-smoke:
# ServiceAccount, Role, RoleBinding, ConfigMap, Deployment, Service) with
# helm's default Secret storage, kubectl rollout status and get all, helm
# upgrade to more replicas, the ConfigMap storage driver, then kubectl with a
# ServiceAccount token: allowed what the chart's Role grants, refused the
# rest with the real server's 403, then helm uninstall leaving nothing behind.
# Then mwj-operator's own chart, the operator a pod (in-cluster) of the
# built binary, upgraded 1 -> 2 -> 2 with a new pod template -> 1 replicas
# while jobs keep arriving: its pods' logs show that at most one replica
# ever acted at a time and every pod was created by the replica that led
# then, and the API server's access log that no pod was created twice.
# Ends with "N passed, N failed".
set -u
. "$(dirname "$0")/lib.sh"
helm=${HELM:-helm}
if ! command -v "$helm" > /dev/null; then
	echo "$(basename "$0"): no helm on PATH (scripts/install-deps.sh installs it)"
	echo "0 passed, 1 failed"
	exit 1
fi
operator_bin=${MWJ_OPERATOR_BIN:-$root/build/bin/mwj-operator}
if ! command -v "$kubectl" > /dev/null ||
	! "$root/e2e/cluster/up.sh" "$state" --image "mwj-operator=$operator_bin" > /dev/null; then
	echo "FAIL the local test cluster starts"
	echo "0 passed, 1 failed"
	exit 1
fi
export KUBECONFIG=$state/kubeconfig
chart=$root/e2e/tests/testdata/helm-smoke
h() { "$helm" "$@"; }

check "helm lint passes" h lint "$chart"
check "helm install --wait succeeds with the Secret driver" \
	h install demo "$chart" --wait --timeout 60s
release_secret() {
	[ "$(k get secret sh.helm.release.v1.demo.v1 -o jsonpath='{.type} {.metadata.labels.owner} {.metadata.labels.status}')" = \
		"helm.sh/release.v1 helm deployed" ]
}
check "the release is kept in a Secret of type helm.sh/release.v1" release_secret
check "helm status says deployed" bash -c "'$helm' status demo | grep -q 'STATUS: deployed'"
check "kubectl rollout status sees the Deployment rolled out" \
	k rollout status deployment/demo --timeout=30s
get_all() {
	local out
	out=$(k get all -o name) &&
		printf '%s\n' "$out" | grep -q '^deployment.apps/demo$' &&
		printf '%s\n' "$out" | grep -Eq '^replicaset.apps/demo-[a-z0-9]+$' &&
		printf '%s\n' "$out" | grep -Eq '^pod/demo-[a-z0-9]+-[a-z0-9]{5}$' &&
		printf '%s\n' "$out" | grep -q '^service/demo$' &&
		printf '%s\n' "$out" | grep -q '^service/kubernetes$'
}
check "kubectl get all lists the Deployment, its ReplicaSet, pod and Service, and the kubernetes Service" get_all

upgraded() {
	h upgrade demo "$chart" --set replicas=2 --wait --timeout 60s > /dev/null &&
		[ "$(k get deployment demo -o jsonpath='{.status.readyReplicas} {.status.updatedReplicas}')" = "2 2" ] &&
		[ "$(k get pods -l app.kubernetes.io/instance=demo --no-headers | wc -l)" = 2 ] &&
		[ "$(k get configmap demo-settings -o jsonpath='{.data.replicas}')" = 2 ] &&
		k get secret sh.helm.release.v1.demo.v2 > /dev/null
}
check "helm upgrade to 2 replicas waits for both and records revision 2" upgraded
rolled() {
	local before
	before=$(k get rs -l app.kubernetes.io/instance=demo -o name | wc -l)
	h upgrade demo "$chart" --set replicas=2 --set-json 'command=["sleep","3601"]' \
		--wait --timeout 60s > /dev/null &&
		k rollout status deployment/demo --timeout=30s > /dev/null &&
		[ "$(k get rs -l app.kubernetes.io/instance=demo -o name | wc -l)" = $((before + 1)) ] &&
		[ "$(k get deployment demo -o jsonpath='{.metadata.annotations.deployment\.kubernetes\.io/revision}')" = 2 ] &&
		until_true 20 "the old pods to go" bash -c \
			"[ \"\$('$kubectl' get pods -l app.kubernetes.io/instance=demo -o jsonpath='{.items[*].spec.containers[0].command[1]}')\" = '3601 3601' ]"
}
check "a changed pod template rolls out through a new ReplicaSet" rolled
scaled() {
	k scale deployment/demo --replicas=3 > /dev/null &&
		k rollout status deployment/demo --timeout=30s > /dev/null &&
		[ "$(k get pods -l app.kubernetes.io/instance=demo --no-headers | wc -l)" = 3 ] &&
		k scale deployment/demo --replicas=2 > /dev/null &&
		until_true 20 "2 pods" bash -c \
			"[ \"\$('$kubectl' get pods -l app.kubernetes.io/instance=demo --no-headers | wc -l)\" = 2 ]"
}
check "kubectl scale goes through the scale subresource" scaled
check "helm with the ConfigMap driver installs too" \
	env HELM_DRIVER=configmap "$helm" install cm-demo "$chart" --wait --timeout 60s
check "its release is kept in a ConfigMap" k get configmap sh.helm.release.v1.cm-demo.v1

explain_v2() { # kubectl explain from the Swagger 2.0 document (/openapi/v2, protobuf)
	k explain deployment.spec.replicas --output=plaintext-openapiv2 | grep -q 'replicas.*<integer>'
}
check "kubectl explain reads the OpenAPI v2 document" explain_v2

# ServiceAccount tokens, authorized by RBAC.
token=$(k create token demo --duration=10m 2> /dev/null)
check "kubectl create token issues a token for the chart's ServiceAccount" test -n "$token"
ks() { "$kubectl" --token="$token" "$@"; }
lifetime() { # the TokenRequest (protobuf, from kubectl) asked for 10 minutes
	[ "$(printf '%s' "$token" | /usr/bin/python3 -c 'import base64, json, sys
p = sys.stdin.read().split(".")[1]
c = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
print(c["exp"] - c["iat"], c["sub"])')" = "600 system:serviceaccount:default:demo" ]
}
check "the token is the ServiceAccount's, for the 10 minutes asked" lifetime
check "the token may list pods, as the chart's Role grants" ks get pods
check "the token may read one pod" bash -c \
	"'$kubectl' --token='$token' get \$('$kubectl' get pods -l app.kubernetes.io/instance=demo -o name | head -1)"
denied() { # denied WANT-MESSAGE KUBECTL-ARGS...: refused with exactly that message
	local want=$1 out
	shift
	out=$(ks "$@" 2>&1) && return 1
	[ "$out" = "Error from server (Forbidden): $want" ] || { echo "got: $out"; return 1; }
}
sa='User "system:serviceaccount:default:demo"'
check "the token may not list secrets (403, the real message)" denied \
	"secrets is forbidden: $sa cannot list resource \"secrets\" in API group \"\" in the namespace \"default\"" \
	get secrets
check "the token may not delete a pod" denied \
	"pods \"nope\" is forbidden: $sa cannot delete resource \"pods\" in API group \"\" in the namespace \"default\"" \
	delete pod nope
check "the token may not read deployments" denied \
	"deployments.apps \"demo\" is forbidden: $sa cannot get resource \"deployments\" in API group \"apps\" in the namespace \"default\"" \
	get deployment demo
check "the token may not list pods in another namespace" denied \
	"pods is forbidden: $sa cannot list resource \"pods\" in API group \"\" in the namespace \"kube-system\"" \
	get pods -n kube-system
check "the token may not list nodes" denied \
	"nodes is forbidden: $sa cannot list resource \"nodes\" in API group \"\" at the cluster scope" \
	get nodes
check "kubectl auth can-i, as the ServiceAccount, says yes to listing pods" \
	k auth can-i list pods --as=system:serviceaccount:default:demo
cannot() { ! k auth can-i "$@" --as=system:serviceaccount:default:demo > /dev/null 2>&1; }
check "kubectl auth can-i, as the ServiceAccount, says no to reading secrets" cannot get secrets
bad_token() { # one character of the signed header changed
	local out c=${token:20:1} r=A
	[ "$c" = A ] && r=B
	out=$("$kubectl" --token="${token:0:20}$r${token:21}" get pods 2>&1) && return 1
	printf '%s\n' "$out" | grep -q 'Unauthorized'
}
check "a tampered token is 401 Unauthorized" bad_token

uninstalled() {
	h uninstall demo --wait --timeout 60s > /dev/null &&
		HELM_DRIVER=configmap "$helm" uninstall cm-demo --wait --timeout 60s > /dev/null &&
		until_true 20 "the release's objects to go" bash -c \
			"[ -z \"\$('$kubectl' get all,sa,role,rolebinding,cm,secret -l app.kubernetes.io/instance -o name 2> /dev/null)\" ]" &&
		[ -z "$(k get secret,cm -l owner=helm -o name)" ]
}
check "helm uninstall leaves no release object, pod or record behind" uninstalled
expired() {
	local out
	out=$("$kubectl" --token="$token" get pods 2>&1) && return 1
	printf '%s\n' "$out" | grep -q 'Unauthorized'
}
check "the token ends with its ServiceAccount" expired

# --- mwj-operator's chart: one active replica, always ---

# MWJ_CHART: another version of the chart to try (an older release's).
mchart=${MWJ_CHART:-$root/charts/mwj-operator}
ns=mwj-system
margs=(-n "$ns" --wait --timeout 120s --set logLevel=debug)
sleeper() { # sleeper NAME: a one-worker job that sleeps
	printf '%s\n' 'apiVersion: training.mwj.io/v1' 'kind: MultiWorkerJob' "metadata: {name: $1}" \
		"spec: {workers: 1, template: {spec: {terminationGracePeriodSeconds: 1, containers: [{name: worker, image: 'busybox:1.36', command: [sh, -c, 'sleep 600']}]}}}" |
		k apply -f - > /dev/null
}
# upgrade HELM-ARGS...: helm upgrade --wait while a new job arrives every
# 0.3 s, so that there is work at every moment of the rollout.
upgrade() {
	local n=0 rc t0=$SECONDS jobs
	jobs=$(k get mwj -o name | wc -l)
	h upgrade mwj "$mchart" "${margs[@]}" "$@" > "$state/upgrade.out" 2>&1 &
	local helm_pid=$!
	while kill -0 "$helm_pid" 2> /dev/null; do
		jobs=$((jobs + 1))
		sleeper "u$jobs"
		sleep 0.3
		n=$((n + 1))
	done
	wait "$helm_pid"
	rc=$?
	echo "(helm upgrade $* took about $((SECONDS - t0)) s; $n jobs arrived meanwhile)" |
		tee -a "$state/upgrades.txt"
	[ "$rc" = 0 ] || cat "$state/upgrade.out"
	return "$rc"
}
running() { [ "$(k get pod "$1" -o jsonpath='{.status.phase}' 2> /dev/null)" = Running ]; }
all_running() {
	local j
	for j in $(k get mwj -o jsonpath='{.items[*].metadata.name}'); do
		running "$j-worker-0" || return 1
	done
}
operator_logs() { ls "$state"/node/pods/"$ns"/*/logs/operator-*.log; }

check "mwj-operator's chart installs with one replica" \
	h install mwj "$mchart" --create-namespace "${margs[@]}"
one_elects() {
	local pod
	pod=$(k -n "$ns" get pods -l app.kubernetes.io/instance=mwj -o jsonpath='{.items[0].metadata.name}')
	until_true 30 "a leader" bash -c "[ -n \"\$('$kubectl' -n $ns get lease mwj-operator -o jsonpath='{.spec.holderIdentity}')\" ]" &&
		[ "$(k -n "$ns" get lease mwj-operator -o jsonpath='{.spec.holderIdentity}' | cut -d_ -f1)" = "$pod" ]
}
check "one replica elects too: it holds the chart's Lease" one_elects
# On a real cluster a new pod is available only once its readiness probe
# has passed, seconds after it started; the local node runs no probes, and
# minReadySeconds stands in for them (helm keeps a field its chart does not
# set). A RollingUpdate keeps the old pods that long beside the new ones.
check "minReadySeconds 3 stands in for the readiness probe" \
	k -n "$ns" patch deployment mwj-mwj-operator --type merge -p '{"spec":{"minReadySeconds":3}}'
creates0=$(grep -c '"POST /api/v1/namespaces/default/pods HTTP/[0-9.]*" 201' "$state/nginx-access.log")
check "helm upgrade to 2 replicas while jobs arrive" upgrade --set replicas=2
check "helm upgrade of the pod template with 2 replicas while jobs arrive" \
	upgrade --set replicas=2 --set-string podAnnotations.rollout=2
check "helm upgrade back to 1 replica while jobs arrive" \
	upgrade --set replicas=1 --set-string podAnnotations.rollout=2
check "every job that arrived runs its worker" until_true 120 "every job's worker" all_running
one_at_a_time() {
	# shellcheck disable=SC2046 # one path per replica
	"$root/e2e/tests/acting.py" --now $(operator_logs) > "$state/acting.txt"
	local rc=$?
	cat "$state/acting.txt"
	return "$rc"
}
check "the operator pods' logs: at most one replica acted at a time, each pod created by the leader of that moment" \
	one_at_a_time
sed 's/^/     /' "$state/upgrades.txt" 2> /dev/null
sed -n 's/^none  \(.*\)/     no replica acted \1/p' "$state/acting.txt" 2> /dev/null
once() {
	local made refused jobs
	jobs=$(k get mwj -o name | wc -l)
	made=$(($(grep -c '"POST /api/v1/namespaces/default/pods HTTP/[0-9.]*" 201' "$state/nginx-access.log") - creates0))
	refused=$(grep -c '"POST /api/v1/namespaces/default/pods HTTP/[0-9.]*" 409' "$state/nginx-access.log")
	echo "$made pods created for $jobs jobs, $refused creates refused as duplicates"
	[ "$made" = "$jobs" ] && [ "$refused" = 0 ]
}
check "the API server created each job's pod once, and refused no duplicate" once
check "helm uninstall of mwj-operator's chart" h uninstall mwj -n "$ns" --wait --timeout 60s

finish
