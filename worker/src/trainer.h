/* trainer.h - Model.fit and Model.evaluate for one worker. */
#ifndef MWJ_TRAINER_H
#define MWJ_TRAINER_H

#include <stdint.h>
#include <stdio.h>

#include "dataset.h"
#include "metrics.h"
#include "model.h"
#include "optimizer.h"

#define TRAIN_PATH_LEN 4096
#define VALIDATION_ALL (-1L)

struct train_config {
	char model[32];
	int epochs;
	long steps_per_epoch; /* 0: ceil(examples / batch), one pass */
	int batch_size;
	double learning_rate;
	enum optimizer_kind optimizer;
	double momentum;
	uint64_t seed;
	char data_dir[TRAIN_PATH_LEN];
	long validation_steps;          /* 0: none; VALIDATION_ALL: the whole test split */
	char model_dir[TRAIN_PATH_LEN]; /* "" : do not save */
	int threads;
	int json;       /* JSON lines on stdout instead of the progress bar */
	long log_every; /* steps between periodic progress lines, 0 = none */
};

/* What a finished run reports: the last epoch's training metrics and, if
 * validation ran, its validation metrics. */
struct train_result {
	struct metrics train, val;
	long global_step;
	double seconds; /* wall time of the last epoch's steps, validation excluded */
};

/* Trains as configured, printing progress on out, and writes the model to
 * model_dir. result may be NULL. Returns 0, or -1 with a message in err (bad
 * data, a loss that is no longer finite, a failed save). */
int trainer_fit(const struct train_config *cfg, FILE *out, struct train_result *result, char *err);

/* Runs the model over steps batches of ds in file order (VALIDATION_ALL: the
 * whole split, the last batch partial) and returns the loss and accuracy sums.
 * x and y are scratch for max_batch examples. */
struct metrics trainer_evaluate(struct model *m, const struct dataset *ds, int batch, long steps,
                                float *x, uint8_t *y);

/* Returns the number of batches trainer_evaluate runs for steps. */
long trainer_eval_steps(const struct dataset *ds, int batch, long steps);

#endif
