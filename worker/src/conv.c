/* conv.c - convolution as im2col + sgemm. */
#include "conv.h"

#include <cblas.h>
#include <string.h>

#include "simd.h"

/* cols (KH*KW*C, B*OH*OW): row (kh, kw, c) holds, for every output pixel, the
 * input value under that kernel tap. For C == 1 each output row is one
 * contiguous run of the input row, so the copy is a memcpy. */
static void im2col(float *restrict cols, const float *restrict in, int B, int H, int W, int C,
		   int KH, int KW)
{
	int OH = H - KH + 1, OW = W - KW + 1;
	size_t M = (size_t)B * OH * OW;

	for (int kh = 0; kh < KH; kh++) {
		for (int kw = 0; kw < KW; kw++) {
			for (int c = 0; c < C; c++) {
				float *dst = cols + ((size_t)(kh * KW + kw) * C + c) * M;
				for (int b = 0; b < B; b++) {
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
static void col2im(float *restrict din, const float *restrict dcols, int B, int H, int W, int C,
		   int KH, int KW)
{
	int OH = H - KH + 1, OW = W - KW + 1;
	size_t M = (size_t)B * OH * OW;

	memset(din, 0, sizeof(float) * B * H * W * C);
	for (int kh = 0; kh < KH; kh++) {
		for (int kw = 0; kw < KW; kw++) {
			for (int c = 0; c < C; c++) {
				const float *src = dcols + ((size_t)(kh * KW + kw) * C + c) * M;
				for (int b = 0; b < B; b++) {
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

SIMD_CLONES
static void add_bias_rows(float *restrict out, const float *restrict b, size_t rows, int n)
{
	for (size_t r = 0; r < rows; r++)
		for (int j = 0; j < n; j++)
			out[r * n + j] += b[j];
}

/* db[j] = sum over rows of dout[r][j], row by row in a fixed order so that the
 * result is deterministic and the inner loop vectorizes. */
SIMD_CLONES
static void sum_rows(float *restrict db, const float *restrict dout, size_t rows, int n)
{
	memset(db, 0, sizeof(float) * n);
	for (size_t r = 0; r < rows; r++)
		for (int j = 0; j < n; j++)
			db[j] += dout[r * n + j];
}

void conv_forward(float *out, float *cols, const float *in, const float *w, const float *b, int B,
		  int H, int W, int C, int KH, int KW, int OC)
{
	int M = B * (H - KH + 1) * (W - KW + 1), K = KH * KW * C;

	im2col(cols, in, B, H, W, C, KH, KW);
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, M, OC, K, 1.0f, cols, M, w, OC, 0.0f,
		    out, OC);
	add_bias_rows(out, b, (size_t)M, OC);
}

void conv_backward(float *dw, float *db, float *din, float *dcols, const float *dout,
		   const float *cols, const float *w, int B, int H, int W, int C, int KH, int KW,
		   int OC)
{
	int M = B * (H - KH + 1) * (W - KW + 1), K = KH * KW * C;

	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, K, OC, M, 1.0f, cols, M, dout, OC,
		    0.0f, dw, OC);
	sum_rows(db, dout, (size_t)M, OC);
	if (!din)
		return;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, K, M, OC, 1.0f, w, OC, dout, OC, 0.0f,
		    dcols, M);
	col2im(din, dcols, B, H, W, C, KH, KW);
}
