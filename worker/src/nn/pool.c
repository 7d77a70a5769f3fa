/* pool.c - 2x2 max pooling. The inner loops run over channels, which are
 * contiguous in NHWC, so they vectorize. */
#include "pool.h"

#include <string.h>

#include "parallel.h"
#include "simd.h"

/* The 2x2 pair's work on examples [b0, b1); the pair shares examples
 * among the compute threads (each example's rows are its own). */
struct pool2_job {
	float *out, *din;
	const float *in, *dout, *pout;
	int B, H, W, C, mask_by_input;
};

SIMD_CLONES static void maxpool2_forward_part(const struct pool2_job *j, size_t b0, size_t b1)
{
	int H = j->H, W = j->W, C = j->C, OH = H / 2, OW = W / 2;

	for (size_t b = b0; b < b1; b++) {
		for (int oh = 0; oh < OH; oh++) {
			for (int ow = 0; ow < OW; ow++) {
				const float *p =
				    j->in + ((b * H + 2 * (size_t)oh) * W + 2 * (size_t)ow) * C;
				const float *q = p + (size_t)W * C;
				float *o = j->out + ((b * OH + oh) * OW + ow) * C;
				for (int c = 0; c < C; c++) {
					float m0 = p[c] > p[C + c] ? p[c] : p[C + c];
					float m1 = q[c] > q[C + c] ? q[c] : q[C + c];
					o[c] = m0 > m1 ? m0 : m1;
				}
			}
		}
	}
}

/* One output pixel's window: d0 (top row) and d1 (bottom row) get the
 * gradient g of out from the inputs i0 and i1 (two pixels of C each). */
static inline void window2_backward(float *restrict d0, float *restrict d1,
                                    const float *restrict i0, const float *restrict i1,
                                    const float *restrict out, const float *restrict g, int C,
                                    int mask_by_input)
{
	for (int c = 0; c < C; c++) {
		float m = out[c];
		float gc = (mask_by_input & !(m > 0.0f)) ? 0.0f : g[c];
		int e0 = i0[c] == m;
		int e1 = (i0[C + c] == m) & !e0;
		int e2 = (i1[c] == m) & !(e0 | e1);
		int e3 = (i1[C + c] == m) & !(e0 | e1 | e2);
		d0[c] = e0 ? gc : 0.0f;
		d0[C + c] = e1 ? gc : 0.0f;
		d1[c] = e2 ? gc : 0.0f;
		d1[C + c] = e3 ? gc : 0.0f;
	}
}

/* Each output's gradient goes to the first of its four inputs equal to
 * it (row by row), the others get 0: every input of a window is written
 * once, without a branch, so the channel loop vectorizes; the rows and
 * columns an odd size leaves out of every window are cleared. */
SIMD_CLONES static void maxpool2_backward_part(const struct pool2_job *j, size_t b0, size_t b1)
{
	int H = j->H, W = j->W, C = j->C, OH = H / 2, OW = W / 2;
	size_t row = (size_t)W * C;

	for (size_t b = b0; b < b1; b++) {
		float *img = j->din + b * H * row;
		if (H % 2)
			memset(img + (size_t)(H - 1) * row, 0, row * sizeof(float));
		for (int oh = 0; oh < OH; oh++) {
			if (W % 2) {
				memset(img + 2 * (size_t)oh * row + (size_t)(W - 1) * C, 0,
				       (size_t)C * sizeof(float));
				memset(img + (2 * (size_t)oh + 1) * row + (size_t)(W - 1) * C, 0,
				       (size_t)C * sizeof(float));
			}
			for (int ow = 0; ow < OW; ow++) {
				size_t top = (b * H + 2 * (size_t)oh) * row + 2 * (size_t)ow * C;
				size_t o = ((b * OH + oh) * OW + ow) * C;
				window2_backward(j->din + top, j->din + top + row, j->in + top,
				                 j->in + top + row, j->pout + o, j->dout + o, C,
				                 j->mask_by_input);
			}
		}
	}
}

static void maxpool2_forward_thread(void *ctx, int part, int parts)
{
	const struct pool2_job *j = ctx;
	size_t lo, hi;

	parallel_range((size_t)j->B, part, parts, 1, &lo, &hi);
	maxpool2_forward_part(j, lo, hi);
}

static void maxpool2_backward_thread(void *ctx, int part, int parts)
{
	const struct pool2_job *j = ctx;
	size_t lo, hi;

	parallel_range((size_t)j->B, part, parts, 1, &lo, &hi);
	maxpool2_backward_part(j, lo, hi);
}

static void maxpool2_run(parallel_fn fn, struct pool2_job *j)
{
	if ((size_t)j->B * j->H * j->W * j->C < PARALLEL_MIN_ELEMS)
		fn(j, 0, 1);
	else
		parallel_run(fn, j);
}

void maxpool_forward(float *restrict out, const float *restrict in, int B, int H, int W, int C)
{
	struct pool2_job j = {.out = out, .in = in, .B = B, .H = H, .W = W, .C = C};

	maxpool2_run(maxpool2_forward_thread, &j);
}

void maxpool_backward(float *restrict din, const float *restrict dout, const float *restrict in,
                      const float *restrict out, int B, int H, int W, int C, int mask_by_input)
{
	struct pool2_job j = {.din = din,
	                      .in = in,
	                      .dout = dout,
	                      .pout = out,
	                      .B = B,
	                      .H = H,
	                      .W = W,
	                      .C = C,
	                      .mask_by_input = mask_by_input};

	maxpool2_run(maxpool2_backward_thread, &j);
}

/* --- Any pool size, strides and padding --- */

int pool_geom_init(struct pool_geom *g, int H, int W, int C, int PH, int PW, int SH, int SW,
                   int same)
{
	if (H < 1 || W < 1 || C < 1 || PH < 1 || PW < 1 || SH < 1 || SW < 1)
		return -1;
	*g = (struct pool_geom){.H = H, .W = W, .C = C, .PH = PH, .PW = PW, .SH = SH, .SW = SW};
	if (same) {
		g->OH = (H + SH - 1) / SH;
		g->OW = (W + SW - 1) / SW;
		int ph = (g->OH - 1) * SH + PH - H, pw = (g->OW - 1) * SW + PW - W;
		g->PT = ph > 0 ? ph / 2 : 0;
		g->PL = pw > 0 ? pw / 2 : 0;
		return 0;
	}
	if (H < PH || W < PW)
		return -1;
	g->OH = (H - PH) / SH + 1;
	g->OW = (W - PW) / SW + 1;
	return 0;
}

SIMD_CLONES
void maxpool_forward_geom(float *restrict out, const float *restrict in, int B,
                          const struct pool_geom *g)
{
	int C = g->C;

	for (int b = 0; b < B; b++)
		for (int oh = 0; oh < g->OH; oh++)
			for (int ow = 0; ow < g->OW; ow++) {
				int y0, y1, x0, x1;
				float *o = out + (((size_t)b * g->OH + oh) * g->OW + ow) * C;
				pool_window(g, oh, ow, &y0, &y1, &x0, &x1);
				for (int y = y0; y < y1; y++)
					for (int x = x0; x < x1; x++) {
						const float *p =
						    in + (((size_t)b * g->H + y) * g->W + x) * C;
						if (y == y0 && x == x0)
							for (int c = 0; c < C; c++)
								o[c] = p[c];
						else
							for (int c = 0; c < C; c++)
								o[c] = p[c] > o[c] ? p[c] : o[c];
					}
			}
}

void maxpool_backward_geom(float *restrict din, const float *restrict dout,
                           const float *restrict in, const float *restrict out, int B,
                           const struct pool_geom *g)
{
	int C = g->C;

	memset(din, 0, sizeof(float) * (size_t)B * g->H * g->W * C);
	for (int b = 0; b < B; b++)
		for (int oh = 0; oh < g->OH; oh++)
			for (int ow = 0; ow < g->OW; ow++) {
				int y0, y1, x0, x1;
				size_t o = (((size_t)b * g->OH + oh) * g->OW + ow) * C;
				pool_window(g, oh, ow, &y0, &y1, &x0, &x1);
				for (int c = 0; c < C; c++) {
					int found = 0;
					for (int y = y0; y < y1 && !found; y++)
						for (int x = x0; x < x1 && !found; x++) {
							size_t i =
							    (((size_t)b * g->H + y) * g->W + x) *
							        C +
							    c;
							if (in[i] == out[o + c]) {
								din[i] += dout[o + c];
								found = 1;
							}
						}
				}
			}
}

SIMD_CLONES
void avgpool_forward_geom(float *restrict out, const float *restrict in, int B,
                          const struct pool_geom *g)
{
	int C = g->C;

	for (int b = 0; b < B; b++)
		for (int oh = 0; oh < g->OH; oh++)
			for (int ow = 0; ow < g->OW; ow++) {
				int y0, y1, x0, x1;
				float *o = out + (((size_t)b * g->OH + oh) * g->OW + ow) * C;
				pool_window(g, oh, ow, &y0, &y1, &x0, &x1);
				float n = (float)((y1 - y0) * (x1 - x0));
				for (int c = 0; c < C; c++)
					o[c] = 0.0f;
				for (int y = y0; y < y1; y++)
					for (int x = x0; x < x1; x++) {
						const float *p =
						    in + (((size_t)b * g->H + y) * g->W + x) * C;
						for (int c = 0; c < C; c++)
							o[c] += p[c];
					}
				for (int c = 0; c < C; c++)
					o[c] /= n;
			}
}

SIMD_CLONES
void avgpool_backward_geom(float *restrict din, const float *restrict dout, int B,
                           const struct pool_geom *g)
{
	int C = g->C;

	memset(din, 0, sizeof(float) * (size_t)B * g->H * g->W * C);
	for (int b = 0; b < B; b++)
		for (int oh = 0; oh < g->OH; oh++)
			for (int ow = 0; ow < g->OW; ow++) {
				int y0, y1, x0, x1;
				const float *d = dout + (((size_t)b * g->OH + oh) * g->OW + ow) * C;
				pool_window(g, oh, ow, &y0, &y1, &x0, &x1);
				float n = (float)((y1 - y0) * (x1 - x0));
				for (int y = y0; y < y1; y++)
					for (int x = x0; x < x1; x++) {
						float *p =
						    din + (((size_t)b * g->H + y) * g->W + x) * C;
						for (int c = 0; c < C; c++)
							p[c] += d[c] / n;
					}
			}
}

SIMD_CLONES
void global_avgpool_forward(float *restrict out, const float *restrict in, int B, int HW, int C)
{
	for (int b = 0; b < B; b++) {
		float *o = out + (size_t)b * C;
		for (int c = 0; c < C; c++)
			o[c] = 0.0f;
		for (int i = 0; i < HW; i++) {
			const float *p = in + ((size_t)b * HW + i) * C;
			for (int c = 0; c < C; c++)
				o[c] += p[c];
		}
		for (int c = 0; c < C; c++)
			o[c] /= (float)HW;
	}
}

SIMD_CLONES
void global_avgpool_backward(float *restrict din, const float *restrict dout, int B, int HW, int C)
{
	for (int b = 0; b < B; b++)
		for (int i = 0; i < HW; i++) {
			float *p = din + ((size_t)b * HW + i) * C;
			const float *d = dout + (size_t)b * C;
			for (int c = 0; c < C; c++)
				p[c] = d[c] / (float)HW;
		}
}
