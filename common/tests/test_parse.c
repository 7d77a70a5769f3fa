/* test_parse.c - checked number parsing: what is accepted, what is refused
 * and what the refusal says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "parse.h"

#include <inttypes.h>
#include <limits.h>
#include <string.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A case either succeeds with want or fails with exactly msg. On failure the
 * output must keep its sentinel value. */
struct i64_case {
	const char *s;
	int64_t min, max;
	int64_t want;
	const char *msg;
};

static void run_i64_cases(const struct i64_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct i64_case *c = &cases[i];
		char err[ERR_LEN] = "";
		int64_t out = 12345;
		int rc = parse_i64(c->s, c->min, c->max, &out, err);

		if (c->msg == NULL && (rc != 0 || out != c->want))
			fail_msg("'%s': rc %d, out %" PRId64 ", err '%s'", c->s, rc, out, err);
		if (c->msg != NULL && (rc != -1 || strcmp(err, c->msg) != 0 || out != 12345))
			fail_msg("'%s': rc %d, err '%s', want '%s'", c->s, rc, err, c->msg);
	}
}

static void test_parse_i64_accepts_whole_numbers_in_range(void **state)
{
	static const struct i64_case cases[] = {
	    {"0", 0, 10, 0, NULL},
	    {"42", 0, 100, 42, NULL},
	    {"-5", -10, 10, -5, NULL},
	    {"+7", 0, 10, 7, NULL},
	    {"010", 0, 100, 10, NULL}, /* decimal, not octal */
	    {"1", 1, 4096, 1, NULL},
	    {"4096", 1, 4096, 4096, NULL},
	    {"9223372036854775807", INT64_MIN, INT64_MAX, INT64_MAX, NULL},
	    {"-9223372036854775808", INT64_MIN, INT64_MAX, INT64_MIN, NULL},
	};

	(void)state;
	run_i64_cases(cases, ARRAY_LEN(cases));
}

static void test_parse_i64_rejects_malformed_input(void **state)
{
	static const struct i64_case cases[] = {
	    {"", 0, 10, 0, "'' is not a whole number"},
	    {"12x", 0, 100, 0, "'12x' is not a whole number"},
	    {" 5", 0, 10, 0, "' 5' is not a whole number"},
	    {"\t5", 0, 10, 0, "'\t5' is not a whole number"},
	    {"5 ", 0, 10, 0, "'5 ' is not a whole number"},
	    {"-", 0, 10, 0, "'-' is not a whole number"},
	    {"--5", -10, 10, 0, "'--5' is not a whole number"},
	    {"1.5", 0, 10, 0, "'1.5' is not a whole number"},
	    {"0x10", 0, 100, 0, "'0x10' is not a whole number"},
	    {"1e3", 0, 10000, 0, "'1e3' is not a whole number"},
	};

	(void)state;
	run_i64_cases(cases, ARRAY_LEN(cases));
}

static void test_parse_i64_rejects_values_out_of_range(void **state)
{
	static const struct i64_case cases[] = {
	    {"0", 1, 4096, 0, "'0' is out of range [1, 4096]"},
	    {"4097", 1, 4096, 0, "'4097' is out of range [1, 4096]"},
	    {"-11", -10, 10, 0, "'-11' is out of range [-10, 10]"},
	    {"9223372036854775808", INT64_MIN, INT64_MAX, 0,
	     "'9223372036854775808' is out of range [-9223372036854775808, "
	     "9223372036854775807]"},
	    {"-9223372036854775809", INT64_MIN, INT64_MAX, 0,
	     "'-9223372036854775809' is out of range [-9223372036854775808, "
	     "9223372036854775807]"},
	};

	(void)state;
	run_i64_cases(cases, ARRAY_LEN(cases));
}

static void test_parse_int_rejects_values_beyond_int(void **state)
{
	char err[ERR_LEN];
	int out = 7;

	(void)state;
	assert_int_equal(parse_int("2147483648", INT_MIN, INT_MAX, &out, err), -1);
	assert_string_equal(err, "'2147483648' is out of range [-2147483648, 2147483647]");
	assert_int_equal(out, 7);
	assert_int_equal(parse_int("-2147483648", INT_MIN, INT_MAX, &out, err), 0);
	assert_int_equal(out, INT_MIN);
}

static void test_parse_int_rejects_trailing_garbage(void **state)
{
	char err[ERR_LEN];
	int out = 7;

	(void)state;
	assert_int_equal(parse_int("8k", 1, 100, &out, err), -1);
	assert_string_equal(err, "'8k' is not a whole number");
	assert_int_equal(out, 7);
	assert_int_equal(parse_int("64", 1, 100, &out, err), 0);
	assert_int_equal(out, 64);
}

struct u64_case {
	const char *s;
	uint64_t min, max;
	uint64_t want;
	const char *msg;
};

static void run_u64_cases(const struct u64_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct u64_case *c = &cases[i];
		char err[ERR_LEN] = "";
		uint64_t out = 12345;
		int rc = parse_u64(c->s, c->min, c->max, &out, err);

		if (c->msg == NULL && (rc != 0 || out != c->want))
			fail_msg("'%s': rc %d, out %" PRIu64 ", err '%s'", c->s, rc, out, err);
		if (c->msg != NULL && (rc != -1 || strcmp(err, c->msg) != 0 || out != 12345))
			fail_msg("'%s': rc %d, err '%s', want '%s'", c->s, rc, err, c->msg);
	}
}

static void test_parse_u64_accepts_whole_numbers_in_range(void **state)
{
	static const struct u64_case cases[] = {
	    {"0", 0, 10, 0, NULL},
	    {"+3", 0, 10, 3, NULL},
	    {"-0", 0, 10, 0, NULL},
	    {"18446744073709551615", 0, UINT64_MAX, UINT64_MAX, NULL},
	};

	(void)state;
	run_u64_cases(cases, ARRAY_LEN(cases));
}

/* strtoull("-1") quietly returns 18446744073709551615. */
static void test_parse_u64_rejects_negative_numbers(void **state)
{
	static const struct u64_case cases[] = {
	    {"-1", 0, UINT64_MAX, 0, "'-1' is out of range [0, 18446744073709551615]"},
	    {"-18446744073709551615", 0, UINT64_MAX, 0,
	     "'-18446744073709551615' is out of range [0, 18446744073709551615]"},
	    {"-99999999999999999999", 0, UINT64_MAX, 0,
	     "'-99999999999999999999' is out of range [0, 18446744073709551615]"},
	};

	(void)state;
	run_u64_cases(cases, ARRAY_LEN(cases));
}

static void test_parse_u64_rejects_malformed_and_out_of_range_input(void **state)
{
	static const struct u64_case cases[] = {
	    {"", 0, 10, 0, "'' is not a whole number"},
	    {" 1", 0, 10, 0, "' 1' is not a whole number"},
	    {" -1", 0, 10, 0, "' -1' is not a whole number"},
	    {"1 ", 0, 10, 0, "'1 ' is not a whole number"},
	    {"abc", 0, 10, 0, "'abc' is not a whole number"},
	    {"0", 1, 4096, 0, "'0' is out of range [1, 4096]"},
	    {"18446744073709551616", 0, UINT64_MAX, 0,
	     "'18446744073709551616' is out of range [0, 18446744073709551615]"},
	};

	(void)state;
	run_u64_cases(cases, ARRAY_LEN(cases));
}

struct double_case {
	const char *s;
	double min, max;
	double want;
	const char *msg;
};

static void run_double_cases(const struct double_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct double_case *c = &cases[i];
		char err[ERR_LEN] = "";
		double out = 12345;
		int rc = parse_double(c->s, c->min, c->max, &out, err);

		if (c->msg == NULL && (rc != 0 || out != c->want))
			fail_msg("'%s': rc %d, out %g, err '%s'", c->s, rc, out, err);
		if (c->msg != NULL && (rc != -1 || strcmp(err, c->msg) != 0 || out != 12345))
			fail_msg("'%s': rc %d, err '%s', want '%s'", c->s, rc, err, c->msg);
	}
}

static void test_parse_double_accepts_finite_numbers_in_range(void **state)
{
	static const struct double_case cases[] =
	    {
	        {"0.5", 0, 1, 0.5, NULL},        {"1e3", 0, 1e4, 1000, NULL},
	        {"-2.25", -10, 10, -2.25, NULL}, {"3", 0, 10, 3, NULL},
	        {"1e-400", -1, 1, 0, NULL}, /* underflow: a value next to zero */
	    };

	(void)state;
	run_double_cases(cases, ARRAY_LEN(cases));
}

static void test_parse_double_rejects_nan_and_infinity(void **state)
{
	static const struct double_case cases[] = {
	    {"nan", -1e300, 1e300, 0, "'nan' is not a finite number"},
	    {"NaN", -1e300, 1e300, 0, "'NaN' is not a finite number"},
	    {"inf", -1e300, 1e300, 0, "'inf' is not a finite number"},
	    {"-infinity", -1e300, 1e300, 0, "'-infinity' is not a finite number"},
	    {"1e999", 0, 1, 0, "'1e999' is out of range [0, 1]"},
	};

	(void)state;
	run_double_cases(cases, ARRAY_LEN(cases));
}

static void test_parse_double_rejects_malformed_and_out_of_range_input(void **state)
{
	static const struct double_case cases[] = {
	    {"", 0, 1, 0, "'' is not a number"},
	    {" 1", 0, 10, 0, "' 1' is not a number"},
	    {"1x", 0, 10, 0, "'1x' is not a number"},
	    {"1.5 ", 0, 10, 0, "'1.5 ' is not a number"},
	    {"2", 0, 1, 0, "'2' is out of range [0, 1]"},
	    {"-0.001", 0, 0.5, 0, "'-0.001' is out of range [0, 0.5]"},
	};

	(void)state;
	run_double_cases(cases, ARRAY_LEN(cases));
}

static void test_parse_accepts_null_err_buffer(void **state)
{
	int64_t out = 0;

	(void)state;
	assert_int_equal(parse_i64("x", 0, 1, &out, NULL), -1);
	assert_int_equal(parse_i64("1", 0, 1, &out, NULL), 0);
	assert_int_equal(out, 1);
}

static void test_parse_bool_reads_what_go_reads(void **state)
{
	const char *yes[] = {"1", "t", "T", "true", "TRUE", "True"};
	const char *no[] = {"0", "f", "F", "false", "FALSE", "False"};
	const char *bad[] = {"", "yes", "on", "tRUE", " true", "2"};
	char err[ERR_LEN];
	int v;

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		v = -1;
		assert_int_equal(parse_bool(yes[i], &v, err), 0);
		assert_int_equal(v, 1);
		assert_int_equal(parse_bool(no[i], &v, err), 0);
		assert_int_equal(v, 0);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		assert_int_equal(parse_bool(bad[i], &v, err), -1);
		assert_int_equal(v, 7);
		assert_non_null(strstr(err, "not true or false"));
	}
}

static void test_parse_duration_reads_go_durations(void **state)
{
	static const struct {
		const char *s;
		long long ms;
	} ok[] = {{"15s", 15000}, {"500ms", 500},  {"1m", 60000},  {"1m30s", 90000},
	          {"1.5s", 1500}, {"2h", 7200000}, {"0.25s", 250}, {"1h1m1s1ms", 3661001}};
	const char *bad[] = {"", "15", "s", "-1s", "1x", "1s2", " 1s", "1 s", "1e3s"};
	char err[ERR_LEN];
	long long v;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(parse_duration_ms(ok[i].s, 0, 1LL << 40, &v, err), 0);
		assert_int_equal(v, ok[i].ms);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		assert_int_equal(parse_duration_ms(bad[i], 0, 1LL << 40, &v, err), -1);
		assert_int_equal(v, 7);
	}
	assert_int_equal(parse_duration_ms("999ms", 1000, 2000, &v, err), -1);
	assert_non_null(strstr(err, "out of range"));
	assert_int_equal(parse_duration_ms("99999999999h", 0, 1LL << 40, &v, err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_i64_accepts_whole_numbers_in_range),
	    cmocka_unit_test(test_parse_i64_rejects_malformed_input),
	    cmocka_unit_test(test_parse_i64_rejects_values_out_of_range),
	    cmocka_unit_test(test_parse_int_rejects_values_beyond_int),
	    cmocka_unit_test(test_parse_int_rejects_trailing_garbage),
	    cmocka_unit_test(test_parse_u64_accepts_whole_numbers_in_range),
	    cmocka_unit_test(test_parse_u64_rejects_negative_numbers),
	    cmocka_unit_test(test_parse_u64_rejects_malformed_and_out_of_range_input),
	    cmocka_unit_test(test_parse_double_accepts_finite_numbers_in_range),
	    cmocka_unit_test(test_parse_double_rejects_nan_and_infinity),
	    cmocka_unit_test(test_parse_double_rejects_malformed_and_out_of_range_input),
	    cmocka_unit_test(test_parse_accepts_null_err_buffer),
	    cmocka_unit_test(test_parse_bool_reads_what_go_reads),
	    cmocka_unit_test(test_parse_duration_reads_go_durations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
