/* metrics.h - running loss and accuracy sums, like Keras' Mean and
 * SparseCategoricalAccuracy: the epoch's loss is the example-weighted mean of
 * the batch losses, accuracy the fraction of correct examples. Kept as sums
 * so that workers can add theirs together.
 */
#ifndef MWJ_METRICS_H
#define MWJ_METRICS_H

struct metrics {
	double loss_sum; /* sum of per-example losses */
	double correct;  /* examples predicted right */
	double count;    /* examples seen */
};

static inline double metrics_loss(const struct metrics *m)
{
	return m->count > 0 ? m->loss_sum / m->count : 0.0;
}

static inline double metrics_accuracy(const struct metrics *m)
{
	return m->count > 0 ? m->correct / m->count : 0.0;
}

#endif
