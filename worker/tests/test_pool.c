/* test_pool.c - MaxPooling2D, AveragePooling2D and GlobalAveragePooling2D
 * with Keras' pool sizes, strides and padding (pool.h): sizes as
 * TensorFlow computes them, forward passes against definitions, gradients
 * against finite differences, and the general max pool against the seed
 * models' own 2x2 path. */
#include <float.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "gradcheck.h"
#include "pool.h"

struct pool_case {
	int H, W, C, PH, PW, SH, SW, same;
	int OH, OW, PT, PL;
};

static const struct pool_case CASES[] = {
    {6, 6, 2, 2, 2, 2, 2, 0, 3, 3, 0, 0}, /* the seed models' */
    {7, 5, 2, 2, 2, 2, 2, 0, 3, 2, 0, 0}, /* odd edges dropped */
    {7, 5, 2, 2, 2, 2, 2, 1, 4, 3, 0, 0}, /* same: the odd edge kept, padded below */
    {6, 6, 1, 3, 3, 2, 2, 1, 3, 3, 0, 0}, /* same, pad 1 at the bottom only */
    {5, 6, 3, 3, 3, 1, 1, 0, 3, 4, 0, 0}, /* overlapping windows */
    {5, 6, 2, 3, 3, 1, 1, 1, 5, 6, 1, 1}, /* overlapping and padded all round */
    {6, 5, 2, 3, 2, 2, 1, 0, 2, 4, 0, 0}, /* different sizes per axis */
};

#define NB     2
#define NCASES (sizeof(CASES) / sizeof(CASES[0]))

static void geom(struct pool_geom *g, const struct pool_case *c)
{
	assert_int_equal(pool_geom_init(g, c->H, c->W, c->C, c->PH, c->PW, c->SH, c->SW, c->same),
	                 0);
}

/* The definition: over the window's pixels inside the image. */
static double reference(const float *in, const struct pool_geom *g, int b, int oh, int ow, int c,
                        int max)
{
	double acc = max ? -DBL_MAX : 0.0;
	int n = 0;

	for (int ph = 0; ph < g->PH; ph++)
		for (int pw = 0; pw < g->PW; pw++) {
			int y = oh * g->SH + ph - g->PT, x = ow * g->SW + pw - g->PL;
			if (y < 0 || y >= g->H || x < 0 || x >= g->W)
				continue;
			double v = in[(((size_t)b * g->H + y) * g->W + x) * g->C + c];
			acc = max ? (v > acc ? v : acc) : acc + v;
			n++;
		}
	return max ? acc : acc / n;
}

static void test_output_sizes_and_padding_are_tensorflows(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCASES; i++) {
		struct pool_geom g;
		geom(&g, &CASES[i]);
		assert_int_equal(g.OH, CASES[i].OH);
		assert_int_equal(g.OW, CASES[i].OW);
		assert_int_equal(g.PT, CASES[i].PT);
		assert_int_equal(g.PL, CASES[i].PL);
	}
	struct pool_geom g;
	assert_int_equal(pool_geom_init(&g, 1, 4, 1, 2, 2, 2, 2, 0), -1);
	assert_int_equal(pool_geom_init(&g, 1, 4, 1, 2, 2, 2, 2, 1), 0);
}

static void forward(float *out, const float *in, const struct pool_geom *g, int max)
{
	if (max)
		maxpool_forward_geom(out, in, NB, g);
	else
		avgpool_forward_geom(out, in, NB, g);
}

static void test_forward_passes_match_their_definitions(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCASES; i++)
		for (int max = 0; max <= 1; max++) {
			struct pool_geom g;
			geom(&g, &CASES[i]);
			size_t nin = (size_t)NB * g.H * g.W * g.C,
			       nout = (size_t)NB * g.OH * g.OW * g.C;
			float *in = malloc(nin * sizeof(float)),
			      *out = malloc(nout * sizeof(float));
			fill_uniform(in, nin, -1, 1, 20 + i);
			forward(out, in, &g, max);
			for (int b = 0; b < NB; b++)
				for (int oh = 0; oh < g.OH; oh++)
					for (int ow = 0; ow < g.OW; ow++)
						for (int c = 0; c < g.C; c++)
							assert_float_equal(
							    out[(((size_t)b * g.OH + oh) * g.OW +
							         ow) *
							            g.C +
							        c],
							    reference(in, &g, b, oh, ow, c, max),
							    1e-6);
			free(in);
			free(out);
		}
}

static double pool_loss(const float *in, const float *r, float *out, const struct pool_geom *g,
                        int max)
{
	forward(out, in, g, max);
	return dot_d(out, r, (size_t)NB * g->OH * g->OW * g->C);
}

static void test_gradients_match_finite_differences(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCASES; i++)
		for (int max = 0; max <= 1; max++) {
			struct pool_geom g;
			char what[64];
			geom(&g, &CASES[i]);
			size_t nin = (size_t)NB * g.H * g.W * g.C,
			       nout = (size_t)NB * g.OH * g.OW * g.C;
			float *in = malloc(nin * sizeof(float)), *din = malloc(nin * sizeof(float));
			float *out = malloc(nout * sizeof(float)),
			      *r = malloc(nout * sizeof(float));
			double *num = malloc(nin * sizeof(double));
			/* Inputs far apart compared with the step, so that no
			 * step changes which one is the maximum. */
			for (size_t k = 0; k < nin; k++)
				in[k] = (float)((k * 7919) % nin) * 0.1f;
			fill_uniform(r, nout, -1, 1, 30 + i);
			forward(out, in, &g, max);
			if (max)
				maxpool_backward_geom(din, r, in, out, NB, &g);
			else
				avgpool_backward_geom(din, r, NB, &g);
			for (size_t k = 0; k < nin; k++) {
				float keep = in[k];
				in[k] = keep + GRADCHECK_H;
				double up = pool_loss(in, r, out, &g, max);
				in[k] = keep - GRADCHECK_H;
				double down = pool_loss(in, r, out, &g, max);
				in[k] = keep;
				num[k] = (up - down) / (2.0 * GRADCHECK_H);
			}
			snprintf(what, sizeof(what), "%s case %zu", max ? "max" : "avg", i);
			assert_int_equal(grad_mismatches(what, din, num, nin), 0);
			free(in);
			free(din);
			free(out);
			free(r);
			free(num);
		}
}

static void test_general_max_pool_equals_the_seed_models_path(void **state)
{
	(void)state;
	struct pool_geom g;
	enum { H = 7, W = 9, C = 3, N = NB * H * W * C, O = NB * 3 * 4 * C };
	float in[N], out_a[O], out_b[O], r[O], din_a[N], din_b[N];

	geom(&g, &(struct pool_case){H, W, C, 2, 2, 2, 2, 0, 3, 4, 0, 0});
	fill_uniform(in, N, -1, 1, 40);
	in[0] = in[C]; /* a tie: the first one wins on both paths */
	fill_uniform(r, O, -1, 1, 41);
	maxpool_forward(out_a, in, NB, H, W, C);
	maxpool_forward_geom(out_b, in, NB, &g);
	assert_memory_equal(out_a, out_b, sizeof(out_a));
	maxpool_backward(din_a, r, in, out_a, NB, H, W, C, 0);
	maxpool_backward_geom(din_b, r, in, out_b, NB, &g);
	assert_memory_equal(din_a, din_b, sizeof(din_a));
}

static void test_global_average_pool_is_the_mean_and_spreads_its_gradient(void **state)
{
	(void)state;
	enum { HW = 6, C = 3, N = NB * HW * C };
	float in[N], out[NB * C], r[NB * C], din[N];
	double num[N];

	fill_uniform(in, N, -1, 1, 50);
	fill_uniform(r, NB * C, -1, 1, 51);
	global_avgpool_forward(out, in, NB, HW, C);
	for (int b = 0; b < NB; b++)
		for (int c = 0; c < C; c++) {
			double s = 0.0;
			for (int i = 0; i < HW; i++)
				s += in[((size_t)b * HW + i) * C + c];
			assert_float_equal(out[b * C + c], s / HW, 1e-6);
		}
	global_avgpool_backward(din, r, NB, HW, C);
	for (size_t k = 0; k < N; k++) {
		float keep = in[k];
		in[k] = keep + GRADCHECK_H;
		global_avgpool_forward(out, in, NB, HW, C);
		double up = dot_d(out, r, NB * C);
		in[k] = keep - GRADCHECK_H;
		global_avgpool_forward(out, in, NB, HW, C);
		double down = dot_d(out, r, NB * C);
		in[k] = keep;
		num[k] = (up - down) / (2.0 * GRADCHECK_H);
	}
	assert_int_equal(grad_mismatches("gap", din, num, N), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_output_sizes_and_padding_are_tensorflows),
	    cmocka_unit_test(test_forward_passes_match_their_definitions),
	    cmocka_unit_test(test_gradients_match_finite_differences),
	    cmocka_unit_test(test_general_max_pool_equals_the_seed_models_path),
	    cmocka_unit_test(test_global_average_pool_is_the_mean_and_spreads_its_gradient),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
