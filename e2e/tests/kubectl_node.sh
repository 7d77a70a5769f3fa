#!/usr/bin/env bash
# The local test cluster's node, driven by real kubectl: pods run as local
# processes and their status follows them (exit 0 Succeeded, exit 3 Failed
# with code 3, a signal, a restart in place), kubectl logs reads them, env
# and the downward API reach them, two mwj-worker pods find each other by
# their headless Service's DNS names and train on one port with a PVC for
# backups, a preempted, evicted, killed, deleted or cascade-deleted pod
# goes as on a real cluster, native sidecars start before and stop after
# the containers, a container that exits beside another shows so, and a
# container runs as its user, with its groups and its volumes' modes, or
# is refused for runAsNonRoot. Ends with "N passed, N failed".
set -u
. "$(dirname "$0")/lib.sh"
cluster_up

pod() { # pod NAME RESTART_POLICY SCRIPT [SPEC YAML] [CONTAINER YAML]: runs sh -c SCRIPT
	cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, labels: {test: node}}
spec:
  restartPolicy: $2
  terminationGracePeriodSeconds: 5
${4:-}
  containers:
  - name: main
    image: busybox:1.36
${5:-}
    command: [sh, -c]
    args:
    - |
$(printf '%s\n' "$3" | sed 's/^/      /')
YAML
}
jp() { k get "$1" -o jsonpath="$2"; }
# What a pod shows now, polled. kubectl wait would do, but through the
# cluster's HTTP/2 front a watch's response headers wait for its first
# event (nginx 1.22 holds them; kube-apiserver flushes them at once), so a
# kubectl wait for a state the pod is in already returns only at client-go's
# 30 s HTTP/2 ping.
field_is() { [ "$(jp "pod/$1" "$2")" = "$3" ]; } # field_is POD JSONPATH VALUE
no_pod() { k get pod "$1" 2>&1 | grep -q '(NotFound)'; } # the API server says it is gone
phase_is() { until_true 60 "pod $1 $2" field_is "$1" '{.status.phase}' "$2"; }

exits0() {
	pod ok Never 'echo "hello from $(hostname)"' | k apply -f - > /dev/null &&
		phase_is ok Succeeded &&
		[ "$(jp pod/ok '{.status.containerStatuses[0].state.terminated.exitCode} {.status.containerStatuses[0].state.terminated.reason}')" = "0 Completed" ]
}
check "a pod whose process exits 0 becomes Succeeded" exits0
check "kubectl logs reads its output; its host name is the pod's" \
	bash -c "[ \"\$('$kubectl' logs ok)\" = 'hello from ok' ]"

followed() {
	local out
	pod talker Never 'for i in 1 2 3; do echo "line $i"; sleep 0.5; done' | k apply -f - > /dev/null &&
		until_true 30 "talker Running" field_is talker '{.status.phase}' Running || return 1
	out=$(timeout 20 "$kubectl" logs -f talker) || return 1
	[ "$out" = "$(printf 'line 1\nline 2\nline 3')" ] && [ "$(k logs talker --tail=1)" = "line 3" ]
}
check "kubectl logs -f follows a running container to its end, and --tail cuts" followed

exits3() {
	pod three Never 'exit 3' | k apply -f - > /dev/null &&
		phase_is three Failed &&
		[ "$(jp pod/three '{.status.containerStatuses[0].state.terminated.exitCode} {.status.containerStatuses[0].state.terminated.reason}')" = "3 Error" ]
}
check "a pod whose process exits 3 becomes Failed with exit code 3" exits3

environment() {
	pod env Never 'echo "$MY_NAME $MY_NS $MY_IP $MY_LABEL $JOINED"' '' "$(
		cat <<'YAML'
    env:
    - {name: MY_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: MY_NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: MY_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: MY_LABEL, valueFrom: {fieldRef: {fieldPath: "metadata.labels['test']"}}}
    - {name: JOINED, value: "$(MY_NAME)-in-$(MY_NS)"}
YAML
	)" | k apply -f - > /dev/null && phase_is env Succeeded || return 1
	local ip
	ip=$(jp pod/env '{.status.podIP}')
	[[ $ip =~ ^127\.0\.[0-9]+\.[0-9]+$ ]] && [ "$ip" != 127.0.0.1 ] &&
		[ "$(k logs env)" = "env default $ip node env-in-default" ]
}
check "env, \$(VAR) references and the downward API reach the process; the pod has its own 127.0.x.y" environment

restarts() {
	pod flaky OnFailure 'n=$(cat /tmp/mwj-e2e-v/n 2> /dev/null || echo 0); echo "run $n"; echo $((n + 1)) > /tmp/mwj-e2e-v/n; [ "$n" -ge 1 ]' \
		'  volumes: [{name: v, emptyDir: {}}]' '    volumeMounts: [{name: v, mountPath: /tmp/mwj-e2e-v}]' |
		k apply -f - > /dev/null &&
		phase_is flaky Succeeded &&
		[ "$(jp pod/flaky '{.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].lastState.terminated.exitCode}')" = "1 1" ] &&
		[ "$(k logs flaky --previous)" = "run 0" ] && [ "$(k logs flaky)" = "run 1" ]
}
check "restartPolicy OnFailure restarts a failed container in place, and its emptyDir stays" restarts

unknown_image() {
	k run nowhere --image=registry.example/nowhere:1 --restart=Never > /dev/null &&
		until_true 20 "ErrImagePull" field_is nowhere '{.status.containerStatuses[0].state.waiting.reason}' ErrImagePull &&
		[ "$(jp pod/nowhere '{.status.phase}')" = Pending ] &&
		k delete pod nowhere --wait=true --timeout=20s > /dev/null
}
check "an image the node does not know waits with ErrImagePull" unknown_image

# Two mwj-worker pods, as the operator will make them: hostname and
# subdomain, a headless Service publishing not-ready addresses, TF_CONFIG
# with the DNS names, both on port 2222, backups on a PVC.
train_job() {
	local i
	cat <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: train-ckpt}
spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Service
metadata: {name: train}
spec: {clusterIP: None, publishNotReadyAddresses: true, selector: {job: train}, ports: [{port: 2222}]}
YAML
	for i in 0 1; do
		cat <<YAML
---
apiVersion: v1
kind: Pod
metadata: {name: train-worker-$i, labels: {job: train}}
spec:
  hostname: train-worker-$i
  subdomain: train
  restartPolicy: Never
  volumes: [{name: ckpt, persistentVolumeClaim: {claimName: train-ckpt}}]
  containers:
  - name: worker
    image: mwj-worker:latest
    args: [train, --epochs, "1", --steps-per-epoch, "20", --batch-size, "32",
           --save-freq, "10", --model-dir, /mwj/checkpoint/model]
    env:
    - {name: TF_CONFIG, value: '{"cluster":{"worker":["train-worker-0.train.default.svc:2222","train-worker-1.train.default.svc:2222"]},"task":{"type":"worker","index":$i}}'}
    - {name: MWJ_BACKUP_DIR, value: /mwj/checkpoint/backup}
    volumeMounts: [{name: ckpt, mountPath: /mwj/checkpoint}]
YAML
	done
}
trained() {
	train_job | k apply -f - > /dev/null && phase_is train-worker-0 Succeeded &&
		phase_is train-worker-1 Succeeded &&
		k logs train-worker-0 | grep -q '20/20' &&
		[ "$(jp pvc/train-ckpt '{.status.phase}')" = Bound ] &&
		ls "$state"/node/volumes/default/train-ckpt/model | grep -q .
}
check "two mwj-worker pods find each other by DNS, train on one port, and leave the model on the PVC" trained

running() { until_true 60 "pod $1 Ready" field_is "$1" '{.status.conditions[?(@.type=="Ready")].status}' True; }
gone() { # gone PID: the process has ended
	local _
	for _ in $(seq 100); do
		kill -0 "$1" 2> /dev/null || return 0
		sleep 0.1
	done
	return 1
}
pid_of() { jp "pod/$1" '{.status.containerStatuses[0].containerID}' | sed 's#^local://##'; }

killed() {
	pod sleeper Never 'exec sleep 300' | k apply -f - > /dev/null && running sleeper &&
		fault kill sleeper KILL > /dev/null && phase_is sleeper Failed &&
		[ "$(jp pod/sleeper '{.status.containerStatuses[0].state.terminated.exitCode} {.status.containerStatuses[0].state.terminated.signal}')" = "137 9" ]
}
check "a container killed with SIGKILL ends Failed with exit code 137" killed

evicted() {
	pod evictee Never 'trap "echo got SIGTERM; exit 143" TERM; while :; do sleep 0.1; done' |
		k apply -f - > /dev/null && running evictee &&
		fault preempt evictee --evict > /dev/null && phase_is evictee Failed &&
		[ "$(jp pod/evictee '{.status.reason} {.status.conditions[?(@.type=="DisruptionTarget")].status} {.status.conditions[?(@.type=="DisruptionTarget")].reason}')" = \
			"Evicted True TerminationByKubelet" ] &&
		[ "$(jp pod/evictee '{.status.containerStatuses[0].state.terminated.exitCode}')" = 143 ] &&
		k logs evictee | grep -q 'got SIGTERM'
}
check "an evicted pod gets SIGTERM and ends Failed, reason Evicted, with DisruptionTarget" evicted

preempted() {
	local out=$state/preempt.watch pid
	pod preemptee Never 'exec sleep 300' | k apply -f - > /dev/null && running preemptee || return 1
	pid=$(pid_of preemptee)
	timeout 30 "$kubectl" get pod preemptee -w --output-watch-events -o json > "$out" 2>&1 &
	# Preempt once kubectl has the pod (its watch goes on from there): the
	# node stops and deletes a preempted pod faster than kubectl starts.
	for _ in $(seq 100); do grep -q '"ADDED"' "$out" && break; sleep 0.1; done
	fault preempt preemptee > /dev/null &&
		k wait --for=delete pod/preemptee --timeout=30s > /dev/null && gone "$pid" || return 1
	for _ in $(seq 50); do grep -q '"DELETED"' "$out" && break; sleep 0.1; done
	/usr/bin/python3 - "$out" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
dec, i, events = json.JSONDecoder(), 0, []
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    obj, i = dec.raw_decode(text, i)
    events.append(obj)
last = [e for e in events if e["type"] == "DELETED"][-1]["object"]["status"]
conds = {c["type"]: c for c in last["conditions"]}
assert conds["DisruptionTarget"]["reason"] == "PreemptionByScheduler", conds
assert last["phase"] == "Failed" and last["reason"] == "Preempted", last
PY
}
check "a preempted pod gets DisruptionTarget, is stopped and deleted" preempted

graceful() {
	pod stubborn Never 'trap "" TERM; while :; do sleep 0.1; done' |
		sed 's/terminationGracePeriodSeconds: 5/terminationGracePeriodSeconds: 2/' |
		k apply -f - > /dev/null && running stubborn || return 1
	local pid
	pid=$(pid_of stubborn)
	k delete pod stubborn --wait=false > /dev/null &&
		[ -n "$(jp pod/stubborn '{.metadata.deletionTimestamp}')" ] && kill -0 "$pid" &&
		k wait --for=delete pod/stubborn --timeout=20s > /dev/null && gone "$pid"
}
check "a deleted pod that ignores SIGTERM is marked, then killed after its grace period" graceful

established() { [ "$(jp crd/multiworkerjobs.training.mwj.io '{.status.conditions[?(@.type=="Established")].status}')" = True ]; }
cascade() {
	k apply -f "$root/crds/" > /dev/null && k apply -f "$root/examples/minimal.yaml" > /dev/null &&
		until_true 30 "the CRD Established" established || return 1
	local uid pid
	uid=$(jp mwj/mnist '{.metadata.uid}')
	pod owned Never 'exec sleep 300' | sed "s#^metadata: {name: owned, labels: {test: node}}#metadata: {name: owned, ownerReferences: [{apiVersion: training.mwj.io/v1, kind: MultiWorkerJob, name: mnist, uid: $uid, controller: true}]}#" |
		k apply -f - > /dev/null && running owned || return 1
	pid=$(pid_of owned)
	k delete mwj mnist > /dev/null && k wait --for=delete pod/owned --timeout=30s > /dev/null &&
		gone "$pid"
}
check "deleting a job deletes the pods it owns, and their processes" cascade


# A native sidecar (Kubernetes 1.28+) beside a worker, as a log shipper
# or a mesh proxy is deployed: it starts first, runs beside the worker,
# and is stopped after it; the pod follows the worker.
sidecar_pod() { # sidecar_pod NAME WORKER_EXIT
	cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  initContainers:
  - name: shipper
    image: busybox:1.36
    restartPolicy: Always
    command: [sh, -c, 'trap "echo shipper stopped; exit 0" TERM; echo shipper up; while :; do sleep 0.1; done']
  containers:
  - name: worker
    image: busybox:1.36
    command: [sh, -c, 'echo worker ran; sleep 3; exit $2']
YAML
}
sidecar_runs() {
	worker_beside_sidecar() { [ "$(jp pod/sidecar '{.status.phase} {.status.containerStatuses[0].started} {.status.initContainerStatuses[0].started} {.status.initContainerStatuses[0].ready}')" = "Running true true true" ]; }
	sidecar_pod sidecar 0 | k apply -f - > /dev/null &&
		until_true 30 "the worker running beside its sidecar" worker_beside_sidecar &&
		phase_is sidecar Succeeded &&
		[ "$(jp pod/sidecar '{.status.initContainerStatuses[0].state.terminated.exitCode} {.status.containerStatuses[0].state.terminated.exitCode}')" = "0 0" ] &&
		[ "$(k logs sidecar -c shipper)" = "$(printf 'shipper up\nshipper stopped')" ] &&
		[ "$(k logs sidecar -c worker)" = "worker ran" ]
}
check "a native sidecar runs beside the worker, is stopped after it, and the pod Succeeds" sidecar_runs

sidecar_failed() {
	sidecar_pod sidecar-failed 3 | k apply -f - > /dev/null && phase_is sidecar-failed Failed &&
		k describe pod sidecar-failed > "$state/describe" &&
		grep -q '^Init Containers:' "$state/describe" &&
		awk '/^Containers:/{c=1} c && /Exit Code:/{print $3; exit}' "$state/describe" | grep -qx 3
}
check "a worker that fails beside a sidecar fails the pod; kubectl describe shows both" sidecar_failed

beside() {
	cat <<'YAML' | k apply -f - > /dev/null || return 1
apiVersion: v1
kind: Pod
metadata: {name: beside}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - {name: worker, image: busybox:1.36, command: [sh, -c, 'exit 0']}
  - {name: shipper, image: busybox:1.36, command: [sh, -c, 'exec sleep 300']}
YAML
	until_true 30 "the worker Completed" field_is beside '{.status.containerStatuses[0].state.terminated.reason}' Completed &&
		[ "$(jp pod/beside '{.status.phase} {.status.containerStatuses[0].state.terminated.exitCode} {.status.containerStatuses[1].state.running.startedAt}' | cut -d' ' -f1,2)" = "Running 0" ] &&
		[ -n "$(jp pod/beside '{.status.containerStatuses[1].state.running.startedAt}')" ] &&
		k delete pod beside --wait=false > /dev/null && until_true 30 "pod beside deleted" no_pod beside
}
check "a container that exits 0 beside a running one leaves the pod Running, it Completed" beside

# Users, groups and volume files, as a kubelet and runtime give them.
users() {
	cat <<'YAML' | k apply -f - > /dev/null || return 1
apiVersion: v1
kind: Secret
metadata: {name: users-key}
data: {key: c2VjcmV0}
---
apiVersion: v1
kind: Pod
metadata: {name: users}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [4000]}
  volumes:
  - {name: key, secret: {secretName: users-key, defaultMode: 0400}}
  - {name: scratch, emptyDir: {}}
  containers:
  - name: main
    image: busybox:1.36
    volumeMounts: [{name: key, mountPath: /mwj-test/key}, {name: scratch, mountPath: /mwj-test/scratch}]
    command: [sh, -c, 'id -u; id -G; cat /mwj-test/key/key; echo; stat -c "%a %u %g" /mwj-test/key/key /mwj-test/scratch /var/run/secrets/kubernetes.io/serviceaccount/token']
YAML
	phase_is users Succeeded &&
		[ "$(k logs users -c main)" = "$(printf '1000\n3000 2000 4000\nsecret\n440 0 2000\n2777 0 2000\n640 1000 2000')" ]
}
check "a container runs as runAsUser with its groups; fsGroup owns its secret 0440 and its emptyDir" users

image_user() {
	cat <<'YAML' | k apply -f - > /dev/null || return 1
apiVersion: v1
kind: Pod
metadata: {name: image-user}
spec:
  restartPolicy: Never
  securityContext: {runAsNonRoot: true}
  containers:
  - {name: main, image: mwj-worker:latest, command: [sh, -c, 'id -u; id -g']}
YAML
	phase_is image-user Succeeded && [ "$(k logs image-user)" = "$(printf '65532\n65532')" ]
}
check "the worker image runs as its user 65532:65532, which runAsNonRoot accepts" image_user

non_root() {
	cat <<'YAML' | k apply -f - > /dev/null || return 1
apiVersion: v1
kind: Pod
metadata: {name: non-root}
spec:
  restartPolicy: Never
  securityContext: {runAsNonRoot: true}
  containers:
  - {name: main, image: busybox:1.36, command: [id]}
YAML
	until_true 30 "CreateContainerConfigError" field_is non-root '{.status.containerStatuses[0].state.waiting.reason}' CreateContainerConfigError &&
		k get pod non-root --no-headers | grep -q CreateContainerConfigError &&
		k describe pod non-root | grep -q 'Error: container has runAsNonRoot and image will run as root (pod: "non-root_default(' &&
		[ "$(jp pod/non-root '{.status.phase}')" = Pending ] &&
		k delete pod non-root --wait=true --timeout=30s > /dev/null
}
check "runAsNonRoot refuses a container that would run as root: CreateContainerConfigError" non_root

refused_policy() {
	local out
	out=$(sidecar_pod bad-policy 0 | sed 's/restartPolicy: Always/restartPolicy: OnFailure/' | k apply -f - 2>&1) && return 1
	grep -q 'spec.initContainers\[0\].restartPolicy: Unsupported value: "OnFailure": supported values: "Always"' <<< "$out" || { echo "$out"; return 1; }
	out=$(pod bad-main Never 'true' '' '    restartPolicy: Always' | k apply -f - 2>&1) && return 1
	grep -q 'spec.containers\[0\].restartPolicy: Forbidden: may not be set for non-init containers' <<< "$out" || { echo "$out"; return 1; }
}
check "restartPolicy is refused on a container, and on an init container unless Always" refused_policy

finish
