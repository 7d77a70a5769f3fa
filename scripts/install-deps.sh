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
	libssl-dev       # SHA-256 of weights (libcrypto)
	libcmocka-dev    # C unit tests
	dataset-fashion-mnist # real IDX data for the demo, tests and benchmarks
	clang-format clang-tidy # make lint
	python3 python3-yaml    # e2e/: the local test cluster and its tests
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
if [ "${#missing[@]}" -eq 0 ]; then
	echo "install-deps: all ${#packages[@]} packages already installed"
	exit 0
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
