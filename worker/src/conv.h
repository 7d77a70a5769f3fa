/* conv.h - 2-D convolution, NHWC, stride 1, no padding ("valid"), lowered to
 * one cblas_sgemm over the whole batch through im2col.
 *
 * Shapes: in (B, H, W, C), w (KH, KW, C, OC) = Keras' HWIO kernel layout,
 * b (OC), out (B, OH, OW, OC) with OH = H - KH + 1, OW = W - KW + 1.
 * cols (KH*KW*C, B*OH*OW) is scratch that forward fills and backward reads,
 * so it must be kept between the two calls of one step. It is stored
 * transposed, one row per kernel tap, so that im2col copies whole image rows
 * and the sgemm reads it with a transpose flag.
 */
#ifndef MWJ_CONV_H
#define MWJ_CONV_H

/* out = im2col(in) @ w + b. */
void conv_forward(float *out, float *cols, const float *in, const float *w, const float *b, int B,
		  int H, int W, int C, int KH, int KW, int OC);

/* dw = cols @ dout and db = sum over rows of dout (both overwritten, not
 * accumulated). If din is not NULL, din = col2im(w @ dout^T), with dcols
 * (KH*KW*C, B*OH*OW) as scratch; the first layer of a model passes NULL and
 * skips that work. */
void conv_backward(float *dw, float *db, float *din, float *dcols, const float *dout,
		   const float *cols, const float *w, int B, int H, int W, int C, int KH, int KW,
		   int OC);

#endif
