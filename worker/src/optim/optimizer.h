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

enum optimizer_kind { OPT_SGD, OPT_ADAM, OPT_ADAMW, OPT_ADAGRAD, OPT_RMSPROP };

/* An optimizer's hyper-parameters, with Keras 3's names and, from
 * optimizer_config_defaults, Keras 3's defaults for the kind. A field
 * applies to the kinds named beside it and is ignored by the others. */
struct optimizer_config {
	enum optimizer_kind kind;
	double learning_rate; /* all */
	double momentum;      /* SGD, RMSprop */
	int nesterov;         /* SGD */
	double beta_1, beta_2; /* Adam, AdamW */
	double epsilon;        /* Adam, AdamW, Adagrad, RMSprop */
	double weight_decay;   /* AdamW (decoupled: w -= lr * wd * w before the step) */
	double initial_accumulator_value; /* Adagrad */
	double rho;                       /* RMSprop */
	int centered;                     /* RMSprop */
};

/* Keras 3's defaults for kind (SGD: lr 0.01 in Keras, but mwj's --learning-rate
 * default of 0.001 is the caller's business: this sets Keras' own). */
void optimizer_config_defaults(struct optimizer_config *c, enum optimizer_kind kind);

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
