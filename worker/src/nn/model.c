/* model.c - the model's buffers, and its forward and backward passes. */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activation.h"
#include "batchnorm.h"
#include "dense.h"
#include "dropout.h"
#include "err.h"
#include "model_plan.h"
#include "tensor_mem.h"

enum keras_activation model_output_activation(const struct keras_model *km)
{
	for (int i = km->nlayers - 1; i >= 0; i--) {
		const struct keras_layer *k = &km->layers[i];
		if (k->kind == KERAS_FLATTEN || k->kind == KERAS_RESHAPE)
			return KERAS_ACT_LINEAR; /* a new tensor: Keras' logits are gone */
		if (k->kind != KERAS_DENSE && k->kind != KERAS_CONV2D &&
		    k->kind != KERAS_ACTIVATION)
			return KERAS_ACT_LINEAR;
		if (k->act.kind == KERAS_ACT_SOFTMAX || k->act.kind == KERAS_ACT_SIGMOID)
			return k->act.kind;
		return KERAS_ACT_LINEAR;
	}
	return KERAS_ACT_LINEAR;
}

void model_loss_reads(const struct keras_model *km, const struct loss_config *c, int *spec_logits,
                      int *output_logits)
{
	enum keras_activation last = model_output_activation(km);
	int categorical = c->kind == LOSS_SPARSE_CATEGORICAL_CROSSENTROPY ||
	                  c->kind == LOSS_CATEGORICAL_CROSSENTROPY;
	int crossentropy = categorical || c->kind == LOSS_BINARY_CROSSENTROPY;
	/* Keras' softmax and sigmoid both leave their input on their output
	 * (_keras_logits), and _get_logits takes it whichever the loss is. */
	int logits_kept = crossentropy && last != KERAS_ACT_LINEAR;

	*output_logits = logits_kept;
	*spec_logits = logits_kept || (crossentropy && c->from_logits);
}

/* Whether a layer computes into pre and then its activation into out:
 * every activation but none and ReLU (whose backward reads its output),
 * and the last layer's when the loss reads its input; a last Activation
 * layer whose input the loss reads copies that input there. */
static int keeps_pre(const struct model *m, int i)
{
	const struct layer *l = &m->layers[i];

	if (l->kind == LAYER_ACTIVATION)
		return i == m->nlayers - 1 && m->output_logits;
	if (l->kind != LAYER_CONV2D && l->kind != LAYER_DENSE)
		return 0;
	if (i == m->nlayers - 1 && m->output_logits)
		return l->act.kind != KERAS_ACT_LINEAR;
	return l->act.kind != KERAS_ACT_LINEAR && l->act.kind != KERAS_ACT_RELU;
}

/* Carves the activation buffer: each layer's output and scratch, the
 * logits' gradient and two ping-pong buffers for the gradients between
 * layers. With base NULL it only counts. */
static size_t carve_acts(struct model *m, float *base)
{
	size_t off = 0, B = (size_t)m->max_batch, widest = m->out_len;

#define TAKE(ptr, n)                                                                               \
	do {                                                                                       \
		(ptr) = base ? base + off : NULL;                                                  \
		off += (n);                                                                        \
	} while (0)
	for (int i = 0; i < m->nlayers; i++) {
		struct layer *l = &m->layers[i];
		l->pre = l->cols = l->dcols = l->mean = l->invstd = NULL;
		TAKE(l->out, B * l->out_len);
		if (keeps_pre(m, i))
			TAKE(l->pre, B * l->out_len);
		if (l->kind == LAYER_CONV2D) {
			size_t cols = (size_t)conv_geom_cols_len(&l->conv, (int)B);
			TAKE(l->cols, cols);
			if (i > 0)
				TAKE(l->dcols, cols);
		}
		if (l->kind == LAYER_BATCHNORM) {
			TAKE(l->mean, (size_t)l->in_c);
			TAKE(l->invstd, (size_t)l->in_c);
		}
		if (l->out_len > widest)
			widest = l->out_len;
		if (i > 0 && l->in_len > widest)
			widest = l->in_len;
	}
	TAKE(m->dlogits, B * m->out_len);
	TAKE(m->dbuf[0], B * widest);
	TAKE(m->dbuf[1], B * widest);
#undef TAKE
	return off;
}

/* The model km builds, its layers planned and its size checked, but
 * without buffers: a struct to free(), or NULL with a message. */
static struct model *plan(const struct keras_model *km, int max_batch, int output_logits, char *err)
{
	struct model *m;

	if (max_batch < 1) {
		err_set(err, "model '%s': batch %d", km->name, max_batch);
		return NULL;
	}
	m = xcalloc(1, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", km->name);
	m->max_batch = max_batch;
	m->output_logits = output_logits;
	if (model_plan_layers(m, km, err) < 0) {
		err_prefix(err, "model '%s'", km->name);
		free(m);
		return NULL;
	}
	if (output_logits && m->layers[m->nlayers - 1].act.kind == KERAS_ACT_LINEAR)
		m->output_logits = 0;
	m->nacts = carve_acts(m, NULL);
	double bytes =
	    (2.0 * (double)m->nparams + (double)m->nstats + (double)m->nstate + (double)m->nacts) *
	    sizeof(float);
	/* Refused before anything is allocated: over the cap of a model, or
	 * over what this process may take (a container's limit), where the
	 * allocation would fail or the kernel kill it. */
	double cap = (double)MODEL_MAX_BYTES, here = (double)tensor_mem_limit();
	if (bytes > cap || bytes > here) {
		err_set(err, "model '%s' at batch %d needs %.1f GiB, over the %.1f GiB %s",
		        km->name, max_batch, bytes / (1 << 30),
		        (here < cap ? here : cap) / (1 << 30),
		        here < cap ? "this process may use" : "a model may take");
		free(m);
		return NULL;
	}
	return m;
}

int model_plan(const struct keras_model *km, int max_batch, int output_logits,
               struct model_size *out, char *err)
{
	struct model *m = plan(km, max_batch, output_logits, err);

	if (!m)
		return -1;
	*out = (struct model_size){m->nparams, m->nstate, m->arch_hash,
	                           (2 * m->nparams + m->nstats + m->nstate + m->nacts) *
	                               sizeof(float)};
	free(m);
	return 0;
}

struct model *model_new(const struct keras_model *km, int max_batch, int output_logits, char *err)
{
	struct model *m = plan(km, max_batch, output_logits, err);

	if (!m)
		return NULL;
	m->params = tensor_alloc(m->nparams);
	m->grads = tensor_alloc(m->nparams + m->nstats);
	m->state = tensor_alloc(m->nstate);
	m->acts = tensor_alloc(m->nacts);
	carve_acts(m, m->acts);
	size_t nsums = 0;
	for (int i = 0; i < m->nlayers; i++)
		if (m->layers[i].synchronized)
			nsums += 4 * (size_t)m->layers[i].in_c + 1;
	if (nsums) {
		m->sync_sums = xcalloc(nsums, sizeof(double));
		nsums = 0;
		for (int i = 0; i < m->nlayers; i++) {
			struct layer *l = &m->layers[i];
			if (l->synchronized) {
				l->sums = m->sync_sums + nsums;
				nsums += 4 * (size_t)l->in_c + 1;
			}
		}
	}
	return m;
}

void model_free(struct model *m)
{
	if (!m)
		return;
	tensor_free(m->params);
	tensor_free(m->grads);
	tensor_free(m->state);
	tensor_free(m->acts);
	free(m->sync_sums);
	free(m);
}

/* --- The forward pass --- */

/* Rows of the last axis a layer's output has in a batch of B. */
static size_t rows_of(const struct layer *l, int B)
{
	return (size_t)B * (size_t)l->out_h * (size_t)l->out_w;
}

/* The activation of a conv or dense layer, from pre (when kept) into out. */
static void activate(const struct layer *l, int B)
{
	if (l->pre)
		act_forward(l->out, l->pre, rows_of(l, B), (size_t)l->out_c, &l->act);
}

/* Whether layer l computes over the global batch in this pass. */
static int synchronized(const struct model *m, const struct layer *l)
{
	return l->synchronized && m->pass.training && m->pass.sync;
}

static void batchnorm_forward(struct model *m, struct layer *l, const float *in, int B)
{
	const float *gamma = l->scale ? m->params + l->w_off : NULL;
	const float *beta = l->center ? m->params + l->b_off : NULL;
	size_t N = (size_t)B * l->in_h * l->in_w;
	int C = l->in_c;

	if (!m->pass.training) {
		batchnorm_forward_infer(l->out, in, gamma, beta, m->state + l->s_off,
		                        m->state + l->s_off + C, N, C, l->epsilon);
		return;
	}
	float *stats = m->grads + m->nparams + l->st_off;
	if (synchronized(m, l)) {
		/* The global batch's statistics; they stay in the sums for
		 * model_update_state, and the slot the all-reduce sums is
		 * unused. */
		double *sums = l->sums;
		batchnorm_stat_sums(sums, in, N, C);
		sums[2 * (size_t)C] = (double)N;
		if (m->pass.sync->sum(m->pass.sync->ctx, sums, 2 * (size_t)C + 1) < 0) {
			batchnorm_stat_sums(sums, in, N, C); /* a lost step */
			sums[2 * (size_t)C] = (double)N;
		}
		batchnorm_stats(l->mean, NULL, l->invstd, sums, sums[2 * (size_t)C], C, l->epsilon);
		batchnorm_normalize(l->out, in, l->mean, l->invstd, gamma, beta, N, C);
		memset(stats, 0, 2 * (size_t)C * sizeof(float));
		return;
	}
	/* The batch's mean and variance also go where the gradients'
	 * all-reduce sums them (model.h). */
	batchnorm_forward_train(l->out, l->mean, stats + C, l->invstd, in, gamma, beta, N, C,
	                        l->epsilon);
	memcpy(stats, l->mean, (size_t)C * sizeof(float));
}

static void layer_forward(struct model *m, struct layer *l, const float *in, int B)
{
	const float *w = m->params + l->w_off;
	const float *b = l->b_len ? m->params + l->b_off : NULL;
	float *dst = l->pre ? l->pre : l->out;

	switch (l->kind) {
	case LAYER_CONV2D:
		conv_forward_geom(dst, l->cols, in, w, B, &l->conv, l->relu && !l->pre);
		activate(l, B);
		break;
	case LAYER_DENSE:
		dense_forward(dst, in, w, b, (int)rows_of(l, B), l->units_in, l->out_c);
		if (l->relu && !l->pre)
			relu_forward(dst, (size_t)B * l->out_len);
		activate(l, B);
		break;
	case LAYER_MAXPOOL2:
		maxpool_forward(l->out, in, B, l->in_h, l->in_w, l->in_c);
		break;
	case LAYER_MAXPOOL:
		maxpool_forward_geom(l->out, in, B, &l->pool);
		break;
	case LAYER_AVGPOOL:
		avgpool_forward_geom(l->out, in, B, &l->pool);
		break;
	case LAYER_GLOBAL_AVGPOOL:
		global_avgpool_forward(l->out, in, B, l->in_h * l->in_w, l->in_c);
		break;
	case LAYER_DROPOUT:
		if (m->pass.training)
			dropout_forward(l->out, in, B, l->in_len, l->key, m->pass.pos, l->rate);
		else
			memcpy(l->out, in, (size_t)B * l->in_len * sizeof(float));
		break;
	case LAYER_ACTIVATION:
		if (l->pre) /* the loss reads it: model_logits */
			memcpy(l->pre, in, (size_t)B * l->in_len * sizeof(float));
		act_forward(l->out, in, rows_of(l, B), (size_t)l->out_c, &l->act);
		break;
	case LAYER_BATCHNORM:
		batchnorm_forward(m, l, in, B);
		break;
	}
}

void model_forward(struct model *m, const float *x, int B, const struct model_pass *pass)
{
	const float *in = x;

	m->pass = pass ? *pass : (struct model_pass){0, 0, NULL};
	for (int i = 0; i < m->nlayers; i++) {
		struct layer *l = &m->layers[i];
		layer_forward(m, l, in, B);
		in = l->out;
	}
}

const float *model_logits(const struct model *m)
{
	const struct layer *l = &m->layers[m->nlayers - 1];

	return m->output_logits && l->pre ? l->pre : l->out;
}

const float *model_outputs(const struct model *m)
{
	return m->layers[m->nlayers - 1].out;
}

/* --- The backward pass --- */

/* Whether layer i, computing the gradient of its input, can also apply the
 * backward pass of the ReLU that produced that input, saving a pass. */
static int absorbs_input_relu(const struct model *m, int i)
{
	return i > 0 && m->layers[i - 1].relu && !m->layers[i - 1].pre &&
	       (m->layers[i].kind == LAYER_DENSE || m->layers[i].kind == LAYER_MAXPOOL2);
}

/* The gradient of a conv or dense layer's output, dout, into that of its
 * activation's input, in place; nothing where the loss gave it already
 * (the last layer's logits) or the next layer applied the ReLU. */
static void activation_backward(const struct model *m, int i, float *dout, int B, int relu_done)
{
	const struct layer *l = &m->layers[i];

	if (i == m->nlayers - 1 && m->output_logits)
		return;
	if (l->relu && !relu_done)
		relu_backward(dout, l->out, (size_t)B * l->out_len);
	else if (l->pre)
		act_backward(dout, dout, l->out, l->pre, rows_of(l, B), (size_t)l->out_c, &l->act);
}

static void report(grad_ready_fn on_grads, void *ctx, size_t off, size_t n)
{
	if (on_grads && n) {
		struct grad_slice s = {off, 1, n, n};
		on_grads(ctx, &s);
	}
}

struct backward_step {
	struct model *m;
	int B, zeroed;
	grad_ready_fn on_grads;
	void *ctx;
};

/* A synchronized batch normalisation's backward pass: its parameters'
 * gradients from this worker's rows (the gradients' all-reduce adds the
 * workers'), reported before the sums its input gradient needs travel,
 * which then come from the global batch, as in the forward pass. */
static void batchnorm_sync_backward(const struct backward_step *st, struct layer *l, float *din,
                                    const float *dout, const float *in, size_t N)
{
	struct model *m = st->m;
	int C = l->in_c;
	double *rows = l->sums + 2 * (size_t)C, *sums = rows + 1;
	const struct model_sync *sync = m->pass.sync;

	batchnorm_grad_sums(sums, dout, in, l->mean, l->invstd, N, C);
	batchnorm_param_grads(l->scale ? m->grads + l->w_off : NULL,
	                      l->center ? m->grads + l->b_off : NULL, sums, C);
	report(st->on_grads, st->ctx, l->w_off, l->w_len + l->b_len);
	report(st->on_grads, st->ctx, m->nparams + l->st_off, 2 * (size_t)C);
	if (!din)
		return;
	double count = *rows;
	if (sync->sum(sync->ctx, sums, 2 * (size_t)C) < 0) {
		batchnorm_grad_sums(sums, dout, in, l->mean, l->invstd, N, C); /* a lost step */
		count = (double)N;
	}
	batchnorm_input_grad(din, dout, in, l->mean, l->invstd,
	                     l->scale ? m->params + l->w_off : NULL, sums, count, N, C);
}

/* Layer i's backward pass: its gradients, din when not NULL. */
static void layer_backward(const struct backward_step *st, int i, float *din, const float *dout,
                           const float *in)
{
	struct model *m = st->m;
	struct layer *l = &m->layers[i];
	float *dw = m->grads + l->w_off, *db = l->b_len ? m->grads + l->b_off : NULL;
	const float *w = m->params + l->w_off;
	int B = st->B, flags = absorbs_input_relu(m, i) ? DENSE_MASK_BY_INPUT : 0;
	size_t N = (size_t)B * l->in_h * l->in_w;

	switch (l->kind) {
	case LAYER_CONV2D:
		conv_backward_geom(dw, din, l->dcols, dout, in, l->cols, w, B, &l->conv);
		report(st->on_grads, st->ctx, l->w_off, l->w_len + l->b_len);
		break;
	case LAYER_DENSE:
		/* Reports its slices itself, block by block. */
		dense_backward(dw, db, din, dout, in, w, (int)rows_of(l, B), l->units_in, l->out_c,
		               flags | st->zeroed, st->on_grads, st->ctx, l->w_off);
		break;
	case LAYER_MAXPOOL2:
		if (din)
			maxpool_backward(din, dout, in, l->out, B, l->in_h, l->in_w, l->in_c,
			                 flags != 0);
		break;
	case LAYER_MAXPOOL:
		if (din)
			maxpool_backward_geom(din, dout, in, l->out, B, &l->pool);
		break;
	case LAYER_AVGPOOL:
		if (din)
			avgpool_backward_geom(din, dout, B, &l->pool);
		break;
	case LAYER_GLOBAL_AVGPOOL:
		if (din)
			global_avgpool_backward(din, dout, B, l->in_h * l->in_w, l->in_c);
		break;
	case LAYER_DROPOUT:
		if (din)
			dropout_backward(din, dout, B, l->in_len, l->key, m->pass.pos, l->rate);
		break;
	case LAYER_ACTIVATION:
		if (!din)
			break;
		if (i == m->nlayers - 1 && m->output_logits)
			memcpy(din, dout, (size_t)B * l->in_len * sizeof(float));
		else
			act_backward(din, dout, l->out, in, rows_of(l, B), (size_t)l->out_c,
			             &l->act);
		break;
	case LAYER_BATCHNORM:
		if (synchronized(m, l)) {
			batchnorm_sync_backward(st, l, din, dout, in, N);
			break;
		}
		/* The lowest layer needs no input gradient: the spare buffer
		 * takes it. */
		batchnorm_backward(din ? din : m->dbuf[dout == m->dbuf[0] ? 1 : 0],
		                   l->scale ? dw : NULL, l->center ? m->grads + l->b_off : NULL,
		                   dout, in, l->mean, l->invstd, l->scale ? w : NULL, N, l->in_c);
		report(st->on_grads, st->ctx, l->w_off, l->w_len + l->b_len);
		report(st->on_grads, st->ctx, m->nparams + l->st_off, 2 * (size_t)l->in_c);
		break;
	}
}

void model_backward(struct model *m, const float *x, int B, grad_ready_fn on_grads, void *ctx)
{
	float *dout = m->dlogits;
	int relu_done = 0; /* dout already has this layer's ReLU applied */
	struct backward_step st = {m, B, m->grads_zeroed ? DENSE_DW_ZEROED : 0, on_grads, ctx};

	int lowest = 0; /* below the lowest layer with parameters, nothing to do */
	while (lowest < m->nlayers - 1 && m->layers[lowest].w_len + m->layers[lowest].b_len == 0)
		lowest++;
	m->grads_zeroed = 0;
	for (int i = m->nlayers - 1; i >= lowest; i--) {
		struct layer *l = &m->layers[i];
		const float *in = i > 0 ? m->layers[i - 1].out : x;
		float *din = i > lowest ? (dout == m->dbuf[0] ? m->dbuf[1] : m->dbuf[0]) : NULL;
		if (l->kind == LAYER_CONV2D || l->kind == LAYER_DENSE)
			activation_backward(m, i, dout, B, relu_done);
		layer_backward(&st, i, din, dout, in);
		relu_done = absorbs_input_relu(m, i);
		dout = din;
	}
}

void model_update_state(struct model *m, int world)
{
	for (int i = 0; i < m->nlayers; i++) {
		struct layer *l = &m->layers[i];
		if (l->kind != LAYER_BATCHNORM)
			continue;
		int C = l->in_c;
		float *stats = m->grads + m->nparams + l->st_off;
		/* After the backward pass, mean and invstd are free. */
		float *mean = l->mean, *var = l->invstd;
		if (synchronized(m, l)) {
			/* The global statistics the forward pass used; the slot
			 * in grads is free. */
			batchnorm_stats(mean, stats, var, l->sums, l->sums[2 * (size_t)C], C,
			                l->epsilon);
			batchnorm_update_moving(m->state + l->s_off, m->state + l->s_off + C, mean,
			                        stats, C, l->momentum);
			continue;
		}
		for (int c = 0; c < C; c++) {
			mean[c] = batchnorm_mean_over(stats[c], world);
			var[c] = batchnorm_mean_over(stats[C + c], world);
		}
		batchnorm_update_moving(m->state + l->s_off, m->state + l->s_off + C, mean, var, C,
		                        l->momentum);
	}
}

double model_step_gemm_flops(const struct model *m, int B)
{
	double flops = 0.0;

	for (int i = 0; i < m->nlayers; i++) {
		const struct layer *l = &m->layers[i];
		double fwd, dgrad;
		if (l->kind == LAYER_CONV2D) {
			const struct conv_geom *g = &l->conv;
			struct conv_geom dg = conv_dgrad_geom(g);
			fwd = conv_geom_macs(g, B);
			/* stride 1: the flipped-kernel convolution's own count */
			dgrad = g->SH == 1 && g->SW == 1 ? conv_geom_macs(&dg, B) : fwd;
		} else if (l->kind == LAYER_DENSE) {
			fwd = dgrad = (double)B * l->in_h * l->in_w * l->units_in * l->out_c;
		} else {
			continue;
		}
		/* forward, weight gradient, and the input gradient unless first */
		flops += 2.0 * (2.0 * fwd + (i > 0 ? dgrad : 0.0));
	}
	return flops;
}
