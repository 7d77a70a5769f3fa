/* metrics.h - running loss and metric sums, like Keras' Mean and
 * MeanMetricWrapper: the epoch's loss is the example-weighted mean of the
 * batch losses, each metric the mean of its per-example values (an
 * accuracy: the fraction of examples predicted right). Kept as sums so
 * that workers can add theirs together; which metric each sum is, and
 * its name, is the loss_spec's (loss.h).
 */
#ifndef MWJ_METRICS_H
#define MWJ_METRICS_H

#define METRICS_MAX 4 /* LOSS_MAX_METRICS */

struct metrics {
	double loss_sum;          /* sum of per-example losses */
	double count;             /* examples seen */
	double sums[METRICS_MAX]; /* each metric's per-example values, summed */
};

/* The doubles of a struct metrics, in that order, for the collectives and
 * the files that carry them. */
#define METRICS_WORDS (2 + METRICS_MAX)

static inline double metrics_loss(const struct metrics *m)
{
	return m->count > 0 ? m->loss_sum / m->count : 0.0;
}

static inline double metrics_mean(const struct metrics *m, int i)
{
	return m->count > 0 ? m->sums[i] / m->count : 0.0;
}

static inline void metrics_to_words(double *w, const struct metrics *m)
{
	w[0] = m->loss_sum;
	w[1] = m->count;
	for (int i = 0; i < METRICS_MAX; i++)
		w[2 + i] = m->sums[i];
}

static inline void metrics_from_words(struct metrics *m, const double *w)
{
	m->loss_sum = w[0];
	m->count = w[1];
	for (int i = 0; i < METRICS_MAX; i++)
		m->sums[i] = w[2 + i];
}

/* m += a. */
static inline void metrics_add(struct metrics *m, const struct metrics *a)
{
	m->loss_sum += a->loss_sum;
	m->count += a->count;
	for (int i = 0; i < METRICS_MAX; i++)
		m->sums[i] += a->sums[i];
}

#endif
