#!/usr/bin/env bash
# Real kubectl against the local test cluster's API server: the CRD and the
# examples apply, `get mwj` shows the printer columns, a wrong manifest is
# refused naming the field, patches bump the generation, status changes only
# through the status subresource, get -w streams changes, a stale update is
# a conflict, kubectl wait sees a condition, injected 500s and 429s behave
# as on a struggling API server, and delete deletes. Ends with "N passed, N
# failed".
set -u
. "$(dirname "$0")/lib.sh"
cluster_up

check "the CRD applies" k apply -f "$root/crds/"
check "the CRD is established" k wait --for=condition=Established --timeout=10s \
	crd/multiworkerjobs.training.mwj.io
check "the examples apply" k apply -f "$root/examples/"
check "re-applying an unchanged example changes nothing" \
	bash -c "'$kubectl' apply -f '$root/examples/minimal.yaml' | grep -q unchanged"

columns() {
	k get mwj mnist | head -1 | grep -Eq '^NAME +WORKERS +PHASE +READY +RESTARTS +AGE$' &&
		k get mwj mnist --no-headers | grep -Eq '^mnist +2 +[0-9]+s$'
}
check "get mwj shows workers, phase, ready, restarts and age" columns
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
	k patch mwj mnist --type=merge -p '{"spec":{"workers":3}}' > /dev/null &&
		g1=$(k get mwj mnist -o jsonpath='{.metadata.generation}') &&
		k label mwj mnist team=vision > /dev/null &&
		g2=$(k get mwj mnist -o jsonpath='{.metadata.generation}') &&
		[ "$g0" = 1 ] && [ "$g1" = 2 ] && [ "$g2" = 2 ] &&
		[ "$(k get mwj mnist -o jsonpath='{.spec.workers}')" = 3 ]
}
check "a spec patch bumps the generation, a label does not" generation

status_rules() {
	k patch mwj mnist --type=merge -p '{"status":{"phase":"Running"}}' > /dev/null &&
		[ -z "$(k get mwj mnist -o jsonpath='{.status.phase}')" ] &&
		k patch mwj mnist --subresource=status --type=merge \
			-p '{"status":{"phase":"Running"},"spec":{"workers":9}}' > /dev/null &&
		[ "$(k get mwj mnist -o jsonpath='{.status.phase} {.spec.workers}')" = "Running 3" ] &&
		k get mwj mnist --no-headers | grep -Eq '^mnist +3 +Running '
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
	grep -Eq '^ADDED +mnist' "$out" && grep -Eq '^MODIFIED +mnist +3 +Succeeded' "$out"
}
check "get -w streams the job's changes" watched

conflict() {
	local stale out
	stale=$(k get mwj mnist -o json)
	k patch mwj mnist --type=merge -p '{"spec":{"workers":4}}' > /dev/null || return 1
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

deleted() {
	k delete -f "$root/examples/all-fields.yaml" > /dev/null &&
		! k get mwj mnist-all-fields > /dev/null 2>&1 &&
		[ "$(k get mwj -o name | wc -l)" = 4 ]
}
check "delete removes the job" deleted

finish
