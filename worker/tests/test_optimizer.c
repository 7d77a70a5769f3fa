/* test_optimizer.c - the update rules against Keras' formulas, computed
 * here in double, and the promise the backward pass relies on: every update
 * leaves the gradients it consumed zero. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "optimizer.h"

#define N 37 /* odd, so that vector loops have a remainder */

static void fill(float *w, float *g)
{
	for (int i = 0; i < N; i++) {
		w[i] = 0.5f - 0.03f * (float)i;
		g[i] = (i % 3 ? 1.0f : -2.0f) * 0.01f * (float)(i + 1);
	}
}

static void expect_zero(const float *g)
{
	for (int i = 0; i < N; i++)
		assert_true(g[i] == 0.0f);
}

static void expect_close(float got, double want)
{
	assert_true(fabs((double)got - want) <= 1e-6 * (1.0 + fabs(want)));
}

/* An optimizer over N parameters w, starting from w0, and the gradients g0
 * it is given at every step. */
struct run {
	struct optimizer o;
	float w[N], g[N], w0[N], g0[N];
};

/* Takes steps updates with the gradients g0, checking that each leaves
 * them zero. */
static void run_steps(struct run *r, enum optimizer_kind kind, float lr, float momentum, int steps)
{
	optimizer_init(&r->o, kind, lr, momentum, N);
	fill(r->w0, r->g0);
	memcpy(r->w, r->w0, sizeof(r->w));
	for (int t = 0; t < steps; t++) {
		memcpy(r->g, r->g0, sizeof(r->g));
		optimizer_step(&r->o, r->w, r->g);
		expect_zero(r->g);
	}
	optimizer_release(&r->o);
}

static void test_sgd_follows_keras_and_consumes_the_gradients(void **state)
{
	struct run r;
	(void)state;

	run_steps(&r, OPT_SGD, 0.1f, 0.0f, 1);
	for (int i = 0; i < N; i++)
		expect_close(r.w[i], (double)r.w0[i] - 0.1 * (double)r.g0[i]);
}

static void test_momentum_follows_keras_over_two_steps(void **state)
{
	struct run r;
	(void)state;

	run_steps(&r, OPT_SGD, 0.1f, 0.9f, 2);
	for (int i = 0; i < N; i++) {
		double v1 = -0.1 * r.g0[i], v2 = 0.9 * v1 - 0.1 * r.g0[i];
		expect_close(r.w[i], (double)r.w0[i] + v1 + v2);
	}
}

static void test_adam_follows_keras_over_two_steps(void **state)
{
	struct run r;
	(void)state;

	run_steps(&r, OPT_ADAM, 0.01f, 0.0f, 2);
	for (int i = 0; i < N; i++) {
		double m = 0, v = 0, x = r.w0[i], g = r.g0[i];
		for (int t = 1; t <= 2; t++) {
			m += (g - m) * (1 - 0.9);
			v += (g * g - v) * (1 - 0.999);
			double alpha = 0.01 * sqrt(1 - pow(0.999, t)) / (1 - pow(0.9, t));
			x -= alpha * m / (sqrt(v) + 1e-7);
		}
		expect_close(r.w[i], x);
	}
}

/* The trainer updates slice by slice during the backward pass; the result
 * is bitwise the same as one step over the whole buffer. */
static void test_slices_update_exactly_as_one_step(void **state)
{
	struct optimizer a, b;
	float wa[N], ga[N], wb[N], gb[N];
	/* Together they cover 0..36 once: strided blocks as a dense layer
	 * reports them, then the rest. */
	const struct grad_slice parts[] = {
	    {1, 3, 5, 7},    /* 1-5, 8-12, 15-19 */
	    {0, 1, 1, 1},    /* 0 */
	    {6, 2, 2, 7},    /* 6-7, 13-14 */
	    {20, 1, 17, 17}, /* 20-36 */
	};
	(void)state;

	optimizer_init(&a, OPT_ADAM, 0.01f, 0.0f, N);
	optimizer_init(&b, OPT_ADAM, 0.01f, 0.0f, N);
	fill(wa, ga);
	fill(wb, gb);
	optimizer_step(&a, wa, ga);
	optimizer_begin_step(&b);
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		optimizer_apply_slice(&b, wb, gb, &parts[i]);
	assert_memory_equal(wa, wb, sizeof(wa));
	expect_zero(gb);
	optimizer_release(&a);
	optimizer_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sgd_follows_keras_and_consumes_the_gradients),
	    cmocka_unit_test(test_momentum_follows_keras_over_two_steps),
	    cmocka_unit_test(test_adam_follows_keras_over_two_steps),
	    cmocka_unit_test(test_slices_update_exactly_as_one_step),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
