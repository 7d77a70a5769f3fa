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
