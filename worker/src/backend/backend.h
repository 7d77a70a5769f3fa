/* backend.h - the compute backend: where one worker's training step runs.
 *
 * The training loop (trainer.c) owns the host copy of the training state,
 * the model's parameters (struct model) and the optimizer's state (struct
 * optimizer): backups, the state sync between workers and the model file
 * read and write those. A backend runs the steps on that state, or on its
 * own copy of it:
 *   cpu   the host copy itself, with OpenBLAS on the compute threads; the
 *         gradients are summed by the communicator in buckets while the
 *         backward pass runs (reducer.h);
 *   cuda  a copy on every GPU of the worker (one replica per GPU, like
 *         MirroredStrategy), cuBLAS and kernels, the gradients summed by
 *         NCCL, or with the ring communicator through host buffers
 *         (cuda/backend_cuda.c).
 * Both keep parameters, gradients and activations in the same contiguous
 * layout (model.h), so a backup written by one resumes on the other.
 *
 * The host copy is taken up when the backend is made (backend_new_*) and
 * after backend_push, and is current again after backend_pull. A backend is
 * made for one formed group of workers: after a lost peer the trainer pulls,
 * frees it, forms the group again and makes a new one.
 */
#ifndef MWJ_BACKEND_H
#define MWJ_BACKEND_H

#include <stdint.h>

#include "comm.h"
#include "dataset.h"
#include "loss.h"
#include "metrics.h"
#include "model.h"
#include "optimizer.h"

/* One step's inputs. */
struct backend_step {
	uint64_t pos;      /* stream position of this worker's first example */
	uint64_t next_pos; /* the same for the next step, which may be gathered ahead */
	float scale;       /* 1 / global batch: the loss is the global batch's mean */
	int notice;        /* this worker has a preemption notice */
};

/* One step's results, summed over every worker. */
struct step_sums {
	struct metrics m; /* over the global batch */
	double notices;   /* workers with a preemption notice */
};

struct backend;

struct backend_ops {
	const char *name;
	int (*step)(struct backend *b, const struct backend_step *s, struct step_sums *out,
	            char *err);
	void (*evaluate)(struct backend *b, const float *x, const float *y, int n,
	                 struct metrics *sums);
	void (*pull)(struct backend *b);
	void (*push)(struct backend *b);
	void (*free)(struct backend *b);
};

struct backend {
	const struct backend_ops *ops;
	struct model *model;           /* the host copy, borrowed */
	const struct loss_spec *loss;  /* borrowed */
	struct optimizer *opt;         /* borrowed; NULL to evaluate only */
	struct comm *comm;             /* borrowed; NULL to evaluate only */
	struct dataset_stream *stream; /* borrowed; NULL to evaluate only */
	int batch;                     /* this worker's examples per step */
	void *impl;
};

/* Making one
 * backend_new_cpu: on the host copy itself. opt, comm and stream may be
 * NULL for a backend that only evaluates. Never fails.
 * backend_new_cuda: replicas GPUs (devices 0..replicas-1), each holding a
 * copy of the state and a share of each batch; collective_ms is how long a
 * step may wait for the other workers before it counts as a lost peer.
 * Returns NULL with a message in err when the batch cannot be shared or, in
 * a CPU-only build, always. CUDA errors are fatal (cuda/cuda_check.h).
 * Both keep pointers to everything they are given; free with backend_free
 * (NULL accepted). */
struct backend *backend_new_cpu(struct model *m, const struct loss_spec *loss, struct optimizer *o,
                                struct comm *c, struct dataset_stream *s, int batch);
struct backend *backend_new_cuda(struct model *m, const struct loss_spec *loss, struct optimizer *o,
                                 struct comm *c, struct dataset_stream *s, int batch, int replicas,
                                 int collective_ms, char *err);

/* Whether the CUDA backend trains m (built from km, which names its
 * layers in messages; may be NULL) with loss on replicas GPUs of this
 * worker among workers: 0, or -1 with what it lacks in err, naming the
 * layer (always -1 in a CPU-only build). It trains every layer, loss and
 * metric the CPU does, on IDX and NumPy data, except batch normalisation
 * with synchronized: true over more than one replica in all. */
int backend_cuda_supports(const struct model *m, const struct keras_model *km,
                          const struct loss_spec *loss, int replicas, int workers, char *err);
void backend_free(struct backend *b);

/* A training step: this worker's batch at s->pos, forward, loss scaled by
 * s->scale, backward, the gradients summed across every worker, the
 * optimizer's update. Returns 0 with out filled, or -1 with a message in
 * err when a collective failed (a lost peer or a time-out): the update was
 * not applied, so the state is that of the step before, and the caller
 * forms the group again. */
int backend_step(struct backend *b, const struct backend_step *s, struct step_sums *out, char *err);

/* Forward pass only (inference: no dropout, the moving statistics), over
 * n <= batch examples x (n, in_len), y (n, T): adds the summed loss, the
 * count and the metrics' sums to sums. */
void backend_evaluate(struct backend *b, const float *x, const float *y, int n,
                      struct metrics *sums);

/* backend_pull: makes the host copy current (parameters, optimizer state).
 * backend_push: takes up the host copy after the caller changed it.
 * Both accept NULL (no backend yet: the host copy is the state). */
void backend_pull(struct backend *b);
void backend_push(struct backend *b);

const char *backend_name(const struct backend *b);

#endif
