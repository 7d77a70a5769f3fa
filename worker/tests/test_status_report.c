/* test_status_report.c - what the chief reports: a snapshot of its
 * counters as the operator's report (controller/training.h), with what is
 * unknown left out rather than sent as a lie (no loss before a step, a
 * NaN loss, no estimate yet, no backup yet), and a position that the
 * operator's checks accept (a step within its epoch, within the run). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "status_report.h"

static void assert_body(const struct worker_metrics_snapshot *s, const char *want)
{
	cJSON *got = status_report_body(s), *w = json_parse(want, strlen(want), NULL);
	char *g = cJSON_PrintUnformatted(got);

	assert_non_null(w);
	if (!cJSON_Compare(got, w, 1))
		fail_msg("got  %s\nwant %s", g, want);
	free(g);
	cJSON_Delete(got);
	cJSON_Delete(w);
}

static struct worker_metrics_snapshot mid_run(void)
{
	struct worker_metrics_snapshot s;

	memset(&s, 0, sizeof(s));
	s.epochs = 3;
	s.steps_per_epoch = 100;
	s.total_steps = 300;
	s.learning_rate = 0.001;
	s.nmetrics = 1;
	strcpy(s.names[0], "accuracy");
	s.epoch = 2;
	s.step = 20;
	s.global_step = 120;
	s.loss = 0.5;
	s.metrics[0] = 0.75;
	s.have_validation = 1;
	s.val_loss = 0.625;
	s.val_metrics[0] = 0.8;
	s.last_backup_step = 100;
	s.steps_done = 20;
	s.samples_per_second = 1024;
	s.seconds_left = 89.6;
	return s;
}

static void test_a_snapshot_mid_run_is_reported_whole(void **state)
{
	struct worker_metrics_snapshot s = mid_run();

	(void)state;
	assert_body(&s, "{\"training\": {\"epochs\": 3, \"epoch\": 2, \"stepsPerEpoch\": 100, "
	                "\"step\": 20, \"globalStep\": 120, \"totalSteps\": 300, \"loss\": 0.5, "
	                "\"metrics\": {\"accuracy\": 0.75}, \"validation\": {\"loss\": 0.625, "
	                "\"accuracy\": 0.8}, \"samplesPerSecond\": 1024, "
	                "\"estimatedSecondsLeft\": 90, \"lastBackupStep\": 100, "
	                "\"learningRate\": 0.001}}");
}

static void test_what_is_not_known_yet_is_left_out(void **state)
{
	struct worker_metrics_snapshot s = mid_run();

	(void)state;
	/* Restored from a backup, no step done yet in this process. */
	s.steps_done = 0;
	s.have_validation = 0;
	s.seconds_left = WORKER_METRICS_NONE;
	s.last_backup_step = WORKER_METRICS_NONE;
	s.epoch = 0;
	assert_body(&s, "{\"training\": {\"epochs\": 3, \"stepsPerEpoch\": 100, \"step\": 20, "
	                "\"globalStep\": 120, \"totalSteps\": 300, \"learningRate\": 0.001}}");
}

static void test_a_diverged_loss_is_not_sent_as_a_number(void **state)
{
	struct worker_metrics_snapshot s = mid_run();
	cJSON *body;

	(void)state;
	s.loss = NAN;
	s.val_loss = INFINITY;
	s.val_metrics[0] = NAN;
	body = status_report_body(&s);
	assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(body, "training"), "loss"));
	assert_null(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(body, "training"), "validation"), "loss"));
	cJSON_Delete(body);
}

static void test_a_position_beyond_the_plan_is_not_claimed(void **state)
{
	struct worker_metrics_snapshot s = mid_run();
	cJSON *body, *t;

	(void)state;
	/* A backup of a longer run resumed with fewer epochs: the global step
	 * is past the plan, and the operator would refuse the whole report. */
	s.global_step = 400;
	s.step = 120;
	s.epoch = 4;
	body = status_report_body(&s);
	t = cJSON_GetObjectItem(body, "training");
	assert_null(cJSON_GetObjectItem(t, "totalSteps"));
	assert_null(cJSON_GetObjectItem(t, "step"));
	assert_null(cJSON_GetObjectItem(t, "epoch"));
	assert_int_equal(cJSON_GetObjectItem(t, "globalStep")->valueint, 400);
	cJSON_Delete(body);
}

static void test_no_environment_means_no_reporter(void **state)
{
	(void)state;
	unsetenv("MWJ_STATUS_URL");
	unsetenv("MWJ_STATUS_CA_FILE");
	unsetenv("MWJ_STATUS_TOKEN_FILE");
	assert_null(status_report_start(NULL));
	/* Part of it is not enough, and plain HTTP never. */
	setenv("MWJ_STATUS_URL", "https://op:8443/x", 1);
	assert_null(status_report_start(NULL));
	setenv("MWJ_STATUS_CA_FILE", "/ca", 1);
	setenv("MWJ_STATUS_TOKEN_FILE", "/token", 1);
	setenv("MWJ_STATUS_URL", "http://op:8443/x", 1);
	assert_null(status_report_start(NULL));
	unsetenv("MWJ_STATUS_URL");
	unsetenv("MWJ_STATUS_CA_FILE");
	unsetenv("MWJ_STATUS_TOKEN_FILE");
	status_report_kick(NULL);
	status_report_stop(NULL, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_snapshot_mid_run_is_reported_whole),
	    cmocka_unit_test(test_what_is_not_known_yet_is_left_out),
	    cmocka_unit_test(test_a_diverged_loss_is_not_sent_as_a_number),
	    cmocka_unit_test(test_a_position_beyond_the_plan_is_not_claimed),
	    cmocka_unit_test(test_no_environment_means_no_reporter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
