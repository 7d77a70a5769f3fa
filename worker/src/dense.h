/* dense.h - fully connected layer, one cblas_sgemm per product.
 *
 * Shapes: in (B, IN), w (OUT, IN) (stored output-major like PyTorch, which
 * keeps every product of the step on OpenBLAS' fastest path), b (OUT),
 * out (B, OUT).
 */
#ifndef MWJ_DENSE_H
#define MWJ_DENSE_H

/* out = in @ w^T + b. */
void dense_forward(float *out, const float *in, const float *w, const float *b, int B, int IN,
		   int OUT);

/* dw = dout^T @ in, db = sum over rows of dout (both overwritten). If din is
 * not NULL, din = dout @ w. */
void dense_backward(float *dw, float *db, float *din, const float *dout, const float *in,
		    const float *w, int B, int IN, int OUT);

#endif
