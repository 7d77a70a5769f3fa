/* test_dropout.c - inverted dropout (dropout.h): the kept fraction, the
 * scale, a mask that depends only on (key, position, element), and a
 * backward pass that reuses it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dropout.h"
#include "err.h"
#include "gradcheck.h"
#include "parallel.h"

#define KEY 0x243F6A8885A308D3ull

/* The mask as dropout.h documents it, written out again, so that a change
 * of the hash (which would change every saved run's masks) fails here. */
static uint64_t splitmix_final(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static int documented_keep(uint64_t key, uint64_t pos, uint64_t elem, float rate)
{
	const uint64_t g = 0x9E3779B97F4A7C15ull;
	uint64_t row = splitmix_final(key ^ splitmix_final((pos + 1) * g));
	uint64_t bits = splitmix_final(row + (elem + 1) * g);

	return (double)(bits >> 40) / 16777216.0 >= rate;
}

static float *ones(size_t n)
{
	float *p = malloc(n * sizeof(float));

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = 1.0f;
	return p;
}

static void test_the_mask_is_the_documented_hash(void **state)
{
	(void)state;

	for (uint64_t pos = 0; pos < 20; pos++)
		for (uint64_t e = 0; e < 50; e++)
			assert_int_equal(dropout_keep(KEY, pos * 1000003, e, 0.4f),
			                 documented_keep(KEY, pos * 1000003, e, 0.4f));
}

/* Over about a million values the kept fraction is 1 - rate to within
 * 0.003 (more than ten standard deviations), and the mean of a tensor of
 * ones stays 1: what inverted dropout is for. */
static void test_kept_fraction_is_near_one_minus_rate(void **state)
{
	const int B = 64;
	const size_t len = 16384, n = (size_t)B * len;
	const float rates[] = {0.1f, 0.3f, 0.5f, 0.9f};
	float *in = ones(n), *out = malloc(n * sizeof(float));
	(void)state;

	for (int k = 0; k < 4; k++) {
		size_t kept = 0;
		double sum = 0;
		dropout_forward(out, in, B, len, KEY + (uint64_t)k, 1000, rates[k]);
		for (size_t i = 0; i < n; i++) {
			kept += out[i] != 0.0f;
			sum += out[i];
		}
		double frac = (double)kept / (double)n;
		assert_true(fabs(frac - (1.0 - rates[k])) < 0.003);
		assert_true(fabs(sum / (double)n - 1.0) < 0.003 / (1.0 - rates[k]));
	}
	free(in), free(out);
}

/* Every value is dropped to 0 or multiplied by 1 / (1 - rate), and which
 * one is dropout_keep's answer for its place. */
static void test_kept_values_are_scaled_and_dropped_values_are_zero(void **state)
{
	enum { B = 5, LEN = 300 };
	float in[B * LEN], out[B * LEN];
	const float rate = 0.25f, scale = (float)(1.0 / 0.75);
	(void)state;

	assert_true(dropout_scale(rate) == scale);
	fill_uniform(in, B * LEN, 0.5f, 2.0f, 1);
	dropout_forward(out, in, B, LEN, KEY, 77, rate);
	for (int b = 0; b < B; b++)
		for (int e = 0; e < LEN; e++) {
			float want = dropout_keep(KEY, 77 + (uint64_t)b, (uint64_t)e, rate)
			                 ? in[b * LEN + e] * scale
			                 : 0.0f;
			assert_true(out[b * LEN + e] == want);
		}
}

/* An example at position p gets the same mask in a batch that starts at
 * p as in one that starts at p - 3, and on 1 or 3 threads. */
static void test_the_mask_does_not_depend_on_the_batch_split(void **state)
{
	enum { LEN = 9000 };
	const uint64_t p = 500;
	float *in = ones((size_t)11 * LEN);
	float *a = malloc(sizeof(float) * 8 * LEN), *b = malloc(sizeof(float) * 11 * LEN);
	float *c = malloc(sizeof(float) * 11 * LEN);
	char err[ERR_LEN];
	(void)state;

	dropout_forward(a, in, 8, LEN, KEY, p, 0.5f);
	dropout_forward(b, in, 11, LEN, KEY, p - 3, 0.5f);
	assert_memory_equal(a, b + 3 * LEN, sizeof(float) * 8 * LEN);
	assert_true(11 * LEN >= PARALLEL_MIN_ELEMS);
	assert_int_equal(parallel_init(3, err), 0);
	dropout_forward(c, in, 11, LEN, KEY, p - 3, 0.5f);
	parallel_shutdown();
	assert_memory_equal(b, c, sizeof(float) * 11 * LEN);
	free(in), free(a), free(b), free(c);
}

/* Two layers' keys, and two positions under one key, give masks that
 * agree about as often as independent ones would: p^2 + (1 - p)^2. */
static void test_layers_and_positions_draw_unrelated_masks(void **state)
{
	const size_t len = 200000;
	const float rate = 0.5f;
	uint64_t k0 = dropout_key(42, 0), k1 = dropout_key(42, 1);
	size_t same_layer = 0, same_pos = 0, same_seed = 0;
	(void)state;

	assert_true(k0 != k1);
	assert_true(dropout_key(42, 0) == k0);
	assert_true(dropout_key(43, 0) != k0);
	for (size_t e = 0; e < len; e++) {
		int m = dropout_keep(k0, 7, e, rate);
		same_layer += m == dropout_keep(k1, 7, e, rate);
		same_pos += m == dropout_keep(k0, 8, e, rate);
		same_seed += m == dropout_keep(dropout_key(43, 0), 7, e, rate);
	}
	assert_true(fabs((double)same_layer / (double)len - 0.5) < 0.01);
	assert_true(fabs((double)same_pos / (double)len - 0.5) < 0.01);
	assert_true(fabs((double)same_seed / (double)len - 0.5) < 0.01);
}

static void test_rate_zero_is_the_identity(void **state)
{
	enum { N = 1000 };
	float in[N], out[N];
	(void)state;

	fill_uniform(in, N, -3, 3, 2);
	in[0] = -0.0f;
	dropout_forward(out, in, 10, N / 10, KEY, 0, 0.0f);
	assert_memory_equal(out, in, sizeof(in));
	dropout_backward(out, in, 10, N / 10, KEY, 0, 0.0f);
	assert_memory_equal(out, in, sizeof(in));
}

static void test_rate_one_drops_everything(void **state)
{
	enum { N = 500 };
	float in[N], out[N];
	(void)state;

	fill_uniform(in, N, -3, 3, 3);
	dropout_forward(out, in, 5, N / 5, KEY, 0, 1.0f);
	for (int i = 0; i < N; i++)
		assert_true(out[i] == 0.0f);
}

/* Dropout is linear in its input for a fixed mask, so the backward pass
 * must equal the finite differences of the forward pass exactly where the
 * mask is the same; in place (out = in, din = dout) gives the same bits. */
static void test_backward_uses_the_forward_mask(void **state)
{
	enum { B = 4, LEN = 25, N = B * LEN };
	float x[N], r[N], out[N], din[N], again[N];
	double num[N];
	const uint64_t key = dropout_key(9, 3);
	(void)state;

	fill_uniform(x, N, -1, 1, 4);
	fill_uniform(r, N, -1, 1, 5);
	dropout_backward(din, r, B, LEN, key, 123, 0.3f);
	for (int i = 0; i < N; i++) {
		float keep = x[i];
		x[i] = keep + GRADCHECK_H;
		dropout_forward(out, x, B, LEN, key, 123, 0.3f);
		double up = dot_d(out, r, N);
		x[i] = keep - GRADCHECK_H;
		dropout_forward(out, x, B, LEN, key, 123, 0.3f);
		double down = dot_d(out, r, N);
		x[i] = keep;
		num[i] = (up - down) / (2.0 * GRADCHECK_H);
	}
	assert_int_equal(grad_mismatches("dropout din", din, num, N), 0);
	dropout_forward(out, x, B, LEN, key, 123, 0.3f);
	for (int i = 0; i < N; i++)
		assert_int_equal(din[i] != 0.0f, out[i] != 0.0f);
	memcpy(again, r, sizeof(r));
	dropout_backward(again, again, B, LEN, key, 123, 0.3f);
	assert_memory_equal(again, din, sizeof(din));
	memcpy(again, x, sizeof(x));
	dropout_forward(again, again, B, LEN, key, 123, 0.3f);
	assert_memory_equal(again, out, sizeof(out));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_the_mask_is_the_documented_hash),
	    cmocka_unit_test(test_kept_fraction_is_near_one_minus_rate),
	    cmocka_unit_test(test_kept_values_are_scaled_and_dropped_values_are_zero),
	    cmocka_unit_test(test_the_mask_does_not_depend_on_the_batch_split),
	    cmocka_unit_test(test_layers_and_positions_draw_unrelated_masks),
	    cmocka_unit_test(test_rate_zero_is_the_identity),
	    cmocka_unit_test(test_rate_one_drops_everything),
	    cmocka_unit_test(test_backward_uses_the_forward_mask),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
