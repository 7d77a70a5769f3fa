/* test_workqueue.c - the rate limited work queue, against client-go's
 * semantics: de-duplicated keys, never two workers on one key, a key
 * added while processed comes back after done, exponential back-off to a
 * cap reset by forget, delayed adds, and shutdown waking every worker.
 * Every wait that could hang has a time-out and fails the test instead. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "workqueue.h"

/* Joins th, waiting at most timeout_ms. Returns 0, or -1 on time-out. */
static int join_within(pthread_t th, long timeout_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return pthread_timedjoin_np(th, NULL, &ts) == 0 ? 0 : -1;
}

struct getter {
	struct workqueue *q;
	char key[WORKQUEUE_KEY_LEN];
	int rc;
	atomic_int started;
};

static void *getter_main(void *arg)
{
	struct getter *g = arg;

	atomic_store(&g->started, 1);
	g->rc = workqueue_get(g->q, g->key);
	return NULL;
}

/* workqueue_get, failing the test if no key comes within timeout_ms (the
 * queue is shut down then, to get the blocked thread back). */
static void get_within(struct workqueue *q, char *out, long timeout_ms)
{
	struct getter g = {.q = q};
	pthread_t th;

	assert_int_equal(pthread_create(&th, NULL, getter_main, &g), 0);
	if (join_within(th, timeout_ms) < 0) {
		workqueue_shutdown(q);
		pthread_join(th, NULL);
		fail_msg("no key within %ld ms", timeout_ms);
	}
	assert_int_equal(g.rc, 1);
	memcpy(out, g.key, sizeof(g.key));
}

static void init(struct workqueue *q, int base_ms, int max_ms)
{
	char err[ERR_LEN] = "";

	assert_int_equal(workqueue_init(q, base_ms, max_ms, err), 0);
}

static void test_a_key_added_many_times_is_processed_once(void **state)
{
	struct workqueue q;
	char key[WORKQUEUE_KEY_LEN];

	(void)state;
	init(&q, 0, 0);
	for (int i = 0; i < 100; i++) {
		workqueue_add(&q, "ns/a");
		if (i < 5)
			workqueue_add(&q, "ns/b");
	}
	assert_int_equal(workqueue_len(&q), 2);
	assert_int_equal(q.adds, 2);
	/* In order of first arrival. */
	assert_int_equal(workqueue_get(&q, key), 1);
	assert_string_equal(key, "ns/a");
	assert_int_equal(workqueue_get(&q, key), 1);
	assert_string_equal(key, "ns/b");
	workqueue_done(&q, "ns/a");
	workqueue_done(&q, "ns/b");
	assert_int_equal(workqueue_len(&q), 0);
	workqueue_release(&q);
}

static void test_ages_say_how_long_the_head_waited_and_a_key_is_held(void **state)
{
	struct workqueue q;
	char key[WORKQUEUE_KEY_LEN];
	long long wait_ms = -1, held_ms = -1;

	(void)state;
	init(&q, 0, 0);
	workqueue_ages(&q, &wait_ms, &held_ms);
	assert_int_equal(wait_ms, 0); /* empty, and no worker holds a key */
	assert_int_equal(held_ms, 0);
	workqueue_add(&q, "ns/a");
	workqueue_add(&q, "ns/b");
	usleep(30000);
	workqueue_ages(&q, &wait_ms, &held_ms);
	assert_true(wait_ms >= 30);
	assert_int_equal(held_ms, 0);
	assert_int_equal(workqueue_get(&q, key), 1);
	usleep(30000);
	workqueue_ages(&q, &wait_ms, &held_ms);
	assert_true(wait_ms >= 60); /* ns/b, queued with ns/a */
	assert_true(held_ms >= 30); /* ns/a, with its worker */
	workqueue_done(&q, key);
	assert_int_equal(workqueue_get(&q, key), 1);
	workqueue_done(&q, key);
	workqueue_ages(&q, &wait_ms, &held_ms);
	assert_int_equal(wait_ms, 0);
	assert_int_equal(held_ms, 0);
	workqueue_release(&q);
}

static void test_a_key_added_while_processed_comes_back_after_done(void **state)
{
	struct workqueue q;
	char key[WORKQUEUE_KEY_LEN];

	(void)state;
	init(&q, 0, 0);
	workqueue_add(&q, "ns/a");
	assert_int_equal(workqueue_get(&q, key), 1);
	workqueue_add(&q, "ns/a");
	workqueue_add(&q, "ns/a");
	/* Not queued while held: a second worker must not get it. */
	assert_int_equal(workqueue_len(&q), 0);
	workqueue_add(&q, "ns/b");
	assert_int_equal(workqueue_get(&q, key), 1);
	assert_string_equal(key, "ns/b");
	workqueue_done(&q, "ns/b");

	workqueue_done(&q, "ns/a");
	assert_int_equal(workqueue_len(&q), 1);
	assert_int_equal(workqueue_get(&q, key), 1);
	assert_string_equal(key, "ns/a");
	workqueue_done(&q, "ns/a");
	/* Once, however many adds came while it was held. */
	assert_int_equal(workqueue_len(&q), 0);
	workqueue_release(&q);
}

enum { HAMMER_KEYS = 4, HAMMER_PRODUCERS = 4, HAMMER_WORKERS = 6, HAMMER_ADDS = 5000 };

struct hammer {
	struct workqueue q;
	atomic_int holders[HAMMER_KEYS];  /* workers holding each key now */
	atomic_long version[HAMMER_KEYS]; /* bumped before each add */
	atomic_long seen[HAMMER_KEYS];    /* version read by the last worker */
	atomic_int overlaps;
	atomic_int bad_keys; /* cmocka cannot assert off the main thread */
	atomic_long processed;
	atomic_int next_id;
};

static void hammer_key(char *out, int k)
{
	snprintf(out, WORKQUEUE_KEY_LEN, "ns/job-%d", k);
}

static void *producer_main(void *arg)
{
	struct hammer *h = arg;
	int id = atomic_fetch_add(&h->next_id, 1);
	char key[WORKQUEUE_KEY_LEN];

	for (int i = 0; i < HAMMER_ADDS; i++) {
		int k = (i + id) % HAMMER_KEYS;

		hammer_key(key, k);
		atomic_fetch_add(&h->version[k], 1);
		workqueue_add(&h->q, key);
		if (i % 64 == 0)
			sched_yield();
	}
	return NULL;
}

/* k of a key "ns/job-<k>", or -1. */
static int hammer_index(const char *key)
{
	char *end = NULL;
	long k;

	if (strncmp(key, "ns/job-", 7) != 0)
		return -1;
	k = strtol(key + 7, &end, 10);
	if (end == key + 7 || *end != '\0' || k < 0 || k >= HAMMER_KEYS)
		return -1;
	return (int)k;
}

static void *worker_main(void *arg)
{
	struct hammer *h = arg;
	char key[WORKQUEUE_KEY_LEN];
	int k;

	while (workqueue_get(&h->q, key)) {
		k = hammer_index(key);
		if (k < 0) {
			atomic_fetch_add(&h->bad_keys, 1);
			workqueue_done(&h->q, key);
			continue;
		}
		if (atomic_fetch_add(&h->holders[k], 1) != 0)
			atomic_fetch_add(&h->overlaps, 1);
		/* Every add before the get is seen by this pass. */
		atomic_store(&h->seen[k], atomic_load(&h->version[k]));
		sched_yield(); /* widen the window a second worker would use */
		atomic_fetch_sub(&h->holders[k], 1);
		atomic_fetch_add(&h->processed, 1);
		workqueue_done(&h->q, key);
	}
	return NULL;
}

/* Waits until the last add of every key has been processed. */
static int all_adds_seen(struct hammer *h, long timeout_ms)
{
	long long deadline = timers_now_ms() + timeout_ms;

	while (timers_now_ms() < deadline) {
		int k = 0;

		while (k < HAMMER_KEYS && atomic_load(&h->seen[k]) == atomic_load(&h->version[k]))
			k++;
		if (k == HAMMER_KEYS)
			return 1;
		usleep(1000);
	}
	return 0;
}

static void test_two_workers_never_hold_one_key(void **state)
{
	struct hammer *h = calloc(1, sizeof(*h));
	pthread_t producers[HAMMER_PRODUCERS], workers[HAMMER_WORKERS];

	(void)state;
	assert_non_null(h);
	init(&h->q, 0, 0);
	for (int i = 0; i < HAMMER_WORKERS; i++)
		assert_int_equal(pthread_create(&workers[i], NULL, worker_main, h), 0);
	for (int i = 0; i < HAMMER_PRODUCERS; i++)
		assert_int_equal(pthread_create(&producers[i], NULL, producer_main, h), 0);
	for (int i = 0; i < HAMMER_PRODUCERS; i++)
		assert_int_equal(join_within(producers[i], 30000), 0);
	/* No add is lost: each key's last add is processed after it. */
	assert_true(all_adds_seen(h, 10000));
	workqueue_shutdown(&h->q);
	for (int i = 0; i < HAMMER_WORKERS; i++)
		assert_int_equal(join_within(workers[i], 10000), 0);
	assert_int_equal(atomic_load(&h->overlaps), 0);
	assert_int_equal(atomic_load(&h->bad_keys), 0);
	assert_true(atomic_load(&h->processed) >= HAMMER_KEYS);
	workqueue_release(&h->q);
	free(h);
}

/* The delays client-go's ItemExponentialFailureRateLimiter returns. */
static void test_backoff_doubles_to_the_cap_and_forget_resets_it(void **state)
{
	static const struct {
		int base_ms, max_ms;
		long long want[10];
	} cases[] = {
	    {1000, 8000, {1000, 2000, 4000, 8000, 8000, 8000, 8000, 8000, 8000, 8000}},
	    {5, 1000, {5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000}},
	    {0, 0, {500, 1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000}},
	    {3000, 2000, {2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000}},
	};

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct workqueue q;
		long long first;

		init(&q, cases[c].base_ms, cases[c].max_ms);
		for (int i = 0; i < 10; i++)
			assert_int_equal(workqueue_add_rate_limited(&q, "ns/a"), cases[c].want[i]);
		/* Per key: another key starts from the base. */
		first = workqueue_add_rate_limited(&q, "ns/b");
		assert_int_equal(first, cases[c].want[0]);
		workqueue_forget(&q, "ns/a");
		assert_int_equal(workqueue_add_rate_limited(&q, "ns/a"), first);
		assert_int_equal(workqueue_add_rate_limited(&q, "ns/a"), cases[c].want[1]);
		assert_int_equal(q.retries, 13);
		workqueue_release(&q); /* pending timers are freed */
	}
}

static void test_a_failed_key_comes_back_after_its_backoff(void **state)
{
	struct workqueue q;
	char key[WORKQUEUE_KEY_LEN];
	long long t0, delay;

	(void)state;
	init(&q, 20, 1000);
	t0 = timers_now_ms();
	delay = workqueue_add_rate_limited(&q, "ns/a");
	assert_int_equal(delay, 20);
	get_within(&q, key, 5000);
	assert_string_equal(key, "ns/a");
	assert_true(timers_now_ms() - t0 >= delay);
	workqueue_done(&q, key);
	workqueue_release(&q);
}

/* Waits up to 5 s for a key to be queued (a timer's), failing the test
 * instead of hanging. */
static void wait_queued(struct workqueue *q)
{
	for (int i = 0; i < 5000 && workqueue_len(q) == 0; i++)
		usleep(1000);
	assert_int_equal(workqueue_len(q), 1);
}

/* Takes the key that must be queued now, and checks it is "ns/a". */
static void take_a(struct workqueue *q, struct workqueue_taken *t)
{
	char key[WORKQUEUE_KEY_LEN];

	assert_int_equal(workqueue_len(q), 1);
	assert_int_equal(workqueue_get_taken(q, key, t), 1);
	assert_string_equal(key, "ns/a");
}

/* The log said "retrying in 16000 ms" and the retry came 1.4 s later: the
 * first failure's back-off, still pending, brought the key back before
 * the second's. */
static void test_a_retry_comes_no_sooner_than_its_backoff_when_nothing_else_adds_it(void **state)
{
	struct workqueue q;
	char key[WORKQUEUE_KEY_LEN];
	long long d1, d2, t1;

	(void)state;
	init(&q, 200, 10000);
	workqueue_add(&q, "ns/a");
	get_within(&q, key, 5000);
	d1 = workqueue_add_rate_limited(&q, key); /* the first failure */
	workqueue_done(&q, key);
	assert_int_equal(d1, 200);
	/* An event brings it at once (client-go does so too); it fails again. */
	workqueue_add(&q, "ns/a");
	get_within(&q, key, 5000);
	d2 = workqueue_add_rate_limited(&q, key);
	t1 = timers_now_ms();
	workqueue_done(&q, key);
	assert_int_equal(d2, 400);
	/* Nothing adds it now: it comes back after the 400 ms announced. */
	get_within(&q, key, 5000);
	assert_string_equal(key, "ns/a");
	assert_true(timers_now_ms() - t1 >= d2);
	workqueue_done(&q, key);
	workqueue_release(&q);
}

static void test_get_says_when_a_retry_comes_early_and_why(void **state)
{
	struct workqueue q;
	struct workqueue_taken t;
	char key[WORKQUEUE_KEY_LEN];

	(void)state;
	init(&q, 60000, 60000);
	workqueue_add(&q, "ns/a");
	take_a(&q, &t);
	assert_int_equal(t.why, WORKQUEUE_ADDED);
	assert_int_equal(t.failures, 0);
	assert_int_equal(t.backoff_left_ms, 0); /* not a retry */
	workqueue_add_rate_limited(&q, "ns/a");
	workqueue_done(&q, "ns/a");
	/* An event, a minute before the back-off ends. */
	workqueue_add(&q, "ns/a");
	take_a(&q, &t);
	assert_int_equal(t.why, WORKQUEUE_ADDED);
	assert_int_equal(t.failures, 1);
	assert_true(t.backoff_left_ms > 50000 && t.backoff_left_ms <= 60000);
	workqueue_done(&q, "ns/a");
	/* A deadline due before the back-off ends brings it early too. */
	workqueue_add_after(&q, "ns/a", 1);
	wait_queued(&q);
	take_a(&q, &t);
	assert_int_equal(t.why, WORKQUEUE_DELAY_ENDED);
	assert_true(t.backoff_left_ms > 0);
	workqueue_done(&q, "ns/a");
	workqueue_release(&q);

	/* A retry when its back-off ends is on time. */
	init(&q, 20, 1000);
	workqueue_add_rate_limited(&q, "ns/a");
	get_within(&q, key, 5000);
	workqueue_done(&q, key);
	workqueue_add_rate_limited(&q, "ns/a");
	wait_queued(&q);
	take_a(&q, &t);
	assert_int_equal(t.why, WORKQUEUE_BACKOFF_ENDED);
	assert_int_equal(t.failures, 2);
	assert_int_equal(t.backoff_left_ms, 0);
	workqueue_done(&q, "ns/a");
	workqueue_release(&q);
}

/* An early retry that succeeds leaves nothing to retry: its back-off does
 * not bring the key back for a pass with nothing to do. */
static void test_forget_cancels_the_backoff_left(void **state)
{
	struct workqueue q;
	char key[WORKQUEUE_KEY_LEN];

	(void)state;
	init(&q, 100, 1000);
	workqueue_add_rate_limited(&q, "ns/a");
	workqueue_add(&q, "ns/a"); /* an event, before the back-off ends */
	get_within(&q, key, 5000);
	workqueue_forget(&q, key); /* it succeeded */
	workqueue_done(&q, key);
	usleep(400 * 1000); /* four times the back-off */
	assert_int_equal(workqueue_len(&q), 0);
	workqueue_release(&q);
}

/* A periodic resync brings back every job, but not one waiting out its
 * back-off after a refused create: that would undo the back-off every
 * --resync-seconds. Once the retry has come and succeeded, resyncs queue
 * it again. */
static void test_a_resync_leaves_a_key_in_backoff_to_its_retry(void **state)
{
	struct workqueue q;
	struct workqueue_taken t;
	char key[WORKQUEUE_KEY_LEN];

	(void)state;
	init(&q, 60000, 60000);
	assert_int_equal(workqueue_resync(&q, "ns/a"), 1);
	take_a(&q, &t);
	workqueue_add_rate_limited(&q, "ns/a"); /* refused: retry in a minute */
	workqueue_done(&q, "ns/a");
	assert_int_equal(workqueue_resync(&q, "ns/a"), 0);
	assert_int_equal(workqueue_len(&q), 0);
	assert_int_equal(workqueue_resync(&q, "ns/b"), 1); /* others are not held */
	assert_int_equal(workqueue_get(&q, key), 1);
	assert_string_equal(key, "ns/b");
	workqueue_done(&q, key);
	/* An event still brings it early; once a pass succeeds, resyncs do too. */
	workqueue_add(&q, "ns/a");
	take_a(&q, &t);
	workqueue_forget(&q, "ns/a");
	workqueue_done(&q, "ns/a");
	assert_int_equal(workqueue_resync(&q, "ns/a"), 1);
	assert_int_equal(workqueue_len(&q), 1);
	workqueue_release(&q);
}

static void test_add_after_delivers_after_the_delay(void **state)
{
	struct workqueue q;
	char key[WORKQUEUE_KEY_LEN];
	long long t0, took;

	(void)state;
	init(&q, 0, 0);
	t0 = timers_now_ms();
	workqueue_add_after(&q, "ns/a", 50);
	assert_int_equal(workqueue_len(&q), 0);
	get_within(&q, key, 5000);
	took = timers_now_ms() - t0;
	assert_string_equal(key, "ns/a");
	assert_true(took >= 50);
	workqueue_done(&q, key);

	/* A key already waiting keeps the earlier time. */
	t0 = timers_now_ms();
	workqueue_add_after(&q, "ns/b", 3600LL * 1000);
	workqueue_add_after(&q, "ns/b", 30);
	get_within(&q, key, 5000);
	assert_string_equal(key, "ns/b");
	assert_true(timers_now_ms() - t0 >= 30);
	workqueue_done(&q, key);

	/* No delay: queued at once. */
	workqueue_add_after(&q, "ns/c", 0);
	assert_int_equal(workqueue_len(&q), 1);
	workqueue_release(&q);
}

static void test_shutdown_wakes_blocked_workers(void **state)
{
	enum { N = 4 };
	struct workqueue q;
	struct getter g[N];
	pthread_t th[N];
	char key[WORKQUEUE_KEY_LEN];

	(void)state;
	init(&q, 0, 0);
	memset(g, 0, sizeof(g));
	for (int i = 0; i < N; i++) {
		g[i].q = &q;
		g[i].rc = -1;
		assert_int_equal(pthread_create(&th[i], NULL, getter_main, &g[i]), 0);
	}
	for (int i = 0; i < N; i++)
		while (!atomic_load(&g[i].started))
			sched_yield();
	/* They are at or in get; either way shutdown must reach them. */
	usleep(20 * 1000);
	workqueue_shutdown(&q);
	for (int i = 0; i < N; i++) {
		assert_int_equal(join_within(th[i], 5000), 0);
		assert_int_equal(g[i].rc, 0);
	}
	/* From now on get returns at once, and adds are ignored. */
	workqueue_add(&q, "ns/a");
	assert_int_equal(workqueue_len(&q), 0);
	assert_int_equal(workqueue_get(&q, key), 0);
	workqueue_release(&q);
}

static void test_a_key_too_long_for_get_is_never_queued(void **state)
{
	struct workqueue q;
	struct workqueue zeroed;
	char key[WORKQUEUE_KEY_LEN + 8];

	(void)state;
	init(&q, 0, 0);
	memset(key, 'x', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	workqueue_add(&q, key);
	key[WORKQUEUE_KEY_LEN - 1] = '\0'; /* the longest that fits */
	workqueue_add(&q, key);
	assert_int_equal(workqueue_len(&q), 1);
	workqueue_release(&q);

	memset(&zeroed, 0, sizeof(zeroed));
	workqueue_release(&zeroed);
	workqueue_release(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_key_added_many_times_is_processed_once),
	    cmocka_unit_test(test_a_key_added_while_processed_comes_back_after_done),
	    cmocka_unit_test(test_two_workers_never_hold_one_key),
	    cmocka_unit_test(test_ages_say_how_long_the_head_waited_and_a_key_is_held),
	    cmocka_unit_test(test_backoff_doubles_to_the_cap_and_forget_resets_it),
	    cmocka_unit_test(test_a_failed_key_comes_back_after_its_backoff),
	    cmocka_unit_test(
	        test_a_retry_comes_no_sooner_than_its_backoff_when_nothing_else_adds_it),
	    cmocka_unit_test(test_get_says_when_a_retry_comes_early_and_why),
	    cmocka_unit_test(test_forget_cancels_the_backoff_left),
	    cmocka_unit_test(test_a_resync_leaves_a_key_in_backoff_to_its_retry),
	    cmocka_unit_test(test_add_after_delivers_after_the_delay),
	    cmocka_unit_test(test_shutdown_wakes_blocked_workers),
	    cmocka_unit_test(test_a_key_too_long_for_get_is_never_queued),
	};

	/* A hang is a failure, not a stuck CI job. */
	alarm(120);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
