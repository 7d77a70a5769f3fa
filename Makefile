# mwj - one non-recursive Makefile for every binary, test and benchmark.
#
#   make            build build/bin/mwj-worker and build/bin/mwj-operator
#   make test       build and run every unit and CLI test
#   make test SAN=1 the same with ASan/UBSan, in build-san/
#   make bench      throughput figures as JSON lines
#   make demo       a short training run on Fashion-MNIST
#   make fuzz       fuzz the handshake decoders with libFuzzer (clang)
#   make lint       clang-format check and clang-tidy
#   make clean

# Every rule is written out here; make's built-in ones would try to rebuild
# the dependency files (-MMD) from objects of the same stem.
MAKEFLAGS += --no-builtin-rules
.SUFFIXES:

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
# The operator also talks HTTPS (libcurl), reads kubeconfigs (libyaml) and
# serves its metrics and health checks (libmicrohttpd).
OPERATOR_PKGS := libcurl yaml-0.1 libmicrohttpd
OPERATOR_PKG_CFLAGS := $(shell pkg-config --cflags $(OPERATOR_PKGS) 2>/dev/null)
OPERATOR_PKG_LIBS := $(shell pkg-config --libs $(OPERATOR_PKGS) 2>/dev/null)

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wformat=2 -Wvla
CFLAGS ?= -O3 -g
ALL_CFLAGS := -std=c17 -D_GNU_SOURCE -ffp-contract=off -fno-math-errno $(WARN) $(CFLAGS) $(SANFLAGS) $(PKG_CFLAGS) \
	$(OPERATOR_PKG_CFLAGS) -Icommon -Iworker/src -Ioperator/src -MMD -MP
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
OPERATOR_SRC := $(filter-out operator/src/main.c,$(wildcard operator/src/*.c))
OPERATOR_OBJ := $(OPERATOR_SRC:%.c=$(OBJ)/%.o)
OPERATOR_LIB := $(OBJ)/libmwjoperator.a
OPERATOR_TESTS := $(patsubst operator/tests/%.c,$(BIN)/operator_%,$(wildcard operator/tests/test_*.c))
# Helpers the operator tests share: every .c in operator/tests that is not a test.
OPERATOR_TEST_UTIL := $(patsubst %.c,$(OBJ)/%.o,$(filter-out operator/tests/test_%.c,$(wildcard operator/tests/*.c)))
OPERATOR_LIBS := $(OPERATOR_PKG_LIBS) $(PKG_LIBS) -lm -lpthread
# Helpers the worker tests share: every .c in worker/tests that is not a test.
WORKER_TEST_UTIL := $(patsubst %.c,$(OBJ)/%.o,$(filter-out worker/tests/test_%.c,$(wildcard worker/tests/*.c)))
TESTS := $(COMMON_TESTS) $(WORKER_TESTS) $(OPERATOR_TESTS)
BENCHES := $(patsubst bench/%.c,$(BIN)/%,$(wildcard bench/bench_*.c))
# The OpenMPI baseline, built only where mpicc is installed (install-deps does).
MPICC := $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
BENCHES += $(BIN)/mpi_allreduce
endif
WORKER_BIN := $(BIN)/mwj-worker
OPERATOR_BIN := $(if $(wildcard operator/src/main.c),$(BIN)/mwj-operator)
# Fuzz targets (worker/fuzz/fuzz_<name>.c): `make test` replays each one's
# seed corpus (worker/fuzz/corpus/<name>) with this build's compiler and
# sanitizers; `make fuzz` fuzzes them with clang's libFuzzer.
FUZZ_NAMES := $(patsubst worker/fuzz/fuzz_%.c,%,$(wildcard worker/fuzz/fuzz_*.c))
FUZZ_REPLAYS := $(FUZZ_NAMES:%=$(BIN)/fuzz_%_replay)
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS := -std=c17 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -Icommon -Iworker/src

.PHONY: all test bench demo fuzz lint clean
all: $(WORKER_BIN) $(OPERATOR_BIN)

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

$(OPERATOR_LIB): $(OPERATOR_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN)/mwj-operator: $(OBJ)/operator/src/main.o $(OPERATOR_LIB) $(COMMON_LIB)
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

$(OBJ)/worker/fuzz/replay_%.o: worker/fuzz/replay.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DFUZZ_CORPUS='"$(abspath worker/fuzz/corpus/$*)"' -c $< -o $@

$(BIN)/fuzz_%_replay: $(OBJ)/worker/fuzz/fuzz_%.o $(OBJ)/worker/fuzz/replay_%.o $(WORKER_LIB) \
		$(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $^ $(LIBS) -o $@

$(BUILD)/fuzz/fuzz_%: worker/fuzz/fuzz_%.c $(WORKER_SRC) $(COMMON_SRC)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(PKG_CFLAGS) $< $(WORKER_SRC) $(COMMON_SRC) $(LIBS) -o $@

# Each target for FUZZ_SECONDS, its new inputs kept in build/fuzz/corpus-<name>.
fuzz: $(FUZZ_NAMES:%=$(BUILD)/fuzz/fuzz_%)
	@for name in $(FUZZ_NAMES); do \
		mkdir -p $(BUILD)/fuzz/corpus-$$name && \
		$(BUILD)/fuzz/fuzz_$$name -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=$(BUILD)/fuzz/ \
			$(BUILD)/fuzz/corpus-$$name worker/fuzz/corpus/$$name || exit 1; \
	done

# The rendezvous benchmark brings strangers to the ports, as the tests do.
$(BIN)/bench_rendezvous: $(OBJ)/worker/tests/strangers.o
$(OBJ)/bench/bench_rendezvous.o: ALL_CFLAGS += -Iworker/tests

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
E2E_UNIT := e2e/cluster/run_tests.py e2e/tests/kubectl_api.sh e2e/tests/kubectl_node.sh \
	e2e/tests/operator.sh e2e/tests/operator_ha.sh
test: $(WORKER_BIN) $(OPERATOR_BIN) $(TESTS) $(FUZZ_REPLAYS)
	MWJ_WORKER_BIN=$(abspath $(WORKER_BIN)) MWJ_OPERATOR_BIN=$(abspath $(BIN)/mwj-operator) \
		MWJ_TEST_DATA=$(MWJ_TEST_DATA) \
		scripts/run-tests.sh $(TESTS) $(FUZZ_REPLAYS) $(E2E_UNIT)

bench: $(WORKER_BIN) $(OPERATOR_BIN) $(BENCHES)
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
		-D_GNU_SOURCE -DFUZZ_CORPUS='""' $(PKG_CFLAGS) $(OPERATOR_PKG_CFLAGS) -Icommon -Iworker/src \
		-Iworker/tests -Ioperator/src -Ioperator/tests
	$(if $(MPICC),clang-tidy --quiet $(MPI_FILES) -- -std=c17 -D_GNU_SOURCE \
		$(shell $(MPICC) -showme:compile 2>/dev/null))

clean:
	rm -rf build build-san

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
