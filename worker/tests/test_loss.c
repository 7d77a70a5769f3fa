/* test_loss.c - Keras' losses and metrics (loss.h): values against their
 * definitions in double, gradients against finite differences, the
 * resolution of "accuracy" by shapes, and the checks of targets. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "gradcheck.h"
#include "loss.h"

#define NB 3
#define NK 4

static struct loss_spec spec(enum loss_kind kind, int logits, int k, int t)
{
	struct loss_spec s;
	struct loss_config c = {kind, logits};
	char err[ERR_LEN];
	enum metric_kind none = METRIC_ACCURACY;

	assert_int_equal(loss_resolve(&s, &c, logits, k, t, &none, 0, err), 0);
	return s;
}

/* The batch's summed loss. */
static double batch_loss(const float *z, const float *y, const struct loss_spec *s)
{
	double out[1 + LOSS_MAX_METRICS] = {0};

	loss_batch(NULL, out, z, z, y, NB, s, 0.0f);
	return out[0];
}

/* dz of (sum of losses) against central differences in z. */
static void check_gradient(const char *what, float *z, const float *y, const struct loss_spec *s)
{
	float dz[NB * NK];
	double num[NB * NK], out[1 + LOSS_MAX_METRICS] = {0};
	size_t n = (size_t)NB * (size_t)s->K;

	loss_batch(dz, out, z, z, y, NB, s, 1.0f);
	for (size_t i = 0; i < n; i++) {
		float keep = z[i];
		float h = 1e-3f;
		z[i] = keep + h;
		double up = batch_loss(z, y, s);
		z[i] = keep - h;
		double down = batch_loss(z, y, s);
		z[i] = keep;
		num[i] = (up - down) / (2.0 * (double)h);
	}
	assert_int_equal(grad_mismatches(what, dz, num, n), 0);
}

static const float LABELS[NB] = {2, 0, 3};
static const float ONE_HOT[NB * NK] = {0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1};
static const float SOFT[NB * NK] = {0.1f, 0.2f, 0.6f, 0.1f,  0.7f,  0.1f,
                                    0.1f, 0.1f, 0,    0.25f, 0.25f, 0.5f};

static void probabilities(float *p, uint64_t seed)
{
	fill_uniform(p, (size_t)NB * NK, 0.05f, 0.95f, seed);
}

static void test_sparse_crossentropy_from_logits_matches_log_softmax(void **state)
{
	(void)state;
	float z[NB * NK];
	struct loss_spec s = spec(LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1, NK, 1);
	double want = 0.0;

	fill_uniform(z, sizeof(z) / sizeof(z[0]), -3.0f, 3.0f, 1);
	for (int i = 0; i < NB; i++) {
		double sum = 0.0;
		for (int k = 0; k < NK; k++)
			sum += exp((double)z[i * NK + k]);
		want += log(sum) - (double)z[i * NK + (int)LABELS[i]];
	}
	assert_float_equal(batch_loss(z, LABELS, &s), want, 1e-6);
	check_gradient("sparse-logits", z, LABELS, &s);
}

static void test_sparse_crossentropy_from_probabilities_clips_and_renormalises(void **state)
{
	(void)state;
	float p[NB * NK];
	struct loss_spec s = spec(LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0, NK, 1);
	double want = 0.0;

	probabilities(p, 2);
	/* TensorFlow's: log(sum clip(p)) - log(clip(p_t)). */
	for (int i = 0; i < NB; i++) {
		double sum = 0.0;
		for (int k = 0; k < NK; k++)
			sum += p[i * NK + k];
		want += log(sum) - log((double)p[i * NK + (int)LABELS[i]]);
	}
	assert_float_equal(batch_loss(p, LABELS, &s), want, 1e-6);
	check_gradient("sparse-probs", p, LABELS, &s);
	/* A probability of 0 is clipped to 1e-7: finite, about -log(1e-7). */
	float zero[NB * NK] = {0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1};
	assert_float_equal(batch_loss(zero, LABELS, &s), -log(1e-7), 1e-3);
}

static void test_categorical_crossentropy_gradients_match_finite_differences(void **state)
{
	(void)state;
	float z[NB * NK];

	for (int logits = 0; logits <= 1; logits++) {
		struct loss_spec s = spec(LOSS_CATEGORICAL_CROSSENTROPY, logits, NK, NK);
		if (logits)
			fill_uniform(z, sizeof(z) / sizeof(z[0]), -3.0f, 3.0f, 3);
		else
			probabilities(z, 4);
		check_gradient(logits ? "cce-logits" : "cce-probs", z, ONE_HOT, &s);
		check_gradient(logits ? "cce-logits-soft" : "cce-probs-soft", z, SOFT, &s);
	}
}

static void test_categorical_crossentropy_equals_sparse_on_one_hot_labels(void **state)
{
	(void)state;
	float z[NB * NK];
	struct loss_spec cce = spec(LOSS_CATEGORICAL_CROSSENTROPY, 1, NK, NK);
	struct loss_spec sparse = spec(LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1, NK, 1);

	fill_uniform(z, sizeof(z) / sizeof(z[0]), -3.0f, 3.0f, 5);
	assert_float_equal(batch_loss(z, ONE_HOT, &cce), batch_loss(z, LABELS, &sparse), 1e-9);
}

static void test_categorical_crossentropy_from_probabilities_normalises_first(void **state)
{
	(void)state;
	struct loss_spec s = spec(LOSS_CATEGORICAL_CROSSENTROPY, 0, NK, NK);
	/* Twice a distribution is the same distribution. */
	float p[NB * NK] = {0.2f, 0.2f, 1.2f, 0.4f, 1, 0.5f, 0.25f, 0.25f, 0.5f, 0.5f, 0.5f, 0.5f};
	double want = -log(0.6) - log(0.5) - log(0.25);

	assert_float_equal(batch_loss(p, ONE_HOT, &s), want, 1e-6);
}

static void test_binary_crossentropy_matches_definition_and_gradients(void **state)
{
	(void)state;
	float z[NB * NK], t[NB * NK];

	fill_uniform(t, sizeof(t) / sizeof(t[0]), 0.0f, 1.0f, 6);
	for (int logits = 0; logits <= 1; logits++) {
		struct loss_spec s = spec(LOSS_BINARY_CROSSENTROPY, logits, NK, NK);
		double want = 0.0;
		if (logits)
			fill_uniform(z, sizeof(z) / sizeof(z[0]), -4.0f, 4.0f, 7);
		else
			probabilities(z, 8);
		for (int i = 0; i < NB * NK; i++) {
			double p = logits ? 1.0 / (1.0 + exp(-(double)z[i])) : z[i];
			want -= ((double)t[i] * log(p) + (1.0 - t[i]) * log(1.0 - p)) / NK;
		}
		assert_float_equal(batch_loss(z, t, &s), want, 1e-5);
		check_gradient(logits ? "bce-logits" : "bce-probs", z, t, &s);
	}
}

static void test_binary_crossentropy_from_logits_is_stable_for_huge_logits(void **state)
{
	(void)state;
	struct loss_spec s = spec(LOSS_BINARY_CROSSENTROPY, 1, 1, 1);
	float z[NB] = {1000.0f, -1000.0f, 0.0f}, t[NB] = {1, 1, 0};

	/* 0, 1000 and log 2: no overflow. */
	assert_float_equal(batch_loss(z, t, &s), 1000.0 + log(2.0), 1e-6);
}

static void test_regression_losses_are_means_over_the_outputs(void **state)
{
	(void)state;
	float p[NB * NK], t[NB * NK];

	fill_uniform(p, sizeof(p) / sizeof(p[0]), -2.0f, 2.0f, 9);
	fill_uniform(t, sizeof(t) / sizeof(t[0]), -2.0f, 2.0f, 10);
	for (int absolute = 0; absolute <= 1; absolute++) {
		struct loss_spec s =
		    spec(absolute ? LOSS_MEAN_ABSOLUTE_ERROR : LOSS_MEAN_SQUARED_ERROR, 0, NK, NK);
		double want = 0.0;
		for (int i = 0; i < NB * NK; i++) {
			double d = (double)p[i] - t[i];
			want += (absolute ? fabs(d) : d * d) / NK;
		}
		assert_float_equal(batch_loss(p, t, &s), want, 1e-6);
		check_gradient(absolute ? "mae" : "mse", p, t, &s);
	}
}

static void test_accuracy_resolves_by_shapes_as_keras_does(void **state)
{
	(void)state;
	struct loss_spec s;
	struct loss_config c = {LOSS_MEAN_SQUARED_ERROR, 0};
	enum metric_kind acc = METRIC_ACCURACY;
	char err[ERR_LEN];

	assert_int_equal(loss_resolve(&s, &c, 0, 1, 1, &acc, 1, err), 0);
	assert_int_equal(s.metrics[0], METRIC_BINARY_ACCURACY);
	assert_int_equal(loss_resolve(&s, &c, 0, 4, 4, &acc, 1, err), 0);
	assert_int_equal(s.metrics[0], METRIC_CATEGORICAL_ACCURACY);
	c.kind = LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
	assert_int_equal(loss_resolve(&s, &c, 1, 4, 1, &acc, 1, err), 0);
	assert_int_equal(s.metrics[0], METRIC_SPARSE_CATEGORICAL_ACCURACY);
}

static void test_metrics_count_first_maxima_thresholds_and_errors(void **state)
{
	(void)state;
	struct loss_spec s;
	struct loss_config c = {LOSS_CATEGORICAL_CROSSENTROPY, 1};
	enum metric_kind m[3] = {METRIC_ACCURACY, METRIC_MEAN_SQUARED_ERROR,
	                         METRIC_MEAN_ABSOLUTE_ERROR};
	char err[ERR_LEN];
	/* Rows 1 and 3 right (row 3 by the first of two maxima), row 2 wrong. */
	float p[NB * NK] = {0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0.5f, 0.5f};
	float t[NB * NK] = {0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0};
	double out[1 + LOSS_MAX_METRICS] = {0};

	assert_int_equal(loss_resolve(&s, &c, 1, NK, NK, m, 3, err), 0);
	loss_batch(NULL, out, p, p, t, NB, &s, 0.0f);
	assert_float_equal(out[1], 2.0, 0.0);
	assert_float_equal(out[2], (0.0 + 2.0 / NK + 0.5 / NK), 1e-9);
	assert_float_equal(out[3], (0.0 + 2.0 / NK + 1.0 / NK), 1e-9);

	struct loss_config bce = {LOSS_BINARY_CROSSENTROPY, 0};
	enum metric_kind acc = METRIC_ACCURACY;
	float pb[NB] = {0.7f, 0.5f, 0.2f}, tb[NB] = {1, 1, 0};
	memset(out, 0, sizeof(out));
	assert_int_equal(loss_resolve(&s, &bce, 0, 1, 1, &acc, 1, err), 0);
	loss_batch(NULL, out, pb, pb, tb, NB, &s, 0.0f);
	assert_float_equal(out[1], 2.0, 0.0); /* 0.5 is not above the threshold */
}

static void test_targets_that_do_not_fit_the_loss_are_refused(void **state)
{
	(void)state;
	struct loss_spec s;
	struct loss_config sparse = {LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
	struct loss_config cce = {LOSS_CATEGORICAL_CROSSENTROPY, 1};
	char err[ERR_LEN];
	float bad[1] = {4.0f}, half[1] = {1.5f}, nan[1] = {NAN};

	assert_int_equal(loss_resolve(&s, &sparse, 1, NK, NK, NULL, 0, err), -1);
	assert_non_null(strstr(err, "categorical_crossentropy"));
	assert_int_equal(loss_resolve(&s, &cce, 1, NK, 1, NULL, 0, err), -1);
	assert_non_null(strstr(err, "sparse_categorical_crossentropy"));
	assert_int_equal(loss_resolve(&s, &sparse, 1, 1, 1, NULL, 0, err), -1);
	s = spec(LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1, NK, 1);
	assert_int_equal(loss_check_target(&s, bad, err), -1);
	assert_string_equal(err, "label 4 is not a class 0..3");
	assert_int_equal(loss_check_target(&s, half, err), -1);
	assert_int_equal(loss_check_target(&s, nan, err), -1);
	assert_string_equal(err, "target nan is not a finite number");
	s = spec(LOSS_BINARY_CROSSENTROPY, 1, 1, 1);
	assert_int_equal(loss_check_target(&s, half, err), -1);
	assert_string_equal(err, "binary_crossentropy target 1.5 is not in [0, 1]");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sparse_crossentropy_from_logits_matches_log_softmax),
	    cmocka_unit_test(test_sparse_crossentropy_from_probabilities_clips_and_renormalises),
	    cmocka_unit_test(test_categorical_crossentropy_gradients_match_finite_differences),
	    cmocka_unit_test(test_categorical_crossentropy_equals_sparse_on_one_hot_labels),
	    cmocka_unit_test(test_categorical_crossentropy_from_probabilities_normalises_first),
	    cmocka_unit_test(test_binary_crossentropy_matches_definition_and_gradients),
	    cmocka_unit_test(test_binary_crossentropy_from_logits_is_stable_for_huge_logits),
	    cmocka_unit_test(test_regression_losses_are_means_over_the_outputs),
	    cmocka_unit_test(test_accuracy_resolves_by_shapes_as_keras_does),
	    cmocka_unit_test(test_metrics_count_first_maxima_thresholds_and_errors),
	    cmocka_unit_test(test_targets_that_do_not_fit_the_loss_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
