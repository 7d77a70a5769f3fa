/* test_ratelimit.c - the token bucket that keeps a flood of strangers from
 * filling the log: a burst goes through, then one event per interval, and
 * the next event allowed learns how many were left out. The clock is the
 * test's own, so nothing here waits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ratelimit.h"

static void test_a_burst_passes_and_the_rest_is_counted(void **state)
{
	struct ratelimit rl;
	long long suppressed = -1;
	int allowed = 0;

	(void)state;
	ratelimit_init(&rl, 10, 1000);
	for (int i = 0; i < 1000; i++)
		allowed += ratelimit_allow(&rl, 5000, &suppressed);
	assert_int_equal(allowed, 10);
	assert_int_equal(suppressed, 0); /* from the last one allowed */
	/* A second later, one more, told of the 990 left out. */
	assert_true(ratelimit_allow(&rl, 6000, &suppressed));
	assert_int_equal(suppressed, 990);
	assert_false(ratelimit_allow(&rl, 6999, &suppressed));
}

static void test_a_steady_flood_gets_one_line_per_interval(void **state)
{
	struct ratelimit rl;
	long long suppressed;
	int allowed = 0;

	(void)state;
	ratelimit_init(&rl, 10, 1000);
	/* 100 events a second for a minute. */
	for (long long t = 1; t <= 60000; t += 10)
		allowed += ratelimit_allow(&rl, t, &suppressed);
	assert_int_equal(allowed, 10 + 59);
}

static void test_a_quiet_while_refills_the_bucket_but_not_beyond_it(void **state)
{
	struct ratelimit rl;
	long long suppressed;
	int allowed = 0;

	(void)state;
	ratelimit_init(&rl, 3, 100);
	for (int i = 0; i < 3; i++)
		assert_true(ratelimit_allow(&rl, 1, &suppressed));
	assert_false(ratelimit_allow(&rl, 1, &suppressed));
	for (int i = 0; i < 10; i++)
		allowed += ratelimit_allow(&rl, 1000000, &suppressed);
	assert_int_equal(allowed, 3);
}

static void test_a_clock_that_goes_back_does_not_stall_the_bucket(void **state)
{
	struct ratelimit rl;
	long long suppressed;

	(void)state;
	ratelimit_init(&rl, 1, 1000);
	assert_true(ratelimit_allow(&rl, 50000, &suppressed));
	assert_false(ratelimit_allow(&rl, 100, &suppressed));
	assert_true(ratelimit_allow(&rl, 1100, &suppressed));
	assert_int_equal(suppressed, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_burst_passes_and_the_rest_is_counted),
	    cmocka_unit_test(test_a_steady_flood_gets_one_line_per_interval),
	    cmocka_unit_test(test_a_quiet_while_refills_the_bucket_but_not_beyond_it),
	    cmocka_unit_test(test_a_clock_that_goes_back_does_not_stall_the_bucket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
