/* test_prom_text.c - the Prometheus text format as written (escaping,
 * values, histograms) and the histogram's buckets. That a whole /metrics
 * page parses is checked by Prometheus' own parser in
 * e2e/tests/operator_ha.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "histogram.h"
#include "prom_text.h"

/* What fn wrote, as a string the caller frees. */
static char *written(void (*fn)(FILE *f, void *ctx), void *ctx)
{
	static char *text;
	static size_t len;
	FILE *f = open_memstream(&text, &len);

	fn(f, ctx);
	fclose(f);
	return text;
}

static void write_escapes(FILE *f, void *ctx)
{
	struct prom_label l[2] = {{"path", "a\\b\"c\nd"}, {"code", "200"}};

	(void)ctx;
	prom_family(f, "x_total", "counter", "help with \\ and\nnewline");
	prom_sample(f, "x_total", l, 2, 3);
}

static void test_labels_and_help_are_escaped(void **state)
{
	char *t = written(write_escapes, NULL);

	(void)state;
	assert_string_equal(t, "# HELP x_total help with \\\\ and\\nnewline\n"
	                       "# TYPE x_total counter\n"
	                       "x_total{path=\"a\\\\b\\\"c\\nd\",code=\"200\"} 3\n");
	free(t);
}

static void write_values(FILE *f, void *ctx)
{
	(void)ctx;
	prom_sample(f, "a", NULL, 0, 0);
	prom_sample(f, "b", NULL, 0, 12345678901234.0);
	prom_sample(f, "c", NULL, 0, 0.25);
	prom_sample(f, "d", NULL, 0, INFINITY);
	prom_sample(f, "e", NULL, 0, NAN);
	prom_sample(f, "f", NULL, 0, 0.1);
}

static void test_values_read_back_exactly(void **state)
{
	char *t = written(write_values, NULL);

	(void)state;
	assert_string_equal(
	    t, "a 0\nb 12345678901234\nc 0.25\nd +Inf\ne NaN\nf 0.10000000000000001\n");
	free(t);
}

static void write_histogram(FILE *f, void *ctx)
{
	struct histogram *h = ctx;
	unsigned long cum[HISTOGRAM_BUCKETS], count;
	double sum;

	histogram_read(h, cum, &count, &sum);
	prom_histogram(f, "t_seconds", histogram_bounds, cum, HISTOGRAM_BUCKETS, count, sum);
}

static void test_histogram_buckets_are_cumulative_with_inf_as_the_count(void **state)
{
	static struct histogram h;
	char *t;

	(void)state;
	histogram_observe_us(&h, 5000);     /* on the bound: le="0.005" */
	histogram_observe_us(&h, 5001);     /* le="0.01" */
	histogram_observe_us(&h, 300000);   /* le="0.5" */
	histogram_observe_us(&h, 60000000); /* above every bound: +Inf only */
	histogram_observe_us(&h, -3);       /* counts as 0 */
	t = written(write_histogram, &h);
	assert_non_null(strstr(t, "t_seconds_bucket{le=\"0.005\"} 2\n"));
	assert_non_null(strstr(t, "t_seconds_bucket{le=\"0.01\"} 3\n"));
	assert_non_null(strstr(t, "t_seconds_bucket{le=\"0.25\"} 3\n"));
	assert_non_null(strstr(t, "t_seconds_bucket{le=\"0.5\"} 4\n"));
	assert_non_null(strstr(t, "t_seconds_bucket{le=\"10\"} 4\n"));
	assert_non_null(strstr(t, "t_seconds_bucket{le=\"+Inf\"} 5\n"));
	assert_non_null(strstr(t, "t_seconds_count 5\n"));
	assert_non_null(strstr(t, "t_seconds_sum "));
	assert_true(fabs(strtod(strstr(t, "t_seconds_sum ") + 14, NULL) - 60.310001) < 1e-9);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_labels_and_help_are_escaped),
	    cmocka_unit_test(test_values_read_back_exactly),
	    cmocka_unit_test(test_histogram_buckets_are_cumulative_with_inf_as_the_count),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
