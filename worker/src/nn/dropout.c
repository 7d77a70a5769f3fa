/* dropout.c - inverted dropout with a counted mask (dropout.h). The
 * backward pass is the forward pass applied to the gradient: both
 * multiply by the same mask and scale. */
#include "dropout.h"

#include <string.h>

#include "parallel.h"
#include "simd.h"

uint64_t dropout_key(uint64_t seed, int layer)
{
	return dropout_mix(seed + ((uint64_t)layer + 1) * DROPOUT_GOLDEN);
}

struct dropout_job {
	float *out;
	const float *in;
	size_t len, n;
	uint64_t key, pos0;
	float rate, scale; /* rate rounded to float, as the draws are compared */
};

/* Values [e, stop) of one example's, whose part of the hash is row: a
 * loop the compiler vectorizes, 64-bit multiplies and all. */
SIMD_CLONES static void apply_row(float *out, const float *in, size_t e, size_t stop, uint64_t row,
                                  float rate, float scale)
{
	for (size_t i = e; i < stop; i++)
		out[i] = dropout_keep_row(row, i, rate) ? in[i] * scale : 0.0f;
}

/* Values [lo, hi) of the flattened (B, len) tensor, a row at a time so
 * that each example's part of the hash is taken once. */
static void apply_range(const struct dropout_job *j, size_t lo, size_t hi)
{
	size_t b = lo / j->len, e = lo % j->len;

	while (lo < hi) {
		size_t start = lo - e, stop = hi - start < j->len ? hi - start : j->len;
		apply_row(j->out + start, j->in + start, e, stop, dropout_row(j->key, j->pos0 + b),
		          j->rate, j->scale);
		lo = start + stop, b++, e = 0;
	}
}

static void dropout_part(void *ctx, int part, int parts)
{
	const struct dropout_job *j = ctx;
	size_t lo, hi;

	parallel_range(j->n, part, parts, 16, &lo, &hi);
	apply_range(j, lo, hi);
}

static void apply(float *out, const float *in, int B, size_t len, uint64_t key, uint64_t pos0,
                  double rate)
{
	struct dropout_job j = {
	    .out = out,
	    .in = in,
	    .len = len,
	    .n = (size_t)(B > 0 ? B : 0) * len,
	    .key = key,
	    .pos0 = pos0,
	    .rate = (float)rate,
	    .scale = dropout_scale(rate),
	};

	if (j.n == 0)
		return;
	if (!(rate > 0.0)) {
		if (out != in)
			memcpy(out, in, j.n * sizeof(float));
		return;
	}
	if (j.n < PARALLEL_MIN_ELEMS)
		apply_range(&j, 0, j.n);
	else
		parallel_run(dropout_part, &j);
}

void dropout_forward(float *out, const float *in, int B, size_t len, uint64_t key, uint64_t pos0,
                     double rate)
{
	apply(out, in, B, len, key, pos0, rate);
}

void dropout_backward(float *din, const float *dout, int B, size_t len, uint64_t key, uint64_t pos0,
                      double rate)
{
	apply(din, dout, B, len, key, pos0, rate);
}
