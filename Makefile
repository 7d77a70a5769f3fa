# mwj - one non-recursive Makefile for every binary, test and benchmark.
#
#   make            build build/bin/mwj-worker and build/bin/mwj-operator
#   make test       build and run every unit and CLI test
#   make test SAN=1 the same with ASan/UBSan, in build-san/
#   make CUDA=1     mwj-worker with the CUDA backend and NCCL, in build-cuda/
#                   (CUDA_HOME, default /usr/local/cuda; CUDA_ARCHS); make
#                   test also builds it and runs its GPU tests wherever
#                   nvcc is installed (they skip, saying so, without a GPU)
#   make bench      throughput figures as JSON lines
#   make soak       the operator under random faults for a few minutes, and
#                   its e2e run again under LeakSanitizer (SEED=N replays)
#   make demo       the whole system in a few minutes: a cluster, the operator,
#                   a 2-worker job, a preemption and its recovery
#   make images     the operator and worker images (Dockerfile), with docker
#                   or podman; images-check runs them as a cluster would
#   make fuzz       fuzz every parser of untrusted input with libFuzzer (clang)
#   make lint       clang-format check and clang-tidy
#   make chart-crds copy crds/ into the Helm chart (a test checks they match)
#   make clean

# Every rule is written out here; make's built-in ones would try to rebuild
# the dependency files (-MMD) from objects of the same stem.
MAKEFLAGS += --no-builtin-rules
.SUFFIXES:

SAN ?= 0
CUDA ?= 0
ifeq ($(SAN)$(CUDA),11)
$(error CUDA=1 builds without sanitizers: the CUDA runtime and ASan do not share an address space well)
endif
ifeq ($(SAN),1)
BUILD := build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else ifeq ($(CUDA),1)
BUILD := build-cuda
SANFLAGS :=
else
BUILD := build
SANFLAGS :=
endif
# The CUDA toolkit, with cuBLAS and NCCL: on our machines in /usr/local/cuda.
# CUDA_ARCHS: the GPUs the kernels are built for (compute capabilities);
# the last is also kept as PTX, so newer GPUs compile it when loaded.
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(CUDA_HOME)/bin/nvcc
CUDA_ARCHS ?= 80 86 89 90
NVCC_FOUND := $(wildcard $(NVCC))

CC ?= cc
# Both binaries serve /metrics through libmicrohttpd (common/http_listen.c)
# and talk HTTPS through libcurl: the operator to the API server, the
# chief to the operator (its training reports).
PKGS := openblas libcjson zlib libcrypto minizip libmicrohttpd libcurl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS := $(shell pkg-config --libs $(PKGS))
# The operator also reads kubeconfigs (libyaml).
OPERATOR_PKGS := yaml-0.1
OPERATOR_PKG_CFLAGS := $(shell pkg-config --cflags $(OPERATOR_PKGS) 2>/dev/null)
OPERATOR_PKG_LIBS := $(shell pkg-config --libs $(OPERATOR_PKGS) 2>/dev/null)

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wformat=2 -Wvla
CFLAGS ?= -O3 -g
ALL_CFLAGS = -std=c17 -D_GNU_SOURCE -ffp-contract=off -fno-math-errno $(WARN) $(CFLAGS) $(SANFLAGS) $(PKG_CFLAGS) \
	$(OPERATOR_PKG_CFLAGS) $(ALL_CFLAGS_CUDA) -Icommon $(WORKER_INC) $(OPERATOR_INC) -MMD -MP
LDFLAGS ?=
ALL_LDFLAGS := $(LDFLAGS) $(SANFLAGS)
LIBS = $(PKG_LIBS) $(CUDA_LIBS) -lm -lpthread

OBJ := $(BUILD)/obj
BIN := $(BUILD)/bin

# mwj-worker's sources sit in rooms that follow the data flow, each
# depending only on the ones before it: base/ (threads, SIMD, random
# numbers, memory, the BLAS, the metrics every room counts into), optim/, nn/ (layers, losses, the model and
# the Keras files that describe it), data/ (IDX and the sharded stream), comm/ (sockets, handshake,
# rendezvous, ring, communicators, the gradient reducer), state/ (backups,
# the model file, the state sync), backend/ (where a step runs; the CUDA
# build's own in cuda/) and app/ (the trainer, evaluate, progress, the
# command line, /metrics). Every room is on the include path, so a file includes
# "model.h" wherever it sits.
WORKER_ROOMS := base optim nn data comm state backend app
WORKER_INC := $(addprefix -Iworker/src/,$(WORKER_ROOMS)) -Iworker/src
COMMON_SRC := $(wildcard common/*.c)
WORKER_SRC := $(filter-out worker/src/app/main.c,$(wildcard $(WORKER_ROOMS:%=worker/src/%/*.c)))
# The models of examples/models/, compiled in for keras_model_builtin() from
# a C file that scripts/embed-models.sh writes (rule below).
KERAS_MODELS := examples/models/cnn.json examples/models/cnn-pool.json
KERAS_MODELS_C := $(OBJ)/gen/keras_builtins.c
WORKER_SRC += $(KERAS_MODELS_C)
COMMON_OBJ := $(COMMON_SRC:%.c=$(OBJ)/%.o)
ifeq ($(CUDA),1)
# The CUDA backend and the NCCL communicator replace what a CPU-only build
# says about GPUs (gpu_none.c).
WORKER_SRC := $(filter-out worker/src/backend/gpu_none.c,$(WORKER_SRC)) $(wildcard worker/src/cuda/*.c)
WORKER_CU := $(wildcard worker/src/cuda/*.cu)
ALL_CFLAGS_CUDA := -isystem $(CUDA_HOME)/include
NVCC_GENCODE := $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
	-gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
# -fmad=false: the CPU is built with -ffp-contract=off, and the kernels'
# element-wise arithmetic (cuda/elem.h) must round as the CPU's does.
NVCCFLAGS := -std=c++17 -O3 -g -lineinfo -fmad=false $(NVCC_GENCODE) -Xcompiler -Wall,-Wextra \
	-Icommon $(WORKER_INC) -Iworker/src/cuda
# cudart statically (no runtime to install beside the driver); cuBLAS and
# NCCL from the toolkit, found at run time through the rpath, or the image's
# or LD_LIBRARY_PATH's copies.
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lnccl -lcudart_static \
	-ldl -lrt -lstdc++
else
WORKER_CU :=
ALL_CFLAGS_CUDA :=
CUDA_LIBS :=
endif
WORKER_OBJ := $(WORKER_SRC:%.c=$(OBJ)/%.o) $(WORKER_CU:%.cu=$(OBJ)/%.o)
COMMON_LIB := $(OBJ)/libmwjcommon.a
WORKER_LIB := $(OBJ)/libmwjworker.a

COMMON_TESTS := $(patsubst common/tests/%.c,$(BIN)/common_%,$(wildcard common/tests/test_*.c))
WORKER_TESTS := $(patsubst worker/tests/%.c,$(BIN)/worker_%,$(wildcard worker/tests/test_*.c))
# mwj-operator's rooms, each depending only on the ones before it: kube/
# (a small client-go: the API client, kubeconfig, the watch stream,
# informers, the work queue and timers, leader election; it knows nothing
# of MultiWorkerJobs), controller/ (the job, its pods and status,
# reconcile, the actions that carry it out), serve/ (the HTTP endpoints
# and the metrics they show) and cmd/ (the command line and main). Every
# room is on the include path, as the worker's are.
OPERATOR_ROOMS := kube controller serve cmd
OPERATOR_INC := $(addprefix -Ioperator/src/,$(OPERATOR_ROOMS))
OPERATOR_SRC := $(filter-out operator/src/cmd/main.c,$(wildcard $(OPERATOR_ROOMS:%=operator/src/%/*.c)))
OPERATOR_OBJ := $(OPERATOR_SRC:%.c=$(OBJ)/%.o)
OPERATOR_LIB := $(OBJ)/libmwjoperator.a
OPERATOR_TESTS := $(patsubst operator/tests/%.c,$(BIN)/operator_%,$(wildcard operator/tests/test_*.c))
# Helpers the operator tests share: every .c in operator/tests that is not a test.
OPERATOR_TEST_UTIL := $(patsubst %.c,$(OBJ)/%.o,$(filter-out operator/tests/test_%.c,$(wildcard operator/tests/*.c)))
OPERATOR_LIBS := $(OPERATOR_PKG_LIBS) $(PKG_LIBS) -lm -lpthread
# Helpers the worker tests share: every .c in worker/tests that is not a test.
WORKER_TEST_UTIL := $(patsubst %.c,$(OBJ)/%.o,$(filter-out worker/tests/test_%.c,$(wildcard worker/tests/*.c)))
TESTS := $(COMMON_TESTS) $(WORKER_TESTS) $(OPERATOR_TESTS)
# The GPU tests (worker/tests/cuda), built in a CUDA build only.
CUDA_TESTS := $(patsubst worker/tests/cuda/%.c,$(BIN)/worker_cuda_%,$(wildcard worker/tests/cuda/test_*.c))
BENCHES := $(patsubst bench/%.c,$(BIN)/%,$(wildcard bench/bench_*.c))
# The GPU benchmark, in a CUDA build.
CUDA_BENCHES := $(patsubst bench/cuda/%.c,$(BIN)/%,$(wildcard bench/cuda/bench_*.c))
# The OpenMPI baseline, built only where mpicc is installed (install-deps does).
MPICC := $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
BENCHES += $(BIN)/mpi_allreduce
endif
WORKER_BIN := $(BIN)/mwj-worker
OPERATOR_BIN := $(if $(wildcard operator/src/cmd/main.c),$(BIN)/mwj-operator)
# Fuzz targets, one file each: worker/fuzz/fuzz_<name>.c and
# operator/fuzz/fuzz_<name>.c, each with a seed corpus in
# <folder>/corpus/<name> and, where it helps, a libFuzzer dictionary
# <folder>/fuzz_<name>.dict. `make test` replays every corpus through
# common/fuzz/replay.c with this build's compiler and sanitizers; `make fuzz`
# fuzzes each target with clang's libFuzzer for FUZZ_SECONDS.
FUZZ_SRC := $(wildcard worker/fuzz/fuzz_*.c operator/fuzz/fuzz_*.c)
FUZZ_WORKER := $(patsubst worker/fuzz/fuzz_%.c,%,$(filter worker/%,$(FUZZ_SRC)))
FUZZ_OPERATOR := $(patsubst operator/fuzz/fuzz_%.c,%,$(filter operator/%,$(FUZZ_SRC)))
FUZZ_NAMES := $(FUZZ_WORKER) $(FUZZ_OPERATOR)
FUZZ_REPLAYS := $(FUZZ_NAMES:%=$(BIN)/fuzz_%_replay)
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 10
# An input that takes longer than this is reported, and fails `make fuzz`.
FUZZ_TIMEOUT ?= 10
# Sources are compiled once for all targets with coverage (fuzzer-no-link);
# each target links libFuzzer's main.
FUZZ_OBJ := $(BUILD)/fuzz/obj
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := -std=c17 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN) $(PKG_CFLAGS) \
	$(OPERATOR_PKG_CFLAGS) -Icommon $(WORKER_INC) $(OPERATOR_INC) -MMD -MP

.PHONY: all test bench soak demo fuzz lint clean chart-crds images images-check images-cuda
all: $(WORKER_BIN) $(OPERATOR_BIN)

$(OBJ)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(OBJ)/%.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

$(KERAS_MODELS_C): scripts/embed-models.sh $(KERAS_MODELS)
	@mkdir -p $(@D)
	sh scripts/embed-models.sh $(KERAS_MODELS) >$@.tmp && mv $@.tmp $@

$(COMMON_LIB): $(COMMON_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(WORKER_LIB): $(WORKER_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(WORKER_BIN): $(OBJ)/worker/src/app/main.o $(WORKER_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(LIBS) -o $@

$(OPERATOR_LIB): $(OPERATOR_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN)/mwj-operator: $(OBJ)/operator/src/cmd/main.o $(OPERATOR_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(OPERATOR_LIBS) -o $@

$(BIN)/operator_%: $(OBJ)/operator/tests/%.o $(OPERATOR_TEST_UTIL) $(OPERATOR_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(OPERATOR_LIBS) -lcmocka -o $@

$(BIN)/common_%: $(OBJ)/common/tests/%.o $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(LIBS) -lcmocka -o $@

$(BIN)/worker_%: $(OBJ)/worker/tests/%.o $(WORKER_TEST_UTIL) $(WORKER_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(LIBS) -lcmocka -o $@

$(OBJ)/worker/tests/cuda/%.o: ALL_CFLAGS += -Iworker/tests
$(BIN)/worker_cuda_%: $(OBJ)/worker/tests/cuda/%.o $(WORKER_TEST_UTIL) $(WORKER_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(LIBS) -lcmocka -o $@

# What a target of folder $(1) (worker or operator; $(2) in capitals) is
# built from: a replay links the folder's library, a libFuzzer build its
# sources. The % is the static pattern rules' below, left for them.
fuzz_replay_deps = $(OBJ)/$(1)/fuzz/fuzz_%.o $(OBJ)/fuzz/replay_%.o $(OBJ)/common/fuzz/harness.o \
	$($(2)_LIB) $(COMMON_LIB)
fuzz_deps = $(FUZZ_OBJ)/$(1)/fuzz/fuzz_%.o $(FUZZ_OBJ)/common/fuzz/harness.o \
	$(patsubst %.c,$(FUZZ_OBJ)/%.o,$($(2)_SRC) $(COMMON_SRC))

# Each folder's targets: where their corpora are, what they link with and
# are built from. The recipes after this serve both folders.
$(FUZZ_WORKER:%=$(OBJ)/fuzz/replay_%.o): FUZZ_DIR := worker/fuzz
$(FUZZ_WORKER:%=$(BIN)/fuzz_%_replay) $(FUZZ_WORKER:%=$(BUILD)/fuzz/fuzz_%): FUZZ_LIBS := $(LIBS)
$(FUZZ_WORKER:%=$(BIN)/fuzz_%_replay): $(BIN)/fuzz_%_replay: $(call fuzz_replay_deps,worker,WORKER)
$(FUZZ_WORKER:%=$(BUILD)/fuzz/fuzz_%): $(BUILD)/fuzz/fuzz_%: $(call fuzz_deps,worker,WORKER)

$(FUZZ_OPERATOR:%=$(OBJ)/fuzz/replay_%.o): FUZZ_DIR := operator/fuzz
$(FUZZ_OPERATOR:%=$(BIN)/fuzz_%_replay) $(FUZZ_OPERATOR:%=$(BUILD)/fuzz/fuzz_%): \
	FUZZ_LIBS := $(OPERATOR_LIBS)
$(FUZZ_OPERATOR:%=$(BIN)/fuzz_%_replay): $(BIN)/fuzz_%_replay: \
	$(call fuzz_replay_deps,operator,OPERATOR)
$(FUZZ_OPERATOR:%=$(BUILD)/fuzz/fuzz_%): $(BUILD)/fuzz/fuzz_%: $(call fuzz_deps,operator,OPERATOR)

# The replay driver, compiled once per target with the folder of its corpus.
$(OBJ)/fuzz/replay_%.o: common/fuzz/replay.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DFUZZ_CORPUS='"$(abspath $(FUZZ_DIR)/corpus/$*)"' -c $< -o $@

$(BIN)/fuzz_%_replay:
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(FUZZ_LIBS) -o $@

$(FUZZ_OBJ)/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(BUILD)/fuzz/fuzz_%:
	@mkdir -p $(@D)
	$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) $^ $(FUZZ_LIBS) -o $@

# Each target for FUZZ_SECONDS, one after the other, with its dictionary
# where it has one; new inputs are kept in build/fuzz/corpus-<name>, and a
# crash (saved as build/fuzz/<name>-crash-*) stops the run and fails it.
fuzz: $(FUZZ_NAMES:%=$(BUILD)/fuzz/fuzz_%)
	@for src in $(FUZZ_SRC); do \
		dir=$${src%/*}; name=$${src##*/fuzz_}; name=$${name%.c}; \
		dict=$$dir/fuzz_$$name.dict; \
		echo "== fuzz_$$name"; \
		mkdir -p $(BUILD)/fuzz/corpus-$$name && \
		$(BUILD)/fuzz/fuzz_$$name -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-timeout=$(FUZZ_TIMEOUT) $$(test -f $$dict && echo -dict=$$dict) \
			-artifact_prefix=$(BUILD)/fuzz/$$name- \
			$(BUILD)/fuzz/corpus-$$name $$dir/corpus/$$name || exit 1; \
	done

# The rendezvous benchmark brings strangers to the ports, as the tests do.
$(BIN)/bench_rendezvous: $(OBJ)/worker/tests/strangers.o
$(OBJ)/bench/bench_rendezvous.o: ALL_CFLAGS += -Iworker/tests

$(OBJ)/bench/cuda/%.o: ALL_CFLAGS += -Ibench
$(CUDA_BENCHES): $(BIN)/bench_%: $(OBJ)/bench/cuda/bench_%.o $(WORKER_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(LIBS) -o $@

$(BIN)/bench_%: $(OBJ)/bench/bench_%.o $(WORKER_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(LIBS) -o $@

$(BIN)/mpi_allreduce: bench/mpi_allreduce.c
	@mkdir -p $(@D)
	$(MPICC) -O2 -std=c17 -D_GNU_SOURCE $(WARN) $< -o $@

# Tests find the real data and the built binary through the environment.
MWJ_TEST_DATA ?= /usr/share/datasets/fashion-mnist
# The local test cluster's own tests (Python, no build step), real kubectl
# against it, the Helm chart rendered and checked (chart.sh), the
# end-to-end scenarios that e2e/kind runs on kind (e2e_local.sh), and make
# demo with short epochs (demo.sh).
E2E_UNIT := e2e/cluster/run_tests.py e2e/tests/kubectl_api.sh e2e/tests/kubectl_node.sh \
	e2e/tests/operator.sh e2e/tests/refusals.sh e2e/tests/operator_ha.sh e2e/tests/helm_cluster.sh \
	e2e/tests/large_job.sh e2e/tests/chart.sh e2e/tests/e2e_local.sh e2e/tests/demo.sh \
	e2e/tests/reports.sh
# Under the sanitizers, the scripts that drive our operator and worker
# through real pods, refusals and leader election; the rest test the local
# cluster, kubectl and helm, which the sanitizers do not see, and ran in
# the plain pass. operator.sh is left to the plain pass and to make bench,
# whose soak runs it with the sanitizer build of the operator and the leak
# checker (bench/operator_soak.py): with the sanitizer build of the worker
# in its pods it takes eight minutes, and CI runs both passes.
ifeq ($(SAN),1)
E2E_RUN := e2e/tests/refusals.sh e2e/tests/operator_ha.sh
else
E2E_RUN := $(E2E_UNIT)
endif
ifeq ($(CUDA),1)
# The CUDA build's own: the GPU tests, which skip, saying so, without a GPU.
test: $(WORKER_BIN) $(CUDA_TESTS)
	MWJ_CUDA_WORKER_BIN=$(abspath $(WORKER_BIN)) MWJ_TEST_DATA=$(MWJ_TEST_DATA) \
		scripts/run-tests.sh $(CUDA_TESTS)
else
# Wherever nvcc is installed (and not under the sanitizers), the CUDA build
# is made too, so that it always compiles and links, and its tests run.
CUDA_BUILD_TESTS := $(if $(and $(NVCC_FOUND),$(filter 0,$(SAN))),$(patsubst \
	$(BIN)/%,build-cuda/bin/%,$(CUDA_TESTS)))
test: $(WORKER_BIN) $(OPERATOR_BIN) $(TESTS) $(FUZZ_REPLAYS)
	$(if $(CUDA_BUILD_TESTS),$(MAKE) CUDA=1 build-cuda/bin/mwj-worker $(CUDA_BUILD_TESTS))
	MWJ_WORKER_BIN=$(abspath $(WORKER_BIN)) MWJ_OPERATOR_BIN=$(abspath $(BIN)/mwj-operator) \
		MWJ_CUDA_WORKER_BIN=$(abspath build-cuda/bin/mwj-worker) MWJ_TEST_DATA=$(MWJ_TEST_DATA) \
		scripts/run-tests.sh $(TESTS) $(FUZZ_REPLAYS) $(CUDA_BUILD_TESTS) $(E2E_RUN)
endif

# With nvcc, the GPU benchmark too (bench/run.sh runs it where a GPU is).
CUDA_BUILD_BENCHES := $(if $(and $(NVCC_FOUND),$(filter 0,$(SAN) $(CUDA))),build-cuda/bin/bench_gpu)
bench: $(WORKER_BIN) $(OPERATOR_BIN) $(BENCHES)
	$(if $(CUDA_BUILD_BENCHES),$(MAKE) CUDA=1 $(CUDA_BUILD_BENCHES))
	MWJ_BIN_DIR=$(abspath $(BIN)) MWJ_CUDA_BIN_DIR=$(abspath build-cuda/bin) \
		MWJ_TEST_DATA=$(MWJ_TEST_DATA) bench/run.sh

# The soak's leak part runs the operator built with ASan (LeakSanitizer
# included) in a build folder of its own, made by a make of its own: this
# Makefile's rules build one folder per run.
SOAK_SAN_BUILD := $(patsubst %-san,%,$(BUILD))-san
soak: $(WORKER_BIN) $(OPERATOR_BIN)
	$(MAKE) SAN=1 BUILD=$(SOAK_SAN_BUILD) $(SOAK_SAN_BUILD)/bin/mwj-operator
	MWJ_BIN_DIR=$(abspath $(BIN)) /usr/bin/python3 bench/operator_soak.py \
		--leak-operator $(abspath $(SOAK_SAN_BUILD)/bin/mwj-operator) $(if $(SEED),--seed $(SEED))

# The whole system: a cluster (kind where kind and docker are, the local
# test cluster otherwise), the operator from its chart, a 2-worker job
# preempted halfway, and the model's test accuracy; scripts/demo.sh says how.
demo: $(WORKER_BIN) $(OPERATOR_BIN)
	MWJ_WORKER_BIN=$(abspath $(WORKER_BIN)) MWJ_OPERATOR_BIN=$(abspath $(BIN)/mwj-operator) scripts/demo.sh

# The images: mwj-operator:$(VERSION) and mwj-worker:$(VERSION), each also
# tagged latest (the examples' image), from the Dockerfile's targets. VERSION
# is the one both binaries print (common/version.h).
# Docker where its engine answers (a docker client alone is not enough),
# podman otherwise: scripts/setup-podman.sh sets it up and makes the base
# image (DEVELOPERS.md). ?= is recursive: docker is asked only when an image
# target runs.
VERSION := $(shell awk '$$2 == "MWJ_RELEASE" { gsub(/"/, "", $$3); print $$3 }' common/version.h)
CONTAINER_ENGINE ?= $(if $(shell docker info >/dev/null 2>&1 && echo yes),docker,podman)
BASE_IMAGE ?= debian:bookworm-slim
IMAGE_PREFIX ?=
# Extra flags for `build`. podman needs none: it takes a local base image
# before any registry, and the runtime settings our machines need are in
# containers.conf (scripts/setup-podman.sh).
IMAGE_BUILD_FLAGS ?=
# The revision label says -dirty when tracked files differ from the commit.
IMAGE_REVISION = $(or $(shell git rev-parse HEAD 2>/dev/null),unknown)$(if \
	$(shell git status --porcelain --untracked-files=no 2>/dev/null),-dirty)
IMAGE_BUILD = $(CONTAINER_ENGINE) build $(IMAGE_BUILD_FLAGS) --build-arg BASE_IMAGE=$(BASE_IMAGE) \
	--build-arg VERSION=$(VERSION) --build-arg REVISION=$(IMAGE_REVISION) \
	--build-arg CREATED=$(or $(shell git log -1 --format=%cI 2>/dev/null),unknown)
images:
	$(IMAGE_BUILD) --target operator -t $(IMAGE_PREFIX)mwj-operator:$(VERSION) \
		-t $(IMAGE_PREFIX)mwj-operator:latest .
	$(IMAGE_BUILD) --target worker -t $(IMAGE_PREFIX)mwj-worker:$(VERSION) \
		-t $(IMAGE_PREFIX)mwj-worker:latest .
	@$(CONTAINER_ENGINE) images --filter reference='*mwj-*:$(VERSION)'

images-check: images
	CONTAINER_ENGINE=$(CONTAINER_ENGINE) scripts/images-check.sh $(VERSION) \
		$(IMAGE_PREFIX)mwj-operator:$(VERSION) $(IMAGE_PREFIX)mwj-worker:$(VERSION)

# Only where the CUDA images can be had (CUDA_BASE_IMAGE, CUDA_RUNTIME_IMAGE:
# see the Dockerfile).
images-cuda:
	$(IMAGE_BUILD) $(if $(CUDA_BASE_IMAGE),--build-arg CUDA_BASE_IMAGE=$(CUDA_BASE_IMAGE)) \
		$(if $(CUDA_RUNTIME_IMAGE),--build-arg CUDA_RUNTIME_IMAGE=$(CUDA_RUNTIME_IMAGE)) \
		--target worker-cuda -t $(IMAGE_PREFIX)mwj-worker-cuda:$(VERSION) \
		-t $(IMAGE_PREFIX)mwj-worker-cuda:latest .

C_FILES := $(shell git ls-files '*.c' '*.h' 2>/dev/null)
# The CUDA sources need the toolkit's headers; without them they are left
# to clang-format alone.
CUDA_C_FILES := $(filter worker/src/cuda/% worker/tests/cuda/% bench/cuda/%,$(C_FILES))
TIDY_FILES := $(filter %.c,$(if $(NVCC_FOUND),$(C_FILES),$(filter-out $(CUDA_C_FILES),$(C_FILES))))
# The MPI baseline needs mpi.h: checked with mpicc's flags, where it is installed.
MPI_FILES := bench/mpi_allreduce.c
# clang-tidy runs one process per core, eight files each, with the flags
# from a compile_flags.txt it finds through -p.
NPROC := $(shell nproc 2>/dev/null || echo 2)
lint:
	clang-format --dry-run --Werror $(C_FILES)
	@mkdir -p $(BUILD)/tidy
	@printf '%s\n' -std=c17 -D_GNU_SOURCE -DFUZZ_CORPUS='""' $(PKG_CFLAGS) $(OPERATOR_PKG_CFLAGS) \
		$(patsubst -I%,-I$(CURDIR)/%,-Icommon $(WORKER_INC) -Iworker/tests $(OPERATOR_INC) \
		-Ioperator/tests -Ibench) $(if $(NVCC_FOUND),-isystem$(CUDA_HOME)/include) \
		> $(BUILD)/tidy/compile_flags.txt
	printf '%s\n' $(filter-out $(MPI_FILES),$(TIDY_FILES)) | \
		xargs -P $(NPROC) -n 8 clang-tidy --quiet -p $(BUILD)/tidy
	$(if $(MPICC),clang-tidy --quiet $(MPI_FILES) -- -std=c17 -D_GNU_SOURCE \
		$(shell $(MPICC) -showme:compile 2>/dev/null))

# The chart ships the CRD in its own crds/ folder, as Helm wants; crds/ is
# the one source, and e2e/tests/chart.sh fails while the copy differs.
CHART_CRDS := $(patsubst crds/%,charts/mwj-operator/crds/%,$(wildcard crds/*.yaml))
chart-crds: $(CHART_CRDS)
charts/mwj-operator/crds/%.yaml: crds/%.yaml
	cp $< $@

clean:
	rm -rf build build-san build-cuda

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
