/* gradcheck.h - finite-difference helpers shared by the gradient tests.
 *
 * Central differences in float with step h have an error of about
 * eps_float * |L| / h + h^2 * L''' ; with inputs of order 1, h = 1e-2 and
 * losses of order 1 that is below 1e-3, so analytic and numeric gradients
 * must agree within GRADCHECK_ATOL + GRADCHECK_RTOL * |g|.
 */
#ifndef MWJ_GRADCHECK_H
#define MWJ_GRADCHECK_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "rng.h"

#define GRADCHECK_H    1e-2f
#define GRADCHECK_ATOL 2e-3
#define GRADCHECK_RTOL 2e-2

static inline void fill_uniform(float *x, size_t n, float lo, float hi, uint64_t seed)
{
	struct rng r;

	rng_init(&r, seed, 99);
	for (size_t i = 0; i < n; i++)
		x[i] = rng_uniform(&r, lo, hi);
}

/* L = sum(out * r), so that dL/dout = r. */
static inline double dot_d(const float *a, const float *b, size_t n)
{
	double s = 0.0;

	for (size_t i = 0; i < n; i++)
		s += (double)a[i] * b[i];
	return s;
}

/* Returns how many of the n analytic values disagree with the numeric ones,
 * printing the first few. */
static inline int grad_mismatches(const char *what, const float *analytic, const double *numeric,
                                  size_t n)
{
	int bad = 0;

	for (size_t i = 0; i < n; i++) {
		double a = analytic[i], d = numeric[i];
		if (fabs(a - d) > GRADCHECK_ATOL + GRADCHECK_RTOL * fabs(d)) {
			if (bad < 5)
				printf("%s[%zu]: analytic %.6f numeric %.6f\n", what, i, a, d);
			bad++;
		}
	}
	return bad;
}

#endif
