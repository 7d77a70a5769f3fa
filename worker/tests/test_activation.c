/* test_activation.c - every activation of activation.h against its
 * definition computed in double, its backward pass against finite
 * differences of its forward pass, and the promises of the header: in
 * place, aliasing, which pass needs the input, thread-count independence. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "activation.h"
#include "err.h"
#include "gradcheck.h"
#include "parallel.h"

static const struct keras_act ACTS[] = {
    {.kind = KERAS_ACT_LINEAR},
    {.kind = KERAS_ACT_RELU},
    {.kind = KERAS_ACT_SIGMOID},
    {.kind = KERAS_ACT_TANH},
    {.kind = KERAS_ACT_SOFTMAX},
    {.kind = KERAS_ACT_GELU, .approximate = 0},
    {.kind = KERAS_ACT_GELU, .approximate = 1},
    {.kind = KERAS_ACT_LEAKY_RELU, .negative_slope = 0.2f},
    {.kind = KERAS_ACT_LEAKY_RELU, .negative_slope = 0.0f},
    {.kind = KERAS_ACT_LEAKY_RELU, .negative_slope = -0.5f},
};
#define NACTS (sizeof(ACTS) / sizeof(ACTS[0]))

static const char *act_label(const struct keras_act *a)
{
	static const char *const names[] = {"linear",  "relu", "sigmoid",   "tanh",
	                                    "softmax", "gelu", "leaky_relu"};
	static char buf[64];

	snprintf(buf, sizeof(buf), "%s(slope %g, approximate %d)", names[a->kind],
	         (double)a->negative_slope, a->approximate);
	return buf;
}

/* The definition of y for one element (every kind but softmax), in double. */
static double act_ref(double x, const struct keras_act *a)
{
	const double pi = 3.14159265358979323846;

	switch (a->kind) {
	case KERAS_ACT_RELU:
		return x > 0 ? x : 0;
	case KERAS_ACT_SIGMOID:
		return 1 / (1 + exp(-x));
	case KERAS_ACT_TANH:
		return tanh(x);
	case KERAS_ACT_GELU:
		if (a->approximate)
			return 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x * x * x)));
		return 0.5 * x * (1 + erf(x / sqrt(2.0)));
	case KERAS_ACT_LEAKY_RELU:
		return x > 0 ? x : a->negative_slope * x;
	default:
		return x;
	}
}

/* y (rows, cols) by the definition, softmax row by row. */
static void forward_ref(double *y, const float *x, size_t rows, size_t cols,
                        const struct keras_act *a)
{
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * cols;
		double *yr = y + r * cols, m = xr[0], s = 0;
		if (a->kind != KERAS_ACT_SOFTMAX) {
			for (size_t j = 0; j < cols; j++)
				yr[j] = act_ref(xr[j], a);
			continue;
		}
		for (size_t j = 0; j < cols; j++)
			m = xr[j] > m ? xr[j] : m;
		for (size_t j = 0; j < cols; j++)
			s += exp(xr[j] - m);
		for (size_t j = 0; j < cols; j++)
			yr[j] = exp(xr[j] - m) / s;
	}
}

enum { ROWS = 6, COLS = 7, N = ROWS * COLS };

/* Inputs in [-4, 4] plus a few that matter: 0, -0, and far out where exp
 * and tanh saturate. */
static void fill_inputs(float *x, size_t n, uint64_t seed)
{
	static const float special[] = {0.0f, -0.0f, 1e-3f, -1e-3f, 12.0f, -12.0f, 30.0f, -30.0f};

	fill_uniform(x, n, -4, 4, seed);
	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]) && i < n; i++)
		x[i * 5 % n] = special[i];
}

static void test_every_activation_matches_its_definition(void **state)
{
	float x[N], y[N];
	double want[N];
	(void)state;

	fill_inputs(x, N, 1);
	for (size_t k = 0; k < NACTS; k++) {
		const struct keras_act *a = &ACTS[k];
		act_forward(y, x, ROWS, COLS, a);
		forward_ref(want, x, ROWS, COLS, a);
		for (size_t i = 0; i < N; i++)
			if (!(fabs(y[i] - want[i]) <= 1e-6 * (1 + fabs(want[i]))))
				fail_msg("%s at x = %g: %.9g, want %.9g", act_label(a),
				         (double)x[i], (double)y[i], want[i]);
	}
}

/* Softmax rows sum to 1 and stay finite for logits far beyond exp's
 * range, because the row's maximum is subtracted first. */
static void test_softmax_is_stable_for_huge_logits(void **state)
{
	const struct keras_act a = {.kind = KERAS_ACT_SOFTMAX};
	float big[4] = {1000.0f, 1001.0f, 1002.0f, -1000.0f},
	      small[4] = {0.0f, 1.0f, 2.0f, -2000.0f};
	float yb[4], ys[4];
	(void)state;

	act_forward(yb, big, 1, 4, &a);
	act_forward(ys, small, 1, 4, &a);
	double s = 0;
	for (int j = 0; j < 4; j++) {
		assert_true(isfinite(yb[j]));
		assert_true(yb[j] == ys[j]);
		s += yb[j];
	}
	assert_true(fabs(s - 1) < 1e-6);
	assert_true(yb[3] == 0.0f);
}

/* TensorFlow's LeakyRelu selects on x > 0: x = 0 takes the slope branch,
 * so its gradient there is the slope (and ReLU's is 0). */
static void test_leaky_relu_at_zero_takes_the_slope_branch(void **state)
{
	const struct keras_act leaky = {.kind = KERAS_ACT_LEAKY_RELU, .negative_slope = 0.2f};
	const struct keras_act relu = {.kind = KERAS_ACT_RELU};
	float x[3] = {0.0f, -0.0f, 2.0f}, y[3], dy[3] = {1.0f, 1.0f, 1.0f}, dx[3];
	(void)state;

	act_forward(y, x, 1, 3, &leaky);
	assert_true(y[0] == 0.0f && y[1] == 0.0f && y[2] == 2.0f);
	act_backward(dx, dy, y, NULL, 1, 3, &leaky);
	assert_true(dx[0] == 0.2f && dx[1] == 0.2f && dx[2] == 1.0f);
	act_forward(y, x, 1, 3, &relu);
	act_backward(dx, dy, y, NULL, 1, 3, &relu);
	assert_true(dx[0] == 0.0f && dx[1] == 0.0f && dx[2] == 1.0f);
}

static void test_only_gelu_and_a_sign_flipping_leaky_relu_need_the_input(void **state)
{
	(void)state;

	for (size_t k = 0; k < NACTS; k++) {
		const struct keras_act *a = &ACTS[k];
		int want = a->kind == KERAS_ACT_GELU ||
		           (a->kind == KERAS_ACT_LEAKY_RELU && a->negative_slope < 0);
		assert_int_equal(act_backward_needs_input(a), want);
	}
}

static double loss(const float *x, const float *r, const struct keras_act *a)
{
	float y[N];

	act_forward(y, x, ROWS, COLS, a);
	return dot_d(y, r, N);
}

/* L = sum(r * act(x)) differentiated numerically in every element. The
 * backward pass gets x only where act_backward_needs_input asks, so a
 * kind that reads x without saying so fails here. Inputs keep clear of
 * the kinks of relu and leaky_relu. */
static void test_every_activation_gradient_matches_finite_differences(void **state)
{
	float x[N], y[N], r[N], dx[N];
	double num[N];
	(void)state;

	fill_uniform(x, N, -3, 3, 2);
	fill_uniform(r, N, -1, 1, 3);
	for (size_t i = 0; i < N; i++)
		if (fabsf(x[i]) < 4 * GRADCHECK_H)
			x[i] += x[i] < 0 ? -0.1f : 0.1f;
	for (size_t k = 0; k < NACTS; k++) {
		const struct keras_act *a = &ACTS[k];
		act_forward(y, x, ROWS, COLS, a);
		act_backward(dx, r, y, act_backward_needs_input(a) ? x : NULL, ROWS, COLS, a);
		for (size_t i = 0; i < N; i++) {
			float keep = x[i];
			x[i] = keep + GRADCHECK_H;
			double up = loss(x, r, a);
			x[i] = keep - GRADCHECK_H;
			double down = loss(x, r, a);
			x[i] = keep;
			num[i] = (up - down) / (2.0 * GRADCHECK_H);
		}
		assert_int_equal(grad_mismatches(act_label(a), dx, num, N), 0);
	}
}

/* In the tanh form of gelu, 1 - t^2 is 0 for large |x| while x^2 may be
 * infinite: the gradient must still be the plain 1 (or 0), not NaN. */
static void test_gelu_gradient_stays_finite_for_huge_inputs(void **state)
{
	float x[4] = {1e20f, -1e20f, 3e38f, -3e38f}, dy[4] = {1, 1, 1, 1}, y[4], dx[4];
	(void)state;

	for (int approximate = 0; approximate < 2; approximate++) {
		const struct keras_act a = {.kind = KERAS_ACT_GELU, .approximate = approximate};
		act_forward(y, x, 1, 4, &a);
		act_backward(dx, dy, y, x, 1, 4, &a);
		for (int i = 0; i < 4; i++) {
			assert_true(dx[i] == (x[i] > 0 ? 1.0f : 0.0f));
			assert_true(y[i] == (x[i] > 0 ? x[i] : 0.0f));
		}
	}
}

/* y may be x; dx may be dy: the same bits as with separate buffers. */
static void test_in_place_and_aliased_passes_give_the_same_bits(void **state)
{
	float x[N], y[N], r[N], dx[N], inplace[N], grad[N];
	(void)state;

	fill_inputs(x, N, 4);
	fill_uniform(r, N, -1, 1, 5);
	for (size_t k = 0; k < NACTS; k++) {
		const struct keras_act *a = &ACTS[k];
		act_forward(y, x, ROWS, COLS, a);
		act_backward(dx, r, y, x, ROWS, COLS, a);
		memcpy(inplace, x, sizeof(x));
		act_forward(inplace, inplace, ROWS, COLS, a);
		assert_memory_equal(inplace, y, sizeof(y));
		memcpy(grad, r, sizeof(r));
		act_backward(grad, grad, y, x, ROWS, COLS, a);
		assert_memory_equal(grad, dx, sizeof(dx));
	}
}

/* Big enough to be shared among the threads (PARALLEL_MIN_ELEMS), with
 * rows that do not divide evenly among them. */
enum { BIG_ROWS = 301, BIG_COLS = 250, BIG = BIG_ROWS * BIG_COLS };

static void run_all(float *y, float *dx, const float *x, const float *r)
{
	for (size_t k = 0; k < NACTS; k++) {
		act_forward(y + k * BIG, x, BIG_ROWS, BIG_COLS, &ACTS[k]);
		act_backward(dx + k * BIG, r, y + k * BIG, x, BIG_ROWS, BIG_COLS, &ACTS[k]);
	}
}

static void test_results_do_not_depend_on_the_thread_count(void **state)
{
	size_t bytes = NACTS * BIG * sizeof(float);
	float *x = malloc(BIG * sizeof(float)), *r = malloc(BIG * sizeof(float));
	float *y1 = malloc(bytes), *dx1 = malloc(bytes), *y3 = malloc(bytes), *dx3 = malloc(bytes);
	char err[ERR_LEN];
	(void)state;

	assert_true(BIG >= PARALLEL_MIN_ELEMS);
	fill_inputs(x, BIG, 6);
	fill_uniform(r, BIG, -1, 1, 7);
	run_all(y1, dx1, x, r);
	assert_int_equal(parallel_init(3, err), 0);
	run_all(y3, dx3, x, r);
	parallel_shutdown();
	assert_memory_equal(y1, y3, bytes);
	assert_memory_equal(dx1, dx3, bytes);
	free(x), free(r), free(y1), free(dx1), free(y3), free(dx3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_activation_matches_its_definition),
	    cmocka_unit_test(test_softmax_is_stable_for_huge_logits),
	    cmocka_unit_test(test_leaky_relu_at_zero_takes_the_slope_branch),
	    cmocka_unit_test(test_only_gelu_and_a_sign_flipping_leaky_relu_need_the_input),
	    cmocka_unit_test(test_every_activation_gradient_matches_finite_differences),
	    cmocka_unit_test(test_gelu_gradient_stays_finite_for_huge_inputs),
	    cmocka_unit_test(test_in_place_and_aliased_passes_give_the_same_bits),
	    cmocka_unit_test(test_results_do_not_depend_on_the_thread_count),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
