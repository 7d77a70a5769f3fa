/* test_kube_curl.c - the curl backend against a canned-response HTTP
 * server on 127.0.0.1 (http_fixture.h): what goes on the wire for each
 * verb, retries seen through libcurl, watches streamed, cut off when
 * silent and stopped, connections reused, a rotated token picked up, and
 * a body over the cap refused.
 *
 * Plain http:// here; TLS and HTTP/2 are exercised against the local
 * test cluster in the end-to-end tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "http_fixture.h"
#include "json.h"
#include "kube_api.h"
#include "kube_curl.h"
#include "kubeconfig.h"

#define USER_AGENT "mwj-operator/test"
#define TOKEN      "test-token-1"

/* What each test holds: a fixture server, a kubeconfig for it in a
 * scratch directory, and a client over curl. */
struct env {
	char dir[64];
	char kubeconfig[128];
	char token_file[128];
	struct http_fixture *server;
	struct kube_config cfg;
	struct kube_api api;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
}

/* Starts the fixture (none when fixture is NULL: the server is
 * http://127.0.0.1:1, where nobody listens) and a client whose kubeconfig
 * names it, with a literal token, or a token file holding file_token when
 * that is given.
 *
 * kubeconfig.c, like client-go, loads no credentials for a server it does
 * not reach over TLS; the fixture speaks plain HTTP. So the kubeconfig
 * says https, the token (file) is loaded as it would be in production, and
 * only then is the scheme of the loaded server changed to http. */
static void env_start(struct env *e, const char *fixture, const char *file_token)
{
	char yaml[1024], user[256], err[ERR_LEN];
	const char *url;

	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "/tmp/mwj-test-kube-curl-XXXXXX");
	assert_non_null(mkdtemp(e->dir));
	snprintf(e->kubeconfig, sizeof(e->kubeconfig), "%s/config", e->dir);
	snprintf(e->token_file, sizeof(e->token_file), "%s/token", e->dir);
	if (file_token != NULL) {
		write_file(e->token_file, file_token);
		snprintf(user, sizeof(user), "tokenFile: %s", e->token_file);
	} else {
		snprintf(user, sizeof(user), "token: %s", TOKEN);
	}
	if (fixture != NULL)
		e->server = http_fixture_start(fixture);
	url = e->server ? http_fixture_url(e->server) : "http://127.0.0.1:1";
	assert_ptr_equal(strstr(url, "http://"), url);
	snprintf(yaml, sizeof(yaml),
	         "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
	         "clusters:\n- name: c\n  cluster:\n    server: https://%s\n"
	         "contexts:\n- name: t\n  context:\n    cluster: c\n    user: u\n"
	         "users:\n- name: u\n  user:\n    %s\n",
	         url + strlen("http://"), user);
	write_file(e->kubeconfig, yaml);
	if (kube_config_load_file(&e->cfg, e->kubeconfig, NULL, err) < 0)
		fail_msg("%s", err);
	snprintf(e->cfg.server, sizeof(e->cfg.server), "%s", url);
	if (kube_curl_init(&e->api, &e->cfg, USER_AGENT, err) < 0)
		fail_msg("%s", err);
	e->api.retry_deadline_ms = 10000;
	e->api.backoff_first_ms = 5;
	e->api.backoff_max_ms = 20;
}

/* Asserts that the server saw what its fixture expects, and cleans up. */
static void env_finish(struct env *e)
{
	const char *mismatches = e->server ? http_fixture_mismatches(e->server) : "";

	if (mismatches[0] != '\0')
		fail_msg("the fixture server saw:\n%s", mismatches);
	kube_api_release(&e->api);
	http_fixture_stop(e->server);
	kube_config_release(&e->cfg);
	unlink(e->token_file);
	unlink(e->kubeconfig);
	rmdir(e->dir);
}

static cJSON *parse(const char *text)
{
	cJSON *o = json_parse(text, strlen(text), NULL);

	assert_non_null(o);
	return o;
}

static const char *name_of(const cJSON *obj)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(meta, "name");

	assert_true(cJSON_IsString(name));
	return name->valuestring;
}

/* --- Round trips --- */

static void test_each_verb_sends_its_method_path_headers_and_body(void **state)
{
	struct env e;
	struct kube_result res;
	cJSON *out = NULL, *obj;
	char err[ERR_LEN];

	(void)state;
	env_start(&e, "verbs", NULL);
	if (kube_get(&e.api, "/api/v1/namespaces/ns/pods/x", &out, &res, err) < 0)
		fail_msg("%s", err);
	assert_int_equal(res.status, 200);
	assert_string_equal(name_of(out), "x");
	cJSON_Delete(out);

	obj = parse("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"y\"}}");
	if (kube_create(&e.api, "/api/v1/namespaces/ns/pods", obj, &out, &res, err) < 0)
		fail_msg("%s", err);
	assert_int_equal(res.status, 201);
	assert_string_equal(name_of(out), "y");
	cJSON_Delete(out);
	cJSON_Delete(obj);

	obj = parse("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"y\",\"labels\":{\"a\":\"b\"}}}");
	if (kube_update(&e.api, "/api/v1/namespaces/ns/pods/y", obj, NULL, NULL, err) < 0)
		fail_msg("%s", err);
	cJSON_Delete(obj);

	obj = parse("{\"status\":{\"phase\":\"Running\"}}");
	if (kube_merge_patch(&e.api,
	                     "/apis/training.mwj.io/v1/namespaces/ns/multiworkerjobs/j/status", obj,
	                     &out, NULL, err) < 0)
		fail_msg("%s", err);
	assert_string_equal(name_of(out), "j");
	cJSON_Delete(out);
	cJSON_Delete(obj);

	obj = parse("[{\"op\":\"remove\",\"path\":\"/metadata/labels/a\"}]");
	if (kube_json_patch(&e.api, "/api/v1/namespaces/ns/pods/y", obj, NULL, NULL, err) < 0)
		fail_msg("%s", err);
	cJSON_Delete(obj);

	if (kube_delete(&e.api, "/api/v1/namespaces/ns/pods/y", "u-y", "Background", 0, 0, &res,
	                err) < 0)
		fail_msg("%s", err);
	assert_int_equal(res.status, 200);

	obj = parse("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"y\"}}");
	assert_int_equal(kube_create(&e.api, "/api/v1/namespaces/ns/pods", obj, NULL, &res, err),
	                 -1);
	assert_int_equal(res.status, 409);
	assert_string_equal(res.reason, "AlreadyExists");
	assert_string_equal(err,
	                    "create pods 'ns/y': 409 AlreadyExists: pods \"y\" already exists");
	cJSON_Delete(obj);

	assert_int_equal(http_fixture_requests(e.server), 7);
	assert_int_equal(e.api.stats.requests, 7);
	assert_int_equal(e.api.stats.errors_4xx, 1);
	env_finish(&e);
}

static void test_429_with_retry_after_is_retried_through_curl(void **state)
{
	struct env e;
	struct kube_result res;
	cJSON *out = NULL;
	char err[ERR_LEN];
	long long t0, took;

	(void)state;
	env_start(&e, "retry_after", NULL);
	t0 = now_ms();
	if (kube_get(&e.api, "/api/v1/namespaces/ns/pods/x", &out, &res, err) < 0)
		fail_msg("%s", err);
	took = now_ms() - t0;
	assert_int_equal(res.status, 200);
	assert_string_equal(name_of(out), "x");
	assert_int_equal(http_fixture_requests(e.server), 2);
	assert_int_equal(e.api.stats.retries, 1);
	/* The header said one second. */
	assert_true(took >= 990);
	assert_true(took < 8000);
	cJSON_Delete(out);
	env_finish(&e);
}

static void test_requests_on_one_thread_share_one_connection(void **state)
{
	static const char *const paths[] = {"/api/v1/namespaces/ns/pods/a",
	                                    "/api/v1/namespaces/ns/pods/b",
	                                    "/api/v1/namespaces/ns/pods/c"};
	struct env e;
	char err[ERR_LEN];

	(void)state;
	env_start(&e, "reuse", NULL);
	for (int i = 0; i < 3; i++) {
		cJSON *out = NULL;

		if (kube_get(&e.api, paths[i], &out, NULL, err) < 0)
			fail_msg("%s", err);
		cJSON_Delete(out);
	}
	assert_int_equal(http_fixture_requests(e.server), 3);
	assert_int_equal(http_fixture_connections(e.server), 1);
	env_finish(&e);
}

static void test_a_rotated_token_file_is_used_for_the_next_request(void **state)
{
	struct env e;
	char err[ERR_LEN];
	cJSON *out = NULL;

	(void)state;
	env_start(&e, "token_rotation", "first-token\n");
	if (kube_get(&e.api, "/api/v1/namespaces/ns/pods/a", &out, NULL, err) < 0)
		fail_msg("%s", err);
	cJSON_Delete(out);
	/* Rotated as the kubelet does: a new file renamed over the old. */
	{
		char tmp[160];

		snprintf(tmp, sizeof(tmp), "%s.new", e.token_file);
		write_file(tmp, "the-rotated-token\n");
		assert_int_equal(rename(tmp, e.token_file), 0);
	}
	if (kube_get(&e.api, "/api/v1/namespaces/ns/pods/a", &out, NULL, err) < 0)
		fail_msg("%s", err);
	cJSON_Delete(out);
	env_finish(&e);
}

static void test_a_body_over_the_cap_is_refused(void **state)
{
	const struct kube_req req = {.method = "GET", .path = "/api/v1/pods", .timeout_ms = 5000};
	struct kube_resp resp;
	struct env e;
	char err[ERR_LEN];
	long long t0 = now_ms();

	(void)state;
	env_start(&e, "too_big", NULL);
	/* The backend alone: the retry layer would ask again. */
	assert_int_equal(e.api.ops->round_trip(&e.api, &req, &resp, err), -1);
	assert_int_equal(resp.status, 0);
	assert_null(resp.body);
	assert_string_equal(err, "response body larger than 67108864 bytes");
	/* Refused on the announced length, not after reading 64 MiB. */
	assert_true(now_ms() - t0 < 4000);
	env_finish(&e);
}

static void test_a_refused_connection_is_a_transport_error(void **state)
{
	const struct kube_req req = {.method = "GET", .path = "/api/v1/namespaces/ns/pods/a"};
	struct kube_resp resp;
	struct env e;
	char err[ERR_LEN];

	(void)state;
	env_start(&e, NULL, NULL);
	e.api.retry_deadline_ms = 100;
	assert_int_equal(kube_api_request(&e.api, &req, &resp, err), -1);
	assert_int_equal(resp.status, 0);
	assert_null(resp.body);
	assert_ptr_equal(strstr(err, "GET /api/v1/namespaces/ns/pods/a: "), err);
	assert_non_null(strstr(err, "gave up after"));
	assert_true(e.api.stats.transport_errors >= 2);
	env_finish(&e);
}

/* --- Watches --- */

#define MAX_PIECES 64

struct pieces {
	char data[4096];
	size_t len;
	int count;
	int stop_after; /* return -1 after this many pieces; 0: never */
	int got_first;  /* set once anything arrived, for another thread */
};

static int collect(const char *data, size_t len, void *ctx)
{
	struct pieces *p = ctx;

	assert_true(len > 0);
	assert_true(p->len + len < sizeof(p->data));
	memcpy(p->data + p->len, data, len);
	p->len += len;
	p->data[p->len] = '\0';
	p->count++;
	__atomic_store_n(&p->got_first, 1, __ATOMIC_RELEASE);
	return p->stop_after > 0 && p->count >= p->stop_after ? -1 : 0;
}

static void test_a_watch_body_arrives_in_pieces_as_it_is_sent(void **state)
{
	static const char want[] =
	    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
	    "\"resourceVersion\":\"6\"}}}\n"
	    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
	    "\"resourceVersion\":\"7\"}}}\n"
	    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{"
	    "\"resourceVersion\":\"9\"}}}\n";
	struct env e;
	struct pieces p = {.len = 0};
	char *body = NULL;
	long status = 0;
	char err[ERR_LEN];

	(void)state;
	env_start(&e, "watch", NULL);
	if (e.api.ops->stream(&e.api,
	                      "/api/v1/namespaces/ns/pods?watch=1&resourceVersion=5&"
	                      "allowWatchBookmarks=true",
	                      5000, collect, &p, &status, &body, err) < 0)
		fail_msg("%s", err);
	assert_int_equal(status, 200);
	assert_null(body);
	assert_string_equal(p.data, want);
	/* The pieces came 60 ms apart: libcurl handed each over as it came. */
	assert_true(p.count >= 4);
	env_finish(&e);
}

static void test_a_callback_returning_minus_one_ends_the_watch(void **state)
{
	struct env e;
	struct pieces p = {.stop_after = 1};
	char *body = NULL;
	long status = 0;
	char err[ERR_LEN];
	long long t0 = now_ms();

	(void)state;
	env_start(&e, "watch_silent", NULL);
	assert_int_equal(e.api.ops->stream(&e.api, "/api/v1/namespaces/ns/pods?watch=1", 0, collect,
	                                   &p, &status, &body, err),
	                 0);
	assert_int_equal(status, 200);
	assert_int_equal(p.count, 1);
	assert_true(now_ms() - t0 < 5000);
	env_finish(&e);
}

static void test_a_watch_that_goes_silent_ends_at_the_idle_time_out(void **state)
{
	struct env e;
	struct pieces p = {.len = 0};
	char *body = NULL;
	long status = 0;
	char err[ERR_LEN];
	long long t0 = now_ms(), took;

	(void)state;
	env_start(&e, "watch_silent", NULL);
	assert_int_equal(e.api.ops->stream(&e.api, "/api/v1/namespaces/ns/pods?watch=1", 300,
	                                   collect, &p, &status, &body, err),
	                 -1);
	took = now_ms() - t0;
	assert_string_equal(err, "no data for 300 ms");
	assert_int_equal(status, 200);
	assert_int_equal(p.count, 1);
	assert_true(took >= 290);
	assert_true(took < 5000);
	env_finish(&e);
}

struct watcher {
	struct kube_api *api;
	struct pieces p;
	int rc;
	long status;
	char err[ERR_LEN];
};

static void *watch_in_thread(void *arg)
{
	struct watcher *w = arg;
	char *body = NULL;

	w->rc = w->api->ops->stream(w->api, "/api/v1/namespaces/ns/pods?watch=1", 0, collect, &w->p,
	                            &w->status, &body, w->err);
	free(body);
	return NULL;
}

static void test_stop_ends_a_watch_in_progress(void **state)
{
	struct env e;
	struct watcher *w = calloc(1, sizeof(*w));
	pthread_t th;
	long long t0;

	(void)state;
	assert_non_null(w);
	env_start(&e, "watch_silent", NULL);
	w->api = &e.api;
	assert_int_equal(pthread_create(&th, NULL, watch_in_thread, w), 0);
	for (int i = 0; i < 5000 && !__atomic_load_n(&w->p.got_first, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	assert_true(__atomic_load_n(&w->p.got_first, __ATOMIC_ACQUIRE));
	t0 = now_ms();
	kube_api_stop(&e.api);
	pthread_join(th, NULL);
	/* Woken at once, not at the next second's poll. */
	assert_true(now_ms() - t0 < 500);
	assert_int_equal(w->rc, -1);
	assert_string_equal(w->err, "client stopping");
	assert_int_equal(w->status, 200);
	free(w);
	env_finish(&e);
}

static void test_a_refused_watch_returns_the_status_body(void **state)
{
	struct env e;
	struct pieces p = {.len = 0};
	char *body = NULL;
	long status = 0;
	char err[ERR_LEN];

	(void)state;
	env_start(&e, "watch_gone", NULL);
	if (e.api.ops->stream(&e.api, "/api/v1/namespaces/ns/pods?watch=1&resourceVersion=1", 1000,
	                      collect, &p, &status, &body, err) < 0)
		fail_msg("%s", err);
	assert_int_equal(status, 410);
	assert_int_equal(p.count, 0);
	assert_non_null(body);
	assert_non_null(strstr(body, "\"reason\":\"Expired\""));
	free(body);
	env_finish(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_each_verb_sends_its_method_path_headers_and_body),
	    cmocka_unit_test(test_429_with_retry_after_is_retried_through_curl),
	    cmocka_unit_test(test_requests_on_one_thread_share_one_connection),
	    cmocka_unit_test(test_a_rotated_token_file_is_used_for_the_next_request),
	    cmocka_unit_test(test_a_body_over_the_cap_is_refused),
	    cmocka_unit_test(test_a_refused_connection_is_a_transport_error),
	    cmocka_unit_test(test_a_watch_body_arrives_in_pieces_as_it_is_sent),
	    cmocka_unit_test(test_a_callback_returning_minus_one_ends_the_watch),
	    cmocka_unit_test(test_a_watch_that_goes_silent_ends_at_the_idle_time_out),
	    cmocka_unit_test(test_stop_ends_a_watch_in_progress),
	    cmocka_unit_test(test_a_refused_watch_returns_the_status_body),
	};
	int rc;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "curl_global_init failed\n");
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
