/* activation.c - ReLU, written as compare-and-select so that it vectorizes,
 * and shared among the compute threads when the tensor is large. */
#include "activation.h"

#include "parallel.h"
#include "simd.h"

SIMD_CLONES
void relu_forward_serial(float *restrict x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

SIMD_CLONES
void relu_backward_serial(float *restrict d, const float *restrict y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		d[i] = y[i] > 0.0f ? d[i] : 0.0f;
}

struct relu_job {
	float *d;
	const float *y; /* NULL: forward, in place on d */
	size_t n;
};

static void relu_part(void *ctx, int part, int parts)
{
	const struct relu_job *j = ctx;
	size_t lo, hi;

	parallel_range(j->n, part, parts, 16, &lo, &hi);
	if (j->y)
		relu_backward_serial(j->d + lo, j->y + lo, hi - lo);
	else
		relu_forward_serial(j->d + lo, hi - lo);
}

void relu_forward(float *x, size_t n)
{
	struct relu_job j = {x, NULL, n};

	if (n < PARALLEL_MIN_ELEMS)
		relu_forward_serial(x, n);
	else
		parallel_run(relu_part, &j);
}

void relu_backward(float *d, const float *y, size_t n)
{
	struct relu_job j = {d, y, n};

	if (n < PARALLEL_MIN_ELEMS)
		relu_backward_serial(d, y, n);
	else
		parallel_run(relu_part, &j);
}
