/* test_kube_api.c - the client's retries, Status parsing, typed verbs and
 * paths, over a fake backend that plays scripted round trips and records
 * every request it is sent.
 *
 * Back-off waits are kept to milliseconds through the client's settings;
 * the one test that honours a real Retry-After waits its one second.
 * Timing assertions are lower bounds or generous upper ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "json.h"
#include "kube_api.h"

#define MAX_SCRIPT 16
#define MAX_SEEN   64

/* One scripted round trip: a response (status, body, Retry-After header),
 * or, with status 0, a transport failure saying why. */
struct scripted {
	long status;
	const char *body;
	int retry_after_s; /* the header; -1: none */
	const char *why;
};

/* A request as the backend saw it, copied. */
struct seen {
	char method[16];
	char path[KUBE_PATH_LEN];
	char content_type[64]; /* "" when NULL */
	char *body;            /* NULL when none */
	int timeout_ms;
	long long at_ms;
};

struct fake {
	pthread_mutex_t lock;
	struct scripted script[MAX_SCRIPT];
	int nscript, next;
	int repeat_last; /* play the last entry forever */
	struct seen seen[MAX_SEEN];
	int nseen;
	int stops;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int fake_round_trip(struct kube_api *api, const struct kube_req *req, struct kube_resp *resp,
                           char *err)
{
	struct fake *f = api->impl;
	struct scripted s = {500, "", -1, NULL};
	struct seen *w;
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	if (f->nseen < MAX_SEEN) {
		w = &f->seen[f->nseen++];
		snprintf(w->method, sizeof(w->method), "%s", req->method);
		snprintf(w->path, sizeof(w->path), "%s", req->path);
		snprintf(w->content_type, sizeof(w->content_type), "%s",
		         req->content_type ? req->content_type : "");
		w->body = req->body ? strndup(req->body, req->body_len) : NULL;
		w->timeout_ms = req->timeout_ms;
		w->at_ms = now_ms();
	}
	if (f->next < f->nscript)
		s = f->script[f->next++];
	else if (f->repeat_last && f->nscript > 0)
		s = f->script[f->nscript - 1];
	pthread_mutex_unlock(&f->lock);

	memset(resp, 0, sizeof(*resp));
	resp->retry_after_s = -1;
	if (s.status == 0) {
		rc = err_set(err, "%s", s.why ? s.why : "connection refused");
	} else {
		resp->status = s.status;
		resp->body = strdup(s.body ? s.body : "");
		resp->body_len = strlen(resp->body);
		resp->retry_after_s = s.retry_after_s;
	}
	return rc;
}

static void fake_stop(struct kube_api *api)
{
	struct fake *f = api->impl;

	pthread_mutex_lock(&f->lock);
	f->stops++;
	pthread_mutex_unlock(&f->lock);
}

static void fake_release(struct kube_api *api)
{
	struct fake *f = api->impl;

	for (int i = 0; i < f->nseen; i++)
		free(f->seen[i].body);
	pthread_mutex_destroy(&f->lock);
	free(f);
	api->impl = NULL;
}

static const struct kube_api_ops fake_ops = {
    .name = "fake", .round_trip = fake_round_trip, .stop = fake_stop, .release = fake_release};

/* A client over a fake with the given script, retrying for deadline_ms
 * with back-off steps of a few milliseconds. */
static void fake_init(struct kube_api *api, const struct scripted *script, int n, int deadline_ms)
{
	struct fake *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_true(n <= MAX_SCRIPT);
	pthread_mutex_init(&f->lock, NULL);
	memcpy(f->script, script, (size_t)n * sizeof(*script));
	f->nscript = n;
	memset(api, 0, sizeof(*api));
	api->ops = &fake_ops;
	api->impl = f;
	api->retry_deadline_ms = deadline_ms;
	api->backoff_first_ms = 2;
	api->backoff_max_ms = 10;
}

static struct fake *fake_of(struct kube_api *api)
{
	return api->impl;
}

static const struct kube_req GET_POD = {.method = "GET", .path = "/api/v1/namespaces/ns/pods/x"};

#define STATUS_429                                                                                 \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"too "     \
	"many "                                                                                    \
	"requests, please try again later\",\"reason\":\"TooManyRequests\",\"code\":429}"
#define STATUS_503                                                                                 \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"the "     \
	"server "                                                                                  \
	"is currently unable to handle the "                                                       \
	"request\",\"reason\":\"ServiceUnavailable\",\"code\":503}"
#define STATUS_404                                                                                 \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"pods "    \
	"\\\"x\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"x\",\"kind\":"      \
	"\"pods\"},\"code\":404}"
#define STATUS_409                                                                                 \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"pods "    \
	"\\\"x\\\" already exists\",\"reason\":\"AlreadyExists\",\"details\":{\"name\":\"x\","     \
	"\"kind\":\"pods\"},\"code\":409}"
#define POD_X "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\",\"namespace\":\"ns\"}}"

/* --- Retries --- */

static void test_429_with_retry_after_waits_that_long_then_succeeds(void **state)
{
	const struct scripted script[] = {{429, STATUS_429, 1, NULL}, {200, POD_X, -1, NULL}};
	struct kube_api api;
	struct kube_resp resp;
	char err[ERR_LEN];
	struct fake *f;

	(void)state;
	fake_init(&api, script, 2, 30000);
	f = fake_of(&api);
	assert_int_equal(kube_api_request(&api, &GET_POD, &resp, err), 0);
	assert_int_equal(resp.status, 200);
	assert_string_equal(resp.body, POD_X);
	assert_int_equal(f->nseen, 2);
	/* Retry-After: 1 means at least a second, whatever the jitter. */
	assert_true(f->seen[1].at_ms - f->seen[0].at_ms >= 990);
	assert_true(f->seen[1].at_ms - f->seen[0].at_ms < 10000);
	assert_int_equal(api.stats.requests, 2);
	assert_int_equal(api.stats.retries, 1);
	assert_int_equal(api.stats.errors_4xx, 1);
	kube_resp_release(&resp);
	kube_api_release(&api);
}

static void test_once_sends_one_attempt_and_codes_are_counted_by_method(void **state)
{
	const struct scripted script[] = {
	    {503, "", -1, NULL}, {0, NULL, -1, "refused"}, {200, POD_X, -1, NULL}};
	struct kube_req once = GET_POD;
	struct kube_api api;
	struct kube_resp resp;
	char err[ERR_LEN];

	(void)state;
	once.once = 1;
	fake_init(&api, script, 3, 30000);
	/* A 503 comes back as the answer, not retried. */
	assert_int_equal(kube_api_request(&api, &once, &resp, err), 0);
	assert_int_equal(resp.status, 503);
	kube_resp_release(&resp);
	/* No answer: an error at once. */
	assert_int_equal(kube_api_request(&api, &once, &resp, err), -1);
	assert_non_null(strstr(err, "refused"));
	assert_int_equal(kube_api_request(&api, &once, &resp, err), 0);
	kube_resp_release(&resp);
	assert_int_equal(fake_of(&api)->nseen, 3);
	assert_int_equal(api.stats.retries, 0);
	assert_int_equal(api.stats.by_code[KUBE_GET][503], 1);
	assert_int_equal(api.stats.by_code[KUBE_GET][0], 1);
	assert_int_equal(api.stats.by_code[KUBE_GET][200], 1);
	assert_string_equal(kube_method_name(KUBE_WATCH), "WATCH");
	kube_api_release(&api);
}

static void test_retry_after_past_the_deadline_returns_the_429_at_once(void **state)
{
	const struct scripted script[] = {{429, STATUS_429, 30, NULL}, {200, POD_X, -1, NULL}};
	struct kube_api api;
	struct kube_resp resp;
	char err[ERR_LEN];
	long long t0 = now_ms();

	(void)state;
	fake_init(&api, script, 2, 2000);
	assert_int_equal(kube_api_request(&api, &GET_POD, &resp, err), 0);
	assert_true(now_ms() - t0 < 1000);
	assert_int_equal(resp.status, 429);
	assert_string_equal(resp.reason, "TooManyRequests");
	assert_int_equal(resp.retry_after_s, 30);
	assert_int_equal(fake_of(&api)->nseen, 1);
	kube_resp_release(&resp);
	kube_api_release(&api);
}

static void test_status_retry_after_seconds_counts_when_no_header_came(void **state)
{
	const struct scripted script[] = {
	    {429,
	     "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"message\":\"slow down\","
	     "\"details\":{\"retryAfterSeconds\":20},\"code\":429}",
	     -1, NULL},
	    {200, POD_X, -1, NULL}};
	struct kube_api api;
	struct kube_resp resp;
	char err[ERR_LEN];

	(void)state;
	/* 20 s is past the 2 s deadline: one attempt proves it was read. */
	fake_init(&api, script, 2, 2000);
	assert_int_equal(kube_api_request(&api, &GET_POD, &resp, err), 0);
	assert_int_equal(resp.status, 429);
	assert_int_equal(resp.retry_after_s, 20);
	assert_string_equal(resp.message, "slow down");
	assert_int_equal(fake_of(&api)->nseen, 1);
	kube_resp_release(&resp);
	kube_api_release(&api);
}

static void test_503_then_200_is_retried(void **state)
{
	const struct scripted script[] = {{503, STATUS_503, -1, NULL},
	                                  {502, "<html>bad gateway</html>", -1, NULL},
	                                  {200, POD_X, -1, NULL}};
	struct kube_api api;
	struct kube_resp resp;
	char err[ERR_LEN];
	struct fake *f;

	(void)state;
	fake_init(&api, script, 3, 30000);
	f = fake_of(&api);
	assert_int_equal(kube_api_request(&api, &GET_POD, &resp, err), 0);
	assert_int_equal(resp.status, 200);
	assert_int_equal(f->nseen, 3);
	for (int i = 0; i < 3; i++) {
		assert_string_equal(f->seen[i].method, "GET");
		assert_string_equal(f->seen[i].path, GET_POD.path);
	}
	assert_int_equal(api.stats.errors_5xx, 2);
	assert_int_equal(api.stats.retries, 2);
	kube_resp_release(&resp);
	kube_api_release(&api);
}

static void test_transport_errors_then_success(void **state)
{
	const struct scripted script[] = {{0, NULL, -1, "connection refused"},
	                                  {0, NULL, -1, "connection reset by peer"},
	                                  {200, POD_X, -1, NULL}};
	struct kube_api api;
	struct kube_resp resp;
	char err[ERR_LEN];

	(void)state;
	fake_init(&api, script, 3, 30000);
	assert_int_equal(kube_api_request(&api, &GET_POD, &resp, err), 0);
	assert_int_equal(resp.status, 200);
	assert_string_equal(resp.body, POD_X);
	assert_int_equal(fake_of(&api)->nseen, 3);
	assert_int_equal(api.stats.transport_errors, 2);
	assert_int_equal(api.stats.requests, 3);
	kube_resp_release(&resp);
	kube_api_release(&api);
}

static void test_transport_errors_give_up_at_the_deadline(void **state)
{
	const struct scripted script[] = {{0, NULL, -1, "connection refused"}};
	struct kube_api api;
	struct kube_resp resp;
	char err[ERR_LEN];
	long long t0 = now_ms(), took;

	(void)state;
	fake_init(&api, script, 1, 150);
	fake_of(&api)->repeat_last = 1;
	assert_int_equal(kube_api_request(&api, &GET_POD, &resp, err), -1);
	took = now_ms() - t0;
	assert_true(took < 2000);
	assert_true(fake_of(&api)->nseen >= 3);
	assert_null(resp.body);
	assert_int_equal(resp.status, 0);
	assert_non_null(strstr(err, "GET /api/v1/namespaces/ns/pods/x: connection refused"));
	assert_non_null(strstr(err, "gave up after"));
	kube_api_release(&api);
}

static void test_5xx_past_the_deadline_returns_the_last_response(void **state)
{
	const struct scripted script[] = {{503, STATUS_503, -1, NULL}};
	struct kube_api api;
	cJSON *out = (cJSON *)1;
	struct kube_result res;
	char err[ERR_LEN];

	(void)state;
	fake_init(&api, script, 1, 100);
	fake_of(&api)->repeat_last = 1;
	assert_int_equal(kube_get(&api, GET_POD.path, &out, &res, err), -1);
	assert_null(out);
	assert_int_equal(res.status, 503);
	assert_string_equal(res.reason, "ServiceUnavailable");
	assert_string_equal(err, "get pods 'ns/x': 503 ServiceUnavailable: the server is currently "
	                         "unable to handle the request");
	assert_true(fake_of(&api)->nseen >= 2);
	kube_api_release(&api);
}

struct stopper {
	struct kube_api *api;
	int rc;
	char err[ERR_LEN];
	long long took_ms;
};

static void *request_in_thread(void *p)
{
	struct stopper *s = p;
	struct kube_resp resp;
	long long t0 = now_ms();

	s->rc = kube_api_request(s->api, &GET_POD, &resp, s->err);
	s->took_ms = now_ms() - t0;
	kube_resp_release(&resp);
	return NULL;
}

static void test_stop_ends_retries(void **state)
{
	const struct scripted script[] = {{503, STATUS_503, 30, NULL}};
	struct kube_api api;
	struct stopper s = {&api, 0, "", 0};
	pthread_t th;
	struct fake *f;
	int seen = 0;

	(void)state;
	/* Retry-After 30 s within a minute's deadline: the thread sleeps. */
	fake_init(&api, script, 1, 60000);
	f = fake_of(&api);
	f->repeat_last = 1;
	assert_int_equal(pthread_create(&th, NULL, request_in_thread, &s), 0);
	for (int i = 0; i < 2000 && seen == 0; i++) {
		pthread_mutex_lock(&f->lock);
		seen = f->nseen;
		pthread_mutex_unlock(&f->lock);
		usleep(1000);
	}
	assert_int_equal(seen, 1);
	kube_api_stop(&api);
	pthread_join(th, NULL);
	assert_int_equal(s.rc, -1);
	assert_true(s.took_ms < 5000);
	assert_non_null(strstr(s.err, "GET /api/v1/namespaces/ns/pods/x: client stopping"));
	assert_non_null(strstr(s.err, "503 ServiceUnavailable"));
	assert_int_equal(f->nseen, 1);
	assert_int_equal(f->stops, 1);
	kube_api_release(&api);
}

static void test_requests_after_stop_fail_at_once(void **state)
{
	const struct scripted script[] = {{200, POD_X, -1, NULL}};
	struct kube_api api;
	struct kube_resp resp;
	char err[ERR_LEN];

	(void)state;
	fake_init(&api, script, 1, 60000);
	kube_api_stop(&api);
	assert_int_equal(kube_api_request(&api, &GET_POD, &resp, err), -1);
	assert_string_equal(err, "GET /api/v1/namespaces/ns/pods/x: client stopping");
	assert_int_equal(fake_of(&api)->nseen, 0);
	kube_api_release(&api);
}

/* --- Status bodies and errors that are not retried --- */

static void test_404_is_not_retried_and_says_not_found(void **state)
{
	const struct scripted script[] = {{404, STATUS_404, -1, NULL}, {200, POD_X, -1, NULL}};
	struct kube_api api;
	struct kube_result res;
	cJSON *out = NULL;
	char err[ERR_LEN];

	(void)state;
	fake_init(&api, script, 2, 30000);
	assert_int_equal(kube_get(&api, GET_POD.path, &out, &res, err), -1);
	assert_null(out);
	assert_int_equal(res.status, 404);
	assert_string_equal(res.reason, "NotFound");
	assert_string_equal(err, "get pods 'ns/x': 404 NotFound: pods \"x\" not found");
	assert_int_equal(fake_of(&api)->nseen, 1);
	assert_int_equal(api.stats.retries, 0);
	kube_api_release(&api);
}

static void test_409_on_create_is_not_retried_and_says_already_exists(void **state)
{
	const struct scripted script[] = {{409, STATUS_409, -1, NULL}, {201, POD_X, -1, NULL}};
	struct kube_api api;
	struct kube_result res;
	cJSON *pod = json_parse(POD_X, strlen(POD_X), NULL);
	cJSON *out = NULL;
	char err[ERR_LEN];

	(void)state;
	fake_init(&api, script, 2, 30000);
	assert_int_equal(kube_create(&api, "/api/v1/namespaces/ns/pods", pod, &out, &res, err), -1);
	assert_null(out);
	assert_int_equal(res.status, 409);
	assert_string_equal(res.reason, "AlreadyExists");
	assert_string_equal(err,
	                    "create pods 'ns/x': 409 AlreadyExists: pods \"x\" already exists");
	assert_int_equal(fake_of(&api)->nseen, 1);
	cJSON_Delete(pod);
	kube_api_release(&api);
}

/* A 409 after a try that got no answer or a 5xx may be that try's own
 * doing, and says so; after a 429 (the request was turned away) or on
 * the first try it does not. */
static void test_a_409_after_an_unanswered_or_5xx_try_may_be_its_own(void **state)
{
	static const struct {
		struct scripted script[2];
		int maybe_applied;
	} cases[] = {
	    {{{503, STATUS_503, -1, NULL}, {409, STATUS_409, -1, NULL}}, 1},
	    {{{0, NULL, -1, "connection reset"}, {409, STATUS_409, -1, NULL}}, 1},
	    {{{429, STATUS_429, 0, NULL}, {409, STATUS_409, -1, NULL}}, 0},
	    {{{409, STATUS_409, -1, NULL}, {201, POD_X, -1, NULL}}, 0},
	};
	cJSON *pod = json_parse(POD_X, strlen(POD_X), NULL);
	char err[ERR_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kube_api api;
		struct kube_result res = {0};

		fake_init(&api, cases[i].script, 2, 30000);
		assert_int_equal(
		    kube_create(&api, "/api/v1/namespaces/ns/pods", pod, NULL, &res, err), -1);
		assert_int_equal(res.status, 409);
		assert_int_equal(res.maybe_applied, cases[i].maybe_applied);
		kube_api_release(&api);
	}
	cJSON_Delete(pod);
}

static void test_status_body_gives_reason_and_message(void **state)
{
	const struct scripted script[] = {{422,
	                                   "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":"
	                                   "\"Invalid\",\"message\":\"Pod \\\"x\\\" is invalid: "
	                                   "spec.containers: Required value\",\"code\":422}",
	                                   -1, NULL}};
	struct kube_api api;
	struct kube_resp resp;
	char err[ERR_LEN];

	(void)state;
	fake_init(&api, script, 1, 30000);
	assert_int_equal(kube_api_request(&api, &GET_POD, &resp, err), 0);
	assert_int_equal(resp.status, 422);
	assert_string_equal(resp.reason, "Invalid");
	assert_string_equal(resp.message, "Pod \"x\" is invalid: spec.containers: Required value");
	assert_int_equal(resp.retry_after_s, -1);
	kube_resp_release(&resp);
	kube_api_release(&api);
}

/* A namespace being deleted, as NamespaceLifecycle says it: the cause and
 * the object's name come through for the operator to act on. */
static void test_status_body_gives_the_first_cause_and_the_name(void **state)
{
	const struct scripted script[] = {
	    {403,
	     "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Forbidden\",\"message\":"
	     "\"secrets \\\"j-ring-key-abcde\\\" is forbidden: unable to create new content in "
	     "namespace ns because it is being terminated\",\"details\":{\"name\":"
	     "\"j-ring-key-abcde\",\"kind\":\"secrets\",\"causes\":[{\"reason\":"
	     "\"NamespaceTerminating\",\"message\":\"namespace ns is being terminated\","
	     "\"field\":\"metadata.namespace\"}]},\"code\":403}",
	     -1, NULL}};
	struct kube_api api;
	struct kube_resp resp;
	char err[ERR_LEN];

	(void)state;
	fake_init(&api, script, 1, 30000);
	assert_int_equal(kube_api_request(&api, &GET_POD, &resp, err), 0);
	assert_string_equal(resp.cause, "NamespaceTerminating");
	assert_string_equal(resp.name, "j-ring-key-abcde");
	kube_resp_release(&resp);
	kube_api_release(&api);
}

static void test_error_body_that_is_no_status_is_quoted_on_one_line(void **state)
{
	const struct scripted script[] = {{403, "<html>\n<b>forbidden</b>\r\n</html>", -1, NULL},
	                                  {401, "", -1, NULL},
	                                  {400, "{\"kind\":\"Pod\"}", -1, NULL}};
	struct kube_api api;
	struct kube_resp resp;
	struct kube_result res;
	char err[ERR_LEN];

	(void)state;
	fake_init(&api, script, 3, 30000);
	assert_int_equal(kube_api_request(&api, &GET_POD, &resp, err), 0);
	assert_int_equal(resp.status, 403);
	assert_string_equal(resp.reason, "");
	assert_string_equal(resp.message, "<html> <b>forbidden</b>  </html>");
	kube_resp_release(&resp);
	assert_int_equal(kube_get(&api, GET_POD.path, NULL, &res, err), -1);
	assert_string_equal(err, "get pods 'ns/x': 401");
	assert_int_equal(res.status, 401);
	assert_int_equal(kube_get(&api, GET_POD.path, NULL, &res, err), -1);
	assert_string_equal(err, "get pods 'ns/x': 400: {\"kind\":\"Pod\"}");
	kube_api_release(&api);
}

static void test_hostile_status_fields_are_cut_and_cleaned(void **state)
{
	char body[8192];
	const struct scripted script[] = {
	    {400, body, -1, NULL},
	    {400, "{\"kind\":\"Status\",\"reason\":7,\"message\":[]}", -1, NULL},
	    {400, "{\"kind\":\"Status\",\"reason\":\"A\\nB\"", -1, NULL}};
	char reason[300], message[5000];
	struct kube_api api;
	struct kube_resp resp;
	char err[ERR_LEN];

	(void)state;
	memset(reason, 'R', sizeof(reason) - 1);
	reason[sizeof(reason) - 1] = '\0';
	memset(message, 'm', sizeof(message) - 1);
	message[sizeof(message) - 1] = '\0';
	snprintf(body, sizeof(body),
	         "{\"kind\":\"Status\",\"reason\":\"%s\",\"message\":\"%s\",\"details\":"
	         "{\"retryAfterSeconds\":-5}}",
	         reason, message);
	fake_init(&api, script, 3, 30000);
	assert_int_equal(kube_api_request(&api, &GET_POD, &resp, err), 0);
	assert_int_equal(strlen(resp.reason), KUBE_REASON_LEN - 1);
	assert_int_equal(strlen(resp.message), KUBE_MESSAGE_LEN - 1);
	assert_int_equal(resp.retry_after_s, -1);
	kube_resp_release(&resp);
	/* Members of the wrong type are ignored. */
	assert_int_equal(kube_api_request(&api, &GET_POD, &resp, err), 0);
	assert_string_equal(resp.reason, "");
	assert_string_equal(resp.message, "");
	kube_resp_release(&resp);
	/* Broken JSON is no Status: quoted as it came. */
	assert_int_equal(kube_api_request(&api, &GET_POD, &resp, err), 0);
	assert_string_equal(resp.reason, "");
	assert_string_equal(resp.message, "{\"kind\":\"Status\",\"reason\":\"A\\nB\"");
	kube_resp_release(&resp);
	kube_api_release(&api);
}

/* --- Typed verbs --- */

static void test_get_sends_get_and_returns_the_object(void **state)
{
	const struct scripted script[] = {{200, POD_X, -1, NULL}};
	struct kube_api api;
	struct kube_result res;
	cJSON *out = NULL;
	char err[ERR_LEN];
	struct fake *f;

	(void)state;
	fake_init(&api, script, 1, 30000);
	f = fake_of(&api);
	assert_int_equal(kube_get(&api, GET_POD.path, &out, &res, err), 0);
	assert_int_equal(res.status, 200);
	assert_string_equal(cJSON_GetObjectItem(out, "kind")->valuestring, "Pod");
	assert_string_equal(f->seen[0].method, "GET");
	assert_string_equal(f->seen[0].path, "/api/v1/namespaces/ns/pods/x");
	assert_null(f->seen[0].body);
	assert_int_equal(f->seen[0].timeout_ms, KUBE_DEFAULT_TIMEOUT_MS);
	cJSON_Delete(out);
	kube_api_release(&api);
}

static void test_get_with_a_body_that_is_no_object_fails(void **state)
{
	const struct scripted script[] = {
	    {200, "{\"kind\":", -1, NULL}, {200, "[1,2]", -1, NULL}, {200, "", -1, NULL}};
	struct kube_api api;
	struct kube_result res;
	cJSON *out = NULL;
	char err[ERR_LEN];

	(void)state;
	fake_init(&api, script, 3, 30000);
	assert_int_equal(kube_get(&api, "/api/v1/namespaces/ns/pods", &out, &res, err), -1);
	assert_null(out);
	assert_int_equal(res.status, 200);
	assert_ptr_equal(strstr(err, "list pods in 'ns': response: invalid JSON near byte "), err);
	assert_int_equal(kube_get(&api, "/api/v1/pods?labelSelector=a%3Db", &out, &res, err), -1);
	assert_string_equal(err, "list pods: response is no JSON object");
	assert_int_equal(kube_get(&api, "/api/v1/nodes/n1", &out, &res, err), -1);
	assert_ptr_equal(strstr(err, "get nodes 'n1': response: invalid JSON near byte "), err);
	assert_null(out);
	kube_api_release(&api);
}

static void test_create_posts_the_object_to_the_collection(void **state)
{
	const struct scripted script[] = {{201, POD_X, -1, NULL}};
	struct kube_api api;
	cJSON *pod = json_parse(POD_X, strlen(POD_X), NULL);
	cJSON *out = NULL;
	char err[ERR_LEN];
	struct fake *f;

	(void)state;
	fake_init(&api, script, 1, 30000);
	f = fake_of(&api);
	assert_int_equal(kube_create(&api, "/api/v1/namespaces/ns/pods", pod, &out, NULL, err), 0);
	assert_non_null(out);
	assert_string_equal(f->seen[0].method, "POST");
	assert_string_equal(f->seen[0].path, "/api/v1/namespaces/ns/pods");
	assert_string_equal(f->seen[0].content_type, "application/json");
	assert_string_equal(f->seen[0].body, POD_X);
	cJSON_Delete(out);
	cJSON_Delete(pod);
	kube_api_release(&api);
}

static void test_update_puts_the_object(void **state)
{
	const struct scripted script[] = {{200, POD_X, -1, NULL}};
	struct kube_api api;
	cJSON *pod = json_parse(POD_X, strlen(POD_X), NULL);
	char err[ERR_LEN];
	struct fake *f;

	(void)state;
	fake_init(&api, script, 1, 30000);
	f = fake_of(&api);
	assert_int_equal(kube_update(&api, GET_POD.path, pod, NULL, NULL, err), 0);
	assert_string_equal(f->seen[0].method, "PUT");
	assert_string_equal(f->seen[0].path, GET_POD.path);
	assert_string_equal(f->seen[0].content_type, "application/json");
	assert_string_equal(f->seen[0].body, POD_X);
	cJSON_Delete(pod);
	kube_api_release(&api);
}

static void test_merge_patch_of_status_says_merge_patch(void **state)
{
	const char *path = "/apis/training.mwj.io/v1/namespaces/ns/multiworkerjobs/j/status";
	const char *patch_text = "{\"status\":{\"phase\":\"Running\"}}";
	const struct scripted script[] = {
	    {200, "{\"kind\":\"MultiWorkerJob\"}", -1, NULL},
	    {409,
	     "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"message\":\"the object has been "
	     "modified\",\"code\":409}",
	     -1, NULL}};
	struct kube_api api;
	cJSON *patch = json_parse(patch_text, strlen(patch_text), NULL);
	cJSON *out = NULL;
	struct kube_result res;
	char err[ERR_LEN];
	struct fake *f;

	(void)state;
	fake_init(&api, script, 2, 30000);
	f = fake_of(&api);
	assert_int_equal(kube_merge_patch(&api, path, patch, &out, NULL, err), 0);
	assert_string_equal(f->seen[0].method, "PATCH");
	assert_string_equal(f->seen[0].path, path);
	assert_string_equal(f->seen[0].content_type, "application/merge-patch+json");
	assert_string_equal(f->seen[0].body, patch_text);
	cJSON_Delete(out);
	assert_int_equal(kube_merge_patch(&api, path, patch, NULL, &res, err), -1);
	assert_string_equal(err,
	                    "patch multiworkerjobs/status 'ns/j': 409 Conflict: the object has "
	                    "been modified");
	assert_string_equal(res.reason, "Conflict");
	cJSON_Delete(patch);
	kube_api_release(&api);
}

static void test_json_patch_says_json_patch_and_wants_an_array(void **state)
{
	const char *patch_text = "[{\"op\":\"remove\",\"path\":\"/metadata/finalizers/0\"}]";
	const struct scripted script[] = {{200, POD_X, -1, NULL}};
	struct kube_api api;
	cJSON *patch = json_parse(patch_text, strlen(patch_text), NULL);
	cJSON *obj = cJSON_CreateObject();
	char err[ERR_LEN];
	struct fake *f;

	(void)state;
	fake_init(&api, script, 1, 30000);
	f = fake_of(&api);
	assert_int_equal(kube_json_patch(&api, GET_POD.path, patch, NULL, NULL, err), 0);
	assert_string_equal(f->seen[0].method, "PATCH");
	assert_string_equal(f->seen[0].content_type, "application/json-patch+json");
	assert_string_equal(f->seen[0].body, patch_text);
	assert_int_equal(kube_json_patch(&api, GET_POD.path, obj, NULL, NULL, err), -1);
	assert_int_equal(f->nseen, 1);
	cJSON_Delete(obj);
	cJSON_Delete(patch);
	kube_api_release(&api);
}

static void test_delete_sends_delete_options(void **state)
{
	const struct scripted script[] = {
	    {200, "{\"kind\":\"Status\",\"status\":\"Success\"}", -1, NULL},
	    {202, POD_X, -1, NULL}};
	struct kube_api api;
	struct kube_result res;
	char err[ERR_LEN];
	struct fake *f;

	(void)state;
	fake_init(&api, script, 2, 30000);
	f = fake_of(&api);
	assert_int_equal(kube_delete(&api, GET_POD.path, "0b3c-uid", "Background", 0, 0, &res, err),
	                 0);
	assert_int_equal(res.status, 200);
	assert_string_equal(f->seen[0].method, "DELETE");
	assert_string_equal(f->seen[0].path, GET_POD.path);
	assert_string_equal(f->seen[0].content_type, "application/json");
	assert_string_equal(f->seen[0].body,
	                    "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"preconditions\":"
	                    "{\"uid\":\"0b3c-uid\"},\"propagationPolicy\":\"Background\","
	                    "\"gracePeriodSeconds\":0}");
	/* Nothing asked for: only what makes it DeleteOptions. */
	assert_int_equal(kube_delete(&api, GET_POD.path, NULL, NULL, -1, 0, &res, err), 0);
	assert_int_equal(res.status, 202);
	assert_string_equal(f->seen[1].body, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\"}");
	kube_api_release(&api);
}

static void test_delete_of_a_missing_object_succeeds_only_when_allowed(void **state)
{
	const struct scripted script[] = {{404, STATUS_404, -1, NULL}, {404, STATUS_404, -1, NULL}};
	struct kube_api api;
	struct kube_result res;
	char err[ERR_LEN];

	(void)state;
	fake_init(&api, script, 2, 30000);
	assert_int_equal(kube_delete(&api, GET_POD.path, "u1", NULL, 30, 1, &res, err), 0);
	assert_int_equal(res.status, 404);
	assert_string_equal(res.reason, "NotFound");
	assert_int_equal(kube_delete(&api, GET_POD.path, "u1", NULL, 30, 0, &res, err), -1);
	assert_string_equal(err, "delete pods 'ns/x': 404 NotFound: pods \"x\" not found");
	kube_api_release(&api);
}

static void test_transport_failure_of_a_verb_names_the_object(void **state)
{
	const struct scripted script[] = {{0, NULL, -1, "connection refused"}};
	struct kube_api api;
	struct kube_result res = {.status = 77, .reason = "x", .message = "y", .maybe_applied = 1};
	cJSON *job = cJSON_CreateObject();
	char err[ERR_LEN];

	(void)state;
	cJSON_AddStringToObject(cJSON_AddObjectToObject(job, "metadata"), "generateName", "j-");
	fake_init(&api, script, 1, 50);
	fake_of(&api)->repeat_last = 1;
	assert_int_equal(kube_create(&api, "/apis/training.mwj.io/v1/namespaces/ns/multiworkerjobs",
	                             job, NULL, &res, err),
	                 -1);
	assert_int_equal(res.status, 0);
	assert_string_equal(res.reason, "");
	assert_string_equal(res.message, "");
	assert_non_null(strstr(err, "create multiworkerjobs 'ns/j-': connection refused"));
	cJSON_Delete(job);
	kube_api_release(&api);
}

/* --- Paths --- */

struct path_case {
	const char *group, *version, *ns, *plural, *name;
	const char *want; /* NULL: refused */
};

static void test_kube_path_builds_core_grouped_cluster_and_collection_paths(void **state)
{
	static const struct path_case cases[] = {
	    {"", "v1", "ns", "pods", "x", "/api/v1/namespaces/ns/pods/x"},
	    {NULL, "v1", "ns", "pods", NULL, "/api/v1/namespaces/ns/pods"},
	    {"", "v1", NULL, "pods", NULL, "/api/v1/pods"},
	    {"", "v1", "", "nodes", "n1", "/api/v1/nodes/n1"},
	    {"", "v1", NULL, "namespaces", "ns", "/api/v1/namespaces/ns"},
	    {"training.mwj.io", "v1", "ns", "multiworkerjobs", "j",
	     "/apis/training.mwj.io/v1/namespaces/ns/multiworkerjobs/j"},
	    {"coordination.k8s.io", "v1", "kube-system", "leases", NULL,
	     "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"},
	    {"apiextensions.k8s.io", "v1", NULL, "customresourcedefinitions",
	     "multiworkerjobs.training.mwj.io",
	     "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
	     "multiworkerjobs.training.mwj.io"},
	    {"", "v1", "ns", "pods", "", NULL},
	    {"", "v1", "ns", "pods", "a/b", NULL},
	    {"", "v1", "ns", "pods", "..", NULL},
	    {"", "v1", "n s", "pods", "x", NULL},
	    {"", "v1", "ns", "pods", "x?watch=1", NULL},
	    {"", "", "ns", "pods", "x", NULL},
	    {"", "v1", "ns", NULL, "x", NULL},
	};
	char out[KUBE_PATH_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct path_case *c = &cases[i];
		int rc = kube_path(out, c->group, c->version, c->ns, c->plural, c->name);

		if (c->want == NULL) {
			assert_int_equal(rc, -1);
			assert_string_equal(out, "");
		} else {
			assert_int_equal(rc, 0);
			assert_string_equal(out, c->want);
		}
	}
}

static void test_kube_path_refuses_what_does_not_fit(void **state)
{
	char name[KUBE_PATH_LEN];
	char out[KUBE_PATH_LEN];
	size_t fits = KUBE_PATH_LEN - 1 - strlen("/api/v1/namespaces/ns/pods/");

	(void)state;
	memset(name, 'a', fits);
	name[fits] = '\0';
	assert_int_equal(kube_path(out, "", "v1", "ns", "pods", name), 0);
	assert_int_equal(strlen(out), KUBE_PATH_LEN - 1);
	name[fits] = 'a';
	name[fits + 1] = '\0';
	assert_int_equal(kube_path(out, "", "v1", "ns", "pods", name), -1);
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_429_with_retry_after_waits_that_long_then_succeeds),
	    cmocka_unit_test(test_retry_after_past_the_deadline_returns_the_429_at_once),
	    cmocka_unit_test(test_once_sends_one_attempt_and_codes_are_counted_by_method),
	    cmocka_unit_test(test_status_retry_after_seconds_counts_when_no_header_came),
	    cmocka_unit_test(test_503_then_200_is_retried),
	    cmocka_unit_test(test_transport_errors_then_success),
	    cmocka_unit_test(test_transport_errors_give_up_at_the_deadline),
	    cmocka_unit_test(test_5xx_past_the_deadline_returns_the_last_response),
	    cmocka_unit_test(test_stop_ends_retries),
	    cmocka_unit_test(test_requests_after_stop_fail_at_once),
	    cmocka_unit_test(test_404_is_not_retried_and_says_not_found),
	    cmocka_unit_test(test_409_on_create_is_not_retried_and_says_already_exists),
	    cmocka_unit_test(test_a_409_after_an_unanswered_or_5xx_try_may_be_its_own),
	    cmocka_unit_test(test_status_body_gives_reason_and_message),
	    cmocka_unit_test(test_status_body_gives_the_first_cause_and_the_name),
	    cmocka_unit_test(test_error_body_that_is_no_status_is_quoted_on_one_line),
	    cmocka_unit_test(test_hostile_status_fields_are_cut_and_cleaned),
	    cmocka_unit_test(test_get_sends_get_and_returns_the_object),
	    cmocka_unit_test(test_get_with_a_body_that_is_no_object_fails),
	    cmocka_unit_test(test_create_posts_the_object_to_the_collection),
	    cmocka_unit_test(test_update_puts_the_object),
	    cmocka_unit_test(test_merge_patch_of_status_says_merge_patch),
	    cmocka_unit_test(test_json_patch_says_json_patch_and_wants_an_array),
	    cmocka_unit_test(test_delete_sends_delete_options),
	    cmocka_unit_test(test_delete_of_a_missing_object_succeeds_only_when_allowed),
	    cmocka_unit_test(test_transport_failure_of_a_verb_names_the_object),
	    cmocka_unit_test(test_kube_path_builds_core_grouped_cluster_and_collection_paths),
	    cmocka_unit_test(test_kube_path_refuses_what_does_not_fit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
