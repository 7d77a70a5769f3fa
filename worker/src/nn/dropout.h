/* dropout.h - Keras' Dropout layer: inverted dropout, with a mask that is
 * a pure function of where a value sits, so that no mask is stored.
 *
 * Keras 3 (keras/src/layers/regularization/dropout.py): while training and
 * with rate > 0 each value is dropped (set to 0) with probability rate and
 * kept values are scaled by 1 / (1 - rate); otherwise the layer is the
 * identity. Under TensorFlow (tf.nn.experimental.stateless_dropout) a
 * value is kept where a uniform draw in [0, 1) is >= rate, and the scale
 * is 1 / (1 - rate) taken in double, then rounded to float. The rate is
 * the file's double: TensorFlow compares the draws with it rounded to
 * float32, and takes the scale from it unrounded (1 / (1 - 0.6) is 2.5,
 * 1 / (1 - (float)0.6) is 2.5000002).
 *
 * The mask. Keras draws it from a seed generator that advances with every
 * call; here it is counted instead, so that the CPU and GPU, a worker that
 * restarts from a backup, and any split of the batch all draw the same
 * mask. Value elem (0 <= elem < len) of the example at stream position pos
 * is kept, for the layer's key, iff
 *     row  = mix(key ^ mix((pos + 1) * G))
 *     bits = mix(row + (elem + 1) * G)       the elem-th output of the
 *                                            splitmix64 stream at row
 *     (bits >> 40) * 2^-24 >= rate           24 uniform bits against rate
 * where G = 0x9E3779B97F4A7C15 and mix is splitmix64's finaliser (each
 * step a bijection of 64-bit words). The caller chooses pos: it must name
 * the example's occurrence uniquely over the run (the epoch and the
 * example's place in that epoch's global order, for instance), or masks
 * repeat across epochs or workers.
 *
 * Shapes: in, out, din, dout (B, len), example b at position pos0 + b.
 */
#ifndef MWJ_DROPOUT_H
#define MWJ_DROPOUT_H

#include <stddef.h>
#include <stdint.h>

#include "hostdev.h"

#define DROPOUT_GOLDEN 0x9E3779B97F4A7C15ull

/* splitmix64's finaliser (Steele, Lea and Flood, 2014). */
HOSTDEV uint64_t dropout_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* The per-example part of the hash, so a loop over an example's values
 * takes it once. */
HOSTDEV uint64_t dropout_row(uint64_t key, uint64_t pos)
{
	return dropout_mix(key ^ dropout_mix((pos + 1) * DROPOUT_GOLDEN));
}

/* 1 if value elem of the example whose dropout_row is row is kept. */
HOSTDEV int dropout_keep_row(uint64_t row, uint64_t elem, float rate)
{
	uint64_t bits = dropout_mix(row + (elem + 1) * DROPOUT_GOLDEN);

	return (float)(bits >> 40) * (1.0f / 16777216.0f) >= rate;
}

/* 1 if value elem of the example at position pos is kept, for key. */
HOSTDEV int dropout_keep(uint64_t key, uint64_t pos, uint64_t elem, float rate)
{
	return dropout_keep_row(dropout_row(key, pos), elem, rate);
}

/* What a kept value is multiplied by: 1 / (1 - rate) in double, rounded
 * to float, as TensorFlow takes it; 0 for rate >= 1, where nothing is
 * kept (Keras accepts rate 1; TensorFlow refuses it). */
HOSTDEV float dropout_scale(double rate)
{
	return rate < 1.0 ? (float)(1.0 / (1.0 - rate)) : 0.0f;
}

#ifdef __cplusplus
extern "C" {
#endif

/* The key of a model's dropout layer number layer (its index in the
 * model) from the run's seed (or the layer's own "seed"): the layer-th
 * output of the splitmix64 stream at seed, so that two layers draw
 * unrelated masks. */
uint64_t dropout_key(uint64_t seed, int layer);

/* Training: out = kept ? in * dropout_scale(rate) : 0, for rate in
 * [0, 1]; rate 0 copies. out may be in. Shared among the compute threads
 * when B * len is large; the mask does not depend on it. Inference is the
 * identity: the caller skips the layer. */
void dropout_forward(float *out, const float *in, int B, size_t len, uint64_t key, uint64_t pos0,
                     double rate);

/* din = kept ? dout * dropout_scale(rate) : 0, with the forward pass's
 * mask recomputed from (key, pos0, rate). din may be dout. */
void dropout_backward(float *din, const float *dout, int B, size_t len, uint64_t key, uint64_t pos0,
                      double rate);

#ifdef __cplusplus
}
#endif

#endif
