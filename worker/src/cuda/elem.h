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

/* The optimizers' rules for one parameter, as optimizer.c applies them
 * (Keras' SGD, SGD with momentum, Adam). The gradient is not cleared: on
 * the GPU every backward pass overwrites it. */
HOSTDEV void elem_sgd(float *w, float g, float lr)
{
	*w -= lr * g;
}

HOSTDEV void elem_sgd_momentum(float *w, float *v, float g, float lr, float momentum)
{
	*v = momentum * *v - lr * g;
	*w += *v;
}

HOSTDEV void elem_adam(float *w, float *m, float *v, float g, float alpha, float b1, float b2,
                       float eps)
{
	*m += (g - *m) * (1.0f - b1);
	*v += (g * g - *v) * (1.0f - b2);
	*w -= alpha * *m / (sqrtf(*v) + eps);
}

#endif
