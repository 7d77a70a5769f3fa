/* test_timefmt.c - RFC 3339 times: formatting in seconds and microseconds,
 * parsing with offsets and fractions, and what parsing refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "timefmt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void test_timefmt_rfc3339_writes_utc_seconds(void **state)
{
	static const struct {
		long long t;
		const char *want;
	} cases[] = {
	    {0, "1970-01-01T00:00:00Z"},
	    {-1, "1969-12-31T23:59:59Z"},
	    {951782400, "2000-02-29T00:00:00Z"},
	    {1795568523, "2026-11-25T01:02:03Z"},
	    {4107542399, "2100-02-28T23:59:59Z"},
	    {253402300799, "9999-12-31T23:59:59Z"},
	    /* Outside four-digit years the time is clamped. */
	    {253402300800, "9999-12-31T23:59:59Z"},
	    {-62167219201, "0000-01-01T00:00:00Z"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char out[TIMEFMT_LEN];

		timefmt_rfc3339((time_t)cases[i].t, out);
		if (strcmp(out, cases[i].want) != 0)
			fail_msg("%lld: '%s', want '%s'", cases[i].t, out, cases[i].want);
	}
}

static void test_timefmt_micro_writes_exactly_six_fractional_digits(void **state)
{
	static const struct {
		long long sec;
		long nsec;
		const char *want;
	} cases[] = {
	    {1795568523, 0, "2026-11-25T01:02:03.000000Z"},
	    {1795568523, 1000, "2026-11-25T01:02:03.000001Z"},
	    {1795568523, 999999999, "2026-11-25T01:02:03.999999Z"},
	    {1795568523, 123456789, "2026-11-25T01:02:03.123456Z"},
	    /* A timespec out of range never prints more than six digits. */
	    {0, 2000000000, "1970-01-01T00:00:00.999999Z"},
	    {0, -5, "1970-01-01T00:00:00.000000Z"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct timespec ts = {.tv_sec = (time_t)cases[i].sec, .tv_nsec = cases[i].nsec};
		char out[TIMEFMT_LEN];

		timefmt_micro(&ts, out);
		if (strcmp(out, cases[i].want) != 0)
			fail_msg("%lld.%ld: '%s', want '%s'", cases[i].sec, cases[i].nsec, out,
			         cases[i].want);
	}
}

static void test_timefmt_parse_reads_zones_and_fractions(void **state)
{
	static const struct {
		const char *s;
		long long want;
	} cases[] = {
	    {"2026-11-25T01:02:03Z", 1795568523},
	    {"2026-11-25T01:02:03.000000Z", 1795568523},
	    {"2026-11-25T01:02:03.999999999999Z", 1795568523},
	    {"2026-11-25T01:02:03.5z", 1795568523},
	    {"2026-11-25t01:02:03Z", 1795568523},
	    {"2026-11-25T02:02:03+01:00", 1795568523},
	    {"2026-11-24T19:32:03-05:30", 1795568523},
	    {"2026-11-25T01:02:03+00:00", 1795568523},
	    {"2026-11-25T01:02:03-00:00", 1795568523},
	    {"1970-01-01T00:00:00Z", 0},
	    {"1969-12-31T23:59:59Z", -1},
	    {"2000-02-29T00:00:00Z", 951782400},
	    {"0000-01-01T00:00:00Z", -62167219200},
	    {"9999-12-31T23:59:59Z", 253402300799},
	    /* A leap second is the next minute's first second. */
	    {"2016-12-31T23:59:60Z", 1483228800},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		long long t = -42;

		if (timefmt_parse(cases[i].s, &t) != 0 || t != cases[i].want)
			fail_msg("'%s': %lld, want %lld", cases[i].s, t, cases[i].want);
	}
}

static void test_timefmt_parse_refuses_what_is_not_rfc3339(void **state)
{
	static const char *const bad[] = {
	    "",
	    "2026-11-25",
	    "2026-11-25T01:02:03",   /* no zone */
	    "2026-11-25 01:02:03Z",  /* space for T */
	    "2026-11-25T01:02:03.Z", /* empty fraction */
	    "2026-11-25T01:02:03ZZ", /* trailing bytes */
	    "2026-11-25T01:02:03Z ",
	    "2026-11-25T01:02:03+0100",  /* offset without ':' */
	    "2026-11-25T01:02:03+24:00", /* offset hour out of range */
	    "2026-11-25T01:02:03+01:60",
	    "2026-13-25T01:02:03Z",
	    "2026-00-25T01:02:03Z",
	    "2026-11-31T01:02:03Z",
	    "2026-02-29T01:02:03Z", /* not a leap year */
	    "1900-02-29T01:02:03Z", /* nor is 1900 */
	    "2026-11-00T01:02:03Z",
	    "2026-11-25T24:00:00Z",
	    "2026-11-25T01:60:03Z",
	    "2026-11-25T01:02:61Z",
	    "26-11-25T01:02:03Z",
	    "+2026-11-25T01:02:03Z",
	    "2026-1-25T01:02:03Z",
	    "2026-11-25T1:02:03Z",
	    "2026-11-25T01:02:03.5.5Z",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		long long t = 7;

		if (timefmt_parse(bad[i], &t) != -1 || t != 7)
			fail_msg("'%s' was accepted as %lld", bad[i], t);
	}
	assert_int_equal(timefmt_parse(NULL, NULL), -1);
}

static void test_timefmt_formats_parse_back_to_the_same_second(void **state)
{
	(void)state;
	for (long long t = -62000000000LL; t < 253000000000LL; t += 7777777777LL) {
		struct timespec ts = {.tv_sec = (time_t)t, .tv_nsec = 654321000};
		char a[TIMEFMT_LEN], b[TIMEFMT_LEN];
		long long ta = 0, tb = 0;

		timefmt_rfc3339((time_t)t, a);
		timefmt_micro(&ts, b);
		assert_int_equal(timefmt_parse(a, &ta), 0);
		assert_int_equal(timefmt_parse(b, &tb), 0);
		if (ta != t || tb != t)
			fail_msg("%lld: '%s' -> %lld, '%s' -> %lld", t, a, ta, b, tb);
	}
}

static void test_timefmt_now_is_the_current_time(void **state)
{
	char s[TIMEFMT_LEN], us[TIMEFMT_LEN];
	long long a = 0, b = 0;
	time_t before = time(NULL);

	(void)state;
	timefmt_now(s);
	timefmt_now_micro(us);
	assert_int_equal(strlen(s), 20);
	assert_int_equal(strlen(us), 27);
	assert_int_equal(timefmt_parse(s, &a), 0);
	assert_int_equal(timefmt_parse(us, &b), 0);
	assert_true(a >= before && a <= time(NULL));
	assert_true(b >= a && b <= time(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_timefmt_rfc3339_writes_utc_seconds),
	    cmocka_unit_test(test_timefmt_micro_writes_exactly_six_fractional_digits),
	    cmocka_unit_test(test_timefmt_parse_reads_zones_and_fractions),
	    cmocka_unit_test(test_timefmt_parse_refuses_what_is_not_rfc3339),
	    cmocka_unit_test(test_timefmt_formats_parse_back_to_the_same_second),
	    cmocka_unit_test(test_timefmt_now_is_the_current_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
