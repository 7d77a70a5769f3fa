/* test_training.c - a chief's training report: what is taken (and what is
 * derived from it), every way a report is refused, status.training read
 * back from a status a user may have edited, its merge patch, and the ETA
 * written as kubectl writes a duration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "json_doc.h"
#include "training.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define NOW          "2026-12-03T08:00:00Z"

/* Test documents write ' for ", as json_doc_parse() reads them. */
static void swap_quotes(char *s)
{
	for (; *s; s++)
		if (*s == '\'')
			*s = '"';
}

static int parse(struct training_status *t, const char *doc, char *err)
{
	char text[TRAINING_REPORT_MAX + 64];

	snprintf(text, sizeof(text), "%s", doc);
	swap_quotes(text);
	return training_report_parse(t, text, strlen(text), NOW, err);
}

#define FULL_REPORT                                                                                \
	"{'training': {'epoch': 2, 'epochs': 5, 'step': 120, 'stepsPerEpoch': 469,"                \
	" 'globalStep': 589, 'totalSteps': 2345, 'loss': 0.41234567891,"                           \
	" 'metrics': {'accuracy': 0.861}, 'validation': {'loss': 0.45, 'accuracy': 0.84},"         \
	" 'samplesPerSecond': 1830.5, 'estimatedSecondsLeft': 250, 'lastBackupStep': 469,"         \
	" 'learningRate': 0.001}}"

static void test_a_full_report_becomes_the_status_with_percent_and_eta(void **state)
{
	struct training_status t;
	char err[ERR_LEN] = "";
	cJSON *o;

	(void)state;
	assert_int_equal(parse(&t, FULL_REPORT, err), 0);
	o = training_status_to_json(&t);
	/* 589 of 2345 steps is 25%; 250 s is 4m10s; the loss is kept to six
	 * significant digits. */
	json_doc_assert_equal(
	    o, "{'epoch': 2, 'epochs': 5, 'step': 120, 'stepsPerEpoch': 469,"
	       " 'globalStep': 589, 'totalSteps': 2345, 'percent': 25, 'progress': '25%',"
	       " 'loss': 0.412346, 'metrics': {'accuracy': 0.861},"
	       " 'validation': {'loss': 0.45, 'accuracy': 0.84},"
	       " 'samplesPerSecond': 1830.5, 'estimatedSecondsLeft': 250,"
	       " 'eta': '4m10s', 'lastBackupStep': 469, 'learningRate': 0.001,"
	       " 'reportTime': '" NOW "'}");
	cJSON_Delete(o);
}

static void test_a_report_of_the_global_step_alone_is_taken(void **state)
{
	struct training_status t;
	char err[ERR_LEN] = "";
	cJSON *o;

	(void)state;
	/* A null loss is a NaN the worker could not write in JSON. */
	assert_int_equal(
	    parse(&t, "{'training': {'globalStep': 7, 'loss': null, 'future': 1}}", err), 0);
	o = training_status_to_json(&t);
	json_doc_assert_equal(o, "{'globalStep': 7, 'reportTime': '" NOW "'}");
	cJSON_Delete(o);
}

static void test_a_loss_may_be_negative_a_rate_may_not(void **state)
{
	struct training_status t;
	char err[ERR_LEN] = "";

	(void)state;
	assert_int_equal(parse(&t, "{'training': {'globalStep': 1, 'loss': -0.93}}", err), 0);
	assert_true(t.has_loss);
	assert_true(t.loss < -0.92);
	assert_int_equal(parse(&t, "{'training': {'globalStep': 1, 'samplesPerSecond': -2}}", err),
	                 -1);
	assert_string_equal(err, "'training.samplesPerSecond' must be 0 or more");
}

static void test_every_bad_report_is_refused_saying_why(void **state)
{
	static const struct {
		const char *doc, *want;
	} cases[] = {
	    {"[1]", "a report must be a JSON object"},
	    {"{'training': 1}", "'training' must be an object"},
	    {"{}", "'training' is missing"},
	    {"{'training': {}}", "'training.globalStep' is missing"},
	    {"{'training': {'globalStep': -1}}", "'training.globalStep' is out of range"},
	    {"{'training': {'globalStep': 1.5}}", "'training.globalStep' must be an integer"},
	    {"{'training': {'globalStep': 10, 'totalSteps': 9}}",
	     "'training.globalStep' 10 is beyond 'training.totalSteps' 9"},
	    {"{'training': {'globalStep': 1, 'epoch': 6, 'epochs': 5}}",
	     "'training.epoch' 6 is beyond 'training.epochs' 5"},
	    {"{'training': {'globalStep': 1, 'epoch': 0}}", "'training.epoch' is out of range"},
	    {"{'training': {'globalStep': 5, 'lastBackupStep': 6}}",
	     "'training.lastBackupStep' 6 is beyond 'training.globalStep' 5"},
	    {"{'training': {'globalStep': 1, 'loss': 'low'}}", "'training.loss' must be a number"},
	    {"{'training': {'globalStep': 1, 'metrics': [1]}}",
	     "'training.metrics' must be an object of names to numbers"},
	    {"{'training': {'globalStep': 1, 'metrics': {'a b': 1}}}",
	     "'training.metrics': a metric name must be 1 to 63 of [A-Za-z0-9_.:-]"},
	    {"{'training': {'globalStep': 1, 'metrics': {'acc': 'high'}}}",
	     "'training.metrics.acc' must be a number"},
	    {"{'training': {'globalStep': 1, 'validation': {'acc': 1, 'acc': 2}}}",
	     "'training.validation.acc' appears twice"},
	    {"{'training': {'globalStep': 1", "invalid JSON"},
	};
	struct training_status t;
	char err[ERR_LEN];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		err[0] = '\0';
		if (parse(&t, cases[i].doc, err) != -1)
			fail_msg("%s: taken", cases[i].doc);
		if (strstr(err, cases[i].want) == NULL)
			fail_msg("%s: said '%s', not '%s'", cases[i].doc, err, cases[i].want);
		assert_false(t.present);
	}
}

static void test_a_report_over_the_caps_is_refused(void **state)
{
	char doc[TRAINING_REPORT_MAX + 64], name[80];
	struct training_status t;
	char err[ERR_LEN] = "";
	size_t n;

	(void)state;
	/* Too many metrics. */
	n = (size_t)snprintf(doc, sizeof(doc), "{'training': {'globalStep': 1, 'metrics': {");
	for (int i = 0; i <= TRAINING_METRICS_MAX; i++)
		n += (size_t)snprintf(doc + n, sizeof(doc) - n, "%s'm%d': %d", i ? ", " : "", i, i);
	snprintf(doc + n, sizeof(doc) - n, "}}}");
	assert_int_equal(parse(&t, doc, err), -1);
	assert_string_equal(err, "'training.metrics' holds more than 16 metrics");
	/* A name of 64 characters. */
	memset(name, 'x', 64);
	name[64] = '\0';
	snprintf(doc, sizeof(doc), "{'training': {'globalStep': 1, 'metrics': {'%s': 1}}}", name);
	assert_int_equal(parse(&t, doc, err), -1);
	/* A body over the size cap, whatever it holds. */
	memset(doc, ' ', TRAINING_REPORT_MAX + 1);
	assert_int_equal(training_report_parse(&t, doc, TRAINING_REPORT_MAX + 1, NOW, err), -1);
	assert_string_equal(err, "a report of 16385 bytes is over the 16384-byte limit");
}

static void test_the_status_reads_back_what_was_written(void **state)
{
	struct training_status t, back;
	char err[ERR_LEN] = "";
	cJSON *o, *again;

	(void)state;
	assert_int_equal(parse(&t, FULL_REPORT, err), 0);
	o = training_status_to_json(&t);
	training_status_parse(&back, o);
	again = training_status_to_json(&back);
	assert_true(cJSON_Compare(o, again, 1));
	cJSON_Delete(o);
	cJSON_Delete(again);
}

static void test_an_edited_status_keeps_what_still_reads(void **state)
{
	cJSON *o = json_doc_parse("{'globalStep': 'ten', 'totalSteps': 20, 'loss': 0.5,"
	                          " 'metrics': {'bad name': 1, 'acc': 0.5, 'x': 'y'}}");
	struct training_status t;
	cJSON *back;

	(void)state;
	training_status_parse(&t, o);
	back = training_status_to_json(&t);
	json_doc_assert_equal(back, "{'totalSteps': 20, 'loss': 0.5, 'metrics': {'acc': 0.5}}");
	cJSON_Delete(back);
	cJSON_Delete(o);
}

static void test_a_new_report_patches_the_job_status(void **state)
{
	struct job_status old, new;
	char err[ERR_LEN] = "";
	cJSON *patch, *training;

	(void)state;
	job_status_parse(&old, NULL, 0);
	job_status_parse(&new, NULL, 0);
	assert_null(job_status_patch(&old, &new));
	assert_int_equal(parse(&new.training, FULL_REPORT, err), 0);
	patch = job_status_patch(&old, &new);
	assert_non_null(patch);
	training = cJSON_GetObjectItem(cJSON_GetObjectItem(patch, "status"), "training");
	assert_int_equal(cJSON_GetObjectItem(training, "percent")->valueint, 25);
	cJSON_Delete(patch);
	/* A later report without validation metrics removes them. */
	old.training = new.training;
	assert_int_equal(
	    parse(&new.training, "{'training': {'globalStep': 600, 'totalSteps': 2345}}", err), 0);
	patch = job_status_patch(&old, &new);
	training = cJSON_GetObjectItem(cJSON_GetObjectItem(patch, "status"), "training");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(training, "validation")));
	cJSON_Delete(patch);
	job_status_release(&old);
	job_status_release(&new);
}

static void test_the_eta_reads_as_kubectl_writes_an_age(void **state)
{
	static const struct {
		long long s;
		const char *want;
	} cases[] = {
	    {0, "0s"},         {119, "119s"},  {120, "2m"},      {250, "4m10s"},
	    {599, "9m59s"},    {600, "10m"},   {10799, "179m"},  {10800, "3h"},
	    {11100, "3h5m"},   {28800, "8h"},  {172799, "47h"},  {172800, "2d"},
	    {176400, "2d1h"},  {691200, "8d"}, {63072000, "2y"}, {63158400, "2y1d"},
	    {252288000, "8y"}, {-1, ""},
	};
	char out[TRAINING_ETA_LEN];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		training_format_eta(cases[i].s, out);
		if (strcmp(out, cases[i].want) != 0)
			fail_msg("%lld s: '%s', not '%s'", cases[i].s, out, cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_full_report_becomes_the_status_with_percent_and_eta),
	    cmocka_unit_test(test_a_report_of_the_global_step_alone_is_taken),
	    cmocka_unit_test(test_a_loss_may_be_negative_a_rate_may_not),
	    cmocka_unit_test(test_every_bad_report_is_refused_saying_why),
	    cmocka_unit_test(test_a_report_over_the_caps_is_refused),
	    cmocka_unit_test(test_the_status_reads_back_what_was_written),
	    cmocka_unit_test(test_an_edited_status_keeps_what_still_reads),
	    cmocka_unit_test(test_a_new_report_patches_the_job_status),
	    cmocka_unit_test(test_the_eta_reads_as_kubectl_writes_an_age),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
