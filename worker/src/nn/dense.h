/* dense.h - fully connected layer over cblas_sgemm.
 *
 * Shapes: in (B, IN), w (OUT, IN), b (OUT), out (B, OUT). The kernel is
 * stored output-major, like PyTorch's and unlike Keras' (IN, OUT): OpenBLAS
 * runs the forward product of that layout measurably faster, and a block of
 * input features is then a block of columns in w and dw.
 */
#ifndef MWJ_DENSE_H
#define MWJ_DENSE_H

#include <stddef.h>

#include "grad_slice.h"

/* out = in @ w^T + b; b NULL for a layer without a bias. */
void dense_forward(float *out, const float *in, const float *w, const float *b, int B, int IN,
                   int OUT);

/* Flags of dense_backward. */
enum {
	/* din *= (in > 0): the backward pass of a ReLU whose output was this
	 * layer's input, fused in while din is in cache. */
	DENSE_MASK_BY_INPUT = 1,
	/* dw holds zeros already (the optimizer cleared it as it consumed the
	 * last step's gradients), so the product is added to it: OpenBLAS then
	 * skips the pass that clears its output before every product, which
	 * costs as much as a tenth of a training step. */
	DENSE_DW_ZEROED = 2,
};

/* dw = dout^T @ in and db = sum over rows of dout (both overwritten); if din
 * is not NULL, din = dout @ w, masked if flags has DENSE_MASK_BY_INPUT.
 *
 * The work runs in blocks of input features (columns of w): each block's
 * din, then dw, then ready(ctx, slice) while that block of w and dw is still
 * in cache, so that ready can apply the optimizer to it cheaply; a block of
 * w is not read after its ready call. Slices are offsets into the model's
 * gradient buffer, in which dw starts at base; blocks may be reported from
 * several compute threads at once. db is reported last, as one row at
 * base + OUT * IN, unless db is NULL (no bias). ready may be NULL. */
void dense_backward(float *dw, float *db, float *din, const float *dout, const float *in,
                    const float *w, int B, int IN, int OUT, int flags, grad_ready_fn ready,
                    void *ctx, size_t base);

/* db (n) = the sums over rows of dout's first n columns, row stride ld,
 * each row in order: the bias gradient of a dense layer, or of a
 * convolution, whose rows are its output pixels. */
void dense_bias_grads(float *db, const float *dout, size_t rows, size_t ld, size_t n);

#endif
