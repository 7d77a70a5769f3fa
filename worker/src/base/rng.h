/* rng.h - a small deterministic random number generator (xoshiro256**
 * seeded through splitmix64), so that a seed gives the same weights and the
 * same data order on every machine and in every run.
 */
#ifndef MWJ_RNG_H
#define MWJ_RNG_H

#include <stdint.h>

struct rng {
	uint64_t s[4];
};

/* Seeds the state from seed and a stream number, so that independent uses
 * (weight init, the shuffle of pass p) draw from unrelated sequences. */
void rng_init(struct rng *r, uint64_t seed, uint64_t stream);

uint64_t rng_next(struct rng *r);

/* Uniform in [0, n), without modulo bias. n must be > 0. */
uint32_t rng_below(struct rng *r, uint32_t n);

/* Uniform float in [lo, hi). */
float rng_uniform(struct rng *r, float lo, float hi);

#endif
