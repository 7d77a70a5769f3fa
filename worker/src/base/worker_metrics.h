/* worker_metrics.h - what a worker counts about its training, for /metrics
 * (metrics_endpoint.h) and for whatever else reads a snapshot of it.
 *
 * One struct per process, which the parts update where they already
 * measure: the trainer after each step, rendezvous and resynchronization;
 * the communicator around each all-reduce (comm.c); the chief's backup
 * writer after each write (backup.c). It sits in base/ so that every room
 * may count into it; it knows nothing of the worker's own types.
 *
 * Two kinds of state:
 *   - counters and histograms that any thread adds to without a lock
 *     (all-reduce time and bytes, backups, resynchronizations, the
 *     durations): a reader may see one a moment older than another;
 *   - the training's position and figures (steps and examples done,
 *     epoch, step, loss, metrics, validation, learning rate, last backup,
 *     the samples-per-second window), changed under a mutex, once per
 *     step, so that worker_metrics_snapshot copies a consistent view: its
 *     step counter, examples and global step always belong to the same
 *     step.
 *
 * Every function accepts m == NULL and then does nothing (a run without
 * metrics, the tests); worker_metrics_snapshot then fills a zeroed view.
 * Times are microseconds of worker_metrics_now_us(), which the callers
 * pass in, so that the window's arithmetic can be tested without waiting.
 */
#ifndef MWJ_WORKER_METRICS_H
#define MWJ_WORKER_METRICS_H

#include <pthread.h>
#include <stdint.h>

#include "histogram.h"

#define WORKER_METRICS_MAX       4   /* compiled metrics kept (nn/metrics.h METRICS_MAX) */
#define WORKER_METRICS_NAME_LEN  48  /* a metric's name, NUL included */
#define WORKER_METRICS_LABEL_LEN 256 /* the job's name, NUL included */
/* samples_per_second covers this long, from samples at most one a slot. */
#define WORKER_METRICS_WINDOW_US (60LL * 1000000)
#define WORKER_METRICS_SLOT_US   (1LL * 1000000)
#define WORKER_METRICS_RING      64     /* > window / slot, with room for late slots */
#define WORKER_METRICS_NONE      (-1LL) /* no backup yet; no estimate */

/* Who this worker is, for the info metric. */
struct worker_metrics_info {
	int rank, world;
	char job[WORKER_METRICS_LABEL_LEN];
	const char *backend;      /* "cpu" or "cuda"; a static string */
	const char *communicator; /* "local", "ring" or "nccl"; a static string */
	int gpus;                 /* GPUs trained on; 0 on the CPU */
	int writes_backups;       /* the chief with --backup-dir */
};

/* What the run will do. */
struct worker_metrics_plan {
	int epochs;
	long steps_per_epoch;
	double learning_rate;
	int nmetrics;                          /* <= WORKER_METRICS_MAX */
	const char *names[WORKER_METRICS_MAX]; /* copied */
};

/* One step done: this worker's share and the whole step's. */
struct worker_metrics_step {
	long long us;         /* the step's wall time */
	long examples;        /* this worker's batch */
	long global_examples; /* the global batch: every worker's */
	int epoch;            /* 1-based */
	long step;            /* of the epoch, 1-based: steps of it done */
	uint64_t global_step; /* steps done since the run began, restored ones included */
	double loss;          /* the epoch's running mean, as the progress line shows */
	double metrics[WORKER_METRICS_MAX];
};

/* A copy of the position and figures, consistent as of one step. */
struct worker_metrics_snapshot {
	struct worker_metrics_info info;
	int have_info;
	/* The plan. */
	int epochs;
	long steps_per_epoch;
	uint64_t total_steps; /* epochs x steps_per_epoch */
	double learning_rate;
	int nmetrics;
	char names[WORKER_METRICS_MAX][WORKER_METRICS_NAME_LEN];
	/* Where training stands. */
	int epoch;            /* 1-based, the one under way (or the last, at the end); 0 before */
	long step;            /* steps of it done */
	uint64_t global_step; /* restored steps included */
	double loss;          /* the epoch's running mean so far; 0 until steps_done > 0 */
	double metrics[WORKER_METRICS_MAX]; /* the same, in the plan's order */
	int have_validation;                /* the last epoch with validation's figures */
	double val_loss, val_metrics[WORKER_METRICS_MAX];
	long long last_backup_step; /* the last backup written; WORKER_METRICS_NONE */
	/* What this process did. */
	uint64_t steps_done;      /* steps this process completed */
	uint64_t examples;        /* examples this worker trained on */
	uint64_t global_examples; /* examples of the global batches of those steps */
	/* Rates over the last WORKER_METRICS_WINDOW_US (less, early on), steps
	 * that did not come counting as none: 0 before the first step. */
	double samples_per_second; /* of the global batch: the job's throughput */
	double seconds_left;       /* steps left at the window's step rate; WORKER_METRICS_NONE */
};

/* The counts after a step, and when it ended. */
struct worker_metrics_sample {
	long long t_us;
	uint64_t steps, global_examples;
};

/* The counts at the end of one slot of the samples-per-second window. */
struct worker_metrics_slot {
	long long slot; /* t_us / WORKER_METRICS_SLOT_US */
	uint64_t steps, global_examples;
};

struct worker_metrics {
	/* Lock-free: any thread adds, any reads. */
	unsigned long long allreduce_bytes, allreduce_us; /* payload summed, time in the calls */
	unsigned long long resyncs, backup_failures;
	unsigned long long backup_bytes; /* the last backup file's size */
	struct histogram step_time, rendezvous_time, resync_time, backup_time;
	/* The rest under mu. */
	pthread_mutex_t mu;
	struct worker_metrics_snapshot s;                     /* rates not filled in */
	struct worker_metrics_slot ring[WORKER_METRICS_RING]; /* contiguous slots */
	int ring_head, ring_len;                              /* oldest at ring_head */
	struct worker_metrics_sample first, last;             /* this process' first step, last */
};

/* --- lifecycle --- */

/* worker_metrics_init: zero counters, nothing known yet.
 * worker_metrics_release: frees the mutex (NULL accepted). */
void worker_metrics_init(struct worker_metrics *m);
void worker_metrics_release(struct worker_metrics *m);

/* Microseconds on the monotonic clock. */
long long worker_metrics_now_us(void);

/* --- what the run is --- */

/* Sets who this worker is (copied). */
void worker_metrics_set_info(struct worker_metrics *m, const struct worker_metrics_info *info);

/* Sets the plan (copied; names cut to WORKER_METRICS_NAME_LEN - 1). */
void worker_metrics_set_plan(struct worker_metrics *m, const struct worker_metrics_plan *p);

/* --- the trainer --- */

/* Training stands at epoch (1-based), step of it and global_step, without
 * a step done: a restored backup, the state of a peer, a new epoch. */
void worker_metrics_position(struct worker_metrics *m, int epoch, long step, uint64_t global_step);

/* Step s is done at now_us: counts it, observes its time, takes its
 * position and figures, and feeds the window. */
void worker_metrics_step(struct worker_metrics *m, const struct worker_metrics_step *s,
                         long long now_us);

/* The epoch's validation: its loss and the plan's metrics, in order. */
void worker_metrics_validation(struct worker_metrics *m, double loss, const double *metrics);

/* The ring formed (at start, or again) after us. */
void worker_metrics_rendezvous(struct worker_metrics *m, long long us);

/* A resynchronization after a lost peer ended, us after it began. */
void worker_metrics_resync(struct worker_metrics *m, long long us);

/* --- the communicator and the backup writer, from their own threads --- */

/* bytes of this worker's buffers were summed across workers in us. */
void worker_metrics_allreduce(struct worker_metrics *m, unsigned long long bytes, long long us);

/* The backup of global step was written (ok) in us, a file of bytes, or
 * failed. */
void worker_metrics_backup(struct worker_metrics *m, uint64_t step, unsigned long long bytes,
                           long long us, int ok);

/* The last backup there is is of global step: one just written
 * (worker_metrics_backup says so itself), or one training starts again
 * from. */
void worker_metrics_last_backup(struct worker_metrics *m, uint64_t step);

/* --- readers --- */

/* Copies the position and figures into out, with the rates as of now_us.
 * Any thread. */
void worker_metrics_snapshot(struct worker_metrics *m, struct worker_metrics_snapshot *out,
                             long long now_us);

#endif
