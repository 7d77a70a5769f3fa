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

enum optimizer_kind { OPT_SGD, OPT_ADAM };

struct optimizer {
	enum optimizer_kind kind;
	float lr;
	float momentum;		  /* SGD; 0 disables the velocity slot */
	float beta1, beta2, eps;  /* Adam: Keras' 0.9, 0.999, 1e-7 */
	uint64_t iterations;	  /* steps applied so far */
	size_t n;		  /* parameters */
	int nslots;		  /* state buffers of n floats: 0, 1 or 2 */
	float *state;		  /* (nslots, n) */
};

/* Parses "sgd" or "adam"; -1 if neither. */
int optimizer_parse(const char *name, enum optimizer_kind *out);
const char *optimizer_name(enum optimizer_kind kind);

/* Sets up an optimizer for n parameters with zeroed state; release frees the
 * state (and accepts a zeroed struct). */
void optimizer_init(struct optimizer *o, enum optimizer_kind kind, float lr, float momentum,
		    size_t n);
void optimizer_release(struct optimizer *o);

/* Applies one update: params -= f(grads). The arithmetic is element-wise in a
 * fixed order, so equal inputs give bitwise-equal results on every worker. */
void optimizer_step(struct optimizer *o, float *params, const float *grads);

#endif
