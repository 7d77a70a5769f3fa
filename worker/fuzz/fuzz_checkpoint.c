/* fuzz_checkpoint.c - a libFuzzer target for checkpoint_load (checkpoint.h):
 * the backup file a worker restores from, which lies on a shared volume
 * that any pod of the job (or a user) can write.
 *
 * The run that loads it trains a model of RUN_PARAMS parameters and
 * architecture hash RUN_HASH, with or without RUN_STATE floats of model
 * state (fuzz/corpus/checkpoint holds backups of it: mwj 0.1's version-1
 * files, and version-2 ones from checkpoint_seeds.py).
 * Input: byte 0 picks the mode, the rest is the file.
 *   bits 0-1  the run's optimizer: 0 sgd (no state), 1 sgd with momentum
 *             (1 slot), 2 adam (2 slots), 3 centered rmsprop with momentum
 *             (3 slots)
 *   bit 2     append the CRC-32C the format ends with, so that mutations
 *             reach the checks behind the checksum
 *   bit 3     with bit 2, put OVERSIZE zero bytes before the CRC: a file
 *             longer than its header says, refused for its length unread
 *   bit 4     the run's model has RUN_STATE floats of state (batch
 *             normalisation's moving statistics)
 * Checked beyond "no crash": a refusal is CORRUPT or INCOMPATIBLE with a
 * message naming the file; an accepted backup fits the run, has its
 * counters in range, and written again with checkpoint_save (as version
 * 2, whatever version it was read from), loads back bit for bit; its
 * position, checked against runs of fixed and of one-pass epochs
 * (checkpoint_check_position), is taken up or refused saying why, and a
 * position taken up keeps its step within the steps taken.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "err.h"
#include "fuzz/harness.h"

#define MODE_SLOTS       3
#define MODE_CRC         4
#define MODE_OVERSIZE    8
#define MODE_MODEL_STATE 16

#define RUN_PARAMS 16
#define RUN_STATE  4
#define RUN_HASH   0x0123456789abcdefull
#define OVERSIZE   (80u << 10) /* more than the longest header allowed (64 KiB) */

struct run {
	float params[RUN_PARAMS];
	float model_state[RUN_STATE];
	float state[OPTIMIZER_MAX_SLOTS * RUN_PARAMS];
};

static const enum optimizer_kind KINDS[] = {OPT_SGD, OPT_SGD, OPT_ADAM, OPT_RMSPROP};
static const int SLOTS[] = {0, 1, 2, 3};

static const unsigned char *bytes(const void *p)
{
	return p;
}

/* What this run builds, with its buffers. */
static struct checkpoint run_init(struct run *r, int mode)
{
	int with_state = (mode & MODE_MODEL_STATE) != 0;
	struct checkpoint c = {
	    .model = "cnn",
	    .arch_hash = RUN_HASH,
	    .nparams = RUN_PARAMS,
	    .nstate = with_state ? RUN_STATE : 0,
	    .optimizer = KINDS[mode & MODE_SLOTS],
	    .nslots = SLOTS[mode & MODE_SLOTS],
	    .params = r->params,
	    .model_state = with_state ? r->model_state : NULL,
	    .opt_state = SLOTS[mode & MODE_SLOTS] > 0 ? r->state : NULL,
	};

	memset(r, 0, sizeof(*r));
	return c;
}

static void check_accepted(const struct checkpoint *c, int mode)
{
	/* The name is the file's, any name: the architecture is the model. */
	FUZZ_CHECK(memchr(c->model, '\0', sizeof(c->model)) != NULL);
	FUZZ_CHECK(c->arch_hash == RUN_HASH && c->nparams == RUN_PARAMS);
	FUZZ_CHECK(c->nstate == (size_t)(mode & MODE_MODEL_STATE ? RUN_STATE : 0));
	FUZZ_CHECK(c->optimizer == KINDS[mode & MODE_SLOTS]);
	FUZZ_CHECK(c->nslots == SLOTS[mode & MODE_SLOTS]);
	FUZZ_CHECK(c->pos.world >= 1 && c->pos.world <= 4096);
	FUZZ_CHECK(c->pos.batch_size >= 1 && c->pos.batch_size <= (1u << 20));
	FUZZ_CHECK(c->pos.epoch >= 0 && c->pos.step >= 0);
	FUZZ_CHECK(c->pos.global_step <= CHECKPOINT_STEP_MAX);
	FUZZ_CHECK(c->learning_rate >= 0 && c->learning_rate <= 1e9);
	FUZZ_CHECK(c->momentum >= 0 && c->momentum <= 1);
}

/* The position against a run of 20-step epochs and one of one-pass
 * epochs over Fashion-MNIST's 60000 examples. */
static void check_position(const struct train_position *p)
{
	static const struct checkpoint_run runs[] = {{3, 20, 60000}, {3, 0, 60000}};

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		char why[ERR_LEN] = "";
		int rc = checkpoint_check_position(p, &runs[i], why);
		FUZZ_CHECK(rc == 0 || rc == -1);
		FUZZ_CHECK(memchr(why, '\0', sizeof(why)) != NULL);
		if (rc < 0) {
			FUZZ_CHECK(why[0] != '\0');
			continue;
		}
		FUZZ_CHECK((uint64_t)p->step <= p->global_step && p->epoch <= runs[i].epochs);
		FUZZ_CHECK(p->examples >= p->global_step);
	}
}

/* Saves c and loads it back into a second run of the same model. */
static void check_round_trip(const struct checkpoint *c, int mode)
{
	char path[4096], err[ERR_LEN];
	struct run r2;
	struct checkpoint back = run_init(&r2, mode);
	const char *dir = fuzz_path("saved");

	FUZZ_CHECK(checkpoint_save(dir, c, err) == 0);
	FUZZ_CHECK(checkpoint_path(dir, c->pos.global_step, path, sizeof(path)) == 0);
	FUZZ_CHECK(checkpoint_load(path, &back, err) == 0);
	/* Bit for bit: the bytes, not the values (NaN payloads, -0). */
	FUZZ_CHECK(memcmp(bytes(back.params), bytes(c->params), sizeof(r2.params)) == 0);
	FUZZ_CHECK(c->nstate == 0 || memcmp(bytes(back.model_state), bytes(c->model_state),
	                                    sizeof(float) * c->nstate) == 0);
	FUZZ_CHECK(c->nslots == 0 || memcmp(bytes(back.opt_state), bytes(c->opt_state),
	                                    sizeof(float) * RUN_PARAMS * c->nslots) == 0);
	FUZZ_CHECK(memcmp(bytes(&back.pos.sums), bytes(&c->pos.sums), sizeof(c->pos.sums)) == 0);
	FUZZ_CHECK(back.pos.epoch == c->pos.epoch && back.pos.step == c->pos.step);
	FUZZ_CHECK(back.pos.global_step == c->pos.global_step);
	FUZZ_CHECK(back.pos.examples == c->pos.examples);
	FUZZ_CHECK(back.pos.world == c->pos.world && back.pos.batch_size == c->pos.batch_size);
	FUZZ_CHECK(back.seed == c->seed && back.iterations == c->iterations);
	FUZZ_CHECK(back.learning_rate == c->learning_rate && back.momentum == c->momentum);
	FUZZ_CHECK(strcmp(back.model, c->model) == 0);
	/* Leave the folder empty for the next accepted input. */
	checkpoint_remove_all(dir, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[ERR_LEN] = "", path[4096];
	unsigned char *framed = NULL;
	struct checkpoint c;
	struct run r;
	int mode, rc;

	if (size < 1)
		return 0;
	mode = data[0];
	c = run_init(&r, mode);
	if (mode & MODE_CRC) {
		size_t len;

		framed =
		    fuzz_crc_frame(data + 1, size - 1, mode & MODE_OVERSIZE ? OVERSIZE : 0, &len);
		snprintf(path, sizeof(path), "%s", fuzz_file("backup", framed, len));
	} else {
		snprintf(path, sizeof(path), "%s", fuzz_file("backup", data + 1, size - 1));
	}
	rc = checkpoint_load(path, &c, err);
	if (rc == 0) {
		check_accepted(&c, mode);
		check_position(&c.pos);
		check_round_trip(&c, mode);
	} else {
		FUZZ_CHECK(rc == CHECKPOINT_CORRUPT || rc == CHECKPOINT_INCOMPATIBLE);
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		FUZZ_CHECK(strstr(err, path) != NULL);
	}
	free(framed);
	return 0;
}
