/* test_timers.c - the timer heap on its own thread: timers fire once each,
 * in due order; re-setting keeps the earlier time; cancel and stop keep a
 * timer from firing. Waits are on conditions with bounded time-outs;
 * order is asserted against a marker timer due after the one in question,
 * never against a fixed sleep. While a test sets its timers up, a gate
 * timer holds the timers' thread in its callback, so that a slow machine
 * (or a sanitizer) cannot let a timer fire before the rest are set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "timers.h"

#define KEY_LEN 32
#define HOUR_MS (3600LL * 1000)

/* What the callback saw, in order. */
struct fired {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t n, cap;
	char (*keys)[KEY_LEN];
	long long *at;              /* timers_now_ms when fired */
	struct timers *t;           /* for test_a_callback_may_set_a_timer */
	int gate_closed, gate_held; /* see hold_gate */
};

static void fired_init(struct fired *f, size_t cap)
{
	pthread_condattr_t attr;

	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&f->cond, &attr);
	pthread_condattr_destroy(&attr);
	f->cap = cap;
	f->keys = calloc(cap, sizeof(*f->keys));
	f->at = calloc(cap, sizeof(*f->at));
	assert_non_null(f->keys);
	assert_non_null(f->at);
}

static void fired_release(struct fired *f)
{
	free(f->keys);
	free(f->at);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
}

static void record(void *ctx, const char *key)
{
	struct fired *f = ctx;

	pthread_mutex_lock(&f->lock);
	if (strcmp(key, "gate") == 0) {
		f->gate_held = 1;
		pthread_cond_broadcast(&f->cond);
		while (f->gate_closed)
			pthread_cond_wait(&f->cond, &f->lock);
		pthread_mutex_unlock(&f->lock);
		return;
	}
	if (f->n < f->cap) {
		snprintf(f->keys[f->n], KEY_LEN, "%s", key);
		f->at[f->n] = timers_now_ms();
	}
	f->n++; /* beyond cap too: a test sees the overflow */
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

/* Waits up to timeout_ms for n timers to have fired; returns how many did. */
static size_t wait_fired(struct fired *f, size_t n, long long timeout_ms)
{
	long long deadline = timers_now_ms() + timeout_ms;
	struct timespec ts = {.tv_sec = deadline / 1000, .tv_nsec = deadline % 1000 * 1000000};
	size_t got;

	pthread_mutex_lock(&f->lock);
	while (f->n < n && timers_now_ms() < deadline)
		pthread_cond_timedwait(&f->cond, &f->lock, &ts);
	got = f->n;
	pthread_mutex_unlock(&f->lock);
	return got;
}

/* Holds the timers' thread in the gate's callback until open_gate. */
static void hold_gate(struct timers *t, struct fired *f)
{
	long long deadline = timers_now_ms() + 5000;
	struct timespec ts = {.tv_sec = deadline / 1000, .tv_nsec = deadline % 1000 * 1000000};
	int held;

	pthread_mutex_lock(&f->lock);
	f->gate_closed = 1;
	f->gate_held = 0;
	pthread_mutex_unlock(&f->lock);
	timers_set(t, "gate", timers_now_ms());
	pthread_mutex_lock(&f->lock);
	while (!f->gate_held && timers_now_ms() < deadline)
		pthread_cond_timedwait(&f->cond, &f->lock, &ts);
	held = f->gate_held;
	pthread_mutex_unlock(&f->lock);
	assert_true(held);
}

static void open_gate(struct fired *f)
{
	pthread_mutex_lock(&f->lock);
	f->gate_closed = 0;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

/* i of a key "ns/job-<i>" below n, or -1. */
static int job_index(const char *key, int n)
{
	char *end = NULL;
	long i;

	if (strncmp(key, "ns/job-", 7) != 0)
		return -1;
	i = strtol(key + 7, &end, 10);
	if (end == key + 7 || *end != '\0' || i < 0 || i >= n)
		return -1;
	return (int)i;
}

static void start(struct timers *t, struct fired *f, size_t cap)
{
	char err[ERR_LEN] = "";

	fired_init(f, cap);
	f->t = t;
	assert_int_equal(timers_start(t, record, f, err), 0);
}

static void finish(struct timers *t, struct fired *f)
{
	timers_stop(t);
	fired_release(f);
}

static void test_timers_fire_in_due_order(void **state)
{
	struct timers t;
	struct fired f;
	long long now;

	(void)state;
	start(&t, &f, 8);
	hold_gate(&t, &f);
	now = timers_now_ms();
	timers_set(&t, "ns/c", now + 30);
	timers_set(&t, "ns/a", now + 10);
	timers_set(&t, "ns/b", now + 20);
	open_gate(&f);
	assert_int_equal(wait_fired(&f, 3, 5000), 3);
	assert_string_equal(f.keys[0], "ns/a");
	assert_string_equal(f.keys[1], "ns/b");
	assert_string_equal(f.keys[2], "ns/c");
	assert_true(f.at[0] >= now + 10);
	assert_true(f.at[2] >= now + 30);
	assert_int_equal(timers_due(&t, "ns/a"), -1); /* fired timers are gone */
	finish(&t, &f);
}

static void test_an_earlier_reset_wins(void **state)
{
	struct timers t;
	struct fired f;
	long long now;

	(void)state;
	start(&t, &f, 8);
	hold_gate(&t, &f);
	now = timers_now_ms();
	timers_set(&t, "ns/job", now + HOUR_MS);
	timers_set(&t, "ns/marker", now + 40);
	timers_set(&t, "ns/job", now + 10);
	assert_int_equal(timers_due(&t, "ns/job"), now + 10);
	open_gate(&f);
	assert_int_equal(wait_fired(&f, 2, 5000), 2);
	assert_string_equal(f.keys[0], "ns/job");
	assert_string_equal(f.keys[1], "ns/marker");
	finish(&t, &f);
}

static void test_a_later_reset_does_not_postpone(void **state)
{
	struct timers t;
	struct fired f;
	long long now;

	(void)state;
	start(&t, &f, 8);
	hold_gate(&t, &f);
	now = timers_now_ms();
	timers_set(&t, "ns/job", now + 10);
	timers_set(&t, "ns/marker", now + 40);
	timers_set(&t, "ns/job", now + HOUR_MS);
	open_gate(&f);
	assert_int_equal(wait_fired(&f, 2, 5000), 2);
	assert_string_equal(f.keys[0], "ns/job");
	assert_string_equal(f.keys[1], "ns/marker");
	finish(&t, &f);
}

static void test_cancel_prevents_firing(void **state)
{
	struct timers t;
	struct fired f;
	long long now;

	(void)state;
	start(&t, &f, 8);
	hold_gate(&t, &f);
	now = timers_now_ms();
	timers_set(&t, "ns/cancelled", now + 10);
	timers_set(&t, "ns/marker", now + 40);
	timers_cancel(&t, "ns/cancelled");
	timers_cancel(&t, "ns/never-set"); /* nothing to do */
	assert_int_equal(timers_due(&t, "ns/cancelled"), -1);
	open_gate(&f);
	assert_int_equal(wait_fired(&f, 1, 5000), 1);
	assert_string_equal(f.keys[0], "ns/marker");
	/* A key cancelled can be set again. */
	timers_set(&t, "ns/cancelled", timers_now_ms());
	assert_int_equal(wait_fired(&f, 2, 5000), 2);
	assert_string_equal(f.keys[1], "ns/cancelled");
	finish(&t, &f);
}

static void test_a_timer_due_in_the_past_fires_at_once(void **state)
{
	struct timers t;
	struct fired f;
	long long now;

	(void)state;
	start(&t, &f, 8);
	/* Something far off first, so that the thread is asleep on it. */
	timers_set(&t, "ns/later", timers_now_ms() + HOUR_MS);
	now = timers_now_ms();
	timers_set(&t, "ns/overdue", now - 1000);
	assert_int_equal(wait_fired(&f, 1, 5000), 1);
	assert_string_equal(f.keys[0], "ns/overdue");
	assert_true(f.at[0] - now < 1000); /* not after a wait for the far one */
	finish(&t, &f);
}

/* Due times spread over 200 ms, many equal, in no order of setting. */
static long long spread_due(long long base, int i)
{
	return base + (long long)(i * 7919 % 200);
}

static void test_ten_thousand_timers_fire_once_each_in_due_order(void **state)
{
	enum { N = 10000 };
	struct timers t;
	struct fired f;
	char key[KEY_LEN];
	int *count = calloc(N, sizeof(*count));
	long long base, prev = 0;

	(void)state;
	assert_non_null(count);
	start(&t, &f, N + 1);
	hold_gate(&t, &f);
	base = timers_now_ms() + 50;
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "ns/job-%d", i);
		timers_set(&t, key, spread_due(base, i));
	}
	/* Due after every other one: when it has fired, any duplicate would
	 * have too. */
	timers_set(&t, "ns/marker", base + 500);
	open_gate(&f);
	assert_int_equal(wait_fired(&f, N + 1, 30000), N + 1);
	assert_string_equal(f.keys[N], "ns/marker");
	for (int i = 0; i < N; i++) {
		int idx = job_index(f.keys[i], N);
		long long due;

		assert_in_range(idx, 0, N - 1);
		count[idx]++;
		due = spread_due(base, idx);
		assert_true(due >= prev);
		assert_true(f.at[i] >= due);
		prev = due;
	}
	for (int i = 0; i < N; i++)
		assert_int_equal(count[i], 1);
	finish(&t, &f);
	free(count);
}

/* Cancels and re-sets at every depth of the heap keep it in order. */
static void test_cancels_and_resets_inside_the_heap_keep_order(void **state)
{
	enum { N = 2000 };
	struct timers t;
	struct fired f;
	char key[KEY_LEN];
	long long due[N];
	long long base, prev = 0;
	size_t expected = 0;

	(void)state;
	start(&t, &f, N + 1);
	srand(7);
	hold_gate(&t, &f);
	base = timers_now_ms() + 100;
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "ns/job-%d", i);
		due[i] = base + rand() % 200;
		timers_set(&t, key, due[i]);
	}
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "ns/job-%d", i);
		if (i % 3 == 0) {
			timers_cancel(&t, key);
			due[i] = -1;
		} else if (i % 5 == 0) {
			due[i] -= 1 + rand() % 90; /* earlier: moves up */
			timers_set(&t, key, due[i]);
		} else if (i % 7 == 0) {
			timers_set(&t, key, due[i] + 1000); /* later: ignored */
		}
		assert_int_equal(timers_due(&t, key), due[i]);
		expected += due[i] >= 0;
	}
	timers_set(&t, "ns/marker", base + 600);
	open_gate(&f);
	assert_int_equal(wait_fired(&f, expected + 1, 30000), expected + 1);
	assert_string_equal(f.keys[expected], "ns/marker");
	for (size_t k = 0; k < expected; k++) {
		int idx = job_index(f.keys[k], N);

		assert_in_range(idx, 0, N - 1);
		assert_true(due[idx] >= prev); /* a cancelled one (-1) fails here */
		prev = due[idx];
		due[idx] = -2; /* a second firing fails above */
	}
	finish(&t, &f);
}

static void test_stop_frees_pending_timers_unfired(void **state)
{
	struct timers t;
	struct timers zeroed;
	struct fired f;
	char key[KEY_LEN];
	long long later = timers_now_ms() + HOUR_MS;

	(void)state;
	start(&t, &f, 8);
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "ns/job-%d", i);
		timers_set(&t, key, later + i);
	}
	timers_stop(&t); /* ASan reports any entry left behind */
	assert_int_equal(f.n, 0);
	fired_release(&f);

	memset(&zeroed, 0, sizeof(zeroed));
	timers_stop(&zeroed);
	timers_stop(NULL);
}

static void set_next(void *ctx, const char *key)
{
	struct fired *f = ctx;

	record(ctx, key);
	if (strcmp(key, "ns/first") == 0)
		timers_set(f->t, "ns/second", timers_now_ms());
}

static void test_a_callback_may_set_a_timer(void **state)
{
	struct timers t;
	struct fired f;
	char err[ERR_LEN] = "";

	(void)state;
	fired_init(&f, 8);
	f.t = &t;
	assert_int_equal(timers_start(&t, set_next, &f, err), 0);
	timers_set(&t, "ns/first", timers_now_ms());
	assert_int_equal(wait_fired(&f, 2, 5000), 2);
	assert_string_equal(f.keys[1], "ns/second");
	finish(&t, &f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_timers_fire_in_due_order),
	    cmocka_unit_test(test_an_earlier_reset_wins),
	    cmocka_unit_test(test_a_later_reset_does_not_postpone),
	    cmocka_unit_test(test_cancel_prevents_firing),
	    cmocka_unit_test(test_a_timer_due_in_the_past_fires_at_once),
	    cmocka_unit_test(test_ten_thousand_timers_fire_once_each_in_due_order),
	    cmocka_unit_test(test_cancels_and_resets_inside_the_heap_keep_order),
	    cmocka_unit_test(test_stop_frees_pending_timers_unfired),
	    cmocka_unit_test(test_a_callback_may_set_a_timer),
	};

	/* A hang is a failure, not a stuck CI job. */
	alarm(120);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
