/* pool.h - Keras' pooling layers, NHWC: MaxPooling2D and
 * AveragePooling2D with any pool size, strides and padding, and
 * GlobalAveragePooling2D; the 2x2, stride-2, valid max pool of the seed
 * models has a path of its own below.
 *
 * Padding "same" pads as Conv2D does (conv.h), and the padding takes no
 * part: a max is over the window's pixels inside the image, an average
 * divides by their number, as TensorFlow's max_pool and avg_pool do.
 * Backward passes route a max window's gradient to its first maximum in
 * row-major window order (deterministic on ties) and add where windows
 * overlap (strides smaller than the pool).
 *
 * Shapes: in (B, H, W, C), out (B, OH, OW, C); global: out (B, C).
 */
#ifndef MWJ_POOL_H
#define MWJ_POOL_H

#include "hostdev.h"

struct pool_geom {
	int H, W, C;
	int PH, PW; /* pool size */
	int SH, SW; /* strides */
	int PT, PL; /* padding on top and on the left */
	int OH, OW;
};

/* The window of output pixel (oh, ow) clipped to the image: rows
 * [*y0, *y1), columns [*x0, *x1). Shared with the GPU kernels
 * (cuda/elem.h). */
HOSTDEV void pool_window(const struct pool_geom *g, int oh, int ow, int *y0, int *y1, int *x0,
                         int *x1)
{
	int top = oh * g->SH - g->PT, left = ow * g->SW - g->PL;

	*y0 = top > 0 ? top : 0;
	*y1 = top + g->PH < g->H ? top + g->PH : g->H;
	*x0 = left > 0 ? left : 0;
	*x1 = left + g->PW < g->W ? left + g->PW : g->W;
}

#ifdef __cplusplus
extern "C" {
#endif

/* Fills g; -1 if a size is not positive or a valid pool is larger than
 * the input. */
int pool_geom_init(struct pool_geom *g, int H, int W, int C, int PH, int PW, int SH, int SW,
                   int same);

void maxpool_forward_geom(float *out, const float *in, int B, const struct pool_geom *g);
/* din is overwritten. */
void maxpool_backward_geom(float *din, const float *dout, const float *in, const float *out, int B,
                           const struct pool_geom *g);
void avgpool_forward_geom(float *out, const float *in, int B, const struct pool_geom *g);
void avgpool_backward_geom(float *din, const float *dout, int B, const struct pool_geom *g);

/* The mean of each channel over the HW pixels of an example; backward
 * spreads each channel's gradient over them (din overwritten). */
void global_avgpool_forward(float *out, const float *in, int B, int HW, int C);
void global_avgpool_backward(float *din, const float *dout, int B, int HW, int C);

/* The seed models' 2x2, stride-2, valid max pool. */
void maxpool_forward(float *out, const float *in, int B, int H, int W, int C);

/* din = the window's gradient routed to the input that was the maximum (the
 * first one in row-major window order on ties, so results are deterministic);
 * every other input, and any dropped edge, gets 0. The maximum is found again
 * by comparing in with out, so no index buffer is needed. With mask_by_input
 * set, a window whose maximum is not positive routes nothing: the backward
 * pass of a ReLU that produced in, fused in at no extra cost. */
void maxpool_backward(float *din, const float *dout, const float *in, const float *out, int B,
                      int H, int W, int C, int mask_by_input);

#ifdef __cplusplus
}
#endif

#endif
