#!/usr/bin/env bash
# Training progress in the job's status, end to end: the real operator,
# serving its status endpoint over HTTPS (--status-url), and a 2-worker
# job of real mwj-worker pods on the local test cluster, whose chief
# reports with the projected token the cluster's node mounts for the
# operator's audience. kubectl get mwj shows PROGRESS rising, EPOCH, LOSS
# and ETA; a preempted chief comes back from its backup and the TrainingResumed
# event names the step; the run ends at 100%. Another job's chief, a
# non-chief, the API server's own token and no token are refused and
# change nothing. Ends with "N passed, N failed".
set -u
. "$(dirname "$0")/lib.sh"
cluster_up

. "$(dirname "$0")/operator_lib.sh"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=https://127.0.0.1:$port
path=/apis/training.mwj.io/v1/namespaces/default/multiworkerjobs/progress/status

training() { jp mwj/progress "{.status.training.$1}" 2> /dev/null; }
# The chief's projected token and CA, as the node wrote them for the pod.
status_file() { # status_file POD FILE (node_pod.py's pod_dir: the name and the uid's first 8)
	local uid f
	uid=$(uid_of "$1") || return 1
	f=$state/node/pods/default/$1-${uid:0:8}/volumes/mwj-status/$2
	[ -f "$f" ] && echo "$f"
}
answers() { # answers WANT WHAT TOKEN BODY: a report with TOKEN is answered WANT
	local code
	code=$(post "$3" "$4")
	echo "$2: $code $(cat "$state/answer")"
	[ "$code" = "$1" ]
}
post() { # post TOKEN BODY: the HTTP status of a report to job progress
	curl -s -o "$state/answer" -w '%{http_code}' --cacert "$state/status-ca.crt" \
		-H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
		--data "$2" "$url$path"
}

check "the CRD and a shared claim for backups are applied" prepare
start_operator --status-url "$url" --status-addr "127.0.0.1:$port"
check "mwj-operator starts and serves the status endpoint" grep -q "status: chiefs report to $url" "$log"

# Two epochs of 1,500 steps, backups every 100: long enough for several
# reports, and a preemption in the middle.
job progress 2 1500 "" "        args: [train, --epochs, '2', --steps-per-epoch, '1500', --batch-size, '32',
               --threads, '1', --save-freq, '100', --log-every, '100',
               --model-dir, /mwj/checkpoint/models/progress]" | k apply -f - > /dev/null
mounted() {
	running progress-worker-0 && running progress-worker-1 || return 1
	local env
	env=$(tr '\0' '\n' < "/proc/$(pid_of progress-worker-0)/environ") || return 1
	grep -qxF "MWJ_STATUS_URL=$url$path" <<< "$env" &&
		grep -qxF MWJ_STATUS_TOKEN_FILE=/var/run/mwj/status/token <<< "$env" &&
		! tr '\0' '\n' < "/proc/$(pid_of progress-worker-1)/environ" | grep -q MWJ_STATUS_URL &&
		cp "$(status_file progress-worker-0 ca.crt)" "$state/status-ca.crt"
}
check "the chief alone gets the status URL, its token and the CA" mounted

# PROGRESS rises: two different values under 100, seen in kubectl get.
rising() {
	local seen="" p
	for _ in $(seq 600); do
		p=$(training percent)
		if [ -n "$p" ] && [ "$p" -lt 100 ] && [ "$p" != "${seen##* }" ]; then
			seen="$seen $p"
		fi
		[ "$(wc -w <<< "$seen")" -ge 2 ] && break
		sleep 0.2
	done
	echo "percent seen:$seen"
	[ "$(wc -w <<< "$seen")" -ge 2 ] && [ "${seen% *}" != "$seen" ]
}
check "kubectl get mwj: PROGRESS rises while the job trains" rising
columns() {
	local out
	out=$(k get mwj progress) || return 1
	echo "$out"
	head -1 <<< "$out" | grep -Eq '^NAME +WORKERS +PHASE +READY +RESTARTS +PROGRESS +EPOCH +LOSS +ETA +AGE$' &&
		tail -1 <<< "$out" | grep -Eq '^progress +2 +Running +2 +0 +[0-9]+% +[12] +[0-9.e-]+ +[0-9]+(s|m[0-9]*s?) +[0-9]+s$'
}
check "kubectl get mwj shows PROGRESS, EPOCH, LOSS and ETA beside the rest" columns
described() {
	local o
	o=$(k get mwj progress -o jsonpath='{.status.training.globalStep} {.status.training.totalSteps} {.status.training.stepsPerEpoch} {.status.training.epochs} {.status.training.learningRate} {.status.training.metrics.accuracy} {.status.training.samplesPerSecond} {.status.training.reportTime}')
	echo "$o"
	[[ "$o" =~ ^[0-9]+\ 3000\ 1500\ 2\ 0.001\ 0\.[0-9]+\ [0-9.]+\ 20[0-9-]+T ]]
}
check "the status holds steps, epochs, learning rate, accuracy, samples/s and when" described

# The chart's Grafana dashboard asks only for what a running job has: the
# operator's metrics and a worker's, scraped now where the pod's scrape
# annotations and its "metrics" port say (the operator set them, and
# MWJ_METRICS_ADDR).
dashboard() {
	local op_port names text name missing="" port
	op_port=$(sed -n 's#.*serving /metrics[^0-9]* port \([0-9]*\).*#\1#p' "$log" | head -1)
	port=$(jp pod/progress-worker-0 '{.metadata.annotations.prometheus\.io/port}')
	echo "the chief scraped on port $port"
	[ "$port" = 9100 ] &&
		[ "$(jp pod/progress-worker-0 '{.spec.containers[0].ports[?(@.name=="metrics")].containerPort}')" = 9100 ] &&
		[ "$(jp pod/progress-worker-0 '{.metadata.annotations.prometheus\.io/scrape}')" = true ] || return 1
	text=$(curl -s "http://127.0.0.1:$op_port/metrics" &&
		curl -s "http://$(jp pod/progress-worker-0 '{.status.podIP}'):$port/metrics") || return 1
	names=$(grep -o 'mwj_[a-z_]*' "$root/charts/mwj-operator/dashboards/mwj.json" | sort -u)
	[ -n "$names" ] || return 1
	for name in $names; do
		grep -Eq "^$name[{ ]" <<< "$text" || missing="$missing $name"
	done
	echo "queried: $(wc -w <<< "$names") metrics; not scraped:${missing:- none}"
	[ -z "$missing" ]
}
check "every metric the Grafana dashboard queries is scraped from the running job" dashboard

# Refused, and nothing changes.
refused() {
	local chief1 code loss
	chief1=$(cat "$(status_file progress-worker-0 token)") || return 1
	k apply -f - > /dev/null <<YAML || return 1
$(job other 1 1500 "" "        args: [train, --epochs, '1', --steps-per-epoch, '1500', --batch-size, '32',
               --threads, '1']")
YAML
	running other-worker-0 || return 1
	for _ in $(seq 100); do [ -n "$(status_file other-worker-0 token)" ] && break; sleep 0.1; done
	answers 403 "another job's chief" "$(cat "$(status_file other-worker-0 token)")" \
		'{"training": {"globalStep": 1, "totalSteps": 1, "loss": 123}}' &&
		answers 403 "a token bound to no pod" \
			"$(k create token default --audience mwj-operator 2> /dev/null)" \
			'{"training": {"globalStep": 1, "loss": 123}}' &&
		answers 401 "a token for the API server" "$(k create token default)" \
			'{"training": {"globalStep": 1, "loss": 123}}' &&
		answers 401 "no token" "" '{"training": {"globalStep": 1, "loss": 123}}' || return 1
	# The chief's own token is taken (and the next real report follows).
	answers 200 "the chief's token, a hand-made report" "$chief1" \
		'{"training": {"globalStep": 1, "totalSteps": 3000, "loss": 123}}' || return 1
	# The chief's next report replaces it within the write interval.
	for _ in $(seq 150); do
		loss=$(training loss)
		[ -n "$loss" ] && [ "$loss" != 123 ] && break
		sleep 0.2
	done
	echo "loss now $loss"
	[ "$loss" != 123 ] || return 1
	grep -q 'a report refused' "$log"
}
check "another job's chief, a token for no pod or for the API server, no token: refused" refused

# A preempted chief comes back from its backup; the status says so.
resumed() {
	local before after backup ev
	progress_at() { [ "$(training globalStep)" -ge "$1" ] 2> /dev/null; }
	until_true 120 "the chief to report step 1700" progress_at 1700 || return 1
	before=$(training globalStep)
	fault preempt progress-worker-0 > /dev/null &&
		until_true 60 "a new progress-worker-0" attempt_is progress-worker-0 1 || return 1
	ev=""
	for _ in $(seq 600); do
		# The newest: the hand-made report above went back too.
		ev=$(k get events --field-selector involvedObject.name=progress,reason=TrainingResumed \
			--sort-by=.lastTimestamp -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' 2> /dev/null |
			grep 'from the backup' | tail -1)
		[ -n "$ev" ] && break
		sleep 0.2
	done
	echo "before the preemption: step $before; event: $ev"
	backup=$(k logs progress-worker-0 2>&1 | sed -n 's/.*restored the backup of step \([0-9]*\).*/\1/p' | head -1)
	echo "the new chief restored the backup of step $backup"
	[ -n "$backup" ] && [[ "$ev" =~ "training resumed from the backup of step $backup (now at step " ]] &&
		after=$(training lastBackupStep) && [ "$after" -ge "$backup" ]
}
check "a preempted chief resumes from its backup, and a TrainingResumed event names the step" resumed

done100() {
	phase_is progress Succeeded 300 || return 1
	for _ in $(seq 100); do
		[ "$(training percent)" = 100 ] && break
		sleep 0.2
	done
	echo "$(k get mwj progress)"
	[ "$(training percent) $(training globalStep) $(training epoch)" = "100 3000 2" ]
}
check "the job ends at 100%, step 3000 of epoch 2" done100

scraped() {
	local port_m text
	port_m=$(sed -n 's#.*serving /metrics[^0-9]* port \([0-9]*\).*#\1#p' "$log" | head -1)
	text=$(curl -s "http://127.0.0.1:$port_m/metrics") || return 1
	grep -E '^mwj_operator_(job_training_progress_ratio|job_training_samples_per_second|status_reports_total)' <<< "$text"
	grep -Eq '^mwj_operator_job_training_progress_ratio\{namespace="default",job="progress"\} 1$' <<< "$text" &&
		grep -Eq '^mwj_operator_job_training_samples_per_second\{namespace="default",job="progress"\} [0-9.e+]+$' <<< "$text" &&
		grep -Eq '^mwj_operator_status_reports_total\{result="forbidden"\} [2-9]' <<< "$text" &&
		grep -Eq '^mwj_operator_status_reports_total\{result="unauthorized"\} [2-9]' <<< "$text"
}
check "the operator's /metrics shows every job's progress and the refused reports" scraped

# Outside a check: only this shell can wait for the operator. A stop that
# hangs shows where, from gdb, before it is killed.
kill -TERM "$op_pid" 2> /dev/null
for _ in $(seq 200); do kill -0 "$op_pid" 2> /dev/null || break; sleep 0.1; done
if kill -0 "$op_pid" 2> /dev/null; then
	echo "mwj-operator still runs 20 s after SIGTERM:"
	gdb -p "$op_pid" -batch -ex 'thread apply all bt' 2> /dev/null | grep -E '^#|^Thread'
	kill -KILL "$op_pid"
fi
stop_operator
rc=$?
check "mwj-operator stops on SIGTERM with exit status 0" test "$rc" = 0
finish
