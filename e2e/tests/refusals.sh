#!/usr/bin/env bash
# mwj-operator on a cluster that says no (issue 27): the real operator
# binary against the local test cluster, which refuses as a real
# kube-apiserver does. Each refusal is an outcome, never a loop: a quota
# on Secrets, on pods and on compute; a namespace being deleted; a
# ServiceAccount not yet made; Pod Security "restricted". The job tells
# the user (condition Created False, reason CreateRefused, the API's own
# words, one Warning), costs the API server a few requests, and starts at
# attempt 0 once the refusal goes. Beside them: the worker container
# decides whatever its sidecars do; objects the job does not own are
# never used; spec.workers is immutable; a checkpoint mountPath over the
# operator's own mounts is refused; the ring key is 0400, in the worker
# container only, and no ServiceAccount token is mounted. Ends with
# "N passed, N failed".
set -u
. "$(dirname "$0")/lib.sh"
cluster_up
. "$(dirname "$0")/operator_lib.sh"

# A job without a checkpoint volume, whose worker container runs a shell
# script: mini NAME WORKERS SCRIPT [POD SPEC YAML] [MORE CONTAINERS YAML].
mini() {
	job_yaml "$1" "$2" "" "      terminationGracePeriodSeconds: 2
${4:-}" "      - name: worker
        image: busybox:1.36
        command: [sh, -c, '$3']
${5:-}"
}
# What a user reads, in namespace NS: field NS JOB JSONPATH.
field() { k -n "$1" get "mwj/$2" -o jsonpath="$3" 2> /dev/null; }
created_reason() { field "$1" "$2" '{.status.conditions[?(@.type=="Created")].reason}'; }
created_message() { field "$1" "$2" '{.status.conditions[?(@.type=="Created")].message}'; }
refused_with() { # refused_with NS JOB TEXT: Created is False, CreateRefused, saying TEXT
	[ "$(field "$1" "$2" '{.status.conditions[?(@.type=="Created")].status}')" = False ] &&
		[ "$(created_reason "$1" "$2")" = CreateRefused ] &&
		created_message "$1" "$2" | grep -qF -- "$3"
}
told_refused() { # told_refused NS JOB TEXT SECONDS
	until_true "$4" "mwj/$2 to say it is refused" refused_with "$1" "$2" "$3" ||
		{ k -n "$1" describe "mwj/$2"; return 1; }
}
phase_in() { [ "$(field "$1" "$2" '{.status.phase}')" = "$3" ]; }
ends() { until_true "${4:-120}" "mwj/$2 to be $3" phase_in "$1" "$2" "$3" || k -n "$1" describe "mwj/$2"; } # NS JOB PHASE [S]
failed_because() { # failed_because NS JOB REASON TEXT
	ends "$1" "$2" Failed 60 &&
		[ "$(field "$1" "$2" '{.status.conditions[?(@.type=="Failed")].reason}')" = "$3" ] &&
		field "$1" "$2" '{.status.conditions[?(@.type=="Failed")].message}' | grep -qF -- "$4"
}
reasons_in() { # reasons_in NS JOB: the job's Event reasons, one a line, with their counts
	k -n "$1" get events --field-selector "involvedObject.kind=MultiWorkerJob,involvedObject.name=$2" \
		-o jsonpath='{range .items[*]}{.reason} {.count}{"\n"}{end}'
}
# API writes into namespace NS so far, from the API server's front.
writes_in() { grep -cE "\"(POST|PUT|PATCH|DELETE) /apis?/[^ ]*/namespaces/$1/" "$state/nginx-access.log"; }
attempts_of() { field "$1" "$2" '{.status.workerAttempts} {.status.sentAttempts}'; }
created_attempts() { # created_attempts NS JOB: "index attempt" of each pod created, from the Events
	k -n "$1" get events --field-selector "involvedObject.kind=MultiWorkerJob,involvedObject.name=$2,reason=CreatedPod" \
		-o jsonpath='{range .items[*]}{.message}{"\n"}{end}' | sed -n 's/.*(worker \([0-9]*\), attempt \([0-9]*\))$/\1 \2/p' | sort
}
pod_attempts() { # pod_attempts NS JOB: "index attempt" of each pod
	k -n "$1" get pods -l "training.mwj.io/job-name=$2" \
		-o jsonpath='{range .items[*]}{.metadata.labels.training\.mwj\.io/replica-index} {.metadata.annotations.training\.mwj\.io/restart-attempt}{"\n"}{end}' | sort
}
no_loop() { # no_loop NS SECONDS MAX: at most MAX writes to NS in SECONDS
	local before after
	before=$(writes_in "$1")
	sleep "$2"
	after=$(writes_in "$1")
	echo "$((after - before)) API writes into $1 in $2 s"
	[ "$((after - before))" -le "$3" ]
}

check "the CRD is applied" prepare
# A resync every 2 s (300 by default): a refused job must keep to its
# back-off through resyncs as well, which the "no loop" checks count.
start_operator --resync-seconds 2
check "mwj-operator starts and fills its caches" test -n "$op_pid"

# A namespace, once its ServiceAccount "default" is made (scenario S is
# about what happens before).
has_default_sa() { k -n "$1" get serviceaccount default > /dev/null 2>&1; }
namespace() {
	k create namespace "$1" > /dev/null && until_true 30 "namespace $1's ServiceAccount" has_default_sa "$1"
}

# Q. A quota that allows no Secret.
namespace q-secrets
k -n q-secrets create quota q --hard=secrets=0 > /dev/null
mini held 2 'sleep 1; exit 0' | k -n q-secrets apply -f - > /dev/null
check "Q. a quota of 0 Secrets: Created False, CreateRefused, the quota's own words" \
	told_refused q-secrets held \
	'cannot create the Secret of the job: secrets "held-ring-key-" is forbidden: exceeded quota: q, requested: secrets=1, used: secrets=0, limited: secrets=0' 30
check "Q. no pod, and no attempt moved or recorded as sent" \
	eval '[ -z "$(k -n q-secrets get pods -o name)" ] && [ "$(attempts_of q-secrets held)" = "[-1,-1] " ]'
check "Q. no loop: a few requests in 20 s, no status write among them" no_loop q-secrets 20 8
check "Q. one Warning, once" eval '[ "$(reasons_in q-secrets held | grep -c CreateRefused)" = 1 ] &&
	reasons_in q-secrets held | grep -qx "CreateRefused 1"'
k -n q-secrets delete quota q > /dev/null
check "Q. the quota raised, the job runs with attempt 0 and succeeds" ends q-secrets held Succeeded 120
check "Q. ... both pods created at attempt 0, nothing passed over" eval '[ "$(created_attempts q-secrets held)" = "0 0
1 0" ] && ! reasons_in q-secrets held | grep -q CreateUnconfirmed'
check "Q. ... and Created True" eval '[ "$(created_reason q-secrets held)" = PodsCreated ]'

# P. A quota of one pod for two workers: one is refused, the other runs;
# raising the quota brings the second at attempt 0.
namespace q-pods
k -n q-pods create quota q --hard=pods=1 > /dev/null
mini twopods 2 'sleep 30; exit 0' | k -n q-pods apply -f - > /dev/null
check "P. a quota of one pod: one worker refused, in the quota's words" told_refused q-pods twopods \
	'is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1' 30
one_made() {
	local made
	made=$(pod_attempts q-pods twopods)
	echo "$made"
	[ "$made" = "0 0" ] || [ "$made" = "1 0" ]
}
check "P. the other worker was created all the same, at attempt 0" one_made
check "P. no loop" no_loop q-pods 10 8
k -n q-pods patch quota q --type merge -p '{"spec":{"hard":{"pods":"2"}}}' > /dev/null
both_pods() { [ "$(pod_attempts q-pods twopods)" = "0 0
1 0" ]; }
check "P. the quota raised, worker 1 comes at attempt 0" until_true 90 "worker 1" both_pods

# C. A quota on compute: pods without limits are refused until a
# LimitRange gives them defaults.
namespace q-cpu
k -n q-cpu create quota q --hard=limits.cpu=4,limits.memory=4Gi > /dev/null
mini compute 1 'exit 0' | k -n q-cpu apply -f - > /dev/null
check "C. a compute quota and a pod without limits: refused, naming what is missing" \
	told_refused q-cpu compute 'failed quota: q: must specify limits.cpu for: worker; limits.memory for: worker' 30
k -n q-cpu apply -f - > /dev/null <<'YAML'
apiVersion: v1
kind: LimitRange
metadata: {name: defaults}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 256Mi}
    defaultRequest: {cpu: 100m, memory: 64Mi}
YAML
check "C. a LimitRange's defaults admit the pod, and the job succeeds" ends q-cpu compute Succeeded 120

# S. A namespace made a moment before its job: the ServiceAccount
# admission refuses pods until the controller has made "default".
k create namespace fresh > /dev/null && mini early 2 'exit 0' | k -n fresh apply -f - > /dev/null
check "S. a job in a brand-new namespace succeeds once its ServiceAccount exists" ends fresh early Succeeded 120
check "S. ... every worker at attempt 0, none renumbered, none passed over" \
	eval '[ "$(created_attempts fresh early)" = "0 0
1 0" ] && ! reasons_in fresh early | grep -q CreateUnconfirmed'
sa_refused() { grep -q 'job fresh/early: .*serviceaccount \\"default\\" not found\|job fresh/early: .*serviceaccount "default" not found' "$log"; }
check "S. ... and it was refused first, with the admission's words" sa_refused

# R. Pod Security "restricted".
namespace strict
k label namespace strict pod-security.kubernetes.io/enforce=restricted > /dev/null
mini loose 1 'exit 0' | k -n strict apply -f - > /dev/null
check "R. a template that breaks the restricted profile: refused, with Pod Security's words" \
	told_refused strict loose 'violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false' 30
check "R. no loop" no_loop strict 10 8
restricted_sc='        securityContext:
          runAsNonRoot: true
          runAsUser: 65532
          runAsGroup: 65532
          allowPrivilegeEscalation: false
          capabilities: {drop: [ALL]}
          seccompProfile: {type: RuntimeDefault}'
mini tight 2 'exit 0' '' "$restricted_sc" | k -n strict apply -f - > /dev/null
check "R. the README's securityContext passes the restricted profile: the job succeeds" ends strict tight Succeeded 120
examples_restricted() { # every example's pods are admitted under restricted
	local f name
	for f in "$root"/examples/*.yaml; do
		grep -q 'kind: MultiWorkerJob' "$f" || continue
		name=$(/usr/bin/python3 -c 'import sys, yaml
print(next(d["metadata"]["name"] for d in yaml.safe_load_all(open(sys.argv[1]))
           if d and d.get("kind") == "MultiWorkerJob"))' "$f")
		k -n strict apply -f "$f" > /dev/null || return 1
		until_true 30 "$name's pods" eval "[ -n \"\$(k -n strict get pods -l training.mwj.io/job-name=$name -o name)\" ]" ||
			{ echo "$f: $(created_message strict "$name")"; return 1; }
		k -n strict delete -f "$f" --wait=false > /dev/null
	done
}
check "R. every example's pods are admitted in a restricted namespace" examples_restricted

# T. A namespace being deleted: nothing is created there any more, and
# its jobs cost no loop of refused creates.
namespace doomed
mini doomed 2 'sleep 300' | k -n doomed apply -f - > /dev/null
doomed_running() { [ "$(field doomed doomed '{.status.phase}')" = Running ]; }
check "T. a job runs in a namespace about to be deleted" until_true 60 "mwj/doomed" doomed_running
k -n doomed create configmap hold > /dev/null
k -n doomed patch configmap hold --type merge -p '{"metadata":{"finalizers":["example.com/hold"]}}' > /dev/null
refused_terminating() { grep -cE '"POST /api/v1/namespaces/doomed/[a-z]+ HTTP/[0-9.]+" 403' "$state/nginx-access.log"; }
k delete namespace doomed --wait=false > /dev/null
terminating_bounded() {
	sleep 15
	echo "$(refused_terminating) creates refused in the terminating namespace"
	[ "$(refused_terminating)" -le 4 ]
}
check "T. at most a few creates refused while it terminates" terminating_bounded
k -n doomed patch configmap hold --type merge -p '{"metadata":{"finalizers":null}}' > /dev/null 2>&1

# D. The worker container decides, whatever a sidecar does.
namespace side
sidecar='      - name: log-shipper
        image: busybox:1.36
        command: [sh, -c, "sleep 3600"]'
mini done-beside 1 'sleep 1; exit 0' '' "$sidecar" | k -n side apply -f - > /dev/null
check "D. a worker that exits 0 beside a running sidecar: the job succeeds" ends side done-beside Succeeded 60
gone() { [ -z "$(k -n side get pods -l "training.mwj.io/job-name=$1" -o name 2> /dev/null)" ]; }
check "D. ... and its pod is deleted, so the sidecar stops" until_true 60 "the pod to go" gone done-beside
mini broke-beside 1 'sleep 1; exit 1' '' "$sidecar" | k -n side apply -f - > /dev/null
check "D. a worker that exits 1 beside a sidecar fails the job (ExitCode policy)" \
	failed_because side broke-beside WorkerFailed 'failed with exit code 1'
native='      initContainers:
      - name: proxy
        image: busybox:1.36
        restartPolicy: Always
        command: [sh, -c, "sleep 3600"]'
mini native 1 'sleep 1; exit 0' "$native" | k -n side apply -f - > /dev/null
check "D. a native sidecar (an init container that always restarts): the job succeeds" \
	ends side native Succeeded 60

# N. Never adopt.
namespace plant
k -n plant create secret generic planted-ring-key --from-literal=key=abc > /dev/null
mini planted 1 'test "$(wc -c < $MWJ_JOB_SECRET_FILE)" = 32' | k -n plant apply -f - > /dev/null
not_planted() {
	ends plant planted Succeeded 60 || return 1
	local used
	used=$(field plant planted '{.status.ringKeySecret}')
	echo "the job's key: $used"
	[ -n "$used" ] && [ "$used" != planted-ring-key ] &&
		k -n plant get pod planted-worker-0 -o jsonpath='{.spec.volumes[?(@.name=="mwj-ring-key")].secret.secretName}' | grep -qx "$used"
}
check "N. a Secret planted under the old key's name is not used" not_planted
k -n plant create service clusterip svcjob --tcp=80 > /dev/null
mini svcjob 1 'exit 0' | k -n plant apply -f - > /dev/null
check "N. a Service of the job's name it does not own: the job fails, NameConflict" \
	failed_because plant svcjob NameConflict 'a Service named "svcjob" already exists in namespace plant and is not owned by this job'
k -n plant apply -f - > /dev/null <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: npjob-ring}
spec: {podSelector: {matchLabels: {nobody: here}}}
YAML
mini npjob 1 'exit 0' | k -n plant apply -f - > /dev/null
check "N. a NetworkPolicy of the job's name it does not own: NameConflict, nothing left open" \
	failed_because plant npjob NameConflict 'a NetworkPolicy named "npjob-ring" already exists'
k -n plant run podjob-worker-1 --image=busybox:1.36 --command -- sleep 3600 > /dev/null
mini podjob 2 'sleep 60' | k -n plant apply -f - > /dev/null
check "N. a pod named like a worker that the job does not own: NameConflict" \
	failed_because plant podjob NameConflict 'a Pod named "podjob-worker-1" already exists'
check "N. ... never taken for the job's own terminating pod" eval '! grep -q "podjob-worker-1 still terminating" "$log"'

# I. spec.workers is immutable; the checkpoint mount may not hide the
# operator's own.
namespace rules
mini fixed 2 'sleep 60' | k -n rules apply -f - > /dev/null
immutable() {
	local out
	out=$(k -n rules patch mwj fixed --type merge -p '{"spec":{"workers":3}}' 2>&1) && return 1
	echo "$out"
	grep -q 'spec.workers: Invalid value: "integer": workers is immutable' <<< "$out"
}
check "I. editing spec.workers is refused by the API, with the rule's message" immutable
mini hides 1 'exit 0' | sed 's|^  workers: 1|  workers: 1\n  checkpoint: {mountPath: /var/run/secrets/mwj, volume: {emptyDir: {}}}|' |
	k -n rules apply -f - > /dev/null
check "I. a checkpoint mountPath over the ring key fails the job, InvalidSpec" \
	failed_because rules hides InvalidSpec "'spec.checkpoint.mountPath' '/var/run/secrets/mwj' collides with the ring key"

# K. The ring key is 0400 (0440 with the pod's fsGroup), in the worker
# container only, and no ServiceAccount token is mounted. The other
# container is an init container: it has ended before the worker starts,
# so the pod is never held by it and its logs stay readable.
namespace keys
peek='      initContainers:
      - name: peek
        image: busybox:1.36
        command: [sh, -c, "if test -e /var/run/secrets/mwj/key; then echo sees-key; else echo no-key; fi"]'
mini keyed 1 'stat -Lc "%a %g" $MWJ_JOB_SECRET_FILE; test -e /var/run/secrets/kubernetes.io/serviceaccount/token || echo no-token; exit 0' \
	"$peek" | k -n keys apply -f - > /dev/null
key_mode() {
	ends keys keyed Succeeded 60 || return 1
	local out peeked
	out=$(k -n keys logs keyed-worker-0 -c worker)
	peeked=$(k -n keys logs keyed-worker-0 -c peek)
	echo "$out"
	echo "$peeked"
	grep -qx '440 65532' <<< "$out" && grep -qx no-token <<< "$out" && grep -qx no-key <<< "$peeked"
}
check "K. the key is 0440 to the fsGroup, no token, no key in the other container" key_mode

check "no operator log line repeats a refusal more than a few times a second" \
	eval '! awk "{ print substr(\$1, 1, 19), \$0 ~ /refused|forbidden|retrying/ }" "$log" | sort | uniq -c | awk "\$3 == 1 && \$1 > 5 { f = 1 } END { exit !f }"'
stop_operator
rc=$?
check "the operator stops on SIGTERM with exit status 0" test "$rc" = 0
finish
