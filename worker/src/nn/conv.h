/* conv.h - 2-D convolution, NHWC, stride 1, no padding ("valid"), lowered to
 * one cblas_sgemm over the whole batch through im2col; or, for one input
 * channel, a 3x3 kernel and 32 filters (the seed models' first layer),
 * computed directly, without cols; or, for a 3x3 kernel at stride 1 with
 * channels in eights, by Winograd's F(2x2, 3x3) (winograd.h), whose cols
 * and dcols hold only the transformed kernel.
 *
 * Shapes: in (B, H, W, C); wb (KH*KW*C + 1, OC) is the kernel in Keras' HWIO
 * layout followed by the bias as one extra row; out (B, OH, OW, OC) with
 * OH = H - KH + 1, OW = W - KW + 1. cols (KH*KW*C + 1, B*OH*OW) is scratch
 * that forward fills and backward reads, so it must be kept between the two
 * calls of one step. It is stored transposed, one row per kernel tap, so that
 * im2col copies whole image rows, and its last row is all ones: the product
 * with wb then adds the bias, and the weight-gradient product yields the
 * bias gradient, with no separate pass over the output.
 */
#ifndef MWJ_CONV_H
#define MWJ_CONV_H

/* The geometry of a Conv2D as Keras defines it: strides (SH, SW) and
 * padding "valid" (none: OH = floor((H - KH) / SH) + 1) or "same" (OH =
 * ceil(H / SH), the total padding max((OH - 1) SH + KH - H, 0) split with
 * the smaller half on top and left, as TensorFlow splits it), and whether
 * the layer has a bias (then wb and cols carry the extra row above). The
 * functions below without _geom are the valid, stride-1, biased case. */
struct conv_geom {
	int H, W, C; /* input */
	int KH, KW, OC;
	int SH, SW;
	int PT, PL; /* padding on top and on the left */
	int OH, OW; /* output */
	int bias;
};

/* Fills g; -1 if the output would be empty (a valid kernel larger than the
 * input) or a size is not positive. */
int conv_geom_init(struct conv_geom *g, int H, int W, int C, int KH, int KW, int OC, int SH, int SW,
                   int same, int bias);

/* Whether the shape takes the direct path, which uses neither cols nor
 * dcols. */
static inline int conv_is_direct(int C, int KH, int KW, int OC)
{
	return C == 1 && KH == 3 && KW == 3 && OC == 32;
}

/* Elements of cols (and of dcols) for a batch of B: none on the direct
 * path. */
static inline long conv_cols_len(int B, int H, int W, int C, int KH, int KW, int OC)
{
	if (conv_is_direct(C, KH, KW, OC))
		return 0;
	return ((long)KH * KW * C + 1) * B * (H - KH + 1) * (W - KW + 1);
}

/* out = [im2col(in); 1] @ wb, then max(out, 0) if relu is set. The work
 * runs in blocks of a few examples, lowering, product and ReLU each, so that
 * a block's columns and outputs stay in cache. */
void conv_forward(float *out, float *cols, const float *in, const float *wb, int B, int H, int W,
                  int C, int KH, int KW, int OC, int relu);

/* dwb = cols @ dout, i.e. the kernel gradient followed by the bias gradient
 * (overwritten, not accumulated). If din is not NULL, din = col2im(w @
 * dout^T), with dcols as scratch; the first layer of a model passes NULL and
 * skips that work. in is the forward pass's input, which the direct path
 * reads instead of cols. */
void conv_backward(float *dwb, float *din, float *dcols, const float *dout, const float *in,
                   float *cols, const float *wb, int B, int H, int W, int C, int KH, int KW,
                   int OC);

/* The same for any geometry. cols has KH*KW*C (+ 1 with a bias) rows of
 * B*OH*OW; conv_geom_cols_len counts it (0 on the direct path, which takes
 * only the valid, stride-1, biased shape of conv_is_direct). With stride
 * 1, din is computed as the convolution of dout with the flipped kernel,
 * in cache-sized blocks, with dcols as its scratch where that fits in it
 * (conv.c); otherwise through dcols and col2im. */
long conv_geom_cols_len(const struct conv_geom *g, int B);

/* Multiply-adds of the forward product at batch B as conv_forward_geom
 * computes it: B*OH*OW*OC*KH*KW*C, or on the Winograd path
 * winograd_macs, 2.25x fewer. */
double conv_geom_macs(const struct conv_geom *g, int B);
void conv_forward_geom(float *out, float *cols, const float *in, const float *wb, int B,
                       const struct conv_geom *g, int relu);
void conv_backward_geom(float *dwb, float *din, float *dcols, const float *dout, const float *in,
                        float *cols, const float *wb, int B, const struct conv_geom *g);

/* The geometry of a stride-1 convolution's input gradient, itself a
 * convolution of dout with the flipped kernel: dout's shape in, din's out,
 * padded by KH - 1 - PT on top and KW - 1 - PL on the left, no bias. */
struct conv_geom conv_dgrad_geom(const struct conv_geom *g);

#endif
