/* test_progress.c - the trainer's stdout: Keras fit(verbose=1) lines, the
 * live bar on a terminal, and the JSON twin, with the loss and whatever
 * metrics compile() asked for (none, one, up to four), named as Keras
 * names them.
 *
 * Expected bars come from a port of Keras' Progbar.update (keras_bar below),
 * pinned by a few literal strings. Timings are never asserted, only their
 * format: the tests must not depend on the speed of the machine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "loss.h"
#include "metrics.h"
#include "progress.h"
#include "testutil.h"

#define KERAS_WIDTH  30
#define LINE_MAX_LEN 512

/* Keras' numbers: "%.4f", or "%.4e" when |v| <= 1e-3. */
#define NUM "([0-9]+\\.[0-9]{4}|[0-9]\\.[0-9]{4}e[-+][0-9]{2})"
/* " - 12s 34ms/step" at the end of an epoch (Progbar._format_time). */
#define FINAL_TIME " - [0-9]+s [0-9]+(s|ms|us)/step"
/* " - ETA: 5s", " - ETA: 1:05" or " - ETA: 1:01:05" before the end. */
#define ETA " - ETA: ([0-9]+s|[0-9]+:[0-9]{2}|[0-9]+:[0-9]{2}:[0-9]{2})"

/* Output captured in memory: not a terminal, so progress picks lines mode. */
struct capture {
	FILE *f;
	char *buf;
	size_t len;
};

static void capture_open(struct capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
}

/* Flushes and returns everything written so far, in the stream's buffer. */
static char *capture_text(struct capture *c)
{
	assert_int_equal(fflush(c->f), 0);
	assert_non_null(c->buf);
	return c->buf;
}

static void capture_close(struct capture *c)
{
	fclose(c->f);
	free(c->buf);
}

/* Splits text into at most max lines (copied into lines[i], without '\n').
 * Returns the number of lines; text must end with '\n'. */
static int split_lines(const char *text, char lines[][LINE_MAX_LEN], int max)
{
	int n = 0;

	while (*text) {
		const char *nl = strchr(text, '\n');
		assert_non_null(nl);
		assert_true(n < max);
		assert_true((size_t)(nl - text) < LINE_MAX_LEN);
		memcpy(lines[n], text, (size_t)(nl - text));
		lines[n][nl - text] = '\0';
		n++;
		text = nl + 1;
	}
	return n;
}

static void assert_starts_with(const char *s, const char *prefix)
{
	if (strncmp(s, prefix, strlen(prefix)) != 0)
		fail_msg("'%s' does not start with '%s'", s, prefix);
}

/* Keras' Progbar.update, verbose=1, width 30:
 *   numdigits = int(np.log10(self.target)) + 1
 *   bar = ('%' + str(numdigits) + 'd/%d [') % (current, self.target)
 *   prog_width = int(self.width * float(current) / self.target)
 *   if prog_width > 0:
 *       bar += '=' * (prog_width - 1)
 *       bar += '>' if current < self.target else '='
 *   bar += '.' * (self.width - prog_width) + ']' */
static void keras_bar(char *buf, size_t len, long current, long target)
{
	int numdigits = (int)log10((double)target) + 1;
	int prog_width = (int)(KERAS_WIDTH * ((double)current / (double)target));
	size_t n = (size_t)snprintf(buf, len, "%*ld/%ld [", numdigits, current, target);

	assert_true(n + KERAS_WIDTH + 2 <= len);
	if (prog_width > 0) {
		for (int i = 0; i < prog_width - 1; i++)
			buf[n++] = '=';
		buf[n++] = current < target ? '>' : '=';
	}
	for (int i = 0; i < KERAS_WIDTH - prog_width; i++)
		buf[n++] = '.';
	buf[n++] = ']';
	buf[n] = '\0';
}

/* compile(metrics=...): nothing, ["accuracy"], and four (the most a spec
 * holds), the last with the longest names Keras gives, to show a line
 * never runs out of room. progress reads only the names. */
static const struct loss_spec NO_METRICS = {.nmetrics = 0};
static const struct loss_spec ACCURACY = {.nmetrics = 1, .names = {"accuracy"}};
static const struct loss_spec FOUR_METRICS = {
    .nmetrics = 4,
    .names = {"accuracy", "mean_squared_error", "mean_absolute_error", "binary_accuracy"}};
static const struct loss_spec LONGEST_NAMES = {
    .nmetrics = 4,
    .names = {"sparse_categorical_accuracy", "categorical_accuracy", "mean_absolute_error",
              "mean_squared_error"}};

/* Metrics whose mean loss and accuracy are exactly loss and acc. */
static struct metrics metrics_of(double loss, double acc)
{
	return (struct metrics){.loss_sum = loss, .count = 1, .sums = {acc}};
}

static void test_keras_bar_port_matches_literal_keras_output(void **state)
{
	static const struct {
		long current, target;
		const char *bar;
	} cases[] = {
	    {7, 70, " 7/70 [==>...........................]"},
	    {70, 70, "70/70 [==============================]"},
	    {1, 70, " 1/70 [..............................]"},
	    {1, 1, "1/1 [==============================]"},
	    {5, 10, " 5/10 [==============>...............]"},
	    {99, 100, " 99/100 [============================>.]"},
	    {3, 1000, "   3/1000 [..............................]"},
	    {1000, 1000, "1000/1000 [==============================]"},
	};
	char bar[LINE_MAX_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		keras_bar(bar, sizeof(bar), cases[i].current, cases[i].target);
		assert_string_equal(bar, cases[i].bar);
	}
}

static void test_lines_mode_prints_the_epoch_header_and_one_keras_line(void **state)
{
	struct capture c;
	struct progress p;
	struct metrics run = {0};
	char lines[4][LINE_MAX_LEN];

	(void)state;
	capture_open(&c);
	progress_init(&p, c.f, 0, 0, 32, &ACCURACY);
	assert_int_equal(p.mode, PROGRESS_LINES);
	progress_epoch_begin(&p, 1, 3, 70, 0);
	for (long step = 1; step <= 70; step++) {
		run.loss_sum += 32 * 0.5123;
		run.sums[0] += 32 * 0.825;
		run.count += 32;
		progress_step(&p, step, step, &run);
	}
	progress_epoch_end(&p, 70, &run, NULL);

	/* No periodic lines without every: exactly the header and the end. */
	assert_int_equal(split_lines(capture_text(&c), lines, 4), 2);
	assert_string_equal(lines[0], "Epoch 1/3");
	testutil_assert_matches(lines[1], "^70/70 \\[={30}\\]" FINAL_TIME
	                                  " - loss: 0\\.5123 - accuracy: 0\\.8250$");
	capture_close(&c);
}

static void test_lines_mode_with_every_prints_partial_bars_with_an_eta(void **state)
{
	struct capture c;
	struct progress p;
	struct metrics run = {0}, val = metrics_of(0.61, 0.7812);
	char lines[16][LINE_MAX_LEN], bar[LINE_MAX_LEN];
	int n;

	(void)state;
	capture_open(&c);
	progress_init(&p, c.f, 0, 7, 32, &ACCURACY);
	progress_epoch_begin(&p, 2, 3, 70, 0);
	for (long step = 1; step <= 70; step++) {
		run.loss_sum += 32 * 0.25;
		run.sums[0] += 16;
		run.count += 32;
		progress_step(&p, step, 70 + step, &run);
	}
	progress_epoch_end(&p, 140, &run, &val);

	/* Steps 7, 14, ..., 63; step 70 is the epoch's own line. */
	n = split_lines(capture_text(&c), lines, 16);
	assert_int_equal(n, 1 + 9 + 1);
	assert_string_equal(lines[0], "Epoch 2/3");
	assert_starts_with(lines[1], " 7/70 [==>...........................] - ETA: ");
	for (int i = 1; i <= 9; i++) {
		keras_bar(bar, sizeof(bar), 7L * i, 70);
		assert_starts_with(lines[i], bar);
		testutil_assert_matches(lines[i] + strlen(bar),
		                        "^" ETA " - loss: 0\\.2500 - accuracy: 0\\.5000$");
	}
	testutil_assert_matches(lines[10], "^70/70 \\[={30}\\]" FINAL_TIME
	                                   " - loss: 0\\.2500 - accuracy: 0\\.5000"
	                                   " - val_loss: 0\\.6100 - val_accuracy: 0\\.7812$");
	capture_close(&c);
}

/* Every step of several epoch lengths, against the Progbar port: the digit
 * padding, where '>' sits and when the bar is full. */
static void test_bar_matches_keras_progbar_at_every_step(void **state)
{
	static const long targets[] = {1, 2, 3, 9, 10, 11, 70, 99, 100, 101, 469, 1000, 1875};
	struct metrics run = metrics_of(1.5, 0.5);
	char bar[LINE_MAX_LEN];

	(void)state;
	for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
		long target = targets[t];
		struct capture c;
		struct progress p;
		char *text;

		capture_open(&c);
		progress_init(&p, c.f, 0, 1, 32, &ACCURACY);
		progress_epoch_begin(&p, 1, 1, target, 0);
		for (long step = 1; step <= target; step++)
			progress_step(&p, step, step, &run);
		progress_epoch_end(&p, target, &run, NULL);
		text = capture_text(&c);
		assert_string_equal(strsep(&text, "\n"), "Epoch 1/1");
		for (long step = 1; step <= target; step++) {
			char *line = strsep(&text, "\n");
			assert_non_null(line);
			keras_bar(bar, sizeof(bar), step, target);
			assert_starts_with(line, bar);
			testutil_assert_matches(
			    line + strlen(bar),
			    step < target ? "^" ETA " - loss: 1\\.5000 - accuracy: 0\\.5000$"
			                  : "^" FINAL_TIME
			                    " - loss: 1\\.5000 - accuracy: 0\\.5000$");
		}
		assert_string_equal(text, "");
		capture_close(&c);
	}
}

static void test_metrics_print_four_decimals_or_scientific_when_tiny(void **state)
{
	static const struct {
		double v;
		const char *text;
	} cases[] = {
	    {0.5123, "0.5123"},     {2.302585, "2.3026"}, {123.45678, "123.4568"},
	    {1.0, "1.0000"},        {0.0011, "0.0011"},   {0.001, "1.0000e-03"},
	    {0.0005, "5.0000e-04"}, {1e-7, "1.0000e-07"}, {0.0, "0.0000e+00"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct capture c;
		struct progress p;
		struct metrics m = metrics_of(cases[i].v, cases[i].v);
		char want[128];
		const char *text;

		capture_open(&c);
		progress_init(&p, c.f, 0, 0, 32, &ACCURACY);
		progress_epoch_begin(&p, 1, 1, 5, 0);
		progress_epoch_end(&p, 5, &m, &m);
		text = capture_text(&c);
		snprintf(want, sizeof(want),
		         " - loss: %s - accuracy: %s - val_loss: %s - val_accuracy: %s\n",
		         cases[i].text, cases[i].text, cases[i].text, cases[i].text);
		assert_true(strlen(text) > strlen(want));
		assert_string_equal(text + strlen(text) - strlen(want), want);
		capture_close(&c);
	}
}

static void test_evaluate_prints_one_keras_line_with_test_metrics(void **state)
{
	struct capture c;
	struct progress p;
	struct metrics m = metrics_of(0.3456, 0.8765);
	char lines[2][LINE_MAX_LEN];

	(void)state;
	capture_open(&c);
	progress_init(&p, c.f, 0, 0, 64, &ACCURACY);
	progress_evaluate_end(&p, 157, &m);
	assert_int_equal(split_lines(capture_text(&c), lines, 2), 1);
	testutil_assert_matches(lines[0], "^157/157 \\[={30}\\]" FINAL_TIME
	                                  " - loss: 0\\.3456 - accuracy: 0\\.8765$");
	capture_close(&c);
}

/* The sums of ten thousand examples: loss 0.5123 and, in the spec's order,
 * 0.8210, 0.0123, 0.0005 (tiny: scientific) and 0.9375; for validation,
 * 0.6100 and 0.7812, 0.0250, 0.0003, 0.8750. */
static const struct metrics FOUR_RUN = {
    .loss_sum = 5123, .count = 10000, .sums = {8210, 123, 5, 9375}};
static const struct metrics FOUR_VAL = {
    .loss_sum = 6100, .count = 10000, .sums = {7812, 250, 3, 8750}};

/* compile() without metrics: Keras prints the loss alone, and so does a
 * progress given no spec. */
static void test_a_loss_without_metrics_prints_the_loss_alone(void **state)
{
	const struct loss_spec *specs[] = {&NO_METRICS, NULL};
	struct metrics run = metrics_of(0.5, 0.25), val = metrics_of(0.61, 0.75);

	(void)state;
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct capture c;
		struct progress p;
		char lines[4][LINE_MAX_LEN];

		capture_open(&c);
		progress_init(&p, c.f, 0, 2, 32, specs[i]);
		progress_epoch_begin(&p, 1, 1, 3, 0);
		for (long step = 1; step <= 3; step++)
			progress_step(&p, step, step, &run);
		progress_epoch_end(&p, 3, &run, &val);
		progress_evaluate_end(&p, 5, &val);
		assert_int_equal(split_lines(capture_text(&c), lines, 4), 4);
		testutil_assert_matches(lines[1], "^2/3 \\[=+>\\.+\\]" ETA " - loss: 0\\.5000$");
		testutil_assert_matches(lines[2], "^3/3 \\[={30}\\]" FINAL_TIME
		                                  " - loss: 0\\.5000 - val_loss: 0\\.6100$");
		testutil_assert_matches(lines[3],
		                        "^5/5 \\[={30}\\]" FINAL_TIME " - loss: 0\\.6100$");
		capture_close(&c);
	}
}

/* Several metrics follow the loss in compile()'s order, each by its name
 * and with its own sum, and again with val_ after the validation loss. */
static void test_several_metrics_print_in_order_by_their_names(void **state)
{
	struct capture c;
	struct progress p;
	const struct metrics *run = &FOUR_RUN, *val = &FOUR_VAL;
	char lines[4][LINE_MAX_LEN];

	(void)state;
	capture_open(&c);
	progress_init(&p, c.f, 0, 4, 32, &FOUR_METRICS);
	progress_epoch_begin(&p, 1, 2, 8, 0);
	for (long step = 1; step <= 8; step++)
		progress_step(&p, step, step, run);
	progress_epoch_end(&p, 8, run, val);
	progress_evaluate_end(&p, 3, val);
	assert_int_equal(split_lines(capture_text(&c), lines, 4), 4);
	testutil_assert_matches(lines[1],
	                        "^4/8 \\[=+>\\.+\\]" ETA " - loss: 0\\.5123 - accuracy: 0\\.8210"
	                        " - mean_squared_error: 0\\.0123"
	                        " - mean_absolute_error: 5\\.0000e-04"
	                        " - binary_accuracy: 0\\.9375$");
	testutil_assert_matches(lines[2], "^8/8 \\[={30}\\]" FINAL_TIME
	                                  " - loss: 0\\.5123 - accuracy: 0\\.8210"
	                                  " - mean_squared_error: 0\\.0123"
	                                  " - mean_absolute_error: 5\\.0000e-04"
	                                  " - binary_accuracy: 0\\.9375"
	                                  " - val_loss: 0\\.6100 - val_accuracy: 0\\.7812"
	                                  " - val_mean_squared_error: 0\\.0250"
	                                  " - val_mean_absolute_error: 3\\.0000e-04"
	                                  " - val_binary_accuracy: 0\\.8750$");
	testutil_assert_matches(lines[3], "^3/3 \\[={30}\\]" FINAL_TIME
	                                  " - loss: 0\\.6100 - accuracy: 0\\.7812"
	                                  " - mean_squared_error: 0\\.0250"
	                                  " - mean_absolute_error: 3\\.0000e-04"
	                                  " - binary_accuracy: 0\\.8750$");
	capture_close(&c);
}

/* The longest line there can be: four metrics with the longest names, and
 * their val_ twins, after a six-digit bar. It is printed whole. */
static void test_the_longest_line_is_printed_whole(void **state)
{
	struct capture c;
	struct progress p;
	const struct metrics *run = &FOUR_RUN;
	char lines[2][LINE_MAX_LEN];

	(void)state;
	capture_open(&c);
	progress_init(&p, c.f, 0, 0, 32, &LONGEST_NAMES);
	progress_epoch_begin(&p, 100, 100, 999999, 0);
	progress_epoch_end(&p, 99999900, run, run);
	assert_int_equal(split_lines(capture_text(&c), lines, 2), 2);
	testutil_assert_matches(lines[1],
	                        "^999999/999999 \\[={30}\\]" FINAL_TIME
	                        " - loss: 0\\.5123 - sparse_categorical_accuracy: 0\\.8210"
	                        " - categorical_accuracy: 0\\.0123"
	                        " - mean_absolute_error: 5\\.0000e-04"
	                        " - mean_squared_error: 0\\.9375"
	                        " - val_loss: 0\\.5123"
	                        " - val_sparse_categorical_accuracy: 0\\.8210"
	                        " - val_categorical_accuracy: 0\\.0123"
	                        " - val_mean_absolute_error: 5\\.0000e-04"
	                        " - val_mean_squared_error: 0\\.9375$");
	capture_close(&c);
}

/* compile(metrics=["accuracy"]) resolves to the sparse categorical
 * accuracy for integer labels, and Keras still shows it as "accuracy";
 * asked for by its own name, it shows that name. */
static void test_a_metric_shows_the_name_it_was_asked_for(void **state)
{
	static const struct {
		enum metric_kind asked;
		const char *shows;
	} cases[] = {
	    {METRIC_ACCURACY, "accuracy"},
	    {METRIC_SPARSE_CATEGORICAL_ACCURACY, "sparse_categorical_accuracy"},
	};
	const struct loss_config lc = {LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
	struct metrics m = metrics_of(0.25, 0.5);
	char err[ERR_LEN], want[128];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct loss_spec spec;
		struct capture c;
		struct progress p;
		const char *text;

		assert_int_equal(loss_resolve(&spec, &lc, 1, 10, 1, &cases[i].asked, 1, err), 0);
		assert_int_equal(spec.metrics[0], METRIC_SPARSE_CATEGORICAL_ACCURACY);
		capture_open(&c);
		progress_init(&p, c.f, 0, 0, 32, &spec);
		progress_evaluate_end(&p, 1, &m);
		text = capture_text(&c);
		snprintf(want, sizeof(want), " - loss: 0.2500 - %s: 0.5000\n", cases[i].shows);
		assert_true(strlen(text) > strlen(want));
		assert_string_equal(text + strlen(text) - strlen(want), want);
		capture_close(&c);
	}
}

static void assert_event(const cJSON *o, const char *event)
{
	assert_string_equal(testutil_json_string(o, "event"), event);
}

/* The timing fields exist and are sane; their values depend on the machine. */
static void assert_timing_fields(const cJSON *o)
{
	assert_true(testutil_json_number(o, "seconds") >= 0);
	assert_true(testutil_json_number(o, "ms_per_step") >= 0);
	assert_true(testutil_json_number(o, "samples_per_sec") >= 0);
}

static void test_json_mode_prints_step_and_epoch_objects_only(void **state)
{
	struct capture c;
	struct progress p;
	struct metrics run = {0}, at5 = {0}, val = metrics_of(0.75, 0.625);
	char lines[4][LINE_MAX_LEN];
	cJSON *o;

	(void)state;
	capture_open(&c);
	progress_init(&p, c.f, 1, 5, 32, &ACCURACY);
	assert_int_equal(p.mode, PROGRESS_JSON);
	progress_epoch_begin(&p, 2, 4, 10, 0);
	for (long step = 1; step <= 10; step++) {
		run.loss_sum += 32 * (1.0 / step);
		run.sums[0] += step;
		run.count += 32;
		if (step == 5)
			at5 = run;
		progress_step(&p, step, 10 + step, &run);
	}
	progress_epoch_end(&p, 20, &run, &val);

	/* No "Epoch 2/4" text, one step object at 5 and the epoch object. */
	assert_int_equal(split_lines(capture_text(&c), lines, 4), 2);

	o = testutil_json_object(lines[0]);
	assert_event(o, "step");
	assert_true(testutil_json_number(o, "epoch") == 2);
	assert_true(testutil_json_number(o, "epochs") == 4);
	assert_true(testutil_json_number(o, "step") == 5);
	assert_true(testutil_json_number(o, "steps") == 10);
	assert_true(testutil_json_number(o, "global_step") == 15);
	assert_true(testutil_json_number(o, "loss") == metrics_loss(&at5));
	assert_true(testutil_json_number(o, "accuracy") == metrics_mean(&at5, 0));
	assert_true(testutil_json_number(o, "examples") == 160);
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "val_loss"));
	assert_timing_fields(o);
	cJSON_Delete(o);

	o = testutil_json_object(lines[1]);
	assert_event(o, "epoch");
	assert_true(testutil_json_number(o, "epoch") == 2);
	assert_true(testutil_json_number(o, "step") == 10);
	assert_true(testutil_json_number(o, "steps") == 10);
	assert_true(testutil_json_number(o, "global_step") == 20);
	assert_true(testutil_json_number(o, "loss") == metrics_loss(&run));
	assert_true(testutil_json_number(o, "accuracy") == metrics_mean(&run, 0));
	assert_true(testutil_json_number(o, "val_loss") == 0.75);
	assert_true(testutil_json_number(o, "val_accuracy") == 0.625);
	assert_true(testutil_json_number(o, "examples") == 320);
	assert_timing_fields(o);
	cJSON_Delete(o);
	capture_close(&c);
}

static void test_json_epoch_without_validation_has_no_val_fields(void **state)
{
	struct capture c;
	struct progress p;
	struct metrics run = metrics_of(0.5, 0.25);
	char lines[2][LINE_MAX_LEN];
	cJSON *o;

	(void)state;
	capture_open(&c);
	progress_init(&p, c.f, 1, 0, 32, &ACCURACY);
	progress_epoch_begin(&p, 1, 1, 3, 0);
	for (long step = 1; step <= 3; step++)
		progress_step(&p, step, step, &run);
	progress_epoch_end(&p, 3, &run, NULL);
	assert_int_equal(split_lines(capture_text(&c), lines, 2), 1);
	o = testutil_json_object(lines[0]);
	assert_event(o, "epoch");
	assert_true(testutil_json_number(o, "loss") == 0.5);
	assert_true(testutil_json_number(o, "accuracy") == 0.25);
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "val_loss"));
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "val_accuracy"));
	cJSON_Delete(o);
	capture_close(&c);
}

static void test_json_evaluate_prints_one_evaluate_object(void **state)
{
	struct capture c;
	struct progress p;
	struct metrics m = {.loss_sum = 3456.0, .count = 10000, .sums = {8765}};
	char lines[2][LINE_MAX_LEN];
	cJSON *o;

	(void)state;
	capture_open(&c);
	progress_init(&p, c.f, 1, 0, 64, &ACCURACY);
	progress_evaluate_end(&p, 157, &m);
	assert_int_equal(split_lines(capture_text(&c), lines, 2), 1);
	o = testutil_json_object(lines[0]);
	assert_event(o, "evaluate");
	assert_true(testutil_json_number(o, "steps") == 157);
	assert_true(testutil_json_number(o, "loss") == metrics_loss(&m));
	assert_true(testutil_json_number(o, "accuracy") == 0.8765);
	assert_true(testutil_json_number(o, "examples") == 10000);
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "epoch"));
	assert_timing_fields(o);
	cJSON_Delete(o);
	capture_close(&c);
}

/* Every member of o is one of the names in keys (n of them). */
static void assert_only_keys(const cJSON *o, const char *const *keys, size_t n)
{
	const cJSON *item;

	cJSON_ArrayForEach(item, o)
	{
		size_t k = 0;
		while (k < n && strcmp(item->string, keys[k]) != 0)
			k++;
		if (k == n)
			fail_msg("unexpected member '%s'", item->string);
	}
}

static void test_json_without_metrics_has_the_loss_alone(void **state)
{
	static const char *const keys[] = {
	    "event", "epoch",    "epochs",   "step",    "steps",       "global_step",
	    "loss",  "val_loss", "examples", "seconds", "ms_per_step", "samples_per_sec",
	};
	struct capture c;
	struct progress p;
	struct metrics run = metrics_of(0.5, 0.25), val = metrics_of(0.75, 0.5);
	char lines[3][LINE_MAX_LEN];

	(void)state;
	capture_open(&c);
	progress_init(&p, c.f, 1, 1, 32, &NO_METRICS);
	progress_epoch_begin(&p, 1, 1, 2, 0);
	for (long step = 1; step <= 2; step++)
		progress_step(&p, step, step, &run);
	progress_epoch_end(&p, 2, &run, &val);
	progress_evaluate_end(&p, 4, &val);
	assert_int_equal(split_lines(capture_text(&c), lines, 3), 3);
	for (int i = 0; i < 3; i++) {
		cJSON *o = testutil_json_object(lines[i]);
		assert_only_keys(o, keys, sizeof(keys) / sizeof(keys[0]));
		assert_true(testutil_json_number(o, "loss") == (i < 2 ? 0.5 : 0.75));
		cJSON_Delete(o);
	}
	cJSON *o = testutil_json_object(lines[1]);
	assert_true(testutil_json_number(o, "val_loss") == 0.75);
	cJSON_Delete(o);
	capture_close(&c);
}

/* JSON keys are Keras' history keys: each metric's name, "val_" and it. */
static void test_json_names_every_metric_as_keras_history_does(void **state)
{
	struct capture c;
	struct progress p;
	const struct metrics *run = &FOUR_RUN, *val = &FOUR_VAL;
	char lines[3][LINE_MAX_LEN], key[64];

	(void)state;
	capture_open(&c);
	progress_init(&p, c.f, 1, 1, 32, &FOUR_METRICS);
	progress_epoch_begin(&p, 1, 1, 2, 0);
	progress_step(&p, 1, 1, run);
	progress_epoch_end(&p, 2, run, val);
	progress_evaluate_end(&p, 4, val);
	assert_int_equal(split_lines(capture_text(&c), lines, 3), 3);
	for (int l = 0; l < 3; l++) {
		cJSON *o = testutil_json_object(lines[l]);
		const struct metrics *m = l < 2 ? run : val;
		assert_true(testutil_json_number(o, "loss") == metrics_loss(m));
		for (int i = 0; i < FOUR_METRICS.nmetrics; i++) {
			assert_true(testutil_json_number(o, FOUR_METRICS.names[i]) ==
			            metrics_mean(m, i));
			snprintf(key, sizeof(key), "val_%s", FOUR_METRICS.names[i]);
			if (l == 1)
				assert_true(testutil_json_number(o, key) == metrics_mean(val, i));
			else
				assert_null(cJSON_GetObjectItemCaseSensitive(o, key));
		}
		cJSON_Delete(o);
	}
	capture_close(&c);
}

/* Reads what the terminal received until it holds want_newlines '\n's or
 * 5 s pass. */
static size_t read_pty(int master, char *buf, size_t cap, int want_newlines)
{
	size_t len = 0;
	int newlines = 0;

	while (newlines < want_newlines && len + 1 < cap) {
		struct pollfd pfd = {.fd = master, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, 5000) <= 0)
			break;
		n = read(master, buf + len, cap - 1 - len);
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			newlines += buf[len + (size_t)i] == '\n';
		len += (size_t)n;
	}
	buf[len] = '\0';
	return len;
}

static void test_terminal_mode_redraws_the_bar_in_place(void **state)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY);
	struct termios tio;
	struct progress p;
	struct metrics run = metrics_of(0.25, 0.5);
	const struct timespec wait = {0, 60L * 1000 * 1000};
	char buf[4096], bar[LINE_MAX_LEN];
	FILE *tty;
	char *s;
	int slave;

	(void)state;
	if (master < 0)
		skip();
	assert_int_equal(grantpt(master), 0);
	assert_int_equal(unlockpt(master), 0);
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	assert_true(slave >= 0);
	/* Raw, so that the terminal passes '\n' through as it is written. */
	assert_int_equal(tcgetattr(slave, &tio), 0);
	cfmakeraw(&tio);
	assert_int_equal(tcsetattr(slave, TCSANOW, &tio), 0);
	tty = fdopen(slave, "w");
	assert_non_null(tty);

	progress_init(&p, tty, 0, 0, 32, &ACCURACY);
	assert_int_equal(p.mode, PROGRESS_BAR);
	progress_epoch_begin(&p, 1, 1, 70, 0);
	/* More than 50 ms since the last draw, so step 7 must be drawn. */
	nanosleep(&wait, NULL);
	progress_step(&p, 7, 7, &run);
	progress_epoch_end(&p, 70, &run, NULL);
	read_pty(master, buf, sizeof(buf), 2);

	s = buf;
	assert_string_equal(strsep(&s, "\n"), "Epoch 1/1");
	assert_non_null(s);
	/* Each draw returns to the line start and clears what is left of it;
	 * only the final one ends the line. */
	keras_bar(bar, sizeof(bar), 7, 70);
	assert_true(s[0] == '\r');
	assert_starts_with(s + 1, bar);
	testutil_assert_matches(s + 1 + strlen(bar),
	                        "^" ETA " - loss: 0\\.2500 - accuracy: 0\\.5000"
	                        "\033\\[K\r70/70 \\[={30}\\]" FINAL_TIME
	                        " - loss: 0\\.2500 - accuracy: 0\\.5000\033\\[K\n$");
	fclose(tty);
	close(master);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_keras_bar_port_matches_literal_keras_output),
	    cmocka_unit_test(test_lines_mode_prints_the_epoch_header_and_one_keras_line),
	    cmocka_unit_test(test_lines_mode_with_every_prints_partial_bars_with_an_eta),
	    cmocka_unit_test(test_bar_matches_keras_progbar_at_every_step),
	    cmocka_unit_test(test_metrics_print_four_decimals_or_scientific_when_tiny),
	    cmocka_unit_test(test_evaluate_prints_one_keras_line_with_test_metrics),
	    cmocka_unit_test(test_a_loss_without_metrics_prints_the_loss_alone),
	    cmocka_unit_test(test_several_metrics_print_in_order_by_their_names),
	    cmocka_unit_test(test_the_longest_line_is_printed_whole),
	    cmocka_unit_test(test_a_metric_shows_the_name_it_was_asked_for),
	    cmocka_unit_test(test_json_mode_prints_step_and_epoch_objects_only),
	    cmocka_unit_test(test_json_epoch_without_validation_has_no_val_fields),
	    cmocka_unit_test(test_json_evaluate_prints_one_evaluate_object),
	    cmocka_unit_test(test_json_without_metrics_has_the_loss_alone),
	    cmocka_unit_test(test_json_names_every_metric_as_keras_history_does),
	    cmocka_unit_test(test_terminal_mode_redraws_the_bar_in_place),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
