#!/usr/bin/env bash
# Starts the local test cluster (the API server and its node) and writes a
# kubeconfig that kubectl and mwj-operator use:
#
#   e2e/cluster/up.sh [STATE_DIR] [--image NAME=PATH ...]
#
# STATE_DIR (default: /tmp/mwj-cluster) receives ca.crt, the server's key
# and certificate, the token, the server's log and pid, the kubeconfig, and
# node/: each pod's folder (logs, hosts) and the volumes. The image of our
# worker (repository name mwj-worker) runs $MWJ_WORKER_BIN, by default the
# built build/bin/mwj-worker; --image maps more images to entrypoints.
# Stop it with e2e/cluster/down.sh [STATE_DIR].
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=/tmp/mwj-cluster
images=()
while [ $# -gt 0 ]; do
	case "$1" in
	--image)
		[ $# -ge 2 ] || { echo "up: --image needs NAME=PATH" >&2; exit 1; }
		images+=(--image "$2")
		shift 2
		;;
	-*)
		echo "usage: $0 [STATE_DIR] [--image NAME=PATH ...]" >&2
		exit 1
		;;
	*)
		dir=$1
		shift
		;;
	esac
done
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ -f "$dir/apiserver.pid" ] && kill -0 "$(cat "$dir/apiserver.pid")" 2>/dev/null; then
	echo "up: already running (pid $(cat "$dir/apiserver.pid")); kubeconfig: $dir/kubeconfig"
	exit 0
fi
worker=${MWJ_WORKER_BIN:-$root/build/bin/mwj-worker}
[ -x "$worker" ] || echo "up: warning: no worker binary at $worker (run make); pods of the mwj-worker image will not start" >&2
images=(--image "mwj-worker=$worker" "${images[@]}")

# Pods' processes preload podnet.so: listening on all interfaces listens on
# the pod's own loopback address.
cc -O2 -fPIC -shared "$here/podnet.c" -o "$dir/podnet.so" -ldl

# A CA of its own, and a server certificate for 127.0.0.1 signed by it.
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=mwj-local-ca" \
	-keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=mwj-local-apiserver" \
	-keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$dir/san.ext"
openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
	-CAcreateserial -days 30 -extfile "$dir/san.ext" -out "$dir/server.crt" 2>/dev/null
token=$(openssl rand -hex 24)
echo "$token" > "$dir/token"
chmod 600 "$dir/token" "$dir/ca.key" "$dir/server.key"

port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
nohup /usr/bin/python3 "$here/apiserver.py" --port "$port" --cert "$dir/server.crt" \
	--key "$dir/server.key" --token "$token" --node-dir "$dir/node" --ca "$dir/ca.crt" \
	--podnet "$dir/podnet.so" "${images[@]}" > "$dir/apiserver.log" 2>&1 &
echo $! > "$dir/apiserver.pid"

cat > "$dir/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: mwj-local
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority: $dir/ca.crt
users:
- name: mwj-local
  user:
    token: $token
contexts:
- name: mwj-local
  context:
    cluster: mwj-local
    user: mwj-local
    namespace: default
current-context: mwj-local
KUBECONFIG
chmod 600 "$dir/kubeconfig"

for _ in $(seq 100); do
	if curl -sf --cacert "$dir/ca.crt" -H "Authorization: Bearer $token" \
		"https://127.0.0.1:$port/version" > /dev/null 2>&1; then
		echo "up: API server on https://127.0.0.1:$port; export KUBECONFIG=$dir/kubeconfig"
		exit 0
	fi
	sleep 0.1
done
echo "up: the API server did not come up; see $dir/apiserver.log" >&2
exit 1
