/* optimizer.c - the update rules of tf.keras.optimizers.SGD and Adam. */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "simd.h"

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
		o->state = xcalloc((size_t)o->nslots * n, sizeof(float));
}

void optimizer_release(struct optimizer *o)
{
	free(o->state);
	o->state = NULL;
}

SIMD_CLONES
static void sgd(float *restrict w, const float *restrict g, size_t n, float lr)
{
	for (size_t i = 0; i < n; i++)
		w[i] -= lr * g[i];
}

/* Keras: v = momentum * v - lr * g; w += v. */
SIMD_CLONES
static void sgd_momentum(float *restrict w, float *restrict v, const float *restrict g, size_t n,
			 float lr, float momentum)
{
	for (size_t i = 0; i < n; i++) {
		v[i] = momentum * v[i] - lr * g[i];
		w[i] += v[i];
	}
}

/* Keras: m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2);
 * w -= alpha * m / (sqrt(v) + eps), alpha = lr sqrt(1 - b2^t) / (1 - b1^t). */
SIMD_CLONES
static void adam(float *restrict w, float *restrict m, float *restrict v, const float *restrict g,
		 size_t n, float alpha, float b1, float b2, float eps)
{
	for (size_t i = 0; i < n; i++) {
		m[i] += (g[i] - m[i]) * (1.0f - b1);
		v[i] += (g[i] * g[i] - v[i]) * (1.0f - b2);
		w[i] -= alpha * m[i] / (sqrtf(v[i]) + eps);
	}
}

void optimizer_step(struct optimizer *o, float *params, const float *grads)
{
	o->iterations++;
	switch (o->kind) {
	case OPT_SGD:
		if (o->nslots)
			sgd_momentum(params, o->state, grads, o->n, o->lr, o->momentum);
		else
			sgd(params, grads, o->n, o->lr);
		break;
	case OPT_ADAM: {
		double t = (double)o->iterations;
		float alpha = (float)(o->lr * sqrt(1.0 - pow(o->beta2, t)) /
				      (1.0 - pow(o->beta1, t)));
		adam(params, o->state, o->state + o->n, grads, o->n, alpha, o->beta1, o->beta2,
		     o->eps);
		break;
	}
	}
}
