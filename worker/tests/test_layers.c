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
#include "gradcheck.h"
#include "loss.h"
#include "pool.h"

/* Conv: B=2, 5x6 input with 2 channels, 3x3 kernel, 3 filters, so that the
 * input gradient (col2im) is exercised with C > 1. */
enum { CB = 2, CH = 5, CW = 6, CC = 2, CK = 3, COC = 3, COH = CH - CK + 1, COW = CW - CK + 1 };
#define C_IN   (CB * CH * CW * CC)
#define C_W    (CK * CK * CC * COC)
#define C_OUT  (CB * COH * COW * COC)
#define C_COLS ((CK * CK * CC + 1) * CB * COH * COW)

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

	assert_int_equal(conv_cols_len(CB, CH, CW, CC, CK, CK), C_COLS);
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
	conv_backward(dwb, din, dcols, r, cols, wb, CB, CH, CW, CC, CK, CK, COC);
	struct {
		float *x;
		double *num;
		size_t n;
	} vars[] = {{w, num_w, C_W}, {b, num_b, COC}, {in, num_in, C_IN}};
	for (int v = 0; v < 3; v++) {
		for (size_t i = 0; i < vars[v].n; i++) {
			float keep = vars[v].x[i];
			vars[v].x[i] = keep + GRADCHECK_H;
			double up = conv_loss(in, wb, r);
			vars[v].x[i] = keep - GRADCHECK_H;
			double down = conv_loss(in, wb, r);
			vars[v].x[i] = keep;
			vars[v].num[i] = (up - down) / (2.0 * GRADCHECK_H);
		}
	}
	assert_int_equal(grad_mismatches("conv dw", dw, num_w, C_W), 0);
	assert_int_equal(grad_mismatches("conv db", db, num_b, COC), 0);
	assert_int_equal(grad_mismatches("conv din", din, num_in, C_IN), 0);
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
