#!/usr/bin/env bash
# mwj-operator end to end: the real operator binary against the local test
# cluster, running real mwj-worker pods on Fashion-MNIST. A job runs to
# Succeeded with its TF_CONFIG, MWJ_* and volume checked in the pods'
# processes; a preempted worker comes back within about a second while the
# other keeps running, and the final weights equal an uninterrupted run's;
# exit codes follow restartPolicy and backoffLimit; restartScope All; watch
# drops, a compaction and bursts of 500s and 429s; an operator killed with
# SIGKILL and started again; activeDeadlineSeconds, ttlSecondsAfterFinished,
# suspend and cleanPodPolicy; a template the API refuses. No pod is ever
# created twice. Ends with "N passed, N failed".
set -u
. "$(dirname "$0")/lib.sh"
cluster_up

. "$(dirname "$0")/operator_lib.sh"

progress() { # progress POD STEP: waits until the pod has logged step STEP or later
	for _ in $(seq 600); do
		k logs "$1" 2> /dev/null |
			awk -v s="$2" '{ split($1, a, "/") } a[2] != "" && a[1] + 0 >= s { f = 1 } END { exit !f }' &&
			return 0
		sleep 0.1
	done
	return 1
}
weights() { k logs "$1-worker-0" | sed -n 's/.*final weights sha256 //p'; }
# Pod creates the API server has answered, from its front's access log:
# 201 Created, and 409 (a create the operator should not have sent).
pod_creates() { grep -c '"POST /api/v1/namespaces/default/pods HTTP/[0-9.]*" 201' "$state/nginx-access.log"; }
pod_conflicts() { grep -c '"POST /api/v1/namespaces/default/pods HTTP/[0-9.]*" 409' "$state/nginx-access.log"; }
created_since() { # created_since N WANT [JOB]: WANT pods were created since the count was N, none twice
	echo "$(($(pod_creates) - $1)) pods created, $(pod_conflicts) creates refused as duplicates"
	[ "$(($(pod_creates) - $1))" = "$2" ] && [ "$(pod_conflicts)" = 0 ] && return 0
	# Why, from the operator's own words about the job's pods.
	[ -z "${3:-}" ] || grep -E "job default/$3: (created pod|WorkerFailed|WorkerPreempted|CreateUnconfirmed|phase)" "$log"
	return 1
}
# Seconds (fractional) of an operator log line's time stamp.
log_time() { date -d "$(cut -d' ' -f1 <<< "$1")" +%s.%N; }

check "the CRD and a shared claim for backups are applied" prepare
start_operator
check "mwj-operator starts and fills its caches" test -n "$op_pid"
volume=$state/node/volumes/default/ckpt

# 1. A job from apply to Succeeded.
env_of() { tr '\0' '\n' < "/proc/$(pid_of "$1")/environ"; }
applied() { job plain 2 600 | k apply -f - > /dev/null && running plain-worker-0 && running plain-worker-1; }
check "1. a 2-worker job is applied and both worker pods run" applied
inside() {
	local i env want
	for i in 0 1; do
		env=$(env_of "plain-worker-$i") || return 1
		want='TF_CONFIG={"cluster":{"worker":["plain-worker-0.plain.default.svc:2222","plain-worker-1.plain.default.svc:2222"]},"task":{"type":"worker","index":'$i'}}'
		grep -qxF "$want" <<< "$env" || { echo "worker $i: no $want in"; echo "$env"; return 1; }
		for want in MWJ_JOB_NAME=plain MWJ_NUM_WORKERS=2 MWJ_WORKER_INDEX=$i MWJ_RESTART_ATTEMPT=0 \
			MWJ_BACKUP_DIR=/mwj/checkpoint/default/plain MWJ_JOB_SECRET_FILE=/var/run/secrets/mwj/key; do
			grep -qxF "$want" <<< "$env" || { echo "worker $i: no $want"; return 1; }
		done
		[ "$(jp "pod/plain-worker-$i" '{.spec.hostname}.{.spec.subdomain} {.spec.restartPolicy} {.metadata.annotations.training\.mwj\.io/restart-attempt}')" = "plain-worker-$i.plain Never 0" ] || return 1
	done
	[ "$(jp svc/plain '{.spec.clusterIP} {.spec.publishNotReadyAddresses}')" = "None true" ]
}
check "1. TF_CONFIG, MWJ_*, hostname and subdomain are right in each worker's process" inside
backups() {
	for _ in $(seq 300); do
		ls "$volume/default/plain" 2> /dev/null | grep -q '^backup-' && return 0
		sleep 0.1
	done
	return 1
}
check "1. the chief's backups land on the shared volume in the job's own folder" backups
succeeded() {
	phase_is plain Succeeded &&
		[ "$(jp mwj/plain '{.status.conditions[?(@.type=="Succeeded")].status} {.status.conditions[?(@.type=="Succeeded")].reason}')" = "True ChiefSucceeded" ] &&
		[ -n "$(jp mwj/plain '{.status.startTime}')" ] && [ -n "$(jp mwj/plain '{.status.completionTime}')" ] &&
		[[ "$(jp mwj/plain '{.status.restarts.total} {.status.observedGeneration} {.status.workers.succeeded}')" =~ ^"0 1 "[12]$ ]]
}
check "1. the job ends Succeeded: conditions, times, counts and observedGeneration" succeeded
check "1. the chief left the model on the volume" test -s "$volume/models/plain/model.mwj"
columns() {
	local out
	out=$(k get mwj plain) || return 1
	echo "$out"
	head -1 <<< "$out" |
		grep -Eq '^NAME +WORKERS +PHASE +READY +RESTARTS +PROGRESS +EPOCH +LOSS +ETA +AGE$' &&
		tail -1 <<< "$out" | grep -Eq '^plain +2 +Succeeded +[0-9]+ +0 +[0-9]+s$'
}
# This operator takes no reports (no --status-url): the training columns
# stay empty.
check "1. kubectl get mwj shows workers, phase, ready, restarts, the training columns and age" columns
told() {
	local ev
	ev=$(events_of plain) || return 1
	echo "$ev"
	[ "$(grep -c '^CreatedPod$' <<< "$ev")" = 2 ] && grep -qx Succeeded <<< "$ev" &&
		k describe mwj plain | grep -q 'ChiefSucceeded'
}
check "1. events tell the story: two pods created, then succeeded" told

# 2. A worker preempted mid-training.
creates=$(pod_creates)
job preempted 2 600 | k apply -f - > /dev/null
preempt() {
	running preempted-worker-1 && progress preempted-worker-0 100 || return 1
	local old_uid
	uid_of preempted-worker-0 > "$state/chief-uid"
	old_uid=$(uid_of preempted-worker-1)
	fault preempt preempted-worker-1 > /dev/null &&
		until_true 30 "a new preempted-worker-1" attempt_is preempted-worker-1 1 &&
		[ "$(uid_of preempted-worker-1)" != "$old_uid" ]
}
check "2. a worker preempted mid-training is recreated at attempt 1" preempt
quick() {
	local gone made
	gone=$(grep -m1 'job default/preempted: pod preempted-worker-1 is gone' "$log") &&
		made=$(grep -m1 'job default/preempted: created pod preempted-worker-1 (attempt 1)' "$log") || return 1
	echo "$gone"
	echo "$made"
	python3 -c "import sys; d = $(log_time "$made") - $(log_time "$gone"); print('%.3f s' % d); sys.exit(not 0 <= d < 1.0)"
}
check "2. ... within a second of its old pod being gone" quick
survivor() {
	phase_is preempted Succeeded &&
		[ "$(uid_of preempted-worker-0)" = "$(cat "$state/chief-uid")" ] &&
		[ "$(jp pod/preempted-worker-0 '{.status.containerStatuses[0].restartCount}')" = 0 ] &&
		[ "$(jp mwj/preempted '{.status.restarts.preemptions} {.status.restarts.failures} {.status.restarts.total}')" = "1 0 1" ] &&
		[ "$(jp mwj/preempted '{.status.workerAttempts} {.status.sentAttempts}')" = "[0,1] [0,1]" ] &&
		events_of preempted | grep -qx WorkerPreempted
}
check "2. the chief's process was never restarted; preemptions 1; attempts sent [0,1]; the job succeeds" survivor
same() {
	local a b
	a=$(weights plain) && b=$(weights preempted) || return 1
	echo "uninterrupted $a, preempted $b"
	[ -n "$a" ] && [ "$a" = "$b" ]
}
check "2. the final weights equal the uninterrupted run's, bit for bit" same
check "2. three pod creates in all, none refused as a duplicate" created_since "$creates" 3 preempted

# 3. Exit codes under restartPolicy ExitCode, and the backoff limit.
permanent() {
	creates=$(pod_creates)
	job exit1 2 0 "" '        args: [train, --model, no-such-model]' | k apply -f - > /dev/null &&
		phase_is exit1 Failed || return 1
	jp mwj/exit1 '{.status.conditions[?(@.type=="Failed")].message}'
	echo
	[ "$(jp mwj/exit1 '{.status.conditions[?(@.type=="Failed")].reason} {.status.lastFailure.exitCode} {.status.restarts.total}')" = "WorkerFailed 1 0" ] &&
		sleep 2 && created_since "$creates" 2 &&
		[ "$(events_of exit1 | grep -c '^WorkerFailed$')" -ge 1 ]
}
check "3. a worker that exits 1 fails the job, and nothing is recreated" permanent
oom() {
	# $$$$: Kubernetes turns $$ into $, and sh's $$ is its own pid.
	sh_job oom 1 'kill -9 $$$$' '  backoffLimit: 2' | k apply -f - > /dev/null &&
		phase_is oom Failed || return 1
	jp mwj/oom '{.status}'
	echo
	[ "$(jp mwj/oom '{.status.conditions[?(@.type=="Failed")].reason} {.status.lastFailure.exitCode} {.status.lastFailure.reason}')" = "BackoffLimitExceeded 137 Error" ] &&
		[ "$(jp mwj/oom '{.status.restarts.failures} {.status.restarts.total}')" = "3 2" ] &&
		[ "$(jp mwj/oom '{.status.workerAttempts[0]}')" = 2 ] &&
		events_of oom | grep -qx BackoffLimitExceeded
}
check "3. a worker that keeps exiting 137 is recreated until backoffLimit, then the job fails" oom

# 4. restartScope All.
scope_all() {
	job all 2 600 '  restartScope: All' | k apply -f - > /dev/null &&
		running all-worker-1 && progress all-worker-0 100 || return 1
	local chief=$(uid_of all-worker-0)
	fault preempt all-worker-1 > /dev/null &&
		until_true 60 "new all-worker-0 and -1" attempt_is all-worker-0 1 &&
		until_true 60 "a new all-worker-1" attempt_is all-worker-1 1 &&
		[ "$(uid_of all-worker-0)" != "$chief" ] &&
		phase_is all Succeeded &&
		[ "$(jp mwj/all '{.status.restarts.preemptions} {.status.restarts.failures}')" = "1 0" ] &&
		k logs all-worker-0 | grep -q 'restored the backup of step'
}
check "4. restartScope All recreates every worker, which resume from the backup and succeed" scope_all

# 5. Watches dropped, a compaction, and bursts of 500s and 429s.
chaos() {
	creates=$(pod_creates)
	job chaos 2 1500 | k apply -f - > /dev/null && running chaos-worker-1 || return 1
	fault drop-watches > /dev/null && sleep 0.5 &&
		fault compact > /dev/null && fault drop-watches > /dev/null && sleep 0.5 &&
		fault errors 500 2 > /dev/null && sleep 2.5 &&
		fault preempt chaos-worker-1 > /dev/null &&
		fault errors 429 2 > /dev/null && sleep 2.5 &&
		fault errors 503 1 > /dev/null && sleep 1.5 || return 1
	phase_is chaos Succeeded || return 1
	grep -E 'informer .*(expired|restarting the watch)' "$log" | tail -3
	grep -Eq 'informer .*410 Gone' "$log" &&
		[ "$(jp mwj/chaos '{.status.restarts.preemptions}')" = 1 ] && created_since "$creates" 3 chaos
}
check "5. drops, a compaction, 500s and 429s are survived with no pod created twice" chaos

# 6. The operator killed with SIGKILL mid-job, a worker preempted while it
# is away, and the operator started again.
creates=$(pod_creates)
phoenix() { job phoenix 2 1000 | k apply -f - > /dev/null && running phoenix-worker-1 && progress phoenix-worker-0 40; }
check "6. a job is running" phoenix
kill -KILL "$op_pid" && wait "$op_pid" 2> /dev/null
op_pid=
away() { fault preempt phoenix-worker-1 > /dev/null && k wait --for=delete pod/phoenix-worker-1 --timeout=30s > /dev/null; }
check "6. with the operator killed by SIGKILL, a worker is preempted" away
start_operator
back() {
	phase_is phoenix Succeeded && [ "$(jp mwj/phoenix '{.status.restarts.preemptions}')" = 1 ] &&
		created_since "$creates" 3 phoenix
}
check "6. started again, the operator recreates it, creates no duplicate, and the job succeeds" back

# 7. Deadlines, time to live, suspend and cleanPodPolicy.
secs() { date -d "$1" +%s; }
deadline() {
	job late 2 100000 '  activeDeadlineSeconds: 4' | k apply -f - > /dev/null &&
		phase_is late Failed 30 || return 1
	local start end
	start=$(secs "$(jp mwj/late '{.status.startTime}')")
	end=$(secs "$(jp mwj/late '{.status.conditions[?(@.type=="Failed")].lastTransitionTime}')")
	echo "failed $((end - start)) s after its start"
	[ "$(jp mwj/late '{.status.conditions[?(@.type=="Failed")].reason}')" = DeadlineExceeded ] &&
		[ $((end - start)) -ge 4 ] && [ $((end - start)) -le 6 ] &&
		k wait --for=delete pod/late-worker-0 pod/late-worker-1 --timeout=30s > /dev/null
}
check "7. activeDeadlineSeconds fails the job on time, and its running pods are deleted" deadline
ttl() {
	sh_job brief 1 'exit 0' '  ttlSecondsAfterFinished: 5' | k apply -f - > /dev/null &&
		phase_is brief Succeeded 30 || return 1
	local done_at took
	done_at=$(secs "$(jp mwj/brief '{.status.completionTime}')")
	k wait --for=delete mwj/brief --timeout=30s > /dev/null || return 1
	took=$(($(date +%s) - done_at))
	echo "deleted about $took s after completion"
	[ "$took" -ge 4 ] && [ "$took" -le 8 ] &&
		k wait --for=delete pod/brief-worker-0 --timeout=30s > /dev/null
}
check "7. ttlSecondsAfterFinished deletes the finished job on time, and its pods with it" ttl
suspend() {
	job nap 2 100000 | k apply -f - > /dev/null && running nap-worker-1 || return 1
	k patch mwj nap --type=merge -p '{"spec":{"suspend":true}}' > /dev/null &&
		phase_is nap Suspended 30 &&
		k wait --for=delete pod/nap-worker-0 pod/nap-worker-1 --timeout=30s > /dev/null &&
		[ -z "$(jp mwj/nap '{.status.startTime}')" ] || return 1
	k patch mwj nap --type=merge -p '{"spec":{"suspend":false}}' > /dev/null &&
		running nap-worker-0 && running nap-worker-1 && phase_is nap Running 30 &&
		[ -n "$(jp mwj/nap '{.status.startTime}')" ] &&
		[ "$(jp mwj/nap '{.status.restarts.total}')" = 0 ] &&
		events_of nap | grep -qx Suspended && events_of nap | grep -qx Resumed &&
		k delete mwj nap > /dev/null
}
check "7. suspend deletes the pods and resuming creates them again, not counted as restarts" suspend
# The chief exits 0 at once; worker 1 would run for minutes.
chief_done='[ "$MWJ_WORKER_INDEX" = 0 ] && exit 0; exec sleep 300'
cleanup() { # cleanup POLICY: what is left of the two pods once the job has succeeded
	sh_job "clean-${1,,}" 2 "$chief_done" "  cleanPodPolicy: $1" | k apply -f - > /dev/null &&
		phase_is "clean-${1,,}" Succeeded 30 || return 1
	sleep 2
	k get pods -l "training.mwj.io/job-name=clean-${1,,}" -o jsonpath='{range .items[*]}{.metadata.name}={.status.phase}{.metadata.deletionTimestamp} {end}'
}
cleaned() {
	local none running all
	none=$(cleanup None) && running=$(cleanup Running) && all=$(cleanup All) || return 1
	echo "None: $none; Running: $running; All: $all"
	[ "$none" = "clean-none-worker-0=Succeeded clean-none-worker-1=Running " ] &&
		[ "$running" = "clean-running-worker-0=Succeeded " ] && [ -z "$all" ]
}
check "7. cleanPodPolicy None keeps every pod, Running deletes the running one, All deletes both" cleaned

# 8. A template the API refuses, beside a good job.
refused() {
	job good 2 100 | k apply -f - > /dev/null &&
		job bad 2 100 "" '        args: [train]
        ports: [{containerPort: 70000}]' | k apply -f - > /dev/null &&
		phase_is bad Failed 30 || return 1
	jp mwj/bad '{.status.conditions[?(@.type=="Failed")].message}'
	echo
	[ "$(jp mwj/bad '{.status.conditions[?(@.type=="Failed")].reason}')" = InvalidSpec ] &&
		jp mwj/bad '{.status.conditions[?(@.type=="Failed")].message}' | grep -q 'containerPort' &&
		phase_is good Succeeded
}
check "8. a job whose template the API refuses fails saying why, while a good job beside it succeeds" refused
long_name() {
	local name=a-job-name-far-too-long-for-its-worker-pods-to-be-valid-hosts
	job "$name" 2 100 | k apply -f - > /dev/null && phase_is "$name" Failed 30 &&
		jp "mwj/$name" '{.status.conditions[?(@.type=="Failed")].message}' | grep -q 'too long' &&
		[ -z "$(k get pods -l "training.mwj.io/job-name=$name" -o name)" ]
}
check "8. a job whose name is too long for its pods fails saying so, and no pod is made" long_name

check "no pod create was ever refused as a duplicate" test "$(pod_conflicts)" = 0
stop_operator
rc=$?
check "the operator stops on SIGTERM with exit status 0" test "$rc" = 0
finish
