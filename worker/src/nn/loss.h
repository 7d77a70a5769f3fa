/* loss.h - sparse softmax cross-entropy from logits, and accuracy.
 *
 * Shapes: logits (B, K), labels (B) with values in [0, K), dlogits (B, K).
 */
#ifndef MWJ_LOSS_H
#define MWJ_LOSS_H

#include <math.h>
#include <stdint.h>

#include "hostdev.h"

/* The losses of Keras' compile(loss=...), with its semantics: the mean over
 * the batch of per-example losses (SUM_OVER_BATCH_SIZE). */
enum loss_kind {
	LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, /* integer class labels */
	LOSS_CATEGORICAL_CROSSENTROPY,        /* one-hot (or soft) labels */
	LOSS_BINARY_CROSSENTROPY,             /* targets in [0, 1] per output */
	LOSS_MEAN_SQUARED_ERROR,
	LOSS_MEAN_ABSOLUTE_ERROR,
};

struct loss_config {
	enum loss_kind kind;
	int from_logits; /* the cross-entropies: the model outputs logits */
};

/* The metrics of compile(metrics=[...]). METRIC_ACCURACY is Keras'
 * "accuracy", which becomes the variant that fits the loss
 * (loss_resolve_metric); the others are named as Keras names them. */
enum metric_kind {
	METRIC_ACCURACY,
	METRIC_SPARSE_CATEGORICAL_ACCURACY,
	METRIC_CATEGORICAL_ACCURACY,
	METRIC_BINARY_ACCURACY,
	METRIC_MEAN_SQUARED_ERROR,
	METRIC_MEAN_ABSOLUTE_ERROR,
};

#define LOSS_MAX_METRICS 4

struct loss_sums {
	double loss;  /* sum over the batch of per-example losses */
	long correct; /* examples whose argmax logit is the label */
};

/* Computes the per-example losses and accuracy of the batch and, if dlogits
 * is not NULL, the gradient of (scale * sum of losses), i.e.
 * dlogits = scale * (softmax(logits) - onehot(label)). For the mean over a
 * global batch of G examples, scale = 1/G. argmax takes the first maximum on
 * ties, like Keras' SparseCategoricalAccuracy. */
struct loss_sums loss_softmax_xent(float *dlogits, const float *logits, const uint8_t *labels,
                                   int B, int K, float scale);

/* One example: the loss of logits z (K) against label into *loss, whether
 * the first maximum is the label into *correct, and if dz is not NULL, dz =
 * scale * (softmax(z) - onehot(label)), computed stably with the maximum
 * subtracted. The GPU's loss kernel runs this same function. */
HOSTDEV void loss_xent_example(float *dz, const float *z, int label, int K, float scale,
                               double *loss, int *correct)
{
	int argmax = 0;

	for (int k = 1; k < K; k++)
		if (z[k] > z[argmax])
			argmax = k;
	float zmax = z[argmax];
	double sum = 0.0;
	for (int k = 0; k < K; k++)
		sum += exp((double)(z[k] - zmax));
	double log_sum = log(sum);
	*loss = log_sum - (double)(z[label] - zmax);
	*correct = argmax == label;
	if (!dz)
		return;
	for (int k = 0; k < K; k++) {
		double p = exp((double)(z[k] - zmax) - log_sum);
		dz[k] = (float)(scale * (p - (k == label)));
	}
}

#endif
