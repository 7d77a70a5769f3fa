/* reducer.h - gradient all-reduce overlapped with the backward pass, the way
 * PyTorch DDP's Reducer does it.
 *
 * The gradient buffer is cut into buckets, last layer first, each about
 * REDUCER_BUCKET_BYTES. A large dense kernel is cut into blocks of input
 * features (strided pieces of the buffer), because that is the order in
 * which the backward pass finishes it. As the backward pass reports slices
 * (grad_slice.h), a communication thread all-reduces each bucket once it is
 * complete, in bucket order. The bucket plan depends only on the model,
 * never on timing or thread counts, so the reduction order, and so the
 * result, is the same on every rank and every run.
 *
 * The caller updates the weights after reducer_finish, on its compute
 * threads, as DDP's optimizer.step() follows backward(): the cores that read
 * the weights in the next forward pass then hold them in cache, which
 * measured faster than updating each bucket on the communication thread.
 *
 * A step also reduces a few doubles (metric sums, flags) first, so they
 * travel while the backward pass runs.
 *
 * With a world of one there is nothing to reduce: each slice goes straight
 * to apply while it is in cache, and no thread is started.
 */
#ifndef MWJ_REDUCER_H
#define MWJ_REDUCER_H

#include <stddef.h>

#include "comm.h"
#include "grad_slice.h"
#include "model.h"

#define REDUCER_BUCKET_BYTES ((size_t)1 << 20)
#define REDUCER_MAX_SMALL    8

/* Applies the update to a slice whose gradients are final: for a world of
 * one only, called from the compute threads during the backward pass. */
typedef void (*reducer_apply_fn)(void *ctx, const struct grad_slice *s);

struct reducer;

/* Plans buckets over m's gradient buffer (buckets of bucket_bytes; 0 means
 * REDUCER_BUCKET_BYTES) and starts the communication thread when the world
 * is larger than one. c and m must outlive the reducer. Returns the reducer,
 * which the caller frees with reducer_free (NULL accepted). */
struct reducer *reducer_new(struct comm *c, struct model *m, size_t bucket_bytes,
                            reducer_apply_fn apply, void *ctx);
void reducer_free(struct reducer *r);

/* Starts a step's reductions: first the nsmall (<= REDUCER_MAX_SMALL)
 * doubles of small, summed in place, then each bucket as it fills. Call
 * before model_backward. */
void reducer_begin(struct reducer *r, double *small, size_t nsmall);

/* The grad_ready_fn to give model_backward, with the reducer as ctx. */
void reducer_grad_ready(void *ctx, const struct grad_slice *s);

/* Waits until every bucket is reduced, and small is summed.
 * Returns 0, or -1 with the communicator's message in err: a lost peer or a
 * time-out, after which the reducer is unusable. */
int reducer_finish(struct reducer *r, char *err);

/* Sums the n doubles of v across the workers now, from the compute
 * thread, in the middle of a pass (synchronized batch normalisation): in
 * the forward pass, before reducer_begin, or in the backward pass, where
 * it travels after the buckets already complete and before the next,
 * which is the same point of the stream on every worker. Every worker
 * must ask for the same sums at the same points. Returns 0 (with a world
 * of one, v is its own sum), or -1 with the communicator's message: a lost
 * peer, after which the step is lost. */
int reducer_sum_now(struct reducer *r, double *v, size_t n, char *err);

/* The number of buckets, for the start-up log. */
int reducer_buckets(const struct reducer *r);

#endif
