/* pool.h - 2x2 max pooling with stride 2, NHWC ("valid": an odd last row or
 * column is dropped, as Keras does).
 *
 * Shapes: in (B, H, W, C), out (B, H/2, W/2, C).
 */
#ifndef MWJ_POOL_H
#define MWJ_POOL_H

void maxpool_forward(float *out, const float *in, int B, int H, int W, int C);

/* din = the window's gradient routed to the input that was the maximum (the
 * first one in row-major window order on ties, so results are deterministic);
 * every other input, and any dropped edge, gets 0. The maximum is found again
 * by comparing in with out, so no index buffer is needed. With mask_by_input
 * set, a window whose maximum is not positive routes nothing: the backward
 * pass of a ReLU that produced in, fused in at no extra cost. */
void maxpool_backward(float *din, const float *dout, const float *in, const float *out, int B,
                      int H, int W, int C, int mask_by_input);

#endif
