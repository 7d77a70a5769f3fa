/* test_batchnorm.c - batch normalisation (batchnorm.h) against Keras'
 * formulas computed in double, its gradients through the batch statistics
 * against finite differences, and its promises: the same bits on any
 * thread count, split passes that equal the whole ones, and halves that
 * add up to the whole batch as a synchronized variant needs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "batchnorm.h"
#include "err.h"
#include "gradcheck.h"
#include "parallel.h"

#define EPS 1e-3f

/* x (N, C) whose channel c has mean about 2c - 3 and spread 0.5 + c. */
static void fill_channels(float *x, size_t N, int C, uint64_t seed)
{
	fill_uniform(x, N * C, -1, 1, seed);
	for (size_t r = 0; r < N; r++)
		for (int c = 0; c < C; c++)
			x[r * C + c] = (2.0f * c - 3.0f) + (0.5f + c) * x[r * C + c];
}

/* The batch mean and biased variance of channel c, two-pass in double. */
static void moments_ref(double *mean, double *var, const float *x, size_t N, int C, int c)
{
	double m = 0, v = 0;

	for (size_t r = 0; r < N; r++)
		m += x[r * C + c];
	m /= (double)N;
	for (size_t r = 0; r < N; r++)
		v += (x[r * C + c] - m) * (x[r * C + c] - m);
	*mean = m, *var = v / (double)N;
}

/* With gamma 1 and beta 0 each channel of y has mean 0 and variance
 * var / (var + eps), that is 1 but for epsilon. */
static void test_training_output_has_zero_mean_and_unit_variance(void **state)
{
	enum { N = 300, C = 5 };
	float x[N * C], y[N * C], mean[C], var[C], invstd[C];
	(void)state;

	fill_channels(x, N, C, 1);
	batchnorm_forward_train(y, mean, var, invstd, x, NULL, NULL, N, C, EPS);
	for (int c = 0; c < C; c++) {
		double m, v, xm, xv;
		moments_ref(&m, &v, y, N, C, c);
		moments_ref(&xm, &xv, x, N, C, c);
		assert_true(fabs(m) < 1e-6);
		assert_true(fabs(v - xv / (xv + EPS)) < 1e-5);
		assert_true(v < 1 && 1 - v < EPS / xv);
	}
}

/* mean, var, invstd and y against Keras' formulas in double. */
static void test_training_forward_matches_the_definition(void **state)
{
	enum { N = 50, C = 7 };
	float x[N * C], y[N * C], mean[C], var[C], invstd[C], gamma[C], beta[C];
	(void)state;

	fill_channels(x, N, C, 2);
	fill_uniform(gamma, C, 0.5f, 2, 3);
	fill_uniform(beta, C, -1, 1, 4);
	batchnorm_forward_train(y, mean, var, invstd, x, gamma, beta, N, C, EPS);
	for (int c = 0; c < C; c++) {
		double m, v;
		moments_ref(&m, &v, x, N, C, c);
		assert_true(fabs(mean[c] - m) <= 1e-6 * (1 + fabs(m)));
		assert_true(fabs(var[c] - v) <= 1e-6 * v);
		assert_true(fabs(invstd[c] - 1 / sqrt(v + EPS)) <= 1e-6 / sqrt(v + EPS));
		for (int r = 0; r < N; r++) {
			double want = gamma[c] * (x[r * C + c] - m) / sqrt(v + EPS) + beta[c];
			assert_true(fabs(y[r * C + c] - want) < 1e-5);
		}
	}
}

static void test_inference_uses_the_moving_statistics(void **state)
{
	enum { N = 40, C = 6 };
	float x[N * C], y[N * C], inplace[N * C], gamma[C], beta[C], mm[C], mv[C];
	(void)state;

	fill_channels(x, N, C, 5);
	fill_uniform(gamma, C, 0.5f, 2, 6);
	fill_uniform(beta, C, -1, 1, 7);
	fill_uniform(mm, C, -2, 2, 8);
	fill_uniform(mv, C, 0.1f, 3, 9);
	batchnorm_forward_infer(y, x, gamma, beta, mm, mv, N, C, EPS);
	for (int r = 0; r < N; r++)
		for (int c = 0; c < C; c++) {
			double want =
			    gamma[c] * (x[r * C + c] - (double)mm[c]) / sqrt(mv[c] + (double)EPS) +
			    beta[c];
			assert_true(fabs(y[r * C + c] - want) < 1e-5);
		}
	/* scale and center false: gamma 1, beta 0; in place */
	memcpy(inplace, x, sizeof(x));
	batchnorm_forward_infer(inplace, inplace, NULL, NULL, mm, mv, N, C, EPS);
	for (int r = 0; r < N; r++)
		for (int c = 0; c < C; c++) {
			double want = (x[r * C + c] - (double)mm[c]) / sqrt(mv[c] + (double)EPS);
			assert_true(fabs(inplace[r * C + c] - want) < 1e-5);
		}
}

/* moving = moving * momentum + stat * (1 - momentum) in float, with
 * Keras' constants: momentum and 1 - momentum (taken in double) rounded
 * to float. */
static void test_moving_update_follows_keras(void **state)
{
	enum { C = 4 };
	float mm[C] = {0, 1, -2, 0.5f}, mv[C] = {1, 1, 2, 0.25f};
	const float mean[C] = {0.3f, -0.7f, 5, 0}, var[C] = {2, 0.1f, 0, 9};
	(void)state;

	for (int step = 0; step < 3; step++) {
		float wm[C], wv[C];
		for (int c = 0; c < C; c++) {
			wm[c] = mm[c] * 0.99f + mean[c] * (float)(1.0 - 0.99);
			wv[c] = mv[c] * 0.99f + var[c] * (float)(1.0 - 0.99);
			assert_true(fabs(wm[c] - (mm[c] * 0.99 + mean[c] * 0.01)) < 1e-6);
		}
		batchnorm_update_moving(mm, mv, mean, var, C, 0.99);
		assert_memory_equal(mm, wm, sizeof(wm));
		assert_memory_equal(mv, wv, sizeof(wv));
	}
}

/* The finite-difference check: L = sum(r * y) through the training
 * forward pass, so that moving any x moves the batch's mean and variance
 * too. A small N makes that dependence count. */
enum { GN = 9, GC = 3, GLEN = GN * GC };

struct gcase {
	float x[GLEN], gamma[GC], beta[GC], r[GLEN];
	int scale, center;
};

static double train_loss(const struct gcase *g)
{
	float y[GLEN], mean[GC], invstd[GC];

	batchnorm_forward_train(y, mean, NULL, invstd, g->x, g->scale ? g->gamma : NULL,
	                        g->center ? g->beta : NULL, GN, GC, EPS);
	return dot_d(y, g->r, GLEN);
}

static void numeric(double *num, float *v, size_t n, const struct gcase *g)
{
	for (size_t i = 0; i < n; i++) {
		float keep = v[i];
		v[i] = keep + GRADCHECK_H;
		double up = train_loss(g);
		v[i] = keep - GRADCHECK_H;
		double down = train_loss(g);
		v[i] = keep;
		num[i] = (up - down) / (2.0 * GRADCHECK_H);
	}
}

static void check_gradients(int scale, int center)
{
	struct gcase g = {.scale = scale, .center = center};
	float y[GLEN], mean[GC], invstd[GC], dx[GLEN], dgamma[GC], dbeta[GC];
	double num_x[GLEN], num_gamma[GC], num_beta[GC];

	fill_channels(g.x, GN, GC, 10);
	fill_uniform(g.gamma, GC, 0.5f, 2, 11);
	fill_uniform(g.beta, GC, -1, 1, 12);
	fill_uniform(g.r, GLEN, -1, 1, 13);
	batchnorm_forward_train(y, mean, NULL, invstd, g.x, scale ? g.gamma : NULL,
	                        center ? g.beta : NULL, GN, GC, EPS);
	batchnorm_backward(dx, scale ? dgamma : NULL, center ? dbeta : NULL, g.r, g.x, mean, invstd,
	                   scale ? g.gamma : NULL, GN, GC);
	numeric(num_x, g.x, GLEN, &g);
	assert_int_equal(grad_mismatches("batchnorm dx", dx, num_x, GLEN), 0);
	if (scale) {
		numeric(num_gamma, g.gamma, GC, &g);
		assert_int_equal(grad_mismatches("batchnorm dgamma", dgamma, num_gamma, GC), 0);
	}
	if (center) {
		numeric(num_beta, g.beta, GC, &g);
		assert_int_equal(grad_mismatches("batchnorm dbeta", dbeta, num_beta, GC), 0);
	}
}

static void test_gradients_match_finite_differences_through_the_batch_statistics(void **state)
{
	(void)state;
	check_gradients(1, 1);
	check_gradients(0, 1);
	check_gradients(1, 0);
	check_gradients(0, 0);
}

/* Every output of a training step and of inference, for one setup. */
struct bn_run {
	float *y, *yi, *dx, mean[100], var[100], invstd[100], dgamma[100], dbeta[100];
};

static void bn_step(struct bn_run *o, const float *x, const float *dy, const float *gamma,
                    const float *beta, size_t N, int C)
{
	batchnorm_forward_train(o->y, o->mean, o->var, o->invstd, x, gamma, beta, N, C, EPS);
	batchnorm_backward(o->dx, o->dgamma, o->dbeta, dy, x, o->mean, o->invstd, gamma, N, C);
	batchnorm_forward_infer(o->yi, x, gamma, beta, o->mean, o->var, N, C, EPS);
}

static void bn_run_init(struct bn_run *o, size_t n)
{
	memset(o, 0, sizeof(*o));
	o->y = malloc(n * sizeof(float));
	o->yi = malloc(n * sizeof(float));
	o->dx = malloc(n * sizeof(float));
}

static void bn_run_release(struct bn_run *o)
{
	free(o->y), free(o->yi), free(o->dx);
}

static void expect_same_bits(const struct bn_run *a, const struct bn_run *b, size_t n, int C)
{
	assert_memory_equal(a->y, b->y, n * sizeof(float));
	assert_memory_equal(a->yi, b->yi, n * sizeof(float));
	assert_memory_equal(a->dx, b->dx, n * sizeof(float));
	assert_memory_equal(a->mean, b->mean, C * sizeof(float));
	assert_memory_equal(a->var, b->var, C * sizeof(float));
	assert_memory_equal(a->invstd, b->invstd, C * sizeof(float));
	assert_memory_equal(a->dgamma, b->dgamma, C * sizeof(float));
	assert_memory_equal(a->dbeta, b->dbeta, C * sizeof(float));
}

/* Large enough to be shared among threads; C = 24 splits channels
 * unevenly, C = 100 spans two chunks of the stack buffers. */
static void test_results_are_the_same_bits_on_one_and_three_threads(void **state)
{
	const struct {
		size_t N;
		int C;
	} shapes[] = {{4099, 24}, {701, 100}};
	char err[ERR_LEN];
	(void)state;

	for (int s = 0; s < 2; s++) {
		size_t N = shapes[s].N, n = N * (size_t)shapes[s].C;
		int C = shapes[s].C;
		float *x = malloc(n * sizeof(float)), *dy = malloc(n * sizeof(float));
		float gamma[100], beta[100];
		struct bn_run one, three;
		assert_true(n >= PARALLEL_MIN_ELEMS);
		fill_channels(x, N, C, 20);
		fill_uniform(dy, n, -1, 1, 21);
		fill_uniform(gamma, (size_t)C, 0.5f, 2, 22);
		fill_uniform(beta, (size_t)C, -1, 1, 23);
		bn_run_init(&one, n);
		bn_run_init(&three, n);
		bn_step(&one, x, dy, gamma, beta, N, C);
		assert_int_equal(parallel_init(3, err), 0);
		bn_step(&three, x, dy, gamma, beta, N, C);
		parallel_shutdown();
		expect_same_bits(&one, &three, n, C);
		bn_run_release(&one), bn_run_release(&three);
		free(x), free(dy);
	}
}

/* The split passes a synchronized variant runs give, with no other
 * worker, the same bits as the whole ones; dx may be dy. */
static void test_split_passes_give_the_same_bits_as_the_whole_ones(void **state)
{
	enum { N = 120, C = 70 };
	static float x[N * C], dy[N * C], y[N * C], y2[N * C], dx[N * C], dx2[N * C];
	float gamma[C], beta[C], mean[C], var[C], invstd[C], mean2[C], var2[C], invstd2[C];
	float dgamma[C], dbeta[C], dgamma2[C], dbeta2[C];
	double sums[2 * C], gsums[2 * C];
	(void)state;

	fill_channels(x, N, C, 30);
	fill_uniform(dy, N * C, -1, 1, 31);
	fill_uniform(gamma, C, 0.5f, 2, 32);
	fill_uniform(beta, C, -1, 1, 33);
	batchnorm_forward_train(y, mean, var, invstd, x, gamma, beta, N, C, EPS);
	batchnorm_stat_sums(sums, x, N, C);
	batchnorm_stats(mean2, var2, invstd2, sums, N, C, EPS);
	batchnorm_normalize(y2, x, mean2, invstd2, gamma, beta, N, C);
	assert_memory_equal(mean, mean2, sizeof(mean));
	assert_memory_equal(var, var2, sizeof(var));
	assert_memory_equal(invstd, invstd2, sizeof(invstd));
	assert_memory_equal(y, y2, sizeof(y));

	batchnorm_backward(dx, dgamma, dbeta, dy, x, mean, invstd, gamma, N, C);
	batchnorm_grad_sums(gsums, dy, x, mean, invstd, N, C);
	batchnorm_param_grads(dgamma2, dbeta2, gsums, C);
	memcpy(dx2, dy, sizeof(dy));
	batchnorm_input_grad(dx2, dx2, x, mean, invstd, gamma, gsums, N, N, C);
	assert_memory_equal(dx, dx2, sizeof(dx));
	assert_memory_equal(dgamma, dgamma2, sizeof(dgamma));
	assert_memory_equal(dbeta, dbeta2, sizeof(dbeta));
}

/* Two workers with half the rows each, their sums added as an
 * all-reduce would, compute the statistics and dx of the whole batch (to
 * rounding: the order of the additions differs), and their local dgamma
 * and dbeta add up to the whole batch's, as the gradient all-reduce adds
 * them. */
static void test_halves_with_summed_sums_equal_the_whole_batch(void **state)
{
	enum { N = 64, H = N / 2, C = 5, L = H * C };
	float x[N * C], dy[N * C], y[N * C], dx[N * C], gamma[C], beta[C];
	float mean[C], var[C], invstd[C], dgamma[C], dbeta[C];
	float hmean[C], hvar[C], hinvstd[C], hy[N * C], hdx[N * C], hdg[2][C], hdb[2][C];
	double s[2][2 * C], sum[2 * C], gs[2][2 * C], gsum[2 * C];
	(void)state;

	fill_channels(x, N, C, 40);
	fill_uniform(dy, N * C, -1, 1, 41);
	fill_uniform(gamma, C, 0.5f, 2, 42);
	fill_uniform(beta, C, -1, 1, 43);
	batchnorm_forward_train(y, mean, var, invstd, x, gamma, beta, N, C, EPS);
	batchnorm_backward(dx, dgamma, dbeta, dy, x, mean, invstd, gamma, N, C);

	for (int w = 0; w < 2; w++)
		batchnorm_stat_sums(s[w], x + w * L, H, C);
	for (int i = 0; i < 2 * C; i++)
		sum[i] = s[0][i] + s[1][i];
	batchnorm_stats(hmean, hvar, hinvstd, sum, N, C, EPS);
	for (int w = 0; w < 2; w++) {
		batchnorm_normalize(hy + w * L, x + w * L, hmean, hinvstd, gamma, beta, H, C);
		batchnorm_grad_sums(gs[w], dy + w * L, x + w * L, hmean, hinvstd, H, C);
		batchnorm_param_grads(hdg[w], hdb[w], gs[w], C);
	}
	for (int i = 0; i < 2 * C; i++)
		gsum[i] = gs[0][i] + gs[1][i];
	for (int w = 0; w < 2; w++)
		batchnorm_input_grad(hdx + w * L, dy + w * L, x + w * L, hmean, hinvstd, gamma,
		                     gsum, N, H, C);
	for (int c = 0; c < C; c++) {
		assert_float_equal(hmean[c], mean[c], 1e-6 * (1 + fabsf(mean[c])));
		assert_float_equal(hvar[c], var[c], 1e-6 * var[c]);
		assert_float_equal(hdg[0][c] + hdg[1][c], dgamma[c], 1e-5);
		assert_float_equal(hdb[0][c] + hdb[1][c], dbeta[c], 1e-5);
	}
	for (int i = 0; i < N * C; i++) {
		assert_float_equal(hy[i], y[i], 1e-5);
		assert_float_equal(hdx[i], dx[i], 1e-5);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_training_output_has_zero_mean_and_unit_variance),
	    cmocka_unit_test(test_training_forward_matches_the_definition),
	    cmocka_unit_test(test_inference_uses_the_moving_statistics),
	    cmocka_unit_test(test_moving_update_follows_keras),
	    cmocka_unit_test(test_gradients_match_finite_differences_through_the_batch_statistics),
	    cmocka_unit_test(test_results_are_the_same_bits_on_one_and_three_threads),
	    cmocka_unit_test(test_split_passes_give_the_same_bits_as_the_whole_ones),
	    cmocka_unit_test(test_halves_with_summed_sums_equal_the_whole_batch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
