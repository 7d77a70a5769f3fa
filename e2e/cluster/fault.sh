#!/usr/bin/env bash
# Fault injection on the local test cluster started by up.sh:
#
#   e2e/cluster/fault.sh [-d STATE_DIR] preempt [NS/]POD [--evict] [--grace S]
#       as the scheduler preempts (the pod is deleted) or, with --evict, as
#       the kubelet evicts (the pod stays, Failed, reason Evicted); both set
#       the DisruptionTarget condition, then SIGTERM, the grace period
#       (default: the pod's terminationGracePeriodSeconds), SIGKILL
#   e2e/cluster/fault.sh [-d STATE_DIR] kill [NS/]POD [SIGNAL] [--container C]
#       send SIGNAL (default KILL) to a container's processes
#   e2e/cluster/fault.sh [-d STATE_DIR] errors CODE SECONDS
#       answer every API request with CODE (500, 503 or 429) for SECONDS
#   e2e/cluster/fault.sh [-d STATE_DIR] errors
#       how many requests were answered so since
#   e2e/cluster/fault.sh [-d STATE_DIR] drop-watches
#       end every open watch
#   e2e/cluster/fault.sh [-d STATE_DIR] compact
#       forget the watch history: watches from older versions get 410
#
# STATE_DIR defaults to /tmp/mwj-cluster, as for up.sh.
set -euo pipefail
usage() {
	sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 1
}
dir=/tmp/mwj-cluster
if [ "${1:-}" = -d ]; then
	[ $# -ge 2 ] || usage
	dir=$2
	shift 2
fi
[ $# -ge 1 ] || usage
[ -f "$dir/kubeconfig" ] || {
	echo "fault: no cluster in $dir (start one with e2e/cluster/up.sh)" >&2
	exit 1
}
server=$(sed -n 's/^ *server: //p' "$dir/kubeconfig")
pod_query() { # [NS/]NAME -> namespace=NS&name=NAME
	local ns=default name=$1
	if [[ $1 == */* ]]; then
		ns=${1%%/*}
		name=${1#*/}
	fi
	printf 'namespace=%s&name=%s' "$ns" "$name"
}
verb=$1
shift
case "$verb" in
preempt)
	[ $# -ge 1 ] || usage
	q="$(pod_query "$1")&reason=Preempted"
	shift
	while [ $# -gt 0 ]; do
		case "$1" in
		--evict) q=${q/reason=Preempted/reason=Evicted} ;;
		--grace)
			[ $# -ge 2 ] || usage
			q="$q&grace=$2"
			shift
			;;
		*) usage ;;
		esac
		shift
	done
	path="/mwj-test/preempt?$q"
	;;
kill)
	[ $# -ge 1 ] || usage
	q="$(pod_query "$1")"
	shift
	if [ $# -gt 0 ] && [ "$1" != --container ]; then
		q="$q&signal=$1"
		shift
	fi
	if [ $# -gt 0 ]; then
		[ "$1" = --container ] && [ $# -eq 2 ] || usage
		q="$q&container=$2"
	fi
	path="/mwj-test/kill?$q"
	;;
errors)
	if [ $# -eq 0 ]; then
		method=GET
		path=/mwj-test/errors
	else
		[ $# -eq 2 ] || usage
		path="/mwj-test/errors?code=$1&seconds=$2"
	fi
	;;
drop-watches | compact)
	[ $# -eq 0 ] || usage
	path="/mwj-test/$verb"
	;;
*) usage ;;
esac
out=$(curl -sS -X "${method:-POST}" --cacert "$dir/ca.crt" -H "Authorization: Bearer $(cat "$dir/token")" \
	-w '\n%{http_code}' "$server$path")
code=${out##*$'\n'}
body=${out%$'\n'*}
if [ "$code" != 200 ]; then
	echo "fault: $verb: $(printf '%s' "$body" |
		/usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin).get("message"))' 2>&1)" >&2
	exit 1
fi
echo "fault: $verb: $body"
