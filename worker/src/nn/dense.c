/* dense.c - fully connected layer over cblas_sgemm. */
#include "dense.h"

#include <cblas.h>
#include <string.h>

#include "activation.h"
#include "gemm.h"
#include "parallel.h"
#include "simd.h"

/* Bytes a block of input features may occupy across w, dw, in and din: about
 * half of a core's L2, so that each block is produced and consumed there. */
#define BLOCK_BYTES ((size_t)512 * 1024)

SIMD_CLONES
static void add_bias(float *restrict out, const float *restrict b, int B, int OUT)
{
	for (int r = 0; r < B; r++)
		for (int j = 0; j < OUT; j++)
			out[(size_t)r * OUT + j] += b[j];
}

SIMD_CLONES
void dense_bias_grads(float *restrict db, const float *restrict dout, size_t rows, size_t ld,
                      size_t n)
{
	memset(db, 0, sizeof(float) * n);
	for (size_t r = 0; r < rows; r++)
		for (size_t j = 0; j < n; j++)
			db[j] += dout[r * ld + j];
}

void dense_forward(float *out, const float *in, const float *w, const float *b, int B, int IN,
                   int OUT)
{
	gemm(0, 1, B, OUT, IN, 1.0f, in, IN, w, IN, 0.0f, out, OUT);
	if (b)
		add_bias(out, b, B, OUT);
}

struct backward_job {
	float *dw, *din;
	const float *dout, *in, *w;
	int B, IN, OUT, mask, block;
	float dw_beta; /* 1 if dw holds zeros: add to it without clearing it */
	grad_ready_fn ready;
	void *ctx;
	size_t base;
};

static void backward_part(void *arg, int part, int parts)
{
	const struct backward_job *j = arg;
	size_t lo, hi;

	parallel_range((size_t)j->IN, part, parts, 16, &lo, &hi);
	for (size_t c0 = lo; c0 < hi; c0 += (size_t)j->block) {
		int nc = (int)(hi - c0 < (size_t)j->block ? hi - c0 : (size_t)j->block);
		if (j->din) {
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j->B, nc, j->OUT,
			            1.0f, j->dout, j->OUT, j->w + c0, j->IN, 0.0f, j->din + c0,
			            j->IN);
			for (int r = 0; j->mask && r < j->B; r++)
				relu_backward_serial(j->din + (size_t)r * j->IN + c0,
				                     j->in + (size_t)r * j->IN + c0, (size_t)nc);
		}
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, j->OUT, nc, j->B, 1.0f,
		            j->dout, j->OUT, j->in + c0, j->IN, j->dw_beta, j->dw + c0, j->IN);
		if (j->ready) {
			struct grad_slice s = {j->base + c0, (size_t)j->OUT, (size_t)nc,
			                       (size_t)j->IN};
			j->ready(j->ctx, &s);
		}
	}
}

void dense_backward(float *dw, float *db, float *din, const float *dout, const float *in,
                    const float *w, int B, int IN, int OUT, int flags, grad_ready_fn ready,
                    void *ctx, size_t base)
{
	size_t per_feature = sizeof(float) * (2 * (size_t)OUT + 2 * (size_t)B);
	int block = (int)(BLOCK_BYTES / per_feature) & ~15;
	struct backward_job j = {
	    .dw = dw,
	    .din = din,
	    .dout = dout,
	    .in = in,
	    .w = w,
	    .B = B,
	    .IN = IN,
	    .OUT = OUT,
	    .mask = (flags & DENSE_MASK_BY_INPUT) != 0,
	    .block = block < 16 ? 16 : block,
	    .dw_beta = (flags & DENSE_DW_ZEROED) ? 1.0f : 0.0f,
	    .ready = ready,
	    .ctx = ctx,
	    .base = base,
	};

	if (2.0 * 2.0 * B * IN * OUT < PARALLEL_MIN_FLOPS)
		backward_part(&j, 0, 1); /* two products, too small to share */
	else
		parallel_run(backward_part, &j);
	if (!db)
		return; /* use_bias false */
	dense_bias_grads(db, dout, (size_t)B, (size_t)OUT, (size_t)OUT);
	if (ready) {
		struct grad_slice s = {base + (size_t)IN * OUT, 1, (size_t)OUT, (size_t)OUT};
		ready(ctx, &s);
	}
}
