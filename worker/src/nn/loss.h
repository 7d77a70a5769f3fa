/* loss.h - the losses and metrics of Keras' compile(), per example and
 * over a batch.
 *
 * Keras 3 under TensorFlow (keras/src/backend/tensorflow/nn.py, the
 * backend MultiWorkerMirroredStrategy runs) is the reference, including
 * what it does that a textbook does not: probabilities are clipped to
 * [1e-7, 1 - 1e-7] before their logarithm (and categorical outputs
 * normalised to sum 1 first), and when the model's output comes from a
 * Keras softmax or sigmoid, any of the cross-entropies is computed from
 * that activation's input, the logits, as if from_logits were true: both
 * activations leave their input on their output (_keras_logits), and
 * _get_logits takes it without asking which of the two left it (a sigmoid
 * before categorical cross-entropy gives softmax logits, a softmax before
 * binary cross-entropy sigmoid ones). The caller says which
 * it passes (struct loss_spec.logits); the metrics always read the
 * model's output.
 *
 * Shapes: z, p, dz (B, K): the logits or outputs the loss reads, the
 * model's outputs, and the gradient with respect to z; y (B, T): the
 * targets, T = 1 for class labels (a class index stored as a float) and
 * T = K otherwise.
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
/* Keras' backend.epsilon(): the clip of probabilities. */
#define LOSS_EPSILON 1e-7f

/* A loss and its metrics resolved for a model's output. */
struct loss_spec {
	enum loss_kind kind;
	int logits; /* z holds logits: from_logits, or the output activation's input */
	int K;      /* outputs per example */
	int T;      /* targets per example: 1 (class labels) or K */
	int nmetrics;
	enum metric_kind metrics[LOSS_MAX_METRICS]; /* none is METRIC_ACCURACY */
	const char *names[LOSS_MAX_METRICS];        /* as the progress line shows them */
};

/* Resolves a loss for outputs of K values per example and targets of T
 * values: logits as above; "accuracy" into binary (K == 1), sparse
 * categorical (T == 1 < K) or categorical, as Keras' get_metric does from
 * the shapes. Returns 0, or -1 with a message when the targets cannot fit
 * the loss (sparse labels need T == 1 and K >= 2; the others T == K). */
int loss_resolve(struct loss_spec *s, const struct loss_config *c, int logits, int K, int T,
                 const enum metric_kind *metrics, int nmetrics, char *err);

/* Keras' names: "sparse_categorical_crossentropy", "accuracy" ... and, for
 * the progress line, a resolved metric's short name as Keras shows it
 * when compiled with that name (name is what the user wrote, or NULL). */
const char *loss_name(enum loss_kind kind);
const char *metric_name(enum metric_kind kind);

/* The reverse of loss_name and metric_name, which also take Keras' short
 * names (mse, mae, acc): 0, or -1 for a name neither knows. */
int loss_parse(const char *name, enum loss_kind *out);
int metric_parse(const char *name, enum metric_kind *out);

/* Checks target t of an example (T values) for the loss: a class label is
 * an integer in [0, K), binary targets are in [0, 1], every target is
 * finite. Returns 0, or -1 with what is wrong in err. */
int loss_check_target(const struct loss_spec *s, const float *t, char *err);

/* One example: its loss into *loss, its metric values into metric
 * (s->nmetrics of them, each in [0, 1] for accuracies), and, if dz is not
 * NULL, the gradient of scale * loss with respect to z. p may equal z when
 * the loss reads the outputs. The GPU's loss kernel runs this function. */
HOSTDEV void loss_example(float *dz, double *loss, double *metric, const float *z, const float *p,
                          const float *y, const struct loss_spec *s, float scale);

/* The batch: out[0] += the sum of the B losses, out[1 + i] += the sum of
 * metric i's values; dz as loss_example, row by row. */
void loss_batch(float *dz, double *out, const float *z, const float *p, const float *y, int B,
                const struct loss_spec *s, float scale);

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

/* --- The arithmetic of loss_example, shared with the GPU --- */

/* The first index of the largest of n values, as Keras' argmax. */
HOSTDEV int loss_argmax(const float *v, int n)
{
	int best = 0;

	for (int k = 1; k < n; k++)
		if (v[k] > v[best])
			best = k;
	return best;
}

HOSTDEV float loss_clip(float p)
{
	return p < LOSS_EPSILON ? LOSS_EPSILON : p > 1.0f - LOSS_EPSILON ? 1.0f - LOSS_EPSILON : p;
}

/* The gradient passes a clip only where the value was not clipped, as
 * TensorFlow's clip_by_value's does. */
HOSTDEV int loss_unclipped(float p)
{
	return p >= LOSS_EPSILON && p <= 1.0f - LOSS_EPSILON;
}

/* Sparse labels from probabilities: TensorFlow takes log(clip(p)) as
 * logits of a sparse softmax cross-entropy, log(sum pc) - log(pc_t). */
HOSTDEV double loss_sparse_from_probs(float *dz, const float *p, int t, int K, float scale)
{
	double sum = 0.0;

	for (int k = 0; k < K; k++)
		sum += (double)loss_clip(p[k]);
	if (dz)
		for (int k = 0; k < K; k++) {
			double pc = (double)loss_clip(p[k]);
			double g = pc / sum - (k == t);
			dz[k] = loss_unclipped(p[k]) ? (float)(scale * g / pc) : 0.0f;
		}
	return log(sum) - log((double)loss_clip(p[t]));
}

/* One-hot or soft targets from logits: -sum t log softmax(z), and the
 * gradient TensorFlow's softmax_cross_entropy_with_logits returns,
 * softmax(z) - t, which is the derivative when the targets sum to 1 (for
 * other targets it is what Keras trains with, so it is what mwj does). */
HOSTDEV double loss_categorical_from_logits(float *dz, const float *z, const float *t, int K,
                                            float scale)
{
	float zmax = z[loss_argmax(z, K)];
	double sum = 0.0, loss = 0.0;

	for (int k = 0; k < K; k++)
		sum += exp((double)(z[k] - zmax));
	double log_sum = log(sum);
	for (int k = 0; k < K; k++)
		loss -= (double)t[k] * ((double)(z[k] - zmax) - log_sum);
	if (dz)
		for (int k = 0; k < K; k++) {
			double q = exp((double)(z[k] - zmax) - log_sum);
			dz[k] = (float)(scale * (q - (double)t[k]));
		}
	return loss;
}

/* From probabilities: p normalised to sum 1, clipped, -sum t log q. */
HOSTDEV double loss_categorical_from_probs(float *dz, const float *p, const float *t, int K,
                                           float scale)
{
	double S = 0.0, loss = 0.0, gq = 0.0;

	for (int k = 0; k < K; k++)
		S += (double)p[k];
	for (int k = 0; k < K; k++) {
		float q = (float)((double)p[k] / S);
		loss -= (double)t[k] * log((double)loss_clip(q));
		/* dL/dq_k, kept in dz until the normalisation's Jacobian */
		double g = loss_unclipped(q) ? -(double)t[k] / (double)q : 0.0;
		gq += g * (double)q;
		if (dz)
			dz[k] = (float)g;
	}
	if (dz)
		for (int k = 0; k < K; k++)
			dz[k] = (float)(scale * ((double)dz[k] - gq) / S);
	return loss;
}

/* Binary cross-entropy of each of K outputs, their mean. From logits as
 * sigmoid_cross_entropy_with_logits: max(z, 0) - z t + log(1 + e^-|z|). */
HOSTDEV double loss_binary(float *dz, const float *z, const float *t, int K, int logits,
                           float scale)
{
	double loss = 0.0;

	for (int k = 0; k < K; k++) {
		double zk = (double)z[k], tk = (double)t[k], g;
		if (logits) {
			loss += (zk > 0.0 ? zk : 0.0) - zk * tk + log1p(exp(-fabs(zk)));
			g = 1.0 / (1.0 + exp(-zk)) - tk;
		} else {
			double pc = (double)loss_clip(z[k]);
			loss -= tk * log(pc) + (1.0 - tk) * log(1.0 - pc);
			g = loss_unclipped(z[k]) ? (1.0 - tk) / (1.0 - pc) - tk / pc : 0.0;
		}
		if (dz)
			dz[k] = (float)(scale * g / K);
	}
	return loss / K;
}

/* Mean squared (absolute) error over the K outputs. The gradient of |x| at
 * 0 is 0, as TensorFlow's. */
HOSTDEV double loss_regression(float *dz, const float *p, const float *t, int K, int absolute,
                               float scale)
{
	double loss = 0.0;

	for (int k = 0; k < K; k++) {
		double d = (double)p[k] - (double)t[k];
		loss += absolute ? fabs(d) : d * d;
		if (dz) {
			double g = absolute ? (d > 0.0) - (d < 0.0) : 2.0 * d;
			dz[k] = (float)(scale * g / K);
		}
	}
	return loss / K;
}

/* A metric's value for one example, from the model's outputs p. */
HOSTDEV double loss_metric(enum metric_kind kind, const float *p, const float *y, int K, int T)
{
	double v = 0.0;

	switch (kind) {
	case METRIC_SPARSE_CATEGORICAL_ACCURACY:
		return (float)loss_argmax(p, K) == y[0];
	case METRIC_CATEGORICAL_ACCURACY:
		return loss_argmax(p, K) == loss_argmax(y, T);
	case METRIC_BINARY_ACCURACY:
		for (int k = 0; k < K; k++)
			v += (p[k] > 0.5f ? 1.0f : 0.0f) == y[k];
		return v / K;
	case METRIC_MEAN_SQUARED_ERROR:
	case METRIC_MEAN_ABSOLUTE_ERROR:
		for (int k = 0; k < K; k++) {
			double d = (double)p[k] - (double)y[k];
			v += kind == METRIC_MEAN_SQUARED_ERROR ? d * d : fabs(d);
		}
		return v / K;
	case METRIC_ACCURACY:
		break; /* resolved by loss_resolve */
	}
	return 0.0;
}

HOSTDEV void loss_example(float *dz, double *loss, double *metric, const float *z, const float *p,
                          const float *y, const struct loss_spec *s, float scale)
{
	int K = s->K, correct;

	*loss = 0.0;

	switch (s->kind) {
	case LOSS_SPARSE_CATEGORICAL_CROSSENTROPY:
		if (s->logits)
			loss_xent_example(dz, z, (int)y[0], K, scale, loss, &correct);
		else
			*loss = loss_sparse_from_probs(dz, z, (int)y[0], K, scale);
		break;
	case LOSS_CATEGORICAL_CROSSENTROPY:
		*loss = s->logits ? loss_categorical_from_logits(dz, z, y, K, scale)
		                  : loss_categorical_from_probs(dz, z, y, K, scale);
		break;
	case LOSS_BINARY_CROSSENTROPY:
		*loss = loss_binary(dz, z, y, K, s->logits, scale);
		break;
	case LOSS_MEAN_SQUARED_ERROR:
	case LOSS_MEAN_ABSOLUTE_ERROR:
		*loss = loss_regression(dz, z, y, K, s->kind == LOSS_MEAN_ABSOLUTE_ERROR, scale);
		break;
	}
	for (int i = 0; i < s->nmetrics; i++)
		metric[i] = loss_metric(s->metrics[i], p, y, K, s->T);
}

#endif
