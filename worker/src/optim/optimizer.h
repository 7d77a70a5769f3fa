/* optimizer.h - the optimizers of Keras 3, with its update rules, defaults
 * and state: SGD (momentum, Nesterov), Adam, AdamW, Adagrad and RMSprop
 * (momentum, centered).
 *
 * The rules are keras/src/optimizers/<name>.py's update_step, operation
 * for operation in float32, with the hyper-parameters rounded to float as
 * Keras casts its Python floats (1 - beta_1 is taken in double first, as
 * Python does, then rounded). Two things Keras does in the base class come
 * with them (base_optimizer.py):
 *   - weight decay, for every kind: before the rule, every parameter
 *     (biases too: nothing is excluded) becomes w - w * wd * lr, with the
 *     same learning rate as the rule; AdamW is Adam with a decay of 0.004
 *     by default, the others have none (Keras' None is 0 here);
 *   - iterations counts the updates begun, and Adam's bias corrections take
 *     t = iterations after optimizer_begin_step (Keras' iterations + 1
 *     during the update). Adam's step size alpha is computed there once per
 *     step, in double and then rounded, where Keras takes the powers in
 *     float32: the same value to within an ulp or two.
 *
 * The state is nslots buffers of n floats, one allocation, in Keras' order
 * of the optimizer's variables, so that backups and the state sync carry it
 * as a whole:
 *   SGD       momentum (only with momentum > 0)
 *   Adam(W)   momentum (first moment), velocity (second moment)
 *   Adagrad   accumulator, starting at initial_accumulator_value
 *   RMSprop   velocity, then momentum (only with momentum > 0), then
 *             average_gradient (only if centered)
 */
#ifndef MWJ_OPTIMIZER_H
#define MWJ_OPTIMIZER_H

#include <stddef.h>
#include <stdint.h>

#include "grad_slice.h"

enum optimizer_kind { OPT_SGD, OPT_ADAM, OPT_ADAMW, OPT_ADAGRAD, OPT_RMSPROP };

/* The most state slots any configuration needs (centered RMSprop with
 * momentum). */
#define OPTIMIZER_MAX_SLOTS 3

/* An optimizer's hyper-parameters, with Keras 3's names and, from
 * optimizer_config_defaults, Keras 3's defaults for the kind. A field
 * applies to the kinds named beside it and is ignored by the others. */
struct optimizer_config {
	enum optimizer_kind kind;
	double learning_rate;             /* all */
	double momentum;                  /* SGD, RMSprop; 0: no momentum slot */
	int nesterov;                     /* SGD */
	double beta_1, beta_2;            /* Adam, AdamW */
	double epsilon;                   /* Adam, AdamW, Adagrad, RMSprop */
	double weight_decay;              /* all (w -= w * wd * lr before the rule); 0: off */
	double initial_accumulator_value; /* Adagrad */
	double rho;                       /* RMSprop */
	int centered;                     /* RMSprop */
};

struct optimizer {
	enum optimizer_kind kind;
	float lr;
	float momentum;          /* SGD, RMSprop; 0 disables the momentum slot */
	int nesterov;            /* SGD */
	float beta1, beta2, eps; /* Adam: Keras' 0.9, 0.999, 1e-7; eps also Adagrad, RMSprop */
	float one_minus_beta1, one_minus_beta2; /* Adam: 1 - beta, rounded from double */
	float rho, one_minus_rho;               /* RMSprop */
	int centered;                           /* RMSprop */
	float weight_decay;                     /* all; 0: off */
	float initial_accumulator_value;        /* Adagrad */
	uint64_t iterations;                    /* steps begun so far */
	float alpha;                            /* Adam: the step size of the current iteration */
	size_t n;                               /* parameters */
	int nslots;   /* state buffers of n floats: 0 to OPTIMIZER_MAX_SLOTS */
	float *state; /* (nslots, n), in the order above */
};

/* --- Configurations --- */

/* Sets every field of c to Keras 3's defaults for kind (the fields of
 * other kinds to 0). SGD's learning rate is Keras' 0.01: mwj's
 * --learning-rate default of 0.001 is the caller's business. */
void optimizer_config_defaults(struct optimizer_config *c, enum optimizer_kind kind);

/* 0 if c can be used; else -1 and why in err (ERR_LEN): a value that is not
 * finite, or out of the range Keras allows (momentum in [0, 1],
 * initial_accumulator_value >= 0) or in which the rule means nothing
 * (learning_rate, epsilon, weight_decay < 0; beta_1, beta_2, rho outside
 * [0, 1)). For configurations from flags or a model file. */
int optimizer_config_check(const struct optimizer_config *c, char *err);

/* The state slots c needs (the layout above). */
int optimizer_config_slots(const struct optimizer_config *c);

/* Parses "sgd", "adam", "adamw", "adagrad" or "rmsprop" (Keras' names in
 * lower case); -1 for anything else. */
int optimizer_parse(const char *name, enum optimizer_kind *out);
/* The name optimizer_parse reads; a static string. */
const char *optimizer_name(enum optimizer_kind kind);

/* --- Lifecycle --- */

/* Sets up an optimizer for n parameters as c says, its state as Keras
 * builds it (zeros, Adagrad's accumulator initial_accumulator_value);
 * c is copied. Dies when out of memory; c is assumed checked. */
void optimizer_init_config(struct optimizer *o, const struct optimizer_config *c, size_t n);
/* optimizer_init_config with Keras' defaults for kind, but lr and, for SGD
 * and RMSprop, momentum. */
void optimizer_init(struct optimizer *o, enum optimizer_kind kind, float lr, float momentum,
                    size_t n);
/* Frees the state; accepts a zeroed struct. */
void optimizer_release(struct optimizer *o);

/* --- Updates --- */

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
