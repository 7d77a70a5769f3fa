#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh needs onto a GPU machine that has the
# NVIDIA driver, CUDA's libraries and PyTorch but none of our Debian
# packages: the CUDA build's binaries, the shared libraries they need that
# such a machine lacks (OpenBLAS and its Fortran runtime, cJSON, cmocka, minizip,
# libcrypto), compressed, and the Fashion-MNIST files.
#
#   scripts/gpu-pack.sh DIR     # then, there: tar xJf DIR/pack.tar.xz -C DIR
#                               # scripts/gpu-check.sh DIR/bin DIR/data OUT DIR/lib
set -euo pipefail
dir=$1
cd "$(dirname "$0")/.."
make CUDA=1 -j"$(nproc)" build-cuda/bin/mwj-worker build-cuda/bin/worker_cuda_test_gpu \
	build-cuda/bin/bench_gpu
rm -rf "$dir"
mkdir -p "$dir/stage/bin" "$dir/stage/lib" "$dir/data"
cp build-cuda/bin/mwj-worker build-cuda/bin/worker_cuda_test_gpu build-cuda/bin/bench_gpu \
	"$dir/stage/bin/"
for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libcjson.so.1 libcmocka.so.0 libminizip.so.1 \
	libcrypto.so.3; do
	cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')" "$dir/stage/lib/"
done
tar -C "$dir/stage" -cJf "$dir/pack.tar.xz" bin lib
rm -rf "$dir/stage"
cp /usr/share/datasets/fashion-mnist/*.gz "$dir/data/"
du -sh "$dir"
