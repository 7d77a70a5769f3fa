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

#include "conv.h"
#include "cuda/elem.h"
#include "dataset.h"
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

/* SGD, momentum and Adam: the same bits as optimizer.c for three steps. */
static void test_optimizer_kernels_match_the_cpu_bit_for_bit(void **state)
{
	const size_t n = 257;
	(void)state;

	for (int rule = 0; rule < 3; rule++) {
		struct optimizer o;
		float *w = random_floats(n, 9, -1, 1), *g0 = random_floats(n, 10, -1, 1);
		float *mine = malloc(n * sizeof(float)), *g = malloc(n * sizeof(float));
		float *m = calloc(n, sizeof(float)), *v = calloc(n, sizeof(float));
		memcpy(mine, w, n * sizeof(float));
		optimizer_init(&o, rule == 2 ? OPT_ADAM : OPT_SGD, 0.01f, rule == 1 ? 0.9f : 0.0f,
		               n);
		for (int step = 0; step < 3; step++) {
			memcpy(g, g0, n * sizeof(float));
			optimizer_begin_step(&o);
			optimizer_apply(&o, w, g, 0, n);
			for (size_t i = 0; i < n; i++) {
				if (rule == 0)
					elem_sgd(&mine[i], g0[i], o.lr);
				else if (rule == 1)
					elem_sgd_momentum(&mine[i], &m[i], g0[i], o.lr, o.momentum);
				else
					elem_adam(&mine[i], &m[i], &v[i], g0[i], o.alpha, o.beta1,
					          o.beta2, o.eps);
			}
		}
		assert_memory_equal(mine, w, n * sizeof(float));
		optimizer_release(&o);
		free(w), free(g0), free(mine), free(g), free(m), free(v);
	}
}

/* The pixels scaled on the GPU are the floats the CPU's gather makes. */
static void test_pixel_kernel_scales_as_the_dataset_does(void **state)
{
	struct dataset ds = {.n = 1, .rows = 16, .cols = 16};
	uint8_t img[256], label = 3, y;
	float want[256];
	(void)state;

	for (int i = 0; i < 256; i++)
		img[i] = (uint8_t)i;
	ds.images = img;
	ds.labels = &label;
	dataset_gather(want, &y, &ds, NULL, 0, 1);
	for (int i = 0; i < 256; i++)
		assert_true(elem_pixel(img[i]) == want[i]);
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
