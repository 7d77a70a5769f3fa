/* test_informer.c - the informer against a fake API server kept in this
 * file: list requests are answered from a script, watch requests are held
 * open until the test scripts what they carry (as a quiet server holds
 * them), and every request's path is recorded, so that each test can say
 * which request the informer must make next and what it must have told
 * its handler by then.
 *
 * Waits are on conditions (a request made, a handler call seen), each
 * bounded by WAIT_MS; the only clock in a test is the resync's one second.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "informer.h"
#include "kube_api.h"
#include "watch_stream.h"

#define WAIT_MS    5000
#define MAX_SCRIPT 16
#define MAX_REQS   64
#define MAX_CHUNKS 24
#define MAX_CALLS  64
#define SELECTOR   "app.kubernetes.io/managed-by=mwj-operator"
#define SEL_QUERY  "labelSelector=app.kubernetes.io%2Fmanaged-by%3Dmwj-operator"
#define LIST_PATH  "/api/v1/pods?" SEL_QUERY "&limit=100"
#define WATCH_PATH(rv)                                                                             \
	"/api/v1/pods?watch=true&allowWatchBookmarks=true&resourceVersion=" rv                     \
	"&timeoutSeconds=300&" SEL_QUERY

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An absolute time ms from now, on the monotonic clock. */
static struct timespec deadline(long long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

static void cond_init_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(c, &attr);
	pthread_condattr_destroy(&attr);
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		abort();
	va_end(ap);
	return s;
}

/* --- The fake server --- */

struct reply {
	long status;              /* 0: no response at all (a transport error) */
	char *body;               /* a list's body, or a refused watch's */
	char *chunks[MAX_CHUNKS]; /* a watch's body, piece by piece */
	int nchunks;
	int endless; /* a watch that sends a bookmark every few ms until told to stop */
};

struct fake {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct reply lists[MAX_SCRIPT], watches[MAX_SCRIPT];
	int nlists, lists_served, nwatches, watches_served;
	char paths[MAX_REQS][KUBE_PATH_LEN];
	char kinds[MAX_REQS]; /* 'L' a list, 'W' a watch */
	int idle_ms[MAX_REQS];
	int nreqs;
	int stopped;
};

static void record(struct fake *f, char kind, const char *path, int idle_ms)
{
	if (f->nreqs < MAX_REQS) {
		snprintf(f->paths[f->nreqs], KUBE_PATH_LEN, "%s", path);
		f->kinds[f->nreqs] = kind;
		f->idle_ms[f->nreqs] = idle_ms;
	}
	f->nreqs++;
	pthread_cond_broadcast(&f->cond);
}

/* Waits, with f->lock held, until a reply of the kind is scripted (1), the
 * client stops (-1), or until_ms passes (0). */
static int await_reply(struct fake *f, const int *n, const int *served, long long until_ms)
{
	struct timespec ts = deadline(until_ms - now_ms());

	while (*served >= *n && !f->stopped) {
		if (pthread_cond_timedwait(&f->cond, &f->lock, &ts) == ETIMEDOUT)
			return 0;
	}
	return f->stopped ? -1 : 1;
}

static int fake_round_trip(struct kube_api *api, const struct kube_req *req, struct kube_resp *resp,
                           char *err)
{
	struct fake *f = api->impl;
	struct reply r;

	pthread_mutex_lock(&f->lock);
	record(f, 'L', req->path, req->timeout_ms);
	if (await_reply(f, &f->nlists, &f->lists_served, now_ms() + 60000) <= 0) {
		pthread_mutex_unlock(&f->lock);
		return err_set(err, "fake: no reply");
	}
	r = f->lists[f->lists_served++];
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	if (r.status == 0)
		return err_set(err, "connection refused");
	resp->status = r.status;
	resp->body = fmt("%s", r.body != NULL ? r.body : "");
	resp->body_len = strlen(resp->body);
	return 0;
}

/* The watch's timeoutSeconds, after which a real server ends it. */
static long long watch_timeout_ms(const char *path)
{
	const char *t = strstr(path, "timeoutSeconds=");

	return t != NULL ? strtoll(t + strlen("timeoutSeconds="), NULL, 10) * 1000 : 300000;
}

static int fake_stream(struct kube_api *api, const char *path, int idle_ms, kube_stream_fn fn,
                       void *ctx, long *status, char **resp_body, char *err)
{
	struct fake *f = api->impl;
	struct reply r;
	int rc;

	pthread_mutex_lock(&f->lock);
	record(f, 'W', path, idle_ms);
	rc = await_reply(f, &f->nwatches, &f->watches_served, now_ms() + watch_timeout_ms(path));
	if (rc <= 0) {
		pthread_mutex_unlock(&f->lock);
		*status = rc == 0 ? 200 : 0;
		return rc == 0 ? 0 : err_set(err, "fake: stopped");
	}
	r = f->watches[f->watches_served++];
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);

	*status = r.status;
	if (r.status == 0)
		return err_set(err, "connection reset by peer");
	if (r.status != 200) {
		*resp_body = fmt("%s", r.body != NULL ? r.body : "");
		return 0;
	}
	for (int i = 0; i < r.nchunks; i++) {
		if (fn(r.chunks[i], strlen(r.chunks[i]), ctx) < 0)
			return 0;
	}
	while (r.endless) {
		static const char mark[] = "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":"
		                           "{\"resourceVersion\":\"10\"}}}\n";
		struct timespec pause = {0, 2000000};

		if (fn(mark, sizeof(mark) - 1, ctx) < 0)
			return 0;
		nanosleep(&pause, NULL);
	}
	return 0;
}

static void fake_stop(struct kube_api *api)
{
	struct fake *f = api->impl;

	pthread_mutex_lock(&f->lock);
	f->stopped = 1;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

static const struct kube_api_ops FAKE_OPS = {
    .name = "fake",
    .round_trip = fake_round_trip,
    .stream = fake_stream,
    .stop = fake_stop,
};

static void add_reply(struct fake *f, struct reply *list, int *n, const struct reply *r)
{
	pthread_mutex_lock(&f->lock);
	assert_true(*n < MAX_SCRIPT);
	list[(*n)++] = *r;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

/* Scripts the next list reply; body is taken over. */
static void script_list(struct fake *f, long status, char *body)
{
	struct reply r = {.status = status, .body = body};

	add_reply(f, f->lists, &f->nlists, &r);
}

/* Scripts the next watch: a 200 whose body is the n pieces given (each
 * taken over), then the end of the response. */
static void script_watch_pieces(struct fake *f, char **pieces, int n)
{
	struct reply r = {.status = 200, .nchunks = n};

	assert_true(n >= 0 && n <= MAX_CHUNKS);
	for (int i = 0; i < n; i++)
		r.chunks[i] = pieces[i];
	add_reply(f, f->watches, &f->nwatches, &r);
}

#define script_watch(f, ...)                                                                       \
	script_watch_pieces(f, (char *[]){__VA_ARGS__},                                            \
	                    (int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)))

/* Scripts the next watch as refused with status (0: no response). */
static void script_watch_status(struct fake *f, long status, char *body)
{
	struct reply r = {.status = status, .body = body};

	add_reply(f, f->watches, &f->nwatches, &r);
}

/* Waits until at least n requests were made; returns how many. */
static int wait_requests(struct fake *f, int n)
{
	struct timespec ts = deadline(WAIT_MS);
	int got;

	pthread_mutex_lock(&f->lock);
	while (f->nreqs < n) {
		if (pthread_cond_timedwait(&f->cond, &f->lock, &ts) == ETIMEDOUT)
			break;
	}
	got = f->nreqs;
	pthread_mutex_unlock(&f->lock);
	assert_true(got >= n);
	return got;
}

/* Request i (0-based) was of kind with this path. */
static void assert_request(struct fake *f, int i, char kind, const char *path)
{
	wait_requests(f, i + 1);
	pthread_mutex_lock(&f->lock);
	if (f->kinds[i] != kind || strcmp(f->paths[i], path) != 0)
		fail_msg("request %d: %c %s, expected %c %s", i, f->kinds[i], f->paths[i], kind,
		         path);
	pthread_mutex_unlock(&f->lock);
}

static void fake_release(struct fake *f)
{
	struct reply *all[] = {f->lists, f->watches};
	int counts[] = {f->nlists, f->nwatches};

	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < counts[k]; i++) {
			free(all[k][i].body);
			for (int c = 0; c < all[k][i].nchunks; c++)
				free(all[k][i].chunks[c]);
		}
	}
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
}

/* --- Objects --- */

static char *pod(const char *name, const char *rv)
{
	return fmt(
	    "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"resourceVersion\":\"%s\"},"
	    "\"spec\":{\"nodeName\":\"n1\"}}",
	    name, rv);
}

/* A PodList page: items is a comma-separated list of pods (taken over). */
static char *list_body(const char *rv, const char *cont, char *items)
{
	char *s =
	    fmt("{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
	        "\"%s\"%s%s%s},\"items\":[%s]}",
	        rv, cont ? ",\"continue\":\"" : "", cont ? cont : "", cont ? "\"" : "",
	        items != NULL ? items : "");

	free(items);
	return s;
}

static char *items2(char *a, char *b)
{
	char *s = fmt("%s,%s", a, b);

	free(a);
	free(b);
	return s;
}

static char *items3(char *a, char *b, char *c)
{
	return items2(items2(a, b), c);
}

/* One watch line. */
static char *event(const char *type, const char *name, const char *rv)
{
	return fmt(
	    "{\"type\":\"%s\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":"
	    "{\"name\":\"%s\",\"namespace\":\"ns\",\"resourceVersion\":\"%s\"}}}\n",
	    type, name, rv);
}

static char *bookmark(const char *rv)
{
	return fmt("{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
	           "\"metadata\":{\"resourceVersion\":\"%s\"}}}\n",
	           rv);
}

static char *status_410(void)
{
	return fmt("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
	           "\"Failure\",\"message\":\"too old resource version: 10 (50)\",\"reason\":"
	           "\"Expired\",\"code\":410}");
}

static char *error_event(long code)
{
	return fmt("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
	           "\"metadata\":{},\"status\":\"Failure\",\"message\":\"error %ld\",\"code\":%ld}}"
	           "\n",
	           code, code);
}

/* --- What the handler saw --- */

struct call {
	enum informer_op op;
	char key[64], rv[32], old_rv[32];
	int well_formed;  /* an object with a key, and an old one unless ADD */
	int cache_agrees; /* the cache held obj (DELETE: held nothing) during the call */
};

struct calls {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct call c[MAX_CALLS];
	int n;
	struct informer *inf;
	/* The relisted hook: how many calls, and for each the handler calls
	 * made before it and the list's start time. */
	int relists;
	int calls_before[4];
	long long list_start[4];
};

static const char *rv_of(const cJSON *obj)
{
	const cJSON *rv =
	    cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "resourceVersion");

	return cJSON_IsString(rv) ? rv->valuestring : "";
}

static void on_change(void *ctx, enum informer_op op, const cJSON *old, const cJSON *obj)
{
	struct calls *calls = ctx;
	struct call c = {.op = op};
	const char *slash;
	cJSON *cached;

	/* No cmocka assertion here: this is the informer's thread. What is
	 * wrong is recorded, and assert_call fails on it. */
	c.well_formed = obj != NULL && (op == INFORMER_ADD) == (old == NULL) &&
	                informer_key(obj, c.key, sizeof(c.key)) == 0;
	snprintf(c.rv, sizeof(c.rv), "%s", rv_of(obj));
	snprintf(c.old_rv, sizeof(c.old_rv), "%s", old != NULL ? rv_of(old) : "-");
	/* The handler runs without the informer's lock, after the change. */
	slash = strchr(c.key, '/');
	cached = informer_get(calls->inf, "ns", slash != NULL ? slash + 1 : c.key);
	c.cache_agrees = op == INFORMER_DELETE ? cached == NULL
	                                       : cached != NULL && strcmp(rv_of(cached), c.rv) == 0;
	cJSON_Delete(cached);

	pthread_mutex_lock(&calls->lock);
	if (calls->n < MAX_CALLS)
		calls->c[calls->n] = c;
	calls->n++;
	pthread_cond_broadcast(&calls->cond);
	pthread_mutex_unlock(&calls->lock);
}

static int wait_calls(struct calls *calls, int n)
{
	struct timespec ts = deadline(WAIT_MS);
	int got;

	pthread_mutex_lock(&calls->lock);
	while (calls->n < n) {
		if (pthread_cond_timedwait(&calls->cond, &calls->lock, &ts) == ETIMEDOUT)
			break;
	}
	got = calls->n;
	pthread_mutex_unlock(&calls->lock);
	assert_true(got >= n);
	return got;
}

static void on_relisted(void *ctx, long long list_start_ms)
{
	struct calls *calls = ctx;

	pthread_mutex_lock(&calls->lock);
	if (calls->relists < 4) {
		calls->calls_before[calls->relists] = calls->n;
		calls->list_start[calls->relists] = list_start_ms;
	}
	calls->relists++;
	pthread_cond_broadcast(&calls->cond);
	pthread_mutex_unlock(&calls->lock);
}

static int call_count(struct calls *calls)
{
	int n;

	pthread_mutex_lock(&calls->lock);
	n = calls->n;
	pthread_mutex_unlock(&calls->lock);
	return n;
}

/* Asserts that calls from..n-1 hold exactly one call for key, with this op
 * and versions ("-": no old object). */
static void assert_call(struct calls *calls, int from, enum informer_op op, const char *key,
                        const char *old_rv, const char *rv)
{
	const struct call *found = NULL;

	pthread_mutex_lock(&calls->lock);
	for (int i = from; i < calls->n && i < MAX_CALLS; i++) {
		if (strcmp(calls->c[i].key, key) != 0)
			continue;
		if (found != NULL)
			fail_msg("two calls for '%s'", key);
		found = &calls->c[i];
	}
	pthread_mutex_unlock(&calls->lock);
	if (found == NULL) {
		fail_msg("no call for '%s'", key);
		return;
	}
	assert_true(found->well_formed);
	assert_int_equal(found->op, op);
	assert_string_equal(found->old_rv, old_rv);
	assert_string_equal(found->rv, rv);
	assert_true(found->cache_agrees);
}

static void assert_cached(struct informer *inf, const char *name, const char *rv)
{
	cJSON *obj = informer_get(inf, "ns", name);

	if (rv == NULL) {
		assert_null(obj);
		return;
	}
	assert_non_null(obj);
	assert_string_equal(rv_of(obj), rv);
	cJSON_Delete(obj);
}

/* --- Fixture --- */

struct env {
	struct fake fake;
	struct kube_api api;
	struct informer_config cfg;
	struct informer inf;
	struct calls calls;
	int started;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	pthread_mutex_init(&e->fake.lock, NULL);
	cond_init_monotonic(&e->fake.cond);
	e->api.ops = &FAKE_OPS;
	e->api.impl = &e->fake;
	/* Back-off in milliseconds, so that retries do not slow the tests. */
	e->api.backoff_first_ms = 2;
	e->api.backoff_max_ms = 20;
	e->api.retry_deadline_ms = 50;
	pthread_mutex_init(&e->calls.lock, NULL);
	cond_init_monotonic(&e->calls.cond);
	e->calls.inf = &e->inf;
	e->cfg = (struct informer_config){
	    .name = "pods",
	    .group = "",
	    .version = "v1",
	    .plural = "pods",
	    .label_selector = SELECTOR,
	    .handler = on_change,
	    .handler_ctx = &e->calls,
	};
	*state = e;
	return 0;
}

static void start(struct env *e)
{
	char err[ERR_LEN];

	informer_init(&e->inf, &e->api, &e->cfg);
	assert_int_equal(informer_start(&e->inf, err), 0);
	e->started = 1;
}

static int teardown(void **state)
{
	struct env *e = *state;

	kube_api_stop(&e->api);
	if (e->started) {
		informer_stop(&e->inf);
		informer_release(&e->inf);
	}
	fake_release(&e->fake);
	pthread_cond_destroy(&e->calls.cond);
	pthread_mutex_destroy(&e->calls.lock);
	free(e);
	return 0;
}

/* Lists a and b (versions 5 and 7) at version 10 and waits for the watch. */
static void start_synced(struct env *e)
{
	script_list(&e->fake, 200, list_body("10", NULL, items2(pod("a", "5"), pod("b", "7"))));
	start(e);
	assert_int_equal(informer_wait_synced(&e->inf, WAIT_MS), 1);
	assert_request(&e->fake, 1, 'W', WATCH_PATH("10"));
}

/* --- Listing --- */

static void test_the_first_list_fills_the_cache_and_adds_each_object(void **state)
{
	struct env *e = *state;

	start_synced(e);
	assert_request(&e->fake, 0, 'L', LIST_PATH);
	/* Synced means the handler has seen the whole first list. */
	assert_int_equal(call_count(&e->calls), 2);
	assert_call(&e->calls, 0, INFORMER_ADD, "ns/a", "-", "5");
	assert_call(&e->calls, 0, INFORMER_ADD, "ns/b", "-", "7");
	assert_cached(&e->inf, "a", "5");
	assert_cached(&e->inf, "b", "7");
	/* The watch's idle time-out is its timeoutSeconds and a margin. */
	assert_true(e->fake.idle_ms[1] > 300 * 1000);
}

static void test_a_list_is_read_page_by_page(void **state)
{
	struct env *e = *state;

	script_list(&e->fake, 200, list_body("10", "tok/1=", pod("a", "5")));
	script_list(&e->fake, 200, list_body("10", NULL, pod("b", "7")));
	start(e);
	assert_int_equal(informer_wait_synced(&e->inf, WAIT_MS), 1);
	assert_request(&e->fake, 0, 'L', LIST_PATH);
	/* The token travels escaped. */
	assert_request(&e->fake, 1, 'L', LIST_PATH "&continue=tok%2F1%3D");
	assert_request(&e->fake, 2, 'W', WATCH_PATH("10"));
	assert_call(&e->calls, 0, INFORMER_ADD, "ns/a", "-", "5");
	assert_call(&e->calls, 0, INFORMER_ADD, "ns/b", "-", "7");
}

static void test_an_expired_continue_token_falls_back_to_one_full_list(void **state)
{
	struct env *e = *state;

	script_list(&e->fake, 200, list_body("10", "t1", pod("x", "3")));
	script_list(&e->fake, 410, status_410());
	script_list(&e->fake, 200, list_body("20", NULL, items2(pod("a", "5"), pod("b", "7"))));
	start(e);
	assert_int_equal(informer_wait_synced(&e->inf, WAIT_MS), 1);
	assert_request(&e->fake, 1, 'L', LIST_PATH "&continue=t1");
	assert_request(&e->fake, 2, 'L', "/api/v1/pods?" SEL_QUERY);
	assert_request(&e->fake, 3, 'W', WATCH_PATH("20"));
	/* Nothing of the abandoned page is kept. */
	assert_int_equal(call_count(&e->calls), 2);
	assert_call(&e->calls, 0, INFORMER_ADD, "ns/a", "-", "5");
	assert_cached(&e->inf, "x", NULL);
}

static void test_a_failed_list_is_retried(void **state)
{
	struct env *e = *state;

	script_list(&e->fake, 403,
	            fmt("{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"message\":\"no\","
	                "\"code\":403}"));
	/* No response at all: the client retries it, or the informer does. */
	script_list(&e->fake, 0, NULL);
	script_list(&e->fake, 200, list_body("10", NULL, pod("a", "5")));
	start(e);
	assert_int_equal(informer_wait_synced(&e->inf, WAIT_MS), 1);
	for (int i = 0; i < 3; i++)
		assert_request(&e->fake, i, 'L', LIST_PATH);
	assert_request(&e->fake, 3, 'W', WATCH_PATH("10"));
	assert_int_equal(call_count(&e->calls), 1);
	assert_int_equal(e->inf.lists, 1);
}

static void test_a_list_that_is_not_a_list_is_retried(void **state)
{
	struct env *e = *state;

	script_list(&e->fake, 200, fmt("<html>proxy error</html>"));
	script_list(&e->fake, 200, fmt("{\"metadata\":{},\"items\":[]}"));
	script_list(&e->fake, 200, fmt("{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":{}}"));
	script_list(&e->fake, 200, list_body("9 9", NULL, NULL));
	script_list(&e->fake, 200, list_body("10", NULL, pod("a", "5")));
	start(e);
	assert_int_equal(informer_wait_synced(&e->inf, WAIT_MS), 1);
	assert_request(&e->fake, 5, 'W', WATCH_PATH("10"));
	assert_int_equal(call_count(&e->calls), 1);
}

static void test_items_without_a_name_are_skipped(void **state)
{
	struct env *e = *state;

	script_list(&e->fake, 200,
	            list_body("10", NULL,
	                      fmt("{\"metadata\":{}},7,{\"metadata\":{\"name\":\"x/y\"}},%s",
	                          "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\"}}")));
	start(e);
	assert_int_equal(informer_wait_synced(&e->inf, WAIT_MS), 1);
	assert_int_equal(call_count(&e->calls), 1);
	assert_call(&e->calls, 0, INFORMER_ADD, "ns/a", "-", "");
}

static void test_a_namespaced_resource_of_a_group_has_its_own_paths(void **state)
{
	struct env *e = *state;

	e->cfg.group = "training.mwj.io";
	e->cfg.plural = "multiworkerjobs";
	e->cfg.namespace = "team-a";
	e->cfg.label_selector = NULL;
	e->cfg.watch_timeout_s = 60;
	script_list(&e->fake, 200, list_body("10", NULL, NULL));
	start(e);
	assert_request(&e->fake, 0, 'L',
	               "/apis/training.mwj.io/v1/namespaces/team-a/multiworkerjobs?limit=100");
	assert_request(&e->fake, 1, 'W',
	               "/apis/training.mwj.io/v1/namespaces/team-a/multiworkerjobs?watch=true&"
	               "allowWatchBookmarks=true&resourceVersion=10&timeoutSeconds=60");
	assert_int_equal(e->fake.idle_ms[1], (60 + 30) * 1000);
}

static void test_wait_synced_times_out_before_the_first_list(void **state)
{
	struct env *e = *state;

	start(e);
	assert_int_equal(informer_wait_synced(&e->inf, 20), 0);
	script_list(&e->fake, 200, list_body("10", NULL, NULL));
	assert_int_equal(informer_wait_synced(&e->inf, WAIT_MS), 1);
}

/* --- Watching --- */

static void test_watch_events_update_the_cache_and_call_the_handler(void **state)
{
	struct env *e = *state;

	char *modified = event("MODIFIED", "a", "12");
	char *deleted = event("DELETED", "b", "13");

	start_synced(e);
	/* Several events in one piece, one split across two pieces. */
	script_watch(&e->fake, event("ADDED", "c", "11"), fmt("%s%.20s", modified, deleted),
	             fmt("%s", deleted + 20));
	free(modified);
	free(deleted);
	wait_calls(&e->calls, 5);
	assert_call(&e->calls, 2, INFORMER_ADD, "ns/c", "-", "11");
	assert_call(&e->calls, 2, INFORMER_UPDATE, "ns/a", "5", "12");
	assert_call(&e->calls, 2, INFORMER_DELETE, "ns/b", "7", "13");
	assert_cached(&e->inf, "a", "12");
	assert_cached(&e->inf, "b", NULL);
	assert_cached(&e->inf, "c", "11");
}

/* A transform that marks what it saw and drops the labels. */
static void drop_labels(cJSON *obj)
{
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");

	cJSON_DeleteItemFromObjectCaseSensitive(meta, "labels");
	cJSON_AddTrueToObject(obj, "transformed");
}

static int transformed(struct informer *inf, const char *name)
{
	cJSON *obj = informer_get(inf, "ns", name);
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	int yes = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, "transformed")) &&
	          cJSON_GetObjectItemCaseSensitive(meta, "labels") == NULL;

	cJSON_Delete(obj);
	return yes;
}

static void test_the_transform_shapes_listed_and_watched_objects(void **state)
{
	struct env *e = *state;

	e->cfg.transform = drop_labels;
	start_synced(e);
	assert_true(transformed(&e->inf, "a"));
	assert_true(transformed(&e->inf, "b"));
	script_watch(&e->fake, event("ADDED", "c", "11"));
	wait_calls(&e->calls, 3);
	assert_true(transformed(&e->inf, "c"));
}

static void test_a_watch_that_ends_resumes_from_the_last_version(void **state)
{
	struct env *e = *state;

	start_synced(e);
	script_watch(&e->fake, event("MODIFIED", "a", "15"));
	assert_request(&e->fake, 2, 'W', WATCH_PATH("15"));
	/* An ADDED for a cached key is an update. */
	script_watch(&e->fake, event("ADDED", "a", "18"), event("ADDED", "c", "20"));
	assert_request(&e->fake, 3, 'W', WATCH_PATH("20"));
	assert_call(&e->calls, 3, INFORMER_UPDATE, "ns/a", "15", "18");
	assert_int_equal(e->inf.lists, 1);
}

static void test_a_bookmark_advances_the_version_without_calling_the_handler(void **state)
{
	struct env *e = *state;

	start_synced(e);
	script_watch(&e->fake, bookmark("30"));
	assert_request(&e->fake, 2, 'W', WATCH_PATH("30"));
	assert_int_equal(call_count(&e->calls), 2);
	assert_cached(&e->inf, "a", "5");
}

static void test_a_version_from_the_server_cannot_add_a_query_parameter(void **state)
{
	struct env *e = *state;

	start_synced(e);
	script_watch(&e->fake, bookmark("7&watch=false"));
	assert_request(&e->fake, 2, 'W', WATCH_PATH("7%26watch%3Dfalse"));
}

/* After 410 the informer lists again: a unchanged, b changed, c gone, d
 * new; the handler hears of b, c and d only. */
static void expect_relist_after_gone(struct env *e, int first_list_request)
{
	script_list(&e->fake, 200,
	            list_body("50", NULL, items3(pod("a", "5"), pod("b", "40"), pod("d", "45"))));
	assert_request(&e->fake, first_list_request, 'L', LIST_PATH);
	assert_request(&e->fake, first_list_request + 1, 'W', WATCH_PATH("50"));
	assert_int_equal(call_count(&e->calls), 3 + 3);
	assert_call(&e->calls, 3, INFORMER_UPDATE, "ns/b", "7", "40");
	assert_call(&e->calls, 3, INFORMER_DELETE, "ns/c", "9", "9");
	assert_call(&e->calls, 3, INFORMER_ADD, "ns/d", "-", "45");
	assert_cached(&e->inf, "c", NULL);
	assert_int_equal(e->inf.relists_after_gone, 1);
	assert_int_equal(e->inf.lists, 2);
}

static void test_a_410_status_lists_again_and_reports_what_changed(void **state)
{
	struct env *e = *state;

	start_synced(e);
	script_watch(&e->fake, event("ADDED", "c", "9"));
	assert_request(&e->fake, 2, 'W', WATCH_PATH("9"));
	script_watch_status(&e->fake, 410, status_410());
	expect_relist_after_gone(e, 3);
}

static void test_a_410_error_event_lists_again_and_reports_what_changed(void **state)
{
	struct env *e = *state;

	start_synced(e);
	script_watch(&e->fake, event("ADDED", "c", "9"), error_event(410));
	expect_relist_after_gone(e, 2);
}

/* After every list, and after the handler heard of it, the relisted hook
 * is told when the list began: what was done before then is in it. */
static void test_each_list_is_reported_with_its_start_after_its_changes(void **state)
{
	struct env *e = *state;
	long long t0 = now_ms(), t1;

	e->cfg.relisted = on_relisted;
	start_synced(e);
	script_watch(&e->fake, event("ADDED", "c", "9"));
	assert_request(&e->fake, 2, 'W', WATCH_PATH("9"));
	t1 = now_ms();
	script_watch_status(&e->fake, 410, status_410());
	expect_relist_after_gone(e, 3);
	pthread_mutex_lock(&e->calls.lock);
	assert_int_equal(e->calls.relists, 2);
	assert_int_equal(e->calls.calls_before[0], 2);
	assert_int_equal(e->calls.calls_before[1], 6);
	assert_true(e->calls.list_start[0] >= t0);
	assert_true(e->calls.list_start[1] >= t1);
	assert_true(e->calls.list_start[1] <= now_ms());
	pthread_mutex_unlock(&e->calls.lock);
}

static void test_another_error_event_resumes_the_watch(void **state)
{
	struct env *e = *state;

	start_synced(e);
	script_watch(&e->fake, event("MODIFIED", "a", "11"), error_event(500));
	assert_request(&e->fake, 2, 'W', WATCH_PATH("11"));
	assert_int_equal(e->inf.watch_errors, 1);
	assert_int_equal(e->inf.lists, 1);
}

static void test_a_refused_or_broken_watch_is_retried_from_the_same_version(void **state)
{
	struct env *e = *state;

	start_synced(e);
	script_watch_status(&e->fake, 500, fmt("{\"kind\":\"Status\",\"message\":\"etcd\"}"));
	assert_request(&e->fake, 2, 'W', WATCH_PATH("10"));
	script_watch_status(&e->fake, 0, NULL);
	assert_request(&e->fake, 3, 'W', WATCH_PATH("10"));
	/* A watch that ends at once with nothing in it failed too. */
	script_watch_pieces(&e->fake, NULL, 0);
	assert_request(&e->fake, 4, 'W', WATCH_PATH("10"));
	assert_int_equal(e->inf.watch_errors, 3);
	assert_int_equal(e->inf.lists, 1);
}

static void test_a_malformed_line_restarts_the_watch(void **state)
{
	struct env *e = *state;

	start_synced(e);
	/* The event before the bad line counts; the one after it is not read. */
	script_watch(&e->fake, event("MODIFIED", "a", "11"), fmt("not json\n"),
	             event("MODIFIED", "b", "12"));
	assert_request(&e->fake, 2, 'W', WATCH_PATH("11"));
	assert_cached(&e->inf, "a", "11");
	assert_cached(&e->inf, "b", "7");
	assert_int_equal(e->inf.watch_errors, 1);
}

static void test_an_oversized_line_restarts_the_watch(void **state)
{
	struct env *e = *state;
	size_t piece = 1u << 20;
	struct reply r = {.status = 200};

	start_synced(e);
	/* WATCH_LINE_MAX and one byte more, a mebibyte at a time, no newline. */
	for (size_t sent = 0; sent <= WATCH_LINE_MAX; sent += piece) {
		size_t n = WATCH_LINE_MAX + 1 - sent < piece ? WATCH_LINE_MAX + 1 - sent : piece;
		char *c = malloc(n + 1);

		assert_non_null(c);
		memset(c, 'x', n);
		c[n] = '\0';
		assert_true(r.nchunks < MAX_CHUNKS);
		r.chunks[r.nchunks++] = c;
	}
	add_reply(&e->fake, e->fake.watches, &e->fake.nwatches, &r);
	assert_request(&e->fake, 2, 'W', WATCH_PATH("10"));
	assert_int_equal(e->inf.watch_errors, 1);
	assert_int_equal(e->inf.lists, 1);
}

static void test_a_bad_line_met_twice_before_any_event_lists_again(void **state)
{
	struct env *e = *state;

	start_synced(e);
	script_watch(&e->fake, fmt("{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}\n"));
	assert_request(&e->fake, 2, 'W', WATCH_PATH("10"));
	script_watch(&e->fake, fmt("{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}\n"));
	script_list(&e->fake, 200, list_body("60", NULL, pod("a", "5")));
	assert_request(&e->fake, 3, 'L', LIST_PATH);
	assert_request(&e->fake, 4, 'W', WATCH_PATH("60"));
	assert_call(&e->calls, 2, INFORMER_DELETE, "ns/b", "7", "7");
}

static void test_resync_calls_the_handler_for_every_cached_object(void **state)
{
	struct env *e = *state;

	e->cfg.resync_s = 1;
	script_list(&e->fake, 200, list_body("10", NULL, items2(pod("a", "5"), pod("b", "7"))));
	start(e);
	assert_int_equal(informer_wait_synced(&e->inf, WAIT_MS), 1);
	/* The quiet watch is asked to end by the resync, and is resumed. */
	wait_requests(&e->fake, 2);
	assert_non_null(strstr(e->fake.paths[1], "&timeoutSeconds=1&"));
	wait_calls(&e->calls, 4);
	assert_int_equal(e->calls.c[2].op, INFORMER_RESYNC);
	assert_int_equal(e->calls.c[3].op, INFORMER_RESYNC);
	assert_true(strcmp(e->calls.c[2].key, e->calls.c[3].key) != 0);
	assert_int_equal(e->inf.lists, 1);
}

/* --- Reading the cache --- */

static int keep_b(const cJSON *obj, void *ctx)
{
	char key[64];

	(void)ctx;
	return informer_key(obj, key, sizeof(key)) == 0 && strcmp(key, "ns/b") == 0;
}

static void test_get_and_list_return_deep_copies(void **state)
{
	struct env *e = *state;
	cJSON *a, *all, *only_b;

	start_synced(e);
	a = informer_get(&e->inf, "ns", "a");
	assert_non_null(a);
	/* Changing or deleting the copy leaves the cache alone. */
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(a, "spec"), "nodeName");
	cJSON_Delete(a);
	a = informer_get(&e->inf, "ns", "a");
	assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "spec"), "nodeName"));
	/* Items of a typed list get the kind and apiVersion a watch would send. */
	assert_string_equal(cJSON_GetObjectItem(a, "kind")->valuestring, "Pod");
	assert_string_equal(cJSON_GetObjectItem(a, "apiVersion")->valuestring, "v1");
	cJSON_Delete(a);
	assert_null(informer_get(&e->inf, "ns", "zz"));
	assert_null(informer_get(&e->inf, "", "a"));

	all = informer_list(&e->inf, NULL, NULL);
	assert_int_equal(cJSON_GetArraySize(all), 2);
	cJSON_DeleteItemFromArray(all, 0);
	cJSON_Delete(all);
	only_b = informer_list(&e->inf, keep_b, NULL);
	assert_int_equal(cJSON_GetArraySize(only_b), 1);
	assert_string_equal(rv_of(cJSON_GetArrayItem(only_b, 0)), "7");
	cJSON_Delete(only_b);
	assert_cached(&e->inf, "a", "5");
	assert_cached(&e->inf, "b", "7");
}

static void test_keys_are_namespace_slash_name(void **state)
{
	static const struct {
		const char *json;
		int rc;
		const char *key;
	} cases[] = {
	    {"{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"}}", 0, "ns/p"},
	    {"{\"metadata\":{\"name\":\"node1\"}}", 0, "node1"},
	    {"{\"metadata\":{\"name\":\"node1\",\"namespace\":\"\"}}", 0, "node1"},
	    {"{\"metadata\":{\"namespace\":\"ns\"}}", -1, NULL},
	    {"{\"metadata\":{\"name\":\"\"}}", -1, NULL},
	    {"{\"metadata\":{\"name\":7}}", -1, NULL},
	    {"{\"metadata\":{\"name\":\"a/b\"}}", -1, NULL},
	    {"{\"metadata\":{\"name\":\"b\",\"namespace\":\"x/a\"}}", -1, NULL},
	    {"{\"metadata\":{\"name\":\"a-name-longer-than-the-buffer\"}}", -1, NULL},
	    {"[]", -1, NULL},
	};
	char key[16];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *obj = cJSON_Parse(cases[i].json);

		assert_int_equal(informer_key(obj, key, sizeof(key)), cases[i].rc);
		if (cases[i].rc == 0)
			assert_string_equal(key, cases[i].key);
		cJSON_Delete(obj);
	}
}

/* --- Stopping --- */

static void test_stop_is_prompt_during_a_quiet_watch(void **state)
{
	struct env *e = *state;
	long long t0;

	start_synced(e);
	t0 = now_ms();
	kube_api_stop(&e->api);
	informer_stop(&e->inf);
	assert_true(now_ms() - t0 < 1000);
	/* Stopped: wait_synced says no. */
	assert_int_equal(informer_wait_synced(&e->inf, 10), 0);
}

static void test_stop_is_prompt_during_a_busy_watch_without_stopping_the_client(void **state)
{
	struct env *e = *state;
	struct reply r = {.status = 200, .endless = 1};
	long long t0;

	start_synced(e);
	add_reply(&e->fake, e->fake.watches, &e->fake.nwatches, &r);
	t0 = now_ms();
	informer_stop(&e->inf);
	assert_true(now_ms() - t0 < 1000);
}

static void test_stop_is_prompt_during_a_back_off(void **state)
{
	struct env *e = *state;
	long long t0;

	e->api.backoff_first_ms = 60000;
	e->api.backoff_max_ms = 60000;
	script_list(&e->fake, 403, fmt("{\"kind\":\"Status\",\"code\":403}"));
	start(e);
	/* The list was refused: the informer waits half a minute or more. */
	pthread_mutex_lock(&e->fake.lock);
	while (e->fake.lists_served < 1)
		pthread_cond_wait(&e->fake.cond, &e->fake.lock);
	pthread_mutex_unlock(&e->fake.lock);
	t0 = now_ms();
	informer_stop(&e->inf);
	assert_true(now_ms() - t0 < 1000);
	assert_int_equal(wait_requests(&e->fake, 1), 1);
}

static void test_start_refuses_a_config_without_a_resource(void **state)
{
	struct env *e = *state;
	struct informer inf;
	char err[ERR_LEN];

	e->cfg.plural = NULL;
	informer_init(&inf, &e->api, &e->cfg);
	assert_int_equal(informer_start(&inf, err), -1);
	assert_string_equal(err, "informer: version and plural are required");
	informer_release(&inf);
	informer_release(NULL);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_the_first_list_fills_the_cache_and_adds_each_object),
	    T(test_a_list_is_read_page_by_page),
	    T(test_an_expired_continue_token_falls_back_to_one_full_list),
	    T(test_a_failed_list_is_retried),
	    T(test_a_list_that_is_not_a_list_is_retried),
	    T(test_items_without_a_name_are_skipped),
	    T(test_a_namespaced_resource_of_a_group_has_its_own_paths),
	    T(test_wait_synced_times_out_before_the_first_list),
	    T(test_the_transform_shapes_listed_and_watched_objects),
	    T(test_watch_events_update_the_cache_and_call_the_handler),
	    T(test_a_watch_that_ends_resumes_from_the_last_version),
	    T(test_a_bookmark_advances_the_version_without_calling_the_handler),
	    T(test_a_version_from_the_server_cannot_add_a_query_parameter),
	    T(test_a_410_status_lists_again_and_reports_what_changed),
	    T(test_a_410_error_event_lists_again_and_reports_what_changed),
	    T(test_each_list_is_reported_with_its_start_after_its_changes),
	    T(test_another_error_event_resumes_the_watch),
	    T(test_a_refused_or_broken_watch_is_retried_from_the_same_version),
	    T(test_a_malformed_line_restarts_the_watch),
	    T(test_an_oversized_line_restarts_the_watch),
	    T(test_a_bad_line_met_twice_before_any_event_lists_again),
	    T(test_resync_calls_the_handler_for_every_cached_object),
	    T(test_get_and_list_return_deep_copies),
	    T(test_keys_are_namespace_slash_name),
	    T(test_stop_is_prompt_during_a_quiet_watch),
	    T(test_stop_is_prompt_during_a_busy_watch_without_stopping_the_client),
	    T(test_stop_is_prompt_during_a_back_off),
	    T(test_start_refuses_a_config_without_a_resource),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
