/* model_plan.c - from a Keras plan (keras_model.h) to the model's layers:
 * shapes, parameter and state slices, and the architecture string. */
#include "model_plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "hash.h"

/* A per-example shape as the model carries it: rank 1 to 3, and the
 * (h, w, c) that NHWC kernels read, the last axis in c. */
struct shape {
	int rank;
	int h, w, c;
};

static size_t shape_len(const struct shape *s)
{
	return (size_t)s->h * s->w * s->c;
}

/* d holds rank values. */
static struct shape shape_of(int rank, const int *d)
{
	struct shape s = {rank, 1, 1, 1};

	if (rank == 1)
		s.c = d[0];
	else if (rank == 2)
		s.w = d[0], s.c = d[1];
	else
		s.h = d[0], s.w = d[1], s.c = d[2];
	return s;
}

static void shape_str(char *buf, size_t n, const struct shape *s)
{
	if (s->rank == 1)
		snprintf(buf, n, "%d", s->c);
	else if (s->rank == 2)
		snprintf(buf, n, "%dx%d", s->w, s->c);
	else
		snprintf(buf, n, "%dx%dx%d", s->h, s->w, s->c);
}

/* Why a layer of the file does not fit, naming it. */
static int layer_err(char *err, const struct keras_layer *k, const char *what)
{
	return err_set(err, "layer '%s' (%s): %s", k->name, k->class_name, what);
}

/* The activation's words in the architecture string. */
static void act_str(char *buf, size_t n, const struct keras_act *a)
{
	switch (a->kind) {
	case KERAS_ACT_LINEAR:
		buf[0] = '\0';
		break;
	case KERAS_ACT_LEAKY_RELU:
		snprintf(buf, n, " leaky_relu(%g)", (double)a->negative_slope);
		break;
	case KERAS_ACT_GELU:
		snprintf(buf, n, " gelu%s", a->approximate ? "(tanh)" : "");
		break;
	default:
		snprintf(buf, n, " %s", keras_activation_name(a->kind));
		break;
	}
}

struct planner {
	struct model *m;
	struct shape cur;  /* the shape between layers */
	int have_first;    /* a layer has been planned */
	struct shape last; /* the last planned layer's output */
	size_t off, soff, stoff;
	size_t n; /* of desc */
	char *err;
};

static void desc_add(struct planner *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends to the architecture string, which stops at its end. */
static void desc_add(struct planner *p, const char *fmt, ...)
{
	struct model *m = p->m;
	size_t room = sizeof(m->desc) - p->n;
	va_list ap;
	int k;

	va_start(ap, fmt);
	/* clang-analyzer loses va_start across the attribute (operator/src/job.c too).
	 * NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	k = vsnprintf(m->desc + p->n, room, fmt, ap);
	va_end(ap);
	if (k > 0)
		p->n += (size_t)k < room ? (size_t)k : room - 1;
}

/* Says where the next layer's input shape differs from what the last one
 * produced in more than a flattening that a dense layer implies: that
 * Reshape changes what the kernels compute, so it is in the string. */
static void note_reshape(struct planner *p, int dense)
{
	char s[64];

	shape_str(s, sizeof(s), &p->cur);
	if (!p->have_first) {
		struct shape in3 = p->cur;
		in3.rank = 3;
		shape_str(s, sizeof(s), &in3);
		desc_add(p, "input %s", s);
		return;
	}
	if (p->cur.h == p->last.h && p->cur.w == p->last.w && p->cur.c == p->last.c)
		return;
	if (dense && p->cur.rank == 1)
		return; /* a Flatten: "dense N->M" says it */
	desc_add(p, "; reshape %s", s);
}

static struct layer *add_layer(struct planner *p, enum layer_kind kind, int source,
                               const struct shape *out)
{
	struct layer *l = &p->m->layers[p->m->nlayers++];

	memset(l, 0, sizeof(*l));
	l->kind = kind;
	l->source = source;
	l->in_h = p->cur.h, l->in_w = p->cur.w, l->in_c = p->cur.c;
	l->in_len = shape_len(&p->cur);
	l->out_h = out->h, l->out_w = out->w, l->out_c = out->c;
	l->out_len = shape_len(out);
	l->w_off = l->b_off = p->off;
	p->cur = *out;
	p->last = *out;
	p->have_first = 1;
	return l;
}

static void take_params(struct planner *p, struct layer *l, size_t w, size_t b)
{
	l->w_off = p->off;
	l->w_len = w;
	l->b_off = p->off + w;
	l->b_len = b;
	p->off += w + b;
}

static int plan_conv(struct planner *p, const struct keras_layer *k, int i)
{
	struct conv_geom g;
	char a[64], s[160];

	if (p->cur.rank != 3)
		return layer_err(p->err, k, "takes inputs of rank 3 (height, width, channels)");
	if (conv_geom_init(&g, p->cur.h, p->cur.w, p->cur.c, k->kernel[0], k->kernel[1], k->units,
	                   k->strides[0], k->strides[1], k->same, k->use_bias) < 0) {
		snprintf(s, sizeof(s),
		         "a %dx%d kernel does not fit a %dx%d input with \"valid\" padding",
		         k->kernel[0], k->kernel[1], p->cur.h, p->cur.w);
		return layer_err(p->err, k, s);
	}
	note_reshape(p, 0);
	struct shape out = {3, g.OH, g.OW, k->units};
	struct layer *l = add_layer(p, LAYER_CONV2D, i, &out);
	l->conv = g;
	l->kh = g.KH, l->kw = g.KW;
	l->act = k->act;
	l->relu = k->act.kind == KERAS_ACT_RELU;
	take_params(p, l, (size_t)g.KH * g.KW * g.C * g.OC, g.bias ? (size_t)g.OC : 0);
	act_str(a, sizeof(a), &k->act);
	desc_add(p, "; conv2d %dx%dx%d->%d", g.KH, g.KW, g.C, g.OC);
	if (g.SH != 1 || g.SW != 1)
		desc_add(p, " s%dx%d", g.SH, g.SW);
	desc_add(p, "%s%s%s", k->same ? " same" : "", g.bias ? "" : " nobias", a);
	return 0;
}

static int plan_pool(struct planner *p, const struct keras_layer *k, int i)
{
	struct pool_geom g;
	char s[160];
	int max = k->kind == KERAS_MAX_POOLING2D;

	if (p->cur.rank != 3)
		return layer_err(p->err, k, "takes inputs of rank 3 (height, width, channels)");
	if (pool_geom_init(&g, p->cur.h, p->cur.w, p->cur.c, k->kernel[0], k->kernel[1],
	                   k->strides[0], k->strides[1], k->same) < 0) {
		snprintf(s, sizeof(s),
		         "a %dx%d pool does not fit a %dx%d input with \"valid\" padding",
		         k->kernel[0], k->kernel[1], p->cur.h, p->cur.w);
		return layer_err(p->err, k, s);
	}
	note_reshape(p, 0);
	struct shape out = {3, g.OH, g.OW, p->cur.c};
	int seed_shape = max && g.PH == 2 && g.PW == 2 && g.SH == 2 && g.SW == 2 && !k->same;
	struct layer *l = add_layer(p,
	                            seed_shape ? LAYER_MAXPOOL2
	                            : max      ? LAYER_MAXPOOL
	                                       : LAYER_AVGPOOL,
	                            i, &out);
	l->pool = g;
	if (seed_shape) {
		desc_add(p, "; maxpool 2x2");
		return 0;
	}
	desc_add(p, "; %s %dx%d s%dx%d%s", max ? "maxpool" : "avgpool", g.PH, g.PW, g.SH, g.SW,
	         k->same ? " same" : "");
	return 0;
}

static int plan_dense(struct planner *p, const struct keras_layer *k, int i)
{
	char a[64];

	note_reshape(p, 1);
	/* Keras' Dense acts on the last axis: each pixel of a rank-3 input is
	 * a row of its own. */
	struct shape out = p->cur;
	out.c = k->units;
	struct layer *l = add_layer(p, LAYER_DENSE, i, &out);
	l->units_in = l->in_c;
	l->act = k->act;
	l->relu = k->act.kind == KERAS_ACT_RELU;
	take_params(p, l, (size_t)k->units * (size_t)l->in_c, k->use_bias ? (size_t)k->units : 0);
	act_str(a, sizeof(a), &k->act);
	desc_add(p, "; dense %d->%d%s", l->in_c, k->units, k->use_bias ? "" : " nobias");
	if (l->in_h * l->in_w > 1)
		desc_add(p, " over %dx%d", l->in_h, l->in_w);
	desc_add(p, "%s", a);
	return 0;
}

static int plan_reshape(struct planner *p, const struct keras_layer *k)
{
	size_t n = shape_len(&p->cur), known = 1;
	int dims[KERAS_MAX_RANK] = {0}, unknown = -1;
	char s[160];

	if (k->kind == KERAS_FLATTEN) {
		int d = (int)n;
		p->cur = shape_of(1, &d);
		return 0;
	}
	for (int j = 0; j < k->target_rank; j++) {
		dims[j] = k->target[j];
		if (dims[j] == -1)
			unknown = j;
		else
			known *= (size_t)dims[j];
	}
	if (unknown >= 0 && known > 0 && n % known == 0)
		dims[unknown] = (int)(n / known), known = n;
	if (known != n) {
		snprintf(s, sizeof(s), "target_shape holds %zu values per example, its input %zu",
		         known, n);
		return layer_err(p->err, k, s);
	}
	p->cur = shape_of(k->target_rank, dims);
	return 0;
}

static int plan_batchnorm(struct planner *p, const struct keras_layer *k, int i)
{
	note_reshape(p, 0);
	struct shape out = p->cur;
	struct layer *l = add_layer(p, LAYER_BATCHNORM, i, &out);
	size_t C = (size_t)l->in_c;
	l->momentum = k->momentum;
	l->epsilon = (float)k->epsilon;
	l->center = k->center;
	l->scale = k->scale;
	l->synchronized = k->synchronized;
	take_params(p, l, k->scale ? C : 0, k->center ? C : 0);
	l->s_off = p->soff;
	l->s_len = 2 * C;
	p->soff += 2 * C;
	l->st_off = p->stoff;
	p->stoff += 2 * C;
	desc_add(p, "; batchnorm %zu eps=%g momentum=%g%s%s%s", C, k->epsilon, k->momentum,
	         k->scale ? "" : " noscale", k->center ? "" : " nocenter",
	         k->synchronized ? " synchronized" : "");
	return 0;
}

static int plan_layer(struct planner *p, const struct keras_layer *k, int i)
{
	char s[160];
	struct shape out = p->cur;
	struct layer *l;

	switch (k->kind) {
	case KERAS_CONV2D:
		return plan_conv(p, k, i);
	case KERAS_MAX_POOLING2D:
	case KERAS_AVERAGE_POOLING2D:
		return plan_pool(p, k, i);
	case KERAS_DENSE:
		return plan_dense(p, k, i);
	case KERAS_FLATTEN:
	case KERAS_RESHAPE:
		return plan_reshape(p, k);
	case KERAS_BATCH_NORMALIZATION:
		return plan_batchnorm(p, k, i);
	case KERAS_GLOBAL_AVERAGE_POOLING2D:
		if (p->cur.rank != 3)
			return layer_err(p->err, k,
			                 "takes inputs of rank 3 (height, width, channels)");
		note_reshape(p, 0);
		out = (struct shape){k->keepdims ? 3 : 1, 1, 1, p->cur.c};
		add_layer(p, LAYER_GLOBAL_AVGPOOL, i, &out);
		desc_add(p, "; globalavgpool%s", k->keepdims ? " keepdims" : "");
		return 0;
	case KERAS_DROPOUT:
		note_reshape(p, 0);
		l = add_layer(p, LAYER_DROPOUT, i, &out);
		l->rate = k->rate;
		desc_add(p, "; dropout %g", k->rate);
		return 0;
	case KERAS_ACTIVATION:
		note_reshape(p, 0);
		l = add_layer(p, LAYER_ACTIVATION, i, &out);
		l->act = k->act;
		act_str(s, sizeof(s), &k->act);
		desc_add(p, "; activation%s", k->act.kind == KERAS_ACT_LINEAR ? " linear" : s);
		return 0;
	}
	return layer_err(p->err, k, "is not a layer mwj builds");
}

int model_plan_layers(struct model *m, const struct keras_model *km, char *err)
{
	struct planner p = {.m = m, .err = err};

	if (km->in_rank < 1 || km->in_rank > KERAS_MAX_RANK)
		return err_set(err, "the model file gives no input shape (an InputLayer, or "
		                    "batch_input_shape on the first layer)");
	p.cur = shape_of(km->in_rank, km->in_shape);
	m->in_rank = km->in_rank;
	memcpy(m->in_shape, km->in_shape, sizeof(m->in_shape));
	m->in_len = shape_len(&p.cur);
	m->nlayers = 0;
	for (int i = 0; i < km->nlayers; i++) {
		const struct keras_layer *k = &km->layers[i];
		if (k->kind != KERAS_FLATTEN && k->kind != KERAS_RESHAPE && m->nlayers == 0) {
			/* The first layer sees the input as it is reshaped. */
			m->in_h = p.cur.h, m->in_w = p.cur.w, m->in_c = p.cur.c;
		}
		if (plan_layer(&p, k, i) < 0)
			return -1;
	}
	if (m->nlayers == 0)
		return err_set(err, "the model has no layer that computes anything");
	/* A trailing Reshape or Flatten changes nothing the loss reads. */
	m->out_len = shape_len(&p.cur);
	m->nparams = p.off;
	m->nstate = p.soff;
	m->nstats = p.stoff;
	if (p.n + 1 >= sizeof(m->desc))
		return err_set(err, "the model has too many layers to describe (%zu bytes)", p.n);
	m->arch_hash = hash_fnv1a64(HASH_FNV1A64_INIT, m->desc, strlen(m->desc));
	return 0;
}
