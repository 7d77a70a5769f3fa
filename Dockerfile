# mwj images, one Dockerfile, a target each:
#
#   operator     mwj-operator and the shared libraries it links, nothing else
#   worker       mwj-worker, OpenBLAS and Fashion-MNIST (a job trains with no
#                download)
#   worker-cuda  the worker on a CUDA base image; built only where one can be
#                had, and never needed by the two above
#
# `make images` builds the CPU ones (podman or docker; DEVELOPERS.md), and
# `make images-check` runs them the way a cluster does. By hand:
#
#   podman build --target worker -t mwj-worker:0.1.0 .
#
# Always name a --target: the CUDA stages come last so that no builder, old
# or new, touches the CUDA image while building a CPU target, and so a
# build without --target is a CUDA build.
#
# Both images run as the numeric non-root user 65532 on a read-only root
# filesystem: mwj-worker writes only where its flags say (--model-dir,
# --backup-dir: a volume, or /tmp as an emptyDir), mwj-operator nowhere.
# Flags go after the image name (Kubernetes: args), the ENTRYPOINT is the
# binary.

# The Debian base of every CPU stage. Our build machines have no registry:
# scripts/setup-podman.sh makes this image locally with debootstrap.
ARG BASE_IMAGE=debian:bookworm-slim
# worker-cuda only: an image with the CUDA toolkit, cuBLAS and NCCL to build
# in (nvidia/cuda's devel images have all three), and one with their
# runtime libraries to run in (its runtime images have cuBLAS and NCCL).
# CUDA 12 or 13 on Ubuntu 22.04 or 24.04; 13.0 is what mwj is tested with.
ARG CUDA_BASE_IMAGE=nvidia/cuda:13.0.1-devel-ubuntu24.04
ARG CUDA_RUNTIME_IMAGE=nvidia/cuda:13.0.1-runtime-ubuntu24.04

# --- builder: both binaries, as `make` builds them ------------------------
FROM ${BASE_IMAGE} AS builder
ARG DEBIAN_FRONTEND=noninteractive
# The Makefile's pkg-config packages (PKGS, OPERATOR_PKGS); a C compiler and
# make rather than build-essential, which would add g++ and dpkg-dev.
RUN apt-get update \
	&& apt-get install -y --no-install-recommends \
		gcc libc6-dev make pkg-config \
		libopenblas-dev libcjson-dev zlib1g-dev libminizip-dev libssl-dev \
		libcurl4-openssl-dev libyaml-dev libmicrohttpd-dev \
	&& rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the two binaries are compiled from, so that a change to tests,
# docs or the chart does not rebuild them.
COPY Makefile ./
COPY common/ common/
COPY worker/src/ worker/src/
COPY operator/src/ operator/src/
# The built-in models, compiled in by scripts/embed-models.sh.
COPY examples/models/ examples/models/
COPY scripts/embed-models.sh scripts/
# Stripped: the images carry no debugger, and the -g sections are most of
# each binary (mwj-worker 737 kB with them, 208 kB without). Rebuild from
# the same commit for symbols.
RUN make -j"$(nproc)" build/bin/mwj-worker build/bin/mwj-operator \
	&& install -D -m 0755 -s build/bin/mwj-worker /out/mwj-worker \
	&& install -D -m 0755 -s build/bin/mwj-operator /out/mwj-operator

# --- runtime: what the operator and worker images share --------------------
FROM ${BASE_IMAGE} AS runtime
# A named user for `ps` and `ls -l`; the images still run as the number
# (USER below), so that Kubernetes' runAsNonRoot can check it.
# (UID_MAX: 65532 is above login.defs' range for people, on purpose.)
RUN groupadd --gid 65532 mwj \
	&& useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
		--shell /usr/sbin/nologin --key UID_MAX=65534 mwj
ARG BASE_IMAGE
LABEL org.opencontainers.image.vendor="mwj" \
	org.opencontainers.image.base.name="${BASE_IMAGE}"

# --- operator --------------------------------------------------------------
FROM runtime AS operator
ARG DEBIAN_FRONTEND=noninteractive
# The libraries `readelf -d mwj-operator` lists as NEEDED, by package:
# libcurl (HTTPS, HTTP/2 to the API server), libyaml (kubeconfig),
# libmicrohttpd (/metrics, /healthz, /readyz), cJSON, OpenSSL's libcrypto.
# No ca-certificates: the API server's CA comes from the service account or
# the kubeconfig, never from the system store.
RUN apt-get update \
	&& apt-get install -y --no-install-recommends \
		libcurl4 libyaml-0-2 libmicrohttpd12 libcjson1 libssl3 \
	&& rm -rf /var/lib/apt/lists/* /var/log/apt/* /var/log/dpkg.log
COPY --from=builder /out/mwj-operator /usr/local/bin/mwj-operator
USER 65532:65532
# --metrics-addr and --health-addr defaults.
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/mwj-operator"]
# Last, so that a new commit (revision, created) rebuilds no layer above.
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=
LABEL org.opencontainers.image.title="mwj-operator" \
	org.opencontainers.image.description="Kubernetes operator for MultiWorkerJob (training.mwj.io/v1): one pod per worker, preempted workers recreated" \
	org.opencontainers.image.version="${VERSION}" \
	org.opencontainers.image.revision="${REVISION}" \
	org.opencontainers.image.created="${CREATED}"

# --- worker (CPU) ----------------------------------------------------------
FROM runtime AS worker
ARG DEBIAN_FRONTEND=noninteractive
# NEEDED by mwj-worker: OpenBLAS (pthread build, as the builder's
# libopenblas-dev picks; it brings libgfortran5), cJSON, zlib (gzip IDX
# files), minizip (NumPy .npz and Keras .keras files), libcrypto,
# libmicrohttpd (--metrics-addr: /metrics), libcurl (the chief's training
# reports to the operator, over HTTPS). And the data: Debian's
# Fashion-MNIST, the four IDX files.
# (The package's BLAS and LAPACK, 7.7 MB the worker never loads, stay: its
# postinst registers them as alternatives and fails without them.)
RUN apt-get update \
	&& apt-get install -y --no-install-recommends \
		libopenblas0-pthread libcjson1 zlib1g libminizip1 libssl3 libmicrohttpd12 \
		libcurl4 dataset-fashion-mnist \
	&& rm -rf /var/lib/apt/lists/* /var/log/apt/* /var/log/dpkg.log
COPY --from=builder /out/mwj-worker /usr/local/bin/mwj-worker
# Already the built-in default; said here so that `inspect` shows where the
# data is, and so that a job's env can point elsewhere (a volume of MNIST).
ENV MWJ_DATA_DIR=/usr/share/datasets/fashion-mnist
USER 65532:65532
# The ring's default port (the job's spec.port).
EXPOSE 2222
ENTRYPOINT ["/usr/local/bin/mwj-worker"]
CMD ["--help"]
# Last, so that a new commit (revision, created) rebuilds no layer above.
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=
LABEL org.opencontainers.image.title="mwj-worker" \
	org.opencontainers.image.description="mwj trainer (CPU, OpenBLAS) with Fashion-MNIST included: multi-worker data-parallel training with a ring all-reduce" \
	org.opencontainers.image.version="${VERSION}" \
	org.opencontainers.image.revision="${REVISION}" \
	org.opencontainers.image.created="${CREATED}"

# --- worker-cuda -----------------------------------------------------------
# Built only on request, where the CUDA images exist (`make images-cuda`):
# `make CUDA=1`, the CUDA backend and the NCCL communicator beside the CPU
# one, so one image trains on GPUs or CPUs (--device auto). A pod gets its
# GPUs by asking for them: resources.limits["nvidia.com/gpu"] (the NVIDIA
# device plugin then mounts the driver and sets CUDA_VISIBLE_DEVICES).
FROM ${CUDA_BASE_IMAGE} AS cuda-builder
ARG DEBIAN_FRONTEND=noninteractive
ARG CUDA_ARCHS="80 86 89 90"
RUN apt-get update \
	&& apt-get install -y --no-install-recommends \
		gcc libc6-dev make pkg-config \
		libopenblas-dev libcjson-dev zlib1g-dev libminizip-dev libssl-dev libmicrohttpd-dev \
		libcurl4-openssl-dev \
	&& rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY common/ common/
COPY worker/src/ worker/src/
COPY examples/models/ examples/models/
COPY scripts/embed-models.sh scripts/
RUN make -j"$(nproc)" CUDA=1 CUDA_ARCHS="${CUDA_ARCHS}" build-cuda/bin/mwj-worker \
	&& install -D -m 0755 -s build-cuda/bin/mwj-worker /out/mwj-worker

FROM ${CUDA_RUNTIME_IMAGE} AS worker-cuda
ARG DEBIAN_FRONTEND=noninteractive
# Ubuntu 24.04 calls libssl3 libssl3t64, libminizip1 libminizip1t64,
# libmicrohttpd12 libmicrohttpd12t64 and libcurl4 libcurl4t64.
RUN apt-get update \
	&& ssl=libssl3t64 && { apt-cache show libssl3t64 >/dev/null 2>&1 || ssl=libssl3; } \
	&& mz=libminizip1t64 && { apt-cache show libminizip1t64 >/dev/null 2>&1 || mz=libminizip1; } \
	&& mhd=libmicrohttpd12t64 && { apt-cache show libmicrohttpd12t64 >/dev/null 2>&1 || mhd=libmicrohttpd12; } \
	&& curl=libcurl4t64 && { apt-cache show libcurl4t64 >/dev/null 2>&1 || curl=libcurl4; } \
	&& apt-get install -y --no-install-recommends \
		libopenblas0-pthread libcjson1 zlib1g "$mz" "$ssl" "$mhd" "$curl" \
	&& rm -rf /var/lib/apt/lists/* /var/log/apt/* /var/log/dpkg.log \
	&& groupadd --gid 65532 mwj \
	&& useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
		--shell /usr/sbin/nologin --key UID_MAX=65534 mwj
# The data from the CPU image, so that both train on the same files (Ubuntu
# need not package them).
COPY --from=worker /usr/share/datasets/fashion-mnist /usr/share/datasets/fashion-mnist
COPY --from=cuda-builder /out/mwj-worker /usr/local/bin/mwj-worker
ARG CUDA_RUNTIME_IMAGE
LABEL org.opencontainers.image.vendor="mwj" \
	org.opencontainers.image.base.name="${CUDA_RUNTIME_IMAGE}"
ENV MWJ_DATA_DIR=/usr/share/datasets/fashion-mnist
USER 65532:65532
EXPOSE 2222
ENTRYPOINT ["/usr/local/bin/mwj-worker"]
CMD ["--help"]
# Last, so that a new commit (revision, created) rebuilds no layer above.
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=
LABEL org.opencontainers.image.title="mwj-worker-cuda" \
	org.opencontainers.image.description="mwj trainer on NVIDIA GPUs (CUDA, cuBLAS, NCCL) or CPUs, with Fashion-MNIST included" \
	org.opencontainers.image.version="${VERSION}" \
	org.opencontainers.image.revision="${REVISION}" \
	org.opencontainers.image.created="${CREATED}"
