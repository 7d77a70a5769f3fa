#!/usr/bin/env bash
# Starts the local test cluster (the API server and its node) and writes a
# kubeconfig that kubectl and mwj-operator use:
#
#   e2e/cluster/up.sh [STATE_DIR] [--image NAME=PATH ...] [--image-user NAME=UID[:GID] ...]
#
# Clients reach it as they reach a real API server: TLS with HTTP/2 or
# HTTP/1.1 through ALPN, served by nginx (scripts/install-deps.sh installs
# it) on the port the kubeconfig names. nginx proxies, unbuffered, to
# apiserver.py, which serves plain HTTP on a private loopback port; the
# settings and why are in nginx.conf.in beside this script.
#
# STATE_DIR (default: /tmp/mwj-cluster) receives ca.crt, the server's key
# and certificate, the token, the server's log and pid, the kubeconfig,
# nginx's (nginx.conf, nginx.pid, nginx-error.log, nginx-access.log, and
# nginx/ for its temporary files), and node/: each pod's folder (logs,
# hosts) and the volumes. The image of our worker (repository name
# mwj-worker) runs $MWJ_WORKER_BIN, by default the built
# build/bin/mwj-worker; it and mwj-operator run as the user 65532:65532
# of their Dockerfile;
# --image maps more images to entrypoints, --image-user gives an image's
# user (an image without one runs as root, as one without USER does).
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
	--image-user)
		[ $# -ge 2 ] || { echo "up: --image-user needs NAME=UID[:GID]" >&2; exit 1; }
		images+=(--image-user "$2")
		shift 2
		;;
	-*)
		echo "usage: $0 [STATE_DIR] [--image NAME=PATH ...] [--image-user NAME=UID[:GID] ...]" >&2
		exit 1
		;;
	*)
		dir=$1
		shift
		;;
	esac
done
# Without the front, clients would take a path (HTTP/1.1 only) that no
# real cluster offers them, so there is no falling back to that.
nginx=$(PATH=$PATH:/usr/sbin:/usr/local/sbin command -v nginx || true)
if [ -z "$nginx" ]; then
	echo "up: nginx not found: it is the API server's TLS and HTTP/2 front; install it with scripts/install-deps.sh" >&2
	exit 1
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ -f "$dir/apiserver.pid" ] && kill -0 "$(cat "$dir/apiserver.pid")" 2>/dev/null; then
	echo "up: already running (pid $(cat "$dir/apiserver.pid")); kubeconfig: $dir/kubeconfig"
	exit 0
fi
worker=${MWJ_WORKER_BIN:-$root/build/bin/mwj-worker}
[ -x "$worker" ] || echo "up: warning: no worker binary at $worker (run make); pods of the mwj-worker image will not start" >&2
# Both our images run as 65532:65532, the USER of their Dockerfile,
# whichever entrypoint --image gives the operator's.
images=(--image "mwj-worker=$worker" --image-user mwj-worker=65532:65532
	--image-user mwj-operator=65532:65532 "${images[@]}")

# Pods' processes preload podnet.so: listening on all interfaces listens on
# the pod's own loopback address. Each container starts in podsandbox.
cc -O2 -fPIC -shared "$here/podnet.c" -o "$dir/podnet.so" -ldl
cc -O2 "$here/podsandbox.c" -o "$dir/podsandbox"
# Containers run as their own users, and the loader of each must read
# podnet.so: the folder can be passed through (not listed), the library
# read; the keys, token and kubeconfig here stay root's (0600), and the
# node's folder (pods, volumes) root's alone (0700).
chmod 711 "$dir"
chmod 755 "$dir/podnet.so"

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

# Two free ports at once (so not the same one twice): the front's, which
# clients and pods are given, and the Python server's behind it.
read -r port backend < <(/usr/bin/python3 -c 'import socket
a, b = socket.socket(), socket.socket()
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])')
# MWJ_CLUSTER_BOOKMARK_SECONDS: about how often a watch gets a bookmark
# after a change (a real server's is about a minute; tests shorten it).
# MWJ_CLUSTER_WATCH_HISTORY: changes kept per resource for watches.
# MWJ_CLUSTER_SA_DELAY_SECONDS: how long a new namespace waits for its
# ServiceAccount "default" (pods created before are refused, as on a real
# cluster whose controller-manager has not made it yet); 0: at once.
# MWJ_CLUSTER_ADMISSION_PLUGINS: admission plugins to turn on besides the
# default ones (kube-apiserver's --enable-admission-plugins), e.g.
# OwnerReferencesPermissionEnforcement.
nohup /usr/bin/python3 "$here/apiserver.py" --port "$backend" --plain-http --public-port "$port" \
	--token "$token" --node-dir "$dir/node" --ca "$dir/ca.crt" \
	--bookmark-seconds "${MWJ_CLUSTER_BOOKMARK_SECONDS:-60}" \
	--watch-history "${MWJ_CLUSTER_WATCH_HISTORY:-1000}" \
	--service-account-delay-seconds "${MWJ_CLUSTER_SA_DELAY_SECONDS:-2}" \
	--enable-admission-plugins "${MWJ_CLUSTER_ADMISSION_PLUGINS:-}" \
	--podnet "$dir/podnet.so" --sandbox "$dir/podsandbox" "${images[@]}" \
	> "$dir/apiserver.log" 2>&1 &
echo $! > "$dir/apiserver.pid"

conf=$(< "$here/nginx.conf.in")
conf=${conf//@DIR@/"$dir"}
conf=${conf//@PORT@/"$port"}
conf=${conf//@BACKEND@/"$backend"}
printf '%s\n' "$conf" > "$dir/nginx.conf"
mkdir -p "$dir/nginx"
# It puts itself in the background once it listens; a bad config or a
# taken port fails here, with nginx's message on stderr.
"$nginx" -p "$dir/nginx/" -c "$dir/nginx.conf" -e "$dir/nginx-error.log" || {
	echo "up: nginx did not start; see $dir/nginx-error.log" >&2
	exit 1
}

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
echo "up: the API server did not come up; see $dir/apiserver.log and $dir/nginx-error.log" >&2
exit 1
