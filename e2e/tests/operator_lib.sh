# Shared by the end-to-end scripts that run the operator binary against a
# local test cluster of their own (operator.sh, refusals.sh): start and
# stop it, read objects, wait for phases, write jobs. Source after lib.sh
# and cluster_up.
operator_bin=${MWJ_OPERATOR_BIN:-$root/build/bin/mwj-operator}
log=$state/operator.log
: > "$log"
op_pid=

# The operator runs in the background of this shell (never inside a check,
# whose subshell would lose it); op_pid is its pid while it runs.
start_operator() { # starts mwj-operator and waits for its caches
	local mark
	mark=$(wc -l < "$log" 2> /dev/null || echo 0)
	"$operator_bin" --kubeconfig "$KUBECONFIG" --log-level debug --metrics-addr 127.0.0.1:0 \
		--health-addr 127.0.0.1:0 "$@" >> "$log" 2>&1 &
	op_pid=$!
	for _ in $(seq 300); do
		tail -n +"$((mark + 1))" "$log" | grep -q 'caches filled' && return 0
		kill -0 "$op_pid" 2> /dev/null || return 1
		sleep 0.1
	done
	return 1
}
stop_operator() { # SIGTERM, as Kubernetes stops it; returns its exit status
	[ -n "$op_pid" ] || return 0
	kill -TERM "$op_pid" 2> /dev/null
	wait "$op_pid"
	local rc=$?
	op_pid=
	return "$rc"
}
at_exit() { [ -z "$op_pid" ] || kill -KILL "$op_pid" 2> /dev/null; }

jp() { k get "$1" -o jsonpath="$2"; }
uid_of() { jp "pod/$1" '{.metadata.uid}' 2> /dev/null; }
pid_of() { jp "pod/$1" '{.status.containerStatuses[0].containerID}' | sed 's#^local://##'; }
# Polls rather than kubectl wait: through the local cluster's HTTP/2 front a
# watch's headers wait for its first event, so a wait for a state reached
# already ends only at the next change or after 30 s (see the note in the
# README's local cluster section); a poll does not depend on it.
in_phase() { [ "$(jp "mwj/$1" '{.status.phase}' 2> /dev/null)" = "$2" ]; }
phase_is() { until_true "${3:-300}" "mwj/$1 to be $2" in_phase "$1" "$2"; } # JOB PHASE [SECONDS]
attempt_is() { [ "$(jp "pod/$1" '{.metadata.annotations.training\.mwj\.io/restart-attempt}' 2> /dev/null)" = "$2" ]; }
ready() { [ "$(jp "pod/$1" '{.status.conditions[?(@.type=="Ready")].status}' 2> /dev/null)" = True ]; }
running() { until_true 60 "pod/$1 to be Ready" ready "$1"; }
events_of() { k get events --field-selector "involvedObject.kind=MultiWorkerJob,involvedObject.name=$1" -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}'; }

# A MultiWorkerJob: job_yaml NAME WORKERS SPEC POD CONTAINERS, each of the
# last three YAML lines at their depth (spec members, pod spec members,
# the containers' list items), or "".
job_yaml() {
	cat <<YAML
apiVersion: training.mwj.io/v1
kind: MultiWorkerJob
metadata: {name: $1}
spec:
  workers: $2
${3:-}
  template:
    spec:
${4:-}
      containers:
${5:-}
YAML
}
# A job: job NAME WORKERS STEPS [SPEC YAML] [CONTAINER YAML]. The workers
# share the claim "ckpt" for backups and write the model beside them.
job() {
	local container=${5:-}
	[ -n "$container" ] || container="        args: [train, --epochs, '1', --steps-per-epoch, '$3', --batch-size, '32', --threads, '1',
               --save-freq, '20', --log-every, '10', --model-dir, /mwj/checkpoint/models/$1]"
	job_yaml "$1" "$2" "  checkpoint: {volume: {persistentVolumeClaim: {claimName: ckpt}}}
${4:-}" "      terminationGracePeriodSeconds: 5" "      - name: worker
        image: mwj-worker:latest
$container"
}
# A job whose workers run a shell script instead of training: sh_job NAME
# WORKERS SCRIPT [SPEC YAML].
sh_job() {
	job "$1" "$2" 0 "${4:-}" "        image: busybox:1.36
        command: [sh, -c, '$3']" | sed '/image: mwj-worker:latest/d'
}

established() {
	[ "$(jp crd/multiworkerjobs.training.mwj.io '{.status.conditions[?(@.type=="Established")].status}' 2> /dev/null)" = True ]
}
prepare() { # the CRD, and the claim "ckpt" in the namespaces given (default: default)
	local ns
	k apply -f "$root/crds/" > /dev/null &&
		until_true 60 "the CRD to be established" established || return 1
	for ns in "${@:-default}"; do
		k -n "$ns" apply -f - > /dev/null <<YAML || return 1
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ckpt}
spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}
YAML
	done
}
