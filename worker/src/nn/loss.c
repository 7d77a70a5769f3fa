/* loss.c - softmax cross-entropy over a batch. */
#include "loss.h"

#include <stddef.h>

struct loss_sums loss_softmax_xent(float *dlogits, const float *logits, const uint8_t *labels,
                                   int B, int K, float scale)
{
	struct loss_sums sums = {0.0, 0};

	for (int i = 0; i < B; i++) {
		double loss;
		int correct;
		loss_xent_example(dlogits ? dlogits + (size_t)i * K : NULL, logits + (size_t)i * K,
		                  labels[i], K, scale, &loss, &correct);
		sums.loss += loss;
		sums.correct += correct;
	}
	return sums;
}
