/* elem.h - the arithmetic of the GPU kernels, one output element at a
 * time, as functions both nvcc and the host compiler build.
 *
 * Every kernel in kernels.cu is a loop over its output calling one of
 * these, so the index arithmetic, the order of every sum and the tie rules
 * can be tested on a machine without a GPU: worker/tests/test_cuda_elem.c
 * runs them over whole tensors and compares with the CPU layers (conv.c,
 * pool.c, dense.c, activation.c, dropout.c, batchnorm.c, loss.c,
 * optimizer.c), bit for bit where the CPU does the same arithmetic in the
 * same order. Where the CPU's per-element arithmetic is a HOSTDEV function
 * of its own header (batchnorm.h, dropout.h, loss.h, pool.h), the kernels
 * call that function.
 *
 * Shapes are those of the CPU layers: NHWC tensors; a convolution's cols
 * (KC, M), one row per kernel tap (kh, kw, c), K = KH * KW * C taps and
 * KC = K + 1 with a bias (the last row all ones), K without, and M = B *
 * OH * OW output pixels (conv.h's geometry; the CPU keeps the transpose).
 */
#ifndef MWJ_CUDA_ELEM_H
#define MWJ_CUDA_ELEM_H

#include <math.h>
#include <stdint.h>

#include "batchnorm.h"
#include "conv.h"
#include "dropout.h"
#include "hostdev.h"
#include "keras_model.h"
#include "loss.h"
#include "pool.h"

/* A pixel of the file scaled as dataset.c scales it: divided by 255, or
 * times scale when --rescale gave one (scale not DATASET_RESCALE_NONE,
 * 0). */
HOSTDEV float elem_pixel(uint8_t p, float scale)
{
	return scale == 0.0f ? (float)p / 255.0f : (float)p * scale;
}

/* Element i of cols (KC, M) for the input in (B, H, W, C): tap k of
 * output pixel m, 0 where the tap falls in the padding, 1 in the bias
 * row. */
HOSTDEV float elem_im2col(const float *in, long i, long M, const struct conv_geom *g)
{
	long k = i / M, m = i % M;
	int C = g->C;

	if (k == (long)g->KH * g->KW * C)
		return 1.0f; /* only with a bias is there such a row */
	int c = (int)(k % C), tap = (int)(k / C), kw = tap % g->KW, kh = tap / g->KW;
	int ow = (int)(m % g->OW), oh = (int)(m / g->OW % g->OH);
	long b = m / g->OW / g->OH;
	int ih = oh * g->SH + kh - g->PT, iw = ow * g->SW + kw - g->PL;

	if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W)
		return 0.0f;
	return in[((b * g->H + ih) * g->W + iw) * C + c];
}

/* Element j of din (B, H, W, C) from dcols (K, M): the column entries
 * copied from that input pixel, added in the order of their output
 * pixels, as col2im in conv.c adds them (a later output pixel takes an
 * earlier tap, so the taps run backwards). */
HOSTDEV float elem_col2im(const float *dcols, long j, long M, const struct conv_geom *g)
{
	int C = g->C, KW = g->KW;
	int c = (int)(j % C), x = (int)(j / C % g->W), y = (int)(j / C / g->W % g->H);
	long b = j / C / g->W / g->H;
	float s = 0.0f;

	for (int kh = g->KH - 1; kh >= 0; kh--) {
		int t = y + g->PT - kh;
		if (t < 0 || t % g->SH || t / g->SH >= g->OH)
			continue;
		int oh = t / g->SH;
		for (int kw = KW - 1; kw >= 0; kw--) {
			int u = x + g->PL - kw;
			if (u < 0 || u % g->SW || u / g->SW >= g->OW)
				continue;
			int ow = u / g->SW;
			s += dcols[((long)(kh * KW + kw) * C + c) * M + (b * g->OH + oh) * g->OW +
			           ow];
		}
	}
	return s;
}

/* Column j of x (rows, cols) summed over the rows in order from 0, as
 * dense.c sums a bias gradient. */
HOSTDEV float elem_col_sum(const float *x, int j, long rows, int cols)
{
	float s = 0.0f;

	for (long r = 0; r < rows; r++)
		s += x[r * cols + j];
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

/* Any pool size, strides and padding (pool.h's geometry, pool_window's
 * windows). out (B, OH, OW, C), in and din (B, H, W, C). */

/* Output element o of a pool, (B, OH, OW, C): its channel, its window
 * clipped to the image (pool_window), and its example, returned. */
HOSTDEV long pool_output_window(const struct pool_geom *g, long o, int *c, int *y0, int *y1,
                                int *x0, int *x1)
{
	int C = g->C, ow = (int)(o / C % g->OW), oh = (int)(o / C / g->OW % g->OH);

	*c = (int)(o % C);
	pool_window(g, oh, ow, y0, y1, x0, x1);
	return o / C / g->OW / g->OH;
}

/* Element o of the max pool's output: the window's maximum, scanned in
 * row-major order as pool.c scans it. */
HOSTDEV float elem_maxpool_geom(const float *in, long o, const struct pool_geom *g)
{
	int C = g->C, c, y0, y1, x0, x1;
	long b = pool_output_window(g, o, &c, &y0, &y1, &x0, &x1);
	float m = 0.0f;

	for (int y = y0; y < y1; y++)
		for (int x = x0; x < x1; x++) {
			float v = in[((b * g->H + y) * g->W + x) * C + c];
			m = y == y0 && x == x0 ? v : v > m ? v : m;
		}
	return m;
}

/* The output pixels whose windows hold input row y (or column: the same
 * with the other axis): [*lo, *hi]. */
HOSTDEV void elem_pool_span(int y, int PT, int P, int S, int O, int *lo, int *hi)
{
	int t = y + PT - P;

	*lo = t < 0 ? 0 : t / S + 1;
	*hi = (y + PT) / S < O - 1 ? (y + PT) / S : O - 1;
}

/* Input element j of a pool, (B, H, W, C): its channel, row and column,
 * the output rows [*oh0, *oh1] and columns [*ow0, *ow1] whose windows may
 * hold it (elem_pool_span), and its example, returned. */
HOSTDEV long pool_input_spans(const struct pool_geom *g, long j, int *c, int *y, int *x, int *oh0,
                              int *oh1, int *ow0, int *ow1)
{
	int C = g->C;

	*c = (int)(j % C);
	*x = (int)(j / C % g->W);
	*y = (int)(j / C / g->W % g->H);
	elem_pool_span(*y, g->PT, g->PH, g->SH, g->OH, oh0, oh1);
	elem_pool_span(*x, g->PL, g->PW, g->SW, g->OW, ow0, ow1);
	return j / C / g->W / g->H;
}

/* Element j of the max pool's din: the gradients of the windows whose
 * first maximum (in row-major order) this input is, added in the order
 * of their output pixels, as pool.c adds them. */
HOSTDEV float elem_maxpool_geom_backward(const float *dout, const float *in, const float *out,
                                         long j, const struct pool_geom *g)
{
	int C = g->C, c, y, x, oh0, oh1, ow0, ow1;
	long b = pool_input_spans(g, j, &c, &y, &x, &oh0, &oh1, &ow0, &ow1);
	float s = 0.0f;

	for (int oh = oh0; oh <= oh1; oh++)
		for (int ow = ow0; ow <= ow1; ow++) {
			long o = ((b * g->OH + oh) * g->OW + ow) * C + c;
			int y0, y1, x0, x1, first = 0, found = 0;
			pool_window(g, oh, ow, &y0, &y1, &x0, &x1);
			for (int yy = y0; yy < y1 && !found; yy++)
				for (int xx = x0; xx < x1 && !found; xx++)
					if (in[((b * g->H + yy) * g->W + xx) * C + c] == out[o]) {
						found = 1;
						first = yy == y && xx == x;
					}
			if (first)
				s += dout[o];
		}
	return s;
}

/* Element o of the average pool's output: the window's pixels inside the
 * image added in row-major order, divided by their number. */
HOSTDEV float elem_avgpool(const float *in, long o, const struct pool_geom *g)
{
	int C = g->C, c, y0, y1, x0, x1;
	long b = pool_output_window(g, o, &c, &y0, &y1, &x0, &x1);
	float s = 0.0f;

	for (int y = y0; y < y1; y++)
		for (int x = x0; x < x1; x++)
			s += in[((b * g->H + y) * g->W + x) * C + c];
	return s / (float)((y1 - y0) * (x1 - x0));
}

/* Element j of the average pool's din: each window's gradient over its
 * size, added in the order of the output pixels. */
HOSTDEV float elem_avgpool_backward(const float *dout, long j, const struct pool_geom *g)
{
	int C = g->C, c, y, x, oh0, oh1, ow0, ow1;
	long b = pool_input_spans(g, j, &c, &y, &x, &oh0, &oh1, &ow0, &ow1);
	float s = 0.0f;

	for (int oh = oh0; oh <= oh1; oh++)
		for (int ow = ow0; ow <= ow1; ow++) {
			int y0, y1, x0, x1;
			pool_window(g, oh, ow, &y0, &y1, &x0, &x1);
			s += dout[((b * g->OH + oh) * g->OW + ow) * C + c] /
			     (float)((y1 - y0) * (x1 - x0));
		}
	return s;
}

/* Element o of the global average pool's out (B, C) over in (B, HW, C),
 * and element j of its din. */
HOSTDEV float elem_global_avgpool(const float *in, long o, int HW, int C)
{
	long b = o / C;
	int c = (int)(o % C);
	float s = 0.0f;

	for (int i = 0; i < HW; i++)
		s += in[(b * HW + i) * C + c];
	return s / (float)HW;
}

HOSTDEV float elem_global_avgpool_backward(const float *dout, long j, int HW, int C)
{
	return dout[j / ((long)HW * C) * C + j % C] / (float)HW;
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
 * thread, the batch normalisation a channel per thread over the rows in
 * order: the CPU's order, so the same bits. */

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

/* An element-wise activation (not softmax) of one value: y from x. */
HOSTDEV float elem_act(float x, const struct keras_act *a)
{
	switch (a->kind) {
	case KERAS_ACT_RELU:
		return x > 0.0f ? x : 0.0f;
	case KERAS_ACT_SIGMOID:
		return elem_sigmoid(x);
	case KERAS_ACT_TANH:
		return elem_tanh(x);
	case KERAS_ACT_GELU:
		return elem_gelu(x, a->approximate);
	case KERAS_ACT_LEAKY_RELU:
		return elem_leaky_relu(x, a->negative_slope);
	default:
		return x; /* linear; softmax is a row's (elem_softmax_row) */
	}
}

/* Its gradient: dx from dy, the forward output y and its input x (either
 * may be unused, as activation.h says). */
HOSTDEV float elem_act_backward(float dy, float y, float x, const struct keras_act *a)
{
	switch (a->kind) {
	case KERAS_ACT_RELU:
		return y > 0.0f ? dy : 0.0f;
	case KERAS_ACT_SIGMOID:
		return elem_sigmoid_backward(dy, y);
	case KERAS_ACT_TANH:
		return elem_tanh_backward(dy, y);
	case KERAS_ACT_GELU:
		return elem_gelu_backward(dy, x, a->approximate);
	case KERAS_ACT_LEAKY_RELU:
		return elem_leaky_relu_backward(dy, a->negative_slope < 0.0f ? x : y,
		                                a->negative_slope);
	default:
		return dy;
	}
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

/* Channel c of a batch normalisation over x (N, C), as one thread runs
 * it, with the CPU's steps (batchnorm.h) and the CPU's rounding:
 * training, the batch's mean, biased variance (may be NULL) and invstd,
 * then the s and t of batchnorm_coeffs (gamma, beta NULL: absent). */
HOSTDEV void elem_batchnorm_train_channel(float *mean, float *var, float *invstd, float *s,
                                          float *t, const float *x, const float *gamma,
                                          const float *beta, long N, int C, int c, float eps)
{
	double sum, sumsq, m, v;

	elem_batchnorm_stat_sums(&sum, &sumsq, x, N, C, c);
	batchnorm_moments(&m, &v, sum, sumsq, (double)N);
	mean[c] = (float)m;
	if (var)
		var[c] = (float)v;
	invstd[c] = batchnorm_invstd(v, eps);
	batchnorm_coeffs(&s[c], &t[c], mean[c], invstd[c], gamma ? gamma[c] : 1.0f,
	                 beta ? beta[c] : 0.0f);
}

/* Inference: s and t of channel c from the moving statistics. */
HOSTDEV void elem_batchnorm_infer_channel(float *s, float *t, const float *moving_mean,
                                          const float *moving_var, const float *gamma,
                                          const float *beta, int c, float eps)
{
	batchnorm_coeffs(&s[c], &t[c], moving_mean[c], batchnorm_invstd(moving_var[c], eps),
	                 gamma ? gamma[c] : 1.0f, beta ? beta[c] : 0.0f);
}

/* The backward pass's per-channel part: dgamma (sum dy xhat) and dbeta
 * (sum dy) where not NULL, and the a, b, k of batchnorm_grad_coeffs for
 * elem_batchnorm_backward, with the batch's N rows as the count. */
HOSTDEV void elem_batchnorm_grad_channel(float *dgamma, float *dbeta, float *a, float *b, float *k,
                                         const float *dy, const float *x, const float *mean,
                                         const float *invstd, const float *gamma, long N, int C,
                                         int c)
{
	double s1, s2;

	elem_batchnorm_grad_sums(&s1, &s2, dy, x, mean[c], invstd[c], N, C, c);
	if (dbeta)
		dbeta[c] = (float)s1;
	if (dgamma)
		dgamma[c] = (float)s2;
	batchnorm_grad_coeffs(&a[c], &b[c], &k[c], invstd[c], gamma ? gamma[c] : 1.0f, s1, s2,
	                      (double)N);
}

/* Channel c's moving mean and variance (C each) moved toward the batch
 * statistics stats (2, C), summed over world replicas, as
 * model_update_state moves them. */
HOSTDEV void elem_batchnorm_moving(float *moving_mean, float *moving_var, const float *stats, int C,
                                   int c, int world, float keep, float take)
{
	moving_mean[c] =
	    batchnorm_moving(moving_mean[c], batchnorm_mean_over(stats[c], world), keep, take);
	moving_var[c] =
	    batchnorm_moving(moving_var[c], batchnorm_mean_over(stats[C + c], world), keep, take);
}

/* The loss of examples first, first + stride, ... below B (loss.h's
 * loss_example, z and p rows of K, y rows of T): their loss summed into
 * out[0] and each metric's into out[1 + i], in example order, and dz if
 * not NULL. With stride 1 from 0 it is loss_batch; the loss kernel runs
 * it on each thread, then adds the threads' sums. */
HOSTDEV void elem_loss_rows(float *dz, double *out, const float *z, const float *p, const float *y,
                            int first, int stride, int B, const struct loss_spec *s, float scale)
{
	for (int i = first; i < B; i += stride) {
		double loss = 0.0, metric[LOSS_MAX_METRICS];
		long row = (long)i * s->K;
		loss_example(dz ? dz + row : NULL, &loss, metric, z + row, p + row,
		             y + (long)i * s->T, s, scale);
		out[0] += loss;
		for (int m = 0; m < s->nmetrics; m++)
			out[1 + m] += metric[m];
	}
}

#endif
