/* progress.h - the trainer's output on stdout, like Keras fit(verbose=1):
 *
 *   Epoch 1/3
 *   70/70 [==============================] - 1s 12ms/step - loss: 0.5123 - accuracy: 0.8210
 *
 * On a terminal the bar is redrawn in place (at most every 50 ms); otherwise
 * a line is printed at the end of each epoch and, with every > 0, every that
 * many steps. In JSON mode each of those lines is a JSON object instead.
 */
#ifndef MWJ_PROGRESS_H
#define MWJ_PROGRESS_H

#include <stdio.h>

#include "loss.h"
#include "metrics.h"

enum progress_mode { PROGRESS_BAR, PROGRESS_LINES, PROGRESS_JSON, PROGRESS_QUIET };

struct progress {
	enum progress_mode mode;
	FILE *out;
	long every;       /* steps between periodic lines; 0 = none */
	long batch;       /* examples per step, for samples/s */
	const char *what; /* "epoch" or "evaluate" in JSON */
	int epoch, epochs;
	int nmetrics; /* shown after the loss, with their names */
	const char *names[METRICS_MAX];
	long target;        /* steps in this epoch */
	long done;          /* steps of it done before it began here (a resumed run) */
	double start, last; /* seconds, monotonic */
};

/* Picks the mode: JSON if json, else a live bar if out is a terminal, else
 * plain lines. The metrics shown are spec's (NULL: the loss alone), by
 * their names. */
void progress_init(struct progress *p, FILE *out, int json, long every, long batch,
                   const struct loss_spec *spec);

/* Prints "Epoch e/E" (text) and starts the clock. done is how many of the
 * epoch's steps were done before (by a run this one resumes), so that times
 * per step count only the steps run from here. */
void progress_epoch_begin(struct progress *p, int epoch, int epochs, long steps, long done);

/* Reports that step (1-based) of the epoch is done with the running metrics. */
void progress_step(struct progress *p, long step, long global_step, const struct metrics *run);

/* Prints the epoch's final line; val may be NULL. */
void progress_epoch_end(struct progress *p, long global_step, const struct metrics *train,
                        const struct metrics *val);

/* For evaluate: one final line with the test metrics over steps steps. */
void progress_evaluate_end(struct progress *p, long steps, const struct metrics *test);

/* Monotonic seconds. */
double progress_now(void);

#endif
