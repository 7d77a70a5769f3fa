/* test_reducer.c - the bucketed all-reduce behind the backward pass, with a
 * stand-in communicator of two ranks holding the same gradients: every
 * gradient must be reduced once, in bucket order, however many compute
 * threads report the slices; and alone, every slice is updated once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "err.h"
#include "loss.h"
#include "model.h"
#include "parallel.h"
#include "reducer.h"
#include "rng.h"
#include "testutil.h"

enum { B = 8, SIDE = 28, CLASSES = 10 };

/* What the stand-in saw: per element, how often it was reduced and
 * updated, and the order of the buckets. */
struct seen {
	struct model *m;
	unsigned char *reduced, *applied;
	size_t first_bucket_hi; /* one past the highest element of the first bucket */
	int calls, f64_calls;
	pthread_mutex_t mu;
};

static struct seen seen;

static void for_each(const struct grad_slice *p, void (*fn)(size_t i, float *g), float *base)
{
	for (size_t r = 0; r < p->rows; r++)
		for (size_t c = 0; c < p->cols; c++) {
			size_t i = p->off + r * p->stride + c;
			fn(i, &base[i]);
		}
}

static void mark_reduced(size_t i, float *g)
{
	seen.reduced[i]++;
	*g *= 2.0f; /* two ranks with equal gradients */
	if (seen.calls == 1 && i + 1 > seen.first_bucket_hi)
		seen.first_bucket_hi = i + 1;
}

static int fake_allreduce(struct comm *c, float *base, const struct grad_slice *pieces, int n,
                          char *err)
{
	(void)c, (void)err;
	seen.calls++;
	for (int k = 0; k < n; k++)
		for_each(&pieces[k], mark_reduced, base);
	return 0;
}

static int fake_allreduce_f64(struct comm *c, double *v, size_t n, char *err)
{
	(void)c, (void)err;
	seen.f64_calls++;
	for (size_t i = 0; i < n; i++)
		v[i] *= 2;
	return 0;
}

static int fake_broadcast(struct comm *c, void *buf, size_t bytes, int root, char *err)
{
	(void)c, (void)buf, (void)bytes, (void)root, (void)err;
	return 0;
}

static void fake_release(struct comm *c)
{
	(void)c;
}

/* Never left or rejoined. */
static const struct comm_ops FAKE_OPS = {.name = "fake",
                                         .allreduce = fake_allreduce,
                                         .allreduce_f64 = fake_allreduce_f64,
                                         .broadcast = fake_broadcast,
                                         .release = fake_release};

static void mark_applied(size_t i, float *g)
{
	(void)g;
	seen.applied[i]++;
}

/* The update stand-in: may run on compute threads for a world of one. */
static void apply(void *ctx, const struct grad_slice *s)
{
	(void)ctx;
	pthread_mutex_lock(&seen.mu);
	for_each(s, mark_applied, seen.m->grads);
	pthread_mutex_unlock(&seen.mu);
}

static struct model *make_model(const char *name, float *x, uint8_t *y)
{
	struct model *m = testutil_model(name, SIDE, CLASSES, B, 3);
	struct rng g;

	assert_non_null(m);
	rng_init(&g, 5, 0);
	for (size_t i = 0; i < (size_t)B * SIDE * SIDE; i++)
		x[i] = rng_uniform(&g, 0.0f, 1.0f);
	for (int i = 0; i < B; i++)
		y[i] = (uint8_t)(i % CLASSES);
	model_forward(m, x, B, NULL);
	loss_softmax_xent(m->dlogits, model_logits(m), y, B, CLASSES, 1.0f / B);
	return m;
}

static void check_every_gradient_reduced_or_applied_once(const char *name, int world, int threads)
{
	static float x[B * SIDE * SIDE];
	static uint8_t y[B];
	char err[ERR_LEN];
	struct comm c = {&FAKE_OPS, world, 0, NULL, NULL};
	double small[3] = {1, 2, 3};

	if (world == 1)
		comm_init_local(&c);
	assert_int_equal(parallel_init(threads, err), 0);
	struct model *m = make_model(name, x, y);
	float *plain = malloc(m->nparams * sizeof(float));
	model_backward(m, x, B, NULL, NULL);
	memcpy(plain, m->grads, m->nparams * sizeof(float));

	memset(&seen, 0, sizeof(seen));
	pthread_mutex_init(&seen.mu, NULL);
	seen.m = m;
	seen.reduced = calloc(m->nparams, 1);
	seen.applied = calloc(m->nparams, 1);
	struct reducer *r = reducer_new(&c, m, 64 * 1024, apply, NULL);
	assert_true(reducer_buckets(r) > 2);
	for (int step = 0; step < 2; step++) {
		memset(seen.reduced, 0, m->nparams);
		memset(seen.applied, 0, m->nparams);
		seen.calls = 0;
		seen.first_bucket_hi = 0;
		reducer_begin(r, small, 3);
		model_backward(m, x, B, reducer_grad_ready, r);
		assert_int_equal(reducer_finish(r, err), 0);
		for (size_t i = 0; i < m->nparams; i++) {
			if (seen.applied[i] != (world == 1) || seen.reduced[i] != (world > 1))
				fail_msg(
				    "%s world %d threads %d step %d: parameter %zu reduced %d, "
				    "applied %d times",
				    name, world, threads, step, i, seen.reduced[i],
				    seen.applied[i]);
			float want = world > 1 ? 2.0f * plain[i] : plain[i];
			assert_memory_equal(&m->grads[i], &want, sizeof(float));
		}
		if (world > 1) {
			/* Last layer first: the first bucket ends at the last parameter. */
			assert_int_equal(seen.first_bucket_hi, m->nparams);
			assert_int_equal(seen.calls, reducer_buckets(r));
		}
	}
	assert_int_equal(seen.f64_calls, world > 1 ? 2 : 0);
	assert_true(small[0] == (world > 1 ? 4.0 : 1.0));
	reducer_free(r);
	free(seen.reduced);
	free(seen.applied);
	pthread_mutex_destroy(&seen.mu);
	free(plain);
	model_free(m);
	parallel_shutdown();
}

static void test_every_gradient_is_reduced_once_in_bucket_order(void **state)
{
	(void)state;
	check_every_gradient_reduced_or_applied_once("cnn", 2, 1);
	check_every_gradient_reduced_or_applied_once("cnn-pool", 2, 1);
}

static void test_slices_from_several_compute_threads_fill_buckets_exactly(void **state)
{
	(void)state;
	check_every_gradient_reduced_or_applied_once("cnn", 2, 2);
	check_every_gradient_reduced_or_applied_once("cnn", 2, 3);
	check_every_gradient_reduced_or_applied_once("cnn-pool", 2, 2);
}

static void test_a_world_of_one_updates_each_slice_directly(void **state)
{
	(void)state;
	check_every_gradient_reduced_or_applied_once("cnn", 1, 1);
	check_every_gradient_reduced_or_applied_once("cnn", 1, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_gradient_is_reduced_once_in_bucket_order),
	    cmocka_unit_test(test_slices_from_several_compute_threads_fill_buckets_exactly),
	    cmocka_unit_test(test_a_world_of_one_updates_each_slice_directly),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
