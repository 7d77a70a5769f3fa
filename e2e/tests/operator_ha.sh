#!/usr/bin/env bash
# mwj-operator run as a platform team runs it: two replicas with leader
# election, against the local test cluster. One leads and the other
# stands by with warm caches; SIGKILL of the leader hands over within the
# lease duration, SIGTERM within a retry period (the Lease is released);
# the Lease's holder and transitions are right; a leader whose API calls
# fail for longer than its renew deadline stops acting; /metrics parses
# with Prometheus' own parser and its counters follow what happened (one
# preemption: 1); /readyz is 503 until the caches fill; SIGTERM in the
# middle of reconciles exits 0 at once and the next leader finishes the
# work with no pod created twice; 500 idle connections and a burst of
# 1,000 leave every probe answered. Ends with "N passed, N failed".
#
# The durations are short (lease 4 s, renew 3 s, retry 0.5 s) so that the
# hand-overs take seconds; the rules are the same as with the defaults.
set -u
. "$(dirname "$0")/lib.sh"
cluster_up

operator_bin=${MWJ_OPERATOR_BIN:-$root/build/bin/mwj-operator}
lease_s=4
retry_s=0.5
declare -A pid log
at_exit() {
	local r
	for r in "${!pid[@]}"; do kill -KILL "${pid[$r]}" 2> /dev/null; done
}

# start REPLICA: starts an operator replica in the background; its log is
# $state/REPLICA.log, its ports (picked by the kernel) are read from it.
start() {
	log[$1]=$state/$1.log
	"$operator_bin" --kubeconfig "$KUBECONFIG" --leader-elect --leader-election-namespace default \
		--leader-elect-lease-duration "${lease_s}s" --leader-elect-renew-deadline 3s \
		--leader-elect-retry-period "${retry_s}s" --metrics-addr 127.0.0.1:0 \
		--health-addr 127.0.0.1:0 > "${log[$1]}" 2>&1 &
	pid[$1]=$!
}
port() { # port REPLICA metrics|healthz
	local what=/metrics
	[ "$2" = metrics ] || what=/healthz
	sed -n "s#.*serving ${what}[^0-9]* port \([0-9]*\).*#\1#p" "${log[$1]}" | head -1
}
url() { echo "http://127.0.0.1:$(port "$1" "$2")$3"; }
metric() { "$root/e2e/tests/metrics.py" "$(url "$1" metrics /metrics)" "${@:2}"; } # REPLICA NAME [L=V]
status_of() { curl -s -o /dev/null -w '%{http_code}' "$(url "$1" healthz "$2")"; } # REPLICA PATH
identity() { sed -n 's/.*leader election: candidate \([^ ]*\) for.*/\1/p' "${log[$1]}" | head -1; }
holder() { k get lease mwj-operator -o jsonpath='{.spec.holderIdentity}'; }
transitions() { k get lease mwj-operator -o jsonpath='{.spec.leaseTransitions}'; }
leads() { grep -c 'became the leader' "${log[$1]}"; }
is_leader() { [ "$(metric "$1" mwj_operator_leader 2> /dev/null)" = 1 ]; }
has_ports() { [ -n "$(port "$1" metrics)" ] && [ -n "$(port "$1" healthz)" ]; }
jp() { k get "$1" -o jsonpath="$2"; }
attempt_is() { [ "$(jp "pod/$1" '{.metadata.annotations.training\.mwj\.io/restart-attempt}' 2> /dev/null)" = "$2" ]; }
pod_running() { [ "$(jp "pod/$1" '{.status.phase}' 2> /dev/null)" = Running ]; }
pod_creates() { grep -c '"POST /api/v1/namespaces/default/pods HTTP/[0-9.]*" 201' "$state/nginx-access.log"; }
pod_conflicts() { grep -c '"POST /api/v1/namespaces/default/pods HTTP/[0-9.]*" 409' "$state/nginx-access.log"; }
# A job of WORKERS busybox pods that sleep: sleepers NAME WORKERS.
sleepers() {
	k apply -f - > /dev/null <<YAML
apiVersion: training.mwj.io/v1
kind: MultiWorkerJob
metadata: {name: $1}
spec:
  workers: $2
  template:
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: worker, image: 'busybox:1.36', command: [sh, -c, 'sleep 600']}
YAML
}
# Seconds between two log lines' time stamps.
log_time() { date -d "$(cut -d' ' -f1 <<< "$1")" +%s.%N; }

crd() {
	k apply -f "$root/crds/" > /dev/null &&
		until_true 60 "the CRD to be established" \
			sh -c "[ \"\$(kubectl get crd multiworkerjobs.training.mwj.io -o jsonpath='{.status.conditions[?(@.type==\"Established\")].status}')\" = True ]"
}
check "the CRD is applied" crd

# 1. Two replicas: one leads, one stands by, both ready.
ready() { [ "$(status_of "$1" /readyz 2> /dev/null)" = 200 ]; }
# Starts replica $1 and waits until it serves and is ready (outside any
# check: a check's subshell would lose the process).
start_ready() { start "$1" && until_true 30 "replica $1's ports" has_ports "$1" && until_true 30 "replica $1 to be ready" ready "$1"; }
start_ready a
until_true 30 "replica a to lead" is_leader a
start_ready b
sleep 1 # b has tried the Lease a few times by now
one_leads() {
	[ "$(holder)" = "$(identity a)" ] && [ "$(transitions)" = 0 ] &&
		[ "$(metric b mwj_operator_leader)" = 0 ] && [ "$(leads b)" = 0 ] &&
		[ "$(status_of a /healthz)" = 200 ] && [ "$(status_of b /healthz)" = 200 ] &&
		[ "$(status_of a /readyz)" = 200 ]
}
check "1. one replica leads (it holds the Lease), the other stands by, both healthy and ready" one_leads

# 2. /metrics parses and follows a preemption.
sleepers pre 2
preempted() {
	until_true 60 "pre's pods to run" pod_running pre-worker-1 || return 1
	pod_running pre-worker-0 || return 1
	fault preempt pre-worker-1 > /dev/null &&
		until_true 30 "pre-worker-1 to come back" attempt_is pre-worker-1 1 &&
		until_true 10 "the counter" sh -c "[ \"\$('$root/e2e/tests/metrics.py' $(url a metrics /metrics) mwj_operator_preemptions_handled_total)\" = 1 ]" || return 1
	local out
	out=$("$root/e2e/tests/metrics.py" "$(url a metrics /metrics)") || { echo "$out"; return 1; }
	for want in 'mwj_operator_pods_created_total{} 3' 'mwj_operator_jobs_created_total{} 1' \
		'mwj_operator_jobs{phase="Running"} 1' 'mwj_operator_leader{} 1' \
		'mwj_operator_leader_transitions_total{event="acquired"} 1' \
		'mwj_operator_failures_handled_total{} 0' 'mwj_operator_cached_objects{resource="pods"} 2'; do
		grep -qxF "$want" <<< "$out" || { echo "no '$want' in:"; echo "$out"; return 1; }
	done
	for want in mwj_operator_reconcile_duration_seconds_count mwj_operator_api_requests_total \
		mwj_operator_watches_total mwj_operator_workqueue_depth process_resident_memory_bytes \
		process_cpu_seconds_total; do
		grep -q "^$want{" <<< "$out" || { echo "no $want"; return 1; }
	done
	# The standby acted on nothing, but its caches are warm.
	[ "$(metric b mwj_operator_pods_created_total)" = 0 ] &&
		[ "$(metric b mwj_operator_cached_objects resource=pods)" = 2 ] &&
		[ "$(metric b mwj_operator_jobs phase=Running)" = 1 ]
}
check "2. /metrics parses; one preemption counts 1 on the leader, nothing on the standby" preempted

# 3. SIGKILL of the leader: the standby takes over within the lease duration.
stop() { # stop REPLICA SIGNAL: signals it and waits; sets rc and t0 (the signal's time)
	t0=$(date +%s.%N)
	kill -"$2" "${pid[$1]}"
	wait "${pid[$1]}" 2> /dev/null
	rc=$?
	unset "pid[$1]"
}
stop a KILL
killed() {
	local t1
	until_true 30 "b to lead" is_leader b || return 1
	t1=$(log_time "$(grep 'became the leader' "${log[b]}" | head -1)")
	echo "$t1 - $t0" | bc > "$state/took-kill"
	# The standby's clock for the Lease starts when it sees the last
	# renewal (up to a retry period after it), and it looks again at most
	# 1.2 retry periods later: the lease duration plus about two retries.
	[ "$(echo "$t1 - $t0 <= $lease_s + 3 * $retry_s + 0.5" | bc)" = 1 ] &&
		[ "$(holder)" = "$(identity b)" ] && [ "$(transitions)" = 1 ]
}
check "3. SIGKILL of the leader: the standby leads within the lease duration; transitions 1" killed
echo "     (the standby led $(cat "$state/took-kill" 2> /dev/null) s after the SIGKILL)"
acts() {
	fault preempt pre-worker-0 > /dev/null &&
		until_true 30 "pre-worker-0 to come back" attempt_is pre-worker-0 1 &&
		[ "$(metric b mwj_operator_preemptions_handled_total)" = 1 ]
}
check "3. the new leader heals the next preemption at once" acts

# 4. SIGTERM of the leader: the Lease is released, the standby takes over
# within a retry period.
start_ready a
sleep 1
stop b TERM
released() {
	local t1
	[ "$rc" = 0 ] || { echo "b exited $rc"; return 1; }
	grep -q 'released the Lease' "${log[b]}" || { echo "b did not release the Lease:"; tail -5 "${log[b]}"; return 1; }
	until_true 30 "a to lead" is_leader a || return 1
	t1=$(log_time "$(grep 'became the leader' "${log[a]}" | tail -1)")
	echo "$t1 - $t0" | bc > "$state/took-term"
	[ "$(echo "$t1 - $t0 <= 1.2 * $retry_s + 1" | bc)" = 1 ] &&
		[ "$(holder)" = "$(identity a)" ] && [ "$(transitions)" = 2 ]
}
check "4. SIGTERM of the leader: exit 0, the Lease released, the standby leads within a retry period" released
echo "     (the standby led $(cat "$state/took-term" 2> /dev/null) s after the SIGTERM)"

# 5. API errors for longer than the renew deadline: the leader stops acting.
fenced() {
	fault errors 500 5 > /dev/null || return 1
	until_true 10 "a to give up" grep -q 'lost the Lease.*renew deadline' "${log[a]}" || return 1
	[ "$(metric a mwj_operator_leader)" = 0 ] || return 1
	# The errors end; a, still the holder, leads again.
	until_true 20 "a to lead again" is_leader a &&
		[ "$(metric a mwj_operator_leader_transitions_total event=lost)" = 1 ] &&
		[ "$(leads a)" = 2 ]
}
check "5. API errors past the renew deadline: the leader stops acting, then leads again" fenced

# 6. /readyz is 503 until the caches fill.
fault errors 503 4 > /dev/null
start c
until_true 10 "replica c's ports" has_ports c
first=$(status_of c /readyz)
unready() {
	[ "$first" = 503 ] || { echo "/readyz said $first while the API failed"; return 1; }
	until_true 30 "c to be ready" ready c && [ "$(metric c mwj_operator_leader)" = 0 ]
}
check "6. /readyz is 503 before the caches fill, 200 after (a standby is ready too)" unready

# 7. SIGTERM in the middle of reconciles: exit 0 within seconds, and the next
# leader completes the jobs with no pod created twice.
creates=$(pod_creates)
for j in 1 2 3 4 5; do sleepers "burst$j" 3; done
sleep 0.2
stop a TERM
took=$(echo "$(date +%s.%N) - $t0" | bc)
midway() {
	local j
	echo "a exited $rc after $took s"
	[ "$rc" = 0 ] && [ "$(echo "$took <= 5" | bc)" = 1 ] || return 1
	until_true 30 "c to lead" is_leader c || return 1
	for j in 1 2 3 4 5; do
		until_true 60 "burst$j's pods" pod_running "burst$j-worker-2" || return 1
	done
	echo "$(($(pod_creates) - creates)) pods created, $(pod_conflicts) refused as duplicates"
	[ "$(($(pod_creates) - creates))" = 15 ] && [ "$(pod_conflicts)" = 0 ]
}
check "7. SIGTERM during reconciles: exit 0 within seconds; the next leader finishes, no pod twice" midway

# 8. Clients that misbehave: 500 connections to each listener held open
# without a byte sent, then a burst of 1,000 more; every probe of /healthz,
# /readyz and /metrics is answered (bench/operator_endpoints.py measures
# how fast), and the leader goes on leading.
flood() {
	"$root/e2e/tests/http_flood.py" --idle 500 --burst 1000 --deadline 5 \
		"$(url c healthz /healthz)" "$(url c healthz /readyz)" "$(url c metrics /metrics)" &&
		[ "$(status_of c /healthz)" = 200 ] && is_leader c
}
check "8. 500 idle connections and a burst of 1,000: every probe of /healthz, /readyz, /metrics answered within 5 s" \
	flood

for r in "${!pid[@]}"; do kill -TERM "${pid[$r]}" 2> /dev/null; done
wait
pid=()
finish
