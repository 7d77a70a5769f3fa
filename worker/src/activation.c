/* activation.c - ReLU; written as compare-and-select so it vectorizes. */
#include "activation.h"

#include "simd.h"

SIMD_CLONES
void relu_forward(float *restrict x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

SIMD_CLONES
void relu_backward(float *restrict d, const float *restrict y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		d[i] = y[i] > 0.0f ? d[i] : 0.0f;
}
