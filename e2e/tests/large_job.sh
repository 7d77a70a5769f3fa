#!/usr/bin/env bash
# A job of 4,096 workers, the schema's maximum, on the local test cluster:
# its TF_CONFIG (about 160 KB) is over Linux's 128 KiB limit on one
# environment variable, so it reaches every worker as a file from the
# job's ConfigMap (MWJ_TF_CONFIG_FILE), and every pod starts: none fails
# with "Argument list too long". The workers need not train: each checks
# that its cluster file names the last worker, and exits 0. Prints how
# long it took; ends with "N passed, N failed".
set -u
. "$(dirname "$0")/lib.sh"
cluster_up
. "$(dirname "$0")/operator_lib.sh"

workers=${MWJ_LARGE_WORKERS:-4096}
last="big-worker-$((workers - 1)).big.large.svc:2222"
check "the CRD is applied" prepare
start_operator
check "mwj-operator starts and fills its caches" test -n "$op_pid"
k create namespace large > /dev/null
has_default_sa() { k -n large get serviceaccount default > /dev/null 2>&1; }
until_true 30 "the namespace's ServiceAccount" has_default_sa
start=$SECONDS
job_yaml big "$workers" "  cleanPodPolicy: None" "      terminationGracePeriodSeconds: 1" \
	"      - name: worker
        image: busybox:1.36
        command: [sh, -c, 'test -z \"\$TF_CONFIG\" && grep -qF \"\\\"$last\\\"\" \"\$MWJ_TF_CONFIG_FILE\"']" |
	k -n large apply -f - > /dev/null

cm_made() { [ -n "$(k -n large get mwj big -o jsonpath='{.status.tfConfigMap}' 2> /dev/null)" ]; }
check "the job's cluster goes into a ConfigMap, named in its status" until_true 120 "the ConfigMap" cm_made
cm_owned() {
	local cm
	cm=$(k -n large get mwj big -o jsonpath='{.status.tfConfigMap}')
	[ "$(k -n large get configmap "$cm" -o jsonpath='{.metadata.ownerReferences[0].kind}')" = MultiWorkerJob ] &&
		k -n large get configmap "$cm" -o jsonpath='{.data.tf_config\.json}' | grep -qF "\"$last\""
}
check "... owned by the job, holding every worker" cm_owned
count_pods() { # count_pods [PHASE]: the job's pods (in PHASE)
	k -n large get pods -l training.mwj.io/job-name=big \
		-o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' 2> /dev/null |
		awk -v p="${1:-}" 'NF && (p == "" || $1 == p)' | wc -l
}
# A list of 4,096 pods is no small request: these waits poll every 5 s.
slowly() { POLL_EVERY=5 until_true "$@"; } # slowly SECONDS WHAT CMD...: until_true, every 5 s
all_created() { [ "$(count_pods)" = "$workers" ]; }
check "all $workers worker pods are created" slowly 900 "$workers pods" all_created
echo "     (all $workers pods created $((SECONDS - start)) s after the job)"
env_of_pod() {
	k -n large get pod "big-worker-$((workers - 1))" \
		-o jsonpath='{range .spec.containers[0].env[*]}{.name}{"\n"}{end}'
}
file_not_env() { env_of_pod | grep -qx MWJ_TF_CONFIG_FILE && ! env_of_pod | grep -qx TF_CONFIG; }
check "the pods get MWJ_TF_CONFIG_FILE, and no TF_CONFIG" file_not_env
none_failed() { [ "$(count_pods Failed)" = 0 ]; }
all_done() { none_failed && [ "$(count_pods Succeeded)" = "$workers" ]; }
check "every worker started, found the whole cluster in its file, and exited 0" \
	slowly 900 "every pod to complete" all_done
echo "     (every pod completed $((SECONDS - start)) s after the job)"
check "no pod failed to start (Argument list too long, or any other reason)" none_failed
succeeded() { [ "$(k -n large get mwj big -o jsonpath='{.status.phase}')" = Succeeded ]; }
check "the job succeeded" succeeded
stop_operator
finish
