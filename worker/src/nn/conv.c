/* conv.c - convolution as im2col + sgemm. */
#include "conv.h"

#include <cblas.h>
#include <string.h>

#include "activation.h"
#include "gemm.h"
#include "parallel.h"
#include "simd.h"
#include "winograd.h"

/* A short copy (one output row, 26 floats for 28x28 input) kept inline: a
 * memcpy call per row costs more than the copy itself, so GCC must not turn
 * the loop back into one. */
#if defined(__GNUC__) && !defined(__clang__)
#define NO_LIBCALLS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define NO_LIBCALLS
#endif

NO_LIBCALLS static inline void copy_run(float *restrict d, const float *restrict s, int n)
{
	for (int i = 0; i < n; i++)
		d[i] = s[i];
}

int conv_geom_init(struct conv_geom *g, int H, int W, int C, int KH, int KW, int OC, int SH, int SW,
                   int same, int bias)
{
	if (H < 1 || W < 1 || C < 1 || KH < 1 || KW < 1 || OC < 1 || SH < 1 || SW < 1)
		return -1;
	*g = (struct conv_geom){.H = H,
	                        .W = W,
	                        .C = C,
	                        .KH = KH,
	                        .KW = KW,
	                        .OC = OC,
	                        .SH = SH,
	                        .SW = SW,
	                        .bias = bias != 0};
	if (same) {
		g->OH = (H + SH - 1) / SH;
		g->OW = (W + SW - 1) / SW;
		int ph = (g->OH - 1) * SH + KH - H, pw = (g->OW - 1) * SW + KW - W;
		g->PT = ph > 0 ? ph / 2 : 0;
		g->PL = pw > 0 ? pw / 2 : 0;
	} else {
		if (H < KH || W < KW)
			return -1;
		g->OH = (H - KH) / SH + 1;
		g->OW = (W - KW) / SW + 1;
	}
	return 0;
}

static struct conv_geom valid_geom(int H, int W, int C, int KH, int KW, int OC)
{
	struct conv_geom g;

	conv_geom_init(&g, H, W, C, KH, KW, OC, 1, 1, 0, 1);
	return g;
}

/* Whether the shape takes the direct path. */
static int geom_is_direct(const struct conv_geom *g)
{
	return conv_is_direct(g->C, g->KH, g->KW, g->OC) && g->SH == 1 && g->SW == 1 &&
	       g->PT == 0 && g->PL == 0 && g->OH == g->H - 2 && g->OW == g->W - 2 && g->bias;
}

long conv_geom_cols_len(const struct conv_geom *g, int B)
{
	if (geom_is_direct(g))
		return 0;
	if (winograd_fits(g))
		return (long)winograd_cols_len(g);
	return ((long)g->KH * g->KW * g->C + g->bias) * B * g->OH * g->OW;
}

double conv_geom_macs(const struct conv_geom *g, int B)
{
	if (winograd_fits(g))
		return winograd_macs(g, B);
	return (double)B * g->OH * g->OW * g->KH * g->KW * g->C * g->OC;
}

/* The taps kw in [*kw0, *kw1) of output column ow whose input column
 * ow * SW + kw - PL lies inside the image. */
static void inside(const struct conv_geom *g, int ow, int *kw0, int *kw1)
{
	int left = ow * g->SW - g->PL;

	*kw0 = left < 0 ? -left : 0;
	*kw1 = g->W - left < g->KW ? g->W - left : g->KW;
	if (*kw1 < *kw0)
		*kw1 = *kw0;
}

/* cols (M, KC), M = B*OH*OW, KC = KH*KW*C (+ 1 with a bias): row m is the
 * window of output pixel m, (kh, kw, c) in order, 0 in the padding, and a
 * 1 for the bias. NHWC keeps a window row (kw, c) contiguous in the
 * input, so each is one copy of up to KW*C values. The rows of examples
 * [b0, b1), from cols on (example b0's first row). */
NO_LIBCALLS static void im2col(float *restrict cols, const float *restrict in, int b0, int b1,
                               const struct conv_geom *g)
{
	int C = g->C, KC = g->KH * g->KW * C + g->bias;
	size_t row = (size_t)g->KW * (size_t)C;

	for (int b = b0; b < b1; b++)
		for (int oh = 0; oh < g->OH; oh++)
			for (int ow = 0; ow < g->OW; ow++) {
				float *d =
				    cols + (((size_t)(b - b0) * g->OH + oh) * g->OW + ow) * KC;
				int kw0, kw1;
				inside(g, ow, &kw0, &kw1);
				for (int kh = 0; kh < g->KH; kh++, d += row) {
					int ih = oh * g->SH + kh - g->PT;
					if (ih < 0 || ih >= g->H) {
						memset(d, 0, sizeof(float) * row);
						continue;
					}
					/* from the first input column inside the image */
					int iw = ow * g->SW - g->PL +
					         kw0; /* >= 0: the first column inside */
					size_t lo = (size_t)kw0 * (size_t)C;
					size_t hi = (size_t)kw1 * (size_t)C;
					const float *src =
					    in +
					    (((size_t)b * g->H + (size_t)ih) * g->W + (size_t)iw) *
					        C;
					for (size_t i = 0; i < lo; i++)
						d[i] = 0.0f;
					copy_run(d + lo, src, (int)(hi - lo));
					for (size_t i = hi; i < row; i++)
						d[i] = 0.0f;
				}
				if (g->bias)
					*d = 1.0f;
			}
}

/* The adjoint of im2col over dcols (M, K): each row's values are added
 * back onto the window they came from, the padding's dropped; examples
 * [b0, b1), whose inputs no other example touches. */
static void col2im(float *restrict din, const float *restrict dcols, int b0, int b1,
                   const struct conv_geom *g)
{
	int C = g->C, K = g->KH * g->KW * C;
	size_t row = (size_t)g->KW * (size_t)C;

	memset(din + (size_t)b0 * g->H * g->W * C, 0,
	       sizeof(float) * (size_t)(b1 - b0) * g->H * g->W * C);
	for (int b = b0; b < b1; b++)
		for (int oh = 0; oh < g->OH; oh++)
			for (int ow = 0; ow < g->OW; ow++) {
				const float *s =
				    dcols + (((size_t)b * g->OH + oh) * g->OW + ow) * K;
				int kw0, kw1;
				inside(g, ow, &kw0, &kw1);
				for (int kh = 0; kh < g->KH; kh++, s += row) {
					int ih = oh * g->SH + kh - g->PT;
					if (ih < 0 || ih >= g->H)
						continue;
					int iw = ow * g->SW - g->PL +
					         kw0; /* >= 0: the first column inside */
					size_t lo = (size_t)kw0 * (size_t)C;
					size_t n = (size_t)(kw1 - kw0) * (size_t)C;
					float *d = din + (((size_t)b * g->H + (size_t)ih) * g->W +
					                  (size_t)iw) *
					                     C;
					for (size_t i = 0; i < n; i++)
						d[i] += s[lo + i];
				}
			}
}

/* The direct path: one input channel, a 3x3 kernel and 32 filters, the
 * first layer of both seed models. There im2col's product has K = 10, far
 * too short for OpenBLAS to run well (it packs more than it multiplies),
 * while a direct loop keeps the 9 x 32 weights in cache and reads each
 * input pixel once. Measured on the cnn model at batch 64, the forward
 * pass takes 0.41-0.55 ms against 0.69-0.76 ms for im2col and its product;
 * the backward pass, 20 accumulators in registers, 0.67-0.76 ms against
 * 0.63-0.69 ms, about the same, and it needs no cols. */
enum { DK = 3, DTAPS = DK * DK, DOC = 32 }; /* as conv_is_direct says */

/* out for examples [b0, b1): each pixel the bias, then the taps in order. */
SIMD_CLONES
static void direct_forward(float *restrict out, const float *restrict in, const float *restrict wb,
                           int b0, int b1, int H, int W, int relu)
{
	int OH = H - DK + 1, OW = W - DK + 1;

	for (int b = b0; b < b1; b++)
		for (int oh = 0; oh < OH; oh++)
			for (int ow = 0; ow < OW; ow++) {
				const float *p = in + ((size_t)b * H + oh) * W + ow;
				float *o = out + (((size_t)b * OH + oh) * OW + ow) * DOC;
				float acc[DOC];
				for (int c = 0; c < DOC; c++)
					acc[c] = wb[DTAPS * DOC + c];
				for (int kh = 0; kh < DK; kh++)
					for (int kw = 0; kw < DK; kw++) {
						float v = p[kh * W + kw];
						const float *w = wb + (size_t)(kh * DK + kw) * DOC;
						for (int c = 0; c < DOC; c++)
							acc[c] += v * w[c];
					}
				for (int c = 0; c < DOC; c++)
					o[c] = relu && !(acc[c] > 0.0f) ? 0.0f : acc[c];
			}
}

/* The kernel and bias gradients over examples [b0, b1), pixel by pixel in
 * order, into dwb (overwritten). */
SIMD_CLONES
static void direct_weight_grads(float *restrict dwb, const float *restrict in,
                                const float *restrict dout, int b0, int b1, int H, int W)
{
	int OH = H - DK + 1, OW = W - DK + 1;
	float acc[DTAPS + 1][DOC] = {{0}};

	for (int b = b0; b < b1; b++)
		for (int oh = 0; oh < OH; oh++)
			for (int ow = 0; ow < OW; ow++) {
				const float *p = in + ((size_t)b * H + oh) * W + ow;
				const float *d = dout + (((size_t)b * OH + oh) * OW + ow) * DOC;
				for (int kh = 0; kh < DK; kh++)
					for (int kw = 0; kw < DK; kw++) {
						float v = p[kh * W + kw];
						for (int c = 0; c < DOC; c++)
							acc[kh * DK + kw][c] += v * d[c];
					}
				for (int c = 0; c < DOC; c++)
					acc[DTAPS][c] += d[c];
			}
	memcpy(dwb, acc, sizeof(acc));
}

/* din for examples [b0, b1): each input pixel gathers, tap by tap, the
 * output gradients it contributed to. */
SIMD_CLONES
static void direct_input_grads(float *restrict din, const float *restrict dout,
                               const float *restrict wb, int b0, int b1, int H, int W)
{
	int OH = H - DK + 1, OW = W - DK + 1;

	for (int b = b0; b < b1; b++)
		for (int y = 0; y < H; y++)
			for (int x = 0; x < W; x++) {
				float s = 0.0f;
				for (int kh = 0; kh < DK; kh++)
					for (int kw = 0; kw < DK; kw++) {
						int oh = y - kh, ow = x - kw;
						if (oh < 0 || oh >= OH || ow < 0 || ow >= OW)
							continue;
						const float *d =
						    dout + (((size_t)b * OH + oh) * OW + ow) * DOC;
						const float *w = wb + (size_t)(kh * DK + kw) * DOC;
						for (int c = 0; c < DOC; c++)
							s += d[c] * w[c];
					}
				din[((size_t)b * H + y) * W + x] = s;
			}
}

/* Partial weight gradients of the parts of a direct backward pass but the
 * first, summed in part order afterwards. */
static float direct_partials[PARALLEL_MAX_THREADS][(DTAPS + 1) * DOC];

struct direct_job {
	float *out, *dwb, *din;
	const float *in, *wb, *dout;
	int B, H, W, relu;
};

static void direct_forward_part(void *ctx, int part, int parts)
{
	const struct direct_job *j = ctx;
	size_t lo, hi;

	parallel_range((size_t)j->B, part, parts, 1, &lo, &hi);
	direct_forward(j->out, j->in, j->wb, (int)lo, (int)hi, j->H, j->W, j->relu);
}

static void direct_backward_part(void *ctx, int part, int parts)
{
	const struct direct_job *j = ctx;
	size_t lo, hi;

	parallel_range((size_t)j->B, part, parts, 1, &lo, &hi);
	direct_weight_grads(part ? direct_partials[part] : j->dwb, j->in, j->dout, (int)lo, (int)hi,
	                    j->H, j->W);
	if (j->din)
		direct_input_grads(j->din, j->dout, j->wb, (int)lo, (int)hi, j->H, j->W);
}

static void direct_backward(float *dwb, float *din, const float *dout, const float *in,
                            const float *wb, int B, int H, int W)
{
	struct direct_job j = {
	    .dwb = dwb, .din = din, .in = in, .wb = wb, .dout = dout, .B = B, .H = H, .W = W};
	if (parallel_threads() == 1 || B <= 1) {
		direct_backward_part(&j, 0, 1);
		return;
	}
	parallel_run(direct_backward_part, &j);
	for (int p = 1; p < parallel_threads(); p++)
		for (int i = 0; i < (DTAPS + 1) * DOC; i++)
			dwb[i] += direct_partials[p][i];
}

/* Bytes of columns and outputs one block of examples may occupy in cache. */
#define BLOCK_BYTES ((size_t)256 * 1024)

struct forward_job {
	float *out, *cols;
	const float *in, *wb;
	const struct conv_geom *g;
	int B, relu, block;
};

/* One part of the batch, in blocks of examples: examples never share input
 * pixels, so blocks are independent. */
static void forward_part(void *ctx, int part, int parts)
{
	const struct forward_job *j = ctx;
	const struct conv_geom *g = j->g;
	size_t P = (size_t)g->OH * g->OW, KC = (size_t)g->KH * g->KW * g->C + (size_t)g->bias;
	size_t lo, hi;
	int OC = g->OC;

	parallel_range((size_t)j->B, part, parts, 1, &lo, &hi);
	for (size_t b0 = lo; b0 < hi; b0 += (size_t)j->block) {
		size_t b1 = b0 + (size_t)j->block < hi ? b0 + (size_t)j->block : hi;
		size_t r0 = b0 * P, rows = (b1 - b0) * P;
		float *out = j->out + r0 * OC;
		im2col(j->cols + r0 * KC, j->in, (int)b0, (int)b1, g);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, OC, (int)KC, 1.0f,
		            j->cols + r0 * KC, (int)KC, j->wb, OC, 0.0f, out, OC);
		if (j->relu)
			relu_forward_serial(out, rows * OC);
	}
}

void conv_forward_geom(float *out, float *cols, const float *in, const float *wb, int B,
                       const struct conv_geom *g, int relu)
{
	if (geom_is_direct(g)) {
		struct direct_job d = {
		    .out = out, .in = in, .wb = wb, .B = B, .H = g->H, .W = g->W, .relu = relu};
		parallel_run(direct_forward_part, &d);
		return;
	}
	if (winograd_fits(g)) {
		winograd_forward(out, cols, in, wb, B, g, relu);
		return;
	}
	int P = g->OH * g->OW;
	if (P <= 0)
		return; /* no output: conv_geom_init refuses such a shape */
	size_t per_example = sizeof(float) * (size_t)P * (g->KH * g->KW * g->C + 1 + g->OC);
	int block = (int)(BLOCK_BYTES / per_example);
	struct forward_job j = {out, cols, in, wb, g, B, relu, block < 1 ? 1 : block};

	parallel_run(forward_part, &j);
}

void conv_forward(float *out, float *cols, const float *in, const float *wb, int B, int H, int W,
                  int C, int KH, int KW, int OC, int relu)
{
	struct conv_geom g = valid_geom(H, W, C, KH, KW, OC);

	conv_forward_geom(out, cols, in, wb, B, &g, relu);
}

struct col2im_job {
	float *din;
	const float *dcols;
	const struct conv_geom *g;
	int B;
};

static void col2im_part(void *ctx, int part, int parts)
{
	const struct col2im_job *j = ctx;
	size_t lo, hi;

	parallel_range((size_t)j->B, part, parts, 1, &lo, &hi);
	col2im(j->din, j->dcols, (int)lo, (int)hi, j->g);
}

/* --- The input gradient of a stride-1 convolution, as a convolution ---
 *
 * din[b, ih, iw, c] = sum over (kh, kw, oc) of
 * dout[b, ih + PT - kh, iw + PL - kw, oc] w[kh, kw, c, oc]: the convolution
 * of dout, padded by KH - 1 - PT rows on top and KW - 1 - PL columns on the
 * left, with the kernel flipped and its channel axes swapped,
 * wt[kh', kw', oc, c] = w[KH - 1 - kh', KW - 1 - kw', c, oc]. Lowered like
 * the forward pass, a few examples at a time so that their columns stay in
 * cache, each block's product (KH*KW*OC deep) writes din directly: no
 * (M, K) matrix of window gradients to write out and read back, and no
 * scattered adds of col2im. */

struct conv_geom conv_dgrad_geom(const struct conv_geom *g)
{
	return (struct conv_geom){.H = g->OH,
	                          .W = g->OW,
	                          .C = g->OC,
	                          .KH = g->KH,
	                          .KW = g->KW,
	                          .OC = g->C,
	                          .SH = 1,
	                          .SW = 1,
	                          .PT = g->KH - 1 - g->PT,
	                          .PL = g->KW - 1 - g->PL,
	                          .OH = g->H,
	                          .OW = g->W,
	                          .bias = 0};
}

struct dgrad_job {
	float *din, *scratch; /* scratch: wt, then each part's block of columns */
	const float *dout, *wt;
	struct conv_geom tg;
	int B, block;
	size_t part_elems;
};

static void dgrad_part(void *ctx, int part, int parts)
{
	const struct dgrad_job *j = ctx;
	const struct conv_geom *tg = &j->tg;
	size_t P = (size_t)tg->OH * tg->OW, KT = (size_t)tg->KH * tg->KW * tg->C;
	size_t lo, hi;

	parallel_range((size_t)j->B, part, parts, 1, &lo, &hi);
	if (lo == hi)
		return;
	float *cols = j->scratch + (size_t)part * j->part_elems;
	for (size_t b0 = lo; b0 < hi; b0 += (size_t)j->block) {
		size_t b1 = b0 + (size_t)j->block < hi ? b0 + (size_t)j->block : hi;
		im2col(cols, j->dout, (int)b0, (int)b1, tg);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)((b1 - b0) * P), tg->OC,
		            (int)KT, 1.0f, cols, (int)KT, j->wt, tg->OC, 0.0f,
		            j->din + b0 * P * tg->OC, tg->OC);
	}
}

/* din through dgrad_part, with dcols (conv_geom_cols_len elements) as its
 * scratch; 0, or -1 (nothing done) where the geometry is not stride 1 or
 * the scratch is too small for wt and a block of columns a thread. */
static int dgrad_by_convolution(float *din, float *dcols, const float *dout, const float *wb, int B,
                                const struct conv_geom *g)
{
	if (g->SH != 1 || g->SW != 1)
		return -1;
	struct dgrad_job j = {.din = din, .dout = dout, .tg = conv_dgrad_geom(g), .B = B};
	size_t P = (size_t)g->H * g->W, KT = (size_t)g->KH * g->KW * g->OC;
	size_t nwt = KT * (size_t)g->C, parts = (size_t)parallel_threads();
	size_t per_example = P * KT, have = (size_t)conv_geom_cols_len(g, B);
	size_t block = BLOCK_BYTES / (sizeof(float) * per_example), share;

	share = ((size_t)B + parts - 1) / parts; /* the most examples a part gets */
	block = block < 1 ? 1 : block > share ? share : block;
	if (nwt + parts * block * per_example > have)
		return -1;
	float *wt = dcols;
	for (int kh = 0; kh < g->KH; kh++)
		for (int kw = 0; kw < g->KW; kw++)
			for (int oc = 0; oc < g->OC; oc++)
				for (int c = 0; c < g->C; c++)
					wt[(((size_t)kh * g->KW + kw) * g->OC + oc) * g->C + c] =
					    wb[(((size_t)(g->KH - 1 - kh) * g->KW +
					         (g->KW - 1 - kw)) *
					            g->C +
					        c) *
					           g->OC +
					       oc];
	j.wt = wt;
	j.scratch = dcols + nwt;
	j.block = (int)block;
	j.part_elems = block * per_example;
	parallel_run(dgrad_part, &j);
	return 0;
}

void conv_backward_geom(float *dwb, float *din, float *dcols, const float *dout, const float *in,
                        float *cols, const float *wb, int B, const struct conv_geom *g)
{
	if (geom_is_direct(g)) {
		direct_backward(dwb, din, dout, in, wb, B, g->H, g->W);
		return;
	}
	if (winograd_fits(g)) {
		/* cols is free once the forward pass is done: the weight
		 * gradient's scratch */
		winograd_backward(dwb, din, cols, dcols, dout, in, wb, B, g);
		return;
	}
	int M = B * g->OH * g->OW, K = g->KH * g->KW * g->C, OC = g->OC, KC = K + g->bias;
	/* dwb (KC, OC) = cols^T (KC, M) @ dout (M, OC): the bias's row too */
	gemm(1, 0, KC, OC, M, 1.0f, cols, KC, dout, OC, 0.0f, dwb, OC);
	if (!din || dgrad_by_convolution(din, dcols, dout, wb, B, g) == 0)
		return;
	/* dcols (M, K) = dout (M, OC) @ w^T (OC, K), then back onto the pixels */
	gemm(0, 1, M, K, OC, 1.0f, dout, OC, wb, OC, 0.0f, dcols, K);
	struct col2im_job j = {din, dcols, g, B};
	parallel_run(col2im_part, &j);
}

void conv_backward(float *dwb, float *din, float *dcols, const float *dout, const float *in,
                   float *cols, const float *wb, int B, int H, int W, int C, int KH, int KW, int OC)
{
	struct conv_geom g = valid_geom(H, W, C, KH, KW, OC);

	conv_backward_geom(dwb, din, dcols, dout, in, cols, wb, B, &g);
}
