/* winograd.h - 3x3, stride-1 convolutions by Winograd's minimal filtering
 * F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural
 * Networks", 2015): each 2x2 block of output pixels takes 16 products per
 * (input, output) channel pair instead of 36, so the three products of a
 * training step (output, input gradient, kernel gradient) each do 2.25x
 * fewer multiply-adds than im2col does, and nothing of the size of im2col's
 * columns is ever written.
 *
 * Per 2x2 output tile, with d the 4x4 input tile under it (0 outside the
 * image), g one 3x3 kernel and (.)_x the 16 positions x of a 4x4 tile:
 *     V = B^T d B          the input tile, per input channel
 *     U = G g G^T          the kernel, per channel pair, once a step
 *     M_x = sum_c V_x U_x  16 products (tiles, C) @ (C, OC), one per x
 *     y = A^T M A          the 2x2 outputs, per output channel
 * The input gradient of a stride-1 convolution is the convolution of the
 * output gradient with the flipped kernel (conv.c), so it runs the same
 * code; the kernel gradient is dU_x = sum over tiles of V_x^T (A dy A^T)_x,
 * then dg = G^T dU G. Every product sums its channels (output, input
 * gradient) or its tiles (kernel gradient) in one fixed order whatever
 * the thread count, so all three are bitwise the same for any --threads:
 * the output and input gradient are split among the threads by tile, the
 * kernel gradient by tile position x.
 *
 * The transforms add and subtract only, and G's halves are exact in
 * float, so the rounding differs from im2col's but not its size: test_conv_geom
 * checks every geometry against the definition summed in double.
 *
 * Shapes and layouts are conv.h's: in (B, H, W, C), wb (3*3*C [+ 1], OC)
 * in HWIO followed by the bias row, out (B, OH, OW, OC), dwb like wb.
 */
#ifndef MWJ_WINOGRAD_H
#define MWJ_WINOGRAD_H

#include <stddef.h>

#include "conv.h"

/* Whether the geometry runs here: a 3x3 kernel, stride 1 (valid or same),
 * channel counts that are multiples of 8 (whole vectors) and not so many
 * that a block of tiles no longer fits in a thread's share of cache. */
int winograd_fits(const struct conv_geom *g);

/* Floats of cols (and of dcols) a fitting geometry needs: the transformed
 * kernel, 16 * C * OC, whatever the batch. */
size_t winograd_cols_len(const struct conv_geom *g);

/* Multiply-adds of one of a fitting geometry's three products at batch
 * B: 16 * tiles * C * OC, the 2x2 output tiles rounded up at odd sizes
 * (the transforms only add, and are not counted). */
double winograd_macs(const struct conv_geom *g, int B);

/* out = conv(in, w) + bias, then max(out, 0) if relu is set; cols holds
 * the transformed kernel meanwhile. */
void winograd_forward(float *out, float *cols, const float *in, const float *wb, int B,
                      const struct conv_geom *g, int relu);

/* dwb = the kernel and bias gradients (overwritten), with cols as
 * scratch; if din is not NULL, din = the input gradient, with dcols as
 * scratch. in is the forward pass's input. */
void winograd_backward(float *dwb, float *din, float *cols, float *dcols, const float *dout,
                       const float *in, const float *wb, int B, const struct conv_geom *g);

#endif
