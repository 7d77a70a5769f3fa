#!/usr/bin/env bash
# make demo, the README's first command, on the local test cluster: it runs
# to the end and shows what it promises (the job Succeeded, the survivor's
# resynchronized line, one restart counted as a preemption, the saved
# model's test accuracy), and leaves nothing behind; interrupted mid-training
# as Ctrl-C does, it leaves nothing behind either. Short epochs
# (MWJ_DEMO_STEPS) keep it to a couple of minutes. Ends with
# "N passed, N failed".
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d /tmp/mwj-demo-test-XXXXXX)
trap 'rm -rf "$out"' EXIT
. "$root/e2e/checks.sh"
demo() { MWJ_DEMO_CLUSTER=local MWJ_DEMO_STEPS=${MWJ_DEMO_STEPS:-200} "$root/scripts/demo.sh"; }
has() { grep -Eq -- "$2" "$1" || { echo "no line matching '$2' in its output"; return 1; }; }
# A row of kubectl get mwj while it trains, as the demo prints it every 5 s.
progressing='^\[ *[0-9]+s\] +Running +2 +[0-9]+ +[0-9]+% +[12] +[0-9.e-]+ +[0-9smh]+$'

# left LOG: the processes the demo of LOG started that still run, by its
# state folder on their command line (API server, nginx) or its API
# server's port in their environment (every pod: workers, the operator).
left() {
	local state port p found=0
	state=$(sed -n 's#^ *export KUBECONFIG=\(/tmp/mwj-demo-[A-Za-z0-9]*\)/kubeconfig$#\1#p' "$1" | head -n 1)
	port=$(sed -n 's#^The API server: https://127.0.0.1:\([0-9]*\)\. .*#\1#p' "$1" | head -n 1)
	if [ -z "$state" ] || [ -z "$port" ]; then
		echo "no cluster in the output of the demo"
		return 1
	fi
	for p in /proc/[0-9]*; do
		if tr '\0' ' ' 2> /dev/null < "$p/cmdline" | grep -qF "$state/" ||
			tr '\0' '\n' 2> /dev/null < "$p/environ" | grep -qx "KUBERNETES_SERVICE_PORT=$port"; then
			echo "left running: ${p#/proc/} $(tr '\0' ' ' 2> /dev/null < "$p/cmdline")"
			found=1
		fi
	done
	[ -d "$state" ] && { echo "left: $state"; found=1; }
	[ "$found" = 0 ]
}

# --- The whole demo ---
demo > "$out/full.log" 2>&1
rc=$?
ran() { [ "$rc" = 0 ] || { echo "exit $rc; its last lines:"; tail -n 60 "$out/full.log"; return 1; }; }
check "make demo runs to the end (exit 0)" ran
check "it shows the job Succeeded with one restart" \
	has "$out/full.log" '^mnist-demo +2 +Succeeded +[0-9]+ +1 '
check "it shows one preemption and no failure in the status" \
	has "$out/full.log" '"failures":0,"preemptions":1,"total":1'
check "it shows the WorkerPreempted event" has "$out/full.log" 'WorkerPreempted +worker 1'
check "it shows the survivor's resynchronized line" \
	has "$out/full.log" 'warn +resynchronized in [0-9.]+ s: going on from step'
accurate() { # the evaluation line, and an accuracy the model reaches in a few hundred steps
	has "$out/full.log" '^157/157 .* - accuracy: 0\.[0-9]+$' &&
		awk '/^157\/157 / { a = $NF } END { exit !(a >= 0.7) }' "$out/full.log"
}
check "it shows the saved model's test accuracy (at least 0.7)" accurate
check "it follows training in kubectl get mwj: PROGRESS, EPOCH, LOSS and ETA" \
	has "$out/full.log" "$progressing"
check "it shows the training status: epoch 2 of 2, every step, 100%" \
	has "$out/full.log" '^    training: epoch 2/2, step ([0-9]+)/\1 \(100%\), loss [0-9.]+, '
check "it shows the replacement's own log: its rendezvous and the ring formed" \
	has "$out/full.log" '^    .* info  rendezvous: ring of 2 formed in ' 
check "it cleans up: no process of its cluster left, no state folder" left "$out/full.log"

# --- Interrupted mid-training, as Ctrl-C interrupts it ---
# timeout runs it in a process group of its own, as a terminal would, and
# sends SIGINT to the whole group, as Ctrl-C does.
MWJ_DEMO_CLUSTER=local MWJ_DEMO_STEPS=${MWJ_DEMO_STEPS:-200} timeout -s INT 600 "$root/scripts/demo.sh" \
	> "$out/int.log" 2>&1 &
tpid=$!
for _ in $(seq 300); do
	grep -Eq "$progressing" "$out/int.log" && break
	kill -0 "$tpid" 2> /dev/null || break
	sleep 1
done
training() { has "$out/int.log" "$progressing"; }
check "interrupted: it was training" training
kill -INT "$tpid" 2> /dev/null
wait "$tpid"
rc=$?
check "interrupted: it exits with 130 (SIGINT), after cleaning up" test "$rc" = 130
check "interrupted: it says it cleans up" has "$out/int.log" '^down: stopped'
check "interrupted: no process of its cluster left, no state folder" left "$out/int.log"

finish
