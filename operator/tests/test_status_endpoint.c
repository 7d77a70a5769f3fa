/* test_status_endpoint.c - a chief's report end to end through the
 * endpoint, with a fake API server answering TokenReviews as the real one
 * does: the chief's report is kept; another worker, another job's pod, a
 * bad or missing token, a wrong path or method, a bad body, a flood, and
 * a standby replica are each refused with the API server's Status, and
 * change nothing; a token is reviewed once however often it reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "report_world.h"
#include "status_endpoint.h"

#define URL    REPORT_WORLD_PATH
#define REPORT "{\"training\": {\"globalStep\": 40, \"totalSteps\": 100, \"loss\": 0.5}}"

/* The world the endpoint sees (report_world.h), and what was reported. */
struct world {
	struct report_world_api api; /* counts the TokenReviews it answers */
	struct reports reports;
	struct status_endpoint e;
	int reported;   /* reports passed on */
	long long step; /* the last one's global step */
	int active;     /* this replica leads */
};

static void take_report(void *ctx, const char *key, const char *uid,
                        const struct training_status *t)
{
	struct world *w = ctx;

	assert_string_equal(key, "ml/mnist");
	assert_string_equal(uid, "job-uid");
	w->reported++;
	w->step = t->global_step;
}

static int leads(void *ctx)
{
	return ((struct world *)ctx)->active;
}

static struct world *world_new(void)
{
	struct world *w = calloc(1, sizeof(*w));
	struct status_sources src = {
	    .job = report_world_job, .pod = report_world_pods, .report = take_report};

	report_world_api_init(&w->api);
	w->active = 1;
	reports_init(&w->reports, 5000);
	src.reports = &w->reports;
	src.ctx = w;
	status_endpoint_init_sources(&w->e, &src, &w->api.api, NULL);
	w->e.active = leads;
	w->e.active_ctx = w;
	return w;
}

static void world_free(struct world *w)
{
	status_endpoint_release(&w->e);
	reports_release(&w->reports);
	free(w);
}

/* One request; returns the status, and the body's reason and message
 * into reason, message (may be NULL). */
static unsigned int post(struct world *w, const char *method, const char *url, const char *auth,
                         const char *body, char *reason, char *message, int *retry_after)
{
	struct status_reply out;
	cJSON *status;

	status_endpoint_handle(&w->e, method, url, auth, body, strlen(body), &out);
	status = json_parse(out.body, strlen(out.body), NULL);
	assert_non_null(status);
	assert_string_equal(cJSON_GetObjectItem(status, "kind")->valuestring, "Status");
	assert_int_equal(cJSON_GetObjectItem(status, "code")->valueint, out.status);
	if (reason != NULL)
		snprintf(reason, 64, "%s",
		         cJSON_IsString(cJSON_GetObjectItem(status, "reason"))
		             ? cJSON_GetObjectItem(status, "reason")->valuestring
		             : "");
	if (message != NULL)
		snprintf(message, 1024, "%s",
		         cJSON_IsString(cJSON_GetObjectItem(status, "message"))
		             ? cJSON_GetObjectItem(status, "message")->valuestring
		             : "");
	if (retry_after != NULL)
		*retry_after = out.retry_after_s;
	cJSON_Delete(status);
	free(out.body);
	return out.status;
}

static void test_the_chiefs_report_is_taken(void **state)
{
	struct world *w = world_new();

	(void)state;
	assert_int_equal(post(w, "POST", URL, "Bearer chief", REPORT, NULL, NULL, NULL), 200);
	assert_int_equal(w->reported, 1);
	assert_int_equal(w->step, 40);
	world_free(w);
}

static void test_every_refusal_says_what_the_api_server_would_and_changes_nothing(void **state)
{
	static const struct {
		const char *name, *method, *url, *auth, *body;
		unsigned int want;
		const char *reason, *message;
	} cases[] = {
	    {"worker 1", "POST", URL, "Bearer worker1", REPORT, 403, "Forbidden",
	     "pod 'mnist-worker-1' is worker 1 of job 'mnist', not its chief: may not report the "
	     "training of job 'mnist'"},
	    {"another job's chief", "POST", URL, "Bearer other", REPORT, 403, "Forbidden",
	     "pod 'other-worker-0' is not a worker of job 'mnist': may not report the training "
	     "of job 'mnist'"},
	    {"a forged token", "POST", URL, "Bearer forged", REPORT, 401, "Unauthorized",
	     "Unauthorized"},
	    {"the API server's own token", "POST", URL, "Bearer apiserver", REPORT, 401,
	     "Unauthorized", "Unauthorized"},
	    {"no token", "POST", URL, NULL, REPORT, 401, "Unauthorized", "Unauthorized"},
	    {"basic auth", "POST", URL, "Basic Y2hpZWY6", REPORT, 401, "Unauthorized",
	     "Unauthorized"},
	    {"another job", "POST",
	     "/apis/training.mwj.io/v1/namespaces/ml/multiworkerjobs/gone/status", "Bearer chief",
	     REPORT, 404, "NotFound", "multiworkerjobs.training.mwj.io \"gone\" not found"},
	    {"another path", "POST", "/apis/training.mwj.io/v1/namespaces/ml/multiworkerjobs/mnist",
	     "Bearer chief", REPORT, 404, "NotFound",
	     "the server could not find the requested resource"},
	    {"a GET", "GET", URL, "Bearer chief", "", 405, "MethodNotAllowed",
	     "the server does not allow this method on the requested resource"},
	    {"a bad body", "POST", URL, "Bearer chief", "{\"training\": {}}", 400, "BadRequest",
	     "'training.globalStep' is missing"},
	};
	char reason[64], message[1024];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct world *w = world_new();
		unsigned int got = post(w, cases[i].method, cases[i].url, cases[i].auth,
		                        cases[i].body, reason, message, NULL);

		if (got != cases[i].want || strcmp(reason, cases[i].reason) != 0 ||
		    strcmp(message, cases[i].message) != 0)
			fail_msg("%s: %u %s '%s', not %u %s '%s'", cases[i].name, got, reason,
			         message, cases[i].want, cases[i].reason, cases[i].message);
		assert_int_equal(w->reported, 0);
		world_free(w);
	}
}

static void test_a_body_over_the_cap_is_too_large(void **state)
{
	struct world *w = world_new();
	char *big = malloc(TRAINING_REPORT_MAX + 2);
	char reason[64];

	(void)state;
	memset(big, ' ', TRAINING_REPORT_MAX + 1);
	big[TRAINING_REPORT_MAX + 1] = '\0';
	assert_int_equal(post(w, "POST", URL, "Bearer chief", big, reason, NULL, NULL), 413);
	assert_string_equal(reason, "RequestEntityTooLarge");
	assert_int_equal(w->reported, 0);
	free(big);
	world_free(w);
}

static void test_a_token_is_reviewed_once_however_often_it_reports(void **state)
{
	struct world *w = world_new();
	int retry = 0;

	(void)state;
	for (int i = 0; i < REPORTS_BURST; i++)
		assert_int_equal(post(w, "POST", URL, "Bearer chief", REPORT, NULL, NULL, NULL),
		                 200);
	assert_int_equal(w->api.reviews, 1);
	/* Past the job's burst: 429 with Retry-After, and no TokenReview. */
	assert_int_equal(post(w, "POST", URL, "Bearer chief", REPORT, NULL, NULL, &retry), 429);
	assert_int_equal(retry, 1);
	assert_int_equal(w->api.reviews, 1);
	assert_int_equal(w->reported, REPORTS_BURST);
	world_free(w);
}

static void test_nobody_else_uses_up_the_chiefs_rate(void **state)
{
	struct world *w = world_new();
	char token[32];

	(void)state;
	/* Others' requests, refused, however many. */
	for (int i = 0; i < 3 * REPORTS_BURST; i++)
		assert_int_equal(post(w, "POST", URL, "Bearer worker1", REPORT, NULL, NULL, NULL),
		                 403);
	assert_int_equal(post(w, "POST", URL, "Bearer chief", REPORT, NULL, NULL, NULL), 200);
	/* A flood of made-up tokens is reviewed up to the operator's rate,
	 * then answered 429 without asking the API server. */
	for (int i = 0; i < STATUS_REVIEW_BURST + 10; i++) {
		snprintf(token, sizeof(token), "Bearer made-up-%d", i);
		post(w, "POST", URL, token, REPORT, NULL, NULL, NULL);
	}
	assert_true(w->api.reviews <= STATUS_REVIEW_BURST + 3);
	assert_int_equal(post(w, "POST", URL, "Bearer made-up-x", REPORT, NULL, NULL, NULL), 429);
	/* The chief's token is in the cache: still taken. */
	assert_int_equal(post(w, "POST", URL, "Bearer chief", REPORT, NULL, NULL, NULL), 200);
	assert_int_equal(w->reported, 2);
	world_free(w);
}

static void test_a_standby_or_an_unreachable_api_server_says_try_again(void **state)
{
	struct world *w = world_new();
	char reason[64];
	int retry = 0;

	(void)state;
	w->active = 0;
	assert_int_equal(post(w, "POST", URL, "Bearer chief", REPORT, reason, NULL, &retry), 503);
	assert_string_equal(reason, "ServiceUnavailable");
	assert_int_equal(retry, 1);
	assert_int_equal(w->api.reviews, 0);
	w->active = 1;
	w->api.down = 1;
	assert_int_equal(post(w, "POST", URL, "Bearer chief", REPORT, reason, NULL, &retry), 503);
	assert_int_equal(w->reported, 0);
	world_free(w);
}

static void test_a_path_names_a_namespace_and_a_job(void **state)
{
	static const char *bad[] = {
	    "/apis/training.mwj.io/v1/namespaces//multiworkerjobs/a/status",
	    "/apis/training.mwj.io/v1/namespaces/ml/multiworkerjobs//status",
	    "/apis/training.mwj.io/v1/namespaces/ML/multiworkerjobs/a/status",
	    "/apis/training.mwj.io/v1/namespaces/ml/multiworkerjobs/a/status/x",
	    "/apis/training.mwj.io/v1/namespaces/ml/pods/a/status",
	    "/apis/training.mwj.io/v2/namespaces/ml/multiworkerjobs/a/status",
	    "/apis/training.mwj.io/v1/namespaces/m%2fl/multiworkerjobs/a/status",
	};
	char ns[JOB_NAME_LEN], name[JOB_NAME_LEN];

	(void)state;
	assert_int_equal(status_endpoint_path(URL, ns, name), 0);
	assert_string_equal(ns, "ml");
	assert_string_equal(name, "mnist");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (status_endpoint_path(bad[i], ns, name) != -1)
			fail_msg("%s: taken", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_the_chiefs_report_is_taken),
	    cmocka_unit_test(test_every_refusal_says_what_the_api_server_would_and_changes_nothing),
	    cmocka_unit_test(test_a_body_over_the_cap_is_too_large),
	    cmocka_unit_test(test_a_token_is_reviewed_once_however_often_it_reports),
	    cmocka_unit_test(test_nobody_else_uses_up_the_chiefs_rate),
	    cmocka_unit_test(test_a_standby_or_an_unreachable_api_server_says_try_again),
	    cmocka_unit_test(test_a_path_names_a_namespace_and_a_job),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
