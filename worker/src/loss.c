/* loss.c - softmax cross-entropy, computed stably with the max subtracted. */
#include "loss.h"

#include <math.h>
#include <stddef.h>

struct loss_sums loss_softmax_xent(float *dlogits, const float *logits, const uint8_t *labels,
                                   int B, int K, float scale)
{
	struct loss_sums sums = {0.0, 0};

	for (int i = 0; i < B; i++) {
		const float *z = logits + (size_t)i * K;
		int argmax = 0;
		for (int k = 1; k < K; k++)
			if (z[k] > z[argmax])
				argmax = k;
		float zmax = z[argmax];
		double sum = 0.0;
		for (int k = 0; k < K; k++)
			sum += exp((double)(z[k] - zmax));
		double log_sum = log(sum);
		sums.loss += log_sum - (double)(z[labels[i]] - zmax);
		sums.correct += argmax == labels[i];
		if (!dlogits)
			continue;
		float *dz = dlogits + (size_t)i * K;
		for (int k = 0; k < K; k++) {
			double p = exp((double)(z[k] - zmax) - log_sum);
			dz[k] = (float)(scale * (p - (k == labels[i])));
		}
	}
	return sums;
}
