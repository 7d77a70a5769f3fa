/* loss.h - sparse softmax cross-entropy from logits, and accuracy.
 *
 * Shapes: logits (B, K), labels (B) with values in [0, K), dlogits (B, K).
 */
#ifndef MWJ_LOSS_H
#define MWJ_LOSS_H

#include <stdint.h>

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

#endif
