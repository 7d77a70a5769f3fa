#!/usr/bin/env bash
# The end-to-end scenarios, written once for any cluster: the one KUBECONFIG
# (or kubectl's default) points at, with the operator installed by the
# chart and running as a pod, and the worker image's pods training on
# Fashion-MNIST:
#   1. helm install, and the operator ready under its own ServiceAccount;
#   2. examples/minimal.yaml (2 workers) to Succeeded: logs, status,
#      printer columns, events, the objects it owns;
#   3. a worker preempted mid-training, once per way in MWJ_E2E_PREEMPT:
#      the replacement, the untouched survivor, the restart counts, and
#      final weights bitwise equal to an uninterrupted run's;
#   4. a permanent failure fails the job with a clear condition;
#   5. deleting the jobs deletes everything they owned;
#   6. helm upgrade to a changed value takes effect; helm uninstall leaves
#      nothing of the release (the CRD stays: Helm never deletes crds/).
# e2e/tests/e2e_local.sh runs it on the local test cluster (make test),
# e2e/kind/run.sh on kind. Ends with "N passed, N failed".
#
# Knobs (environment):
#   MWJ_E2E_NAMESPACE       the jobs' namespace, made and deleted here (mwj-e2e)
#   MWJ_E2E_OPERATOR_NAMESPACE, MWJ_E2E_RELEASE   where and as what the chart
#                           is installed (mwj-system, mwj-operator)
#   MWJ_E2E_HELM_ARGS       more helm install/upgrade flags, split on spaces
#                           (--set image.tag=dev)
#   MWJ_E2E_WORKER_IMAGE    the worker image of every job (mwj-worker:latest)
#   MWJ_E2E_PREEMPT         ways to preempt, run in turn (delete evict):
#                           delete: kubectl delete pod; evict: the Eviction
#                           API (policy/v1); hook: MWJ_E2E_PREEMPT_HOOK
#   MWJ_E2E_PREEMPT_HOOK    a command, given NAMESPACE/POD, that preempts the
#                           pod as the platform does (the local cluster's
#                           fault injection: e2e/cluster/fault.sh -d DIR preempt)
#   MWJ_E2E_CHECKPOINT_VOLUME  the backups' volume source, YAML flow style;
#                           default: a ReadWriteMany claim made here
#                           (MWJ_E2E_STORAGE_CLASS: its class)
#   MWJ_E2E_STEPS           training steps of the preempted jobs (300)
#   MWJ_E2E_TIMEOUT         seconds a job may take (300)
#   MWJ_E2E_ARTIFACTS       a folder: each failed check saves the cluster's
#                           side there (e2e/collect-logs.sh)
#   MWJ_E2E_KEEP=1          leave the namespace and the release at the end
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kubectl=${KUBECTL:-kubectl}
helm=${HELM:-helm}
ns=${MWJ_E2E_NAMESPACE:-mwj-e2e}
op_ns=${MWJ_E2E_OPERATOR_NAMESPACE:-mwj-system}
release=${MWJ_E2E_RELEASE:-mwj-operator}
read -ra helm_args <<< "${MWJ_E2E_HELM_ARGS:-}"
image=${MWJ_E2E_WORKER_IMAGE:-mwj-worker:latest}
read -ra ways <<< "${MWJ_E2E_PREEMPT:-delete evict}"
read -ra hook <<< "${MWJ_E2E_PREEMPT_HOOK:-}"
volume=${MWJ_E2E_CHECKPOINT_VOLUME:-}
steps=${MWJ_E2E_STEPS:-300}
timeout=${MWJ_E2E_TIMEOUT:-300}
artifacts=${MWJ_E2E_ARTIFACTS:-}
chart=$root/charts/mwj-operator
. "$root/e2e/checks.sh"
on_check_failed() { # saves the cluster's side of a failed check
	[ -z "$artifacts" ] ||
		"$root/e2e/collect-logs.sh" "$artifacts/$((passed + failed))-failed" "$ns" "$op_ns" > /dev/null 2>&1
}
fails() { ! "$@"; }
k() { "$kubectl" "$@"; }
kn() { "$kubectl" -n "$ns" "$@"; }
jp() { kn get "$1" -o jsonpath="$2" 2> /dev/null; }

for tool in "$kubectl" "$helm"; do
	command -v "$tool" > /dev/null || { echo "scenarios: no $tool on PATH"; echo "0 passed, 1 failed"; exit 1; }
done
for way in "${ways[@]}"; do
	case "$way" in
	delete | evict) ;;
	hook) [ ${#hook[@]} -gt 0 ] || { echo "scenarios: hook needs MWJ_E2E_PREEMPT_HOOK"; exit 2; } ;;
	*) echo "scenarios: MWJ_E2E_PREEMPT: unknown way '$way' (delete, evict, hook)"; exit 2 ;;
	esac
done

# What a run leaves goes at the end, and what an aborted run left goes
# first, so that a second run on the same cluster starts clean.
cleanup() {
	rm -f "${TMPDIR:-/tmp}/mwj-e2e-chief.$$"
	[ "${MWJ_E2E_KEEP:-0}" = 1 ] && return
	k delete namespace "$ns" --ignore-not-found --wait=false > /dev/null 2>&1
	"$helm" uninstall "$release" -n "$op_ns" --ignore-not-found --wait > /dev/null 2>&1
}
trap cleanup EXIT
# Ctrl-C ends the run, cleaning up, rather than only the command it hit.
trap 'exit 130' INT TERM
"$helm" uninstall "$release" -n "$op_ns" --ignore-not-found --wait > /dev/null 2>&1
k delete namespace "$ns" --ignore-not-found --timeout=120s > /dev/null 2>&1

# --- 1. helm install, and the operator ready ---

operator_pods() { k -n "$op_ns" get pods -l "app.kubernetes.io/instance=$release" \
	-o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{"\n"}{end}' 2> /dev/null; }
operator_log() { local p; p=$(operator_pods | tail -1) && [ -n "$p" ] && k -n "$op_ns" logs "$p"; }
installed() {
	"$helm" install "$release" "$chart" -n "$op_ns" --create-namespace --wait --timeout 180s \
		"${helm_args[@]}" > /dev/null
}
check "1. helm install --wait returns once the operator is ready" installed
deploy=$(k -n "$op_ns" get deployments -l "app.kubernetes.io/instance=$release" -o name 2> /dev/null | head -1)
op_ready() {
	local pod sa
	pod=$(operator_pods | head -1)
	[ -n "$pod" ] && [ "$(k -n "$op_ns" get "pod/$pod" \
		-o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ] || return 1
	sa=$(k -n "$op_ns" get "pod/$pod" -o jsonpath='{.spec.serviceAccountName}')
	echo "pod $pod, ServiceAccount $sa"
	[ "$(k -n "$op_ns" get "serviceaccount/$sa" -o jsonpath='{.metadata.labels.app\.kubernetes\.io/instance}')" = "$release" ]
}
check "1. the operator's pod is Ready, under the release's own ServiceAccount" until_true 60 "the operator" op_ready
in_cluster() { operator_log | grep -q 'from in-cluster' && operator_log | grep -q 'caches filled'; }
check "1. it found the API server from in-cluster config and filled its caches" until_true 60 "its caches" in_cluster
established() {
	[ "$(k get crd multiworkerjobs.training.mwj.io \
		-o jsonpath='{.status.conditions[?(@.type=="Established")].status}')" = True ]
}
check "1. the chart's CRD is established" until_true 60 "the CRD" established

# --- 2. examples/minimal.yaml, shortened, to Succeeded ---

k create namespace "$ns" > /dev/null
in_phase() { [ "$(jp "mwj/$1" '{.status.phase}')" = "$2" ]; }
phase_is() { until_true "${3:-$timeout}" "mwj/$1 to be $2" in_phase "$1" "$2"; } # JOB PHASE [SECONDS]
events_of() {
	kn get events --field-selector "involvedObject.kind=MultiWorkerJob,involvedObject.name=$1" \
		-o jsonpath='{range .items[*]}{.reason}{"\n"}{end}'
}
weights() { kn logs "$1" | sed -n 's/.*final weights sha256 \([0-9a-f]*\).*/\1/p'; }
# The example as a user has it, with 3 epochs of 20 steps instead of a
# full pass each, and the image under test.
example() {
	sed -e "s#image: mwj-worker:latest#image: $image#" \
		-e 's#args: \[train, --epochs, "3"\]#args: [train, --epochs, "3", --steps-per-epoch, "20"]#' \
		"$root/examples/minimal.yaml"
}
applied() {
	example | grep -q 'steps-per-epoch' || { echo "examples/minimal.yaml changed: update example()"; return 1; }
	example | kn apply -f - && phase_is mnist Succeeded
}
check "2. examples/minimal.yaml is applied and runs to Succeeded" applied
status_ok() {
	jp mwj/mnist '{.status}'
	echo
	[ "$(jp mwj/mnist '{.status.conditions[?(@.type=="Succeeded")].status} {.status.conditions[?(@.type=="Succeeded")].reason}')" = "True ChiefSucceeded" ] &&
		[ -n "$(jp mwj/mnist '{.status.startTime}')" ] && [ -n "$(jp mwj/mnist '{.status.completionTime}')" ] &&
		[[ "$(jp mwj/mnist '{.status.restarts.total} {.status.observedGeneration} {.status.workers.succeeded}')" =~ ^"0 1 "[12]$ ]]
}
check "2. its status: Succeeded (ChiefSucceeded), start and completion times, no restarts" status_ok
logs_ok() {
	local w
	kn logs mnist-worker-0 | grep -q '^Epoch 3/3' || { echo "no Epoch 3/3 in the chief's log"; return 1; }
	w=$(weights mnist-worker-0)
	echo "final weights sha256 $w"
	[ ${#w} = 64 ]
}
check "2. the chief's log shows 3 epochs and the final weights (each worker checks its own against them)" logs_ok
columns() {
	local out
	out=$(kn get mwj mnist) || return 1
	echo "$out"
	head -1 <<< "$out" |
		grep -Eq '^NAME +WORKERS +PHASE +READY +RESTARTS +PROGRESS +EPOCH +LOSS +ETA +AGE$' &&
		tail -1 <<< "$out" | grep -Eq '^mnist +2 +Succeeded +[0-9]+ +0 +.*[0-9]+[sm]$'
}
check "2. kubectl get mwj prints workers, phase, ready, restarts, progress and age" columns
# The chart's operator takes the chief's reports (its status Service):
# the last one, at the end of the run, shows in the job's status.
at_100() { [ "$(kn get mwj mnist -o jsonpath='{.status.training.percent} {.status.training.epoch}')" = "100 3" ]; }
check "2. the chief's reports reach the operator: the status says 100% of epoch 3" \
	until_true 30 "status.training to say 100% of epoch 3" at_100
told() {
	local ev
	ev=$(events_of mnist) || return 1
	echo "$ev"
	[ "$(grep -c '^CreatedPod$' <<< "$ev")" = 2 ] && grep -qx Succeeded <<< "$ev" &&
		kn describe mwj mnist | grep -q ChiefSucceeded
}
check "2. its events: two pods created, then Succeeded; kubectl describe shows why" told
owned_by() { # owned_by JOB: the kinds/names labelled as the job's, each owned by it as controller
	local uid
	uid=$(jp "mwj/$1" '{.metadata.uid}')
	[ -n "$uid" ] || return 1
	kn get pods,services,secrets,networkpolicies -l "training.mwj.io/job-name=$1" -o jsonpath="{range .items[?(@.metadata.ownerReferences[0].uid==\"$uid\")]}{.kind}/{.metadata.name} {.metadata.ownerReferences[0].controller}{\"\n\"}{end}"
}
# The chief's pod stays, Succeeded; worker 1's goes if it was still
# finishing when the chief ended (cleanPodPolicy Running, the default).
# The ring key's Secret has the name the API server generated, which the
# job's status records.
owns() {
	local got secret
	got=$(owned_by mnist | sort) || return 1
	secret=$(jp mwj/mnist '{.status.ringKeySecret}')
	echo "$got"
	[[ "$secret" == mnist-ring-key-?????  ]] &&
		[ "$(grep -v '^Pod/mnist-worker-1 true$' <<< "$got")" = "$(printf '%s\n' 'NetworkPolicy/mnist-ring true' \
			'Pod/mnist-worker-0 true' "Secret/$secret true" 'Service/mnist true' | sort)" ]
}
check "2. it owns, as controller, its pods, its headless Service, its ring Secret and NetworkPolicy" owns

# --- 3. A worker preempted mid-training, each way ---

if [ -z "$volume" ]; then
	kn apply -f - > /dev/null << YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: mwj-e2e-ckpt}
spec:
  accessModes: [ReadWriteMany]
  resources: {requests: {storage: 1Gi}}
${MWJ_E2E_STORAGE_CLASS:+  storageClassName: $MWJ_E2E_STORAGE_CLASS}
YAML
	volume='{persistentVolumeClaim: {claimName: mwj-e2e-ckpt}}'
fi
# A job that backs up every 20 steps onto the shared volume and writes its
# model there: job NAME WORKERS [ARGS].
job() {
	local args=${3:-"[train, --epochs, '1', --steps-per-epoch, '$steps', --batch-size, '16', --threads, '1',
               --save-freq, '20', --log-every, '10', --model-dir, /mwj/checkpoint/models/$1]"}
	cat << YAML
apiVersion: training.mwj.io/v1
kind: MultiWorkerJob
metadata: {name: $1}
spec:
  workers: $2
  checkpoint: {volume: $volume}
  template:
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: worker
        image: $image
        imagePullPolicy: IfNotPresent
        args: $args
YAML
}
uid_of() { jp "pod/$1" '{.metadata.uid}'; }
attempt_is() { [ "$(jp "pod/$1" '{.metadata.annotations.training\.mwj\.io/restart-attempt}')" = "$2" ]; }
logged_step() { # logged_step POD STEP: the pod has logged step STEP or later
	kn logs "$1" 2> /dev/null |
		awk -v s="$2" '{ split($1, a, "/") } a[2] != "" && a[1] + 0 >= s { f = 1 } END { exit !f }'
}
preempt() { # preempt WAY POD
	case "$1" in
	delete) kn delete pod "$2" --wait=false ;;
	evict)
		printf '{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "%s", "namespace": "%s"}}\n' \
			"$2" "$ns" | k create --raw "/api/v1/namespaces/$ns/pods/$2/eviction" -f -
		;;
	hook) "${hook[@]}" "$ns/$2" ;;
	esac
}

reference() { job reference 2 | kn apply -f - > /dev/null && phase_is reference Succeeded; }
check "3. an uninterrupted reference run of $steps steps succeeds" reference
for way in "${ways[@]}"; do
	jn=preempt-$way
	interrupted() {
		job "$jn" 2 | kn apply -f - > /dev/null &&
			until_true 120 "$jn-worker-0 at step 60" logged_step "$jn-worker-0" 60 || return 1
		local old
		uid_of "$jn-worker-0" > "${TMPDIR:-/tmp}/mwj-e2e-chief.$$"
		old=$(uid_of "$jn-worker-1")
		preempt "$way" "$jn-worker-1" &&
			until_true 60 "a new $jn-worker-1" attempt_is "$jn-worker-1" 1 &&
			[ "$(uid_of "$jn-worker-1")" != "$old" ]
	}
	check "3. $way: worker 1, preempted at step 60 or later, is recreated under its name at attempt 1" interrupted
	resumed() { phase_is "$jn" Succeeded && kn logs "$jn-worker-0" | grep 'resynchronized in .* going on from step'; }
	check "3. $way: the survivor resynchronizes with the replacement, and the job succeeds" resumed
	survivor() {
		[ "$(uid_of "$jn-worker-0")" = "$(cat "${TMPDIR:-/tmp}/mwj-e2e-chief.$$")" ] &&
			[ "$(jp "pod/$jn-worker-0" '{.status.containerStatuses[0].restartCount} {.metadata.annotations.training\.mwj\.io/restart-attempt}')" = "0 0" ]
	}
	check "3. $way: the survivor is the same pod, never restarted" survivor
	counts() {
		local got
		got=$(jp "mwj/$jn" '{.status.restarts.preemptions} {.status.restarts.failures} {.status.restarts.total} {.status.workerAttempts}')
		echo "preemptions, failures, total, attempts: $got"
		[ "$got" = "1 0 1 [0,1]" ] && events_of "$jn" | grep -qx WorkerPreempted &&
			kn get mwj "$jn" --no-headers | grep -Eq "^$jn +2 +Succeeded +[0-9]+ +1 "
	}
	check "3. $way: one preemption, no failure, RESTARTS 1, a WorkerPreempted event" counts
	same() {
		local a b
		a=$(weights reference-worker-0) && b=$(weights "$jn-worker-0") || return 1
		echo "uninterrupted $a, preempted $b"
		[ ${#a} = 64 ] && [ "$a" = "$b" ]
	}
	check "3. $way: the final weights equal the uninterrupted run's, bit for bit" same
done

# --- 4. A permanent failure ---

permanent() {
	local why
	job broken 2 '[train, --model, no-such-model]' | kn apply -f - > /dev/null && phase_is broken Failed 120 ||
		return 1
	why=$(jp mwj/broken '{.status.conditions[?(@.type=="Failed")].reason}: {.status.conditions[?(@.type=="Failed")].message}')
	echo "$why"
	[[ "$why" == "WorkerFailed: worker "[01]" (pod broken-worker-"[01]") failed with exit code 1 "*"permanent failure"* ]] &&
		[ "$(jp mwj/broken '{.status.lastFailure.exitCode} {.status.restarts.total}')" = "1 0" ] &&
		events_of broken | grep -Eqx 'WorkerFailed|Failed'
}
check "4. a worker that exits 1 (an unknown model) fails the job: WorkerFailed, exit code 1, no restart" permanent
says_why() { # a failed worker's log (the operator may have deleted the other pod)
	local pod
	pod=$(jp mwj/broken '{.status.lastFailure.pod}')
	echo "lastFailure.pod: $pod"
	kn logs "$pod" | grep "unknown model 'no-such-model'"
}
check "4. the worker's log names what was wrong" says_why
failed_column() { kn get mwj broken --no-headers | grep -Eq '^broken +2 +Failed '; }
check "4. kubectl get mwj shows it Failed" failed_column

# --- 5. Deleting the jobs deletes what they owned ---

all_gone() {
	local left
	left=$(kn get mwj,pods,services,secrets,networkpolicies -l training.mwj.io/job-name -o name 2> /dev/null
		kn get mwj -o name 2> /dev/null)
	[ -z "$left" ] || { echo "left: $left" | tr '\n' ' '; return 1; }
}
deleted() {
	owned_by "preempt-${ways[0]:-delete}" | grep -q '^Pod/' || { echo "nothing owned to start with"; return 1; }
	kn delete mwj --all > /dev/null && until_true 120 "the jobs' objects to go" all_gone
}
check "5. kubectl delete mwj --all: their pods, Services, Secrets and NetworkPolicies go too" deleted

# --- 6. helm upgrade, helm uninstall ---

# The change must show: the operator's lines turn to JSON.
upgraded() {
	"$helm" upgrade "$release" "$chart" -n "$op_ns" --wait --timeout 180s "${helm_args[@]}" \
		--set logFormat=json > /dev/null &&
		k -n "$op_ns" rollout status "$deploy" --timeout=120s > /dev/null || return 1
	k -n "$op_ns" get "$deploy" -o jsonpath='{.spec.template.spec.containers[0].args}' | grep -q -- '--log-format=json'
}
check "6. helm upgrade --set logFormat=json rolls the Deployment out with --log-format=json" upgraded
json_logs() {
	[ "$(operator_pods | wc -l)" = 1 ] &&
		operator_log | grep -q '^{"ts":"[^"]*","level":"info","msg":"caches filled'
}
check "6. the new operator pod, the only one, logs JSON lines" until_true 60 "JSON lines" json_logs
after_upgrade() { job quick 1 '[--help]' | kn apply -f - > /dev/null && phase_is quick Succeeded 120; }
check "6. after the upgrade a job still runs to Succeeded" after_upgrade
leftovers() {
	local left
	left=$(k get deployments,replicasets,pods,services,serviceaccounts,roles,rolebindings,secrets,configmaps,leases,poddisruptionbudgets \
		-A -l "app.kubernetes.io/instance=$release" -o name 2> /dev/null
		k get clusterroles,clusterrolebindings -l "app.kubernetes.io/instance=$release" -o name 2> /dev/null
		k -n "$op_ns" get secrets -l "owner=helm,name=$release" -o name 2> /dev/null
		k -n "$op_ns" get leases "${MWJ_E2E_LEASE:-mwj-operator}" -o name 2> /dev/null)
	[ -z "$left" ] || { echo "left: $left" | tr '\n' ' '; return 1; }
}
uninstalled() { "$helm" uninstall "$release" -n "$op_ns" --wait > /dev/null && until_true 120 "nothing left" leftovers; }
check "6. helm uninstall leaves nothing of the release: no Deployment, pods, RBAC, Service, Lease, release Secret" uninstalled
check "6. ... and keeps the CRD, as Helm does with a chart's crds/" k get crd multiworkerjobs.training.mwj.io
check "6. ... so the user's jobs stay, with no operator acting on them" kn get mwj quick
finish
