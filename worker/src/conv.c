/* conv.c - convolution as im2col + sgemm. */
#include "conv.h"

#include <cblas.h>
#include <string.h>

#include "activation.h"
#include "gemm.h"
#include "parallel.h"

/* A short copy (one output row, 26 floats for 28x28 input) kept inline: a
 * memcpy call per row costs more than the copy itself, so GCC must not turn
 * the loop back into one. */
#if defined(__GNUC__) && !defined(__clang__)
#define NO_LIBCALLS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define NO_LIBCALLS
#endif

NO_LIBCALLS static inline void copy_run(float *restrict d, const float *restrict s, int n)
{
	for (int i = 0; i < n; i++)
		d[i] = s[i];
}

/* cols (KH*KW*C, B*OH*OW): row (kh, kw, c) holds, for every output pixel, the
 * input value under that kernel tap. For C == 1 each output row is one
 * contiguous run of the input row, copied with copy_run. */
NO_LIBCALLS static void im2col(float *restrict cols, const float *restrict in, int b0, int b1,
                               int B, int H, int W, int C, int KH, int KW)
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
						    in + (((size_t)b * H + oh + kh) * W + kw) * C +
						    c;
						float *d = dst + ((size_t)b * OH + oh) * OW;
						if (C == 1)
							copy_run(d, src, OW);
						else
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
						    din + (((size_t)b * H + oh + kh) * W + kw) * C +
						    c;
						const float *s = src + ((size_t)b * OH + oh) * OW;
						for (int ow = 0; ow < OW; ow++)
							d[(size_t)ow * C] += s[ow];
					}
				}
			}
		}
	}
}

/* Bytes of columns and outputs one block of examples may occupy in cache. */
#define BLOCK_BYTES ((size_t)256 * 1024)

struct forward_job {
	float *out, *cols;
	const float *in, *wb;
	int B, H, W, C, KH, KW, OC, relu, block;
};

/* One part of the batch, in blocks of examples: examples never share input
 * pixels, so blocks are independent. */
static void forward_part(void *ctx, int part, int parts)
{
	const struct forward_job *j = ctx;
	int P = (j->H - j->KH + 1) * (j->W - j->KW + 1), K = j->KH * j->KW * j->C;
	size_t M = (size_t)j->B * P, lo, hi;

	parallel_range((size_t)j->B, part, parts, 1, &lo, &hi);
	for (size_t b0 = lo; b0 < hi; b0 += (size_t)j->block) {
		size_t b1 = b0 + (size_t)j->block < hi ? b0 + (size_t)j->block : hi;
		size_t r0 = b0 * P, rows = (b1 - b0) * P;
		float *out = j->out + r0 * j->OC;
		im2col(j->cols, j->in, (int)b0, (int)b1, j->B, j->H, j->W, j->C, j->KH, j->KW);
		for (size_t r = r0; r < r0 + rows; r++)
			j->cols[(size_t)K * M + r] = 1.0f;
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)rows, j->OC, K + 1, 1.0f,
		            j->cols + r0, (int)M, j->wb, j->OC, 0.0f, out, j->OC);
		if (j->relu)
			relu_forward_serial(out, rows * j->OC);
	}
}

void conv_forward(float *out, float *cols, const float *in, const float *wb, int B, int H, int W,
                  int C, int KH, int KW, int OC, int relu)
{
	int P = (H - KH + 1) * (W - KW + 1);
	size_t per_example = sizeof(float) * (size_t)P * (KH * KW * C + 1 + OC);
	int block = (int)(BLOCK_BYTES / per_example);
	struct forward_job j = {
	    out, cols, in, wb, B, H, W, C, KH, KW, OC, relu, block < 1 ? 1 : block};

	parallel_run(forward_part, &j);
}

struct col2im_job {
	float *din;
	const float *dcols;
	int B, H, W, C, KH, KW;
};

static void col2im_part(void *ctx, int part, int parts)
{
	const struct col2im_job *j = ctx;
	size_t lo, hi;

	parallel_range((size_t)j->B, part, parts, 1, &lo, &hi);
	col2im(j->din, j->dcols, (int)lo, (int)hi, j->B, j->H, j->W, j->C, j->KH, j->KW);
}

void conv_backward(float *dwb, float *din, float *dcols, const float *dout, const float *cols,
                   const float *wb, int B, int H, int W, int C, int KH, int KW, int OC)
{
	int M = B * (H - KH + 1) * (W - KW + 1), K = KH * KW * C;

	gemm(0, 0, K + 1, OC, M, 1.0f, cols, M, dout, OC, 0.0f, dwb, OC);
	if (!din)
		return;
	gemm(0, 1, K, M, OC, 1.0f, wb, OC, dout, OC, 0.0f, dcols, M);
	struct col2im_job j = {din, dcols, B, H, W, C, KH, KW};
	parallel_run(col2im_part, &j);
}
