/* histogram.c - durations in fixed buckets; see histogram.h. */
#include "histogram.h"

const double histogram_bounds[HISTOGRAM_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                    0.5,   1,    2.5,   5,    10};

void histogram_observe_us(struct histogram *h, long long us)
{
	int b = 0;

	if (us < 0)
		us = 0;
	while (b < HISTOGRAM_BUCKETS && (double)us > histogram_bounds[b] * 1e6)
		b++;
	if (b < HISTOGRAM_BUCKETS)
		__atomic_fetch_add(&h->buckets[b], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->sum_us, (unsigned long long)us, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->count, 1, __ATOMIC_RELAXED);
}

void histogram_read(const struct histogram *h, unsigned long cumulative[HISTOGRAM_BUCKETS],
                    unsigned long *count, double *sum_s)
{
	unsigned long run = 0;

	for (int b = 0; b < HISTOGRAM_BUCKETS; b++) {
		run += __atomic_load_n(&h->buckets[b], __ATOMIC_RELAXED);
		cumulative[b] = run;
	}
	*count = __atomic_load_n(&h->count, __ATOMIC_RELAXED);
	/* An observation being added may be in its bucket and not yet in the
	 * count: the count is raised to the buckets' sum so that the +Inf
	 * bucket never exceeds _count in what is served. */
	if (*count < run)
		*count = run;
	*sum_s = (double)__atomic_load_n(&h->sum_us, __ATOMIC_RELAXED) / 1e6;
}
