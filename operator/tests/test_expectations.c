/* test_expectations.c - in-flight creates and deletes per job: a job waits
 * until every pod it asked for is seen, or the request failed, or the
 * oldest expectation is older than the time-to-live. Time is a fake
 * now_ms passed in, so expiry needs no waiting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "expectations.h"

#define TTL 1000

static void test_nothing_in_flight_is_satisfied(void **state)
{
	struct expectations e;

	(void)state;
	expectations_init(&e, TTL);
	assert_true(expectations_satisfied(&e, "ns/job", 0));
	/* Events for pods nobody expected change nothing. */
	expectations_observe_create(&e, "ns/job", "job-worker-0");
	expectations_observe_delete(&e, "ns/job", "uid-0");
	assert_true(expectations_satisfied(&e, "ns/job", 0));
	assert_int_equal(e.jobs.len, 0);
	expectations_release(&e);
}

static void test_an_expected_create_blocks_until_observed(void **state)
{
	struct expectations e;

	(void)state;
	expectations_init(&e, TTL);
	expectations_expect_create(&e, "ns/job", "job-worker-0", 100);
	expectations_expect_create(&e, "ns/job", "job-worker-1", 100);
	assert_false(expectations_satisfied(&e, "ns/job", 100));
	/* Other jobs are not held back. */
	assert_true(expectations_satisfied(&e, "ns/other", 100));
	/* Another job's pod of the same name does not count. */
	expectations_observe_create(&e, "ns/other", "job-worker-0");
	expectations_observe_create(&e, "ns/job", "job-worker-0");
	assert_false(expectations_satisfied(&e, "ns/job", 200));
	expectations_observe_create(&e, "ns/job", "job-worker-1");
	assert_true(expectations_satisfied(&e, "ns/job", 200));
	assert_int_equal(e.jobs.len, 0); /* nothing kept for a settled job */
	expectations_release(&e);
}

static void test_a_failed_create_unblocks(void **state)
{
	struct expectations e;

	(void)state;
	expectations_init(&e, TTL);
	expectations_expect_create(&e, "ns/job", "job-worker-0", 100);
	assert_false(expectations_satisfied(&e, "ns/job", 100));
	expectations_create_failed(&e, "ns/job", "job-worker-0");
	assert_true(expectations_satisfied(&e, "ns/job", 100));
	expectations_release(&e);
}

static void test_deletes_are_tracked_by_uid(void **state)
{
	struct expectations e;

	(void)state;
	expectations_init(&e, TTL);
	expectations_expect_delete(&e, "ns/job", "uid-a", 100);
	expectations_expect_delete(&e, "ns/job", "uid-b", 100);
	assert_false(expectations_satisfied(&e, "ns/job", 100));
	/* A create observation of the same string is not a delete. */
	expectations_observe_create(&e, "ns/job", "uid-a");
	expectations_observe_delete(&e, "ns/job", "uid-a");
	assert_false(expectations_satisfied(&e, "ns/job", 100));
	expectations_delete_failed(&e, "ns/job", "uid-b");
	assert_true(expectations_satisfied(&e, "ns/job", 100));

	/* Creates and deletes together: both must settle. */
	expectations_expect_create(&e, "ns/job", "job-worker-0", 100);
	expectations_expect_delete(&e, "ns/job", "uid-c", 100);
	expectations_observe_create(&e, "ns/job", "job-worker-0");
	assert_false(expectations_satisfied(&e, "ns/job", 100));
	expectations_observe_delete(&e, "ns/job", "uid-c");
	assert_true(expectations_satisfied(&e, "ns/job", 100));
	expectations_release(&e);
}

struct settled {
	char keys[4][32];
	int n;
};

static void note_settled(void *ctx, const char *job)
{
	struct settled *s = ctx;

	assert_true(s->n < 4);
	snprintf(s->keys[s->n++], sizeof(s->keys[0]), "%s", job);
}

/* A pod created and deleted while the watch was down shows in no event:
 * a relist that began after the API answered settles its expectation,
 * and names the job to look at again. What was not answered yet, or
 * answered after the list began, still waits for the watch. */
static void test_a_relist_settles_what_was_answered_before_it_began(void **state)
{
	struct expectations e;
	struct settled seen = {0};

	(void)state;
	expectations_init(&e, 100LL * TTL);
	expectations_expect_create(&e, "ns/a", "a-worker-0", 100);
	expectations_create_answered(&e, "ns/a", "a-worker-0", 110);
	expectations_expect_delete(&e, "ns/b", "uid-b0", 100);
	expectations_delete_answered(&e, "ns/b", "uid-b0", 120);
	expectations_expect_create(&e, "ns/b", "b-worker-1", 100); /* never answered */
	expectations_expect_create(&e, "ns/c", "c-worker-0", 100);
	expectations_create_answered(&e, "ns/c", "c-worker-0", 300); /* after the list began */
	/* An answer for what is not expected changes nothing. */
	expectations_create_answered(&e, "ns/d", "d-worker-0", 110);

	expectations_observe_list(&e, 200, note_settled, &seen);
	assert_int_equal(seen.n, 2);
	assert_true((strcmp(seen.keys[0], "ns/a") == 0 && strcmp(seen.keys[1], "ns/b") == 0) ||
	            (strcmp(seen.keys[0], "ns/b") == 0 && strcmp(seen.keys[1], "ns/a") == 0));
	assert_true(expectations_satisfied(&e, "ns/a", 200));
	assert_false(expectations_satisfied(&e, "ns/b", 200));
	assert_false(expectations_satisfied(&e, "ns/c", 200));
	assert_true(expectations_satisfied(&e, "ns/d", 200));

	/* A later list settles the rest that was answered; the create never
	 * answered waits on. */
	seen.n = 0;
	expectations_observe_list(&e, 400, note_settled, &seen);
	assert_int_equal(seen.n, 1);
	assert_string_equal(seen.keys[0], "ns/c");
	assert_true(expectations_satisfied(&e, "ns/c", 400));
	assert_false(expectations_satisfied(&e, "ns/b", 400));
	expectations_observe_create(&e, "ns/b", "b-worker-1");
	assert_true(expectations_satisfied(&e, "ns/b", 400));
	assert_int_equal(e.jobs.len, 0);
	expectations_release(&e);
}

static void test_expectations_expire_after_the_ttl(void **state)
{
	struct expectations e;
	struct expectations defaults;
	long long ttl;

	(void)state;
	expectations_init(&e, TTL);
	expectations_expect_create(&e, "ns/job", "job-worker-0", 100);
	expectations_expect_delete(&e, "ns/job", "uid-a", 600);
	assert_false(expectations_satisfied(&e, "ns/job", 100 + TTL));
	/* The oldest is past the TTL: an event was missed. */
	assert_true(expectations_satisfied(&e, "ns/job", 100 + TTL + 1));
	/* Expiry cleared the job: a new request is waited for afresh, not
	 * judged by the old one. */
	expectations_expect_create(&e, "ns/job", "job-worker-0", 2000);
	assert_false(expectations_satisfied(&e, "ns/job", 2000));
	/* Expecting again restarts the clock for that pod. */
	expectations_expect_create(&e, "ns/job", "job-worker-0", 2500);
	assert_false(expectations_satisfied(&e, "ns/job", 2000 + TTL + 1));
	assert_true(expectations_satisfied(&e, "ns/job", 2500 + TTL + 1));
	expectations_release(&e);

	expectations_init(&defaults, 0);
	ttl = (long long)EXPECTATIONS_TTL_MS;
	assert_int_equal(defaults.ttl_ms, ttl);
	expectations_expect_create(&defaults, "ns/job", "job-worker-0", 0);
	assert_false(expectations_satisfied(&defaults, "ns/job", ttl));
	assert_true(expectations_satisfied(&defaults, "ns/job", ttl + 1));
	expectations_release(&defaults);
}

static void test_forget_drops_a_job(void **state)
{
	struct expectations e;

	(void)state;
	expectations_init(&e, TTL);
	expectations_expect_create(&e, "ns/job", "job-worker-0", 100);
	expectations_expect_delete(&e, "ns/job", "uid-a", 100);
	expectations_expect_create(&e, "ns/other", "other-worker-0", 100);
	expectations_forget(&e, "ns/job");
	expectations_forget(&e, "ns/never");
	assert_true(expectations_satisfied(&e, "ns/job", 100));
	assert_false(expectations_satisfied(&e, "ns/other", 100));
	expectations_release(&e); /* frees what is still in flight */
}

/* Many threads expecting and observing at once settle every job. */
enum { THREADS = 8, PODS = 200 };

struct worker {
	struct expectations *e;
	int id;
};

static void *expect_and_observe(void *arg)
{
	struct worker *w = arg;
	char job[32], pod[32];

	snprintf(job, sizeof(job), "ns/job-%d", w->id % 2);
	for (int i = 0; i < PODS; i++) {
		snprintf(pod, sizeof(pod), "t%d-pod-%d", w->id, i);
		expectations_expect_create(w->e, job, pod, 0);
		expectations_expect_delete(w->e, job, pod, 0);
	}
	for (int i = 0; i < PODS; i++) {
		snprintf(pod, sizeof(pod), "t%d-pod-%d", w->id, i);
		expectations_observe_create(w->e, job, pod);
		expectations_observe_delete(w->e, job, pod);
	}
	return NULL;
}

static void test_concurrent_use_settles_every_job(void **state)
{
	struct expectations e;
	struct worker w[THREADS];
	pthread_t th[THREADS];

	(void)state;
	expectations_init(&e, TTL);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.e = &e, .id = i};
		assert_int_equal(pthread_create(&th[i], NULL, expect_and_observe, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(e.jobs.len, 0);
	assert_true(expectations_satisfied(&e, "ns/job-0", 0));
	assert_true(expectations_satisfied(&e, "ns/job-1", 0));
	expectations_release(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nothing_in_flight_is_satisfied),
	    cmocka_unit_test(test_an_expected_create_blocks_until_observed),
	    cmocka_unit_test(test_a_failed_create_unblocks),
	    cmocka_unit_test(test_deletes_are_tracked_by_uid),
	    cmocka_unit_test(test_a_relist_settles_what_was_answered_before_it_began),
	    cmocka_unit_test(test_expectations_expire_after_the_ttl),
	    cmocka_unit_test(test_forget_drops_a_job),
	    cmocka_unit_test(test_concurrent_use_settles_every_job),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
