/* test_layers.c - every layer's backward pass against finite differences of
 * its forward pass, and the forward passes against direct definitions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "activation.h"
#include "conv.h"
#include "dense.h"
#include "err.h"
#include "gradcheck.h"
#include "loss.h"
#include "parallel.h"
#include "pool.h"

/* Conv: B=2, 5x6 input with 2 channels, 3x3 kernel, 3 filters, so that the
 * input gradient (col2im) is exercised with C > 1. */
enum { CB = 2, CH = 5, CW = 6, CC = 2, CK = 3, COC = 3, COH = CH - CK + 1, COW = CW - CK + 1 };
#define C_IN   (CB * CH * CW * CC)
#define C_W    (CK * CK * CC * COC)
#define C_OUT  (CB * COH * COW * COC)
#define C_COLS ((CK * CK * CC + 1) * CB * COH * COW)

/* One variable of a finite-difference check: its n elements at x, and
 * where their numeric gradients go. */
struct fd_var {
	float *x;
	double *num;
	size_t n;
};

typedef double (*conv_loss_fn)(const float *in, const float *wb, const float *r);

/* Central differences of loss(in, wb, r) for every element of every var
 * (each x points into in or wb). */
static void conv_numeric_grads(struct fd_var *vars, int nvars, conv_loss_fn loss, const float *in,
                               const float *wb, const float *r)
{
	for (int v = 0; v < nvars; v++) {
		for (size_t i = 0; i < vars[v].n; i++) {
			float keep = vars[v].x[i];
			vars[v].x[i] = keep + GRADCHECK_H;
			double up = loss(in, wb, r);
			vars[v].x[i] = keep - GRADCHECK_H;
			double down = loss(in, wb, r);
			vars[v].x[i] = keep;
			vars[v].num[i] = (up - down) / (2.0 * GRADCHECK_H);
		}
	}
}

static double conv_loss(const float *in, const float *wb, const float *r)
{
	float out[C_OUT], cols[C_COLS];

	conv_forward(out, cols, in, wb, CB, CH, CW, CC, CK, CK, COC, 0);
	return dot_d(out, r, C_OUT);
}

static void test_conv_forward_matches_direct_convolution(void **state)
{
	float in[C_IN], wb[C_W + COC], out[C_OUT], cols[C_COLS];
	const float *w = wb, *b = wb + C_W;
	(void)state;

	assert_int_equal(conv_cols_len(CB, CH, CW, CC, CK, CK, COC), C_COLS);
	fill_uniform(in, C_IN, -1, 1, 1);
	fill_uniform(wb, C_W + COC, -1, 1, 2);
	conv_forward(out, cols, in, wb, CB, CH, CW, CC, CK, CK, COC, 0);
	for (int n = 0; n < CB; n++)
		for (int oh = 0; oh < COH; oh++)
			for (int ow = 0; ow < COW; ow++)
				for (int o = 0; o < COC; o++) {
					double s = b[o];
					for (int kh = 0; kh < CK; kh++)
						for (int kw = 0; kw < CK; kw++)
							for (int c = 0; c < CC; c++)
								s +=
								    (double)in[((n * CH + oh + kh) *
								                    CW +
								                ow + kw) *
								                   CC +
								               c] *
								    w[((kh * CK + kw) * CC + c) *
								          COC +
								      o];
					float got = out[((n * COH + oh) * COW + ow) * COC + o];
					assert_float_equal(got, s, 1e-5);
				}
}

static void test_conv_gradients_match_finite_differences(void **state)
{
	float in[C_IN], wb[C_W + COC], r[C_OUT], out[C_OUT], cols[C_COLS], dcols[C_COLS];
	float dwb[C_W + COC], din[C_IN];
	float *w = wb, *b = wb + C_W, *dw = dwb, *db = dwb + C_W;
	double num_w[C_W], num_b[COC], num_in[C_IN];
	(void)state;

	fill_uniform(in, C_IN, -1, 1, 4);
	fill_uniform(wb, C_W + COC, -1, 1, 5);
	fill_uniform(r, C_OUT, -1, 1, 7);
	conv_forward(out, cols, in, wb, CB, CH, CW, CC, CK, CK, COC, 0);
	conv_backward(dwb, din, dcols, r, in, cols, wb, CB, CH, CW, CC, CK, CK, COC);
	struct fd_var vars[] = {{w, num_w, C_W}, {b, num_b, COC}, {in, num_in, C_IN}};
	conv_numeric_grads(vars, 3, conv_loss, in, wb, r);
	assert_int_equal(grad_mismatches("conv dw", dw, num_w, C_W), 0);
	assert_int_equal(grad_mismatches("conv db", db, num_b, COC), 0);
	assert_int_equal(grad_mismatches("conv din", din, num_in, C_IN), 0);
}

/* Conv on the direct path (conv.h): one channel, 3x3, 32 filters; B=4,
 * 5x6 input. */
enum { XB = 4, XH = 5, XW = 6, XOC = 32, XOH = XH - 2, XOW = XW - 2 };
#define X_IN   (XB * XH * XW)
#define X_W    (9 * XOC)
#define X_OUT  (XB * XOH * XOW * XOC)
#define X_COLS (10 * XB * XOH * XOW)

static double direct_loss(const float *in, const float *wb, const float *r)
{
	static float out[X_OUT], cols[X_COLS];

	conv_forward(out, cols, in, wb, XB, XH, XW, 1, 3, 3, XOC, 0);
	return dot_d(out, r, X_OUT);
}

/* Random in, wb and output gradient r from seed, then one forward and
 * backward pass on the direct path. */
static void direct_pass(float *in, float *wb, float *r, float *out, float *cols, float *dwb,
                        float *din, uint64_t seed)
{
	fill_uniform(in, X_IN, -1, 1, seed);
	fill_uniform(wb, X_W + XOC, -1, 1, seed + 1);
	fill_uniform(r, X_OUT, -1, 1, seed + 2);
	conv_forward(out, cols, in, wb, XB, XH, XW, 1, 3, 3, XOC, 0);
	conv_backward(dwb, din, NULL, r, in, cols, wb, XB, XH, XW, 1, 3, 3, XOC);
}

static void test_direct_conv_forward_matches_definition_and_fuses_relu(void **state)
{
	static float in[X_IN], wb[X_W + XOC], out[X_OUT], relu[X_OUT], cols[X_COLS];
	(void)state;

	assert_int_equal(conv_cols_len(XB, XH, XW, 1, 3, 3, XOC), 0);
	fill_uniform(in, X_IN, -1, 1, 31);
	fill_uniform(wb, X_W + XOC, -1, 1, 32);
	conv_forward(out, cols, in, wb, XB, XH, XW, 1, 3, 3, XOC, 0);
	conv_forward(relu, cols, in, wb, XB, XH, XW, 1, 3, 3, XOC, 1);
	for (int n = 0; n < XB; n++)
		for (int oh = 0; oh < XOH; oh++)
			for (int ow = 0; ow < XOW; ow++)
				for (int o = 0; o < XOC; o++) {
					double s = wb[X_W + o];
					for (int kh = 0; kh < 3; kh++)
						for (int kw = 0; kw < 3; kw++)
							s += (double)in[(n * XH + oh + kh) * XW +
							                ow + kw] *
							     wb[(kh * 3 + kw) * XOC + o];
					size_t at = ((size_t)(n * XOH + oh) * XOW + ow) * XOC + o;
					assert_float_equal(out[at], s, 1e-5);
					assert_true(relu[at] == (out[at] > 0.0f ? out[at] : 0.0f));
				}
}

static void test_direct_conv_gradients_match_finite_differences(void **state)
{
	static float in[X_IN], wb[X_W + XOC], r[X_OUT], out[X_OUT], cols[X_COLS];
	static float dwb[X_W + XOC], din[X_IN];
	static double num_wb[X_W + XOC], num_in[X_IN];
	(void)state;

	direct_pass(in, wb, r, out, cols, dwb, din, 34);
	struct fd_var vars[] = {{wb, num_wb, X_W + XOC}, {in, num_in, X_IN}};
	conv_numeric_grads(vars, 2, direct_loss, in, wb, r);
	assert_int_equal(grad_mismatches("direct conv dw and db", dwb, num_wb, X_W + XOC), 0);
	assert_int_equal(grad_mismatches("direct conv din", din, num_in, X_IN), 0);
}

/* Over 3 compute threads each thread sums its examples and the partial sums
 * are added in thread order: the same up to rounding as on one thread, and
 * the same bits on every run; the input gradient, per example, is exact. */
static void test_direct_conv_backward_on_three_threads(void **state)
{
	static float in[X_IN], wb[X_W + XOC], r[X_OUT], out[X_OUT], cols[X_COLS];
	static float dwb1[X_W + XOC], din1[X_IN], dwb3[X_W + XOC], din3[X_IN], again[X_W + XOC];
	char err[ERR_LEN];
	(void)state;

	direct_pass(in, wb, r, out, cols, dwb1, din1, 41);
	assert_int_equal(parallel_init(3, err), 0);
	float *fwd3 = malloc(sizeof(out));
	conv_forward(fwd3, cols, in, wb, XB, XH, XW, 1, 3, 3, XOC, 0);
	assert_memory_equal(fwd3, out, sizeof(out));
	conv_backward(dwb3, din3, NULL, r, in, cols, wb, XB, XH, XW, 1, 3, 3, XOC);
	conv_backward(again, din3, NULL, r, in, cols, wb, XB, XH, XW, 1, 3, 3, XOC);
	parallel_shutdown();
	free(fwd3);
	assert_memory_equal(din3, din1, sizeof(din1));
	assert_memory_equal(again, dwb3, sizeof(dwb3));
	for (int i = 0; i < X_W + XOC; i++)
		assert_float_equal(dwb3[i], dwb1[i], 1e-5);
}

/* Dense: B=3, 7 -> 4. */
enum { DB = 3, DIN = 7, DOUT = 4 };

static double dense_loss(const float *in, const float *w, const float *b, const float *r)
{
	float out[DB * DOUT];

	dense_forward(out, in, w, b, DB, DIN, DOUT);
	return dot_d(out, r, DB * DOUT);
}

static void test_dense_gradients_match_finite_differences(void **state)
{
	float in[DB * DIN], w[DOUT * DIN], b[DOUT], r[DB * DOUT], out[DB * DOUT];
	float dw[DOUT * DIN], db[DOUT], din[DB * DIN];
	double num_w[DOUT * DIN], num_b[DOUT], num_in[DB * DIN];
	(void)state;

	fill_uniform(in, DB * DIN, -1, 1, 8);
	fill_uniform(w, DOUT * DIN, -1, 1, 9);
	fill_uniform(b, DOUT, -1, 1, 10);
	fill_uniform(r, DB * DOUT, -1, 1, 11);
	dense_forward(out, in, w, b, DB, DIN, DOUT);
	for (int i = 0; i < DB; i++)
		for (int o = 0; o < DOUT; o++) {
			double s = b[o];
			for (int k = 0; k < DIN; k++)
				s += (double)in[i * DIN + k] * w[o * DIN + k];
			assert_float_equal(out[i * DOUT + o], s, 1e-5);
		}
	dense_backward(dw, db, din, r, in, w, DB, DIN, DOUT, 0, NULL, NULL, 0);
	struct {
		float *x;
		double *num;
		size_t n;
	} vars[] = {{w, num_w, DOUT * DIN}, {b, num_b, DOUT}, {in, num_in, DB * DIN}};
	for (int v = 0; v < 3; v++) {
		for (size_t i = 0; i < vars[v].n; i++) {
			float keep = vars[v].x[i];
			vars[v].x[i] = keep + GRADCHECK_H;
			double up = dense_loss(in, w, b, r);
			vars[v].x[i] = keep - GRADCHECK_H;
			double down = dense_loss(in, w, b, r);
			vars[v].x[i] = keep;
			vars[v].num[i] = (up - down) / (2.0 * GRADCHECK_H);
		}
	}
	assert_int_equal(grad_mismatches("dense dw", dw, num_w, DOUT * DIN), 0);
	assert_int_equal(grad_mismatches("dense db", db, num_b, DOUT), 0);
	assert_int_equal(grad_mismatches("dense din", din, num_in, DB * DIN), 0);
}

/* ReLU: values kept at least 0.1 away from the kink, where the derivative
 * is undefined and a finite difference straddling it would be meaningless. */
static void test_relu_gradient_matches_finite_differences(void **state)
{
	enum { N = 64 };
	float x[N], y[N], r[N], d[N];
	double num[N];
	(void)state;

	fill_uniform(x, N, -1, 1, 12);
	for (int i = 0; i < N; i++)
		x[i] += x[i] >= 0 ? 0.1f : -0.1f;
	fill_uniform(r, N, -1, 1, 13);
	for (int i = 0; i < N; i++) {
		float t[2] = {x[i] + GRADCHECK_H, x[i] - GRADCHECK_H};
		relu_forward(t, 2);
		num[i] = ((double)t[0] - t[1]) * r[i] / (2.0 * GRADCHECK_H);
	}
	memcpy(y, x, sizeof(y));
	relu_forward(y, N);
	memcpy(d, r, sizeof(d));
	relu_backward(d, y, N);
	for (int i = 0; i < N; i++)
		assert_true(y[i] >= 0 && (x[i] > 0 ? y[i] == x[i] : y[i] == 0));
	assert_int_equal(grad_mismatches("relu", d, num, N), 0);
}

/* Max pool: 2 images of 5x4x3, so an odd row is dropped. Distinct values
 * spaced more than 2h apart keep every window's maximum where it is. */
enum { PB = 2, PH = 5, PW = 4, PC = 3, POH = PH / 2, POW = PW / 2 };
#define P_IN  (PB * PH * PW * PC)
#define P_OUT (PB * POH * POW * PC)

static void test_maxpool_gradient_matches_finite_differences(void **state)
{
	float in[P_IN], out[P_OUT], r[P_OUT], din[P_IN];
	double num[P_IN];
	(void)state;

	for (int i = 0; i < P_IN; i++)
		in[i] = 0.05f * (float)((i * 37) % P_IN);
	fill_uniform(r, P_OUT, -1, 1, 14);
	maxpool_forward(out, in, PB, PH, PW, PC);
	maxpool_backward(din, r, in, out, PB, PH, PW, PC, 0);
	for (int i = 0; i < P_IN; i++) {
		float keep = in[i], o[P_OUT];
		in[i] = keep + GRADCHECK_H;
		maxpool_forward(o, in, PB, PH, PW, PC);
		double up = dot_d(o, r, P_OUT);
		in[i] = keep - GRADCHECK_H;
		maxpool_forward(o, in, PB, PH, PW, PC);
		double down = dot_d(o, r, P_OUT);
		in[i] = keep;
		num[i] = (up - down) / (2.0 * GRADCHECK_H);
	}
	assert_int_equal(grad_mismatches("maxpool din", din, num, P_IN), 0);
	/* The dropped last row gets no gradient. */
	for (int b = 0; b < PB; b++)
		for (int j = 0; j < PW * PC; j++)
			assert_true(din[(b * PH + PH - 1) * PW * PC + j] == 0.0f);
}

static void test_maxpool_routes_ties_to_the_first_maximum(void **state)
{
	float in[4] = {1, 1, 1, 1}, out[1], dout[1] = {5}, din[4];
	(void)state;

	maxpool_forward(out, in, 1, 2, 2, 1);
	maxpool_backward(din, dout, in, out, 1, 2, 2, 1, 0);
	assert_true(out[0] == 1.0f);
	assert_true(din[0] == 5.0f && din[1] == 0.0f && din[2] == 0.0f && din[3] == 0.0f);
}

/* Softmax cross-entropy: B=4, K=5, mean over the batch. */
static void test_softmax_xent_gradient_matches_finite_differences(void **state)
{
	enum { B = 4, K = 5 };
	float z[B * K], dz[B * K];
	double num[B * K];
	uint8_t y[B] = {0, 3, 4, 1};
	(void)state;

	fill_uniform(z, B * K, -3, 3, 15);
	loss_softmax_xent(dz, z, y, B, K, 1.0f / B);
	for (int i = 0; i < B * K; i++) {
		float keep = z[i];
		z[i] = keep + GRADCHECK_H;
		double up = loss_softmax_xent(NULL, z, y, B, K, 0).loss / B;
		z[i] = keep - GRADCHECK_H;
		double down = loss_softmax_xent(NULL, z, y, B, K, 0).loss / B;
		z[i] = keep;
		num[i] = (up - down) / (2.0 * GRADCHECK_H);
	}
	assert_int_equal(grad_mismatches("xent dz", dz, num, B * K), 0);
}

static void test_softmax_xent_matches_definition_and_counts_argmax_hits(void **state)
{
	float z[2 * 3] = {1, 2, 3, 5, 5, 0};
	uint8_t y[2] = {2, 1};
	(void)state;

	struct loss_sums s = loss_softmax_xent(NULL, z, y, 2, 3, 0);
	double l0 = -log(exp(3.0) / (exp(1.0) + exp(2.0) + exp(3.0)));
	double l1 = -log(exp(5.0) / (exp(5.0) + exp(5.0) + exp(0.0)));
	assert_float_equal(s.loss, l0 + l1, 1e-6);
	/* The second row ties between classes 0 and 1: argmax takes class 0. */
	assert_int_equal(s.correct, 1);
}

static void test_softmax_xent_is_stable_for_huge_logits(void **state)
{
	float z[3] = {1000, -1000, 0}, dz[3];
	uint8_t y[1] = {0};
	(void)state;

	struct loss_sums s = loss_softmax_xent(dz, z, y, 1, 3, 1.0f);
	assert_true(isfinite(s.loss) && s.loss < 1e-6);
	assert_true(isfinite(dz[0]) && isfinite(dz[1]) && isfinite(dz[2]));
}

/* The fused ReLU backward passes: a dense layer masking its input gradient,
 * and a max pool routing nothing from a window whose maximum is 0, give
 * what a separate relu_backward would. */
static void test_dense_input_mask_equals_a_separate_relu_backward(void **state)
{
	float in[DB * DIN], w[DOUT * DIN], r[DB * DOUT], dw[DOUT * DIN], db[DOUT];
	float plain[DB * DIN], fused[DB * DIN];
	(void)state;

	fill_uniform(in, DB * DIN, -1, 1, 20);
	relu_forward(in, DB * DIN);
	fill_uniform(w, DOUT * DIN, -1, 1, 21);
	fill_uniform(r, DB * DOUT, -1, 1, 22);
	dense_backward(dw, db, plain, r, in, w, DB, DIN, DOUT, 0, NULL, NULL, 0);
	relu_backward(plain, in, DB * DIN);
	dense_backward(dw, db, fused, r, in, w, DB, DIN, DOUT, DENSE_MASK_BY_INPUT, NULL, NULL, 0);
	assert_memory_equal(plain, fused, sizeof(plain));
}

static void test_maxpool_input_mask_equals_a_separate_relu_backward(void **state)
{
	float in[P_IN], out[P_OUT], r[P_OUT], plain[P_IN], fused[P_IN];
	(void)state;

	fill_uniform(in, P_IN, -1, 1, 23);
	relu_forward(in, P_IN);
	fill_uniform(r, P_OUT, -1, 1, 24);
	maxpool_forward(out, in, PB, PH, PW, PC);
	maxpool_backward(plain, r, in, out, PB, PH, PW, PC, 0);
	relu_backward(plain, in, P_IN);
	maxpool_backward(fused, r, in, out, PB, PH, PW, PC, 1);
	assert_memory_equal(plain, fused, sizeof(plain));
}

static void test_conv_forward_with_relu_equals_relu_after_conv(void **state)
{
	float in[C_IN], wb[C_W + COC], plain[C_OUT], fused[C_OUT], cols[C_COLS];
	(void)state;

	fill_uniform(in, C_IN, -1, 1, 25);
	fill_uniform(wb, C_W + COC, -1, 1, 26);
	conv_forward(plain, cols, in, wb, CB, CH, CW, CC, CK, CK, COC, 0);
	relu_forward(plain, C_OUT);
	conv_forward(fused, cols, in, wb, CB, CH, CW, CC, CK, CK, COC, 1);
	assert_memory_equal(plain, fused, sizeof(plain));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_conv_forward_matches_direct_convolution),
	    cmocka_unit_test(test_conv_gradients_match_finite_differences),
	    cmocka_unit_test(test_direct_conv_forward_matches_definition_and_fuses_relu),
	    cmocka_unit_test(test_direct_conv_gradients_match_finite_differences),
	    cmocka_unit_test(test_direct_conv_backward_on_three_threads),
	    cmocka_unit_test(test_dense_gradients_match_finite_differences),
	    cmocka_unit_test(test_relu_gradient_matches_finite_differences),
	    cmocka_unit_test(test_maxpool_gradient_matches_finite_differences),
	    cmocka_unit_test(test_maxpool_routes_ties_to_the_first_maximum),
	    cmocka_unit_test(test_softmax_xent_gradient_matches_finite_differences),
	    cmocka_unit_test(test_softmax_xent_matches_definition_and_counts_argmax_hits),
	    cmocka_unit_test(test_softmax_xent_is_stable_for_huge_logits),
	    cmocka_unit_test(test_dense_input_mask_equals_a_separate_relu_backward),
	    cmocka_unit_test(test_maxpool_input_mask_equals_a_separate_relu_backward),
	    cmocka_unit_test(test_conv_forward_with_relu_equals_relu_after_conv),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
