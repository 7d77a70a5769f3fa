/* dense.c - fully connected layer over cblas_sgemm. */
#include "dense.h"

#include <string.h>

#include "gemm.h"

#include "simd.h"

SIMD_CLONES
static void add_bias(float *restrict out, const float *restrict b, int B, int OUT)
{
	for (int r = 0; r < B; r++)
		for (int j = 0; j < OUT; j++)
			out[(size_t)r * OUT + j] += b[j];
}

SIMD_CLONES
static void sum_rows(float *restrict db, const float *restrict dout, int B, int OUT)
{
	memset(db, 0, sizeof(float) * OUT);
	for (int r = 0; r < B; r++)
		for (int j = 0; j < OUT; j++)
			db[j] += dout[(size_t)r * OUT + j];
}

void dense_forward(float *out, const float *in, const float *w, const float *b, int B, int IN,
		   int OUT)
{
	gemm(0, 1, B, OUT, IN, 1.0f, in, IN, w, IN, 0.0f,
		    out, OUT);
	add_bias(out, b, B, OUT);
}

void dense_backward(float *dw, float *db, float *din, const float *dout, const float *in,
		    const float *w, int B, int IN, int OUT)
{
	/* The input gradient first, while w is needed anyway, so that the
	 * caller can update w right after dw is written, both still in cache. */
	if (din)
		gemm(0, 0, B, IN, OUT, 1.0f, dout, OUT,
			    w, IN, 0.0f, din, IN);
	gemm(1, 0, OUT, IN, B, 1.0f, dout, OUT, in, IN,
		    0.0f, dw, IN);
	sum_rows(db, dout, B, OUT);
}
