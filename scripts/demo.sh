#!/usr/bin/env bash
# make demo: the whole system in a few minutes, narrated. It starts a
# cluster, installs the operator with its Helm chart, applies a 2-worker
# MultiWorkerJob (examples/demo.yaml), follows its training, preempts a
# worker halfway and shows the recovery, and ends with the job's status and
# the saved model's test accuracy (examples/demo-evaluate.yaml). It cleans
# up after itself, Ctrl-C included.
#
#   scripts/demo.sh            (make demo builds the binaries, then runs it)
#
# The cluster: kind when kind and docker are on PATH and Docker's engine
# runs (e2e/kind/up.sh builds the images, and makes a cluster named
# $MWJ_KIND_CLUSTER, here mwj-demo, that e2e/kind/down.sh deletes at the
# end), otherwise the local test cluster (e2e/cluster), whose pods run
# build/bin's binaries as local processes.
#   MWJ_DEMO_CLUSTER=local|kind   choose instead of guessing
#   MWJ_DEMO_STEPS=N              steps per epoch (default: the manifest's
#                                 1000; tests use fewer)
#   MWJ_DEMO_KEEP=1               keep the local cluster's state folder
#   MWJ_OPERATOR_BIN, MWJ_WORKER_BIN   the binaries the local cluster's
#                                 pods run (default: build/bin's)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
job=mnist-demo
release=mwj
operator_ns=mwj-system
kubectl=${KUBECTL:-kubectl}
helm=${HELM:-helm}

# kind only where Docker's engine answers: a docker client alone is not
# enough (the Makefile's images target asks the same).
case "${MWJ_DEMO_CLUSTER:-}" in
local | kind) cluster=$MWJ_DEMO_CLUSTER ;;
"")
	cluster=local
	if command -v kind > /dev/null && command -v docker > /dev/null && docker info > /dev/null 2>&1 &&
		[ -x "$root/e2e/kind/up.sh" ]; then
		cluster=kind
	fi
	;;
*) echo "demo: MWJ_DEMO_CLUSTER must be local or kind" >&2; exit 1 ;;
esac
if [ "$cluster" = kind ] && [ ! -x "$root/e2e/kind/up.sh" ]; then
	echo "demo: no e2e/kind/up.sh in this tree to make a kind cluster with" >&2
	exit 1
fi
steps=${MWJ_DEMO_STEPS:-}
[[ -z $steps || $steps =~ ^[1-9][0-9]{0,5}$ ]] || {
	echo "demo: MWJ_DEMO_STEPS must be a number of steps from 1" >&2
	exit 1
}
if [ "$cluster" = local ] && [ "$(id -u)" != 0 ]; then
	echo "demo: the local test cluster runs its pods in mount namespaces, which needs root:" \
		"run sudo make demo (or install kind and Docker, and it uses kind)" >&2
	exit 1
fi
# The local cluster's pods run these (make test passes its own build's).
operator_bin=${MWJ_OPERATOR_BIN:-$root/build/bin/mwj-operator}
worker_bin=${MWJ_WORKER_BIN:-$root/build/bin/mwj-worker}
if [ "$cluster" = local ]; then
	for bin in "$operator_bin" "$worker_bin"; do
		[ -x "$bin" ] || { echo "demo: no $bin: build it with make (make demo does)" >&2; exit 1; }
	done
	export MWJ_WORKER_BIN=$worker_bin
fi
for tool in "$kubectl" "$helm"; do
	command -v "$tool" > /dev/null || {
		echo "demo: no $tool on PATH: run scripts/install-deps.sh" >&2
		exit 1
	}
done

state=$(mktemp -d /tmp/mwj-demo-XXXXXX)
started=$SECONDS
up=0        # 1 once a cluster may be running: cleanup then takes it down
installed=0 # 1 once helm install may have begun
# kubectl and helm talk to the demo's cluster only, never to one the
# user's own KUBECONFIG names, cleanup included.
export KUBECONFIG=$state/kubeconfig

# Everything the demo started goes, whatever ends it: Ctrl-C, an error, the
# end. A second Ctrl-C must not cut the cleanup short.
cleanup() {
	local rc=$?
	trap '' INT TERM
	trap - EXIT
	set +e
	if [ "$rc" != 0 ] && [ "$rc" != 130 ] && [ "$up" = 1 ]; then
		what_went_wrong
	fi
	if [ "$up" = 1 ]; then
		echo
		echo "== Cleaning up"
		if [ "$installed" = 1 ] && [ -f "$KUBECONFIG" ]; then
			"$helm" uninstall "$release" -n "$operator_ns" --timeout 30s > /dev/null 2>&1 &&
				echo "helm uninstall $release: done"
		fi
		if [ "$cluster" = kind ]; then
			"$root/e2e/kind/down.sh"
		else
			"$root/e2e/cluster/down.sh" "$state"
		fi
	fi
	if [ "${MWJ_DEMO_KEEP:-0}" = 1 ]; then
		echo "kept $state"
	else
		rm -rf "$state"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

k() { "$kubectl" "$@"; }
# On a failure, before the cluster goes: the pods and the last lines each
# logged, the operator's included.
what_went_wrong() {
	local pod
	echo
	echo "== The demo failed; what the cluster shows"
	k get mwj,pods -A 2> /dev/null
	for pod in $(k get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{" "}{end}' 2> /dev/null); do
		echo "-- kubectl logs $pod (the last lines)"
		k logs -n "${pod%%/*}" "${pod#*/}" --tail 15 2> /dev/null
	done
	[ "$cluster" = kind ] || echo "(MWJ_DEMO_KEEP=1 keeps $state, every pod's logs included)"
}
step() { printf '\n== %s  [%ds]\n' "$*" "$((SECONDS - started))"; }
say() { printf '%s\n' "$*" | fold -s -w 78; }
# show CMD...: prints the command as a user would type it, then runs it.
show() {
	local cmd="$*"
	cmd=${cmd//"$root/"/}
	cmd=${cmd/#k /kubectl }
	printf '$ %s\n' "$cmd"
	"$@"
}
jp() { k get "$1" -o jsonpath="$2" 2> /dev/null; }
phase() { jp "mwj/$job" '{.status.phase}'; }
# wait_for SECONDS WHAT CMD...: polls CMD until it succeeds.
wait_for() {
	local limit=$1 what=$2 end=$((SECONDS + $1))
	shift 2
	until "$@"; do
		if [ "$SECONDS" -ge "$end" ]; then
			echo "demo: timed out after $limit s waiting for $what" >&2
			return 1
		fi
		sleep 1
	done
}
chief_log() { k logs "$job-worker-0" 2> /dev/null; }
# The columns of `kubectl get mwj` that say where training stands (the
# chief reports it to the operator, which writes it into the status), in
# widths that stay put from one line to the next; "-" where there is none.
columns='%-7s %-10s %-6s %-9s %-9s %-6s %-10s %s\n'
report() {
	local f
	IFS=$'\t' read -r -a f < <(jp "mwj/$job" '{.status.phase}{"\t"}{.status.workers.ready}{"\t"}{.status.restarts.total}{"\t"}{.status.training.progress}{"\t"}{.status.training.epoch}{"\t"}{.status.training.loss}{"\t"}{.status.training.eta}{"\n"}')
	# shellcheck disable=SC2059 # the format is $columns
	printf "$columns" "[$(printf '%3d' $((SECONDS - started)))s]" "${f[0]:--}" "${f[1]:--}" \
		"${f[2]:--}" "${f[3]:--}" "${f[4]:--}" "${f[5]:--}" "${f[6]:--}"
}
# follow UNTIL_CMD...: reports every 5 s until UNTIL_CMD succeeds (it is
# asked every second) or the job has finished.
follow() {
	local end=$((SECONDS + 600)) next=$SECONDS
	until "$@"; do
		case "$(phase)" in Succeeded | Failed) return 0 ;; esac
		[ "$SECONDS" -lt "$end" ] || { echo "demo: the job did not finish in 10 minutes" >&2; return 1; }
		if [ "$SECONDS" -ge "$next" ]; then
			report
			next=$((SECONDS + 5))
		fi
		sleep 1
	done
}
past_half() { [ "$(jp "mwj/$job" '{.status.training.percent}')" -ge 50 ] 2> /dev/null; }
finished() { case "$(phase)" in Succeeded | Failed) return 0 ;; esac; return 1; }
pods() {
	echo "$ kubectl get pods -l training.mwj.io/job-name=$job -o custom-columns=..."
	k get pods -l "training.mwj.io/job-name=$job" -o custom-columns='NAME:.metadata.name,PHASE:.status.phase,ATTEMPT:.metadata.annotations.training\.mwj\.io/restart-attempt,STARTED:.status.startTime,UID:.metadata.uid'
}
events() {
	echo "$ kubectl get events --field-selector involvedObject.name=$job -o custom-columns=..."
	k get events --field-selector "involvedObject.name=$job" \
		-o custom-columns='TIME:.lastTimestamp,TYPE:.type,REASON:.reason,MESSAGE:.message'
}

# --- 1. A cluster ---
if [ "$cluster" = kind ]; then
	step "1/6  A kind cluster (e2e/kind/up.sh builds the images and loads them into it)"
	# A cluster of the demo's own, which the end deletes: never one that
	# was there before.
	export MWJ_KIND_CLUSTER=${MWJ_KIND_CLUSTER:-mwj-demo} MWJ_KIND_KUBECONFIG=$KUBECONFIG
	if kind get clusters 2> /dev/null | grep -qx "$MWJ_KIND_CLUSTER"; then
		echo "demo: a kind cluster named $MWJ_KIND_CLUSTER exists; delete it, or name another with MWJ_KIND_CLUSTER" >&2
		exit 1
	fi
	say "It builds the images with Docker and creates a three-node cluster: several minutes the first time."
	up=1
	if ! "$root/e2e/kind/up.sh" > /dev/null 2> "$state/kind-up.log"; then
		tail -n 30 "$state/kind-up.log" >&2
		exit 1
	fi
else
	step "1/6  The local test cluster (e2e/cluster: an API server, and a node that runs pods as local processes)"
	say "mwj's own test cluster stands in for a real one (kind is used where kind and Docker are installed): real kubectl and helm talk to it, and its pods run build/bin/mwj-operator and build/bin/mwj-worker."
	up=1
	"$root/e2e/cluster/up.sh" "$state" --image "mwj-operator=$operator_bin" > /dev/null
fi
printf 'The API server: %s. To look around with kubectl in another terminal:\n    export KUBECONFIG=%s\n' \
	"$(k config view --minify -o jsonpath='{.clusters[0].cluster.server}')" "$KUBECONFIG"
show k get nodes

# --- 2. The operator ---
step "2/6  Install the operator with its Helm chart"
installed=1
show "$helm" install "$release" charts/mwj-operator -n "$operator_ns" --create-namespace --wait --timeout 180s |
	grep -E '^(\$ |NAME:|STATUS:|NAMESPACE:)'
show k -n "$operator_ns" get pods

# --- 3. The job ---
step "3/6  Apply a 2-worker MultiWorkerJob (examples/demo.yaml)"
# The examples as they are, but on kind: its storage is per node and its
# cluster has two worker nodes, so the folder that e2e/kind/up.sh mounts in
# every node stands in for a ReadWriteMany claim, and the image is the
# version up.sh loaded.
example() { # example NAME: examples/NAME as this cluster runs it, into $state/NAME
	local version
	version=$(awk '$2 == "OPERATOR_VERSION" { gsub(/"/, "", $3); print $3 }' operator/src/cmd/cli.h)
	if [ "$cluster" = kind ]; then
		sed -e "s#image: mwj-worker:latest#image: mwj-worker:$version#" \
			-e 's#persistentVolumeClaim:#hostPath: {path: /mwj-shared, type: Directory}#' \
			-e '/claimName: mnist-demo-checkpoints/d' "examples/$1"
	else
		cat "examples/$1"
	fi | sed "s/--steps-per-epoch, \"1000\"/--steps-per-epoch, \"${steps:-1000}\"/" > "$state/$1"
}
example demo.yaml
example demo-evaluate.yaml
manifest=examples/demo.yaml
cmp -s "$state/demo.yaml" "$manifest" || manifest=$state/demo.yaml
say "Two workers train the tutorial CNN on Fashion-MNIST, each on its own half of every batch, their gradients summed by a ring all-reduce every step; the chief (worker 0) writes a backup to the shared claim every 100 steps."
show k apply -f "$manifest"
both_running() {
	[ "$(k get pods -l "training.mwj.io/job-name=$job" -o jsonpath='{.items[*].status.phase}' 2> /dev/null)" = \
		"Running Running" ]
}
wait_for 120 "both workers to run" both_running
show k get mwj
pods
echo
say "Training: the chief reports its progress to the operator, which writes it into the job's status. Its columns in kubectl get mwj, every 5 s:"
# shellcheck disable=SC2059 # the format is $columns
printf "$columns" "" PHASE READY RESTARTS PROGRESS EPOCH LOSS ETA
follow past_half
report

# --- 4. Preemption ---
step "4/6  Halfway: worker 1 is preempted"
worker_running() { [ "$(jp "pod/$job-worker-1" '{.status.phase}')" = Running ]; }
wait_for 120 "worker 1 to run" worker_running
old_uid=$(jp "pod/$job-worker-1" '{.metadata.uid}')
if [ "$cluster" = kind ]; then
	show k delete pod "$job-worker-1" --wait=false
else
	say "As the scheduler preempts a pod: it is deleted, with the DisruptionTarget condition, then SIGTERM."
	show "$root/e2e/cluster/fault.sh" -d "$state" preempt "default/$job-worker-1"
fi
replaced() {
	local uid
	uid=$(jp "pod/$job-worker-1" '{.metadata.uid}')
	[ -n "$uid" ] && [ "$uid" != "$old_uid" ]
}
resynced() { chief_log | grep -q 'resynchronized in'; }
wait_for 120 "the operator to recreate worker 1" replaced
wait_for 180 "the survivor to resynchronize" resynced
say "The operator recreated worker 1 under its own name (attempt 1); worker 0 kept running, waited for it in-process, and the two resynchronized:"
pods
echo
echo "The job's events:"
events
echo
echo "The survivor's log (worker 0) around the loss:"
chief_log | grep -E 'preemption notice|written by the chief|waiting up to|resynchronized in|first step after resynchronizing' |
	sed 's/^/    /'
echo "The replacement's log (worker 1):"
k logs "$job-worker-1" 2> /dev/null | grep -E 'rendezvous: (rank|ring)|restored|resynchronized|training as rank' |
	sed 's/^/    /' 
echo
echo "Restart counts (status.restarts; preemptions never count against backoffLimit):"
show k get mwj "$job"
printf '    status.restarts: %s\n' "$(jp "mwj/$job" '{.status.restarts}')"
echo
follow finished
report

# --- 5. The result ---
step "5/6  The job's status"
wait_for 60 "the job to finish" finished
show k get mwj "$job"
echo "Its status (kubectl get mwj $job -o yaml shows all of it):"
fmt='{"    phase: "}{.status.phase}{", from "}{.status.startTime}{" to "}{.status.completionTime}'
fmt+='{"\n    training: epoch "}{.status.training.epoch}{"/"}{.status.training.epochs}{", step "}'
fmt+='{.status.training.globalStep}{"/"}{.status.training.totalSteps}{" ("}{.status.training.progress}{"), loss "}'
fmt+='{.status.training.loss}{", "}{.status.training.samplesPerSecond}{" samples/s, last backup at step "}'
fmt+='{.status.training.lastBackupStep}'
fmt+='{"\n    restarts: "}{.status.restarts}{"\n    workers: "}{.status.workers}{"\n    conditions:\n"}'
fmt+='{range .status.conditions[*]}{"      "}{.type}{"="}{.status}{" ("}{.reason}{": "}{.message}{")\n"}{end}'
k get mwj "$job" -o jsonpath="$fmt"
echo
echo "The chief's last lines:"
chief_log | grep -E '^Epoch|^ *[0-9]+/[0-9]+ \[.*val_|model saved|final weights|backups .* removed' | uniq | sed 's/^/    /'
[ "$(phase)" = Succeeded ] || { echo "demo: the job did not succeed" >&2; exit 1; }

step "6/6  The saved model's test accuracy (examples/demo-evaluate.yaml)"
say "A pod that mounts the job's claim runs mwj-worker evaluate on the 10 000 test images:"
manifest=examples/demo-evaluate.yaml
cmp -s "$state/demo-evaluate.yaml" "$manifest" || manifest=$state/demo-evaluate.yaml
show k apply -f "$manifest"
evaluated() { case "$(jp pod/mnist-demo-evaluate '{.status.phase}')" in Succeeded | Failed) return 0 ;; esac; return 1; }
wait_for 180 "the evaluation" evaluated
show k logs mnist-demo-evaluate | grep -v '^[0-9T:.-]*Z '
[ "$(jp pod/mnist-demo-evaluate '{.status.phase}')" = Succeeded ] || {
	echo "demo: the evaluation failed" >&2
	exit 1
}
echo
say "Done in $((SECONDS - started)) s: a job applied with kubectl, a worker preempted halfway and healed without restarting the survivor, and a trained model."
