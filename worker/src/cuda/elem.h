/* elem.h - the arithmetic of the GPU kernels, one output element at a
 * time, as functions both nvcc and the host compiler build.
 *
 * Every kernel in kernels.cu is a loop over its output calling one of
 * these, so the index arithmetic, the order of every sum and the tie rules
 * can be tested on a machine without a GPU: worker/tests/test_cuda_elem.c
 * runs them over whole tensors and compares with the CPU layers (conv.c,
 * pool.c, optimizer.c), bit for bit where the CPU does the same arithmetic
 * in the same order. The loss kernel needs no copy here: it runs loss.h's
 * own loss_xent_example.
 *
 * Shapes are those of the CPU layers: NHWC tensors; cols (K + 1, M), one
 * row per kernel tap (kh, kw, c) with K = KH * KW * C, the last row all
 * ones (the bias), M = B * OH * OW (conv.h).
 */
#ifndef MWJ_CUDA_ELEM_H
#define MWJ_CUDA_ELEM_H

#include <math.h>
#include <stdint.h>

#include "batchnorm.h"
#include "dropout.h"
#include "hostdev.h"

/* A pixel of the file scaled to [0, 1], as dataset.c scales it. */
HOSTDEV float elem_pixel(uint8_t p)
{
	return (float)p / 255.0f;
}

/* Element i of cols for the input in (B, H, W, C). */
HOSTDEV float elem_im2col(const float *in, long i, long M, int H, int W, int C, int KH, int KW)
{
	long k = i / M, m = i % M;
	int OH = H - KH + 1, OW = W - KW + 1;

	if (k == (long)KH * KW * C)
		return 1.0f;
	int c = (int)(k % C), tap = (int)(k / C), kw = tap % KW, kh = tap / KW;
	int ow = (int)(m % OW), oh = (int)(m / OW % OH);
	long b = m / OW / OH;
	return in[((b * H + oh + kh) * W + ow + kw) * C + c];
}

/* Element j of din (B, H, W, C): the column entries copied from that input
 * pixel, added in kernel-tap order, as col2im in conv.c adds them. */
HOSTDEV float elem_col2im(const float *dcols, long j, long M, int H, int W, int C, int KH, int KW)
{
	int OH = H - KH + 1, OW = W - KW + 1;
	int c = (int)(j % C), x = (int)(j / C % W), y = (int)(j / C / W % H);
	long b = j / C / W / H;
	float s = 0.0f;

	for (int kh = 0; kh < KH; kh++) {
		int oh = y - kh;
		if (oh < 0 || oh >= OH)
			continue;
		for (int kw = 0; kw < KW; kw++) {
			int ow = x - kw;
			if (ow < 0 || ow >= OW)
				continue;
			s += dcols[((long)(kh * KW + kw) * C + c) * M + (b * OH + oh) * OW + ow];
		}
	}
	return s;
}

/* Element o of the 2x2, stride 2 max pool's output (B, H/2, W/2, C). */
HOSTDEV float elem_maxpool(const float *in, long o, int H, int W, int C)
{
	int OH = H / 2, OW = W / 2;
	int c = (int)(o % C), ow = (int)(o / C % OW), oh = (int)(o / C / OW % OH);
	long b = o / C / OW / OH;
	const float *p = in + ((b * H + 2L * oh) * W + 2L * ow) * C + c;
	const float *q = p + (long)W * C;
	float m0 = p[0] > p[C] ? p[0] : p[C];
	float m1 = q[0] > q[C] ? q[0] : q[C];

	return m0 > m1 ? m0 : m1;
}

/* Element j of din (B, H, W, C) of the max pool: the window's gradient if
 * this input is the first of its window, in row-major order, to equal the
 * maximum; 0 otherwise, for an odd edge, and with mask_by_input for a
 * window whose maximum is not positive (pool.h). */
HOSTDEV float elem_maxpool_backward(const float *dout, const float *in, const float *out, long j,
                                    int H, int W, int C, int mask_by_input)
{
	int OH = H / 2, OW = W / 2;
	int c = (int)(j % C), x = (int)(j / C % W), y = (int)(j / C / W % H);
	long b = j / C / W / H;

	if (y >= 2 * OH || x >= 2 * OW)
		return 0.0f;
	int oh = y / 2, ow = x / 2, me = (y % 2) * 2 + x % 2;
	long o = ((b * OH + oh) * OW + ow) * C + c;
	if (mask_by_input && !(out[o] > 0.0f))
		return 0.0f;
	long top = ((b * H + 2L * oh) * W + 2L * ow) * C + c;
	long at[4] = {top, top + C, top + (long)W * C, top + (long)W * C + C};
	for (int k = 0; k < me; k++)
		if (in[at[k]] == out[o])
			return 0.0f; /* an earlier input of the window won */
	return in[at[me]] == out[o] ? dout[o] : 0.0f;
}

/* The optimizers' rules for one parameter, as optimizer.c applies them,
 * operation for operation (Keras 3's update_step of each). The gradient
 * is not cleared: on the GPU every backward pass overwrites it. */

/* Keras' weight decay, before any rule when wd is not 0. */
HOSTDEV void elem_weight_decay(float *w, float lr, float wd)
{
	*w -= *w * wd * lr;
}

HOSTDEV void elem_sgd(float *w, float g, float lr)
{
	*w -= lr * g;
}

HOSTDEV void elem_sgd_momentum(float *w, float *v, float g, float lr, float momentum, int nesterov)
{
	*v = momentum * *v - lr * g;
	*w += nesterov ? momentum * *v - lr * g : *v;
}

/* c1, c2: 1 - beta_1, 1 - beta_2 as optimizer.h keeps them; alpha the
 * step's (optimizer_begin_step). Adam and AdamW alike. */
HOSTDEV void elem_adam(float *w, float *m, float *v, float g, float alpha, float c1, float c2,
                       float eps)
{
	*m += (g - *m) * c1;
	*v += (g * g - *v) * c2;
	*w -= alpha * *m / (sqrtf(*v) + eps);
}

HOSTDEV void elem_adagrad(float *w, float *acc, float g, float lr, float eps)
{
	*acc += g * g;
	*w -= lr * g / sqrtf(*acc + eps);
}

/* mom and a (the average gradient) are NULL where the configuration has
 * no such slot. c_rho: 1 - rho as optimizer.h keeps it. */
HOSTDEV void elem_rmsprop(float *w, float *v, float *mom, float *a, float g, float lr, float rho,
                          float c_rho, float momentum, float eps)
{
	float den, inc;

	*v = rho * *v + c_rho * (g * g);
	if (a) {
		*a = rho * *a + c_rho * g;
		den = *v - *a * *a + eps;
	} else {
		den = *v + eps;
	}
	inc = lr * g / sqrtf(den);
	if (mom) {
		*mom = momentum * *mom + inc;
		*w -= *mom;
	} else {
		*w -= inc;
	}
}

/* Activations, dropout and batch normalisation (activation.c, dropout.c,
 * batchnorm.c). The activations are activation.c's per-element arithmetic,
 * expression for expression (nn/ cannot include cuda/, so each keeps its
 * copy: change both together); dropout's mask and batch normalisation's
 * steps are their headers' own HOSTDEV helpers. The softmax runs a row per
 * thread, the batch normalisation sums a channel per thread over the rows
 * in order: the CPU's order, so the same bits. */

#define ELEM_GELU_SQRT_2         1.4142135623730951f
#define ELEM_GELU_SQRT_2_OVER_PI 0.7978845608028654f
#define ELEM_GELU_COEFF          0.044715f
#define ELEM_GELU_INV_SQRT_2PI   0.3989422804014327f

HOSTDEV float elem_sigmoid(float x)
{
	return 1.0f / (1.0f + expf(-x));
}

/* dx from dy and the forward output y. */
HOSTDEV float elem_sigmoid_backward(float dy, float y)
{
	return dy * y * (1.0f - y);
}

HOSTDEV float elem_tanh(float x)
{
	return tanhf(x);
}

HOSTDEV float elem_tanh_backward(float dy, float y)
{
	return dy * (1.0f - y * y);
}

HOSTDEV float elem_leaky_relu(float x, float slope)
{
	return x > 0.0f ? x : slope * x;
}

/* s: the output y, or the input x where slope < 0 (activation.h). */
HOSTDEV float elem_leaky_relu_backward(float dy, float s, float slope)
{
	return s > 0.0f ? dy : slope * dy;
}

HOSTDEV float elem_gelu(float x, int approximate)
{
	if (approximate) {
		float t = tanhf(ELEM_GELU_SQRT_2_OVER_PI * (x + ELEM_GELU_COEFF * (x * x * x)));
		return 0.5f * x * (1.0f + t);
	}
	return 0.5f * x * (1.0f + erff(x / ELEM_GELU_SQRT_2));
}

/* dx from dy and the forward input x. */
HOSTDEV float elem_gelu_backward(float dy, float x, int approximate)
{
	float g;

	if (approximate) {
		float t = tanhf(ELEM_GELU_SQRT_2_OVER_PI * (x + ELEM_GELU_COEFF * (x * x * x)));
		float s = 1.0f - t * t;
		g = 0.5f * (1.0f + t);
		if (s > 0.0f)
			g += 0.5f * x * s *
			     (ELEM_GELU_SQRT_2_OVER_PI * (1.0f + 3.0f * ELEM_GELU_COEFF * (x * x)));
	} else {
		float cdf = 0.5f * (1.0f + erff(x / ELEM_GELU_SQRT_2));
		g = cdf + x * (ELEM_GELU_INV_SQRT_2PI * expf(-0.5f * (x * x)));
	}
	return dy * g;
}

/* One row of cols values (cols >= 1): y = softmax(x); y may be x. */
HOSTDEV void elem_softmax_row(float *y, const float *x, long cols)
{
	float m = x[0];
	double sum = 0.0;

	for (long j = 1; j < cols; j++)
		m = x[j] > m ? x[j] : m;
	for (long j = 0; j < cols; j++) {
		float e = expf(x[j] - m);
		y[j] = e;
		sum += e;
	}
	for (long j = 0; j < cols; j++)
		y[j] = (float)(y[j] / sum);
}

/* dx = y (dy - sum(dy y)) for one row; dx may be dy. */
HOSTDEV void elem_softmax_backward_row(float *dx, const float *dy, const float *y, long cols)
{
	double dot = 0.0;

	for (long j = 0; j < cols; j++)
		dot += (double)dy[j] * y[j];
	for (long j = 0; j < cols; j++)
		dx[j] = (float)(y[j] * ((double)dy[j] - dot));
}

/* Element i of out (B, len) of dropout while training (dropout.h); the
 * backward pass runs it on the gradient. scale: dropout_scale(rate). */
HOSTDEV float elem_dropout(const float *in, long i, long len, uint64_t key, uint64_t pos0,
                           float rate, float scale)
{
	long b = i / len, e = i % len;

	return dropout_keep(key, pos0 + (uint64_t)b, (uint64_t)e, rate) ? in[i] * scale : 0.0f;
}

/* Channel c's sums over the N rows of x (N, C), in row order:
 * batchnorm_stat_sums (sum x, sum x^2) and batchnorm_grad_sums (sum dy,
 * sum dy xhat). */
HOSTDEV void elem_batchnorm_stat_sums(double *sum, double *sumsq, const float *x, long N, int C,
                                      int c)
{
	double s1 = 0.0, s2 = 0.0;

	for (long r = 0; r < N; r++) {
		double v = x[r * C + c];
		s1 += v;
		s2 += v * v;
	}
	*sum = s1, *sumsq = s2;
}

HOSTDEV void elem_batchnorm_grad_sums(double *sum_dy, double *sum_dy_xhat, const float *dy,
                                      const float *x, float mean, float invstd, long N, int C,
                                      int c)
{
	double s1 = 0.0, s2 = 0.0;

	for (long r = 0; r < N; r++) {
		double d = dy[r * C + c];
		s1 += d;
		s2 += d * (((double)x[r * C + c] - mean) * invstd);
	}
	*sum_dy = s1, *sum_dy_xhat = s2;
}

/* Element i of y (N, C) from the per-channel s and t of batchnorm_coeffs. */
HOSTDEV float elem_batchnorm(const float *x, long i, int C, const float *s, const float *t)
{
	int c = (int)(i % C);

	return batchnorm_apply(x[i], s[c], t[c]);
}

/* Element i of dx (N, C) from the per-channel a, b, k of
 * batchnorm_grad_coeffs. */
HOSTDEV float elem_batchnorm_backward(const float *dy, const float *x, long i, int C,
                                      const float *mean, const float *a, const float *b,
                                      const float *k)
{
	int c = (int)(i % C);

	return batchnorm_grad(dy[i], x[i], mean[c], a[c], b[c], k[c]);
}

#endif
