/* test_leader.c - leader election over a Lease, against client-go's rules:
 * the first candidate creates the Lease; a held Lease is taken only after
 * its duration passes with no change as seen on the candidate's own clock;
 * renewals keep it; a released Lease (no holder) is taken at once, with
 * leaseTransitions raised; two candidates never both win a write; and the
 * fence: no write leaves a replica past its renew deadline, and the loop
 * gives up leading then.
 *
 * The API is a fake that keeps one Lease in memory as a real server
 * would: create (409 when it exists), get (404 before), update with a
 * resourceVersion precondition (409 when stale), and a switch that makes
 * every request fail with 500. Time is driven by the tests through
 * leader_try's clock, except for the loop test, whose waits are bounded.
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
#include <unistd.h>

#include "err.h"
#include "json.h"
#include "kube_api.h"
#include "leader.h"
#include "timers.h"

#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/ops/leases/mwj-operator"
#define LEASES     "/apis/coordination.k8s.io/v1/namespaces/ops/leases"

/* --- a fake API server holding one Lease --- */

struct store {
	pthread_mutex_t lock;
	cJSON *lease; /* NULL: none yet */
	long rv;
	int failing;                     /* answer every request with 500 */
	int writes, creates, refused409; /* what came */
	int other_posts;                 /* POSTs to other paths (the write guard's test) */
	int steal_after_get;             /* after the next GET, "thief" writes the Lease */
};

static int reply(struct kube_resp *resp, long status, const char *body)
{
	memset(resp, 0, sizeof(*resp));
	resp->retry_after_s = -1;
	resp->status = status;
	resp->body = strdup(body);
	resp->body_len = strlen(body);
	return 0;
}

static int reply_lease(struct kube_resp *resp, long status, const cJSON *lease)
{
	char *text = json_print(lease);
	int rc = reply(resp, status, text);

	free(text);
	return rc;
}

#define STATUS_409                                                                                 \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":"            \
	"\"Conflict\","                                                                            \
	"\"code\":409}"

/* Stores body as the Lease with the next resourceVersion. */
static void store_put(struct store *s, const char *body, size_t len)
{
	cJSON *obj = json_parse(body, len, NULL), *meta;
	char rv[32];

	assert_non_null(obj);
	meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
	snprintf(rv, sizeof(rv), "%ld", ++s->rv);
	cJSON_AddStringToObject(meta, "resourceVersion", rv);
	cJSON_Delete(s->lease);
	s->lease = obj;
}

static const char *stored_rv(const struct store *s)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(s->lease, "metadata");

	return cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion")->valuestring;
}

static int store_round_trip(struct kube_api *api, const struct kube_req *req,
                            struct kube_resp *resp, char *err)
{
	struct store *s = api->impl;
	int rc;

	(void)err;
	pthread_mutex_lock(&s->lock);
	if (s->failing) {
		rc = reply(resp, 500,
		           "{\"kind\":\"Status\",\"reason\":\"InternalError\",\"code\":500}");
	} else if (strcmp(req->method, "GET") == 0 && strcmp(req->path, LEASE_PATH) == 0) {
		rc = s->lease ? reply_lease(resp, 200, s->lease)
		              : reply(resp, 404, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}");
		if (s->lease && s->steal_after_get) {
			const char *thief =
			    "{\"metadata\":{},\"spec\":{\"holderIdentity\":\"thief\"}}";
			s->steal_after_get = 0;
			store_put(s, thief, strlen(thief));
		}
	} else if (strcmp(req->method, "POST") == 0 && strcmp(req->path, LEASES) == 0) {
		s->writes++;
		if (s->lease) {
			s->refused409++;
			rc = reply(resp, 409, STATUS_409);
		} else {
			s->creates++;
			store_put(s, req->body, req->body_len);
			rc = reply_lease(resp, 201, s->lease);
		}
	} else if (strcmp(req->method, "PUT") == 0 && strcmp(req->path, LEASE_PATH) == 0) {
		cJSON *obj = json_parse(req->body, req->body_len, NULL);
		const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "resourceVersion");

		s->writes++;
		if (s->lease == NULL || !cJSON_IsString(rv) ||
		    strcmp(rv->valuestring, stored_rv(s)) != 0) {
			s->refused409++;
			rc = reply(resp, 409, STATUS_409);
		} else {
			store_put(s, req->body, req->body_len);
			rc = reply_lease(resp, 200, s->lease);
		}
		cJSON_Delete(obj);
	} else {
		if (strcmp(req->method, "POST") == 0)
			s->other_posts++;
		rc = reply(resp, 201, "{}");
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static const struct kube_api_ops STORE_OPS = {.name = "lease-store",
                                              .round_trip = store_round_trip};

static struct store *store_new(void)
{
	struct store *s = calloc(1, sizeof(*s));

	pthread_mutex_init(&s->lock, NULL);
	return s;
}

static void store_free(struct store *s)
{
	cJSON_Delete(s->lease);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static void set_failing(struct store *s, int on)
{
	pthread_mutex_lock(&s->lock);
	s->failing = on;
	pthread_mutex_unlock(&s->lock);
}

/* A client over the store (retries fast, so a failing call ends soon). */
static void client(struct kube_api *api, struct store *s)
{
	memset(api, 0, sizeof(*api));
	api->ops = &STORE_OPS;
	api->impl = s;
	api->retry_deadline_ms = 50;
	api->backoff_first_ms = 1;
	api->backoff_max_ms = 5;
}

static const char *spec_str(const struct store *s, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(s->lease, "spec"), name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double spec_num(const struct store *s, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(s->lease, "spec"), name);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* Two candidates, "a" and "b", of one Lease. */
struct pair {
	struct store *s;
	struct kube_api api_a, api_b;
	struct leader a, b;
};

static void pair_init(struct pair *p, int lease_ms, int renew_ms, int retry_ms)
{
	struct leader_config ca = {"ops",    "mwj-operator", "a",  lease_ms, renew_ms,
	                           retry_ms, NULL,           NULL, NULL};
	struct leader_config cb = ca;
	char err[ERR_LEN];

	cb.identity = "b";
	assert_int_equal(leader_config_check(&ca, err), 0);
	p->s = store_new();
	client(&p->api_a, p->s);
	client(&p->api_b, p->s);
	leader_init(&p->a, &p->api_a, &ca);
	leader_init(&p->b, &p->api_b, &cb);
}

static void pair_free(struct pair *p)
{
	leader_destroy(&p->a);
	leader_destroy(&p->b);
	store_free(p->s);
}

/* --- the rules --- */

static void test_first_candidate_creates_the_lease_and_leads(void **state)
{
	struct pair p;
	char err[ERR_LEN];

	(void)state;
	pair_init(&p, 15000, 10000, 2000);
	assert_int_equal(leader_try(&p.a, 1000, err), 1);
	assert_int_equal(p.s->creates, 1);
	assert_string_equal(spec_str(p.s, "holderIdentity"), "a");
	assert_int_equal((int)spec_num(p.s, "leaseDurationSeconds"), 15);
	assert_int_equal((int)spec_num(p.s, "leaseTransitions"), 0);
	assert_non_null(spec_str(p.s, "acquireTime"));
	/* MicroTime: six fractional digits, as a real server requires. */
	assert_int_equal(strlen(spec_str(p.s, "renewTime")), strlen("2026-01-02T03:04:05.000000Z"));
	/* The other candidate, at the same moment, sees it held. */
	assert_int_equal(leader_try(&p.b, 1000, err), 0);
	assert_string_equal(spec_str(p.s, "holderIdentity"), "a");
	pair_free(&p);
}

static void test_a_held_lease_is_taken_only_after_its_duration_without_change(void **state)
{
	struct pair p;
	char err[ERR_LEN], acquired[64];

	(void)state;
	pair_init(&p, 15000, 10000, 2000);
	assert_int_equal(leader_try(&p.a, 0, err), 1);
	snprintf(acquired, sizeof(acquired), "%s", spec_str(p.s, "acquireTime"));
	assert_int_equal(leader_try(&p.b, 0, err), 0); /* b's clock for the record starts */
	/* a renews at 10 s: b, at 20 s, saw a change 10 s ago, not 15. */
	assert_int_equal(leader_try(&p.a, 10000, err), 1);
	assert_int_equal(leader_try(&p.b, 12000, err), 0);
	assert_int_equal(leader_try(&p.b, 20000, err), 0);
	/* Renewal keeps acquireTime and the transitions. */
	assert_string_equal(spec_str(p.s, "acquireTime"), acquired);
	assert_int_equal((int)spec_num(p.s, "leaseTransitions"), 0);
	/* a stops renewing; 15 s after b saw the record last change, b takes it. */
	assert_int_equal(leader_try(&p.b, 26999, err), 0);
	assert_int_equal(leader_try(&p.b, 27000, err), 1);
	assert_string_equal(spec_str(p.s, "holderIdentity"), "b");
	assert_int_equal((int)spec_num(p.s, "leaseTransitions"), 1);
	/* a comes back: it does not hold it any more. */
	assert_int_equal(leader_try(&p.a, 27001, err), 0);
	pair_free(&p);
}

static void test_a_released_lease_is_taken_at_once(void **state)
{
	struct pair p;
	char err[ERR_LEN];

	(void)state;
	pair_init(&p, 15000, 10000, 2000);
	assert_int_equal(leader_try(&p.a, 0, err), 1);
	p.a.leading = 1;
	assert_int_equal(leader_try(&p.b, 0, err), 0);
	leader_stop(&p.a); /* never started: only stops acting */
	assert_int_equal(leader_active(&p.a), 0);
	assert_int_equal(leader_release(&p.a, err), 0);
	assert_string_equal(spec_str(p.s, "holderIdentity"), "");
	assert_int_equal((int)spec_num(p.s, "leaseDurationSeconds"), 1);
	assert_int_equal((int)spec_num(p.s, "leaseTransitions"), 0);
	/* Within the old duration, b takes it: there is no holder. */
	assert_int_equal(leader_try(&p.b, 100, err), 1);
	assert_string_equal(spec_str(p.s, "holderIdentity"), "b");
	assert_int_equal((int)spec_num(p.s, "leaseDurationSeconds"), 15);
	assert_int_equal((int)spec_num(p.s, "leaseTransitions"), 1);
	pair_free(&p);
}

static void test_release_after_a_renewal_it_did_not_see_still_releases(void **state)
{
	struct pair p;
	char err[ERR_LEN];
	const char *renewed = "{\"metadata\":{},\"spec\":{\"holderIdentity\":\"a\","
	                      "\"leaseDurationSeconds\":15,\"leaseTransitions\":0}}";

	(void)state;
	pair_init(&p, 15000, 10000, 2000);
	assert_int_equal(leader_try(&p.a, 0, err), 1);
	p.a.leading = 1;
	/* A renewal that reached the server, but whose answer the stop cut
	 * off: the Lease has a version a has not seen. */
	store_put(p.s, renewed, strlen(renewed));
	leader_stop(&p.a);
	assert_int_equal(leader_release(&p.a, err), 0);
	assert_string_equal(spec_str(p.s, "holderIdentity"), "");
	assert_int_equal(p.s->refused409, 1);
	pair_free(&p);
}

static void test_release_by_a_replica_that_does_not_lead_writes_nothing(void **state)
{
	struct pair p;
	char err[ERR_LEN];
	int writes;

	(void)state;
	pair_init(&p, 15000, 10000, 2000);
	assert_int_equal(leader_try(&p.a, 0, err), 1);
	p.a.leading = 1;
	assert_int_equal(leader_try(&p.b, 0, err), 0);
	writes = p.s->writes;
	assert_int_equal(leader_release(&p.b, err), 0);
	assert_int_equal(p.s->writes, writes);
	assert_string_equal(spec_str(p.s, "holderIdentity"), "a");
	pair_free(&p);
}

static void test_a_stale_write_loses_with_409_and_never_overwrites(void **state)
{
	struct pair p;
	char err[ERR_LEN];

	(void)state;
	pair_init(&p, 15000, 10000, 2000);
	assert_int_equal(leader_try(&p.a, 0, err), 1);
	/* Between a's read and a's write, another write lands (b's, say):
	 * a's update carries the old resourceVersion and is refused. */
	p.s->steal_after_get = 1;
	assert_int_equal(leader_try(&p.a, 2000, err), 0);
	assert_int_equal(p.s->refused409, 1);
	assert_string_equal(spec_str(p.s, "holderIdentity"), "thief");
	pair_free(&p);
}

static void test_api_errors_fail_the_try(void **state)
{
	struct pair p;
	char err[ERR_LEN];

	(void)state;
	pair_init(&p, 15000, 10000, 2000);
	set_failing(p.s, 1);
	assert_int_equal(leader_try(&p.a, 0, err), -1);
	assert_non_null(strstr(err, "500"));
	set_failing(p.s, 0);
	assert_int_equal(leader_try(&p.a, 0, err), 1);
	pair_free(&p);
}

/* --- the fence --- */

static void test_leader_active_ends_at_the_renew_deadline(void **state)
{
	struct pair p;
	char err[ERR_LEN];
	long long now = timers_now_ms();

	(void)state;
	pair_init(&p, 15000, 10000, 2000);
	assert_int_equal(leader_active(&p.a), 0); /* not leading yet */
	assert_int_equal(leader_try(&p.a, now, err), 1);
	p.a.leading = 1;
	assert_int_equal(leader_active(&p.a), 1);
	/* Renewed (sent) longer than the renew deadline ago: no more writes. */
	assert_int_equal(leader_try(&p.a, now - 10001, err), 1);
	assert_int_equal(leader_active(&p.a), 0);
	assert_int_equal(leader_try(&p.a, now, err), 1);
	assert_int_equal(leader_active(&p.a), 1);
	leader_stop(&p.a);
	assert_int_equal(leader_active(&p.a), 0);
	pair_free(&p);
}

static int fence_closed(void *ctx)
{
	(void)ctx;
	return 0;
}

static void test_the_write_guard_stops_writes_but_not_reads_nor_the_lease(void **state)
{
	struct pair p;
	struct kube_result res = {0};
	cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"x\"}}"), *out = NULL;
	char err[ERR_LEN];

	(void)state;
	pair_init(&p, 15000, 10000, 2000);
	p.api_a.write_guard = fence_closed;
	assert_int_equal(kube_create(&p.api_a, "/api/v1/namespaces/ops/pods", obj, &out, &res, err),
	                 -1);
	assert_non_null(strstr(err, "not the leader"));
	assert_int_equal(p.s->other_posts, 0); /* nothing was sent */
	assert_int_equal(p.api_a.stats.refused_by_guard, 1);
	/* The Lease's own calls pass: a fenced replica can still win it. */
	assert_int_equal(leader_try(&p.a, 0, err), 1);
	assert_int_equal(kube_get(&p.api_a, LEASE_PATH, &out, &res, err), 0);
	cJSON_Delete(out);
	cJSON_Delete(obj);
	pair_free(&p);
}

/* --- the loop --- */

struct events {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int started, stopped;
};

static void on_started(void *ctx)
{
	struct events *e = ctx;

	pthread_mutex_lock(&e->lock);
	e->started++;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

static void on_stopped(void *ctx)
{
	struct events *e = ctx;

	pthread_mutex_lock(&e->lock);
	e->stopped++;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

/* Waits up to 10 s for *counter to reach n. */
static int wait_count(struct events *e, const int *counter, int n)
{
	struct timespec ts;
	int ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&e->lock);
	while (*counter < n)
		if (pthread_cond_timedwait(&e->cond, &e->lock, &ts) != 0)
			break;
	ok = *counter >= n;
	pthread_mutex_unlock(&e->lock);
	return ok;
}

static void test_the_loop_leads_and_gives_up_when_it_cannot_renew(void **state)
{
	struct events e = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
	struct leader_config cfg = {"ops", "mwj-operator", "a",        1000, 600,
	                            100,   on_started,     on_stopped, &e};
	struct store *s = store_new();
	struct kube_api api;
	struct leader l;
	char err[ERR_LEN];

	(void)state;
	client(&api, s);
	leader_init(&l, &api, &cfg);
	assert_int_equal(leader_start(&l, err), 0);
	assert_true(wait_count(&e, &e.started, 1));
	assert_int_equal(leader_active(&l), 1);
	assert_int_equal(l.acquired, 1);
	/* The API fails: within the renew deadline the fence closes, and the
	 * loop says it stopped leading. */
	set_failing(s, 1);
	assert_true(wait_count(&e, &e.stopped, 1));
	assert_int_equal(leader_active(&l), 0);
	assert_int_equal(l.lost, 1);
	assert_true(l.renew_failures >= 1);
	/* The API is back: it is still the holder and leads again. */
	set_failing(s, 0);
	assert_true(wait_count(&e, &e.started, 2));
	assert_int_equal(leader_active(&l), 1);
	leader_stop(&l);
	assert_int_equal(leader_active(&l), 0);
	assert_int_equal(leader_release(&l, err), 0);
	assert_string_equal(spec_str(s, "holderIdentity"), "");
	leader_destroy(&l);
	store_free(s);
}

/* The shutdown of main.c on SIGTERM, step by step: the signal stops the
 * client, the loop stops, the client is resumed for the release alone. No
 * write but the Lease's leaves the replica from the signal on, also after
 * the release, when a standby may already lead. */
static void test_sigterm_stops_every_write_and_releases_the_lease(void **state)
{
	struct events e = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
	struct leader_config cfg = {"ops", "mwj-operator", "a",  1000, 600,
	                            100,   on_started,     NULL, &e};
	struct store *s = store_new();
	struct kube_result res = {0};
	cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"x\"}}"), *out = NULL;
	struct kube_api api;
	struct leader l;
	char err[ERR_LEN];

	(void)state;
	client(&api, s);
	leader_init(&l, &api, &cfg);
	api.write_guard = leader_active;
	api.write_guard_ctx = &l;
	assert_int_equal(leader_start(&l, err), 0);
	assert_true(wait_count(&e, &e.started, 1));
	assert_int_equal(kube_create(&api, "/api/v1/namespaces/ops/pods", obj, &out, &res, err), 0);
	cJSON_Delete(out);
	out = NULL;
	assert_int_equal(s->other_posts, 1); /* the leader writes */
	kube_api_stop(&api);                 /* the signal */
	assert_int_equal(kube_create(&api, "/api/v1/namespaces/ops/pods", obj, &out, &res, err),
	                 -1);
	leader_stop(&l);
	assert_int_equal(leader_active(&l), 0);
	kube_api_resume(&api); /* for the release */
	assert_int_equal(kube_create(&api, "/api/v1/namespaces/ops/pods", obj, &out, &res, err),
	                 -1);
	assert_non_null(strstr(err, "not the leader"));
	assert_int_equal(leader_release(&l, err), 0);
	assert_string_equal(spec_str(s, "holderIdentity"), "");
	assert_int_equal(kube_create(&api, "/api/v1/namespaces/ops/pods", obj, &out, &res, err),
	                 -1);
	assert_int_equal(s->other_posts, 1); /* nothing more was sent */
	cJSON_Delete(obj);
	leader_destroy(&l);
	store_free(s);
}

/* --- configuration --- */

static void test_config_rules_are_client_gos(void **state)
{
	struct leader_config c = {"ops", "mwj-operator", "a", 15000, 10000, 2000, NULL, NULL, NULL};
	char err[ERR_LEN];

	(void)state;
	assert_int_equal(leader_config_check(&c, err), 0);
	c.renew_ms = 15000;
	assert_int_equal(leader_config_check(&c, err), -1);
	assert_non_null(strstr(err, "longer than the renew deadline"));
	c.renew_ms = 2400; /* = 1.2 x retry: too short to retry once */
	assert_int_equal(leader_config_check(&c, err), -1);
	assert_non_null(strstr(err, "1.2 times"));
	c.renew_ms = 10000;
	c.lease_ms = 15500;
	assert_int_equal(leader_config_check(&c, err), -1);
	assert_non_null(strstr(err, "whole seconds"));
	c.lease_ms = 15000;
	c.namespace = "";
	assert_int_equal(leader_config_check(&c, err), -1);
	assert_non_null(strstr(err, "--leader-election-namespace"));
	c.namespace = "ops";
	c.name = "a/b";
	assert_int_equal(leader_config_check(&c, err), -1);
}

static void test_identities_are_unique_and_name_the_host(void **state)
{
	char a[LEADER_IDENTITY_LEN], b[LEADER_IDENTITY_LEN], host[256] = "";

	(void)state;
	leader_identity(a);
	leader_identity(b);
	assert_string_not_equal(a, b);
	gethostname(host, sizeof(host));
	assert_int_equal(strncmp(a, host, strlen(host)), 0);
	assert_int_equal(strlen(a), strlen(host) + 1 + 32);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_candidate_creates_the_lease_and_leads),
	    cmocka_unit_test(test_a_held_lease_is_taken_only_after_its_duration_without_change),
	    cmocka_unit_test(test_a_released_lease_is_taken_at_once),
	    cmocka_unit_test(test_release_by_a_replica_that_does_not_lead_writes_nothing),
	    cmocka_unit_test(test_release_after_a_renewal_it_did_not_see_still_releases),
	    cmocka_unit_test(test_a_stale_write_loses_with_409_and_never_overwrites),
	    cmocka_unit_test(test_api_errors_fail_the_try),
	    cmocka_unit_test(test_leader_active_ends_at_the_renew_deadline),
	    cmocka_unit_test(test_the_write_guard_stops_writes_but_not_reads_nor_the_lease),
	    cmocka_unit_test(test_the_loop_leads_and_gives_up_when_it_cannot_renew),
	    cmocka_unit_test(test_sigterm_stops_every_write_and_releases_the_lease),
	    cmocka_unit_test(test_config_rules_are_client_gos),
	    cmocka_unit_test(test_identities_are_unique_and_name_the_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
