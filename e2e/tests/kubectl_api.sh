#!/usr/bin/env bash
# Real kubectl against the local test cluster's API server: the CRD and the
# examples apply, `get mwj` shows the printer columns, a wrong manifest is
# refused naming the field, patches bump the generation, status changes only
# through the status subresource, get -w streams changes, a stale update is
# a conflict, kubectl wait sees a condition, injected 500s and 429s behave
# as on a struggling API server, and delete deletes. Then the refusals a
# real cluster makes, as kubectl shows them: ResourceQuota (`kubectl
# create quota`, describe, the exceeded and failed quota 403s), LimitRange
# defaults and limits, Pod Security labels (a refused `kubectl run`, the
# Warning lines), a new namespace's missing ServiceAccount, a CRD's
# validation rule, and a namespace that stays Terminating. Ends with "N
# passed, N failed".
set -u
. "$(dirname "$0")/lib.sh"
# A new namespace gets its ServiceAccount "default" this long after it is
# made (up.sh's default is 2 s; longer here, so that the refusal seen
# right after is not a race with kubectl's start-up).
export MWJ_CLUSTER_SA_DELAY_SECONDS=5
cluster_up

check "the CRD applies" k apply -f "$root/crds/"
check "the CRD is established" k wait --for=condition=Established --timeout=10s \
	crd/multiworkerjobs.training.mwj.io
check "the examples apply" k apply -f "$root/examples/"
check "re-applying an unchanged example changes nothing" \
	bash -c "'$kubectl' apply -f '$root/examples/minimal.yaml' | grep -q unchanged"

columns() {
	k get mwj mnist | head -1 |
		grep -Eq '^NAME +WORKERS +PHASE +READY +RESTARTS +PROGRESS +EPOCH +LOSS +ETA +AGE$' &&
		k get mwj mnist --no-headers | grep -Eq '^mnist +2 +[0-9]+s$'
}
check "get mwj shows workers, phase, ready, restarts, the training columns and age" columns
defaults() {
	[ "$(k get mwj mnist -o jsonpath='{.spec.port} {.spec.restartPolicy} {.spec.backoffLimit}')" = \
		"2222 ExitCode 6" ]
}
check "schema defaults are applied" defaults

refused() {
	local out
	out=$(printf '%s\n' 'apiVersion: training.mwj.io/v1' 'kind: MultiWorkerJob' \
		'metadata: {name: bad}' \
		'spec: {workers: 0, template: {spec: {containers: [{name: w, image: i}]}}}' |
		k apply -f - 2>&1) && return 1
	printf '%s\n' "$out" | grep -q 'spec.workers: Invalid value: 0' &&
		! k get mwj bad > /dev/null 2>&1
}
check "an invalid manifest is refused naming the field" refused

generation() {
	local g0 g1 g2
	g0=$(k get mwj mnist -o jsonpath='{.metadata.generation}')
	k patch mwj mnist --type=merge -p '{"spec":{"backoffLimit":3}}' > /dev/null &&
		g1=$(k get mwj mnist -o jsonpath='{.metadata.generation}') &&
		k label mwj mnist team=vision > /dev/null &&
		g2=$(k get mwj mnist -o jsonpath='{.metadata.generation}') &&
		[ "$g0" = 1 ] && [ "$g1" = 2 ] && [ "$g2" = 2 ] &&
		[ "$(k get mwj mnist -o jsonpath='{.spec.backoffLimit}')" = 3 ]
}
check "a spec patch bumps the generation, a label does not" generation
workers_fixed() {
	local out
	out=$(k patch mwj mnist --type=merge -p '{"spec":{"workers":3}}' 2>&1) && return 1
	echo "$out"
	[ "$out" = 'The MultiWorkerJob "mnist" is invalid: spec.workers: Invalid value: "integer": workers is immutable: delete the job and create it again to change the number of workers' ]
}
check "spec.workers is immutable: the CRD's rule refuses a change, as a real server words it" workers_fixed

status_rules() {
	k patch mwj mnist --type=merge -p '{"status":{"phase":"Running"}}' > /dev/null &&
		[ -z "$(k get mwj mnist -o jsonpath='{.status.phase}')" ] &&
		k patch mwj mnist --subresource=status --type=merge \
			-p '{"status":{"phase":"Running"},"spec":{"workers":9}}' > /dev/null &&
		[ "$(k get mwj mnist -o jsonpath='{.status.phase} {.spec.workers}')" = "Running 2" ] &&
		k get mwj mnist --no-headers | grep -Eq '^mnist +2 +Running '
}
check "status changes only through the status subresource" status_rules

watched() {
	local out=$state/watch.out
	timeout 8 "$kubectl" get mwj mnist -w --output-watch-events > "$out" 2>&1 &
	local pid=$!
	for _ in $(seq 50); do grep -q mnist "$out" && break; sleep 0.1; done
	k patch mwj mnist --subresource=status --type=merge -p '{"status":{"phase":"Succeeded"}}' \
		> /dev/null
	for _ in $(seq 50); do grep -q Succeeded "$out" && break; sleep 0.1; done
	kill "$pid" 2> /dev/null
	wait "$pid" 2> /dev/null
	grep -Eq '^ADDED +mnist' "$out" && grep -Eq '^MODIFIED +mnist +2 +Succeeded' "$out"
}
check "get -w streams the job's changes" watched

conflict() {
	local stale out
	stale=$(k get mwj mnist -o json)
	k patch mwj mnist --type=merge -p '{"spec":{"backoffLimit":4}}' > /dev/null || return 1
	out=$(printf '%s\n' "$stale" | k replace -f - 2>&1) && return 1
	printf '%s\n' "$out" | grep -q 'the object has been modified'
}
check "an update with a stale resourceVersion is a conflict" conflict

waited() {
	local pid rc
	timeout 20 "$kubectl" wait --for=condition=Succeeded --timeout=15s mwj/mnist > /dev/null &
	pid=$!
	sleep 0.5
	k patch mwj mnist --subresource=status --type=merge -p '{"status":{"conditions":[{"type":"Succeeded","status":"True","reason":"AllWorkersSucceeded","message":"every worker exited 0","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}' > /dev/null || return 1
	wait "$pid"
	rc=$?
	[ "$rc" = 0 ] && ! k wait --for=condition=Failed --timeout=1s mwj/mnist > /dev/null 2>&1
}
check "kubectl wait --for=condition returns when the job's condition turns True" waited

server_errors() {
	local out
	fault errors 500 2 > /dev/null || return 1
	out=$(k get mwj mnist 2>&1) && return 1
	printf '%s\n' "$out" | grep -q 'injected by the test cluster' || return 1
	sleep 2.2
	k get mwj mnist > /dev/null
}
check "injected 500s fail requests for a while, then the API answers again" server_errors

throttled() {
	fault errors 429 2 > /dev/null &&
		# Clients wait out a 429 with Retry-After and try again.
		k get mwj mnist > /dev/null &&
		fault errors | grep -Eq '"answered": *[1-9]'
}
check "injected 429s are ridden out by kubectl's retries" throttled

deleted() { # the other examples' jobs stay
	local jobs
	jobs=$(cat "$root"/examples/*.yaml | grep -c '^kind: MultiWorkerJob')
	k delete -f "$root/examples/all-fields.yaml" > /dev/null &&
		! k get mwj mnist-all-fields > /dev/null 2>&1 &&
		[ "$(k get mwj -o name | wc -l)" = $((jobs - 1)) ]
}
check "delete removes the job" deleted

# --- what a real cluster refuses, as kubectl shows it ---

new_ns() { # NAME: a namespace whose ServiceAccount exists
	k create namespace "$1" > /dev/null &&
		until_true 15 "the ServiceAccount of $1" k -n "$1" get serviceaccount default
}
refused_with() { # TEXT CMD...: CMD fails, saying TEXT
	local want=$1 out
	shift
	out=$("$@" 2>&1) && { echo "not refused: $out"; return 1; }
	printf '%s\n' "$out" | grep -qF -- "$want" || { echo "said: $out"; return 1; }
}

check "a new namespace has its ServiceAccount" new_ns quota
check "kubectl create quota makes a ResourceQuota" \
	k -n quota create quota q --hard=secrets=0,pods=2,requests.cpu=1,limits.cpu=2
described() {
	until_true 10 "the quota's status" bash -c "'$kubectl' -n quota get quota q -o jsonpath='{.status.used.pods}' | grep -q 0" &&
		k -n quota describe quota q | grep -Eq '^secrets +0 +0$' &&
		k -n quota describe quota q | grep -Eq '^requests.cpu +0 +1$' &&
		k -n quota get quota q --no-headers | grep -q 'limits.cpu: 0/2'
}
check "kubectl describe quota and get quota show used and hard" described
check "a Secret over the quota is refused: exceeded quota" \
	refused_with 'secrets "s" is forbidden: exceeded quota: q, requested: secrets=1, used: secrets=0, limited: secrets=0' \
	k -n quota create secret generic s --from-literal=a=b
check "a pod without limits under a cpu quota is refused: failed quota" \
	refused_with 'pods "w" is forbidden: failed quota: q: must specify limits.cpu for: w; requests.cpu for: w' \
	k -n quota run w --image=i --restart=Never
raised() {
	k -n quota patch quota q --type=merge -p '{"spec":{"hard":{"secrets":"1"}}}' > /dev/null &&
		k -n quota create secret generic s --from-literal=a=b > /dev/null
}
check "raising the quota lets the next create through" raised

limit_range() {
	printf '%s\n' 'apiVersion: v1' 'kind: LimitRange' 'metadata: {name: lr}' \
		'spec: {limits: [{type: Container, max: {cpu: "1"}, default: {cpu: 500m, memory: 128Mi}, defaultRequest: {cpu: 100m}}]}' |
		k -n quota apply -f - > /dev/null &&
		k -n quota run d --image=i --restart=Never > /dev/null &&
		[ "$(k -n quota get pod d -o jsonpath='{.spec.containers[0].resources.limits.cpu} {.spec.containers[0].resources.requests.cpu}')" = "500m 100m" ]
}
check "a LimitRange's defaults fill a pod's requests and limits" limit_range
check "a limit over the LimitRange's max is refused" \
	refused_with 'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2' \
	k -n quota run big --image=i --restart=Never --overrides='{"apiVersion":"v1","spec":{"containers":[{"name":"big","image":"i","resources":{"limits":{"cpu":"2"}}}]}}'

check "a namespace for Pod Security" new_ns psa
existing_warned() {
	local out
	k -n psa run before --image=i --restart=Never > /dev/null || return 1
	out=$(k label namespace psa pod-security.kubernetes.io/enforce=restricted 2>&1) || return 1
	printf '%s\n' "$out" | grep -qF 'Warning: existing pods in namespace "psa" violate the new PodSecurity enforce level "restricted:latest"' &&
		printf '%s\n' "$out" | grep -qF 'Warning: before: allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile'
}
check "labelling a namespace restricted warns of the pods that break it" existing_warned
check "kubectl run in a restricted namespace is refused: violates PodSecurity" \
	refused_with 'pods "x" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "x" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "x" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "x" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "x" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")' \
	k -n psa run x --image=i --restart=Never
restricted_ok() {
	k -n psa run ok --image=i --restart=Never --overrides='{"apiVersion":"v1","spec":{"securityContext":{"runAsNonRoot":true,"runAsUser":65532,"runAsGroup":65532,"seccompProfile":{"type":"RuntimeDefault"}},"containers":[{"name":"ok","image":"i","securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}]}}' > /dev/null
}
check "the securityContext the README recommends passes restricted" restricted_ok
warned() {
	local out
	k label namespace psa pod-security.kubernetes.io/enforce- pod-security.kubernetes.io/warn=baseline --overwrite > /dev/null &&
		out=$(k -n psa run h --image=i --restart=Never --overrides='{"apiVersion":"v1","spec":{"hostNetwork":true}}' 2>&1) &&
		printf '%s\n' "$out" | grep -qF 'Warning: would violate PodSecurity "baseline:latest": host namespaces (hostNetwork)' &&
		k -n psa get pod h > /dev/null
}
check "warn admits the pod and kubectl prints the Warning" warned

no_sa_yet() {
	k create namespace fresh > /dev/null &&
		refused_with 'pods "early" is forbidden: error looking up service account fresh/default: serviceaccount "default" not found' \
			k -n fresh run early --image=i --restart=Never &&
		until_true 15 "the ServiceAccount" k -n fresh get serviceaccount default &&
		k -n fresh run early --image=i --restart=Never > /dev/null
}
check "a pod in a namespace made a moment ago is refused until its ServiceAccount exists" no_sa_yet

immutable() {
	printf '%s\n' 'apiVersion: apiextensions.k8s.io/v1' 'kind: CustomResourceDefinition' \
		'metadata: {name: widgets.example.com}' \
		'spec: {group: example.com, scope: Namespaced, names: {plural: widgets, kind: Widget}, versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer, x-kubernetes-validations: [{rule: self == oldSelf, message: size is immutable}]}}}}}}}]}' |
		k apply -f - > /dev/null &&
		until_true 10 "the Widget kind" bash -c "'$kubectl' get widgets > /dev/null 2>&1" &&
		printf '%s\n' 'apiVersion: example.com/v1' 'kind: Widget' 'metadata: {name: w}' 'spec: {size: 2}' |
		k apply -f - > /dev/null &&
		refused_with 'The Widget "w" is invalid: spec.size: Invalid value: "integer": size is immutable' \
			k patch widget w --type=merge -p '{"spec":{"size":3}}'
}
check "a CRD validation rule refuses a change of an immutable field" immutable
unsupported_rule() {
	printf '%s\n' 'apiVersion: apiextensions.k8s.io/v1' 'kind: CustomResourceDefinition' \
		'metadata: {name: gadgets.example.com}' \
		'spec: {group: example.com, scope: Namespaced, names: {plural: gadgets, kind: Gadget}, versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-validations: [{rule: "self.all(x, true)"}]}}}]}' |
		refused_with 'compilation failed: function all() is not in the subset' k apply -f - &&
		! k get crd gadgets.example.com > /dev/null 2>&1
}
check "a CRD with a rule the cluster cannot evaluate is refused, not stored" unsupported_rule

terminating() {
	k create namespace gone > /dev/null &&
		k -n gone create configmap held --from-literal=a=b > /dev/null &&
		k -n gone patch configmap held --type=merge -p '{"metadata":{"finalizers":["example.com/hold"]}}' > /dev/null &&
		k delete namespace gone --wait=false > /dev/null &&
		refused_with 'configmaps "new" is forbidden: unable to create new content in namespace gone because it is being terminated' \
			k -n gone create configmap new --from-literal=a=b &&
		sleep 1 &&
		[ "$(k get namespace gone -o jsonpath='{.status.phase}')" = Terminating ] &&
		k -n gone patch configmap held --type=merge -p '{"metadata":{"finalizers":null}}' > /dev/null &&
		until_true 10 "the namespace to go" bash -c "! '$kubectl' get namespace gone > /dev/null 2>&1"
}
check "a Terminating namespace refuses new content and stays until its content is gone" terminating

finish
