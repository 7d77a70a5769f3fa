/* test_actions.c - the glue between reconcile and the API server: passes
 * as the controller runs them (the job read, reconcile with what this
 * replica knows of its creates, the actions carried out, the status the
 * server returns read back as the next pass's job), against a fake API
 * server kept in this file that answers each request by rules a test
 * sets (a quota on Secrets, a pod refused by admission, a namespace being
 * deleted, a name taken by someone else's object) and records every
 * request. Each test asserts what a user and the API server see: the
 * requests made per pass, the attempts in the status, the condition and
 * the Events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"
#include "create_outcomes.h"
#include "event_recorder.h"
#include "expectations.h"
#include "json.h"
#include "json_doc.h"
#include "reconcile.h"
#include "sent_pods.h"
#include "timefmt.h"

#define MAX_RULES    8
#define MAX_REQUESTS 256

/* --- The fake API server --- */

/* An answer to every request whose method is method and whose path
 * contains path (and whose body contains body, when not NULL). */
struct rule {
	const char *method, *path, *body;
	long status;
	const char *reason, *message, *cause;
};

struct request {
	char method[8];
	char path[256];
	char *body;
};

struct fake {
	struct rule rules[MAX_RULES];
	int nrules;
	struct request requests[MAX_REQUESTS];
	int nrequests;
	cJSON *job;        /* the MultiWorkerJob as the server keeps it */
	cJSON *pods;       /* the pods it created, as a watch would show them */
	cJSON *get_answer; /* what a GET of a single object returns (NULL: 404) */
	int generated;     /* names generated so far */
};

static char *text_of(const cJSON *obj)
{
	char *t = json_print(obj);

	assert_non_null(t);
	return t;
}

/* obj without its null members, at any depth (a merge patch's deletes). */
static void drop_nulls(cJSON *obj)
{
	cJSON *it = obj ? obj->child : NULL;

	while (it != NULL) {
		cJSON *next = it->next;
		if (cJSON_IsNull(it))
			cJSON_Delete(cJSON_DetachItemViaPointer(obj, it));
		else if (cJSON_IsObject(it))
			drop_nulls(it);
		it = next;
	}
}

/* A Status answer. name: the object's (details.name), which takes the
 * place of "@" in message: a real server names the object refused, with
 * the name it generated for a generateName (a new one each time). */
static void answer_status(struct kube_resp *resp, long status, const char *reason,
                          const char *message, const char *cause, const char *name)
{
	char body[4096], said[2048];
	const char *at = strchr(message, '@');

	if (at != NULL)
		snprintf(said, sizeof(said), "%.*s%s%s", (int)(at - message), message, name,
		         at + 1);
	else
		snprintf(said, sizeof(said), "%s", message);
	snprintf(body, sizeof(body),
	         "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
	         "\"message\":\"%s\",\"reason\":\"%s\",\"details\":{\"name\":\"%s\"%s%s%s},"
	         "\"code\":%ld}",
	         said, reason, name, cause ? ",\"causes\":[{\"reason\":\"" : "", cause ? cause : "",
	         cause ? "\",\"field\":\"metadata.namespace\"}]" : "", status);
	resp->status = status;
	resp->body = strdup(body);
	resp->body_len = strlen(body);
}

static void answer_object(struct kube_resp *resp, long status, const cJSON *obj)
{
	resp->status = status;
	resp->body = text_of(obj);
	resp->body_len = strlen(resp->body);
}

/* A create the rules let through: the object as stored, with a name made
 * up for a generateName. */
static void created(struct fake *f, const struct kube_req *req, struct kube_resp *resp)
{
	cJSON *obj = json_parse(req->body, req->body_len, NULL);
	cJSON *meta = cJSON_GetObjectItem(obj, "metadata");
	const cJSON *gen = cJSON_GetObjectItem(meta, "generateName");

	assert_non_null(obj);
	if (cJSON_IsString(gen)) {
		char name[300];
		snprintf(name, sizeof(name), "%sg%04d", gen->valuestring, ++f->generated);
		cJSON_AddStringToObject(meta, "name", name);
	}
	cJSON_AddStringToObject(meta, "uid", "made-by-fake");
	answer_object(resp, 201, obj);
	if (strstr(req->path, "/pods"))
		cJSON_AddItemToArray(f->pods, obj);
	else
		cJSON_Delete(obj);
}

static int fake_round_trip(struct kube_api *api, const struct kube_req *req, struct kube_resp *resp,
                           char *err)
{
	struct fake *f = api->impl;
	struct request *r;

	(void)err;
	assert_true(f->nrequests < MAX_REQUESTS);
	r = &f->requests[f->nrequests++];
	snprintf(r->method, sizeof(r->method), "%s", req->method);
	snprintf(r->path, sizeof(r->path), "%s", req->path);
	r->body = req->body ? strndup(req->body, req->body_len) : NULL;
	for (int k = 0; k < f->nrules; k++) {
		const struct rule *u = &f->rules[k];
		if (strcmp(u->method, req->method) == 0 && strstr(req->path, u->path) &&
		    (u->body == NULL || (r->body && strstr(r->body, u->body)))) {
			char name[300] = "";
			cJSON *obj = r->body ? json_parse(r->body, strlen(r->body), NULL) : NULL;
			const cJSON *meta = cJSON_GetObjectItem(obj, "metadata");
			const cJSON *n = cJSON_GetObjectItem(meta, "name");
			const cJSON *gen = cJSON_GetObjectItem(meta, "generateName");
			if (cJSON_IsString(n))
				snprintf(name, sizeof(name), "%s", n->valuestring);
			else if (cJSON_IsString(gen))
				snprintf(name, sizeof(name), "%sg%04d", gen->valuestring,
				         ++f->generated);
			cJSON_Delete(obj);
			answer_status(resp, u->status, u->reason, u->message, u->cause, name);
			return 0;
		}
	}
	if (strcmp(req->method, "POST") == 0) {
		created(f, req, resp);
	} else if (strcmp(req->method, "PATCH") == 0 && strstr(req->path, "/status")) {
		cJSON *patch = json_parse(req->body, req->body_len, NULL);
		cJSON *status = cJSON_DetachItemFromObject(patch, "status");
		drop_nulls(status);
		cJSON_DeleteItemFromObject(f->job, "status");
		cJSON_AddItemToObject(f->job, "status", status);
		answer_object(resp, 200, f->job);
		cJSON_Delete(patch);
	} else if (strcmp(req->method, "PATCH") == 0) {
		cJSON *ok = json_doc_parse("{'kind': 'Event'}");
		answer_object(resp, 200, ok);
		cJSON_Delete(ok);
	} else if (strcmp(req->method, "GET") == 0 && f->get_answer) {
		answer_object(resp, 200, f->get_answer);
	} else {
		answer_status(resp, 404, "NotFound", "not found", NULL, "");
	}
	return 0;
}

static const struct kube_api_ops FAKE_OPS = {.name = "fake", .round_trip = fake_round_trip};

static void fake_rule(struct fake *f, struct rule r)
{
	assert_true(f->nrules < MAX_RULES);
	f->rules[f->nrules++] = r;
}

static void fake_clear_rules(struct fake *f)
{
	f->nrules = 0;
}

/* Requests made since request from, one a line: "POST /api/v1/.../pods". */
static void requests_since(const struct fake *f, int from, char *out, size_t n)
{
	size_t len = 0;

	out[0] = '\0';
	for (int k = from; k < f->nrequests; k++)
		len += (size_t)snprintf(out + len, n - len, "%s %s\n", f->requests[k].method,
		                        f->requests[k].path);
	assert_true(len < n);
}

/* How many requests since from match method and path (and body). */
static int count_since(const struct fake *f, int from, const char *method, const char *path,
                       const char *body)
{
	int n = 0;

	for (int k = from; k < f->nrequests; k++)
		n += strcmp(f->requests[k].method, method) == 0 &&
		     strstr(f->requests[k].path, path) != NULL &&
		     (body == NULL || (f->requests[k].body && strstr(f->requests[k].body, body)));
	return n;
}

/* --- The controller's loop, without informers --- */

struct loop {
	struct fake fake;
	struct kube_api api;
	struct expectations expect;
	struct create_outcomes outcomes;
	struct event_recorder events;
	struct actions_counters counters;
	int namespace_terminating;
	char err[ERR_LEN];
	int last_rc;
	int have_service, have_network_policy; /* as the caches would show them */
};

static void loop_init(struct loop *l, int workers)
{
	char text[1024];

	memset(l, 0, sizeof(*l));
	snprintf(text, sizeof(text),
	         "{'apiVersion': 'training.mwj.io/v1', 'kind': 'MultiWorkerJob', 'metadata': {"
	         "'name': 'mnist', 'namespace': 'ml', 'uid': 'job-uid', 'generation': 1, "
	         "'resourceVersion': '7'}, 'spec': {'workers': %d, 'template': {'spec': "
	         "{'containers': [{'name': 'worker', 'image': 'mwj-worker:1'}]}}}}",
	         workers);
	l->fake.job = json_doc_parse(text);
	l->fake.pods = cJSON_CreateArray();
	l->api.ops = &FAKE_OPS;
	l->api.impl = &l->fake;
	expectations_init(&l->expect, 0);
	create_outcomes_init(&l->outcomes);
	event_recorder_init(&l->events, "test-host");
}

static void loop_release(struct loop *l)
{
	for (int k = 0; k < l->fake.nrequests; k++)
		free(l->fake.requests[k].body);
	cJSON_Delete(l->fake.job);
	cJSON_Delete(l->fake.pods);
	cJSON_Delete(l->fake.get_answer);
	expectations_release(&l->expect);
	create_outcomes_release(&l->outcomes);
	event_recorder_release(&l->events);
}

/* One pass over the job as the server has it, and the pods it created
 * (pending, as the watch shows them). Returns the pass's result (0 or
 * -1). */
static int loop_pass(struct loop *l)
{
	struct create_outcome outcomes[8], objects[JOB_OBJECTS];
	struct pod_view pods[8];
	const cJSON *pod;
	int npods = 0;
	struct reconcile_input in = {0};
	struct reconcile_output out;
	char now[TIMEFMT_LEN];
	struct job j;
	cJSON *obj = cJSON_Duplicate(l->fake.job, 1), *written = NULL;
	struct kube_result res = {0};
	struct actions_ctx ctx = {
	    .api = &l->api,
	    .expect = &l->expect,
	    .outcomes = &l->outcomes,
	    .events = &l->events,
	    .counters = &l->counters,
	    .written = &written,
	    .status_result = &res,
	    .namespace_terminating = &l->namespace_terminating,
	};

	if (job_parse(&j, obj, l->err) < 0)
		fail_msg("job_parse: %s", l->err);
	assert_true(j.workers <= 8);
	create_outcomes_get(&l->outcomes, "ml/mnist", j.workers, outcomes, objects);
	cJSON_ArrayForEach(pod, l->fake.pods)
	{
		assert_true(npods < 8);
		assert_int_equal(pod_view_parse(&pods[npods++], &j, pod, l->err), 0);
	}
	timefmt_now(now);
	in.job = &j;
	in.pods = pods;
	in.npods = npods;
	in.have_service = l->have_service;
	in.have_network_policy = l->have_network_policy;
	in.now_s = 1795568400;
	in.now = now;
	in.outcomes = outcomes;
	in.object_outcomes = objects;
	reconcile(&in, &out);
	l->last_rc = actions_run(&ctx, &j, obj, &out, l->err);
	/* The informer's copy of the Service and NetworkPolicy, once made. */
	create_outcomes_get(&l->outcomes, "ml/mnist", j.workers, outcomes, objects);
	l->have_service |= objects[OBJ_SERVICE].result == CREATE_DONE;
	l->have_network_policy |= objects[OBJ_NETWORK_POLICY].result == CREATE_DONE;
	reconcile_output_release(&out);
	job_release(&j);
	cJSON_Delete(written);
	cJSON_Delete(obj);
	return l->last_rc;
}

/* status.<name> of the job as the server has it, as compact JSON. */
static char *status_member(const struct loop *l, const char *name)
{
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(l->fake.job, "status"), name);

	return v ? text_of(v) : strdup("null");
}

static void assert_status_member(const struct loop *l, const char *name, const char *want)
{
	char *got = status_member(l, name);

	if (strcmp(got, want) != 0)
		fail_msg("status.%s is %s, want %s", name, got, want);
	free(got);
}

static const cJSON *condition(const struct loop *l, const char *type)
{
	const cJSON *c;

	cJSON_ArrayForEach(
	    c, cJSON_GetObjectItem(cJSON_GetObjectItem(l->fake.job, "status"), "conditions"))
	{
		if (strcmp(cJSON_GetObjectItem(c, "type")->valuestring, type) == 0)
			return c;
	}
	return NULL;
}

static const char *condition_field(const struct loop *l, const char *type, const char *field)
{
	const cJSON *c = condition(l, type);

	return c ? cJSON_GetObjectItem(c, field)->valuestring : "(none)";
}

/* A pod's create, by its name (its TF_CONFIG names every worker). */
#define W0 "\"name\":\"mnist-worker-0\",\"namespace\""
#define W1 "\"name\":\"mnist-worker-1\",\"namespace\""

#define SECRETS_QUOTA                                                                              \
	"secrets \\\"@\\\" is forbidden: exceeded quota: q, requested: secrets=1, used: "          \
	"secrets=0, "                                                                              \
	"limited: secrets=0"

/* --- Tests --- */

/* A quota that allows no Secret: every pass asks for the Secret once and
 * nothing else; the status is written when the user can see something
 * new (the first pass, the refusal), never again; no attempt moves; one
 * Warning. When the quota is raised, the pods come at attempt 0. */
static void test_actions_a_refused_secret_costs_one_request_a_pass(void **state)
{
	struct loop l;
	char reqs[4096];
	int mark;

	(void)state;
	loop_init(&l, 2);
	fake_rule(&l.fake,
	          (struct rule){"POST", "/secrets", NULL, 403, "Forbidden", SECRETS_QUOTA, NULL});
	assert_int_equal(loop_pass(&l), -1);
	assert_non_null(strstr(l.err, "exceeded quota"));
	/* No pod without its key, and none recorded as sent. */
	assert_int_equal(count_since(&l.fake, 0, "POST", "/pods", NULL), 0);
	assert_status_member(&l, "workerAttempts", "[-1,-1]");
	assert_status_member(&l, "sentAttempts", "null");
	assert_status_member(&l, "ringKeySecret", "null");
	assert_int_equal(l.counters.refused[OBJ_SECRET], 1);

	/* The next pass tells the user, once. */
	mark = l.fake.nrequests;
	assert_int_equal(loop_pass(&l), -1);
	assert_string_equal(condition_field(&l, "Created", "status"), "False");
	assert_string_equal(condition_field(&l, "Created", "reason"), "CreateRefused");
	assert_string_equal(condition_field(&l, "Created", "message"),
	                    "cannot create the Secret of the job: secrets \"mnist-ring-key-\" is "
	                    "forbidden: exceeded quota: q, requested: secrets=1, used: secrets=0, "
	                    "limited: secrets=0");
	assert_int_equal(count_since(&l.fake, mark, "POST", "/events", "CreateRefused"), 1);

	/* And then: one request a pass, the refused create itself. */
	for (int pass = 0; pass < 3; pass++) {
		mark = l.fake.nrequests;
		assert_int_equal(loop_pass(&l), -1);
		requests_since(&l.fake, mark, reqs, sizeof(reqs));
		assert_string_equal(reqs, "POST /api/v1/namespaces/ml/secrets\n");
	}
	assert_status_member(&l, "workerAttempts", "[-1,-1]");
	assert_status_member(&l, "sentAttempts", "null");

	/* The quota is raised: the key, its name in the status before any
	 * pod refers to it, and the pods at attempt 0. */
	fake_clear_rules(&l.fake);
	mark = l.fake.nrequests;
	assert_int_equal(loop_pass(&l), 0);
	requests_since(&l.fake, mark, reqs, sizeof(reqs));
	assert_string_equal(reqs, "POST /api/v1/namespaces/ml/secrets\n"
	                          "PATCH /apis/training.mwj.io/v1/namespaces/ml/multiworkerjobs/"
	                          "mnist/status\n"
	                          "POST /api/v1/namespaces/ml/pods\n"
	                          "POST /api/v1/namespaces/ml/events\n"
	                          "POST /api/v1/namespaces/ml/pods\n"
	                          "POST /api/v1/namespaces/ml/events\n");
	/* The five refused tries made five names up; the sixth is the key's. */
	assert_status_member(&l, "ringKeySecret", "\"mnist-ring-key-g0006\"");
	assert_status_member(&l, "sentAttempts", "[0,0]");
	assert_int_equal(
	    count_since(&l.fake, mark, "POST", "/pods", "\"secretName\":\"mnist-ring-key-g0006\""),
	    2);
	assert_int_equal(count_since(&l.fake, mark, "POST", "/pods",
	                             "\"training.mwj.io/restart-attempt\":\"0\""),
	                 2);
	loop_release(&l);
}

/* Admission refuses worker 0's pod (a ServiceAccount not yet made):
 * worker 1's create is sent all the same, attempts stay, and when the
 * refusal goes the pod comes at attempt 0. */
static void test_actions_one_refused_pod_holds_back_no_other(void **state)
{
	struct loop l;
	int mark;

	(void)state;
	loop_init(&l, 2);
	fake_rule(&l.fake, (struct rule){"POST", "/pods", W0, 403, "Forbidden",
	                                 "pods \\\"mnist-worker-0\\\" is forbidden: error looking "
	                                 "up service account ml/default: serviceaccount "
	                                 "\\\"default\\\" not found",
	                                 NULL});
	assert_int_equal(loop_pass(&l), -1);
	assert_int_equal(count_since(&l.fake, 0, "POST", "/pods", W1), 1);
	assert_int_equal(count_since(&l.fake, 0, "POST", "/pods", W0), 1);
	for (int pass = 0; pass < 3; pass++) {
		mark = l.fake.nrequests;
		assert_int_equal(loop_pass(&l), -1);
		/* Worker 1's pod was created (the cache has not shown it): not
		 * asked for again; worker 0's is. */
		assert_int_equal(count_since(&l.fake, mark, "POST", "/pods", W0), 1);
		assert_int_equal(count_since(&l.fake, mark, "POST", "/pods", W1), 0);
		assert_int_equal(count_since(&l.fake, mark, "POST", "/pods",
		                             "\"training.mwj.io/restart-attempt\":\"0\""),
		                 1);
	}
	/* Worker 1's pod is seen; worker 0 waits at attempt 0. */
	assert_status_member(&l, "workerAttempts", "[-1,0]");
	assert_status_member(&l, "sentAttempts", "[0,0]");
	assert_string_equal(condition_field(&l, "Created", "reason"), "CreateRefused");
	assert_non_null(
	    strstr(condition_field(&l, "Created", "message"),
	           "cannot create pod mnist-worker-0 (worker 0): pods \"mnist-worker-0\" "
	           "is forbidden: error looking up service account ml/default"));
	assert_int_equal(count_since(&l.fake, 0, "POST", "/events", "CreateRefused"), 1);
	assert_int_equal(count_since(&l.fake, 0, "POST", "/events", "CreateUnconfirmed"), 0);
	assert_int_equal(l.counters.refused[JOB_OBJECTS], 4);
	loop_release(&l);
}

/* A namespace being deleted refuses every create: the pass says so, and
 * the caller leaves the namespace alone. */
static void test_actions_a_terminating_namespace_is_said(void **state)
{
	struct loop l;

	(void)state;
	loop_init(&l, 1);
	fake_rule(&l.fake, (struct rule){"POST", "/namespaces/ml/", NULL, 403, "Forbidden",
	                                 "secrets \\\"mnist-ring-key-\\\" is forbidden: unable to "
	                                 "create new content in namespace ml because it is being "
	                                 "terminated",
	                                 "NamespaceTerminating"});
	assert_int_equal(loop_pass(&l), -1);
	assert_int_equal(l.namespace_terminating, 1);
	loop_release(&l);
}

/* A Service of the job's name that another made: read, not adopted; the
 * job fails saying whose name it is. */
static void test_actions_never_adopt_a_service_the_job_does_not_own(void **state)
{
	struct loop l;

	(void)state;
	loop_init(&l, 1);
	fake_rule(&l.fake, (struct rule){"POST", "/services", NULL, 409, "AlreadyExists",
	                                 "services \\\"mnist\\\" already exists", NULL});
	l.fake.get_answer = json_doc_parse("{'kind': 'Service', 'metadata': {'name': 'mnist', "
	                                   "'namespace': 'ml', 'uid': 'planted'}}");
	assert_int_equal(loop_pass(&l), -1);
	assert_int_equal(count_since(&l.fake, 0, "GET", "/services/mnist", NULL), 1);
	/* No pod is created beside a Service the job does not own. */
	assert_int_equal(count_since(&l.fake, 0, "POST", "/pods", NULL), 0);
	assert_int_equal(loop_pass(&l), 0);
	assert_string_equal(condition_field(&l, "Failed", "reason"), "NameConflict");
	assert_non_null(
	    strstr(condition_field(&l, "Failed", "message"),
	           "a Service named \"mnist\" already exists in namespace ml and is not "
	           "owned by this job"));
	assert_status_member(&l, "phase", "\"Failed\"");
	loop_release(&l);

	/* One the job owns (the cache had not shown it yet) is its own. */
	loop_init(&l, 1);
	fake_rule(&l.fake, (struct rule){"POST", "/services", NULL, 409, "AlreadyExists",
	                                 "services \\\"mnist\\\" already exists", NULL});
	l.fake.get_answer = json_doc_parse(
	    "{'kind': 'Service', 'metadata': {'name': 'mnist', 'namespace': 'ml', "
	    "'ownerReferences': [{'apiVersion': 'training.mwj.io/v1', 'kind': 'MultiWorkerJob', "
	    "'name': 'mnist', 'uid': 'job-uid', 'controller': true}]}}");
	assert_int_equal(loop_pass(&l), 0);
	assert_int_equal(count_since(&l.fake, 0, "POST", "/pods", NULL), 1);
	loop_release(&l);
}

/* A pod of a worker's name that the job does not own. */
static void test_actions_never_adopt_a_pod_the_job_does_not_own(void **state)
{
	struct loop l;

	(void)state;
	loop_init(&l, 2);
	fake_rule(&l.fake, (struct rule){"POST", "/pods", W1, 409, "AlreadyExists",
	                                 "pods \\\"mnist-worker-1\\\" already exists", NULL});
	l.fake.get_answer = json_doc_parse("{'kind': 'Pod', 'metadata': {'name': 'mnist-worker-1', "
	                                   "'namespace': 'ml', 'uid': 'planted'}}");
	assert_int_equal(loop_pass(&l), -1);
	assert_int_equal(loop_pass(&l), 0);
	assert_string_equal(condition_field(&l, "Failed", "reason"), "NameConflict");
	if (!strstr(condition_field(&l, "Failed", "message"),
	            "a Pod named \"mnist-worker-1\" already exists"))
		fail_msg("message: %s", condition_field(&l, "Failed", "message"));
	loop_release(&l);
}

/* The same Event twice is one Event counted twice, as client-go's
 * recorder has it; another message is another Event. */
static void test_actions_events_are_counted_not_repeated(void **state)
{
	struct loop l;
	char err[ERR_LEN];
	struct job j;
	const struct request *patch;

	(void)state;
	loop_init(&l, 1);
	assert_int_equal(job_parse(&j, l.fake.job, err), 0);
	for (int k = 0; k < 3; k++)
		assert_int_equal(event_recorder_emit(&l.events, &l.api, &j, l.fake.job, "Warning",
		                                     "CreateRefused", "the same", err),
		                 0);
	assert_int_equal(event_recorder_emit(&l.events, &l.api, &j, l.fake.job, "Warning",
	                                     "CreateRefused", "another", err),
	                 0);
	assert_int_equal(count_since(&l.fake, 0, "POST", "/events", NULL), 2);
	assert_int_equal(count_since(&l.fake, 0, "PATCH", "/events/mnist.", NULL), 2);
	patch = &l.fake.requests[2];
	assert_non_null(strstr(patch->body, "\"count\":3"));
	assert_non_null(strstr(patch->body, "\"lastTimestamp\":"));
	/* A counted Event that has gone (its TTL) is created again. */
	event_recorder_forget(&l.events, "other-uid");
	l.fake.rules[0] = (struct rule){"PATCH", "/events/", NULL, 404, "NotFound", "gone", NULL};
	l.fake.nrules = 1;
	assert_int_equal(event_recorder_emit(&l.events, &l.api, &j, l.fake.job, "Warning",
	                                     "CreateRefused", "another", err),
	                 0);
	assert_int_equal(count_since(&l.fake, 0, "POST", "/events", NULL), 3);
	assert_int_equal(l.events.created, 3);
	assert_int_equal(l.events.counted, 2);
	job_release(&j);
	loop_release(&l);
}

/* A new leader knows nothing of its predecessor's creates: a pod whose
 * create was sent and that its cache lacks is read by name, and one that
 * is there is taken as it is, not replaced. */
static void test_actions_a_new_leader_reads_a_sent_pod_before_passing_it_over(void **state)
{
	struct loop l;
	struct create_outcome outcomes[2] = {{-1, CREATE_UNKNOWN, ""}, {-1, CREATE_UNKNOWN, ""}};
	struct pod_view pods[4];
	char err[ERR_LEN];
	struct job j;
	cJSON *status = json_doc_parse("{'workerAttempts': [-1, -1], 'sentAttempts': [0, 0], "
	                               "'ringKeySecret': 'mnist-ring-key-ab12c'}");
	int n = 0;

	(void)state;
	loop_init(&l, 2);
	cJSON_AddItemToObject(l.fake.job, "status", status);
	l.fake.get_answer = json_doc_parse(
	    "{'kind': 'Pod', 'metadata': {'name': 'mnist-worker-0', 'namespace': 'ml', "
	    "'uid': 'p0', 'labels': {'training.mwj.io/replica-index': '0'}, "
	    "'annotations': {'training.mwj.io/restart-attempt': '0'}, "
	    "'ownerReferences': [{'apiVersion': 'training.mwj.io/v1', 'kind': 'MultiWorkerJob', "
	    "'name': 'mnist', 'uid': 'job-uid', 'controller': true}]}, "
	    "'spec': {'containers': [{'name': 'worker'}]}, 'status': {'phase': 'Running'}}");
	assert_int_equal(job_parse(&j, l.fake.job, err), 0);
	assert_int_equal(sent_pods_read(&l.api, &j, outcomes, pods, &n, err), 0);
	/* Both read by name; the fake has one pod for any name: both taken. */
	assert_int_equal(count_since(&l.fake, 0, "GET", "/pods/mnist-worker-", NULL), 2);
	assert_int_equal(n, 2);
	assert_string_equal(pods[0].name, "mnist-worker-0");
	assert_int_equal(pods[0].attempt, 0);
	/* Known creates, and pods the cache has, are not read again. */
	n = 1;
	outcomes[1] = (struct create_outcome){0, CREATE_REFUSED, "quota"};
	assert_int_equal(sent_pods_read(&l.api, &j, outcomes, pods, &n, err), 0);
	assert_int_equal(count_since(&l.fake, 0, "GET", "/pods/mnist-worker-", NULL), 2);
	/* One that is not there (404) stays missing: reconcile passes it
	 * over. */
	cJSON_Delete(l.fake.get_answer);
	l.fake.get_answer = NULL;
	n = 0;
	outcomes[1] = (struct create_outcome){-1, CREATE_UNKNOWN, ""};
	assert_int_equal(sent_pods_read(&l.api, &j, outcomes, pods, &n, err), 0);
	assert_int_equal(n, 0);
	/* A pod someone else made under the name is not the job's. */
	l.fake.get_answer = json_doc_parse("{'kind': 'Pod', 'metadata': {'name': 'mnist-worker-0', "
	                                   "'namespace': 'ml', 'uid': 'planted'}}");
	assert_int_equal(sent_pods_read(&l.api, &j, outcomes, pods, &n, err), 0);
	assert_int_equal(n, 0);
	job_release(&j);
	loop_release(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_actions_a_refused_secret_costs_one_request_a_pass),
	    cmocka_unit_test(test_actions_one_refused_pod_holds_back_no_other),
	    cmocka_unit_test(test_actions_a_terminating_namespace_is_said),
	    cmocka_unit_test(test_actions_never_adopt_a_service_the_job_does_not_own),
	    cmocka_unit_test(test_actions_never_adopt_a_pod_the_job_does_not_own),
	    cmocka_unit_test(test_actions_events_are_counted_not_repeated),
	    cmocka_unit_test(test_actions_a_new_leader_reads_a_sent_pod_before_passing_it_over),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
