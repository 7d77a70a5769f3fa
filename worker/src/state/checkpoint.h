/* checkpoint.h - backups of a training run, like Keras' BackupAndRestore:
 * everything needed to go on from the exact step where the backup was
 * taken, so that a resumed run ends with the weights an uninterrupted run
 * would have produced, bit for bit.
 *
 * A backup directory holds "backup-<global step, 12 digits>.mwjb" files.
 * checkpoint_save writes a new one atomically (atomic_file.h) and then
 * keeps it and the newest older one, so that a backup that turns out to be
 * unreadable still has a predecessor.
 *
 * Format, version 2 (all integers little-endian):
 *   offset 0   8 bytes  magic "MWJBACKP"
 *          8   u32      format version (2)
 *         12   u32      H, length of the JSON header
 *         16   H bytes  JSON header: {"format":"mwj-backup","version":2,
 *                       "model":"cnn","arch_hash":"<16 hex digits>",
 *                       "num_params":N,"model_state":S,"optimizer":"adam",
 *                       "state_slots":K,"iterations":"<u64>",
 *                       "learning_rate":0.001,"momentum":0,"seed":"<u64>",
 *                       "world":W,"batch_size":B,"epoch":E,"step":K,
 *                       "global_step":"<u64>","examples":"<u64>"}
 *                       (64-bit counters are decimal strings: a JSON
 *                       number cannot hold all of them exactly)
 *     16 + H   6 f64    the running metric sums: loss, examples, and four
 *                       metrics' (kept binary, so that they come back bit
 *                       for bit)
 *     ...      N f32    parameters, in the model's layer order
 *     ...      S f32    the model's state (batch normalisation's moving
 *                       statistics), in layer order
 *     ...      K*N f32  optimizer state, slot after slot
 *     end - 4  u32      CRC-32C of every byte before it
 * Version 1 (mwj 0.1) is read too: no model state, and three sums (loss,
 * examples right, examples), the second of which is the accuracy's.
 * Every later version keeps the magic, the version field and the trailing
 * CRC where they are, so that a reader can tell "corrupt" from "newer".
 */
#ifndef MWJ_CHECKPOINT_H
#define MWJ_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "optimizer.h"

#define CHECKPOINT_VERSION     2
#define CHECKPOINT_KEEP        2               /* backups left in the directory after a save */
#define CHECKPOINT_NAME_LEN    128             /* KERAS_NAME_LEN */
#define CHECKPOINT_MAX_FILES   64              /* checkpoint_list looks at no more than this */
#define CHECKPOINT_STEP_DIGITS 12              /* of the global step in a file name */
#define CHECKPOINT_STEP_MAX    999999999999ull /* the largest step a name holds */

/* checkpoint_load's failures: the file is damaged (use an older backup), or
 * it is sound but belongs to another model or a newer format (stop: exit 1,
 * because no restart can make it fit). */
#define CHECKPOINT_CORRUPT      (-1)
#define CHECKPOINT_INCOMPATIBLE (-2)

/* Where training stands. The next step to run is step + 1 of epoch. */
struct train_position {
	int epoch;                  /* 0-based: the epoch in progress; epochs once all are done */
	long step;                  /* steps of that epoch done */
	uint64_t global_step;       /* steps done since the start of training */
	uint64_t examples;          /* examples all workers together took from the stream */
	uint32_t world, batch_size; /* of the run that took the last step */
	struct metrics sums;        /* of the epoch in progress */
};

/* One backup. What the file must match is the model (architecture hash,
 * parameter count, floats of state; the name is for people) and the
 * layout of the optimizer state (kind and number of slots); the
 * hyper-parameters it records are for the caller to compare and report. */
struct checkpoint {
	struct train_position pos;
	uint64_t seed;
	char model[CHECKPOINT_NAME_LEN];
	uint64_t arch_hash;
	size_t nparams;
	size_t nstate; /* the model's state floats (model.h) */
	enum optimizer_kind optimizer;
	int nslots;
	uint64_t iterations; /* optimizer steps begun (Adam's t) */
	double learning_rate, momentum;
	float *params;      /* (nparams), not owned */
	float *model_state; /* (nstate), not owned; NULL when nstate is 0 */
	float *opt_state;   /* (nslots, nparams), not owned; NULL when nslots is 0 */
};

/* Writes c as "<dir>/backup-<c->pos.global_step>.mwjb", creating dir if
 * needed, atomically: on failure the file is not there and the backups
 * already in dir are untouched. After a successful write, removes every
 * other backup in dir except the newest one older than c, and any temporary
 * file a crashed writer left. Returns 0, or -1 with a message in err
 * naming the path and the failing call. */
int checkpoint_save(const char *dir, const struct checkpoint *c, char *err);

/* Fills steps with the global steps of the backups in dir, newest first, at
 * most max of them (the newest). Files whose names do not follow the
 * pattern are ignored. Returns how many there are (0 when dir does not
 * exist), or -1 with a message when dir cannot be read. */
int checkpoint_list(const char *dir, uint64_t *steps, int max, char *err);

/* Writes the path of the backup of global_step in dir into out (n bytes);
 * -1 if it does not fit. */
int checkpoint_path(const char *dir, uint64_t global_step, char *out, size_t n);

/* Reads the backup at path into c. On entry c->model, arch_hash, nparams,
 * nstate, optimizer and nslots describe what this run builds, and params,
 * model_state and opt_state point at its buffers. Only a regular file is read, and only
 * as far as its header when its length is not the one the header implies:
 * nothing is read whole, or held, for the file's sake. Returns 0 with
 * every field of c filled in; CHECKPOINT_CORRUPT (not a regular file, bad
 * magic, truncated, checksum mismatch, a header that does not parse or
 * disagrees with the file's length) or CHECKPOINT_INCOMPATIBLE (another
 * format version, model or optimizer state, in a file whose checksum is
 * sound), each with a message in err naming path. The position is not
 * judged here (checkpoint_check_position). On failure the buffers may
 * have been overwritten. */
int checkpoint_load(const char *path, struct checkpoint *c, char *err);

/* What a run makes of positions: its --epochs, the steps of one epoch
 * (--steps-per-epoch, or 0 for one pass over the training set, which then
 * depends on the world and batch of the position), and how many examples
 * the training set holds. */
struct checkpoint_run {
	int epochs;
	long steps_per_epoch;
	uint32_t examples;
};

/* Checks that a backup's position is one a run could have reached, and
 * that run can go on from: its fields against each other (the step within
 * the steps taken in all, the examples taken and the running sums against
 * the steps) and against run (the epoch within --epochs, the step within
 * an epoch's steps, so within the data set for one-pass epochs). The CRC
 * vouches only for the bytes: a writer's bug or an edited file gets this
 * far, and restoring it would report a loss of 0 and delete the backups
 * at the end of a run that never trained. Returns 0, or -1 with what is
 * wrong in err (without the path, which the caller names). */
int checkpoint_check_position(const struct train_position *p, const struct checkpoint_run *run,
                              char *err);

/* Removes every temporary file of a backup from dir, and every backup but
 * keep and the newest one older than it (keep UINT64_MAX: all of them). A
 * newer one than keep goes too: it belongs to a run that was abandoned for
 * an older backup. Returns 0, or -1 with the first failure; it goes on with
 * the rest. checkpoint_save calls it after each successful write. */
int checkpoint_prune(const char *dir, uint64_t keep, char *err);

/* Removes every backup in dir, and temporary files of crashed writers, but
 * not dir itself or anything else in it. Returns 0, or -1 with a message
 * (the first failure; it goes on with the rest). */
int checkpoint_remove_all(const char *dir, char *err);

#endif
