/* optimizer.c - the update rules of Keras 3's SGD, Adam, AdamW, Adagrad
 * and RMSprop (optimizer.h). cuda/elem.h repeats each rule, operation for
 * operation, for the GPU. */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "parallel.h"
#include "simd.h"
#include "tensor_mem.h"

static const char *const NAMES[] = {
    [OPT_SGD] = "sgd",         [OPT_ADAM] = "adam",       [OPT_ADAMW] = "adamw",
    [OPT_ADAGRAD] = "adagrad", [OPT_RMSPROP] = "rmsprop",
};

#define NKINDS (sizeof(NAMES) / sizeof(NAMES[0]))

int optimizer_parse(const char *name, enum optimizer_kind *out)
{
	for (size_t k = 0; k < NKINDS; k++) {
		if (strcmp(name, NAMES[k]) == 0) {
			*out = (enum optimizer_kind)k;
			return 0;
		}
	}
	return -1;
}

const char *optimizer_name(enum optimizer_kind kind)
{
	return (size_t)kind < NKINDS ? NAMES[kind] : "unknown";
}

/* --- Configurations --- */

/* The constructors' defaults in keras/src/optimizers/<name>.py. */
void optimizer_config_defaults(struct optimizer_config *c, enum optimizer_kind kind)
{
	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->learning_rate = 0.001;
	switch (kind) {
	case OPT_SGD:
		c->learning_rate = 0.01;
		break;
	case OPT_ADAMW:
		c->weight_decay = 0.004;
		/* fall through */
	case OPT_ADAM:
		c->beta_1 = 0.9;
		c->beta_2 = 0.999;
		c->epsilon = 1e-7;
		break;
	case OPT_ADAGRAD:
		c->initial_accumulator_value = 0.1;
		c->epsilon = 1e-7;
		break;
	case OPT_RMSPROP:
		c->rho = 0.9;
		c->epsilon = 1e-7;
		break;
	}
}

/* 0 if lo <= v and v < hi (v <= hi if closed); -1 with why otherwise. */
static int check_range(const struct optimizer_config *c, const char *name, double v, double lo,
                       double hi, int closed, char *err)
{
	if (isfinite(v) && v >= lo && (v < hi || (closed && v == hi)))
		return 0;
	if (isinf(hi))
		return err_set(err, "%s: %s %g is not a number >= %g", optimizer_name(c->kind),
		               name, v, lo);
	return err_set(err, "%s: %s %g is not in [%g, %g%c", optimizer_name(c->kind), name, v, lo,
	               hi, closed ? ']' : ')');
}

int optimizer_config_check(const struct optimizer_config *c, char *err)
{
	const double inf = INFINITY;

	if ((size_t)c->kind >= NKINDS)
		return err_set(err, "optimizer kind %d unknown", (int)c->kind);
	if (check_range(c, "learning_rate", c->learning_rate, 0, inf, 0, err) < 0 ||
	    check_range(c, "weight_decay", c->weight_decay, 0, inf, 0, err) < 0)
		return -1;
	switch (c->kind) {
	case OPT_SGD:
		return check_range(c, "momentum", c->momentum, 0, 1, 1, err);
	case OPT_ADAM:
	case OPT_ADAMW:
		if (check_range(c, "beta_1", c->beta_1, 0, 1, 0, err) < 0 ||
		    check_range(c, "beta_2", c->beta_2, 0, 1, 0, err) < 0)
			return -1;
		break;
	case OPT_ADAGRAD:
		if (check_range(c, "initial_accumulator_value", c->initial_accumulator_value, 0,
		                inf, 0, err) < 0)
			return -1;
		break;
	case OPT_RMSPROP:
		if (check_range(c, "rho", c->rho, 0, 1, 0, err) < 0 ||
		    check_range(c, "momentum", c->momentum, 0, 1, 1, err) < 0)
			return -1;
		break;
	}
	return check_range(c, "epsilon", c->epsilon, 0, inf, 0, err);
}

int optimizer_config_slots(const struct optimizer_config *c)
{
	switch (c->kind) {
	case OPT_SGD:
		return c->momentum > 0 ? 1 : 0;
	case OPT_ADAM:
	case OPT_ADAMW:
		return 2;
	case OPT_ADAGRAD:
		return 1;
	case OPT_RMSPROP:
		return 1 + (c->momentum > 0) + (c->centered != 0);
	}
	return 0;
}

/* --- Lifecycle --- */

void optimizer_init_config(struct optimizer *o, const struct optimizer_config *c, size_t n)
{
	memset(o, 0, sizeof(*o));
	o->kind = c->kind;
	o->lr = (float)c->learning_rate;
	o->momentum = (float)c->momentum;
	o->nesterov = c->nesterov != 0;
	o->beta1 = (float)c->beta_1;
	o->beta2 = (float)c->beta_2;
	/* Keras writes 1 - self.beta_1 with Python floats: the difference is
	 * taken in double and rounded once when it meets the float tensor. */
	o->one_minus_beta1 = (float)(1.0 - c->beta_1);
	o->one_minus_beta2 = (float)(1.0 - c->beta_2);
	o->eps = (float)c->epsilon;
	o->rho = (float)c->rho;
	o->one_minus_rho = (float)(1.0 - c->rho);
	o->centered = c->centered != 0;
	o->weight_decay = (float)c->weight_decay;
	o->initial_accumulator_value = (float)c->initial_accumulator_value;
	o->n = n;
	o->nslots = optimizer_config_slots(c);
	if (o->nslots)
		o->state = tensor_alloc((size_t)o->nslots * n);
	if (o->kind == OPT_ADAGRAD)
		for (size_t i = 0; i < n; i++)
			o->state[i] = o->initial_accumulator_value;
}

void optimizer_init(struct optimizer *o, enum optimizer_kind kind, float lr, float momentum,
                    size_t n)
{
	struct optimizer_config c;

	optimizer_config_defaults(&c, kind);
	c.learning_rate = lr;
	if (kind == OPT_SGD || kind == OPT_RMSPROP)
		c.momentum = momentum;
	optimizer_init_config(o, &c, n);
}

void optimizer_release(struct optimizer *o)
{
	tensor_free(o->state);
	o->state = NULL;
}

/* --- The rules --- */

/* Each rule reads g once and leaves it zero (optimizer.h). The Keras lines
 * are those of update_step, in the order written there. */

/* base_optimizer.py, _apply_weight_decay: variable - variable * wd * lr. */
SIMD_CLONES
static void weight_decay(float *restrict w, size_t n, float lr, float wd)
{
	for (size_t i = 0; i < n; i++)
		w[i] -= w[i] * wd * lr;
}

/* w -= g * lr. */
SIMD_CLONES
static void sgd(float *restrict w, float *restrict g, size_t n, float lr)
{
	for (size_t i = 0; i < n; i++) {
		w[i] -= lr * g[i];
		g[i] = 0.0f;
	}
}

/* m = m * momentum - g * lr; then w += m, or with Nesterov
 * w += m * momentum - g * lr. */
SIMD_CLONES
static void sgd_momentum(float *restrict w, float *restrict v, float *restrict g, size_t n,
                         float lr, float momentum, int nesterov)
{
	for (size_t i = 0; i < n; i++) {
		v[i] = momentum * v[i] - lr * g[i];
		w[i] += nesterov ? momentum * v[i] - lr * g[i] : v[i];
		g[i] = 0.0f;
	}
}

/* m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2); w -= m alpha / (sqrt(v) + eps),
 * alpha = lr sqrt(1 - b2^t) / (1 - b1^t) (optimizer_begin_step). */
SIMD_CLONES
static void adam(float *restrict w, float *restrict m, float *restrict v, float *restrict g,
                 size_t n, float alpha, float c1, float c2, float eps)
{
	for (size_t i = 0; i < n; i++) {
		m[i] += (g[i] - m[i]) * c1;
		v[i] += (g[i] * g[i] - v[i]) * c2;
		w[i] -= alpha * m[i] / (sqrtf(v[i]) + eps);
		g[i] = 0.0f;
	}
}

/* acc += g^2; w -= lr g / sqrt(acc + eps). */
SIMD_CLONES
static void adagrad(float *restrict w, float *restrict acc, float *restrict g, size_t n, float lr,
                    float eps)
{
	for (size_t i = 0; i < n; i++) {
		acc[i] += g[i] * g[i];
		w[i] -= lr * g[i] / sqrtf(acc[i] + eps);
		g[i] = 0.0f;
	}
}

struct rmsprop_k {
	float lr, rho, one_minus_rho, momentum, eps;
};

/* v = rho v + (1 - rho) g^2; centered: a = rho a + (1 - rho) g and the
 * denominator v - a^2 + eps, else v + eps; inc = lr g / sqrt(denominator);
 * with momentum mom = momentum mom + inc, w -= mom; else w -= inc. mom and
 * a are NULL where the configuration has no such slot: loop-invariant
 * tests, which the compiler takes out of the loop. */
SIMD_CLONES
static void rmsprop(float *restrict w, float *restrict v, float *restrict mom, float *restrict a,
                    float *restrict g, size_t n, struct rmsprop_k k)
{
	for (size_t i = 0; i < n; i++) {
		v[i] = k.rho * v[i] + k.one_minus_rho * (g[i] * g[i]);
		float den;
		if (a) {
			a[i] = k.rho * a[i] + k.one_minus_rho * g[i];
			den = v[i] - a[i] * a[i] + k.eps;
		} else {
			den = v[i] + k.eps;
		}
		float inc = k.lr * g[i] / sqrtf(den);
		if (mom) {
			mom[i] = k.momentum * mom[i] + inc;
			w[i] -= mom[i];
		} else {
			w[i] -= inc;
		}
		g[i] = 0.0f;
	}
}

/* --- Updates --- */

void optimizer_begin_step(struct optimizer *o)
{
	o->iterations++;
	if (o->kind == OPT_ADAM || o->kind == OPT_ADAMW) {
		double t = (double)o->iterations;
		o->alpha = (float)(o->lr * sqrt(1.0 - pow(o->beta2, t)) / (1.0 - pow(o->beta1, t)));
	}
}

/* Slot k of the state, from parameter off. */
static float *slot(const struct optimizer *o, int k, size_t off)
{
	return o->state + (size_t)k * o->n + off;
}

void optimizer_apply(struct optimizer *o, float *params, float *grads, size_t off, size_t len)
{
	float *w = params + off;
	float *g = grads + off;

	if (o->weight_decay != 0.0f)
		weight_decay(w, len, o->lr, o->weight_decay);
	switch (o->kind) {
	case OPT_SGD:
		if (o->nslots)
			sgd_momentum(w, slot(o, 0, off), g, len, o->lr, o->momentum, o->nesterov);
		else
			sgd(w, g, len, o->lr);
		break;
	case OPT_ADAM:
	case OPT_ADAMW:
		adam(w, slot(o, 0, off), slot(o, 1, off), g, len, o->alpha, o->one_minus_beta1,
		     o->one_minus_beta2, o->eps);
		break;
	case OPT_ADAGRAD:
		adagrad(w, slot(o, 0, off), g, len, o->lr, o->eps);
		break;
	case OPT_RMSPROP: {
		/* velocity, then momentum and average_gradient where present */
		struct rmsprop_k k = {o->lr, o->rho, o->one_minus_rho, o->momentum, o->eps};
		int has_mom = o->momentum > 0.0f;
		float *mom = has_mom ? slot(o, 1, off) : NULL;
		float *a = o->centered ? slot(o, 1 + has_mom, off) : NULL;
		rmsprop(w, slot(o, 0, off), mom, a, g, len, k);
		break;
	}
	}
}

void optimizer_apply_slice(struct optimizer *o, float *params, float *grads,
                           const struct grad_slice *s)
{
	for (size_t r = 0; r < s->rows; r++)
		optimizer_apply(o, params, grads, s->off + r * s->stride, s->cols);
}

struct step_job {
	struct optimizer *o;
	float *params;
	float *grads;
};

static void step_part(void *ctx, int part, int parts)
{
	struct step_job *j = ctx;
	size_t lo, hi;

	parallel_range(j->o->n, part, parts, 16, &lo, &hi);
	optimizer_apply(j->o, j->params, j->grads, lo, hi - lo);
}

void optimizer_step(struct optimizer *o, float *params, float *grads)
{
	struct step_job j = {o, params, grads};

	optimizer_begin_step(o);
	if (o->n < PARALLEL_MIN_ELEMS)
		optimizer_apply(o, params, grads, 0, o->n);
	else
		parallel_run(step_part, &j);
}
