/* bench_stats.h - the median of timing samples, for the C benchmarks (also
 * those built with mpicc, hence a header only). */
#ifndef MWJ_BENCH_STATS_H
#define MWJ_BENCH_STATS_H

#include <stdlib.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorts v (n > 0 samples) and returns their median. */
static inline double bench_median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
