/* loss.c - the losses and metrics over a batch, and resolving them for a
 * model. */
#include "loss.h"

#include <stddef.h>
#include <string.h>

#include "err.h"

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

/* --- Keras' losses and metrics --- */

static const char *const LOSS_NAMES[] = {
    [LOSS_SPARSE_CATEGORICAL_CROSSENTROPY] = "sparse_categorical_crossentropy",
    [LOSS_CATEGORICAL_CROSSENTROPY] = "categorical_crossentropy",
    [LOSS_BINARY_CROSSENTROPY] = "binary_crossentropy",
    [LOSS_MEAN_SQUARED_ERROR] = "mean_squared_error",
    [LOSS_MEAN_ABSOLUTE_ERROR] = "mean_absolute_error",
};

static const char *const METRIC_NAMES[] = {
    [METRIC_ACCURACY] = "accuracy",
    [METRIC_SPARSE_CATEGORICAL_ACCURACY] = "sparse_categorical_accuracy",
    [METRIC_CATEGORICAL_ACCURACY] = "categorical_accuracy",
    [METRIC_BINARY_ACCURACY] = "binary_accuracy",
    [METRIC_MEAN_SQUARED_ERROR] = "mean_squared_error",
    [METRIC_MEAN_ABSOLUTE_ERROR] = "mean_absolute_error",
};

const char *loss_name(enum loss_kind kind)
{
	return (unsigned)kind < sizeof(LOSS_NAMES) / sizeof(LOSS_NAMES[0]) ? LOSS_NAMES[kind] : "?";
}

const char *metric_name(enum metric_kind kind)
{
	return (unsigned)kind < sizeof(METRIC_NAMES) / sizeof(METRIC_NAMES[0]) ? METRIC_NAMES[kind]
	                                                                       : "?";
}

int loss_parse(const char *name, enum loss_kind *out)
{
	static const struct {
		const char *name;
		enum loss_kind kind;
	} SHORT[] = {{"mse", LOSS_MEAN_SQUARED_ERROR}, {"mae", LOSS_MEAN_ABSOLUTE_ERROR}};

	for (size_t i = 0; i < sizeof(LOSS_NAMES) / sizeof(LOSS_NAMES[0]); i++)
		if (strcmp(name, LOSS_NAMES[i]) == 0) {
			*out = (enum loss_kind)i;
			return 0;
		}
	for (size_t i = 0; i < sizeof(SHORT) / sizeof(SHORT[0]); i++)
		if (strcmp(name, SHORT[i].name) == 0) {
			*out = SHORT[i].kind;
			return 0;
		}
	return -1;
}

int metric_parse(const char *name, enum metric_kind *out)
{
	static const struct {
		const char *name;
		enum metric_kind kind;
	} SHORT[] = {{"acc", METRIC_ACCURACY},
	             {"mse", METRIC_MEAN_SQUARED_ERROR},
	             {"mae", METRIC_MEAN_ABSOLUTE_ERROR}};

	for (size_t i = 0; i < sizeof(METRIC_NAMES) / sizeof(METRIC_NAMES[0]); i++)
		if (strcmp(name, METRIC_NAMES[i]) == 0) {
			*out = (enum metric_kind)i;
			return 0;
		}
	for (size_t i = 0; i < sizeof(SHORT) / sizeof(SHORT[0]); i++)
		if (strcmp(name, SHORT[i].name) == 0) {
			*out = SHORT[i].kind;
			return 0;
		}
	return -1;
}

/* Keras' get_metric: "accuracy" by the shapes of the targets and outputs. */
static enum metric_kind resolve_accuracy(int K, int T)
{
	if (K == 1)
		return METRIC_BINARY_ACCURACY;
	return T == 1 ? METRIC_SPARSE_CATEGORICAL_ACCURACY : METRIC_CATEGORICAL_ACCURACY;
}

int loss_resolve(struct loss_spec *s, const struct loss_config *c, int logits, int K, int T,
                 const enum metric_kind *metrics, int nmetrics, char *err)
{
	const char *name = loss_name(c->kind);

	memset(s, 0, sizeof(*s));
	if (K < 1 || T < 1)
		return err_set(err, "%s: %d outputs and %d targets per example", name, K, T);
	if (nmetrics < 0 || nmetrics > LOSS_MAX_METRICS)
		return err_set(err, "%d metrics, at most %d", nmetrics, LOSS_MAX_METRICS);
	if (c->kind == LOSS_SPARSE_CATEGORICAL_CROSSENTROPY) {
		if (T != 1)
			return err_set(
			    err,
			    "%s takes one integer class label per example, and the targets "
			    "have %d values per example (one-hot labels take "
			    "categorical_crossentropy)",
			    name, T);
		if (K < 2)
			return err_set(err,
			               "%s needs at least 2 outputs (classes), the model has %d",
			               name, K);
	} else if (T != K) {
		return err_set(err,
		               "%s compares the model's %d outputs with as many targets, and the "
		               "targets have %d values per example%s",
		               name, K, T,
		               c->kind == LOSS_CATEGORICAL_CROSSENTROPY && T == 1
		                   ? " (integer labels take sparse_categorical_crossentropy)"
		                   : "");
	}
	s->kind = c->kind;
	s->logits = logits;
	s->K = K;
	s->T = T;
	s->nmetrics = nmetrics;
	for (int i = 0; i < nmetrics; i++) {
		enum metric_kind m =
		    metrics[i] == METRIC_ACCURACY ? resolve_accuracy(K, T) : metrics[i];
		if (m == METRIC_SPARSE_CATEGORICAL_ACCURACY && (T != 1 || K < 2))
			return err_set(err, "%s needs integer class labels and at least 2 outputs",
			               metric_name(m));
		if ((m == METRIC_CATEGORICAL_ACCURACY || m == METRIC_BINARY_ACCURACY ||
		     m == METRIC_MEAN_SQUARED_ERROR || m == METRIC_MEAN_ABSOLUTE_ERROR) &&
		    T != K)
			return err_set(err, "%s compares %d outputs with %d targets per example",
			               metric_name(m), K, T);
		s->metrics[i] = m;
		/* Keras names a metric as it was asked for: "accuracy" stays. */
		s->names[i] = metric_name(metrics[i]);
	}
	return 0;
}

int loss_check_target(const struct loss_spec *s, const float *t, char *err)
{
	for (int k = 0; k < s->T; k++) {
		float v = t[k];
		if (!isfinite(v))
			return err_set(err, "target %g is not a finite number", (double)v);
		if (s->kind == LOSS_SPARSE_CATEGORICAL_CROSSENTROPY &&
		    (v < 0.0f || v >= (float)s->K || v != floorf(v)))
			return err_set(err, "label %g is not a class 0..%d", (double)v, s->K - 1);
		if (s->kind == LOSS_BINARY_CROSSENTROPY && (v < 0.0f || v > 1.0f))
			return err_set(err, "binary_crossentropy target %g is not in [0, 1]",
			               (double)v);
	}
	return 0;
}

void loss_batch(float *dz, double *out, const float *z, const float *p, const float *y, int B,
                const struct loss_spec *s, float scale)
{
	for (int i = 0; i < B; i++) {
		double loss = 0.0, metric[LOSS_MAX_METRICS];
		size_t row = (size_t)i * (size_t)s->K;
		loss_example(dz ? dz + row : NULL, &loss, metric, z + row, p + row,
		             y + (size_t)i * (size_t)s->T, s, scale);
		out[0] += loss;
		for (int m = 0; m < s->nmetrics; m++)
			out[1 + m] += metric[m];
	}
}
