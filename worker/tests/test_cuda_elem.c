/* test_cuda_elem.c - the GPU kernels' arithmetic (cuda/elem.h), run on the
 * CPU over whole tensors and set against the CPU layers: the index
 * arithmetic, the order of every sum and the tie rules of the kernels are
 * checked on every machine, GPU or not. Where the CPU layer does the same
 * arithmetic in the same order the results must be the same bits; where it
 * multiplies through OpenBLAS, to float rounding of a short sum. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "activation.h"
#include "batchnorm.h"
#include "conv.h"
#include "cuda/elem.h"
#include "dataset.h"
#include "dense.h"
#include "dropout.h"
#include "err.h"
#include "loss.h"
#include "optimizer.h"
#include "pool.h"
#include "rng.h"

static float *random_floats(size_t n, uint64_t seed, float lo, float hi)
{
	struct rng r;
	float *p = malloc(n * sizeof(float));

	assert_non_null(p);
	rng_init(&r, seed, 0);
	for (size_t i = 0; i < n; i++)
		p[i] = rng_uniform(&r, lo, hi);
	return p;
}

/* a and b (n) hold the same bits: -0 is not 0, and a NaN equals itself. */
static int same_bits(const float *a, const float *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t x, y;
		memcpy(&x, &a[i], sizeof(x));
		memcpy(&y, &b[i], sizeof(y));
		if (x != y)
			return 0;
	}
	return 1;
}

static void expect_near(const float *a, const float *b, size_t n, float tol)
{
	for (size_t i = 0; i < n; i++)
		if (!(fabsf(a[i] - b[i]) <= tol))
			fail_msg("element %zu: %.9g against %.9g", i, a[i], b[i]);
}

/* The geometries the convolution tests run: the seed models' first layer
 * (the CPU's direct path, which makes no cols), valid and stride 1 with a
 * bias, and same padding, strides and no bias, odd sizes included. */
static const struct {
	int H, W, C, KH, KW, OC, SH, SW, same, bias;
} CONV_CASES[] = {
    {7, 6, 1, 3, 3, 32, 1, 1, 0, 1}, {7, 6, 3, 3, 3, 5, 1, 1, 0, 1}, {6, 7, 3, 3, 2, 4, 1, 1, 0, 1},
    {7, 7, 2, 3, 3, 4, 2, 2, 1, 0},  {8, 5, 3, 4, 3, 3, 2, 1, 1, 1}, {9, 8, 2, 3, 2, 3, 3, 2, 0, 0},
    {5, 6, 1, 5, 5, 2, 1, 2, 1, 0},
};

/* For each geometry: cols as elem_im2col makes them are the transpose of
 * the CPU's, bit for bit; a plain product over them gives conv.c's output
 * (to float rounding: OpenBLAS sums in its own order); and din through
 * elem_col2im from the CPU's own dcols is the CPU's din, bit for bit. */
static void test_im2col_and_col2im_match_the_cpu_for_every_geometry(void **state)
{
	(void)state;
	for (size_t t = 0; t < sizeof(CONV_CASES) / sizeof(CONV_CASES[0]); t++) {
		const int B = 3;
		struct conv_geom g;
		assert_int_equal(conv_geom_init(&g, CONV_CASES[t].H, CONV_CASES[t].W,
		                                CONV_CASES[t].C, CONV_CASES[t].KH, CONV_CASES[t].KW,
		                                CONV_CASES[t].OC, CONV_CASES[t].SH,
		                                CONV_CASES[t].SW, CONV_CASES[t].same,
		                                CONV_CASES[t].bias),
		                 0);
		const int K = g.KH * g.KW * g.C, KC = K + g.bias, OC = g.OC;
		const long M = (long)B * g.OH * g.OW;
		size_t n = (size_t)B * g.H * g.W * g.C, clen = (size_t)conv_geom_cols_len(&g, B);
		int direct = clen == 0;
		float *in = random_floats(n, 1 + t, -1, 1);
		float *wb = random_floats((size_t)KC * OC, 20 + t, -1, 1);
		float *dout = random_floats((size_t)M * OC, 40 + t, -1, 1);
		float *cols = calloc((size_t)KC * M, sizeof(float));
		float *cpu_cols = calloc(clen + 1, sizeof(float));
		float *cpu_dcols = calloc(clen + 1, sizeof(float));
		float *dcols = calloc((size_t)K * M, sizeof(float));
		float *want = calloc((size_t)M * OC, sizeof(float));
		float *got = calloc((size_t)M * OC, sizeof(float));
		float *dwb = calloc((size_t)KC * OC, sizeof(float));
		float *dwant = calloc(n, sizeof(float)), *dgot = calloc(n, sizeof(float));

		for (long i = 0; i < (long)KC * M; i++)
			cols[i] = elem_im2col(in, i, M, &g);
		conv_forward_geom(want, cpu_cols, in, wb, B, &g, 1);
		for (long m = 0; m < M && !direct; m++)
			for (int k = 0; k < KC; k++)
				if (!same_bits(&cols[(long)k * M + m], &cpu_cols[m * KC + k], 1))
					fail_msg("case %zu: cols[%d][%ld] differs", t, k, m);
		for (long m = 0; m < M; m++)
			for (int o = 0; o < OC; o++) {
				float v = 0.0f;
				for (int k = 0; k < KC; k++)
					v += cols[(long)k * M + m] * wb[(long)k * OC + o];
				got[m * OC + o] = v > 0.0f ? v : 0.0f;
			}
		expect_near(got, want, (size_t)M * OC, 1e-5f);

		conv_backward_geom(dwb, dwant, cpu_dcols, dout, in, cpu_cols, wb, B, &g);
		for (int k = 0; k < K; k++)
			for (long m = 0; m < M; m++) {
				float v = 0.0f;
				for (int o = 0; o < OC && direct; o++)
					v += wb[(long)k * OC + o] * dout[m * OC + o];
				dcols[(long)k * M + m] = direct ? v : cpu_dcols[m * K + k];
			}
		for (size_t j = 0; j < n; j++)
			dgot[j] = elem_col2im(dcols, (long)j, M, &g);
		if (direct)
			expect_near(dgot, dwant, n, 1e-5f);
		else if (!same_bits(dgot, dwant, n))
			fail_msg("case %zu: col2im differs from conv.c's", t);
		free(in), free(wb), free(dout), free(cols), free(cpu_cols), free(cpu_dcols);
		free(dcols), free(want), free(got), free(dwb), free(dwant), free(dgot);
	}
}

/* A dense layer's bias gradient, the column sums of dout, as dense.c's:
 * bit for bit. */
static void test_column_sums_give_the_cpus_bias_gradient_bit_for_bit(void **state)
{
	const int R = 97, IN = 5, OUT = 33;
	float *in = random_floats((size_t)R * IN, 60, -1, 1);
	float *w = random_floats((size_t)OUT * IN, 61, -1, 1);
	float *dout = random_floats((size_t)R * OUT, 62, -3, 3);
	float dw[33 * 5], db[33], got[33];
	(void)state;

	dense_backward(dw, db, NULL, dout, in, w, R, IN, OUT, 0, NULL, NULL, 0);
	for (int j = 0; j < OUT; j++)
		got[j] = elem_col_sum(dout, j, R, OUT);
	assert_memory_equal(got, db, sizeof(db));
	free(in), free(w), free(dout);
}

/* Max pooling forward and backward, odd edges, ties and the ReLU mask
 * included: the same bits as pool.c. Inputs drawn from few values make
 * ties common. */
static void test_max_pool_kernels_match_the_cpu_bit_for_bit(void **state)
{
	const int B = 2, H = 7, W = 5, C = 3, OH = H / 2, OW = W / 2;
	size_t n = (size_t)B * H * W * C, no = (size_t)B * OH * OW * C;
	float *in = random_floats(n, 6, -2, 2), *dout = random_floats(no, 7, -1, 1);
	float *want = malloc(sizeof(float) * no), *got = malloc(sizeof(float) * no);
	float *dwant = malloc(sizeof(float) * n), *dgot = malloc(sizeof(float) * n);
	(void)state;

	for (size_t i = 0; i < n; i++)
		in[i] = roundf(in[i]); /* -2 .. 2: many ties */
	maxpool_forward(want, in, B, H, W, C);
	for (size_t o = 0; o < no; o++)
		got[o] = elem_maxpool(in, (long)o, H, W, C);
	assert_memory_equal(got, want, no * sizeof(float));
	for (int mask = 0; mask < 2; mask++) {
		maxpool_backward(dwant, dout, in, want, B, H, W, C, mask);
		for (size_t j = 0; j < n; j++)
			dgot[j] = elem_maxpool_backward(dout, in, want, (long)j, H, W, C, mask);
		assert_memory_equal(dgot, dwant, n * sizeof(float));
	}
	free(in), free(dout), free(want), free(got), free(dwant), free(dgot);
}

/* Pools of any size, stride and padding: overlapping windows, windows
 * that skip pixels, same padding with clipped windows, odd sizes. */
static const struct {
	int H, W, C, PH, PW, SH, SW, same;
} POOL_CASES[] = {
    {7, 5, 3, 2, 2, 2, 2, 1}, {7, 7, 2, 3, 3, 1, 1, 0}, {8, 6, 3, 3, 3, 2, 2, 1},
    {9, 7, 2, 2, 3, 3, 1, 0}, {5, 6, 4, 3, 2, 1, 2, 1}, {6, 6, 1, 1, 1, 2, 2, 0},
};

/* Max and average pooling, forward and backward, for each geometry: the
 * same bits as pool.c, ties (from few distinct inputs) included. */
static void test_pool_kernels_of_any_geometry_match_the_cpu_bit_for_bit(void **state)
{
	(void)state;
	for (size_t t = 0; t < sizeof(POOL_CASES) / sizeof(POOL_CASES[0]); t++) {
		const int B = 2;
		struct pool_geom g;
		assert_int_equal(pool_geom_init(&g, POOL_CASES[t].H, POOL_CASES[t].W,
		                                POOL_CASES[t].C, POOL_CASES[t].PH, POOL_CASES[t].PW,
		                                POOL_CASES[t].SH, POOL_CASES[t].SW,
		                                POOL_CASES[t].same),
		                 0);
		size_t n = (size_t)B * g.H * g.W * g.C, no = (size_t)B * g.OH * g.OW * g.C;
		float *in = random_floats(n, 70 + t, -2, 2),
		      *dout = random_floats(no, 80 + t, -1, 1);
		float *want = malloc(sizeof(float) * no), *got = malloc(sizeof(float) * no);
		float *dwant = malloc(sizeof(float) * n), *dgot = malloc(sizeof(float) * n);
		for (size_t i = 0; i < n; i++)
			in[i] = roundf(in[i]); /* many ties */

		maxpool_forward_geom(want, in, B, &g);
		for (size_t o = 0; o < no; o++)
			got[o] = elem_maxpool_geom(in, (long)o, &g);
		if (!same_bits(got, want, no))
			fail_msg("case %zu: max pool differs", t);
		maxpool_backward_geom(dwant, dout, in, want, B, &g);
		for (size_t j = 0; j < n; j++)
			dgot[j] = elem_maxpool_geom_backward(dout, in, want, (long)j, &g);
		if (!same_bits(dgot, dwant, n))
			fail_msg("case %zu: max pool's gradient differs", t);

		avgpool_forward_geom(want, in, B, &g);
		for (size_t o = 0; o < no; o++)
			got[o] = elem_avgpool(in, (long)o, &g);
		if (!same_bits(got, want, no))
			fail_msg("case %zu: average pool differs", t);
		avgpool_backward_geom(dwant, dout, B, &g);
		for (size_t j = 0; j < n; j++)
			dgot[j] = elem_avgpool_backward(dout, (long)j, &g);
		if (!same_bits(dgot, dwant, n))
			fail_msg("case %zu: average pool's gradient differs", t);
		free(in), free(dout), free(want), free(got), free(dwant), free(dgot);
	}
}

static void test_global_average_pool_kernels_match_the_cpu_bit_for_bit(void **state)
{
	const int B = 3, HW = 49, C = 7;
	size_t n = (size_t)B * HW * C, no = (size_t)B * C;
	float *in = random_floats(n, 90, -3, 3), *dout = random_floats(no, 91, -1, 1);
	float want[3 * 7], got[3 * 7];
	float *dwant = malloc(sizeof(float) * n), *dgot = malloc(sizeof(float) * n);
	(void)state;

	global_avgpool_forward(want, in, B, HW, C);
	for (size_t o = 0; o < no; o++)
		got[o] = elem_global_avgpool(in, (long)o, HW, C);
	assert_memory_equal(got, want, sizeof(want));
	global_avgpool_backward(dwant, dout, B, HW, C);
	for (size_t j = 0; j < n; j++)
		dgot[j] = elem_global_avgpool_backward(dout, (long)j, HW, C);
	assert_memory_equal(dgot, dwant, n * sizeof(float));
	free(in), free(dout), free(dwant), free(dgot);
}

/* The GPU's loss kernel runs loss.h's per-example function: the batch's
 * loss, correct count and logits' gradient are that function's, example by
 * example, and a tie in the logits goes to the first maximum. */
static void test_cross_entropy_kernel_matches_the_cpu_bit_for_bit(void **state)
{
	const int B = 9, K = 10;
	float *z = random_floats((size_t)B * K, 8, -5, 5);
	float want[9 * 10], got[9 * 10];
	uint8_t y[9] = {0, 1, 2, 3, 4, 5, 6, 7, 9};
	double loss = 0.0;
	long correct = 0;
	(void)state;

	z[3 * K + 2] = z[3 * K + 3] = 50.0f; /* a tie at the top: 2 wins */
	struct loss_sums l = loss_softmax_xent(want, z, y, B, K, 1.0f / 64);
	for (int i = 0; i < B; i++) {
		double li;
		int ci;
		loss_xent_example(got + i * K, z + i * K, y[i], K, 1.0f / 64, &li, &ci);
		if (i == 3)
			assert_int_equal(ci, 0); /* label 3 lost the tie to class 2 */
		loss += li;
		correct += ci;
	}
	assert_true(loss == l.loss);
	assert_int_equal(correct, l.correct);
	assert_memory_equal(got, want, sizeof(want));
	free(z);
}

/* One parameter's update as the kernels do it (kernels.cu), over the
 * slots (at least one, used or not) as enqueue_update in backend_cuda.c
 * lays them out. */
static void elem_update(const struct optimizer *o, float *w, float *st, float g, size_t n, size_t i)
{
	float *s0 = st + i;

	if (o->weight_decay != 0.0f)
		elem_weight_decay(w, o->lr, o->weight_decay);
	switch (o->kind) {
	case OPT_SGD:
		if (o->nslots)
			elem_sgd_momentum(w, s0, g, o->lr, o->momentum, o->nesterov);
		else
			elem_sgd(w, g, o->lr);
		break;
	case OPT_ADAM:
	case OPT_ADAMW:
		elem_adam(w, s0, s0 + n, g, o->alpha, o->one_minus_beta1, o->one_minus_beta2,
		          o->eps);
		break;
	case OPT_ADAGRAD:
		elem_adagrad(w, s0, g, o->lr, o->eps);
		break;
	case OPT_RMSPROP: {
		int has_mom = o->momentum > 0.0f;
		float *mom = has_mom ? s0 + n : NULL;
		float *a = o->centered ? s0 + (1 + has_mom) * n : NULL;
		elem_rmsprop(w, s0, mom, a, g, o->lr, o->rho, o->one_minus_rho, o->momentum,
		             o->eps);
		break;
	}
	}
}

/* Every kind and option: the same bits as optimizer.c for three steps,
 * weights and state, the state starting as the backend's does, a copy of
 * the host's (Adagrad's accumulator is not zero). */
static void test_optimizer_kernels_match_the_cpu_bit_for_bit(void **state)
{
	static const struct {
		enum optimizer_kind kind;
		double momentum, weight_decay;
		int nesterov, centered;
	} cases[] = {
	    {OPT_SGD, 0.0, 0.0, 0, 0},     {OPT_SGD, 0.9, 0.0, 0, 0},
	    {OPT_SGD, 0.9, 0.0, 1, 0},     {OPT_SGD, 0.0, 0.1, 0, 0},
	    {OPT_ADAM, 0.0, 0.0, 0, 0},    {OPT_ADAMW, 0.0, 0.004, 0, 0},
	    {OPT_ADAMW, 0.0, 0.5, 0, 0},   {OPT_ADAGRAD, 0.0, 0.0, 0, 0},
	    {OPT_RMSPROP, 0.0, 0.0, 0, 0}, {OPT_RMSPROP, 0.5, 0.0, 0, 0},
	    {OPT_RMSPROP, 0.0, 0.0, 0, 1}, {OPT_RMSPROP, 0.9, 0.1, 0, 1},
	};
	const size_t n = 257;
	(void)state;

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct optimizer_config c;
		struct optimizer o;
		optimizer_config_defaults(&c, cases[k].kind);
		c.learning_rate = 0.01;
		c.momentum = cases[k].momentum;
		c.weight_decay = cases[k].weight_decay;
		c.nesterov = cases[k].nesterov;
		c.centered = cases[k].centered;
		optimizer_init_config(&o, &c, n);
		size_t slots = (size_t)o.nslots * n;
		float *w = random_floats(n, 9, -1, 1), *g0 = random_floats(n, 10, -1, 1);
		float *mine = malloc(n * sizeof(float)), *g = malloc(n * sizeof(float));
		float *st = calloc(slots ? slots : n, sizeof(float));
		assert_true(mine && g && st);
		memcpy(mine, w, n * sizeof(float));
		if (slots)
			memcpy(st, o.state, slots * sizeof(float));
		for (int step = 0; step < 3; step++) {
			memcpy(g, g0, n * sizeof(float));
			optimizer_begin_step(&o);
			optimizer_apply(&o, w, g, 0, n);
			for (size_t i = 0; i < n; i++)
				elem_update(&o, &mine[i], st, g0[i], n, i);
		}
		if (!same_bits(mine, w, n) || !same_bits(st, o.state, slots))
			fail_msg("%s (case %zu): elem.h and optimizer.c differ",
			         optimizer_name(o.kind), k);
		optimizer_release(&o);
		free(w), free(g0), free(mine), free(g), free(st);
	}
}

/* The pixels scaled on the GPU are the floats the CPU's gather makes, by
 * default and with --rescale. */
static void test_pixel_kernel_scales_as_the_dataset_does(void **state)
{
	struct dataset ds = {.n = 1, .rows = 16, .cols = 16};
	uint8_t img[256], label = 3;
	float want[256], y;
	(void)state;

	for (int i = 0; i < 256; i++)
		img[i] = (uint8_t)i;
	ds.images = img;
	ds.labels = &label;
	dataset_gather(want, &y, &ds, NULL, 0, 1);
	for (int i = 0; i < 256; i++)
		assert_true(elem_pixel(img[i], ds.scale) == want[i]);
	dataset_set_rescale(&ds, 1.0f / 127.5f); /* --rescale */
	dataset_gather(want, &y, &ds, NULL, 0, 1);
	for (int i = 0; i < 256; i++)
		assert_true(elem_pixel(img[i], ds.scale) == want[i]);
}

/* Activations, dropout and batch normalisation: the kernels' arithmetic
 * (elem.h) against activation.c, dropout.c and batchnorm.c, bit for bit. */

static const struct keras_act ELEM_ACTS[] = {
    {.kind = KERAS_ACT_LINEAR},
    {.kind = KERAS_ACT_RELU},
    {.kind = KERAS_ACT_SIGMOID},
    {.kind = KERAS_ACT_TANH},
    {.kind = KERAS_ACT_SOFTMAX},
    {.kind = KERAS_ACT_GELU, .approximate = 0},
    {.kind = KERAS_ACT_GELU, .approximate = 1},
    {.kind = KERAS_ACT_LEAKY_RELU, .negative_slope = 0.2f},
    {.kind = KERAS_ACT_LEAKY_RELU, .negative_slope = -0.5f},
};

/* y (rows, cols) as the activation kernels compute it: elem_act per
 * element, elem_softmax_row per row. */
static void elem_act_forward(float *y, const float *x, long rows, long cols,
                             const struct keras_act *a)
{
	for (long r = 0; r < rows && a->kind == KERAS_ACT_SOFTMAX; r++)
		elem_softmax_row(y + r * cols, x + r * cols, cols);
	for (long i = 0; i < rows * cols && a->kind != KERAS_ACT_SOFTMAX; i++)
		y[i] = elem_act(x[i], a);
}

/* dx from dy, the forward output y and its input x, likewise. */
static void elem_act_backward_all(float *dx, const float *dy, const float *y, const float *x,
                                  long rows, long cols, const struct keras_act *a)
{
	for (long r = 0; r < rows && a->kind == KERAS_ACT_SOFTMAX; r++)
		elem_softmax_backward_row(dx + r * cols, dy + r * cols, y + r * cols, cols);
	for (long i = 0; i < rows * cols && a->kind != KERAS_ACT_SOFTMAX; i++)
		dx[i] = elem_act_backward(dy[i], y[i], x[i], a);
}

/* The backward kernel reads the CPU's y (the same bits as the kernel's,
 * as checked first): GCC 12 at -O3, given the softmax's forward and
 * backward rows inlined into one function, rounds some last bits of the
 * backward differently (clang does not), which says nothing about either
 * kernel. */
static void test_activation_kernels_match_the_cpu_bit_for_bit(void **state)
{
	const size_t rows = 37, cols = 11, n = rows * cols;
	float *x = random_floats(n, 50, -6, 6), *dy = random_floats(n, 51, -1, 1);
	float *want = malloc(n * sizeof(float)), *wantd = malloc(n * sizeof(float));
	float *got = malloc(n * sizeof(float)), *gotd = malloc(n * sizeof(float));
	(void)state;

	x[0] = 0.0f, x[1] = -0.0f, x[2] = 40.0f, x[3] = -40.0f;
	for (size_t k = 0; k < sizeof(ELEM_ACTS) / sizeof(ELEM_ACTS[0]); k++) {
		act_forward(want, x, rows, cols, &ELEM_ACTS[k]);
		act_backward(wantd, dy, want, x, rows, cols, &ELEM_ACTS[k]);
		elem_act_forward(got, x, (long)rows, (long)cols, &ELEM_ACTS[k]);
		assert_memory_equal(got, want, n * sizeof(float));
		elem_act_backward_all(gotd, dy, want, x, (long)rows, (long)cols, &ELEM_ACTS[k]);
		assert_memory_equal(gotd, wantd, n * sizeof(float));
	}
	free(x), free(dy), free(want), free(wantd), free(got), free(gotd);
}

static void test_dropout_kernel_matches_the_cpu_bit_for_bit(void **state)
{
	const int B = 7;
	const long len = 1001, n = B * len;
	const uint64_t key = dropout_key(5, 2), pos0 = 12345;
	const float rate = 0.35f;
	float *in = random_floats((size_t)n, 52, -2, 2), *want = malloc(n * sizeof(float));
	float *got = malloc(n * sizeof(float));
	(void)state;

	dropout_forward(want, in, B, (size_t)len, key, pos0, rate);
	for (long i = 0; i < n; i++)
		got[i] = elem_dropout(in, i, len, key, pos0, rate, dropout_scale(rate));
	assert_memory_equal(got, want, n * sizeof(float));
	dropout_backward(want, in, B, (size_t)len, key, pos0, rate);
	assert_memory_equal(got, want, n * sizeof(float));
	free(in), free(want), free(got);
}

/* The sums a channel per thread, the statistics and coefficients per
 * channel, then the element-wise steps, against the CPU's passes. */
static void test_batchnorm_kernels_match_the_cpu_bit_for_bit(void **state)
{
	enum { N = 90, C = 70 };
	const size_t n = (size_t)N * C;
	const float eps = 1e-3f;
	float *x = random_floats(n, 53, -3, 5), *dy = random_floats(n, 54, -1, 1);
	float *gamma = random_floats(C, 55, 0.5f, 2), *beta = random_floats(C, 56, -1, 1);
	float *mm = random_floats(C, 57, -1, 1), *mv = random_floats(C, 58, 0.1f, 2);
	float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
	float mean[C], var[C], invstd[C], s[C], t[C], a[C], b[C], k[C], dgamma[C], dbeta[C];
	double sums[2 * C], gsums[2 * C], mine[2 * C];
	(void)state;

	batchnorm_stat_sums(sums, x, N, C);
	for (int c = 0; c < C; c++)
		elem_batchnorm_stat_sums(&mine[c], &mine[C + c], x, N, C, c);
	assert_memory_equal(mine, sums, sizeof(sums));

	batchnorm_forward_train(want, mean, var, invstd, x, gamma, beta, N, C, eps);
	for (int c = 0; c < C; c++) {
		double m, v;
		batchnorm_moments(&m, &v, sums[c], sums[C + c], N);
		assert_true((float)m == mean[c] && batchnorm_invstd(v, eps) == invstd[c]);
		batchnorm_coeffs(&s[c], &t[c], mean[c], invstd[c], gamma[c], beta[c]);
	}
	for (size_t i = 0; i < n; i++)
		got[i] = elem_batchnorm(x, (long)i, C, s, t);
	assert_memory_equal(got, want, n * sizeof(float));

	batchnorm_forward_infer(want, x, NULL, NULL, mm, mv, N, C, eps);
	for (int c = 0; c < C; c++)
		batchnorm_coeffs(&s[c], &t[c], mm[c], batchnorm_invstd(mv[c], eps), 1.0f, 0.0f);
	for (size_t i = 0; i < n; i++)
		got[i] = elem_batchnorm(x, (long)i, C, s, t);
	assert_memory_equal(got, want, n * sizeof(float));

	batchnorm_grad_sums(gsums, dy, x, mean, invstd, N, C);
	batchnorm_backward(want, dgamma, dbeta, dy, x, mean, invstd, gamma, N, C);
	for (int c = 0; c < C; c++) {
		elem_batchnorm_grad_sums(&mine[c], &mine[C + c], dy, x, mean[c], invstd[c], N, C,
		                         c);
		batchnorm_grad_coeffs(&a[c], &b[c], &k[c], invstd[c], gamma[c], mine[c],
		                      mine[C + c], N);
		assert_true((float)mine[c] == dbeta[c] && (float)mine[C + c] == dgamma[c]);
	}
	assert_memory_equal(mine, gsums, sizeof(gsums));
	for (size_t i = 0; i < n; i++)
		got[i] = elem_batchnorm_backward(dy, x, (long)i, C, mean, a, b, k);
	assert_memory_equal(got, want, n * sizeof(float));
	free(x), free(dy), free(gamma), free(beta), free(mm), free(mv), free(want), free(got);
}

/* The kernels' per-channel steps as one thread runs them, and the moving
 * statistics' update, against batchnorm.c's passes, with and without
 * gamma and beta: bit for bit. */
static void test_batchnorm_channel_kernels_match_the_cpu_bit_for_bit(void **state)
{
	enum { N = 75, C = 9 };
	const size_t n = (size_t)N * C;
	const float eps = 1e-3f;
	float *x = random_floats(n, 63, -2, 6), *dy = random_floats(n, 64, -1, 1);
	float *gamma = random_floats(C, 65, 0.5f, 2), *beta = random_floats(C, 66, -1, 1);
	float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
	float mean[C], var[C], invstd[C], gm[C], gv[C], gi[C], s[C], t[C], a[C], b[C], k[C];
	float dgamma[C], dbeta[C], gdg[C], gdb[C];
	(void)state;

	for (int params = 0; params < 2; params++) {
		const float *g = params ? gamma : NULL, *be = params ? beta : NULL;
		batchnorm_forward_train(want, mean, var, invstd, x, g, be, N, C, eps);
		for (int c = 0; c < C; c++)
			elem_batchnorm_train_channel(gm, gv, gi, s, t, x, g, be, N, C, c, eps);
		assert_memory_equal(gm, mean, sizeof(mean));
		assert_memory_equal(gv, var, sizeof(var));
		assert_memory_equal(gi, invstd, sizeof(invstd));
		for (size_t i = 0; i < n; i++)
			got[i] = elem_batchnorm(x, (long)i, C, s, t);
		assert_memory_equal(got, want, n * sizeof(float));

		batchnorm_forward_infer(want, x, g, be, mean, var, N, C, eps);
		for (int c = 0; c < C; c++)
			elem_batchnorm_infer_channel(s, t, mean, var, g, be, c, eps);
		for (size_t i = 0; i < n; i++)
			got[i] = elem_batchnorm(x, (long)i, C, s, t);
		assert_memory_equal(got, want, n * sizeof(float));

		batchnorm_backward(want, params ? dgamma : NULL, params ? dbeta : NULL, dy, x, mean,
		                   invstd, g, N, C);
		for (int c = 0; c < C; c++)
			elem_batchnorm_grad_channel(params ? gdg : NULL, params ? gdb : NULL, a, b,
			                            k, dy, x, mean, invstd, g, N, C, c);
		if (params) {
			assert_memory_equal(gdg, dgamma, sizeof(dgamma));
			assert_memory_equal(gdb, dbeta, sizeof(dbeta));
		}
		for (size_t i = 0; i < n; i++)
			got[i] = elem_batchnorm_backward(dy, x, (long)i, C, mean, a, b, k);
		assert_memory_equal(got, want, n * sizeof(float));
	}

	/* The statistics summed over 1 and 3 replicas, as they arrive after the
	 * all-reduce (mean row, then variance row), moved as model.c moves them. */
	for (int world = 1; world <= 3; world += 2) {
		float stats[2 * C], mm[C], mv[C], em[C], ev[C], keep, take;
		for (int c = 0; c < C; c++) {
			stats[c] = mean[c] * (float)world, stats[C + c] = var[c] * (float)world;
			mm[c] = em[c] = gamma[c], mv[c] = ev[c] = beta[c] + 2.0f;
			gm[c] = batchnorm_mean_over(stats[c], world);
			gv[c] = batchnorm_mean_over(stats[C + c], world);
		}
		batchnorm_update_moving(mm, mv, gm, gv, C, 0.99);
		batchnorm_momentum(&keep, &take, 0.99);
		for (int c = 0; c < C; c++)
			elem_batchnorm_moving(em, ev, stats, C, c, world, keep, take);
		assert_memory_equal(em, mm, sizeof(mm));
		assert_memory_equal(ev, mv, sizeof(mv));
	}
	free(x), free(dy), free(gamma), free(beta), free(want), free(got);
}

/* Every loss and metric, from logits and from probabilities, on the rows
 * a kernel thread takes: from 0 with stride 1 it is loss_batch, bit for
 * bit; three threads' rows cover the batch, their sums the same to
 * rounding. */
static void test_loss_rows_match_the_cpus_loss_batch(void **state)
{
	static const struct {
		enum loss_kind kind;
		int logits, K, T;
		enum metric_kind metric;
	} cases[] = {
	    {LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1, 10, 1, METRIC_ACCURACY},
	    {LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0, 10, 1, METRIC_ACCURACY},
	    {LOSS_CATEGORICAL_CROSSENTROPY, 1, 6, 6, METRIC_ACCURACY},
	    {LOSS_CATEGORICAL_CROSSENTROPY, 0, 6, 6, METRIC_CATEGORICAL_ACCURACY},
	    {LOSS_BINARY_CROSSENTROPY, 1, 3, 3, METRIC_ACCURACY},
	    {LOSS_BINARY_CROSSENTROPY, 0, 1, 1, METRIC_BINARY_ACCURACY},
	    {LOSS_MEAN_SQUARED_ERROR, 0, 4, 4, METRIC_MEAN_ABSOLUTE_ERROR},
	    {LOSS_MEAN_ABSOLUTE_ERROR, 0, 4, 4, METRIC_MEAN_SQUARED_ERROR},
	};
	const int B = 23;
	char err[ERR_LEN];
	(void)state;

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct loss_spec s;
		struct loss_config lc = {cases[c].kind, cases[c].logits};
		int K = cases[c].K, T = cases[c].T;
		assert_int_equal(
		    loss_resolve(&s, &lc, cases[c].logits, K, T, &cases[c].metric, 1, err), 0);
		float *z = random_floats((size_t)B * K, 100 + c, -3, 3);
		float *p = random_floats((size_t)B * K, 110 + c, 0.0f, 1.0f);
		float *y = random_floats((size_t)B * T, 120 + c, 0.0f, 1.0f);
		float *want = malloc(sizeof(float) * B * K), *got = malloc(sizeof(float) * B * K);
		const float *zz = cases[c].logits ? z : p;
		for (int i = 0; i < B && T == 1 && K > 1; i++)
			y[i] = (float)(i % K); /* class labels */
		p[1] = 0.0f, p[2] = 1.0f;      /* clipped probabilities */
		double out[1 + LOSS_MAX_METRICS] = {0}, mine[1 + LOSS_MAX_METRICS] = {0};
		double parts[3][1 + LOSS_MAX_METRICS] = {{0}};
		loss_batch(want, out, zz, p, y, B, &s, 1.0f / 64);
		elem_loss_rows(got, mine, zz, p, y, 0, 1, B, &s, 1.0f / 64);
		assert_memory_equal(got, want, sizeof(float) * B * K);
		assert_memory_equal(mine, out, sizeof(out));
		memset(got, 0, sizeof(float) * B * K);
		for (int th = 0; th < 3; th++)
			elem_loss_rows(got, parts[th], zz, p, y, th, 3, B, &s, 1.0f / 64);
		assert_memory_equal(got, want, sizeof(float) * B * K);
		for (int m = 0; m < 2; m++) {
			double sum = parts[0][m] + parts[1][m] + parts[2][m];
			assert_true(fabs(sum - out[m]) <= 1e-12 * (1.0 + fabs(out[m])));
		}
		free(z), free(p), free(y), free(want), free(got);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pixel_kernel_scales_as_the_dataset_does),
	    cmocka_unit_test(test_im2col_and_col2im_match_the_cpu_for_every_geometry),
	    cmocka_unit_test(test_column_sums_give_the_cpus_bias_gradient_bit_for_bit),
	    cmocka_unit_test(test_max_pool_kernels_match_the_cpu_bit_for_bit),
	    cmocka_unit_test(test_pool_kernels_of_any_geometry_match_the_cpu_bit_for_bit),
	    cmocka_unit_test(test_global_average_pool_kernels_match_the_cpu_bit_for_bit),
	    cmocka_unit_test(test_cross_entropy_kernel_matches_the_cpu_bit_for_bit),
	    cmocka_unit_test(test_optimizer_kernels_match_the_cpu_bit_for_bit),
	    cmocka_unit_test(test_activation_kernels_match_the_cpu_bit_for_bit),
	    cmocka_unit_test(test_dropout_kernel_matches_the_cpu_bit_for_bit),
	    cmocka_unit_test(test_batchnorm_kernels_match_the_cpu_bit_for_bit),
	    cmocka_unit_test(test_batchnorm_channel_kernels_match_the_cpu_bit_for_bit),
	    cmocka_unit_test(test_loss_rows_match_the_cpus_loss_batch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
