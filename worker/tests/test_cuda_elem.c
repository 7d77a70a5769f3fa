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
#include "dropout.h"
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

/* The convolution through elem_im2col and a plain product equals
 * conv_forward, for one channel (the CPU's direct path) and three (its
 * im2col path). */
static void expect_conv_forward_matches(int C, int OC)
{
	const int B = 3, H = 7, W = 6, KH = 3, KW = 3, K = KH * KW * C;
	const int OH = H - KH + 1, OW = W - KW + 1;
	const long M = (long)B * OH * OW;
	float *in = random_floats((size_t)B * H * W * C, 1, -1, 1);
	float *wb = random_floats((size_t)(K + 1) * OC, 2, -1, 1);
	float *cols = malloc(sizeof(float) * (size_t)(K + 1) * M);
	float *scratch =
	    malloc(sizeof(float) * (size_t)(conv_cols_len(B, H, W, C, KH, KW, OC) + 1));
	float *want = malloc(sizeof(float) * (size_t)M * OC), *got = malloc(sizeof(float) * M * OC);

	for (long i = 0; i < (K + 1) * M; i++)
		cols[i] = elem_im2col(in, i, M, H, W, C, KH, KW);
	for (long m = 0; m < M; m++)
		for (int o = 0; o < OC; o++) {
			float s = 0.0f;
			for (int k = 0; k <= K; k++)
				s += cols[(long)k * M + m] * wb[(long)k * OC + o];
			got[m * OC + o] = s > 0.0f ? s : 0.0f;
		}
	conv_forward(want, scratch, in, wb, B, H, W, C, KH, KW, OC, 1);
	expect_near(got, want, (size_t)M * OC, 1e-5f);
	free(in), free(wb), free(cols), free(scratch), free(want), free(got);
}

static void test_im2col_lowers_the_convolution_the_cpu_computes(void **state)
{
	(void)state;
	expect_conv_forward_matches(1, 32);
	expect_conv_forward_matches(3, 5);
}

/* din through a plain dcols = w @ dout^T and elem_col2im equals
 * conv_backward's din. */
static void test_col2im_gives_the_cpus_input_gradient(void **state)
{
	const int B = 2, H = 6, W = 7, C = 3, KH = 3, KW = 2, OC = 4, K = KH * KW * C;
	const int OH = H - KH + 1, OW = W - KW + 1;
	const long M = (long)B * OH * OW;
	float *in = random_floats((size_t)B * H * W * C, 3, -1, 1);
	float *wb = random_floats((size_t)(K + 1) * OC, 4, -1, 1);
	float *dout = random_floats((size_t)M * OC, 5, -1, 1);
	long clen = conv_cols_len(B, H, W, C, KH, KW, OC);
	float *cols = malloc(sizeof(float) * clen), *dcols = malloc(sizeof(float) * clen);
	float *dwb = malloc(sizeof(float) * (K + 1) * OC), *out = malloc(sizeof(float) * M * OC);
	size_t n = (size_t)B * H * W * C;
	float *want = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n);
	float *mine = malloc(sizeof(float) * K * M);
	(void)state;

	conv_forward(out, cols, in, wb, B, H, W, C, KH, KW, OC, 0);
	conv_backward(dwb, want, dcols, dout, in, cols, wb, B, H, W, C, KH, KW, OC);
	for (int k = 0; k < K; k++)
		for (long m = 0; m < M; m++) {
			float s = 0.0f;
			for (int o = 0; o < OC; o++)
				s += wb[(long)k * OC + o] * dout[m * OC + o];
			mine[(long)k * M + m] = s;
		}
	for (size_t j = 0; j < n; j++)
		got[j] = elem_col2im(mine, (long)j, M, H, W, C, KH, KW);
	expect_near(got, want, n, 1e-5f);
	free(in), free(wb), free(dout), free(cols), free(dcols), free(dwb), free(out);
	free(want), free(got), free(mine);
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

/* The pixels scaled on the GPU are the floats the CPU's gather makes. */
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
		assert_true(elem_pixel(img[i]) == want[i]);
}

/* Activations, dropout and batch normalisation: the kernels' arithmetic
 * (elem.h) against activation.c, dropout.c and batchnorm.c, bit for bit. */

static const struct keras_act ELEM_ACTS[] = {
    {.kind = KERAS_ACT_SIGMOID},
    {.kind = KERAS_ACT_TANH},
    {.kind = KERAS_ACT_SOFTMAX},
    {.kind = KERAS_ACT_GELU, .approximate = 0},
    {.kind = KERAS_ACT_GELU, .approximate = 1},
    {.kind = KERAS_ACT_LEAKY_RELU, .negative_slope = 0.2f},
    {.kind = KERAS_ACT_LEAKY_RELU, .negative_slope = -0.5f},
};

/* y (rows, cols) as a kernel computes it, one element (softmax: one row)
 * at a time. */
static void elem_act_forward(float *y, const float *x, long rows, long cols,
                             const struct keras_act *a)
{
	for (long r = 0; r < rows && a->kind == KERAS_ACT_SOFTMAX; r++)
		elem_softmax_row(y + r * cols, x + r * cols, cols);
	for (long i = 0; i < rows * cols && a->kind != KERAS_ACT_SOFTMAX; i++) {
		if (a->kind == KERAS_ACT_SIGMOID)
			y[i] = elem_sigmoid(x[i]);
		else if (a->kind == KERAS_ACT_TANH)
			y[i] = elem_tanh(x[i]);
		else if (a->kind == KERAS_ACT_GELU)
			y[i] = elem_gelu(x[i], a->approximate);
		else
			y[i] = elem_leaky_relu(x[i], a->negative_slope);
	}
}

/* dx from dy, the forward output y and its input x, likewise. */
static void elem_act_backward(float *dx, const float *dy, const float *y, const float *x, long rows,
                              long cols, const struct keras_act *a)
{
	float s = a->negative_slope;

	for (long r = 0; r < rows && a->kind == KERAS_ACT_SOFTMAX; r++)
		elem_softmax_backward_row(dx + r * cols, dy + r * cols, y + r * cols, cols);
	for (long i = 0; i < rows * cols && a->kind != KERAS_ACT_SOFTMAX; i++) {
		if (a->kind == KERAS_ACT_SIGMOID)
			dx[i] = elem_sigmoid_backward(dy[i], y[i]);
		else if (a->kind == KERAS_ACT_TANH)
			dx[i] = elem_tanh_backward(dy[i], y[i]);
		else if (a->kind == KERAS_ACT_GELU)
			dx[i] = elem_gelu_backward(dy[i], x[i], a->approximate);
		else
			dx[i] = elem_leaky_relu_backward(dy[i], s < 0.0f ? x[i] : y[i], s);
	}
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
		elem_act_backward(gotd, dy, want, x, (long)rows, (long)cols, &ELEM_ACTS[k]);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pixel_kernel_scales_as_the_dataset_does),
	    cmocka_unit_test(test_im2col_lowers_the_convolution_the_cpu_computes),
	    cmocka_unit_test(test_col2im_gives_the_cpus_input_gradient),
	    cmocka_unit_test(test_max_pool_kernels_match_the_cpu_bit_for_bit),
	    cmocka_unit_test(test_cross_entropy_kernel_matches_the_cpu_bit_for_bit),
	    cmocka_unit_test(test_optimizer_kernels_match_the_cpu_bit_for_bit),
	    cmocka_unit_test(test_activation_kernels_match_the_cpu_bit_for_bit),
	    cmocka_unit_test(test_dropout_kernel_matches_the_cpu_bit_for_bit),
	    cmocka_unit_test(test_batchnorm_kernels_match_the_cpu_bit_for_bit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
