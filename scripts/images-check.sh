#!/usr/bin/env bash
# Runs the built images the way a cluster runs them, and checks what the
# Dockerfile promises: each binary prints the version the images are tagged
# with, as the images' own non-root user, on a read-only root filesystem,
# with every capability dropped and no network; every library the binaries
# need is in the image; the OCI labels are set; and mwj-worker trains a few
# steps on the Fashion-MNIST inside its image, saves the model to a volume,
# and a second container evaluates it from that volume mounted read-only.
# Prints the image sizes, and ends with `N passed, N failed`.
#
#   scripts/images-check.sh VERSION [OPERATOR_IMAGE WORKER_IMAGE]
#
# CONTAINER_ENGINE picks podman or docker (default: docker where its engine
# answers, podman otherwise).
# `make images-check` builds the images first and calls this.
set -uo pipefail

if [ $# -ne 1 ] && [ $# -ne 3 ]; then
	echo "usage: $0 VERSION [OPERATOR_IMAGE WORKER_IMAGE]" >&2
	exit 2
fi
version=$1
operator=${2:-mwj-operator:$version}
worker=${3:-mwj-worker:$version}
engine=${CONTAINER_ENGINE:-$(docker info > /dev/null 2>&1 && echo docker || echo podman)}
uid=65532

passed=0
failed=0
pass() {
	echo "ok: $*"
	passed=$((passed + 1))
}
fail() {
	echo "FAIL: $*"
	failed=$((failed + 1))
}

# A container as Kubernetes runs ours with the chart's securityContext:
# read-only root, writable /tmp only where mounted (an emptyDir), no
# capabilities, no privilege escalation. No network: nothing is downloaded.
# podman's --read-only would add its own /tmp; docker's does not: both get
# one explicit tmpfs.
run=("$engine" run --rm --read-only --tmpfs /tmp --network none --cap-drop ALL
	--security-opt no-new-privileges)
if [ "$(basename "$engine")" = podman ]; then
	run+=(--read-only-tmpfs=false)
fi

# check NAME COMMAND... : passes when COMMAND exits 0, and prints its output
# either way (it is what a reader of the log needs).
check() {
	local name=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed 's/^/    /' | tail -n 20
	if [ "$rc" = 0 ]; then
		pass "$name"
	else
		fail "$name (exit $rc)"
	fi
	return "$rc"
}

# expect NAME WANT COMMAND... : COMMAND's output (stdout and stderr) must
# contain the line WANT.
expect() {
	local name=$1 want=$2 out
	shift 2
	out=$("$@" 2>&1)
	if printf '%s\n' "$out" | grep -qxF -- "$want"; then
		pass "$name: '$want'"
	else
		fail "$name: wanted the line '$want', got:"
		printf '%s\n' "$out" | sed 's/^/    /' | tail -n 20
	fi
}

for image in "$operator" "$worker"; do
	if ! "$engine" image inspect "$image" > /dev/null 2>&1; then
		echo "images-check: no image '$image'; run 'make images' first" >&2
		exit 1
	fi
done

# The image's own user: no --user flag here.
expect "operator --version" "mwj-operator $version" "${run[@]}" "$operator" --version
expect "worker --version" "mwj-worker $version" "${run[@]}" "$worker" --version
for image in "$operator" "$worker"; do
	# shellcheck disable=SC2016 # expanded by the container's shell
	expect "$image runs as $uid" "$uid:$uid" \
		"${run[@]}" --entrypoint /bin/sh "$image" -c 'echo "$(id -u):$(id -g)"'
	expect "$image: Config.User" "$uid:$uid" "$engine" image inspect --format '{{.Config.User}}' "$image"
	for label in title version revision created; do
		value=$("$engine" image inspect \
			--format "{{index .Config.Labels \"org.opencontainers.image.$label\"}}" "$image")
		if [ -n "$value" ] && [ "$value" != "<no value>" ] &&
			{ [ "$label" != version ] || [ "$value" = "$version" ]; }; then
			pass "$image: org.opencontainers.image.$label=$value"
		else
			fail "$image: org.opencontainers.image.$label is '$value'"
		fi
	done
done

# Writes to the root filesystem fail with EROFS, not only EACCES (which the
# non-root user would get on a writable root too); /tmp takes them.
for image in "$operator" "$worker"; do
	out=$("${run[@]}" --entrypoint /bin/sh "$image" -c 'touch /usr/local/bin/x /x 2>&1; touch /tmp/x' 2>&1)
	rc=$?
	if [ "$rc" = 0 ] && [ "$(printf '%s\n' "$out" | grep -c 'Read-only file system')" = 2 ]; then
		pass "$image: / read-only, /tmp writable"
	else
		fail "$image: read-only root and writable /tmp: exit $rc, output:"
		printf '%s\n' "$out" | sed 's/^/    /'
	fi
done

# Every library each binary needs resolves inside its image.
for pair in "$operator:/usr/local/bin/mwj-operator" "$worker:/usr/local/bin/mwj-worker"; do
	image=${pair%%:/*}
	bin=/${pair#*:/}
	if out=$("${run[@]}" --entrypoint /usr/bin/ldd "$image" "$bin" 2>&1) &&
		! printf '%s\n' "$out" | grep -q 'not found'; then
		pass "$image: ldd $bin resolves $(printf '%s\n' "$out" | grep -c '=>') libraries"
	else
		fail "$image: ldd $bin:"
		printf '%s\n' "$out" | sed 's/^/    /'
	fi
done

# The operator with no cluster to talk to fails at start-up with a clear
# message (not a crash for want of a writable file or a library).
out=$("${run[@]}" "$operator" 2>&1)
rc=$?
if [ "$rc" = 1 ] && [ -n "$out" ]; then
	pass "operator without a cluster exits 1: $(printf '%s\n' "$out" | tail -n 1)"
else
	fail "operator without a cluster: exit $rc, output:"
	printf '%s\n' "$out" | sed 's/^/    /' | tail -n 20
fi

# A short real training on the bundled data, then the saved model evaluated
# by a second container: the volume is the only writable place besides /tmp.
vol=$(mktemp -d /tmp/mwj-images-check.XXXXXX)
trap 'rm -rf "$vol"' EXIT
chmod 0777 "$vol"
check "worker trains 2 epochs of 20 steps on the bundled Fashion-MNIST" \
	"${run[@]}" -v "$vol:/model" "$worker" train --epochs 2 --steps-per-epoch 20 \
	--optimizer adam --validation-steps 5 --model-dir /model
if [ -s "$vol/model.mwj" ]; then
	pass "model.mwj written to the volume ($(stat -c %s "$vol/model.mwj") bytes, owner $(stat -c %u "$vol/model.mwj"))"
else
	fail "no model.mwj in the volume"
fi
check "worker evaluates the saved model from a read-only volume" \
	"${run[@]}" -v "$vol:/model:ro" "$worker" evaluate --model-dir /model

echo "image sizes:"
for image in "$operator" "$worker"; do
	"$engine" image inspect --format '{{.Size}}' "$image" |
		awk -v image="$image" '{ printf "    %-28s %6.1f MB (%d bytes)\n", image, $1 / 1e6, $1 }'
done

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
