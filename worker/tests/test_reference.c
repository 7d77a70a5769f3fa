/* test_reference.c - mwj's numbers against an implementation that shares
 * none of its code: PyTorch, computing as Keras 3 does under TensorFlow.
 *
 * Each fixture in worker/tests/data/reference is a Keras 3 model's JSON
 * (its compile_config names the loss and the optimizer), initial
 * parameters and moving statistics in mwj's layout, one batch, and what
 * torch computed from them over a few training steps: the outputs, loss
 * and gradients of the first step, and each step's loss, moving statistics
 * and parameters, and the optimizer's variables at the end.
 * scripts/torch_reference.py writes them and says how each quantity is
 * computed there (the Keras and TensorFlow source it follows). The test
 * finds them beside this file, through __FILE__ (the path the Makefile
 * compiles it by, relative to the repository root the tests run from).
 *
 * Here each fixture is parsed and built by mwj as the trainer does it
 * (model_loss_reads, model_new, loss_resolve, optimizer_init_config from
 * the file's compile_config), then trained for the fixture's steps on the
 * trainer's own path with one worker: forward, loss_batch, a backward pass
 * whose gradient slices go through the optimizer as they are reported,
 * model_update_state. Every array is compared element by element;
 * a failure names the fixture, the array, the index and both values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "keras_model.h"
#include "loss.h"
#include "model.h"
#include "npy.h"
#include "npz.h"
#include "optimizer.h"

/* A value passes when |mwj - torch| <= atol + rtol * |torch|. The
 * differences come from the order of float32 sums (OpenBLAS' blocking
 * against torch's), from mwj's losses in double against torch's float32,
 * and from libm against torch's vectorised exp, erf and tanh; none is a
 * difference of formula. A value that is a sum of terms much larger than
 * itself (a gradient of 3e-3 made of terms near 1) keeps the terms'
 * absolute error, hence an atol beside the rtol. Measured over all the
 * fixtures (x86-64, OpenBLAS 0.3.21, torch 1.13; |d| the largest
 * difference, rel the largest |d| / |torch| where |torch| >= 0.1, use the
 * largest |d| / (atol + rtol |torch|) with the tolerances below):
 *   outputs     |d| 6.0e-07  rel 1.7e-06  use 0.10
 *   loss        |d| 4.8e-07  rel 6.0e-07  use 0.05
 *   gradients   |d| 6.0e-07  rel 2.2e-06  use 0.09
 *   moving      |d| 6.0e-08  rel 1.5e-07  use 0.06
 *   parameters  |d| 2.4e-07  rel 6.0e-07  use 0.09, over up to three steps
 *   optimizer   |d| 2.4e-07  rel 5.9e-07  use 0.09
 * so each tolerance is about ten times what the worst value needs, while a
 * wrong formula, sign, index or epsilon moves values by 1e-3 or more (the
 * cross-entropies' logits rule, before it was fixed, by 1e-2 to 1e-1). */
struct tol {
	double atol, rtol;
};

static const struct tol TOL_OUTPUTS = {1e-6, 2e-5};
static const struct tol TOL_LOSS = {1e-6, 1e-5};
static const struct tol TOL_GRADS = {2e-6, 5e-5};
static const struct tol TOL_STATE = {1e-7, 2e-5};
static const struct tol TOL_PARAMS = {1e-6, 1e-5};
static const struct tol TOL_OPT = {5e-7, 2e-5};

/* Where |torch| is below this the relative difference is not reported:
 * there the absolute one is what counts. */
#define REL_FLOOR 0.1

/* Mismatches printed per array before the rest are only counted. */
#define MAX_SHOWN 5

/* The largest differences seen in one kind of quantity, for the report. */
struct worst {
	double abs, rel;
};

/* One array of a fixture, converted to float32. */
struct f32s {
	float *v;
	size_t n;
	uint64_t rows; /* shape[0], or 1 for a rank-0 or rank-1 array */
};

struct reference {
	const char *file; /* the fixture's name, for messages */
	struct keras_model km;
	struct f32s x, y, params, state, outputs, grads, losses, state_steps, params_steps,
	    opt_state;
	int64_t seed, pos;
	int batch, steps;
};

/* Fails the running test with msg. cmocka's failure jumps out of the test,
 * which the static analyzer cannot know without the noreturn. */
static _Noreturn void fail_with(const char *msg)
{
	fail_msg("%s", msg);
	abort(); /* not reached */
}

/* --- Reading a fixture --- */

/* The path of a committed fixture, worker/tests/data/reference/<name>.npz. */
static const char *data_path(const char *name)
{
	static char p[PATH_MAX];
	const char *slash = strrchr(__FILE__, '/');

	snprintf(p, sizeof(p), "%.*s/data/reference/%s%s", slash ? (int)(slash - __FILE__) : 1,
	         slash ? __FILE__ : ".", name, name[0] ? ".npz" : "");
	return p;
}

static void read_array(struct npz *z, const char *member, struct npy_array *a)
{
	char err[ERR_LEN];

	if (npz_read(z, member, a, err) < 0)
		fail_with(err);
}

static void read_f32(struct npz *z, const char *member, struct f32s *out)
{
	struct npy_array a;

	read_array(z, member, &a);
	out->n = (size_t)a.count;
	out->rows = a.rank >= 2 ? a.shape[0] : 1;
	out->v = calloc(out->n ? out->n : 1, sizeof(float));
	assert_non_null(out->v);
	npy_to_f32(out->v, &a, 0, out->n, 1.0f);
	npy_release(&a);
}

static int64_t read_int(struct npz *z, const char *member)
{
	struct npy_array a;
	int64_t v;

	read_array(z, member, &a);
	assert_int_equal(a.count, 1);
	assert_int_equal(npy_get_i64(&a, 0, &v), 0);
	npy_release(&a);
	return v;
}

/* The model JSON and the tanh-form gelu layers the file cannot name. */
static void read_model(struct npz *z, struct reference *r)
{
	struct npy_array a;
	char err[ERR_LEN];

	read_array(z, "json", &a);
	assert_int_equal(a.dtype, NPY_TYPE_U8);
	if (keras_model_parse(&r->km, (const char *)a.data, (size_t)a.count, r->file, err) < 0)
		fail_with(err);
	npy_release(&a);
	if (!npz_has(z, "gelu_tanh"))
		return;
	read_array(z, "gelu_tanh", &a);
	for (uint64_t i = 0; i < a.count; i++) {
		int64_t k;
		assert_int_equal(npy_get_i64(&a, i, &k), 0);
		assert_true(k >= 0 && k < r->km.nlayers);
		assert_int_equal(r->km.layers[k].act.kind, KERAS_ACT_GELU);
		r->km.layers[k].act.approximate = 1;
	}
	npy_release(&a);
}

static void reference_load(struct reference *r, const char *file)
{
	struct npz *z = NULL;
	char err[ERR_LEN];

	memset(r, 0, sizeof(*r));
	r->file = file;
	if (npz_open(&z, data_path(file), err) < 0)
		fail_with(err);
	read_model(z, r);
	r->seed = read_int(z, "seed");
	r->pos = read_int(z, "pos");
	read_f32(z, "x", &r->x);
	read_f32(z, "y", &r->y);
	read_f32(z, "params", &r->params);
	read_f32(z, "state", &r->state);
	read_f32(z, "outputs", &r->outputs);
	read_f32(z, "grads", &r->grads);
	read_f32(z, "losses", &r->losses);
	read_f32(z, "state_steps", &r->state_steps);
	read_f32(z, "params_steps", &r->params_steps);
	if (npz_has(z, "opt_state"))
		read_f32(z, "opt_state", &r->opt_state);
	npz_close(z);
	r->batch = (int)r->x.rows;
	r->steps = (int)r->losses.n;
	assert_true(r->steps >= 1 && (uint64_t)r->steps == r->params_steps.rows);
}

static void reference_release(struct reference *r)
{
	struct f32s *all[] = {
	    &r->x,     &r->y,      &r->params,      &r->state,        &r->outputs,
	    &r->grads, &r->losses, &r->state_steps, &r->params_steps, &r->opt_state};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		free(all[i]->v);
	keras_model_release(&r->km);
}

/* --- Comparing --- */

/* How many of the n values of got differ from torch's beyond t. Prints the
 * first few, naming the fixture, the array and the index (counted from
 * first), and folds the differences into *w. */
static int compare(const char *file, const char *what, size_t first, const float *got,
                   const float *want, size_t n, struct tol t, struct worst *w)
{
	int bad = 0;

	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - (double)want[i]), mag = fabs((double)want[i]);
		if (d > w->abs)
			w->abs = d;
		if (mag >= REL_FLOOR && d / mag > w->rel)
			w->rel = d / mag;
		if (d <= t.atol + t.rtol * mag)
			continue;
		if (bad++ < MAX_SHOWN)
			print_error(
			    "%s: %s[%zu]: mwj %.9g, torch %.9g (|diff| %.3g, allowed %.3g)\n", file,
			    what, first + i, (double)got[i], (double)want[i], d,
			    t.atol + t.rtol * mag);
	}
	if (bad > MAX_SHOWN)
		print_error("%s: %s: %d values differ in all, of %zu\n", file, what, bad, n);
	return bad;
}

/* --- Training as the trainer does --- */

/* What the backward pass's callback needs: each reported slice of the
 * parameters' gradients is kept for the comparison, counted, then
 * consumed by the optimizer (backend_cpu.c's path with one worker). */
struct step_ctx {
	struct model *m;
	struct optimizer *o;
	float *seen;           /* (nparams): the gradients as reported */
	unsigned char *covers; /* (nparams): how many slices held each */
};

static void on_slice(void *ctx, const struct grad_slice *s)
{
	struct step_ctx *c = ctx;

	if (s->off >= c->m->nparams)
		return; /* batch statistics, for model_update_state */
	for (size_t r = 0; r < s->rows; r++) {
		size_t off = s->off + r * s->stride;
		memcpy(c->seen + off, c->m->grads + off, s->cols * sizeof(float));
		for (size_t i = 0; i < s->cols; i++)
			c->covers[off + i]++;
	}
	optimizer_apply_slice(c->o, c->m->params, c->m->grads, s);
}

static struct model *build(struct reference *r, struct loss_spec *spec)
{
	struct keras_model *km = &r->km;
	int spec_logits, output_logits;
	char err[ERR_LEN];
	struct model *m;

	assert_true(km->compile.has_loss && km->compile.has_optimizer);
	model_loss_reads(km, &km->compile.loss, &spec_logits, &output_logits);
	m = model_new(km, r->batch, output_logits, err);
	if (!m) {
		err_prefix(err, "%s", r->file);
		fail_with(err);
	}
	model_init_params(m, km, (uint64_t)r->seed); /* dropout's keys */
	assert_int_equal(m->nparams, r->params.n);
	assert_int_equal(m->nstate, r->state.n);
	assert_int_equal((size_t)r->batch * m->out_len, r->outputs.n);
	memcpy(m->params, r->params.v, m->nparams * sizeof(float));
	if (m->nstate)
		memcpy(m->state, r->state.v, m->nstate * sizeof(float));
	int T = (int)(r->y.n / (size_t)r->batch);
	if (loss_resolve(spec, &km->compile.loss, spec_logits, (int)m->out_len, T, NULL, 0, err) <
	    0) {
		err_prefix(err, "%s", r->file);
		fail_with(err);
	}
	return m;
}

enum { W_OUTPUTS, W_LOSS, W_GRADS, W_STATE, W_PARAMS, W_OPT, NWORST };

static const char *const WORST_NAMES[NWORST] = {"outputs", "loss",       "gradients",
                                                "moving",  "parameters", "optimizer"};

/* Step s: its loss, and for step 0 the outputs; the gradients into
 * c->seen. Returns the mismatches. */
static int train_step(struct reference *r, const struct loss_spec *spec, struct step_ctx *c, int s,
                      struct worst *w)
{
	struct model *m = c->m;
	int B = r->batch, bad = 0;
	double sums[1 + LOSS_MAX_METRICS] = {0};
	struct model_pass pass = {1, (uint64_t)r->pos + (uint64_t)s * (uint64_t)B, NULL};

	model_forward(m, r->x.v, B, &pass);
	if (s == 0)
		bad += compare(r->file, "outputs", 0, model_outputs(m), r->outputs.v, r->outputs.n,
		               TOL_OUTPUTS, &w[W_OUTPUTS]);
	loss_batch(m->dlogits, sums, model_logits(m), model_outputs(m), r->y.v, B, spec,
	           1.0f / (float)B);
	float loss = (float)(sums[0] / B);
	bad +=
	    compare(r->file, "losses", (size_t)s, &loss, &r->losses.v[s], 1, TOL_LOSS, &w[W_LOSS]);
	memset(c->covers, 0, m->nparams);
	optimizer_begin_step(c->o);
	model_backward(m, r->x.v, B, on_slice, c);
	model_update_state(m, 1);
	m->grads_zeroed = 1; /* every slice went through the optimizer */
	for (size_t i = 0; i < m->nparams; i++)
		if (c->covers[i] != 1)
			fail_msg("%s: step %d: parameter %zu reported %d times", r->file, s, i,
			         c->covers[i]);
	return bad;
}

static int check_step(struct reference *r, struct step_ctx *c, int s, struct worst *w)
{
	struct model *m = c->m;
	char what[64];
	int bad = 0;

	if (s == 0)
		bad += compare(r->file, "grads", 0, c->seen, r->grads.v, m->nparams, TOL_GRADS,
		               &w[W_GRADS]);
	snprintf(what, sizeof(what), "state_steps[%d]", s);
	bad += compare(r->file, what, 0, m->state, r->state_steps.v + (size_t)s * m->nstate,
	               m->nstate, TOL_STATE, &w[W_STATE]);
	snprintf(what, sizeof(what), "params_steps[%d]", s);
	bad += compare(r->file, what, 0, m->params, r->params_steps.v + (size_t)s * m->nparams,
	               m->nparams, TOL_PARAMS, &w[W_PARAMS]);
	return bad;
}

static void check_reference(void **state)
{
	const char *file = *state;
	struct reference r;
	struct loss_spec spec;
	struct optimizer o;
	struct worst w[NWORST] = {{0}};
	int bad = 0;

	reference_load(&r, file);
	struct model *m = build(&r, &spec);
	optimizer_init_config(&o, &r.km.compile.optimizer, m->nparams);
	struct step_ctx c = {m, &o, calloc(m->nparams, sizeof(float)), calloc(m->nparams, 1)};
	assert_true(c.seen && c.covers);
	for (int s = 0; s < r.steps; s++) {
		bad += train_step(&r, &spec, &c, s, w);
		bad += check_step(&r, &c, s, w);
	}
	assert_int_equal((size_t)o.nslots * o.n, r.opt_state.n);
	bad += compare(file, "opt_state", 0, o.state, r.opt_state.v, r.opt_state.n, TOL_OPT,
	               &w[W_OPT]);
	for (int k = 0; k < NWORST; k++)
		print_message("    %-10s |d| %.1e  rel %.1e\n", WORST_NAMES[k], w[k].abs, w[k].rel);
	free(c.seen);
	free(c.covers);
	optimizer_release(&o);
	model_free(m);
	reference_release(&r);
	assert_int_equal(bad, 0);
}

/* --- The table --- */

/* A test named as a sentence that checks one fixture. */
#define REFERENCE(sentence, file)                                                                  \
	{                                                                                          \
		.name = #sentence, .test_func = check_reference, .initial_state = (void *)(file)   \
	}

static const struct CMUnitTest REFERENCES[] = {
    /* (a) every layer, activation and loss */
    REFERENCE(test_a_cnn_of_every_layer_trains_as_torch_does, "cnn_every_layer"),
    REFERENCE(test_strided_convolution_dense_per_pixel_and_global_pooling_train_as_torch_does,
              "cnn_global_pool_sigmoid"),
    REFERENCE(test_the_seed_models_direct_convolution_and_pooling_train_as_torch_does,
              "cnn_seed_shape"),
    REFERENCE(test_dense_layers_and_batchnorm_without_scale_under_mse_train_as_torch_does,
              "dense_batchnorm_mse"),
    REFERENCE(test_dense_layers_and_batchnorm_without_center_under_mae_train_as_torch_does,
              "dense_batchnorm_mae"),
    REFERENCE(test_dense_on_a_rank_2_input_under_categorical_logits_trains_as_torch_does,
              "dense_rank2_categorical_logits"),
    REFERENCE(test_an_activation_layers_softmax_gives_categorical_crossentropy_its_logits,
              "softmax_activation_categorical"),
    REFERENCE(test_a_softmax_output_gives_sparse_crossentropy_its_logits_despite_from_logits,
              "softmax_logits_flag_sparse"),
    REFERENCE(test_categorical_crossentropy_after_a_reshape_normalises_and_clips_probabilities,
              "categorical_from_probabilities"),
    REFERENCE(test_sparse_crossentropy_after_a_reshape_clips_probabilities,
              "sparse_from_probabilities"),
    REFERENCE(test_binary_crossentropy_after_a_reshape_clips_probabilities,
              "binary_from_probabilities"),
    REFERENCE(test_a_sigmoid_output_gives_categorical_crossentropy_its_logits,
              "sigmoid_output_categorical"),
    REFERENCE(test_a_sigmoid_output_gives_sparse_crossentropy_its_logits, "sigmoid_output_sparse"),
    REFERENCE(test_a_softmax_output_gives_binary_crossentropy_its_logits, "softmax_output_binary"),
    /* (b) each optimizer and its options, three steps */
    REFERENCE(test_sgd_follows_torch_for_three_steps, "optimizer_sgd"),
    REFERENCE(test_sgd_with_momentum_follows_torch_for_three_steps, "optimizer_sgd_momentum"),
    REFERENCE(test_sgd_with_nesterov_momentum_follows_torch_for_three_steps,
              "optimizer_sgd_nesterov"),
    REFERENCE(test_sgd_with_weight_decay_follows_torch_for_three_steps,
              "optimizer_sgd_weight_decay"),
    REFERENCE(test_adam_follows_torch_for_three_steps, "optimizer_adam"),
    REFERENCE(test_adamw_follows_torch_for_three_steps, "optimizer_adamw"),
    REFERENCE(test_adagrad_follows_torch_for_three_steps, "optimizer_adagrad"),
    REFERENCE(test_rmsprop_follows_torch_for_three_steps, "optimizer_rmsprop"),
    REFERENCE(test_rmsprop_with_momentum_follows_torch_for_three_steps,
              "optimizer_rmsprop_momentum"),
    REFERENCE(test_centered_rmsprop_with_momentum_and_weight_decay_follows_torch,
              "optimizer_rmsprop_centered"),
};

#define NREFERENCES (sizeof(REFERENCES) / sizeof(REFERENCES[0]))

/* A fixture the script writes but the table forgot would check nothing. */
static void test_every_fixture_in_the_folder_is_checked(void **state)
{
	DIR *d = opendir(data_path(""));
	const struct dirent *e;
	size_t found = 0;
	(void)state;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name), i;
		if (len < 4 || strcmp(e->d_name + len - 4, ".npz") != 0)
			continue;
		for (i = 0; i < NREFERENCES; i++)
			if (strncmp(e->d_name, REFERENCES[i].initial_state, len - 4) == 0 &&
			    strlen(REFERENCES[i].initial_state) == len - 4)
				break;
		if (i == NREFERENCES)
			fail_msg("%s is in no test", e->d_name);
		found++;
	}
	closedir(d);
	assert_int_equal(found, NREFERENCES);
}

int main(void)
{
	struct CMUnitTest tests[NREFERENCES + 1];

	memcpy(tests, REFERENCES, sizeof(REFERENCES));
	tests[NREFERENCES] =
	    (struct CMUnitTest)cmocka_unit_test(test_every_fixture_in_the_folder_is_checked);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
