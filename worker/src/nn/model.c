/* model.c - building, initializing and running the seed models. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activation.h"
#include "conv.h"
#include "dense.h"
#include "err.h"
#include "hash.h"
#include "pool.h"
#include "rng.h"
#include "tensor_mem.h"

#define UNITS_CLASSES (-1) /* a dense layer as wide as the number of classes */

struct layer_spec {
	enum layer_kind kind;
	int units; /* conv filters or dense units */
	int k;     /* conv kernel side */
	int relu;
};

struct model_spec {
	const char *name;
	int nlayers;
	struct layer_spec layers[MODEL_MAX_LAYERS];
};

static const struct model_spec MODEL_SPECS[] = {
    /* The TensorFlow multi-worker tutorial's model. */
    {"cnn",
     3,
     {{LAYER_CONV2D, 32, 3, 1}, {LAYER_DENSE, 128, 0, 1}, {LAYER_DENSE, UNITS_CLASSES, 0, 0}}},
    {"cnn-pool",
     4,
     {{LAYER_CONV2D, 32, 3, 1},
      {LAYER_MAXPOOL2, 0, 0, 0},
      {LAYER_DENSE, 64, 0, 1},
      {LAYER_DENSE, UNITS_CLASSES, 0, 0}}},
};

#define NUM_SPECS (sizeof(MODEL_SPECS) / sizeof(MODEL_SPECS[0]))

const char *model_names(void)
{
	return "cnn, cnn-pool";
}

/* Fills shapes and parameter slices from the spec; -1 if the input is too
 * small for a kernel or pool. */
static int plan_layers(struct model *m, const struct model_spec *spec, char *err)
{
	int h = m->in_h, w = m->in_w, c = m->in_c;
	size_t off = 0;
	int n = snprintf(m->desc, sizeof(m->desc), "input %dx%dx%d", h, w, c);

	for (int i = 0; i < spec->nlayers; i++) {
		const struct layer_spec *s = &spec->layers[i];
		struct layer *l = &m->layers[i];
		int units = s->units == UNITS_CLASSES ? m->classes : s->units;

		l->kind = s->kind;
		l->relu = s->relu;
		l->in_h = h, l->in_w = w, l->in_c = c;
		switch (s->kind) {
		case LAYER_CONV2D:
			if (h < s->k || w < s->k)
				return err_set(err, "input %dx%d is smaller than the %dx%d kernel",
				               h, w, s->k, s->k);
			l->kh = l->kw = s->k;
			l->out_h = h - s->k + 1, l->out_w = w - s->k + 1, l->out_c = units;
			l->w_len = (size_t)s->k * s->k * c * units;
			l->b_len = (size_t)units;
			n += snprintf(m->desc + n, sizeof(m->desc) - n, "; conv2d %dx%dx%d->%d%s",
			              s->k, s->k, c, units, s->relu ? " relu" : "");
			break;
		case LAYER_MAXPOOL2:
			if (h < 2 || w < 2)
				return err_set(err, "input %dx%d is too small to pool", h, w);
			l->out_h = h / 2, l->out_w = w / 2, l->out_c = c;
			n += snprintf(m->desc + n, sizeof(m->desc) - n, "; maxpool 2x2");
			break;
		case LAYER_DENSE:
			l->out_h = l->out_w = 1, l->out_c = units;
			l->w_len = (size_t)units * h * w * c;
			l->b_len = (size_t)units;
			n += snprintf(m->desc + n, sizeof(m->desc) - n, "; dense %d->%d%s",
			              h * w * c, units, s->relu ? " relu" : "");
			break;
		}
		l->in_len = (size_t)l->in_h * l->in_w * l->in_c;
		l->out_len = (size_t)l->out_h * l->out_w * l->out_c;
		l->w_off = off;
		l->b_off = off + l->w_len;
		off += l->w_len + l->b_len;
		h = l->out_h, w = l->out_w, c = l->out_c;
	}
	m->nparams = off;
	return 0;
}

/* Carves the activation buffer: each layer's output and scratch, the logits'
 * gradient and two ping-pong buffers for the gradients between layers. With
 * base NULL it only counts. */
static size_t carve_acts(struct model *m, float *base)
{
	size_t off = 0, B = (size_t)m->max_batch, widest = 0;

	for (int i = 0; i < m->nlayers; i++) {
		struct layer *l = &m->layers[i];
		l->out = base ? base + off : NULL;
		off += B * l->out_len;
		if (l->kind == LAYER_CONV2D) {
			size_t cols = (size_t)conv_cols_len((int)B, l->in_h, l->in_w, l->in_c,
			                                    l->kh, l->kw, l->out_c);
			l->cols = base ? base + off : NULL;
			off += cols;
			l->dcols = NULL;
			if (i > 0) {
				l->dcols = base ? base + off : NULL;
				off += cols;
			}
		}
		if (l->out_len > widest)
			widest = l->out_len;
		if (i > 0 && l->in_len > widest)
			widest = l->in_len;
	}
	m->dlogits = base ? base + off : NULL;
	off += B * m->classes;
	for (int k = 0; k < 2; k++) {
		m->dbuf[k] = base ? base + off : NULL;
		off += B * widest;
	}
	return off;
}

/* The model name builds for such inputs, its layers planned and its size
 * checked, but without buffers: a struct to free(), or NULL with a
 * message. */
static struct model *plan(const char *name, int in_h, int in_w, int in_c, int classes,
                          int max_batch, char *err)
{
	const struct model_spec *spec = NULL;
	struct model *m = NULL;

	for (size_t i = 0; i < NUM_SPECS; i++)
		if (strcmp(MODEL_SPECS[i].name, name) == 0)
			spec = &MODEL_SPECS[i];
	if (!spec) {
		err_set(err, "unknown model '%s' (known: %s)", name, model_names());
		return NULL;
	}
	if (in_h < 1 || in_w < 1 || in_c < 1 || classes < 2 || max_batch < 1) {
		err_set(err, "model '%s': bad shape %dx%dx%d, %d classes, batch %d", name, in_h,
		        in_w, in_c, classes, max_batch);
		return NULL;
	}
	m = xcalloc(1, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", spec->name);
	m->in_h = in_h, m->in_w = in_w, m->in_c = in_c;
	m->classes = classes;
	m->max_batch = max_batch;
	m->nlayers = spec->nlayers;
	if (plan_layers(m, spec, err) < 0) {
		err_prefix(err, "model '%s'", name);
		free(m);
		return NULL;
	}
	m->arch_hash = hash_fnv1a64(HASH_FNV1A64_INIT, m->desc, strlen(m->desc));
	m->nacts = carve_acts(m, NULL);
	double bytes = (2.0 * (double)m->nparams + (double)m->nacts) * sizeof(float);
	if (bytes > (double)MODEL_MAX_BYTES) {
		err_set(err, "model '%s' on %dx%dx%d inputs at batch %d needs %.1f GiB, over %.0f",
		        name, in_h, in_w, in_c, max_batch, bytes / (1 << 30),
		        (double)MODEL_MAX_BYTES / (1 << 30));
		free(m);
		return NULL;
	}
	return m;
}

int model_plan(const char *name, int in_h, int in_w, int in_c, int classes, int max_batch,
               size_t *nparams, uint64_t *arch_hash, char *err)
{
	struct model *m = plan(name, in_h, in_w, in_c, classes, max_batch, err);

	if (!m)
		return -1;
	*nparams = m->nparams;
	*arch_hash = m->arch_hash;
	free(m);
	return 0;
}

struct model *model_new(const char *name, int in_h, int in_w, int in_c, int classes, int max_batch,
                        char *err)
{
	struct model *m = plan(name, in_h, in_w, in_c, classes, max_batch, err);

	if (!m)
		return NULL;
	m->params = tensor_alloc(m->nparams);
	m->grads = tensor_alloc(m->nparams);
	m->acts = tensor_alloc(m->nacts);
	carve_acts(m, m->acts);
	return m;
}

void model_free(struct model *m)
{
	if (!m)
		return;
	tensor_free(m->params);
	tensor_free(m->grads);
	tensor_free(m->acts);
	free(m);
}

void model_init_params(struct model *m, uint64_t seed)
{
	struct rng r;

	rng_init(&r, seed, 0);
	memset(m->params, 0, m->nparams * sizeof(float));
	for (int i = 0; i < m->nlayers; i++) {
		const struct layer *l = &m->layers[i];
		double fan_in, fan_out;
		if (l->w_len == 0)
			continue;
		if (l->kind == LAYER_CONV2D) {
			fan_in = (double)l->kh * l->kw * l->in_c;
			fan_out = (double)l->kh * l->kw * l->out_c;
		} else {
			fan_in = (double)l->in_len;
			fan_out = (double)l->out_c;
		}
		float limit = (float)sqrt(6.0 / (fan_in + fan_out));
		for (size_t j = 0; j < l->w_len; j++)
			m->params[l->w_off + j] = rng_uniform(&r, -limit, limit);
	}
}

void model_forward(struct model *m, const float *x, int B)
{
	const float *in = x;

	for (int i = 0; i < m->nlayers; i++) {
		struct layer *l = &m->layers[i];
		const float *w = m->params + l->w_off, *b = m->params + l->b_off;
		switch (l->kind) {
		case LAYER_CONV2D:
			conv_forward(l->out, l->cols, in, w, B, l->in_h, l->in_w, l->in_c, l->kh,
			             l->kw, l->out_c, l->relu);
			break;
		case LAYER_MAXPOOL2:
			maxpool_forward(l->out, in, B, l->in_h, l->in_w, l->in_c);
			break;
		case LAYER_DENSE:
			dense_forward(l->out, in, w, b, B, (int)l->in_len, l->out_c);
			if (l->relu)
				relu_forward(l->out, (size_t)B * l->out_len);
			break;
		}
		in = l->out;
	}
}

const float *model_logits(const struct model *m)
{
	return m->layers[m->nlayers - 1].out;
}

/* Whether layer i, computing the gradient of its input, can also apply the
 * backward pass of the ReLU that produced that input, saving a pass. */
static int absorbs_input_relu(const struct model *m, int i)
{
	return i > 0 && m->layers[i - 1].relu &&
	       (m->layers[i].kind == LAYER_DENSE || m->layers[i].kind == LAYER_MAXPOOL2);
}

void model_backward(struct model *m, const float *x, int B, grad_ready_fn on_grads, void *ctx)
{
	float *dout = m->dlogits;
	int relu_done = 0; /* dout already has this layer's ReLU applied */
	int zeroed = m->grads_zeroed ? DENSE_DW_ZEROED : 0;

	m->grads_zeroed = 0;
	for (int i = m->nlayers - 1; i >= 0; i--) {
		struct layer *l = &m->layers[i];
		const float *in = i > 0 ? m->layers[i - 1].out : x;
		float *din = i > 0 ? (dout == m->dbuf[0] ? m->dbuf[1] : m->dbuf[0]) : NULL;
		float *dw = m->grads + l->w_off, *db = m->grads + l->b_off;
		const float *w = m->params + l->w_off;
		int absorb = absorbs_input_relu(m, i);

		if (l->relu && !relu_done)
			relu_backward(dout, l->out, (size_t)B * l->out_len);
		switch (l->kind) {
		case LAYER_CONV2D:
			conv_backward(dw, din, l->dcols, dout, in, l->cols, w, B, l->in_h, l->in_w,
			              l->in_c, l->kh, l->kw, l->out_c);
			break;
		case LAYER_MAXPOOL2:
			if (din)
				maxpool_backward(din, dout, in, l->out, B, l->in_h, l->in_w,
				                 l->in_c, absorb);
			break;
		case LAYER_DENSE:
			/* Reports its slices itself, block by block. */
			dense_backward(dw, db, din, dout, in, w, B, (int)l->in_len, l->out_c,
			               (absorb ? DENSE_MASK_BY_INPUT : 0) | zeroed, on_grads, ctx,
			               l->w_off);
			break;
		}
		if (on_grads && l->kind == LAYER_CONV2D) {
			size_t n = l->w_len + l->b_len;
			struct grad_slice s = {l->w_off, 1, n, n};
			on_grads(ctx, &s);
		}
		relu_done = absorb;
		dout = din;
	}
}

double model_step_gemm_flops(const struct model *m, int B)
{
	double flops = 0.0;

	for (int i = 0; i < m->nlayers; i++) {
		const struct layer *l = &m->layers[i];
		double macs;
		if (l->kind == LAYER_CONV2D)
			macs = (double)B * l->out_h * l->out_w * l->out_c * l->kh * l->kw * l->in_c;
		else if (l->kind == LAYER_DENSE)
			macs = (double)B * l->in_len * l->out_c;
		else
			continue;
		/* forward, weight gradient, and the input gradient unless first */
		flops += 2.0 * macs * (i > 0 ? 3 : 2);
	}
	return flops;
}
