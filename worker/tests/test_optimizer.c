/* test_optimizer.c - every optimizer kind and option against Keras 3's
 * formulas, computed here in double, and the promises the trainer relies
 * on: any slicing, and any number of threads, gives the same bits; every
 * update leaves the gradients it consumed zero; the state has the slots,
 * in the order, that backups carry.
 *
 * Tolerance. The optimizer computes in float32, the reference in double
 * with the same float gradients: each step of a rule rounds about a dozen
 * operations at 2^-24 relative, and the float hyper-parameters differ from
 * the double ones by as much. Those errors add up like a random walk over
 * the STEPS steps, about sqrt(50) * 2^-24 = 4e-7 of the largest value that
 * went in (the largest seen here: 1.6e-7). The checks allow 1e-6 of the
 * largest magnitude of each compared vector (the weights, or one state
 * slot), far below what a misplaced term gives: the cases' parameters
 * (epsilon 1e-3 against gradients of 0.01 to 0.7, weight decays of 0.1 or
 * more, gradients that change sign between steps) make each term count,
 * so that an epsilon moved out of the square root, a centered RMSprop
 * without its a^2 or Nesterov ignored is off by 7e-4 or more, and the test
 * checks that the weights moved at least 100 times the tolerance, so that
 * a rule that does nothing cannot pass either. Adam's bias corrections take
 * float32 betas, as Keras casts them before the powers: 1 - 0.999f differs
 * from 0.001 by 1.3e-5 of it, so the reference does the same.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "optimizer.h"
#include "parallel.h"

#define N     37 /* odd, so that vector loops have a remainder */
#define STEPS 4
#define TOL   1e-6

/* The gradient of step t is g0 times SCALE[t]: powers of two and 0.75,
 * so that the products are exact in float and the reference is given the
 * same gradients. The sign changes make the state matter. */
static const double SCALE[STEPS] = {1.0, -0.5, 2.0, 0.75};

static void fill(float *w, float *g, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		w[i] = 0.5f - 0.03f * (float)(i % 41);
		g[i] = (i % 3 ? 1.0f : -2.0f) * 0.01f * (float)(i % 37 + 1);
	}
}

static void expect_zero(const float *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_true(g[i] == 0.0f);
}

/* --- The cases: every kind and option --- */

struct test_case {
	const char *name;
	struct optimizer_config c;
};

#define MAX_CASES 16

static struct optimizer_config *add(struct test_case *t, int *k, const char *name,
                                    enum optimizer_kind kind)
{
	struct test_case *c = &t[(*k)++];

	c->name = name;
	optimizer_config_defaults(&c->c, kind);
	return &c->c;
}

/* Keras' defaults, each option on its own and together, and a weight
 * decay on a kind other than AdamW (Keras takes it on every optimizer). */
static int make_cases(struct test_case *t)
{
	struct optimizer_config *c;
	int k = 0;

	c = add(t, &k, "sgd", OPT_SGD);
	c->learning_rate = 0.1;
	c = add(t, &k, "sgd with momentum", OPT_SGD);
	c->momentum = 0.9;
	c = add(t, &k, "sgd with nesterov momentum", OPT_SGD);
	c->momentum = 0.9;
	c->nesterov = 1;
	c = add(t, &k, "sgd with nesterov but no momentum", OPT_SGD);
	c->nesterov = 1;
	c = add(t, &k, "sgd with momentum and weight decay", OPT_SGD);
	c->momentum = 0.5;
	c->weight_decay = 0.2;
	c->learning_rate = 0.1;
	c = add(t, &k, "adam", OPT_ADAM);
	c->learning_rate = 0.01;
	c->epsilon = 1e-3;
	c = add(t, &k, "adam with other betas", OPT_ADAM);
	c->beta_1 = 0.5;
	c->beta_2 = 0.75;
	c = add(t, &k, "adamw with keras' decay", OPT_ADAMW);
	c->learning_rate = 0.1;
	c = add(t, &k, "adamw with a strong decay", OPT_ADAMW);
	c->learning_rate = 0.1;
	c->weight_decay = 0.5;
	c->epsilon = 1e-3;
	c = add(t, &k, "adagrad", OPT_ADAGRAD);
	c->learning_rate = 0.01;
	c = add(t, &k, "adagrad from zero with a large epsilon", OPT_ADAGRAD);
	c->initial_accumulator_value = 0.0;
	c->epsilon = 1e-3;
	add(t, &k, "rmsprop", OPT_RMSPROP);
	c = add(t, &k, "rmsprop with momentum", OPT_RMSPROP);
	c->momentum = 0.5;
	c->epsilon = 1e-3;
	c = add(t, &k, "rmsprop centered", OPT_RMSPROP);
	c->centered = 1;
	c->rho = 0.8;
	c = add(t, &k, "rmsprop centered with momentum", OPT_RMSPROP);
	c->centered = 1;
	c->momentum = 0.9;
	c->epsilon = 1e-3;
	assert_true(k <= MAX_CASES);
	return k;
}

/* --- Keras' formulas in double --- */

struct reference {
	int nslots;
	double w[N];
	double slot[OPTIMIZER_MAX_SLOTS][N]; /* Keras' variables, in its order */
};

/* keras/src/optimizers/<kind>.py, update_step, and base_optimizer.py's
 * _apply_weight_decay before it, written out for one parameter. */
static void keras_reference(struct reference *r, const struct optimizer_config *c, const float *w0,
                            const float *g0, int steps)
{
	const double lr = c->learning_rate, wd = c->weight_decay, eps = c->epsilon;

	for (int i = 0; i < N; i++) {
		double w = w0[i], m = 0, v = 0, mom = 0, avg = 0;
		double acc = c->initial_accumulator_value;
		for (int t = 1; t <= steps; t++) {
			double g = g0[i] * SCALE[t - 1];
			if (wd != 0)
				w = w - w * wd * lr;
			if (c->kind == OPT_SGD && c->momentum != 0) {
				m = m * c->momentum - g * lr;
				w += c->nesterov ? m * c->momentum - g * lr : m;
			} else if (c->kind == OPT_SGD) {
				w -= g * lr;
			} else if (c->kind == OPT_ADAM || c->kind == OPT_ADAMW) {
				/* ops.power(ops.cast(self.beta_1, dtype), t) */
				double b1p = pow((float)c->beta_1, t);
				double b2p = pow((float)c->beta_2, t);
				double alpha = lr * sqrt(1 - b2p) / (1 - b1p);
				m += (g - m) * (1 - c->beta_1);
				v += (g * g - v) * (1 - c->beta_2);
				w -= m * alpha / (sqrt(v) + eps);
			} else if (c->kind == OPT_ADAGRAD) {
				acc += g * g;
				w -= lr * g / sqrt(acc + eps);
			} else {
				v = c->rho * v + (1 - c->rho) * g * g;
				double den = v + eps;
				if (c->centered) {
					avg = c->rho * avg + (1 - c->rho) * g;
					den = v - avg * avg + eps;
				}
				double inc = lr * g / sqrt(den);
				mom = c->momentum * mom + inc;
				w -= c->momentum > 0 ? mom : inc;
			}
		}
		r->w[i] = w;
		int k = 0;
		if (c->kind == OPT_SGD && c->momentum != 0)
			r->slot[k++][i] = m;
		if (c->kind == OPT_ADAM || c->kind == OPT_ADAMW) {
			r->slot[k++][i] = m;
			r->slot[k++][i] = v;
		}
		if (c->kind == OPT_ADAGRAD)
			r->slot[k++][i] = acc;
		if (c->kind == OPT_RMSPROP) {
			r->slot[k++][i] = v;
			if (c->momentum > 0)
				r->slot[k++][i] = mom;
			if (c->centered)
				r->slot[k++][i] = avg;
		}
		r->nslots = k;
	}
}

/* Max |got - want| <= TOL * max |want|. */
static void expect_close(const char *what, const float *got, const double *want, size_t n)
{
	double scale = 0, diff = 0;

	for (size_t i = 0; i < n; i++) {
		scale = fmax(scale, fabs(want[i]));
		diff = fmax(diff, fabs((double)got[i] - want[i]));
	}
	if (!(diff <= TOL * scale))
		fail_msg("%s: max |float - double| %.3g of max %.3g", what, diff, scale);
}

/* Takes steps updates of c from fill's weights with SCALE'd gradients,
 * each of which must leave the gradients zero. o is left initialised. */
static void run_steps(struct optimizer *o, const struct optimizer_config *c, float *w,
                      const float *g0, int steps)
{
	float g[N];

	optimizer_init_config(o, c, N);
	for (int t = 0; t < steps; t++) {
		for (int i = 0; i < N; i++)
			g[i] = g0[i] * (float)SCALE[t];
		optimizer_step(o, w, g);
		expect_zero(g, N);
	}
}

static void test_every_kind_and_option_follows_keras_and_consumes_the_gradients(void **state)
{
	struct test_case t[MAX_CASES];
	int ncases = make_cases(t);
	(void)state;

	for (int k = 0; k < ncases; k++) {
		const struct optimizer_config *c = &t[k].c;
		struct optimizer o;
		struct reference r;
		float w0[N], g0[N], w[N];
		char what[128];
		double moved = 0, scale = 0;

		fill(w0, g0, N);
		memcpy(w, w0, sizeof(w));
		run_steps(&o, c, w, g0, STEPS);
		keras_reference(&r, c, w0, g0, STEPS);
		snprintf(what, sizeof(what), "%s: weights", t[k].name);
		expect_close(what, w, r.w, N);
		assert_int_equal(o.nslots, r.nslots);
		for (int s = 0; s < r.nslots; s++) {
			snprintf(what, sizeof(what), "%s: state slot %d", t[k].name, s);
			expect_close(what, o.state + (size_t)s * N, r.slot[s], N);
		}
		/* Moved far beyond the tolerance: the comparison means something. */
		for (int i = 0; i < N; i++) {
			moved = fmax(moved, fabs((double)w[i] - w0[i]));
			scale = fmax(scale, fabs(r.w[i]));
		}
		if (!(moved > 100 * TOL * scale))
			fail_msg("%s: the weights moved only %.3g", t[k].name, moved);
		assert_int_equal(o.iterations, STEPS);
		optimizer_release(&o);
	}
}

/* --- Slicing and threads --- */

/* The trainer updates slice by slice during the backward pass; the result
 * is bitwise the same as one step over the whole buffer, for every rule,
 * weights and state alike. */
static void test_slices_update_exactly_as_one_step_for_every_kind(void **state)
{
	struct test_case t[MAX_CASES];
	int ncases = make_cases(t);
	/* Together they cover 0..36 once: strided blocks as a dense layer
	 * reports them, then the rest. */
	const struct grad_slice parts[] = {
	    {1, 3, 5, 7},    /* 1-5, 8-12, 15-19 */
	    {0, 1, 1, 1},    /* 0 */
	    {6, 2, 2, 7},    /* 6-7, 13-14 */
	    {20, 1, 17, 17}, /* 20-36 */
	};
	(void)state;

	for (int k = 0; k < ncases; k++) {
		struct optimizer a, b;
		float wa[N], ga[N], wb[N], gb[N], w0[N], g0[N];
		fill(w0, g0, N);
		memcpy(wa, w0, sizeof(wa));
		memcpy(wb, w0, sizeof(wb));
		optimizer_init_config(&a, &t[k].c, N);
		optimizer_init_config(&b, &t[k].c, N);
		for (int s = 0; s < STEPS; s++) {
			for (int i = 0; i < N; i++)
				ga[i] = gb[i] = g0[i] * (float)SCALE[s];
			optimizer_step(&a, wa, ga);
			optimizer_begin_step(&b);
			for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
				optimizer_apply_slice(&b, wb, gb, &parts[i]);
			expect_zero(gb, N);
		}
		assert_memory_equal(wa, wb, sizeof(wa));
		assert_int_equal(a.nslots, b.nslots);
		assert_memory_equal(a.state, b.state, sizeof(float) * N * (size_t)a.nslots);
		optimizer_release(&a);
		optimizer_release(&b);
	}
}

/* Over enough parameters, optimizer_step shares the buffer among the
 * compute threads (at 16-float boundaries); the bits are those of one
 * thread over the whole buffer. */
static void test_threads_update_exactly_as_one_thread_for_every_kind(void **state)
{
	struct test_case t[MAX_CASES];
	int ncases = make_cases(t);
	const size_t n = 2 * PARALLEL_MIN_ELEMS + 13;
	float *wa = malloc(n * sizeof(float)), *ga = malloc(n * sizeof(float));
	float *wb = malloc(n * sizeof(float)), *gb = malloc(n * sizeof(float));
	char err[ERR_LEN];
	(void)state;

	assert_true(wa && ga && wb && gb);
	assert_int_equal(parallel_init(4, err), 0);
	for (int k = 0; k < ncases; k++) {
		struct optimizer a, b;
		fill(wa, ga, n);
		fill(wb, gb, n);
		optimizer_init_config(&a, &t[k].c, n);
		optimizer_init_config(&b, &t[k].c, n);
		for (int s = 0; s < 2; s++) {
			for (size_t i = 0; i < n; i++)
				ga[i] = gb[i] =
				    (i % 3 ? 1.0f : -2.0f) * 0.01f * (float)(i % 37 + 1);
			optimizer_step(&a, wa, ga);
			optimizer_begin_step(&b);
			optimizer_apply(&b, wb, gb, 0, n);
			expect_zero(ga, n);
		}
		assert_memory_equal(wa, wb, n * sizeof(float));
		assert_memory_equal(a.state, b.state, sizeof(float) * n * (size_t)a.nslots);
		optimizer_release(&a);
		optimizer_release(&b);
	}
	parallel_shutdown();
	free(wa), free(ga), free(wb), free(gb);
}

/* --- State, defaults, names --- */

/* Keras' optimizer variables per model variable: SGD's momentum only with
 * momentum; Adam's two moments; Adagrad's accumulator; RMSprop's velocity,
 * momentum and average gradient as configured. */
static void test_state_has_one_slot_per_keras_variable(void **state)
{
	static const struct {
		enum optimizer_kind kind;
		double momentum;
		int centered, slots;
	} want[] = {
	    {OPT_SGD, 0.0, 0, 0},     {OPT_SGD, 0.9, 0, 1},     {OPT_ADAM, 0.0, 0, 2},
	    {OPT_ADAMW, 0.0, 0, 2},   {OPT_ADAGRAD, 0.0, 0, 1}, {OPT_RMSPROP, 0.0, 0, 1},
	    {OPT_RMSPROP, 0.5, 0, 2}, {OPT_RMSPROP, 0.0, 1, 2}, {OPT_RMSPROP, 0.5, 1, 3},
	};
	(void)state;

	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		struct optimizer_config c;
		struct optimizer o;
		optimizer_config_defaults(&c, want[k].kind);
		c.momentum = want[k].momentum;
		c.centered = want[k].centered;
		assert_int_equal(optimizer_config_slots(&c), want[k].slots);
		optimizer_init_config(&o, &c, N);
		assert_int_equal(o.nslots, want[k].slots);
		assert_true(o.nslots <= OPTIMIZER_MAX_SLOTS);
		assert_true((o.state != NULL) == (want[k].slots > 0));
		optimizer_release(&o);
	}
}

/* Keras builds the accumulators with Constant(initial_accumulator_value),
 * not zeros; every other slot starts at zero. */
static void test_adagrad_accumulator_starts_at_its_initial_value(void **state)
{
	struct optimizer_config c;
	struct optimizer o;
	(void)state;

	optimizer_config_defaults(&c, OPT_ADAGRAD);
	optimizer_init_config(&o, &c, N);
	for (int i = 0; i < N; i++)
		assert_true(o.state[i] == 0.1f);
	optimizer_release(&o);
	c.initial_accumulator_value = 0.75;
	optimizer_init_config(&o, &c, N);
	for (int i = 0; i < N; i++)
		assert_true(o.state[i] == 0.75f);
	optimizer_release(&o);
	optimizer_config_defaults(&c, OPT_RMSPROP);
	c.momentum = 0.5;
	c.centered = 1;
	optimizer_init_config(&o, &c, N);
	for (int i = 0; i < 3 * N; i++)
		assert_true(o.state[i] == 0.0f);
	optimizer_release(&o);
}

/* Keras decays every weight by lr * wd before the rule, from the weight
 * before the step: with zero gradients Adam moves nothing, so one step is
 * exactly w - w * wd * lr in float; with gradients, the result is the
 * decay-first formula and not the decay-after one. */
static void test_adamw_decays_the_weights_before_the_step(void **state)
{
	struct optimizer_config c;
	struct optimizer o;
	float w0[N], g0[N], w[N], g[N];
	(void)state;

	optimizer_config_defaults(&c, OPT_ADAMW);
	c.learning_rate = 0.1;
	c.weight_decay = 0.5;
	fill(w0, g0, N);
	memcpy(w, w0, sizeof(w));
	memset(g, 0, sizeof(g));
	optimizer_init_config(&o, &c, N);
	optimizer_step(&o, w, g);
	for (int i = 0; i < N; i++)
		assert_true(w[i] == w0[i] - w0[i] * 0.5f * 0.1f);
	optimizer_release(&o);

	memcpy(w, w0, sizeof(w));
	memcpy(g, g0, sizeof(g));
	optimizer_init_config(&o, &c, N);
	optimizer_step(&o, w, g);
	for (int i = 0; i < N; i++) {
		/* Keras' first Adam step from zero moments. */
		double gi = g0[i], m = 0.1 * gi, v = 0.001 * gi * gi;
		double alpha = 0.1 * sqrt(1 - (double)0.999f) / (1 - (double)0.9f);
		double step = m * alpha / (sqrt(v) + 1e-7);
		double first = w0[i] - w0[i] * 0.5 * 0.1 - step;
		double after = (w0[i] - step) * (1 - 0.5 * 0.1);
		assert_true(fabs(w[i] - first) <= TOL);
		assert_true(fabs(w[i] - after) > 100 * TOL);
	}
	optimizer_release(&o);
}

/* The constructors' defaults of Keras 3 (keras/src/optimizers/). */
static void test_defaults_are_keras_3s(void **state)
{
	static const struct {
		enum optimizer_kind kind;
		double lr, momentum, b1, b2, eps, wd, acc, rho;
	} want[] = {
	    {OPT_SGD, 0.01, 0, 0, 0, 0, 0, 0, 0},
	    {OPT_ADAM, 0.001, 0, 0.9, 0.999, 1e-7, 0, 0, 0},
	    {OPT_ADAMW, 0.001, 0, 0.9, 0.999, 1e-7, 0.004, 0, 0},
	    {OPT_ADAGRAD, 0.001, 0, 0, 0, 1e-7, 0, 0.1, 0},
	    {OPT_RMSPROP, 0.001, 0, 0, 0, 1e-7, 0, 0, 0.9},
	};
	char err[ERR_LEN];
	(void)state;

	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		struct optimizer_config c;
		memset(&c, 0xa5, sizeof(c));
		optimizer_config_defaults(&c, want[k].kind);
		assert_int_equal(c.kind, want[k].kind);
		assert_true(c.learning_rate == want[k].lr);
		assert_true(c.momentum == want[k].momentum);
		assert_true(c.beta_1 == want[k].b1 && c.beta_2 == want[k].b2);
		assert_true(c.epsilon == want[k].eps);
		assert_true(c.weight_decay == want[k].wd);
		assert_true(c.initial_accumulator_value == want[k].acc);
		assert_true(c.rho == want[k].rho);
		assert_int_equal(c.nesterov, 0);
		assert_int_equal(c.centered, 0);
		assert_int_equal(optimizer_config_check(&c, err), 0);
	}
}

/* optimizer_init, which most callers use, is Keras' defaults with the
 * caller's learning rate and, where the kind has one, momentum. */
static void test_optimizer_init_is_the_defaults_with_lr_and_momentum(void **state)
{
	struct optimizer o;
	(void)state;

	optimizer_init(&o, OPT_SGD, 0.1f, 0.9f, N);
	assert_true(o.lr == 0.1f && o.momentum == 0.9f && o.weight_decay == 0.0f);
	assert_int_equal(o.nslots, 1);
	optimizer_release(&o);
	optimizer_init(&o, OPT_ADAM, 0.01f, 0.9f, N);
	assert_true(o.lr == 0.01f && o.momentum == 0.0f);
	assert_true(o.beta1 == 0.9f && o.beta2 == 0.999f && o.eps == (float)1e-7);
	assert_true(o.one_minus_beta1 == 0.1f && o.one_minus_beta2 == (float)(1.0 - 0.999));
	assert_int_equal(o.nslots, 2);
	optimizer_release(&o);
	optimizer_init(&o, OPT_ADAMW, 0.01f, 0.0f, N);
	assert_true(o.weight_decay == 0.004f);
	optimizer_release(&o);
	optimizer_init(&o, OPT_RMSPROP, 0.01f, 0.5f, N);
	assert_true(o.momentum == 0.5f && o.rho == 0.9f && o.one_minus_rho == 0.1f);
	assert_int_equal(o.nslots, 2);
	optimizer_release(&o);
}

static void test_names_parse_back_to_their_kind(void **state)
{
	const enum optimizer_kind kinds[] = {OPT_SGD, OPT_ADAM, OPT_ADAMW, OPT_ADAGRAD,
	                                     OPT_RMSPROP};
	const char *names[] = {"sgd", "adam", "adamw", "adagrad", "rmsprop"};
	enum optimizer_kind got;
	(void)state;

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		assert_string_equal(optimizer_name(kinds[k]), names[k]);
		assert_int_equal(optimizer_parse(names[k], &got), 0);
		assert_int_equal(got, kinds[k]);
	}
	assert_int_equal(optimizer_parse("nadam", &got), -1);
	assert_int_equal(optimizer_parse("", &got), -1);
	assert_int_equal(optimizer_parse("adam ", &got), -1);
}

/* What a flag or a model file may say that the rules cannot take. */
static void test_config_check_refuses_values_keras_or_the_rule_cannot_take(void **state)
{
	static const struct {
		enum optimizer_kind kind;
		const char *field;
		double v;
	} bad[] = {
	    {OPT_SGD, "learning_rate", -0.1},
	    {OPT_SGD, "learning_rate", NAN},
	    {OPT_SGD, "momentum", 1.5},
	    {OPT_SGD, "momentum", -0.1},
	    {OPT_ADAM, "beta_1", 1.0},
	    {OPT_ADAMW, "beta_2", -0.5},
	    {OPT_ADAMW, "weight_decay", -0.004},
	    {OPT_ADAM, "epsilon", INFINITY},
	    {OPT_ADAGRAD, "initial_accumulator_value", -0.1},
	    {OPT_RMSPROP, "rho", 1.0},
	    {OPT_RMSPROP, "momentum", 2.0},
	};
	char err[ERR_LEN];
	(void)state;

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct optimizer_config c;
		optimizer_config_defaults(&c, bad[k].kind);
		if (strcmp(bad[k].field, "learning_rate") == 0)
			c.learning_rate = bad[k].v;
		else if (strcmp(bad[k].field, "momentum") == 0)
			c.momentum = bad[k].v;
		else if (strcmp(bad[k].field, "beta_1") == 0)
			c.beta_1 = bad[k].v;
		else if (strcmp(bad[k].field, "beta_2") == 0)
			c.beta_2 = bad[k].v;
		else if (strcmp(bad[k].field, "weight_decay") == 0)
			c.weight_decay = bad[k].v;
		else if (strcmp(bad[k].field, "epsilon") == 0)
			c.epsilon = bad[k].v;
		else if (strcmp(bad[k].field, "initial_accumulator_value") == 0)
			c.initial_accumulator_value = bad[k].v;
		else
			c.rho = bad[k].v;
		err[0] = '\0';
		assert_int_equal(optimizer_config_check(&c, err), -1);
		if (!strstr(err, bad[k].field))
			fail_msg("%s = %g: '%s' does not name the field", bad[k].field, bad[k].v,
			         err);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_kind_and_option_follows_keras_and_consumes_the_gradients),
	    cmocka_unit_test(test_slices_update_exactly_as_one_step_for_every_kind),
	    cmocka_unit_test(test_threads_update_exactly_as_one_thread_for_every_kind),
	    cmocka_unit_test(test_state_has_one_slot_per_keras_variable),
	    cmocka_unit_test(test_adagrad_accumulator_starts_at_its_initial_value),
	    cmocka_unit_test(test_adamw_decays_the_weights_before_the_step),
	    cmocka_unit_test(test_defaults_are_keras_3s),
	    cmocka_unit_test(test_optimizer_init_is_the_defaults_with_lr_and_momentum),
	    cmocka_unit_test(test_names_parse_back_to_their_kind),
	    cmocka_unit_test(test_config_check_refuses_values_keras_or_the_rule_cannot_take),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
