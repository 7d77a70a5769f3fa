/* test_model.c - the whole models: gradients against finite differences,
 * buffer layout, initialization. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "gradcheck.h"
#include "keras_model.h"
#include "loss.h"
#include "model.h"
#include "parallel.h"
#include "testutil.h"

enum { B = 3, SIDE = 9, CLASSES = 10 };

static double mean_loss(struct model *m, const float *x, const uint8_t *y)
{
	model_forward(m, x, B, NULL);
	return loss_softmax_xent(NULL, model_logits(m), y, B, CLASSES, 0).loss / B;
}

/* A fingerprint of every non-smooth choice the last forward pass made: which
 * ReLU outputs are positive and which input won each max-pool window. Where
 * a perturbation changes it, the loss is not differentiable between the two
 * points and a central difference says nothing about the gradient. */
static uint64_t kink_pattern(const struct model *m)
{
	uint64_t h = 1469598103934665603ull;

	for (int i = 0; i < m->nlayers; i++) {
		const struct layer *l = &m->layers[i];
		size_t n = (size_t)B * l->out_len;
		if (l->relu)
			for (size_t j = 0; j < n; j++)
				h = (h ^ (l->out[j] > 0.0f)) * 1099511628211ull;
		if (l->kind != LAYER_MAXPOOL2)
			continue;
		const float *in = m->layers[i - 1].out;
		int C = l->in_c, W = l->in_w;
		for (int b = 0; b < B; b++)
			for (int oh = 0; oh < l->out_h; oh++)
				for (int ow = 0; ow < l->out_w; ow++)
					for (int c = 0; c < C; c++) {
						size_t o =
						    (((size_t)b * l->out_h + oh) * l->out_w + ow) *
						        C +
						    c;
						size_t t =
						    (((size_t)b * l->in_h + 2 * oh) * W + 2 * ow) *
						        C +
						    c;
						size_t at[4] = {t, t + C, t + (size_t)W * C,
						                t + (size_t)W * C + C};
						int k = 0;
						while (k < 3 && in[at[k]] != l->out[o])
							k++;
						h = (h ^ (uint64_t)k) * 1099511628211ull;
					}
	}
	return h;
}

/* Checks about 40 parameters in every weight and bias tensor of the model,
 * spread over the tensor, against central differences of the mean loss.
 * Parameters whose perturbation crosses a ReLU or max-pool kink are skipped
 * (and counted): there the difference quotient is not a derivative. */
static void check_model_gradients(const char *name)
{
	struct model *m = testutil_model(name, SIDE, CLASSES, B, 123);
	float x[B * SIDE * SIDE];
	uint8_t y[B] = {1, 7, 4};
	const float h = 5e-4f;
	int checked = 0, skipped = 0, bad = 0;

	assert_non_null(m);
	/* Non-zero biases, so that their gradients matter too. */
	for (int i = 0; i < m->nlayers; i++)
		fill_uniform(m->params + m->layers[i].b_off, m->layers[i].b_len, -0.1f, 0.1f, i);
	fill_uniform(x, B * SIDE * SIDE, 0, 1, 77);
	model_forward(m, x, B, NULL);
	uint64_t base = kink_pattern(m);
	loss_softmax_xent(m->dlogits, model_logits(m), y, B, CLASSES, 1.0f / B);
	model_backward(m, x, B, NULL, NULL);
	for (int i = 0; i < m->nlayers; i++) {
		const struct layer *l = &m->layers[i];
		size_t slices[2][2] = {{l->w_off, l->w_len}, {l->b_off, l->b_len}};
		for (int s = 0; s < 2; s++) {
			size_t off = slices[s][0], len = slices[s][1];
			size_t stride = len > 40 ? len / 40 : 1;
			int here = 0, tried = 0;
			for (size_t j = 0; j < len; j += stride) {
				float *p = &m->params[off + j], keep = *p;
				*p = keep + h;
				double up = mean_loss(m, x, y);
				int kinked = kink_pattern(m) != base;
				*p = keep - h;
				double down = mean_loss(m, x, y);
				kinked |= kink_pattern(m) != base;
				*p = keep;
				tried++;
				if (kinked) {
					skipped++;
					continue;
				}
				double num = (up - down) / (2.0 * h);
				checked++;
				here++;
				bad += grad_mismatches(name, &m->grads[off + j], &num, 1);
			}
			printf("layer %d %s: %d of %d checked\n", i, s ? "bias" : "kernel", here,
			       tried);
			/* Every tensor gets at least half of its checks. The conv
			 * bias shifts all 147 of its filter's outputs at once and
			 * so meets the most kinks: about a third of its checks. */
			assert_true(here * 2 >= tried);
		}
	}
	printf("%s: %d parameters checked, %d skipped at kinks\n", name, checked, skipped);
	assert_true(checked > 150);
	assert_true(skipped < checked / 4);
	assert_int_equal(bad, 0);
	model_free(m);
}

static void test_cnn_gradients_match_finite_differences(void **state)
{
	(void)state;
	check_model_gradients("cnn");
}

static void test_cnn_pool_gradients_match_finite_differences(void **state)
{
	(void)state;
	check_model_gradients("cnn-pool");
}

static void test_cnn_has_the_tutorial_shapes_and_parameter_count(void **state)
{
	struct model *m = testutil_model("cnn", 28, 10, 64, 0);
	(void)state;

	assert_non_null(m);
	/* Keras summary: conv 320, dense 2769024, dense 1290. */
	assert_int_equal(m->nparams, 320 + 2769024 + 1290);
	assert_int_equal(m->layers[0].out_len, 26 * 26 * 32);
	assert_string_equal(
	    m->desc, "input 28x28x1; conv2d 3x3x1->32 relu; dense 21632->128 relu; dense 128->10");
	model_free(m);
	m = testutil_model("cnn-pool", 28, 10, 64, 0);
	assert_non_null(m);
	/* conv 320, pool 0, dense 5408*64+64 = 346176, dense 650. */
	assert_int_equal(m->nparams, 320 + 346176 + 650);
	model_free(m);
}

static void test_glorot_init_is_bounded_zero_mean_and_biases_zero(void **state)
{
	struct model *m = testutil_model("cnn", 28, 10, 1, 7);
	(void)state;

	for (int i = 0; i < m->nlayers; i++) {
		const struct layer *l = &m->layers[i];
		double fan_in = l->kind == LAYER_CONV2D ? 9.0 : (double)l->in_len;
		double fan_out = l->kind == LAYER_CONV2D ? 9.0 * l->out_c : (double)l->out_c;
		double limit = sqrt(6.0 / (fan_in + fan_out)), sum = 0, sq = 0;
		for (size_t j = 0; j < l->w_len; j++) {
			double v = m->params[l->w_off + j];
			assert_true(fabs(v) <= limit);
			sum += v;
			sq += v * v;
		}
		/* Uniform(-a, a): mean 0, variance a^2 / 3. */
		double n = (double)l->w_len, var = sq / n;
		assert_true(fabs(sum / n) < 4 * limit / sqrt(3 * n));
		assert_true(fabs(var / (limit * limit / 3) - 1) < 0.15);
		for (size_t j = 0; j < l->b_len; j++)
			assert_true(m->params[l->b_off + j] == 0.0f);
	}
	model_free(m);
}

static void test_model_new_rejects_inputs_too_small_naming_the_layer(void **state)
{
	struct keras_model *km = calloc(1, sizeof(*km));
	char err[ERR_LEN];
	(void)state;

	testutil_keras(km, "cnn", 2, 10);
	assert_null(model_new(km, 1, 0, err));
	assert_string_equal(err, "model 'cnn': layer 'conv2d' (Conv2D): a 3x3 kernel does not fit "
	                         "a 2x2 input with \"valid\" padding");
	keras_model_release(km);
	testutil_keras(km, "cnn-pool", 3, 10);
	assert_null(model_new(km, 1, 0, err));
	assert_non_null(strstr(err, "layer 'max_pooling2d' (MaxPooling2D): a 2x2 pool does not fit "
	                            "a 1x1 input"));
	keras_model_release(km);
	free(km);
}

/* Counts, per parameter, how often its gradient was reported final. */
struct reports {
	unsigned char *count; /* (nparams) */
	int reports;
};

static void record_slice(void *ctx, const struct grad_slice *s)
{
	struct reports *r = ctx;

	for (size_t row = 0; row < s->rows; row++)
		for (size_t i = 0; i < s->cols; i++)
			__atomic_fetch_add(&r->count[s->off + row * s->stride + i], 1,
			                   __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->reports, 1, __ATOMIC_RELAXED);
}

static void expect_each_gradient_reported_once(int threads)
{
	char err[ERR_LEN];
	struct model *m = testutil_model("cnn-pool", 28, 10, 8, 1);
	float x[8 * 784];
	struct reports r = {calloc(m->nparams, 1), 0};

	assert_int_equal(parallel_init(threads, err), 0);
	fill_uniform(x, 8 * 784, 0, 1, 5);
	model_forward(m, x, 8, NULL);
	fill_uniform(m->dlogits, 8 * 10, -1, 1, 6);
	model_backward(m, x, 8, record_slice, &r);
	for (size_t i = 0; i < m->nparams; i++)
		assert_int_equal(r.count[i], 1);
	/* The dense layers report in blocks, so the optimizer sees cached data. */
	assert_true(r.reports > 3);
	parallel_shutdown();
	free(r.count);
	model_free(m);
}

static void test_backward_reports_every_gradient_exactly_once(void **state)
{
	(void)state;
	expect_each_gradient_reported_once(1);
	expect_each_gradient_reported_once(3);
}

/* A cnn for batches of GB examples, and a batch x of them drawn from seed. */
enum { GB = 16 };
static struct model *cnn_and_batch(float x[GB * 784], uint64_t seed)
{
	struct model *m = testutil_model("cnn", 28, 10, GB, 3);

	assert_non_null(m);
	fill_uniform(x, GB * 784, 0, 1, seed);
	return m;
}

/* The forward pass of x, then a loss gradient drawn from seed, ready for
 * model_backward. */
static void forward_to_dlogits(struct model *m, const float *x, uint64_t seed)
{
	model_forward(m, x, GB, NULL);
	fill_uniform(m->dlogits, GB * 10, -1, 1, seed);
}

/* The same step on 1 and on 3 compute threads: the products are split
 * differently, so results may differ in the last bits, but no more. */
static void test_three_threads_compute_the_same_gradients_as_one(void **state)
{
	char err[ERR_LEN];
	float x[GB * 784];
	struct model *m = cnn_and_batch(x, 8);
	float *g1 = malloc(m->nparams * sizeof(float));
	(void)state;

	for (int threads = 1; threads <= 3; threads += 2) {
		assert_int_equal(parallel_init(threads, err), 0);
		forward_to_dlogits(m, x, 9);
		model_backward(m, x, GB, NULL, NULL);
		if (threads == 1)
			memcpy(g1, m->grads, m->nparams * sizeof(float));
		parallel_shutdown();
	}
	for (size_t i = 0; i < m->nparams; i++)
		assert_true(fabs(m->grads[i] - g1[i]) <= 1e-5 + 1e-4 * fabs(g1[i]));
	free(g1);
	model_free(m);
}

/* The optimizer leaves the gradients zero and says so (grads_zeroed); the
 * dense layers then add to them instead of clearing them. The result equals
 * overwriting them (a zero may differ in sign), on 1 and on 3 threads, and
 * the flag is consumed. Without the flag, whatever is in the buffer is
 * overwritten. */
static void test_backward_onto_zeroed_gradients_equals_overwriting(void **state)
{
	char err[ERR_LEN];
	float x[GB * 784];
	struct model *m = cnn_and_batch(x, 10);
	float *want = malloc(m->nparams * sizeof(float));
	(void)state;

	for (int threads = 1; threads <= 3; threads += 2) {
		assert_int_equal(parallel_init(threads, err), 0);
		forward_to_dlogits(m, x, 11);
		fill_uniform(m->grads, m->nparams, 5, 6, 12); /* stale: must be overwritten */
		model_backward(m, x, GB, NULL, NULL);
		memcpy(want, m->grads, m->nparams * sizeof(float));
		memset(m->grads, 0, m->nparams * sizeof(float));
		m->grads_zeroed = 1;
		model_backward(m, x, GB, NULL, NULL);
		assert_int_equal(m->grads_zeroed, 0);
		for (size_t i = 0; i < m->nparams; i++)
			assert_true(m->grads[i] == want[i]);
		parallel_shutdown();
	}
	free(want);
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cnn_gradients_match_finite_differences),
	    cmocka_unit_test(test_cnn_pool_gradients_match_finite_differences),
	    cmocka_unit_test(test_cnn_has_the_tutorial_shapes_and_parameter_count),
	    cmocka_unit_test(test_glorot_init_is_bounded_zero_mean_and_biases_zero),
	    cmocka_unit_test(test_model_new_rejects_inputs_too_small_naming_the_layer),
	    cmocka_unit_test(test_backward_reports_every_gradient_exactly_once),
	    cmocka_unit_test(test_three_threads_compute_the_same_gradients_as_one),
	    cmocka_unit_test(test_backward_onto_zeroed_gradients_equals_overwriting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
