/* conv.c - convolution as im2col + sgemm. */
#include "conv.h"

#include <string.h>

#include "gemm.h"
#include "parallel.h"


/* cols (KH*KW*C, B*OH*OW): row (kh, kw, c) holds, for every output pixel, the
 * input value under that kernel tap. For C == 1 each output row is one
 * contiguous run of the input row, so the copy is a memcpy. */
static void im2col(float *restrict cols, const float *restrict in, int b0, int b1, int B, int H,
		   int W, int C, int KH, int KW)
{
	int OH = H - KH + 1, OW = W - KW + 1;
	size_t M = (size_t)B * OH * OW;

	for (int kh = 0; kh < KH; kh++) {
		for (int kw = 0; kw < KW; kw++) {
			for (int c = 0; c < C; c++) {
				float *dst = cols + ((size_t)(kh * KW + kw) * C + c) * M;
				for (int b = b0; b < b1; b++) {
					for (int oh = 0; oh < OH; oh++) {
						const float *src =
						    in + (((size_t)b * H + oh + kh) * W + kw) * C + c;
						float *d = dst + ((size_t)b * OH + oh) * OW;
						if (C == 1) {
							memcpy(d, src, sizeof(float) * OW);
							continue;
						}
						for (int ow = 0; ow < OW; ow++)
							d[ow] = src[(size_t)ow * C];
					}
				}
			}
		}
	}
}

/* The adjoint of im2col: every column entry is added back onto the input
 * pixel it was copied from. */
static void col2im(float *restrict din, const float *restrict dcols, int b0, int b1, int B, int H,
		   int W, int C, int KH, int KW)
{
	int OH = H - KH + 1, OW = W - KW + 1;
	size_t M = (size_t)B * OH * OW;

	memset(din + (size_t)b0 * H * W * C, 0, sizeof(float) * (b1 - b0) * H * W * C);
	for (int kh = 0; kh < KH; kh++) {
		for (int kw = 0; kw < KW; kw++) {
			for (int c = 0; c < C; c++) {
				const float *src = dcols + ((size_t)(kh * KW + kw) * C + c) * M;
				for (int b = b0; b < b1; b++) {
					for (int oh = 0; oh < OH; oh++) {
						float *d =
						    din + (((size_t)b * H + oh + kh) * W + kw) * C + c;
						const float *s = src + ((size_t)b * OH + oh) * OW;
						for (int ow = 0; ow < OW; ow++)
							d[(size_t)ow * C] += s[ow];
					}
				}
			}
		}
	}
}

/* im2col or col2im over one part of the batch: examples never share input
 * pixels, so parts are independent. */
struct lower_job {
	float *dst;
	const float *src;
	int B, H, W, C, KH, KW;
	int forward; /* im2col, else col2im */
};

static void lower_part(void *ctx, int part, int parts)
{
	const struct lower_job *j = ctx;
	size_t lo, hi;

	parallel_range((size_t)j->B, part, parts, 1, &lo, &hi);
	if (j->forward)
		im2col(j->dst, j->src, (int)lo, (int)hi, j->B, j->H, j->W, j->C, j->KH, j->KW);
	else
		col2im(j->dst, j->src, (int)lo, (int)hi, j->B, j->H, j->W, j->C, j->KH, j->KW);
}

void conv_forward(float *out, float *cols, const float *in, const float *wb, int B, int H, int W,
		  int C, int KH, int KW, int OC)
{
	int M = B * (H - KH + 1) * (W - KW + 1), K = KH * KW * C;
	float *ones = cols + (size_t)K * M;

	struct lower_job j = {cols, in, B, H, W, C, KH, KW, 1};

	parallel_run(lower_part, &j);
	for (int i = 0; i < M; i++)
		ones[i] = 1.0f;
	gemm(1, 0, M, OC, K + 1, 1.0f, cols, M, wb, OC,
		    0.0f, out, OC);
}

void conv_backward(float *dwb, float *din, float *dcols, const float *dout, const float *cols,
		   const float *wb, int B, int H, int W, int C, int KH, int KW, int OC)
{
	int M = B * (H - KH + 1) * (W - KW + 1), K = KH * KW * C;

	gemm(0, 0, K + 1, OC, M, 1.0f, cols, M, dout,
		    OC, 0.0f, dwb, OC);
	if (!din)
		return;
	gemm(0, 1, K, M, OC, 1.0f, wb, OC, dout, OC, 0.0f,
		    dcols, M);
	struct lower_job j = {din, dcols, B, H, W, C, KH, KW, 0};
	parallel_run(lower_part, &j);
}
