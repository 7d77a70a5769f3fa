/* pool.c - 2x2 max pooling. The inner loops run over channels, which are
 * contiguous in NHWC, so they vectorize. */
#include "pool.h"

#include <string.h>

#include "simd.h"

SIMD_CLONES
void maxpool_forward(float *restrict out, const float *restrict in, int B, int H, int W, int C)
{
	int OH = H / 2, OW = W / 2;

	for (int b = 0; b < B; b++) {
		for (int oh = 0; oh < OH; oh++) {
			for (int ow = 0; ow < OW; ow++) {
				const float *p =
				    in +
				    (((size_t)b * H + 2 * (size_t)oh) * W + 2 * (size_t)ow) * C;
				const float *q = p + (size_t)W * C;
				float *o = out + (((size_t)b * OH + oh) * OW + ow) * C;
				for (int c = 0; c < C; c++) {
					float m0 = p[c] > p[C + c] ? p[c] : p[C + c];
					float m1 = q[c] > q[C + c] ? q[c] : q[C + c];
					o[c] = m0 > m1 ? m0 : m1;
				}
			}
		}
	}
}

void maxpool_backward(float *restrict din, const float *restrict dout, const float *restrict in,
                      const float *restrict out, int B, int H, int W, int C, int mask_by_input)
{
	int OH = H / 2, OW = W / 2;

	memset(din, 0, sizeof(float) * B * H * W * C);
	for (int b = 0; b < B; b++) {
		for (int oh = 0; oh < OH; oh++) {
			for (int ow = 0; ow < OW; ow++) {
				size_t top =
				    (((size_t)b * H + 2 * (size_t)oh) * W + 2 * (size_t)ow) * C;
				size_t at[4] = {top, top + C, top + (size_t)W * C,
				                top + (size_t)W * C + C};
				size_t o = (((size_t)b * OH + oh) * OW + ow) * C;
				for (int c = 0; c < C; c++) {
					if (mask_by_input && !(out[o + c] > 0.0f))
						continue;
					for (int k = 0; k < 4; k++) {
						if (in[at[k] + c] == out[o + c]) {
							din[at[k] + c] = dout[o + c];
							break;
						}
					}
				}
			}
		}
	}
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

/* The window of output pixel (oh, ow) clipped to the image: rows
 * [*y0, *y1), columns [*x0, *x1). */
static void window(const struct pool_geom *g, int oh, int ow, int *y0, int *y1, int *x0, int *x1)
{
	int top = oh * g->SH - g->PT, left = ow * g->SW - g->PL;

	*y0 = top > 0 ? top : 0;
	*y1 = top + g->PH < g->H ? top + g->PH : g->H;
	*x0 = left > 0 ? left : 0;
	*x1 = left + g->PW < g->W ? left + g->PW : g->W;
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
				window(g, oh, ow, &y0, &y1, &x0, &x1);
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
				window(g, oh, ow, &y0, &y1, &x0, &x1);
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
				window(g, oh, ow, &y0, &y1, &x0, &x1);
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
				window(g, oh, ow, &y0, &y1, &x0, &x1);
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
