/* optimizer.h - SGD (with optional momentum) and Adam, as Keras defines them.
 *
 * The optimizer's state (momentum velocity, or Adam's two moments) is one
 * buffer the size of the parameters per slot, allocated once, so that it can
 * be checkpointed as a whole.
 */
#ifndef MWJ_OPTIMIZER_H
#define MWJ_OPTIMIZER_H

#include <stddef.h>
#include <stdint.h>

#include "grad_slice.h"

enum optimizer_kind { OPT_SGD, OPT_ADAM };

struct optimizer {
	enum optimizer_kind kind;
	float lr;
	float momentum;          /* SGD; 0 disables the velocity slot */
	float beta1, beta2, eps; /* Adam: Keras' 0.9, 0.999, 1e-7 */
	uint64_t iterations;     /* steps begun so far */
	float alpha;             /* Adam: the step size of the current iteration */
	size_t n;                /* parameters */
	int nslots;              /* state buffers of n floats: 0, 1 or 2 */
	float *state;            /* (nslots, n) */
};

/* Parses "sgd" or "adam"; -1 if neither. */
int optimizer_parse(const char *name, enum optimizer_kind *out);
const char *optimizer_name(enum optimizer_kind kind);

/* Sets up an optimizer for n parameters with zeroed state; release frees the
 * state (and accepts a zeroed struct). */
void optimizer_init(struct optimizer *o, enum optimizer_kind kind, float lr, float momentum,
                    size_t n);
void optimizer_release(struct optimizer *o);

/* One update is optimizer_begin_step, then optimizer_apply over slices that
 * together cover every parameter once, in any order: the trainer updates
 * each layer as soon as its gradients are final, while they are still in
 * cache. The arithmetic is element-wise, so equal inputs give bitwise-equal
 * results on every worker, however the slices are cut. optimizer_apply runs
 * on the calling thread and may be called from several compute threads at
 * once for disjoint slices. optimizer_step does both over the whole buffer,
 * shared among the compute threads.
 *
 * Each update consumes its gradients: it leaves them zero, in the same pass
 * that reads them, so that the next backward pass can add to them instead
 * of clearing them first (model.h, grads_zeroed). */
void optimizer_begin_step(struct optimizer *o);
void optimizer_apply(struct optimizer *o, float *params, float *grads, size_t off, size_t len);
void optimizer_apply_slice(struct optimizer *o, float *params, float *grads,
                           const struct grad_slice *s);
void optimizer_step(struct optimizer *o, float *params, float *grads);

#endif
