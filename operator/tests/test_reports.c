/* test_reports.c - the chiefs' reports between their arrival and the
 * status: one write per interval per job however often reports come, the
 * newest kept, a failed write leaving it due, a report that comes during
 * a write kept for the next, a job made again under its name starting
 * afresh, and the requests' per-job limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "reports.h"

#define KEY      "ml/mnist"
#define UID      "u-1"
#define INTERVAL 5000LL

static struct training_status at_step(long long step)
{
	struct training_status t;

	memset(&t, 0, sizeof(t));
	t.present = 1;
	t.global_step = step;
	t.last_backup_step = t.resumed_from = t.resumed_backup = -1;
	return t;
}

static void test_the_first_report_is_due_at_once(void **state)
{
	struct reports r;
	struct training_status got, t = at_step(10);
	long long wait;

	(void)state;
	reports_init(&r, INTERVAL);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 0, &wait), 0);
	assert_int_equal(wait, -1);
	assert_int_equal(reports_put(&r, KEY, UID, &t, 1000), 0);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 1000, &wait), 1);
	assert_int_equal(got.global_step, 10);
	reports_release(&r);
}

static void test_reports_between_writes_make_one_write_per_interval(void **state)
{
	struct reports r;
	struct training_status got, t;
	long long wait, now = 1000;
	int writes = 0;

	(void)state;
	reports_init(&r, INTERVAL);
	/* A report every 100 ms for 60 s, and a pass after each (the worst
	 * case: something else brings the job back every time). */
	for (int i = 0; i < 600; i++, now += 100) {
		t = at_step(i);
		reports_put(&r, KEY, UID, &t, now);
		if (reports_due(&r, KEY, UID, &got, now, &wait)) {
			assert_int_equal(got.global_step, i); /* always the newest */
			reports_written(&r, KEY, UID, now);
			writes++;
		} else {
			assert_true(wait > 0 && wait <= INTERVAL);
		}
	}
	assert_int_equal(writes, 12); /* 60 s / 5 s */
	assert_int_equal(r.accepted, 600);
	reports_release(&r);
}

static void test_a_put_says_how_long_until_the_status_may_show_it(void **state)
{
	struct reports r;
	struct training_status got, t = at_step(1);
	long long wait;

	(void)state;
	reports_init(&r, INTERVAL);
	reports_put(&r, KEY, UID, &t, 0);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 0, &wait), 1);
	reports_written(&r, KEY, UID, 0);
	t = at_step(2);
	assert_int_equal(reports_put(&r, KEY, UID, &t, 1500), 3500);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 1500, &wait), 0);
	assert_int_equal(wait, 3500);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 5000, &wait), 1);
	assert_int_equal(got.global_step, 2);
	reports_release(&r);
}

static void test_the_last_report_of_an_ended_job_goes_at_once(void **state)
{
	struct reports r;
	struct training_status got, t = at_step(10);
	long long wait;

	(void)state;
	reports_init(&r, INTERVAL);
	assert_int_equal(reports_due_now(&r, KEY, UID, &got), 0);
	reports_put(&r, KEY, UID, &t, 0);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 0, &wait), 1);
	reports_written(&r, KEY, UID, 0);
	t = at_step(100);
	reports_put(&r, KEY, UID, &t, 100);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 100, &wait), 0);
	assert_int_equal(reports_due_now(&r, KEY, UID, &got), 1);
	assert_int_equal(got.global_step, 100);
	reports_written(&r, KEY, UID, 100);
	assert_int_equal(reports_due_now(&r, KEY, UID, &got), 0);
	reports_release(&r);
}

static void test_a_failed_write_leaves_the_report_due(void **state)
{
	struct reports r;
	struct training_status got, t = at_step(7);
	long long wait;

	(void)state;
	reports_init(&r, INTERVAL);
	reports_put(&r, KEY, UID, &t, 0);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 0, &wait), 1);
	/* No reports_written: the status write was refused. */
	assert_int_equal(reports_due(&r, KEY, UID, &got, 10, &wait), 1);
	assert_int_equal(got.global_step, 7);
	reports_written(&r, KEY, UID, 10);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 10000, &wait), 0);
	assert_int_equal(wait, -1); /* nothing waits */
	reports_release(&r);
}

static void test_a_report_that_comes_during_a_write_waits_for_the_next(void **state)
{
	struct reports r;
	struct training_status got, t = at_step(1);
	long long wait;

	(void)state;
	reports_init(&r, INTERVAL);
	reports_put(&r, KEY, UID, &t, 0);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 0, &wait), 1);
	t = at_step(2);
	reports_put(&r, KEY, UID, &t, 5); /* while the pass writes step 1 */
	reports_written(&r, KEY, UID, 10);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 20, &wait), 0);
	assert_int_equal(wait, INTERVAL - 10);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 10 + INTERVAL, &wait), 1);
	assert_int_equal(got.global_step, 2);
	reports_release(&r);
}

static void test_a_job_made_again_under_its_name_starts_afresh(void **state)
{
	struct reports r;
	struct training_status got, t = at_step(900);
	long long wait;

	(void)state;
	reports_init(&r, INTERVAL);
	reports_put(&r, KEY, UID, &t, 0);
	/* The old job's report is not the new job's. */
	assert_int_equal(reports_due(&r, KEY, "u-2", &got, 0, &wait), 0);
	t = at_step(3);
	assert_int_equal(reports_put(&r, KEY, "u-2", &t, 100), 0);
	assert_int_equal(reports_due(&r, KEY, "u-2", &got, 100, &wait), 1);
	assert_int_equal(got.global_step, 3);
	reports_forget(&r, KEY);
	assert_int_equal(reports_due(&r, KEY, "u-2", &got, 100, &wait), 0);
	reports_release(&r);
}

static void test_a_step_that_goes_back_is_said_once(void **state)
{
	struct reports r;
	struct training_status got, t;
	long long wait;

	(void)state;
	reports_init(&r, INTERVAL);
	t = at_step(500);
	reports_put(&r, KEY, UID, &t, 0);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 0, &wait), 1);
	assert_int_equal(got.resumed_from, -1);
	reports_written(&r, KEY, UID, 0);
	/* The chief's last report before its preemption, then the new
	 * chief's first ones, all between two writes: the drop is kept. */
	t = at_step(520);
	reports_put(&r, KEY, UID, &t, 1000);
	t = at_step(500);
	t.last_backup_step = 500;
	reports_put(&r, KEY, UID, &t, 2000);
	/* Its next report names a newer backup; the one it went back to
	 * rides on. */
	t = at_step(505);
	t.last_backup_step = 505;
	reports_put(&r, KEY, UID, &t, 3000);
	/* A pass takes it; while it writes, another report comes. */
	assert_int_equal(reports_due(&r, KEY, UID, &got, 5000, &wait), 1);
	assert_int_equal(got.global_step, 505);
	assert_int_equal(got.resumed_from, 520);
	assert_int_equal(got.resumed_backup, 500);
	assert_int_equal(got.last_backup_step, 505);
	t = at_step(510);
	reports_put(&r, KEY, UID, &t, 5001);
	reports_written(&r, KEY, UID, 5002);
	/* Going on from there is no news. */
	assert_int_equal(reports_due(&r, KEY, UID, &got, 10002, &wait), 1);
	assert_int_equal(got.global_step, 510);
	assert_int_equal(got.resumed_from, -1);
	assert_int_equal(got.resumed_backup, -1);
	reports_release(&r);
}

static void test_a_new_chief_is_said_even_where_nothing_was_lost(void **state)
{
	struct reports r;
	struct training_status got, t;
	long long wait;

	(void)state;
	reports_init(&r, INTERVAL);
	t = at_step(1871);
	strcpy(t.chief, "pod-a");
	reports_put(&r, KEY, UID, &t, 0);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 0, &wait), 1);
	assert_false(got.new_chief);
	reports_written(&r, KEY, UID, 0);
	/* Preempted with a backup of its very step: the next chief starts
	 * there. */
	strcpy(t.chief, "pod-b");
	reports_put(&r, KEY, UID, &t, 6000);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 6000, &wait), 1);
	assert_true(got.new_chief);
	assert_int_equal(got.resumed_from, 1871);
	reports_written(&r, KEY, UID, 6000);
	t = at_step(1900);
	strcpy(t.chief, "pod-b");
	reports_put(&r, KEY, UID, &t, 12000);
	assert_int_equal(reports_due(&r, KEY, UID, &got, 12000, &wait), 1);
	assert_false(got.new_chief);
	assert_int_equal(got.resumed_from, -1);
	reports_release(&r);
}

static void test_requests_beyond_the_burst_wait_for_a_token(void **state)
{
	const long long t0 = 100000; /* a monotonic clock's ms */
	struct reports r;

	(void)state;
	reports_init(&r, INTERVAL);
	for (int i = 0; i < REPORTS_BURST; i++)
		assert_int_equal(reports_admit(&r, KEY, t0), 0);
	assert_int_equal(reports_admit(&r, KEY, t0 + 1), REPORTS_REFILL_MS - 1);
	/* Another job has its own bucket. */
	assert_int_equal(reports_admit(&r, "ml/other", t0), 0);
	assert_int_equal(reports_admit(&r, KEY, t0 + REPORTS_REFILL_MS), 0);
	assert_true(reports_admit(&r, KEY, t0 + REPORTS_REFILL_MS) > 0);
	assert_int_equal(r.limited, 2);
	reports_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_the_first_report_is_due_at_once),
	    cmocka_unit_test(test_reports_between_writes_make_one_write_per_interval),
	    cmocka_unit_test(test_a_put_says_how_long_until_the_status_may_show_it),
	    cmocka_unit_test(test_the_last_report_of_an_ended_job_goes_at_once),
	    cmocka_unit_test(test_a_failed_write_leaves_the_report_due),
	    cmocka_unit_test(test_a_report_that_comes_during_a_write_waits_for_the_next),
	    cmocka_unit_test(test_a_job_made_again_under_its_name_starts_afresh),
	    cmocka_unit_test(test_a_step_that_goes_back_is_said_once),
	    cmocka_unit_test(test_a_new_chief_is_said_even_where_nothing_was_lost),
	    cmocka_unit_test(test_requests_beyond_the_burst_wait_for_a_token),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
