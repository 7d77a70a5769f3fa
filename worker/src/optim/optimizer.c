/* optimizer.c - the update rules of tf.keras.optimizers.SGD and Adam. */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "parallel.h"
#include "simd.h"
#include "tensor_mem.h"

int optimizer_parse(const char *name, enum optimizer_kind *out)
{
	if (strcmp(name, "sgd") == 0)
		*out = OPT_SGD;
	else if (strcmp(name, "adam") == 0)
		*out = OPT_ADAM;
	else
		return -1;
	return 0;
}

const char *optimizer_name(enum optimizer_kind kind)
{
	return kind == OPT_ADAM ? "adam" : "sgd";
}

void optimizer_init(struct optimizer *o, enum optimizer_kind kind, float lr, float momentum,
                    size_t n)
{
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->lr = lr;
	o->momentum = momentum;
	o->beta1 = 0.9f;
	o->beta2 = 0.999f;
	o->eps = 1e-7f;
	o->n = n;
	o->nslots = kind == OPT_ADAM ? 2 : momentum > 0.0f ? 1 : 0;
	if (o->nslots)
		o->state = tensor_alloc((size_t)o->nslots * n);
}

void optimizer_release(struct optimizer *o)
{
	tensor_free(o->state);
	o->state = NULL;
}

/* Each rule reads g once and leaves it zero (optimizer.h). */
SIMD_CLONES
static void sgd(float *restrict w, float *restrict g, size_t n, float lr)
{
	for (size_t i = 0; i < n; i++) {
		w[i] -= lr * g[i];
		g[i] = 0.0f;
	}
}

/* Keras: v = momentum * v - lr * g; w += v. */
SIMD_CLONES
static void sgd_momentum(float *restrict w, float *restrict v, float *restrict g, size_t n,
                         float lr, float momentum)
{
	for (size_t i = 0; i < n; i++) {
		v[i] = momentum * v[i] - lr * g[i];
		w[i] += v[i];
		g[i] = 0.0f;
	}
}

/* Keras: m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2);
 * w -= alpha * m / (sqrt(v) + eps), alpha = lr sqrt(1 - b2^t) / (1 - b1^t). */
SIMD_CLONES
static void adam(float *restrict w, float *restrict m, float *restrict v, float *restrict g,
                 size_t n, float alpha, float b1, float b2, float eps)
{
	for (size_t i = 0; i < n; i++) {
		m[i] += (g[i] - m[i]) * (1.0f - b1);
		v[i] += (g[i] * g[i] - v[i]) * (1.0f - b2);
		w[i] -= alpha * m[i] / (sqrtf(v[i]) + eps);
		g[i] = 0.0f;
	}
}

void optimizer_begin_step(struct optimizer *o)
{
	o->iterations++;
	if (o->kind == OPT_ADAM) {
		double t = (double)o->iterations;
		o->alpha = (float)(o->lr * sqrt(1.0 - pow(o->beta2, t)) / (1.0 - pow(o->beta1, t)));
	}
}

void optimizer_apply(struct optimizer *o, float *params, float *grads, size_t off, size_t len)
{
	float *w = params + off;
	float *g = grads + off;

	switch (o->kind) {
	case OPT_SGD:
		if (o->nslots)
			sgd_momentum(w, o->state + off, g, len, o->lr, o->momentum);
		else
			sgd(w, g, len, o->lr);
		break;
	case OPT_ADAM:
		adam(w, o->state + off, o->state + o->n + off, g, len, o->alpha, o->beta1, o->beta2,
		     o->eps);
		break;
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
