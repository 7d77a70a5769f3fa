/* trainer.h - Model.fit and Model.evaluate for one worker. */
#ifndef MWJ_TRAINER_H
#define MWJ_TRAINER_H

#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "dataset.h"
#include "device.h"
#include "job_key.h"
#include "keras_model.h"
#include "loss.h"
#include "metrics.h"
#include "model.h"
#include "optimizer.h"
#include "tf_config.h"
#include "worker_metrics.h"

#define TRAIN_PATH_LEN 4096
#define VALIDATION_ALL (-1L)
/* trainer_fit's failure that a restart can fix: a peer lost, a rendezvous
 * or collective time-out (exit 75). -1 is permanent (exit 1). */
#define TRAIN_RETRYABLE (-2)
/* trainer_fit stopped at a preemption notice (preempt.h), after the chief
 * wrote a backup at the step every worker agreed on: exit 128 + signal. */
#define TRAIN_PREEMPTED    (-3)
#define TRAIN_JOB_NAME_LEN 256
/* --save-freq epoch: a backup at the end of every epoch. */
#define SAVE_FREQ_EPOCH 0

struct status_report;

struct train_config {
	/* The model: --model's name or path, and the plan read from it
	 * (cli.c reads it, to take its compile config before the flags). */
	char model[TRAIN_PATH_LEN];
	const struct keras_model *km;
	/* The loss and metrics, the file's compile config or the flags'. */
	struct loss_config loss;
	int nmetrics;
	enum metric_kind metrics[LOSS_MAX_METRICS];
	int epochs;
	long steps_per_epoch; /* 0: ceil(examples / batch), one pass */
	int batch_size;
	/* The optimizer, its kind, learning rate and momentum also apart:
	 * the handshake and the backups compare those. */
	struct optimizer_config opt;
	double learning_rate;
	enum optimizer_kind optimizer;
	double momentum;
	uint64_t seed;
	char data_dir[TRAIN_PATH_LEN];  /* IDX files, unless data is set */
	char data[TRAIN_PATH_LEN];      /* NumPy: a .npz or a folder of .npy files */
	float rescale;                  /* DATASET_RESCALE_NONE: the data's default */
	long validation_steps;          /* 0: none; VALIDATION_ALL: the whole test split */
	char model_dir[TRAIN_PATH_LEN]; /* "" : do not save */
	int threads;
	int json;       /* JSON lines on stdout instead of the progress bar */
	long log_every; /* steps between periodic progress lines, 0 = none */
	/* Multi-worker: the cluster (NULL or world 1: train alone), the job's
	 * name for the handshake, and time-outs in seconds. */
	const struct tf_config *cluster;
	char job_name[TRAIN_JOB_NAME_LEN];
	int rendezvous_timeout;
	int collective_timeout;
	/* The job's ring key (NULL or empty: the ring is not authenticated),
	 * and the file it came from, for the log. */
	const struct job_key *job_key;
	char job_secret_file[TRAIN_PATH_LEN];
	/* Backups (checkpoint.h), written by the chief: "" for none. */
	char backup_dir[TRAIN_PATH_LEN];
	long save_freq;   /* steps between backups, or SAVE_FREQ_EPOCH */
	int keep_backups; /* leave them after a successful run */
	/* Where to compute (device.h): --device, --collective, and --gpus (0:
	 * every visible GPU). */
	enum device_kind device;
	enum collective_kind collective;
	int gpus;
	/* Where the run counts what it does (worker_metrics.h): steps,
	 * rendezvous, resynchronizations, all-reduces, backups. NULL: nowhere. */
	struct worker_metrics *worker_metrics;
	/* The chief's reports to the operator (status_report.h), told of each
	 * epoch's end; NULL: none. */
	struct status_report *status_report;
};

/* What a finished run reports: the last epoch's training metrics and, if
 * validation ran, its validation metrics. */
struct train_result {
	struct metrics train, val;
	long global_step;
	double seconds; /* wall time of the last epoch's steps, validation excluded */
};

/* Trains as configured, printing progress on out, and writes the model to
 * model_dir. With a cluster of several workers, each trains on its shard of
 * every global batch (batch_size per worker), gradients and metrics are
 * summed across workers every step, only the chief (rank 0) prints progress
 * and saves, and every worker ends with the same weights. result may be
 * NULL; its metrics are global.
 *
 * With a backup directory, training starts from the newest sound backup in
 * it, at its exact step, and the chief writes backups as save_freq says.
 * When a peer is lost, the survivors form the ring again with its
 * replacement and all go on from the newest state any of them holds.
 *
 * Returns 0; -1 with a message in err for permanent failures (bad data, a
 * loss that is no longer finite, a failed save, a peer that refused this
 * worker's configuration, a backup of another model); TRAIN_RETRYABLE with
 * a message when the ring could not be formed again in time;
 * TRAIN_PREEMPTED after a preemption notice. */
int trainer_fit(const struct train_config *cfg, FILE *out, struct train_result *result, char *err);

/* Runs the backend's model over steps global batches of ds in file order
 * (VALIDATION_ALL: the whole split, the last batch partial) and returns this
 * worker's loss and accuracy sums: of each global batch of batch * world
 * examples, rank takes the batch at rank * batch, so the sums of all ranks
 * cover every example once. x and y are scratch for batch examples. */
struct metrics trainer_evaluate(struct backend *b, const struct dataset *ds, int batch, long steps,
                                int rank, int world, float *x, float *y);

/* Returns the number of global batches of global_batch examples that
 * trainer_evaluate runs for steps. */
long trainer_eval_steps(const struct dataset *ds, long global_batch, long steps);

#endif
