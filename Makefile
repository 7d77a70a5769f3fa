# mwj - one non-recursive Makefile for every binary, test and benchmark.
#
#   make            build build/bin/mwj-worker
#   make test       build and run every unit and CLI test
#   make test SAN=1 the same with ASan/UBSan, in build-san/
#   make bench      throughput figures as JSON lines
#   make demo       a short training run on Fashion-MNIST
#   make lint       clang-format check and clang-tidy
#   make clean

SAN ?= 0
ifeq ($(SAN),1)
BUILD := build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD := build
SANFLAGS :=
endif

CC ?= cc
PKGS := openblas libcjson zlib libcrypto
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS := $(shell pkg-config --libs $(PKGS))

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wformat=2 -Wvla
CFLAGS ?= -O3 -g
ALL_CFLAGS := -std=c17 -D_GNU_SOURCE -ffp-contract=off -fno-math-errno $(WARN) $(CFLAGS) $(SANFLAGS) $(PKG_CFLAGS) \
	-Icommon -Iworker/src -MMD -MP
LDFLAGS ?=
ALL_LDFLAGS := $(LDFLAGS) $(SANFLAGS)
LIBS := $(PKG_LIBS) -lm -lpthread

OBJ := $(BUILD)/obj
BIN := $(BUILD)/bin

COMMON_SRC := $(wildcard common/*.c)
WORKER_SRC := $(filter-out worker/src/main.c,$(wildcard worker/src/*.c))
COMMON_OBJ := $(COMMON_SRC:%.c=$(OBJ)/%.o)
WORKER_OBJ := $(WORKER_SRC:%.c=$(OBJ)/%.o)
COMMON_LIB := $(OBJ)/libmwjcommon.a
WORKER_LIB := $(OBJ)/libmwjworker.a

COMMON_TESTS := $(patsubst common/tests/%.c,$(BIN)/common_%,$(wildcard common/tests/test_*.c))
WORKER_TESTS := $(patsubst worker/tests/%.c,$(BIN)/worker_%,$(wildcard worker/tests/test_*.c))
WORKER_TEST_UTIL := $(OBJ)/worker/tests/testutil.o
TESTS := $(COMMON_TESTS) $(WORKER_TESTS)
BENCHES := $(patsubst bench/%.c,$(BIN)/%,$(wildcard bench/bench_*.c))
# The OpenMPI baseline, built only where mpicc is installed (install-deps does).
MPICC := $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
BENCHES += $(BIN)/mpi_allreduce
endif
WORKER_BIN := $(BIN)/mwj-worker

.PHONY: all test bench demo lint clean
all: $(WORKER_BIN)

$(OBJ)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(COMMON_LIB): $(COMMON_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(WORKER_LIB): $(WORKER_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(WORKER_BIN): $(OBJ)/worker/src/main.o $(WORKER_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(LIBS) -o $@

$(BIN)/common_%: $(OBJ)/common/tests/%.o $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(LIBS) -lcmocka -o $@

$(BIN)/worker_%: $(OBJ)/worker/tests/%.o $(WORKER_TEST_UTIL) $(WORKER_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(LIBS) -lcmocka -o $@

$(BIN)/bench_%: $(OBJ)/bench/bench_%.o $(WORKER_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(LIBS) -o $@

$(BIN)/mpi_allreduce: bench/mpi_allreduce.c
	@mkdir -p $(@D)
	$(MPICC) -O2 -std=c17 -D_GNU_SOURCE $(WARN) $< -o $@

# Tests find the real data and the built binary through the environment.
MWJ_TEST_DATA ?= /usr/share/datasets/fashion-mnist
# The local test cluster's own tests (Python, no build step), and real
# kubectl against it.
E2E_UNIT := e2e/cluster/run_tests.py e2e/tests/kubectl_api.sh e2e/tests/kubectl_node.sh
test: $(WORKER_BIN) $(TESTS)
	MWJ_WORKER_BIN=$(abspath $(WORKER_BIN)) MWJ_TEST_DATA=$(MWJ_TEST_DATA) \
		scripts/run-tests.sh $(TESTS) $(E2E_UNIT)

bench: $(WORKER_BIN) $(BENCHES)
	MWJ_BIN_DIR=$(abspath $(BIN)) MWJ_TEST_DATA=$(MWJ_TEST_DATA) bench/run.sh

demo: $(WORKER_BIN)
	$(WORKER_BIN) train --data-dir $(MWJ_TEST_DATA) --epochs 2 --steps-per-epoch 200 --optimizer adam \
		--validation-steps 20 --model-dir $(BUILD)/demo-model
	$(WORKER_BIN) evaluate --model-dir $(BUILD)/demo-model --data-dir $(MWJ_TEST_DATA)

C_FILES := $(shell git ls-files '*.c' '*.h' 2>/dev/null)
# The MPI baseline needs mpi.h: checked with mpicc's flags, where it is installed.
MPI_FILES := bench/mpi_allreduce.c
lint:
	clang-format --dry-run --Werror $(C_FILES)
	clang-tidy --quiet $(filter-out $(MPI_FILES),$(filter %.c,$(C_FILES))) -- -std=c17 \
		-D_GNU_SOURCE $(PKG_CFLAGS) -Icommon -Iworker/src
	$(if $(MPICC),clang-tidy --quiet $(MPI_FILES) -- -std=c17 -D_GNU_SOURCE \
		$(shell $(MPICC) -showme:compile 2>/dev/null))

clean:
	rm -rf build build-san

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
