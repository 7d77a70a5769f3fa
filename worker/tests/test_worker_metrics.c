/* test_worker_metrics.c - the worker's counters and training snapshot: a
 * step counted once with its position and figures, the samples-per-second
 * window over the last minute (steady, early on, through a stall, after a
 * gap longer than the ring), the seconds-left estimate, backups,
 * all-reduces, resynchronizations, and a snapshot that stays consistent
 * while another thread steps.
 *
 * Time is what the tests pass in (microseconds), never the clock: the
 * window's arithmetic is checked exactly where it can be, and within one
 * one-second slot's steps where the slot is what bounds it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker_metrics.h"

#define S(x) ((long long)((x)*1e6)) /* seconds to microseconds */

/* A run of 2 epochs of 1000 steps, global batch 64 (2 workers x 32). */
#define EPOCHS 2
#define STEPS  1000
#define BATCH  32
#define WORLD  2

static int setup(void **state)
{
	struct worker_metrics *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return -1;
	worker_metrics_init(m);
	worker_metrics_set_plan(
	    m, &(struct worker_metrics_plan){EPOCHS, STEPS, 0.01, 2, {"accuracy", "mae"}});
	*state = m;
	return 0;
}

static int teardown(void **state)
{
	worker_metrics_release(*state);
	free(*state);
	return 0;
}

/* Step number n (1-based, of the whole run) done at t_us. */
static void step_at(struct worker_metrics *m, uint64_t n, long long t_us)
{
	struct worker_metrics_step s = {
	    .us = 20000,
	    .examples = BATCH,
	    .global_examples = BATCH * WORLD,
	    .epoch = (int)((n - 1) / STEPS) + 1,
	    .step = (long)((n - 1) % STEPS) + 1,
	    .global_step = n,
	    .loss = 1.0 / (double)n,
	    .metrics = {0.5, 0.25},
	};

	worker_metrics_step(m, &s, t_us);
}

/* Steps 10 a second, at t = from + 0.05 s, from + 0.15 s, ... up to
 * before until, numbered on from first; returns the next number. */
static uint64_t steady(struct worker_metrics *m, uint64_t first, double from, double until)
{
	uint64_t n = first;

	for (long long t = S(from) + S(0.05); t < S(until); t += S(0.1))
		step_at(m, n++, t);
	return n;
}

static void test_before_any_step_the_snapshot_says_nothing_is_known(void **state)
{
	struct worker_metrics_snapshot s;

	worker_metrics_snapshot(*state, &s, S(10));
	assert_int_equal(s.steps_done, 0);
	assert_int_equal(s.epoch, 0);
	assert_int_equal(s.epochs, EPOCHS);
	assert_int_equal(s.total_steps, EPOCHS * STEPS);
	assert_true(s.samples_per_second == 0);
	assert_true(s.seconds_left == WORKER_METRICS_NONE);
	assert_true(s.last_backup_step == WORKER_METRICS_NONE);
	assert_false(s.have_info);
	assert_false(s.have_validation);
	assert_int_equal(s.nmetrics, 2);
	assert_string_equal(s.names[0], "accuracy");
	assert_string_equal(s.names[1], "mae");
}

static void test_a_step_is_counted_once_with_its_position_and_figures(void **state)
{
	struct worker_metrics *m = *state;
	struct worker_metrics_snapshot s;
	unsigned long cum[HISTOGRAM_BUCKETS], count;
	double sum;

	worker_metrics_position(m, 1, 499, 499); /* a restored backup */
	step_at(m, 500, S(1));
	step_at(m, 501, S(2));
	worker_metrics_snapshot(m, &s, S(2));
	assert_int_equal(s.steps_done, 2);
	assert_int_equal(s.examples, 2 * BATCH);
	assert_int_equal(s.global_examples, 2 * BATCH * WORLD);
	assert_int_equal(s.epoch, 1);
	assert_int_equal(s.step, 501);
	assert_int_equal(s.global_step, 501);
	assert_true(s.loss == 1.0 / 501);
	assert_true(s.metrics[0] == 0.5 && s.metrics[1] == 0.25);
	histogram_read(&m->step_time, cum, &count, &sum);
	assert_int_equal(count, 2);
	assert_true(fabs(sum - 0.04) < 1e-9);
	assert_int_equal(cum[2], 2); /* 20 ms: in the 25 ms bucket, not the 10 ms one */
	assert_int_equal(cum[1], 0);
}

static void test_samples_per_second_is_the_last_minutes_throughput(void **state)
{
	struct worker_metrics *m = *state;
	struct worker_metrics_snapshot s;

	/* 1000 steps from 0.05 s to 99.95 s. The window starts at 40 s, in
	 * the slot [40, 41), whose end is the base: 410 steps by then, 590
	 * after, in 59 s: 10 steps, 640 examples a second, exactly. */
	steady(m, 1, 0, 100);
	worker_metrics_snapshot(m, &s, S(100));
	assert_int_equal(s.steps_done, 1000);
	assert_true(fabs(s.samples_per_second - 640) < 1e-9);
	/* 1000 of 2000 global steps left at 10 a second. */
	assert_true(fabs(s.seconds_left - 100) < 1e-9);
}

static void test_early_on_the_rate_counts_from_the_first_step(void **state)
{
	struct worker_metrics *m = *state;
	struct worker_metrics_snapshot s;

	/* 50 steps from 0.05 s to 4.95 s: the 49 after the first, in 4.9 s. */
	steady(m, 1, 0, 5);
	worker_metrics_snapshot(m, &s, S(4.95));
	assert_true(fabs(s.samples_per_second - 640) < 1e-9);
	/* One step in: no rate yet, and no estimate. */
	struct worker_metrics one;
	worker_metrics_init(&one);
	worker_metrics_set_plan(&one,
	                        &(struct worker_metrics_plan){EPOCHS, STEPS, 0.01, 0, {NULL}});
	step_at(&one, 1, S(3));
	worker_metrics_snapshot(&one, &s, S(3));
	worker_metrics_release(&one);
	assert_true(s.samples_per_second == 0);
	assert_true(s.seconds_left == WORKER_METRICS_NONE);
}

/* rate within one slot's 10 steps of what the window truly holds. */
static void assert_rate_near(double rate, double steps_in_window)
{
	double lo = (steps_in_window - 10) * BATCH * WORLD / 60.0;
	double hi = (steps_in_window + 10) * BATCH * WORLD / 59.0;

	if (rate < lo || rate > hi)
		fail_msg("samples/s %.2f, want %.2f to %.2f", rate, lo, hi);
}

static void test_a_stall_counts_as_no_steps_and_a_minute_of_it_as_none(void **state)
{
	struct worker_metrics *m = *state;
	struct worker_metrics_snapshot s, before;

	steady(m, 1, 0, 100);
	worker_metrics_snapshot(m, &before, S(100));
	/* 30 s later the window holds the 300 steps of 70 s to 100 s. */
	worker_metrics_snapshot(m, &s, S(130));
	assert_rate_near(s.samples_per_second, 300);
	assert_true(s.seconds_left > before.seconds_left);
	/* A minute and more without a step. */
	worker_metrics_snapshot(m, &s, S(161));
	assert_true(s.samples_per_second == 0);
	assert_true(s.seconds_left == WORKER_METRICS_NONE);
}

static void test_steps_after_a_gap_longer_than_the_ring_are_counted_alone(void **state)
{
	struct worker_metrics *m = *state;
	struct worker_metrics_snapshot s;

	/* 100 s of steps, 200 s of nothing (a long resynchronization), then
	 * 10 s of steps: the last minute holds those 100 steps alone. */
	uint64_t next = steady(m, 1, 0, 100);
	steady(m, next, 300, 310);
	worker_metrics_snapshot(m, &s, S(310));
	assert_int_equal(s.steps_done, 1100);
	assert_rate_near(s.samples_per_second, 100);
}

static void test_the_validation_and_the_last_backup_written_are_kept(void **state)
{
	struct worker_metrics *m = *state;
	struct worker_metrics_snapshot s;

	worker_metrics_validation(m, 0.75, (const double[]){0.8, 0.125});
	worker_metrics_backup(m, 100, 11000000, S(0.03), 1);
	worker_metrics_backup(m, 200, 12000000, S(0.5), 0); /* failed: the one before stays */
	worker_metrics_snapshot(m, &s, S(1));
	assert_true(s.have_validation);
	assert_true(s.val_loss == 0.75);
	assert_true(s.val_metrics[0] == 0.8 && s.val_metrics[1] == 0.125);
	assert_int_equal(s.last_backup_step, 100);
	assert_int_equal(m->backup_bytes, 11000000);
	assert_int_equal(m->backup_failures, 1);
	assert_int_equal(m->backup_time.count, 1);
	worker_metrics_backup(m, 300, 13000000, S(0.04), 1);
	worker_metrics_snapshot(m, &s, S(2));
	assert_int_equal(s.last_backup_step, 300);
	assert_int_equal(m->backup_bytes, 13000000);
}

static void test_allreduces_resyncs_and_rendezvous_add_up(void **state)
{
	struct worker_metrics *m = *state;

	worker_metrics_allreduce(m, 4096, 1500);
	worker_metrics_allreduce(m, 1024, 500);
	worker_metrics_allreduce(m, 8, -3); /* a clock that went back counts no time */
	worker_metrics_resync(m, S(1.5));
	worker_metrics_rendezvous(m, S(0.2));
	worker_metrics_rendezvous(m, S(20));
	assert_int_equal(m->allreduce_bytes, 5128);
	assert_int_equal(m->allreduce_us, 2000);
	assert_int_equal(m->resyncs, 1);
	assert_int_equal(m->resync_time.count, 1);
	assert_int_equal(m->rendezvous_time.count, 2);
	assert_int_equal(m->rendezvous_time.sum_us, S(20.2));
}

static void test_info_and_names_are_copied_and_long_names_cut(void **state)
{
	struct worker_metrics *m = *state;
	struct worker_metrics_snapshot s;
	struct worker_metrics_info info = {1, 4, "", "cpu", "ring", 0, 0};
	char name[100];

	snprintf(info.job, sizeof(info.job), "mnist");
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	worker_metrics_set_info(m, &info);
	worker_metrics_set_plan(m, &(struct worker_metrics_plan){1, 10, 0.5, 1, {name}});
	memset(&info, 0, sizeof(info));
	memset(name, 'y', 10);
	worker_metrics_snapshot(m, &s, 0);
	assert_true(s.have_info);
	assert_int_equal(s.info.rank, 1);
	assert_int_equal(s.info.world, 4);
	assert_string_equal(s.info.job, "mnist");
	assert_string_equal(s.info.communicator, "ring");
	assert_int_equal(strlen(s.names[0]), WORKER_METRICS_NAME_LEN - 1);
	assert_int_equal(s.names[0][0], 'x');
	assert_int_equal(s.total_steps, 10);
}

static void test_a_null_metrics_counts_nothing_and_snapshots_empty(void **state)
{
	struct worker_metrics_snapshot s;

	(void)state;
	worker_metrics_step(NULL, &(struct worker_metrics_step){.examples = 1}, 0);
	worker_metrics_position(NULL, 1, 1, 1);
	worker_metrics_validation(NULL, 1, (const double[]){1});
	worker_metrics_allreduce(NULL, 1, 1);
	worker_metrics_backup(NULL, 1, 1, 1, 1);
	worker_metrics_resync(NULL, 1);
	worker_metrics_rendezvous(NULL, 1);
	worker_metrics_snapshot(NULL, &s, 0);
	assert_int_equal(s.steps_done, 0);
	assert_true(s.last_backup_step == WORKER_METRICS_NONE);
	worker_metrics_release(NULL);
}

#define RACE_STEPS 20000

struct race {
	struct worker_metrics *m;
	int done;
};

static void *stepper(void *arg)
{
	struct race *r = arg;

	for (uint64_t n = 1; n <= RACE_STEPS; n++)
		step_at(r->m, 100 + n, (long long)n * 1000);
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A reader on another thread (the status reporter, a scrape) always sees
 * the counters and the position of one and the same step. */
static void test_a_snapshot_is_of_one_step_while_another_thread_steps(void **state)
{
	struct race r = {*state, 0};
	struct worker_metrics_snapshot s;
	pthread_t t;
	long reads = 0;

	assert_int_equal(pthread_create(&t, NULL, stepper, &r), 0);
	while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE)) {
		worker_metrics_snapshot(r.m, &s, (long long)RACE_STEPS * 1000);
		if (s.examples != s.steps_done * BATCH ||
		    s.global_examples != s.steps_done * BATCH * WORLD ||
		    (s.steps_done > 0 && s.global_step != 100 + s.steps_done))
			fail_msg("torn snapshot: %llu steps, %llu examples, global step %llu",
			         (unsigned long long)s.steps_done, (unsigned long long)s.examples,
			         (unsigned long long)s.global_step);
		reads++;
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	worker_metrics_snapshot(r.m, &s, (long long)RACE_STEPS * 1000);
	assert_int_equal(s.steps_done, RACE_STEPS);
	print_message("%ld snapshots read while %d steps were counted\n", reads, RACE_STEPS);
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_before_any_step_the_snapshot_says_nothing_is_known),
	    TEST(test_a_step_is_counted_once_with_its_position_and_figures),
	    TEST(test_samples_per_second_is_the_last_minutes_throughput),
	    TEST(test_early_on_the_rate_counts_from_the_first_step),
	    TEST(test_a_stall_counts_as_no_steps_and_a_minute_of_it_as_none),
	    TEST(test_steps_after_a_gap_longer_than_the_ring_are_counted_alone),
	    TEST(test_the_validation_and_the_last_backup_written_are_kept),
	    TEST(test_allreduces_resyncs_and_rendezvous_add_up),
	    TEST(test_info_and_names_are_copied_and_long_names_cut),
	    TEST(test_a_null_metrics_counts_nothing_and_snapshots_empty),
	    TEST(test_a_snapshot_is_of_one_step_while_another_thread_steps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
