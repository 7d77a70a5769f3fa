/* test_conv_geom.c - Conv2D with Keras' strides, "same" padding and no
 * bias (conv.h's _geom functions): output sizes and padding as TensorFlow
 * computes them, the forward pass against a direct definition, and every
 * gradient against finite differences, over a table of geometries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "conv.h"
#include "err.h"
#include "gradcheck.h"
#include "parallel.h"
#include "winograd.h"

struct geom_case {
	int H, W, C, KH, KW, OC, SH, SW, same, bias;
	int OH, OW, PT, PL; /* as TensorFlow's conv2d gives them */
};

static const struct geom_case CASES[] = {
    /* valid, stride 1, biased: the seed models' shape (not direct: C 2) */
    {5, 6, 2, 3, 3, 3, 1, 1, 0, 1, 3, 4, 0, 0},
    /* same, stride 1: output as large as the input, padding 1 all round */
    {5, 6, 2, 3, 3, 3, 1, 1, 1, 1, 5, 6, 1, 1},
    /* same with an even kernel: the odd pixel of padding at the bottom and right */
    {5, 5, 1, 2, 2, 2, 1, 1, 1, 0, 5, 5, 0, 0},
    /* valid, stride 2: floor((7 - 3) / 2) + 1 = 3 */
    {7, 6, 2, 3, 3, 2, 2, 2, 0, 1, 3, 2, 0, 0},
    /* same, stride 2: ceil(7 / 2) = 4, padding (4 - 1) 2 + 3 - 7 = 2, 1 on top */
    {7, 6, 3, 3, 3, 2, 2, 2, 1, 0, 4, 3, 1, 0},
    /* strides that differ per axis, a 1x3 kernel */
    {6, 7, 2, 1, 3, 4, 2, 1, 1, 1, 3, 7, 0, 1},
    /* stride 1 with fewer filters than channels: the input gradient as a
     * convolution of the output gradient (conv.c), same and valid */
    {5, 6, 3, 3, 3, 2, 1, 1, 1, 1, 5, 6, 1, 1},
    {5, 6, 3, 3, 2, 1, 1, 1, 0, 0, 3, 5, 0, 0},
    /* one channel, 3x3, 32 filters, same: the direct path's shape, but padded */
    {5, 5, 1, 3, 3, 32, 1, 1, 1, 1, 5, 5, 1, 1},
    /* 3x3, stride 1, channels in eights: Winograd's F(2x2, 3x3)
     * (winograd.c); odd sizes leave tiles half outside, 24 filters a
     * block of 16 and one of 8, and the last case more tiles than one
     * block holds */
    {6, 7, 8, 3, 3, 8, 1, 1, 1, 1, 6, 7, 1, 1},
    {7, 5, 16, 3, 3, 24, 1, 1, 0, 0, 5, 3, 0, 0},
    {20, 13, 16, 3, 3, 16, 1, 1, 1, 1, 20, 13, 1, 1},
};

#define NB 2

struct pass {
	struct conv_geom g;
	size_t nin, nw, nout, ncols;
	float *in, *wb, *r, *out, *cols, *dcols, *dwb, *din;
};

static void pass_init(struct pass *p, const struct geom_case *c)
{
	char err[ERR_LEN];

	(void)err;
	assert_int_equal(conv_geom_init(&p->g, c->H, c->W, c->C, c->KH, c->KW, c->OC, c->SH, c->SW,
	                                c->same, c->bias),
	                 0);
	p->nin = (size_t)NB * c->H * c->W * c->C;
	p->nw = ((size_t)c->KH * c->KW * c->C + (size_t)c->bias) * c->OC;
	p->nout = (size_t)NB * p->g.OH * p->g.OW * c->OC;
	p->ncols = (size_t)conv_geom_cols_len(&p->g, NB);
	p->in = calloc(p->nin, sizeof(float));
	p->din = calloc(p->nin, sizeof(float));
	p->wb = calloc(p->nw, sizeof(float));
	p->dwb = calloc(p->nw, sizeof(float));
	p->r = calloc(p->nout, sizeof(float));
	p->out = calloc(p->nout, sizeof(float));
	p->cols = calloc(p->ncols + 1, sizeof(float));
	p->dcols = calloc(p->ncols + 1, sizeof(float));
	fill_uniform(p->in, p->nin, -1, 1, 11);
	fill_uniform(p->wb, p->nw, -1, 1, 12);
	fill_uniform(p->r, p->nout, -1, 1, 13);
}

static void pass_release(struct pass *p)
{
	free(p->in);
	free(p->din);
	free(p->wb);
	free(p->dwb);
	free(p->r);
	free(p->out);
	free(p->cols);
	free(p->dcols);
}

static double pass_loss(struct pass *p)
{
	conv_forward_geom(p->out, p->cols, p->in, p->wb, NB, &p->g, 0);
	return dot_d(p->out, p->r, p->nout);
}

/* The definition: every output pixel sums the taps that land inside the
 * image, the padding contributing zeros. */
static double reference(const struct pass *p, int n, int oh, int ow, int o)
{
	const struct conv_geom *g = &p->g;
	size_t K = (size_t)g->KH * g->KW * g->C;
	double s = g->bias ? p->wb[K * g->OC + o] : 0.0;

	for (int kh = 0; kh < g->KH; kh++)
		for (int kw = 0; kw < g->KW; kw++) {
			int ih = oh * g->SH + kh - g->PT, iw = ow * g->SW + kw - g->PL;
			if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W)
				continue;
			for (int c = 0; c < g->C; c++)
				s += (double)
				         p->in[(((size_t)n * g->H + ih) * g->W + iw) * g->C + c] *
				     p->wb[(((size_t)kh * g->KW + kw) * g->C + c) * g->OC + o];
		}
	return s;
}

static void test_output_sizes_and_padding_are_tensorflows(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
		const struct geom_case *c = &CASES[i];
		struct conv_geom g;
		assert_int_equal(conv_geom_init(&g, c->H, c->W, c->C, c->KH, c->KW, c->OC, c->SH,
		                                c->SW, c->same, c->bias),
		                 0);
		assert_int_equal(g.OH, c->OH);
		assert_int_equal(g.OW, c->OW);
		assert_int_equal(g.PT, c->PT);
		assert_int_equal(g.PL, c->PL);
	}
}

static void test_a_valid_kernel_larger_than_the_input_is_refused(void **state)
{
	struct conv_geom g;
	(void)state;

	assert_int_equal(conv_geom_init(&g, 2, 5, 1, 3, 3, 4, 1, 1, 0, 1), -1);
	/* The same kernel with same padding fits. */
	assert_int_equal(conv_geom_init(&g, 2, 5, 1, 3, 3, 4, 1, 1, 1, 1), 0);
	assert_int_equal(g.OH, 2);
	assert_int_equal(conv_geom_init(&g, 5, 5, 1, 3, 3, 4, 0, 1, 0, 1), -1);
}

/* The multiply-adds throughput reports count: im2col's, or on the
 * Winograd path 16 per tile and channel pair, 2.25x fewer where the output
 * is in whole tiles; odd sizes round the tiles up. */
static void test_multiply_adds_are_counted_as_computed(void **state)
{
	struct conv_geom g;
	(void)state;

	assert_int_equal(conv_geom_init(&g, 8, 8, 16, 3, 3, 32, 1, 1, 1, 1), 0);
	assert_true(winograd_fits(&g));
	assert_true(conv_geom_macs(&g, 2) == 2.0 * 16 * 4 * 4 * 16 * 32);
	assert_true(conv_geom_macs(&g, 2) * 2.25 == 2.0 * 8 * 8 * 9 * 16 * 32);
	assert_int_equal(conv_geom_init(&g, 7, 5, 16, 3, 3, 24, 1, 1, 0, 0), 0);
	assert_true(winograd_fits(&g));
	assert_true(conv_geom_macs(&g, 1) == 16.0 * 3 * 2 * 16 * 24);
	/* stride 2 takes im2col */
	assert_int_equal(conv_geom_init(&g, 7, 6, 3, 3, 3, 2, 2, 2, 1, 0), 0);
	assert_false(winograd_fits(&g));
	assert_true(conv_geom_macs(&g, 3) == 3.0 * 4 * 3 * 9 * 3 * 2);
}

static void test_forward_matches_the_definition_for_every_geometry(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
		struct pass p;
		pass_init(&p, &CASES[i]);
		conv_forward_geom(p.out, p.cols, p.in, p.wb, NB, &p.g, 0);
		for (int n = 0; n < NB; n++)
			for (int oh = 0; oh < p.g.OH; oh++)
				for (int ow = 0; ow < p.g.OW; ow++)
					for (int o = 0; o < p.g.OC; o++) {
						size_t at =
						    (((size_t)n * p.g.OH + oh) * p.g.OW + ow) *
						        p.g.OC +
						    o;
						assert_float_equal(
						    p.out[at], reference(&p, n, oh, ow, o), 1e-5);
					}
		pass_release(&p);
	}
}

static void check_gradients(struct pass *p, const char *what)
{
	double *num_w = calloc(p->nw, sizeof(double)), *num_in = calloc(p->nin, sizeof(double));
	float *vars[2] = {p->wb, p->in};
	double *nums[2] = {num_w, num_in};
	size_t lens[2] = {p->nw, p->nin};

	conv_forward_geom(p->out, p->cols, p->in, p->wb, NB, &p->g, 0);
	conv_backward_geom(p->dwb, p->din, p->dcols, p->r, p->in, p->cols, p->wb, NB, &p->g);
	for (int v = 0; v < 2; v++)
		for (size_t i = 0; i < lens[v]; i++) {
			float keep = vars[v][i];
			vars[v][i] = keep + GRADCHECK_H;
			double up = pass_loss(p);
			vars[v][i] = keep - GRADCHECK_H;
			double down = pass_loss(p);
			vars[v][i] = keep;
			nums[v][i] = (up - down) / (2.0 * GRADCHECK_H);
		}
	if (grad_mismatches(what, p->dwb, num_w, p->nw) ||
	    grad_mismatches(what, p->din, num_in, p->nin))
		fail_msg("%s: gradients differ from finite differences", what);
	free(num_w);
	free(num_in);
}

static void test_gradients_match_finite_differences_for_every_geometry(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
		struct pass p;
		char what[64];
		snprintf(what, sizeof(what), "case %zu", i);
		pass_init(&p, &CASES[i]);
		check_gradients(&p, what);
		pass_release(&p);
	}
}

/* Stride 2 (col2im), stride 1 (the input gradient as a convolution), and
 * Winograd's, whose kernel gradient is promised bitwise too. */
static void test_three_threads_give_the_bits_of_one(void **state)
{
	static const int cases[] = {4, 6, 9, 11};
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[ERR_LEN];
		struct pass one, three;
		pass_init(&one, &CASES[cases[i]]);
		pass_init(&three, &CASES[cases[i]]);
		conv_forward_geom(one.out, one.cols, one.in, one.wb, NB, &one.g, 1);
		conv_backward_geom(one.dwb, one.din, one.dcols, one.r, one.in, one.cols, one.wb, NB,
		                   &one.g);
		assert_int_equal(parallel_init(3, err), 0);
		conv_forward_geom(three.out, three.cols, three.in, three.wb, NB, &three.g, 1);
		conv_backward_geom(three.dwb, three.din, three.dcols, three.r, three.in, three.cols,
		                   three.wb, NB, &three.g);
		parallel_shutdown();
		assert_memory_equal(one.out, three.out, one.nout * sizeof(float));
		assert_memory_equal(one.din, three.din, one.nin * sizeof(float));
		if (winograd_fits(&one.g))
			assert_memory_equal(one.dwb, three.dwb, one.nw * sizeof(float));
		pass_release(&one);
		pass_release(&three);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_output_sizes_and_padding_are_tensorflows),
	    cmocka_unit_test(test_a_valid_kernel_larger_than_the_input_is_refused),
	    cmocka_unit_test(test_multiply_adds_are_counted_as_computed),
	    cmocka_unit_test(test_forward_matches_the_definition_for_every_geometry),
	    cmocka_unit_test(test_gradients_match_finite_differences_for_every_geometry),
	    cmocka_unit_test(test_three_threads_give_the_bits_of_one),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
