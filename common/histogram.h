/* histogram.h - a Prometheus histogram of durations: fixed buckets (the
 * client libraries' defaults, 5 ms to 10 s), a count and a sum, updated
 * atomically from any thread and read without a lock (a scrape may see
 * one observation in the count but not yet in a bucket; Prometheus
 * tolerates that, as its own client libraries allow it). */
#ifndef MWJ_HISTOGRAM_H
#define MWJ_HISTOGRAM_H

#define HISTOGRAM_BUCKETS 11

/* The upper bounds, in seconds; +Inf is the count. */
extern const double histogram_bounds[HISTOGRAM_BUCKETS];

struct histogram {
	unsigned long buckets[HISTOGRAM_BUCKETS]; /* not cumulative: one per bound */
	unsigned long count;
	unsigned long long sum_us; /* the sum, in microseconds */
};

/* Adds one observation of us microseconds (negative counts as 0). */
void histogram_observe_us(struct histogram *h, long long us);

/* Copies h into out, cumulative per bucket as the exposition format wants. */
void histogram_read(const struct histogram *h, unsigned long cumulative[HISTOGRAM_BUCKETS],
                    unsigned long *count, double *sum_s);

#endif
