/* activation.c - the activations of activation.h. The compare-and-select
 * ones (relu, leaky_relu) and the gradients of sigmoid and tanh are
 * written so that they vectorize, in place on one buffer; the others call
 * libm once per element. Large tensors are shared among the compute
 * threads: by elements, or by rows for softmax.
 *
 * cuda/elem.h repeats the per-element arithmetic for the GPU kernels,
 * expression for expression, and test_cuda_elem.c checks that the two
 * give the same bits: change both together. */
#include "activation.h"

#include <math.h>
#include <string.h>

#include "parallel.h"
#include "simd.h"

/* The constants of tf.nn.gelu, rounded to float. */
#define GELU_SQRT_2         1.4142135623730951f /* exact form: x / sqrt(2) */
#define GELU_SQRT_2_OVER_PI 0.7978845608028654f /* tanh form */
#define GELU_COEFF          0.044715f
#define GELU_INV_SQRT_2PI   0.3989422804014327f /* the normal density at 0 */

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

SIMD_CLONES
static void leaky_forward(float *restrict x, size_t n, float slope)
{
	for (size_t i = 0; i < n; i++)
		x[i] = x[i] > 0.0f ? x[i] : slope * x[i];
}

/* s is the output y where the slope keeps signs, the input x where it
 * flips them: either way the test is x > 0. */
SIMD_CLONES
static void leaky_backward(float *restrict d, const float *restrict s, size_t n, float slope)
{
	for (size_t i = 0; i < n; i++)
		d[i] = s[i] > 0.0f ? d[i] : slope * d[i];
}

SIMD_CLONES
static void sigmoid_backward(float *restrict d, const float *restrict y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		d[i] = d[i] * y[i] * (1.0f - y[i]);
}

SIMD_CLONES
static void tanh_backward(float *restrict d, const float *restrict y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		d[i] = d[i] * (1.0f - y[i] * y[i]);
}

static float gelu(float x, int approximate)
{
	if (approximate) {
		float t = tanhf(GELU_SQRT_2_OVER_PI * (x + GELU_COEFF * (x * x * x)));
		return 0.5f * x * (1.0f + t);
	}
	return 0.5f * x * (1.0f + erff(x / GELU_SQRT_2));
}

/* d gelu / dx. In the tanh form the second term is skipped where
 * 1 - t^2 is 0 (|x| above about 10), so that a huge x^2 cannot make it
 * 0 * inf. */
static float gelu_grad(float x, int approximate)
{
	if (approximate) {
		float t = tanhf(GELU_SQRT_2_OVER_PI * (x + GELU_COEFF * (x * x * x)));
		float s = 1.0f - t * t, g = 0.5f * (1.0f + t);
		if (s > 0.0f)
			g += 0.5f * x * s *
			     (GELU_SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_COEFF * (x * x)));
		return g;
	}
	float cdf = 0.5f * (1.0f + erff(x / GELU_SQRT_2));
	return cdf + x * (GELU_INV_SQRT_2PI * expf(-0.5f * (x * x)));
}

/* One row of cols values; y may be x. */
static void softmax_row(float *y, const float *x, size_t cols)
{
	float m = x[0];
	double sum = 0.0;

	for (size_t j = 1; j < cols; j++)
		m = x[j] > m ? x[j] : m;
	for (size_t j = 0; j < cols; j++) {
		float e = expf(x[j] - m);
		y[j] = e;
		sum += e;
	}
	for (size_t j = 0; j < cols; j++)
		y[j] = (float)(y[j] / sum);
}

/* dx = y (dy - sum(dy y)); dx may be dy. */
static void softmax_backward_row(float *dx, const float *dy, const float *y, size_t cols)
{
	double dot = 0.0;

	for (size_t j = 0; j < cols; j++)
		dot += (double)dy[j] * y[j];
	for (size_t j = 0; j < cols; j++)
		dx[j] = (float)(y[j] * ((double)dy[j] - dot));
}

int act_backward_needs_input(const struct keras_act *a)
{
	return a->kind == KERAS_ACT_GELU ||
	       (a->kind == KERAS_ACT_LEAKY_RELU && a->negative_slope < 0.0f);
}

void act_forward_serial(float *y, const float *x, size_t rows, size_t cols,
                        const struct keras_act *a)
{
	size_t n = rows * cols;

	if (a->kind == KERAS_ACT_LINEAR || a->kind == KERAS_ACT_RELU ||
	    a->kind == KERAS_ACT_LEAKY_RELU) {
		if (y != x)
			memcpy(y, x, n * sizeof(float));
		if (a->kind == KERAS_ACT_RELU)
			relu_forward_serial(y, n);
		else if (a->kind == KERAS_ACT_LEAKY_RELU)
			leaky_forward(y, n, a->negative_slope);
		return;
	}
	switch (a->kind) {
	case KERAS_ACT_SIGMOID:
		for (size_t i = 0; i < n; i++)
			y[i] = 1.0f / (1.0f + expf(-x[i]));
		break;
	case KERAS_ACT_TANH:
		for (size_t i = 0; i < n; i++)
			y[i] = tanhf(x[i]);
		break;
	case KERAS_ACT_GELU:
		for (size_t i = 0; i < n; i++)
			y[i] = gelu(x[i], a->approximate);
		break;
	case KERAS_ACT_SOFTMAX:
		for (size_t r = 0; r < rows && cols > 0; r++)
			softmax_row(y + r * cols, x + r * cols, cols);
		break;
	default:
		break;
	}
}

void act_backward_serial(float *dx, const float *dy, const float *y, const float *x, size_t rows,
                         size_t cols, const struct keras_act *a)
{
	size_t n = rows * cols;

	if (a->kind == KERAS_ACT_SOFTMAX) {
		for (size_t r = 0; r < rows && cols > 0; r++)
			softmax_backward_row(dx + r * cols, dy + r * cols, y + r * cols, cols);
		return;
	}
	if (dx != dy)
		memcpy(dx, dy, n * sizeof(float));
	switch (a->kind) {
	case KERAS_ACT_RELU:
		relu_backward_serial(dx, y, n);
		break;
	case KERAS_ACT_LEAKY_RELU:
		leaky_backward(dx, a->negative_slope < 0.0f ? x : y, n, a->negative_slope);
		break;
	case KERAS_ACT_SIGMOID:
		sigmoid_backward(dx, y, n);
		break;
	case KERAS_ACT_TANH:
		tanh_backward(dx, y, n);
		break;
	case KERAS_ACT_GELU:
		for (size_t i = 0; i < n; i++)
			dx[i] = dx[i] * gelu_grad(x[i], a->approximate);
		break;
	default:
		break;
	}
}

struct act_job {
	float *out;
	const float *in, *y, *x; /* backward: in is dy; forward: only in */
	size_t rows, cols;
	const struct keras_act *a;
	int backward;
};

/* Softmax shares rows; the element-wise kinds share elements, each part
 * a run of whole vectors. */
static void act_part(void *ctx, int part, int parts)
{
	const struct act_job *j = ctx;
	size_t lo, hi, rows, cols, at;

	if (j->a->kind == KERAS_ACT_SOFTMAX) {
		parallel_range(j->rows, part, parts, 1, &lo, &hi);
		rows = hi - lo, cols = j->cols, at = lo * j->cols;
	} else {
		parallel_range(j->rows * j->cols, part, parts, 16, &lo, &hi);
		rows = 1, cols = hi - lo, at = lo;
	}
	if (rows == 0 || cols == 0)
		return;
	if (j->backward)
		act_backward_serial(j->out + at, j->in + at, j->y ? j->y + at : NULL,
		                    j->x ? j->x + at : NULL, rows, cols, j->a);
	else
		act_forward_serial(j->out + at, j->in + at, rows, cols, j->a);
}

void act_forward(float *y, const float *x, size_t rows, size_t cols, const struct keras_act *a)
{
	struct act_job j = {.out = y, .in = x, .rows = rows, .cols = cols, .a = a};

	if (rows * cols < PARALLEL_MIN_ELEMS)
		act_forward_serial(y, x, rows, cols, a);
	else
		parallel_run(act_part, &j);
}

void act_backward(float *dx, const float *dy, const float *y, const float *x, size_t rows,
                  size_t cols, const struct keras_act *a)
{
	struct act_job j = {
	    .out = dx, .in = dy, .y = y, .x = x, .rows = rows, .cols = cols, .a = a, .backward = 1};

	if (a->kind == KERAS_ACT_LINEAR && dx == dy)
		return;
	if (rows * cols < PARALLEL_MIN_ELEMS)
		act_backward_serial(dx, dy, y, x, rows, cols, a);
	else
		parallel_run(act_part, &j);
}
