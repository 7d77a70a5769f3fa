/* test_reconcile.c - the operator's decisions, as tables: each case is a
 * job (a MultiWorkerJob object read by job_parse, with the status the
 * operator last wrote), its pods (pod objects as the API server returns
 * them, read by pod_view_parse; some from operator/tests/fixtures/pods),
 * and the time; and asserts the exact actions, the new status as it
 * would be written, and when to look again.
 *
 * Cases that span several passes feed each pass's status back into the
 * job, as the status write and the watch do, and change the pods as the
 * actions and the cluster would. Every pass is also run twice on the same
 * input, which must decide the same (reconcile is a pure function). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_doc.h"
#include "reconcile.h"
#include "timefmt.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define FIXTURES "operator/tests/fixtures/pods/"
#define MAX_PODS 8

/* Times: the job started at START, its pods were created at CREATED (as
 * in the fixtures), and a pass runs at NOW unless a case says otherwise. */
#define START     "2026-11-25T01:00:00Z"
#define START_S   1795568400LL
#define CREATED_S 1795568523LL /* 2026-11-25T01:02:03Z */
#define NOW       "2026-11-25T01:16:40Z"
#define NOW_S     (START_S + 1000)
#define DONE      "2026-11-25T02:00:00Z"
#define DONE_S    (START_S + 3600)

/* Test documents write ' for ", which json_doc_parse() swaps back. */
#define TMPL "'template': {'spec': {'containers': [{'name': 'worker', 'image': 'mwj-worker:1'}]}}"

/* The status of a job whose workers all run, as the operator wrote it. */
#define RUNNING_STATUS(attempts)                                                                   \
	"{'phase': 'Running', 'startTime': '" START "', 'workerAttempts': " attempts ", "          \
	"'conditions': [{'type': 'Created', 'status': 'True', 'reason': 'PodsCreated'}, "          \
	"{'type': 'Running', 'status': 'True', 'reason': 'AllWorkersRunning'}]}"

/* Pod statuses, as the kubelet writes them. */
#define PENDING "{'phase': 'Pending', 'qosClass': 'BestEffort'}"
#define RUNNING                                                                                    \
	"{'phase': 'Running', 'conditions': [{'type': 'Ready', 'status': 'True'}], "               \
	"'containerStatuses': [{'name': 'worker', 'ready': true, "                                 \
	"'state': {'running': {'startedAt': '2026-11-25T01:02:09Z'}}}]}"
#define SUCCEEDED                                                                                  \
	"{'phase': 'Succeeded', 'conditions': [{'type': 'Ready', 'status': 'False', "              \
	"'reason': 'PodCompleted'}], 'containerStatuses': [{'name': 'worker', 'ready': false, "    \
	"'state': {'terminated': {'exitCode': 0, 'reason': 'Completed'}}}]}"
#define EXITED(code, why)                                                                          \
	"{'phase': 'Failed', 'conditions': [{'type': 'Ready', 'status': 'False', "                 \
	"'reason': 'PodFailed'}], 'containerStatuses': [{'name': 'worker', 'ready': false, "       \
	"'state': {'terminated': {'exitCode': " #code ", 'reason': '" why "'}}}]}"
#define WAITING(why)                                                                               \
	"{'phase': 'Pending', 'conditions': [{'type': 'Ready', 'status': 'False', "                \
	"'reason': 'ContainersNotReady'}], 'containerStatuses': [{'name': 'worker', "              \
	"'ready': false, 'state': {'waiting': {'reason': '" why "', 'message': 'it says why'}}}]}"

#define DELETING 1

/* One pod of the job: its index, attempt and status; deleting: it has a
 * deletionTimestamp. A list ends with a NULL status. */
struct pod_row {
	int index, attempt;
	const char *status;
	int deleting;
};

/* One job and its pods, as a pass sees them. */
struct world {
	cJSON *obj; /* the MultiWorkerJob as the API returns it */
	struct job job;
	struct pod_view pods[MAX_PODS];
	int npods;
	int have_service, have_secret, have_network_policy;
	/* What this replica knows of its creates (world_outcome), by index
	 * and object. */
	struct create_outcome outcomes[MAX_PODS];
	struct create_outcome objects[JOB_OBJECTS];
	const struct training_status *report; /* the chief's, due now, or NULL */
	struct reconcile_output out;
	int ran;
	char actions[4096]; /* out's actions, as action_text() writes them */
};

/* --- Helpers --- */

/* The table row under test, named in every failure message. */
static char the_case[256];

static void world_parse_job(struct world *w)
{
	char err[ERR_LEN] = "";

	if (job_parse(&w->job, w->obj, err) != 0)
		fail_msg("job_parse: %s", err);
}

/* A job named name in namespace ml with spec members spec (no braces)
 * and status (a document, or NULL for a job never reconciled). Its
 * Service, Secret and NetworkPolicy exist. */
static void world_init_named(struct world *w, const char *name, const char *spec,
                             const char *status)
{
	char text[8192];

	memset(w, 0, sizeof(*w));
	snprintf(text, sizeof(text),
	         "{'apiVersion': 'training.mwj.io/v1', 'kind': 'MultiWorkerJob', "
	         "'metadata': {'name': '%s', 'namespace': 'ml', 'uid': 'job-uid', "
	         "'generation': 1, 'resourceVersion': '100', "
	         "'creationTimestamp': '2026-11-25T00:59:59Z'}, 'spec': {%s}}",
	         name, spec);
	w->obj = json_doc_parse(text);
	if (status != NULL)
		cJSON_AddItemToObject(w->obj, "status", json_doc_parse(status));
	world_parse_job(w);
	w->have_service = w->have_secret = w->have_network_policy = 1;
	for (int i = 0; i < MAX_PODS; i++)
		w->outcomes[i] = (struct create_outcome){-1, CREATE_UNKNOWN, ""};
	for (int k = 0; k < JOB_OBJECTS; k++)
		w->objects[k] = (struct create_outcome){-1, CREATE_UNKNOWN, ""};
}

static void world_init(struct world *w, const char *spec, const char *status)
{
	world_init_named(w, "mnist", spec, status);
}

static void world_release(struct world *w)
{
	the_case[0] = '\0';
	reconcile_output_release(&w->out);
	job_release(&w->job);
	cJSON_Delete(w->obj);
}

static void add_pod(struct world *w, const cJSON *pod)
{
	char err[ERR_LEN] = "";

	assert_true(w->npods < MAX_PODS);
	if (pod_view_parse(&w->pods[w->npods], &w->job, pod, err) != 0)
		fail_msg("pod_view_parse: %s", err);
	w->npods++;
}

/* The job's pods become rows (ending with a NULL status): each a pod
 * object as the API server returns it, uid "pod-<index>-<attempt>". */
static void world_pods(struct world *w, const struct pod_row *rows)
{
	w->npods = 0;
	for (const struct pod_row *r = rows; r->status != NULL; r++) {
		char text[4096];
		cJSON *pod;

		snprintf(text, sizeof(text),
		         "{'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {"
		         "'name': '%s-worker-%d', 'namespace': 'ml', 'uid': 'pod-%d-%d', "
		         "'creationTimestamp': '2026-11-25T01:02:03Z', %s"
		         "'labels': {'training.mwj.io/job-name': '%s', "
		         "'training.mwj.io/replica-index': '%d', "
		         "'app.kubernetes.io/managed-by': 'mwj-operator'}, "
		         "'annotations': {'training.mwj.io/restart-attempt': '%d'}, "
		         "'ownerReferences': [{'apiVersion': 'training.mwj.io/v1', "
		         "'kind': 'MultiWorkerJob', 'name': '%s', 'uid': 'job-uid', "
		         "'controller': true, 'blockOwnerDeletion': true}]}, "
		         "'spec': {'restartPolicy': 'Never', 'hostname': '%s-worker-%d', "
		         "'subdomain': '%s', 'containers': [{'name': 'worker', "
		         "'image': 'mwj-worker:1'}]}, 'status': %s}",
		         w->job.name, r->index, r->index, r->attempt,
		         r->deleting ? "'deletionTimestamp': '2026-11-25T01:16:00Z', "
		                       "'deletionGracePeriodSeconds': 30, "
		                     : "",
		         w->job.name, r->index, r->attempt, w->job.name, w->job.name, r->index,
		         w->job.name, r->status);
		pod = json_doc_parse(text);
		add_pod(w, pod);
		cJSON_Delete(pod);
	}
}

/* Adds the pod of fixture file name (operator/tests/fixtures/pods). */
static void world_fixture(struct world *w, const char *name)
{
	char path[256];
	cJSON *pod;

	snprintf(path, sizeof(path), FIXTURES "%s.json", name);
	pod = json_doc_load(path);
	add_pod(w, pod);
	cJSON_Delete(pod);
}

/* This replica sent the create of index at attempt, and the API
 * answered so. */
static void world_outcome(struct world *w, int index, long attempt, enum create_result result)
{
	assert_true(index < MAX_PODS);
	w->outcomes[index] = (struct create_outcome){attempt, result, ""};
}

/* As world_outcome, with the API's words. */
static void world_outcome_said(struct world *w, int index, long attempt, enum create_result result,
                               const char *message)
{
	world_outcome(w, index, attempt, result);
	snprintf(w->outcomes[index].message, CREATE_MESSAGE_LEN, "%s", message);
}

/* This replica sent the create of the job's object what, and the API
 * answered so. */
static void world_object_outcome(struct world *w, enum job_object what, enum create_result result,
                                 const char *message)
{
	w->objects[what] = (struct create_outcome){0, result, ""};
	snprintf(w->objects[what].message, CREATE_MESSAGE_LEN, "%s", message);
}

/* spec.<member> of the job becomes the document value. */
static void world_edit_spec(struct world *w, const char *member, const char *value)
{
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(w->obj, "spec");

	cJSON_DeleteItemFromObjectCaseSensitive(spec, member);
	cJSON_AddItemToObject(spec, member, json_doc_parse(value));
	job_release(&w->job);
	world_parse_job(w);
}

/* The last pass's status written to the job, as the status write and
 * the watch bring it back to the next pass. */
static void world_write_status(struct world *w)
{
	assert_true(w->ran);
	/* The actions made the Secret the pass asked for, and recorded its
	 * name in the status they wrote. */
	for (int k = 0; k < w->out.nactions; k++)
		if (w->out.actions[k].kind == ACT_CREATE_OBJECT &&
		    w->out.actions[k].object == OBJ_SECRET)
			snprintf(w->out.status.ring_key_secret, JOB_NAME_LEN,
			         "%.200s-ring-key-x7k2q", w->job.name);
	cJSON_DeleteItemFromObjectCaseSensitive(w->obj, "status");
	cJSON_AddItemToObject(w->obj, "status", job_status_to_json(&w->out.status));
	job_release(&w->job);
	world_parse_job(w);
}

/* One action as a short line: "create mnist-worker-1 attempt 2",
 * "delete mnist-worker-0 (pod-0-3)", "event Warning WorkerFailed". */
static void action_text(const struct world *w, const struct action *a, char *out, size_t n)
{
	char want[JOB_NAME_LEN];

	switch (a->kind) {
	case ACT_CREATE_OBJECT:
		snprintf(out, n, "create %s", pod_spec_object_kind(a->object));
		return;
	case ACT_CREATE_POD:
		/* The name is the index's: the two never disagree. */
		pod_spec_pod_name(&w->job, a->index, want);
		if (strcmp(a->name, want) != 0)
			fail_msg("CreatePod of index %d named '%s'", a->index, a->name);
		snprintf(out, n, "create %s attempt %ld", a->name, a->attempt);
		return;
	case ACT_DELETE_POD:
		snprintf(out, n, "delete %s (%s)", a->name, a->uid);
		return;
	case ACT_EVENT:
		snprintf(out, n, "event %s %s", a->event_type, a->reason);
		return;
	case ACT_DELETE_JOB:
		snprintf(out, n, "delete job");
		return;
	}
	fail_msg("action kind %d", (int)a->kind);
}

static void actions_text(const struct world *w, const struct reconcile_output *out, char *text,
                         size_t n)
{
	size_t len = 0;

	text[0] = '\0';
	for (int k = 0; k < out->nactions; k++) {
		char one[512];

		action_text(w, &out->actions[k], one, sizeof(one));
		len += (size_t)snprintf(text + len, n - len, "%s%s", k ? "; " : "", one);
		assert_true(len < n);
	}
}

/* One pass at now_s. Run twice on the same input, it must decide the same. */
static void world_reconcile(struct world *w, long long now_s)
{
	char now[TIMEFMT_LEN], again_text[sizeof(w->actions)];
	struct reconcile_input in = {
	    .job = &w->job,
	    .pods = w->pods,
	    .npods = w->npods,
	    .have_service = w->have_service,
	    .have_network_policy = w->have_network_policy,
	    .now_s = now_s,
	    .now = now,
	    .outcomes = w->job.workers <= MAX_PODS ? w->outcomes : NULL,
	    .object_outcomes = w->objects,
	    .report = w->report,
	};
	struct reconcile_output again;
	cJSON *a, *b;

	/* The Secret is known by the name the status records, which the
	 * actions fill in when they make it. */
	if (w->have_secret && !w->job.status.ring_key_secret[0])
		snprintf(w->job.status.ring_key_secret, JOB_NAME_LEN, "%.200s-ring-key-x7k2q",
		         w->job.name);
	else if (!w->have_secret)
		w->job.status.ring_key_secret[0] = '\0';
	timefmt_rfc3339((time_t)now_s, now);
	reconcile_output_release(&w->out);
	reconcile(&in, &w->out);
	w->ran = 1;
	actions_text(w, &w->out, w->actions, sizeof(w->actions));
	reconcile(&in, &again);
	actions_text(w, &again, again_text, sizeof(again_text));
	a = job_status_to_json(&w->out.status);
	b = job_status_to_json(&again.status);
	assert_string_equal(again_text, w->actions);
	assert_true(cJSON_Compare(a, b, 1));
	assert_int_equal(again.requeue_at_s, w->out.requeue_at_s);
	cJSON_Delete(a);
	cJSON_Delete(b);
	reconcile_output_release(&again);
}

/* Fails unless the pass decided exactly these actions, in this order
 * ("" for none). */
static void assert_actions(const struct world *w, const char *want)
{
	if (strcmp(w->actions, want) != 0)
		fail_msg("%s: actions\n  got  '%s'\n  want '%s'", the_case, w->actions, want);
}

/* Whether got holds want: objects member by member (got may have more;
 * a null in want: the member is absent), conditions matched by type (a
 * condition {'type': T, 'status': null}: there is no condition T), and
 * anything else equal whole. */
static int holds(const cJSON *got, const cJSON *want, char *path, size_t n);

static int holds_conditions(const cJSON *got, const cJSON *want, char *path, size_t n)
{
	const cJSON *w;

	cJSON_ArrayForEach(w, want)
	{
		const char *type = cJSON_GetObjectItem(w, "type")->valuestring;
		const cJSON *g = NULL, *it;
		size_t len = strlen(path);
		int ok;

		cJSON_ArrayForEach(it, got)
		{
			if (strcmp(cJSON_GetObjectItem(it, "type")->valuestring, type) == 0)
				g = it;
		}
		snprintf(path + len, n - len, "[%s]", type);
		if (cJSON_IsNull(cJSON_GetObjectItem(w, "status")))
			ok = g == NULL;
		else
			ok = g != NULL && holds(g, w, path, n);
		if (!ok)
			return 0;
		path[len] = '\0';
	}
	return 1;
}

static int holds(const cJSON *got, const cJSON *want, char *path, size_t n)
{
	const cJSON *w;

	if (!cJSON_IsObject(want))
		return cJSON_Compare(got, want, 1);
	if (!cJSON_IsObject(got))
		return 0;
	cJSON_ArrayForEach(w, want)
	{
		const cJSON *g = cJSON_GetObjectItemCaseSensitive(got, w->string);
		size_t len = strlen(path);
		int ok;

		snprintf(path + len, n - len, ".%s", w->string);
		if (cJSON_IsNull(w))
			ok = g == NULL;
		else if (strcmp(w->string, "conditions") == 0)
			ok = g != NULL && holds_conditions(g, w, path, n);
		else
			ok = g != NULL && holds(g, w, path, n);
		if (!ok)
			return 0;
		path[len] = '\0';
	}
	return 1;
}

/* Fails unless the new status, as it would be written, holds want. */
static void assert_status(const struct world *w, const char *want)
{
	cJSON *got = job_status_to_json(&w->out.status);
	cJSON *doc = json_doc_parse(want);
	char path[256] = "status";

	if (!holds(got, doc, path, sizeof(path))) {
		char *g = cJSON_PrintUnformatted(got);
		char *d = cJSON_PrintUnformatted(doc);

		print_error("got  %s\nwant %s\n", g, d);
		fail_msg("%s: %s differs", the_case, path);
	}
	cJSON_Delete(doc);
	cJSON_Delete(got);
}

/* The one event of reason (fails when there is none or more than one). */
static const struct action *the_event(const struct world *w, const char *reason)
{
	const struct action *found = NULL;

	for (int k = 0; k < w->out.nactions; k++) {
		const struct action *a = &w->out.actions[k];

		if (a->kind != ACT_EVENT || strcmp(a->reason, reason) != 0)
			continue;
		if (found != NULL)
			fail_msg("%s: two %s events: '%s' and '%s'", the_case, reason,
			         found->message, a->message);
		found = a;
	}
	if (found == NULL)
		fail_msg("%s: no %s event among '%s'", the_case, reason, w->actions);
	return found;
}

/* Whether the status written last and the new one differ (a patch). */
static int status_changed(const struct world *w)
{
	cJSON *patch = job_status_patch(&w->job.status, &w->out.status);
	int changed = patch != NULL;

	cJSON_Delete(patch);
	return changed;
}

/* --- A new job --- */

static void test_reconcile_creates_every_object_and_pod_of_a_new_job(void **state)
{
	static const struct {
		const char *spec;
		int have_service, have_secret, have_network_policy;
		const char *actions;
	} cases[] = {
	    {"'workers': 3, " TMPL, 0, 0, 0,
	     "create Secret; create Service; create NetworkPolicy; "
	     "create mnist-worker-0 attempt 0; create mnist-worker-1 attempt 0; "
	     "create mnist-worker-2 attempt 0"},
	    /* Only what is missing: the Service is there already. */
	    {"'workers': 3, " TMPL, 1, 0, 1,
	     "create Secret; create mnist-worker-0 attempt 0; create mnist-worker-1 attempt 0; "
	     "create mnist-worker-2 attempt 0"},
	    /* The template's own restartPolicy is replaced, and the user told. */
	    {"'workers': 3, 'template': {'spec': {'restartPolicy': 'OnFailure', "
	     "'containers': [{'name': 'worker', 'image': 'mwj-worker:1'}]}}",
	     0, 0, 0,
	     "event Warning RestartPolicyOverridden; create Secret; create Service; "
	     "create NetworkPolicy; create mnist-worker-0 attempt 0; create mnist-worker-1 attempt "
	     "0; "
	     "create mnist-worker-2 attempt 0"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct world w;

		world_init(&w, cases[i].spec, NULL);
		w.have_service = cases[i].have_service;
		w.have_secret = cases[i].have_secret;
		w.have_network_policy = cases[i].have_network_policy;
		world_reconcile(&w, NOW_S);
		assert_actions(&w, cases[i].actions);
		/* The attempts stay -1 until the pods are seen; the status says
		 * which creates were sent, before they are, and that they are
		 * under way: nothing is called created before it is. */
		assert_status(&w,
		              "{'phase': 'Pending', 'startTime': '" NOW "', "
		              "'completionTime': null, 'observedGeneration': 1, "
		              "'conditions': [{'type': 'Created', 'status': 'False', "
		              "'reason': 'Creating', 'message': 'creating the objects and the 3 "
		              "worker pods of the job', 'lastTransitionTime': '" NOW "'}, "
		              "{'type': 'Running', 'status': 'False', "
		              "'reason': 'WorkersNotRunning'}, "
		              "{'type': 'Restarting', 'status': 'False'}, "
		              "{'type': 'Failed', 'status': null}], "
		              "'workers': {'active': 0, 'ready': 0, 'succeeded': 0, 'failed': 0}, "
		              "'restarts': {'total': 0, 'preemptions': 0, 'failures': 0}, "
		              "'workerAttempts': [-1, -1, -1], 'sentAttempts': [0, 0, 0], "
		              "'restartingWorkers': null, 'lastFailure': null}");
		assert_int_equal(w.out.requeue_at_s, -1);
		world_release(&w);
	}
}

static void test_reconcile_settles_a_new_job_and_then_has_nothing_to_do(void **state)
{
	static const struct pod_row pending[] = {
	    {0, 0, PENDING, 0}, {1, 0, PENDING, 0}, {2, 0, PENDING, 0}, {0}};
	static const struct pod_row running[] = {
	    {0, 0, RUNNING, 0}, {1, 0, RUNNING, 0}, {2, 0, RUNNING, 0}, {0}};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 3, " TMPL, NULL);
	w.have_service = w.have_secret = w.have_network_policy = 0;
	world_reconcile(&w, NOW_S);
	world_write_status(&w);
	/* The actions ran: the objects and the pods are there, pending. */
	w.have_service = w.have_secret = w.have_network_policy = 1;
	world_pods(&w, pending);
	world_reconcile(&w, NOW_S + 1);
	assert_actions(&w, "");
	assert_status(&w, "{'phase': 'Pending', 'startTime': '" NOW "', "
	                  "'workers': {'active': 3, 'ready': 0, 'succeeded': 0, 'failed': 0}, "
	                  "'workerAttempts': [0, 0, 0]}");
	world_write_status(&w);
	world_reconcile(&w, NOW_S + 2);
	assert_actions(&w, "");
	assert_false(status_changed(&w));
	/* They run. */
	world_pods(&w, running);
	world_reconcile(&w, NOW_S + 30);
	assert_actions(&w, "");
	assert_status(&w, "{'phase': 'Running', 'startTime': '" NOW "', "
	                  "'conditions': [{'type': 'Running', 'status': 'True', "
	                  "'reason': 'AllWorkersRunning', "
	                  "'lastTransitionTime': '2026-11-25T01:17:10Z'}, "
	                  "{'type': 'Created', 'status': 'True', "
	                  "'lastTransitionTime': '2026-11-25T01:16:41Z'}], "
	                  "'workers': {'active': 3, 'ready': 3, 'succeeded': 0, 'failed': 0}, "
	                  "'restarts': {'total': 0, 'preemptions': 0, 'failures': 0}, "
	                  "'workerAttempts': [0, 0, 0], 'restartingWorkers': null}");
	world_write_status(&w);
	/* Again, later: nothing to do and nothing to write. */
	world_reconcile(&w, NOW_S + 600);
	assert_actions(&w, "");
	assert_false(status_changed(&w));
	assert_int_equal(w.out.requeue_at_s, -1);
	world_release(&w);
}

/* --- Training reports --- */

static void test_reconcile_makes_the_status_ca_when_the_chief_reports(void **state)
{
	static const struct job_reporting reporting = {
	    .url_base = "https://status.mwj.svc:8443", .audience = "mwj-operator", .ca_pem = "PEM"};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 2, " TMPL, NULL);
	w.have_service = w.have_secret = w.have_network_policy = 1;
	w.job.reporting = &reporting;
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "create ConfigMap; create mnist-worker-0 attempt 0; "
	                   "create mnist-worker-1 attempt 0");
	assert_int_equal(w.out.actions[0].object, OBJ_STATUS_CA);
	/* Once made (its name in the status), never again. */
	snprintf(w.job.status.status_ca_map, JOB_NAME_LEN, "mnist-status-ca-x7k2q");
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "create mnist-worker-0 attempt 0; create mnist-worker-1 attempt 0");
	/* An operator that takes no reports makes none. */
	w.job.reporting = NULL;
	w.job.status.status_ca_map[0] = '\0';
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "create mnist-worker-0 attempt 0; create mnist-worker-1 attempt 0");
	world_release(&w);
}

static struct training_status report_at(long long step, long long backup)
{
	struct training_status t;

	memset(&t, 0, sizeof(t));
	t.present = 1;
	t.global_step = step;
	t.total_steps = 1000;
	t.percent = (int)(step / 10);
	t.epoch = t.epochs = t.step = t.steps_per_epoch = t.eta_seconds = -1;
	t.last_backup_step = backup;
	t.resumed_from = t.resumed_backup = -1;
	return t;
}

static void test_reconcile_shows_the_report_and_says_when_training_went_back(void **state)
{
	static const struct pod_row running[] = {{0, 1, RUNNING, 0}, {1, 0, RUNNING, 0}, {0}};
	struct training_status r500 = report_at(500, 400), r469 = report_at(469, 469),
	                       r475 = report_at(475, 469), none = report_at(480, -1);
	struct world w;

	(void)state;
	world_init(&w, "'workers': 2, " TMPL, RUNNING_STATUS("[1, 0]"));
	world_pods(&w, running);
	w.report = &r500;
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "");
	assert_status(&w, "{'training': {'globalStep': 500, 'totalSteps': 1000, 'percent': 50, "
	                  "'progress': '50%', 'lastBackupStep': 400}}");
	world_write_status(&w);
	/* Worker 0 was preempted and came back: the workers went back to the
	 * backup of step 469. */
	w.report = &r469;
	world_reconcile(&w, NOW_S + 60);
	assert_string_equal(the_event(&w, "TrainingResumed")->message,
	                    "training resumed from the backup of step 469 (now at step 469); step "
	                    "500 had been reported before");
	world_write_status(&w);
	/* Going on from there is no news. */
	w.report = &r475;
	world_reconcile(&w, NOW_S + 65);
	assert_actions(&w, "");
	world_write_status(&w);
	/* No report this pass: the status keeps the last one. */
	w.report = NULL;
	world_reconcile(&w, NOW_S + 66);
	assert_false(status_changed(&w));
	/* A report behind the status and without a backup still says so. */
	w.report = &none;
	none.global_step = 10;
	world_reconcile(&w, NOW_S + 70);
	assert_string_equal(the_event(&w, "TrainingResumed")->message,
	                    "training resumed at step 10; step 475 had been reported before");
	/* A drop the status never showed (reports.c saw it between writes)
	 * is said with the step it went back from. */
	none.global_step = 480;
	none.resumed_from = 490;
	world_reconcile(&w, NOW_S + 75);
	assert_string_equal(the_event(&w, "TrainingResumed")->message,
	                    "training resumed at step 480; step 490 had been reported before");
	assert_int_equal(w.out.status.training.resumed_from, -1);
	world_write_status(&w);
	/* A new chief where the last one left off. */
	none.global_step = 480;
	none.last_backup_step = 480;
	none.resumed_from = 480;
	none.new_chief = 1;
	world_reconcile(&w, NOW_S + 80);
	assert_string_equal(the_event(&w, "TrainingResumed")->message,
	                    "training resumed from the backup of step 480 (now at step 480); step "
	                    "480 had been reported before");
	world_write_status(&w);
	/* Gone back to the backup of step 470, a newer one written since the
	 * drop: the event names the one it resumed from. */
	none.global_step = 478;
	none.last_backup_step = 475;
	none.resumed_from = 480;
	none.resumed_backup = 470;
	none.new_chief = 0;
	world_reconcile(&w, NOW_S + 85);
	assert_string_equal(the_event(&w, "TrainingResumed")->message,
	                    "training resumed from the backup of step 470 (now at step 478); step "
	                    "480 had been reported before");
	assert_int_equal(w.out.status.training.last_backup_step, 475);
	world_release(&w);
}

#define QUOTA_403                                                                                  \
	"pods is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"

static void test_reconcile_retries_a_refused_create_without_counting_a_preemption(void **state)
{
	/* Workers 0 and 2 were created; the API refused worker 1 (a quota). */
	static const struct pod_row pods[] = {{0, 0, RUNNING, 0}, {2, 0, RUNNING, 0}, {0}};
	static const struct pod_row all[] = {
	    {0, 0, RUNNING, 0}, {1, 0, PENDING, 0}, {2, 0, RUNNING, 0}, {0}};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 3, " TMPL, NULL);
	world_reconcile(&w, NOW_S);
	world_write_status(&w);
	world_pods(&w, pods);
	world_outcome(&w, 0, 0, CREATE_DONE);
	world_outcome_said(&w, 1, 0, CREATE_REFUSED, QUOTA_403);
	world_outcome(&w, 2, 0, CREATE_DONE);
	world_reconcile(&w, NOW_S + 5);
	/* Sent again at the same attempt; the user is told, in the API's
	 * own words, by the condition and one Warning. */
	assert_actions(&w, "create mnist-worker-1 attempt 0; event Warning CreateRefused");
	assert_string_equal(the_event(&w, "CreateRefused")->message,
	                    "cannot create pod mnist-worker-1 (worker 1): " QUOTA_403);
	assert_status(&w, "{'phase': 'Pending', "
	                  "'restarts': {'total': 0, 'preemptions': 0, 'failures': 0}, "
	                  "'workerAttempts': [0, -1, 0], 'sentAttempts': [0, 0, 0], "
	                  "'restartingWorkers': null, 'conditions': [{'type': 'Created', "
	                  "'status': 'False', 'reason': 'CreateRefused', 'message': "
	                  "'cannot create pod mnist-worker-1 (worker 1): " QUOTA_403 "'}]}");
	/* Refused again, and again: the same attempt, nothing to write, and
	 * nothing told twice. */
	world_write_status(&w);
	for (int k = 0; k < 2; k++) {
		world_reconcile(&w, NOW_S + 60 + 60LL * k);
		assert_actions(&w, "create mnist-worker-1 attempt 0");
		assert_false(status_changed(&w));
	}
	/* The quota is raised: attempt 0 is created, and the job is whole. */
	world_outcome(&w, 1, 0, CREATE_DONE);
	world_pods(&w, all);
	world_reconcile(&w, NOW_S + 200);
	assert_actions(&w, "");
	assert_status(&w, "{'workerAttempts': [0, 0, 0], 'sentAttempts': [0, 0, 0], "
	                  "'restarts': {'total': 0, 'preemptions': 0, 'failures': 0}, "
	                  "'conditions': [{'type': 'Created', 'status': 'True', "
	                  "'reason': 'PodsCreated'}]}");
	world_release(&w);
}

/* A pod whose create was sent and that is not there, and was never seen:
 * what the operator does depends on what it knows of the create, and no
 * (index, attempt) is ever created twice. */
static void test_reconcile_never_creates_one_attempt_twice(void **state)
{
	static const struct pod_row two[] = {{0, 0, RUNNING, 0}, {2, 0, RUNNING, 0}, {0}};
	/* The pod of the attempt passed over shows up after all. */
	static const struct pod_row late[] = {
	    {0, 0, RUNNING, 0}, {1, 0, PENDING, 0}, {2, 0, RUNNING, 0}, {0}};
	static const struct pod_row back[] = {
	    {0, 0, RUNNING, 0}, {1, 1, RUNNING, 0}, {2, 0, RUNNING, 0}, {0}};
	struct world w;

	(void)state;
	/* Created (201), and gone before the watch showed it: a preemption. */
	snprintf(the_case, sizeof(the_case), "created and gone unseen");
	world_init(&w, "'workers': 3, " TMPL, NULL);
	world_reconcile(&w, NOW_S);
	world_write_status(&w);
	world_pods(&w, two);
	world_outcome(&w, 1, 0, CREATE_DONE);
	world_reconcile(&w, NOW_S + 5);
	assert_actions(&w, "event Normal WorkerPreempted; create mnist-worker-1 attempt 1");
	assert_status(&w, "{'phase': 'Restarting', "
	                  "'restarts': {'total': 1, 'preemptions': 1, 'failures': 0}, "
	                  "'workerAttempts': [0, 1, 0], 'sentAttempts': [0, 1, 0], "
	                  "'restartingWorkers': [{'index': 1, 'cause': 'Preemption'}]}");
	/* The same, again, for the recreated pod. */
	world_write_status(&w);
	world_outcome(&w, 1, 1, CREATE_DONE);
	world_reconcile(&w, NOW_S + 6);
	assert_actions(&w, "event Normal WorkerPreempted; create mnist-worker-1 attempt 2");
	assert_status(&w, "{'restarts': {'total': 2, 'preemptions': 2, 'failures': 0}, "
	                  "'workerAttempts': [0, 2, 0], 'sentAttempts': [0, 2, 0]}");
	world_release(&w);

	/* Under restartScope All that preemption restarts every worker, and
	 * nothing is created while a pod from before it remains. */
	snprintf(the_case, sizeof(the_case), "created and gone unseen, scope All");
	world_init(&w, "'workers': 3, 'restartScope': 'All', " TMPL, NULL);
	world_reconcile(&w, NOW_S);
	world_write_status(&w);
	world_pods(&w, two);
	world_outcome(&w, 1, 0, CREATE_DONE);
	world_reconcile(&w, NOW_S + 5);
	assert_actions(&w, "event Normal WorkerPreempted; delete mnist-worker-0 (pod-0-0); "
	                   "delete mnist-worker-2 (pod-2-0)");
	assert_status(&w, "{'phase': 'Restarting', "
	                  "'restarts': {'total': 1, 'preemptions': 1, 'failures': 0}, "
	                  "'workerAttempts': [1, 1, 1], 'sentAttempts': [0, 0, 0]}");
	world_release(&w);

	/* Nothing known (a new leader, no answer, a 5xx): the attempt is
	 * passed over, uncounted; it is no restart. */
	snprintf(the_case, sizeof(the_case), "fate unknown");
	world_init(&w, "'workers': 3, " TMPL, NULL);
	world_reconcile(&w, NOW_S);
	world_write_status(&w);
	world_pods(&w, two);
	world_reconcile(&w, NOW_S + 5);
	assert_actions(&w, "event Normal CreateUnconfirmed; create mnist-worker-1 attempt 1");
	assert_string_equal(the_event(&w, "CreateUnconfirmed")->message,
	                    "worker 1 (pod mnist-worker-1): attempt 0 was asked for and its pod "
	                    "never seen; creating attempt 1 instead");
	assert_status(&w, "{'phase': 'Pending', "
	                  "'restarts': {'total': 0, 'preemptions': 0, 'failures': 0}, "
	                  "'workerAttempts': [0, 1, 0], 'sentAttempts': [0, 1, 0], "
	                  "'restartingWorkers': [{'index': 1, 'cause': 'Unconfirmed'}], "
	                  "'conditions': [{'type': 'Restarting', 'status': 'False'}]}");
	world_write_status(&w);
	/* Attempt 1's create answered 409: attempt 0's pod, there after all. */
	world_outcome(&w, 1, 1, CREATE_NAME_BUSY);
	world_reconcile(&w, NOW_S + 6);
	assert_actions(&w, "create mnist-worker-1 attempt 1");
	assert_false(status_changed(&w));
	/* It shows: an old attempt, deleted; attempt 1 waits for it to go. */
	world_pods(&w, late);
	world_reconcile(&w, NOW_S + 7);
	assert_actions(&w, "delete mnist-worker-1 (pod-1-0)");
	world_write_status(&w);
	world_pods(&w, two);
	world_reconcile(&w, NOW_S + 8);
	assert_actions(&w, "create mnist-worker-1 attempt 1");
	world_write_status(&w);
	world_pods(&w, back);
	world_reconcile(&w, NOW_S + 9);
	assert_actions(&w, "");
	assert_status(&w, "{'phase': 'Running', 'restartingWorkers': null, "
	                  "'restarts': {'total': 0, 'preemptions': 0, 'failures': 0}, "
	                  "'workerAttempts': [0, 1, 0]}");
	world_release(&w);

	/* What is known of another attempt says nothing of this one: attempt
	 * 3 is passed over, and the restart's cause kept. */
	snprintf(the_case, sizeof(the_case), "known for another attempt");
	world_init(&w, "'workers': 3, " TMPL,
	           "{'phase': 'Restarting', 'startTime': '" START "', "
	           "'workerAttempts': [0, 3, 0], 'sentAttempts': [0, 3, 0], "
	           "'restartingWorkers': [{'index': 1, 'cause': 'Failure'}], "
	           "'restarts': {'total': 3, 'preemptions': 0, 'failures': 3}}");
	world_pods(&w, two);
	world_outcome(&w, 1, 2, CREATE_REFUSED);
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "event Normal CreateUnconfirmed; create mnist-worker-1 attempt 4");
	assert_status(&w, "{'phase': 'Restarting', "
	                  "'restarts': {'total': 3, 'preemptions': 0, 'failures': 3}, "
	                  "'workerAttempts': [0, 4, 0], 'sentAttempts': [0, 4, 0], "
	                  "'restartingWorkers': [{'index': 1, 'cause': 'Failure'}]}");
	world_release(&w);

	/* A status from before sentAttempts: no create known to be sent,
	 * so attempt 3 is created, as before. */
	snprintf(the_case, sizeof(the_case), "no sentAttempts");
	world_init(&w, "'workers': 3, " TMPL,
	           "{'phase': 'Restarting', 'startTime': '" START "', "
	           "'workerAttempts': [0, 3, 0], "
	           "'restartingWorkers': [{'index': 1, 'cause': 'Failure'}]}");
	world_pods(&w, two);
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "create mnist-worker-1 attempt 3");
	assert_status(&w, "{'sentAttempts': [-1, 3, -1]}");
	world_release(&w);
}

/* --- Preemption --- */

static void test_reconcile_recreates_a_preempted_worker_and_only_it(void **state)
{
	static const struct {
		const char *what;
		const char *spec, *status;
		struct pod_row pods[4];
		const char *fixture; /* a pod added from the fixtures, or NULL */
		const char *actions, *want;
	} cases[] = {
	    {"pod 1 is gone, deleted by someone else",
	     "'workers': 3, " TMPL,
	     RUNNING_STATUS("[0, 0, 0]"),
	     {{0, 0, RUNNING, 0}, {2, 0, RUNNING, 0}, {0}},
	     NULL,
	     "event Normal WorkerPreempted; create mnist-worker-1 attempt 1",
	     "{'phase': 'Restarting', 'restarts': {'total': 1, 'preemptions': 1, 'failures': 0}, "
	     "'workerAttempts': [0, 1, 0], "
	     "'restartingWorkers': [{'index': 1, 'cause': 'Preemption'}], 'lastFailure': null, "
	     "'conditions': [{'type': 'Restarting', 'status': 'True', "
	     "'reason': 'WorkersRestarting'}]}"},
	    {"pods 1 and 3 are gone: two preemptions, each recreated",
	     "'workers': 4, " TMPL,
	     RUNNING_STATUS("[0, 4, 0, 1]"),
	     {{0, 0, RUNNING, 0}, {2, 0, RUNNING, 0}, {0}},
	     NULL,
	     "event Normal WorkerPreempted; event Normal WorkerPreempted; "
	     "create mnist-worker-1 attempt 5; create mnist-worker-3 attempt 2",
	     "{'phase': 'Restarting', 'restarts': {'total': 2, 'preemptions': 2, 'failures': 0}, "
	     "'workerAttempts': [0, 5, 0, 2], "
	     "'restartingWorkers': [{'index': 1, 'cause': 'Preemption'}, "
	     "{'index': 3, 'cause': 'Preemption'}]}"},
	    {"pod 1 was evicted by the kubelet (status.reason Evicted, exit 137)",
	     "'workers': 3, " TMPL,
	     RUNNING_STATUS("[0, 2, 0]"),
	     {{0, 0, RUNNING, 0}, {2, 0, RUNNING, 0}, {0}},
	     "evicted",
	     "event Normal WorkerPreempted; "
	     "delete mnist-worker-1 (0b6a1c2e-4f3d-4a51-9d2a-000000000004)",
	     "{'phase': 'Restarting', 'restarts': {'total': 1, 'preemptions': 1, 'failures': 0}, "
	     "'workerAttempts': [0, 3, 0], "
	     "'restartingWorkers': [{'index': 1, 'cause': 'Preemption'}], 'lastFailure': null}"},
	    {"pod 2 failed under DisruptionTarget (a node shutdown)",
	     "'workers': 3, " TMPL,
	     RUNNING_STATUS("[0, 0, 1]"),
	     {{0, 0, RUNNING, 0}, {1, 0, RUNNING, 0}, {0}},
	     "failed-node-shutdown",
	     "event Normal WorkerPreempted; "
	     "delete mnist-worker-2 (0b6a1c2e-4f3d-4a51-9d2a-000000000007)",
	     "{'phase': 'Restarting', 'restarts': {'total': 1, 'preemptions': 1, 'failures': 0}, "
	     "'workerAttempts': [0, 0, 2], "
	     "'restartingWorkers': [{'index': 2, 'cause': 'Preemption'}], 'lastFailure': null}"},
	    {"pod 1 is being deleted by someone else: no replacement while it terminates",
	     "'workers': 3, " TMPL,
	     RUNNING_STATUS("[0, 0, 0]"),
	     {{0, 0, RUNNING, 0}, {1, 0, RUNNING, DELETING}, {2, 0, RUNNING, 0}, {0}},
	     NULL,
	     "event Normal WorkerPreempted",
	     "{'phase': 'Restarting', 'restarts': {'total': 1, 'preemptions': 1, 'failures': 0}, "
	     "'workerAttempts': [0, 1, 0], "
	     "'restartingWorkers': [{'index': 1, 'cause': 'Preemption'}], "
	     "'workers': {'active': 2, 'ready': 2, 'succeeded': 0, 'failed': 0}}"},
	    {"the chief, at attempt 5, is being deleted (fixture)",
	     "'workers': 2, " TMPL,
	     RUNNING_STATUS("[5, 0]"),
	     {{1, 0, RUNNING, 0}, {0}},
	     "deleting",
	     "event Normal WorkerPreempted",
	     "{'phase': 'Restarting', 'restarts': {'total': 1, 'preemptions': 1, 'failures': 0}, "
	     "'workerAttempts': [6, 0], "
	     "'restartingWorkers': [{'index': 0, 'cause': 'Preemption'}]}"},
	    {"never against backoffLimit: the sixth preemption under backoffLimit 0",
	     "'workers': 3, 'backoffLimit': 0, " TMPL,
	     "{'phase': 'Running', 'startTime': '" START "', 'workerAttempts': [2, 1, 2], "
	     "'restarts': {'total': 5, 'preemptions': 5, 'failures': 0}}",
	     {{0, 2, RUNNING, 0}, {2, 2, RUNNING, 0}, {0}},
	     NULL,
	     "event Normal WorkerPreempted; create mnist-worker-1 attempt 2",
	     "{'phase': 'Restarting', 'restarts': {'total': 6, 'preemptions': 6, 'failures': 0}, "
	     "'workerAttempts': [2, 2, 2], "
	     "'conditions': [{'type': 'Failed', 'status': null}]}"},
	    {"not a preemption: the operator deleted pod 1 itself, and recreates it",
	     "'workers': 3, " TMPL,
	     "{'phase': 'Restarting', 'startTime': '" START "', 'workerAttempts': [0, 1, 0], "
	     "'restartingWorkers': [{'index': 1, 'cause': 'Failure'}], "
	     "'restarts': {'total': 1, 'preemptions': 0, 'failures': 1}}",
	     {{0, 0, RUNNING, 0}, {2, 0, RUNNING, 0}, {0}},
	     NULL,
	     "create mnist-worker-1 attempt 1",
	     "{'phase': 'Restarting', 'restarts': {'total': 1, 'preemptions': 0, 'failures': 1}, "
	     "'workerAttempts': [0, 1, 0], "
	     "'restartingWorkers': [{'index': 1, 'cause': 'Failure'}]}"},
	    {"not yet: a running pod marked DisruptionTarget may still be spared",
	     "'workers': 4, " TMPL,
	     RUNNING_STATUS("[0, 0, 0, 0]"),
	     {{0, 0, RUNNING, 0}, {1, 0, RUNNING, 0}, {2, 0, RUNNING, 0}, {0}},
	     "disruption-target",
	     "",
	     "{'phase': 'Running', 'restarts': {'total': 0, 'preemptions': 0, 'failures': 0}, "
	     "'workerAttempts': [0, 0, 0, 0], 'restartingWorkers': null}"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct world w;

		snprintf(the_case, sizeof(the_case), "%s", cases[i].what);
		world_init(&w, cases[i].spec, cases[i].status);
		world_pods(&w, cases[i].pods);
		if (cases[i].fixture != NULL)
			world_fixture(&w, cases[i].fixture);
		world_reconcile(&w, NOW_S);
		assert_actions(&w, cases[i].actions);
		assert_status(&w, cases[i].want);
		assert_int_equal(w.out.requeue_at_s, -1);
		world_release(&w);
	}
}

static void test_reconcile_says_who_was_preempted_and_how(void **state)
{
	static const struct pod_row pods[] = {{0, 0, RUNNING, 0}, {2, 0, RUNNING, 0}, {0}};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 3, " TMPL, RUNNING_STATUS("[0, 0, 0]"));
	world_pods(&w, pods);
	world_reconcile(&w, NOW_S);
	assert_string_equal(the_event(&w, "WorkerPreempted")->message,
	                    "worker 1 (pod mnist-worker-1) was deleted by someone else; recreating "
	                    "it (attempt 1), not counted against backoffLimit");
	assert_string_equal(the_event(&w, "WorkerPreempted")->event_type, "Normal");
	world_release(&w);

	world_init(&w, "'workers': 3, " TMPL, RUNNING_STATUS("[0, 2, 0]"));
	world_pods(&w, pods);
	world_fixture(&w, "evicted");
	world_reconcile(&w, NOW_S);
	assert_string_equal(the_event(&w, "WorkerPreempted")->message,
	                    "worker 1 (pod mnist-worker-1) was disrupted (Evicted); recreating it "
	                    "(attempt 3), not counted against backoffLimit");
	world_release(&w);
}

static void test_reconcile_recreates_a_terminating_pod_only_once_it_is_gone(void **state)
{
	static const struct pod_row terminating[] = {
	    {0, 0, RUNNING, 0}, {1, 0, RUNNING, DELETING}, {2, 0, RUNNING, 0}, {0}};
	static const struct pod_row gone[] = {{0, 0, RUNNING, 0}, {2, 0, RUNNING, 0}, {0}};
	static const struct pod_row back[] = {
	    {0, 0, RUNNING, 0}, {1, 1, RUNNING, 0}, {2, 0, RUNNING, 0}, {0}};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 3, " TMPL, RUNNING_STATUS("[0, 0, 0]"));
	world_pods(&w, terminating);
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "event Normal WorkerPreempted");
	world_write_status(&w);
	/* Still terminating: nothing more, counted once. */
	world_reconcile(&w, NOW_S + 10);
	assert_actions(&w, "");
	assert_false(status_changed(&w));
	/* Gone: recreated under its name, the next attempt, not counted again. */
	world_pods(&w, gone);
	world_reconcile(&w, NOW_S + 40);
	assert_actions(&w, "create mnist-worker-1 attempt 1");
	assert_status(&w, "{'phase': 'Restarting', "
	                  "'restarts': {'total': 1, 'preemptions': 1, 'failures': 0}, "
	                  "'workerAttempts': [0, 1, 0]}");
	world_write_status(&w);
	world_pods(&w, back);
	world_reconcile(&w, NOW_S + 60);
	assert_actions(&w, "");
	assert_status(&w, "{'phase': 'Running', "
	                  "'restarts': {'total': 1, 'preemptions': 1, 'failures': 0}, "
	                  "'workerAttempts': [0, 1, 0], 'restartingWorkers': null, "
	                  "'conditions': [{'type': 'Restarting', 'status': 'False'}]}");
	world_release(&w);
}

/* --- Failures --- */

static void test_reconcile_applies_the_restart_policy_to_each_exit_code(void **state)
{
	static const int codes[] = {1, 2, 75, 126, 127, 128, 137, 143, 255};
	static const struct {
		const char *policy;
		int recreates[ARRAY_LEN(codes)]; /* per code: 1 recreate, 0 fail the job */
	} policies[] = {
	    {"ExitCode", {0, 0, 1, 0, 0, 1, 1, 1, 1}},
	    {"OnFailure", {1, 1, 1, 1, 1, 1, 1, 1, 1}},
	    {"Always", {1, 1, 1, 1, 1, 1, 1, 1, 1}},
	    {"Never", {0, 0, 0, 0, 0, 0, 0, 0, 0}},
	};

	(void)state;
	for (size_t p = 0; p < ARRAY_LEN(policies); p++) {
		for (size_t c = 0; c < ARRAY_LEN(codes); c++) {
			char spec[512], failed[512], want[1024], msg[512];
			struct pod_row pods[] = {{0, 0, RUNNING, 0}, {1, 0, failed, 0}, {0}};
			int code = codes[c];
			struct world w;

			snprintf(the_case, sizeof(the_case), "restartPolicy %s, exit code %d",
			         policies[p].policy, code);
			snprintf(spec, sizeof(spec), "'workers': 2, 'restartPolicy': '%s', " TMPL,
			         policies[p].policy);
			snprintf(failed, sizeof(failed),
			         "{'phase': 'Failed', 'containerStatuses': [{'name': 'worker', "
			         "'state': {'terminated': {'exitCode': %d, 'reason': 'Error'}}}]}",
			         code);
			world_init(&w, spec, RUNNING_STATUS("[0, 0]"));
			world_pods(&w, pods);
			world_reconcile(&w, NOW_S);
			snprintf(msg, sizeof(msg),
			         "worker 1 (pod mnist-worker-1) failed with exit code %d (Error)",
			         code);
			if (policies[p].recreates[c]) {
				assert_actions(
				    &w, "event Warning WorkerFailed; event Normal Restarting; "
				        "delete mnist-worker-1 (pod-1-0)");
				assert_string_equal(the_event(&w, "WorkerFailed")->message, msg);
				snprintf(
				    want, sizeof(want),
				    "{'phase': 'Restarting', 'completionTime': null, "
				    "'restarts': {'total': 1, 'preemptions': 0, 'failures': 1}, "
				    "'workerAttempts': [0, 1], "
				    "'restartingWorkers': [{'index': 1, 'cause': 'Failure'}], "
				    "'lastFailure': {'pod': 'mnist-worker-1', 'exitCode': %d, "
				    "'reason': 'Error'}}",
				    code);
			} else {
				/* The job fails; cleanPodPolicy Running stops the chief. */
				assert_actions(&w, "event Warning WorkerFailed; "
				                   "delete mnist-worker-0 (pod-0-0)");
				snprintf(
				    want, sizeof(want),
				    "{'phase': 'Failed', 'completionTime': '" NOW "', "
				    "'restarts': {'total': 0, 'preemptions': 0, 'failures': 1}, "
				    "'workerAttempts': [0, 0], 'restartingWorkers': null, "
				    "'lastFailure': {'pod': 'mnist-worker-1', 'exitCode': %d, "
				    "'reason': 'Error'}, "
				    "'conditions': [{'type': 'Failed', 'status': 'True', "
				    "'reason': 'WorkerFailed', 'message': '%s: a permanent failure "
				    "under restartPolicy %s'}, {'type': 'Running', "
				    "'status': 'False', 'reason': 'WorkerFailed'}]}",
				    code, msg, policies[p].policy);
			}
			assert_status(&w, want);
			world_release(&w);
		}
	}
}

static void test_reconcile_tells_one_failure_once(void **state)
{
	/* The chief exits 1 under ExitCode, as in a run on a live cluster
	 * that logged two WorkerFailed events for it. */
	static const struct pod_row failed[] = {{0, 0, EXITED(1, "Error"), 0}, {0}};
	static const struct pod_row oom[] = {
	    {0, 0, RUNNING, 0}, {1, 0, EXITED(137, "OOMKilled"), 0}, {0}};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 1, " TMPL, RUNNING_STATUS("[0]"));
	world_pods(&w, failed);
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "event Warning WorkerFailed");
	assert_string_equal(the_event(&w, "WorkerFailed")->event_type, "Warning");
	assert_string_equal(the_event(&w, "WorkerFailed")->message,
	                    "worker 0 (pod mnist-worker-0) failed with exit code 1 (Error): a "
	                    "permanent failure under restartPolicy ExitCode");
	/* The same state again, after the status write: told already. */
	world_write_status(&w);
	world_reconcile(&w, NOW_S + 1);
	assert_actions(&w, "");
	assert_false(status_changed(&w));
	world_release(&w);

	/* A failure that is recreated: told once as well, across passes that
	 * still see the failed pod before its deletion shows. */
	world_init(&w, "'workers': 2, " TMPL, RUNNING_STATUS("[0, 0]"));
	world_pods(&w, oom);
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "event Warning WorkerFailed; event Normal Restarting; "
	                   "delete mnist-worker-1 (pod-1-0)");
	assert_string_equal(the_event(&w, "Restarting")->message,
	                    "recreating worker 1 (attempt 1): failure 1 of backoffLimit 6");
	world_write_status(&w);
	world_reconcile(&w, NOW_S + 1);
	assert_actions(&w, "delete mnist-worker-1 (pod-1-0)");
	assert_status(&w, "{'restarts': {'total': 1, 'preemptions': 0, 'failures': 1}}");
	world_release(&w);
}

static void test_reconcile_fails_the_job_when_failures_exceed_backoff_limit(void **state)
{
	static const struct {
		int limit, failures_before, fails;
	} cases[] = {
	    {0, 0, 1}, {2, 0, 0}, {2, 1, 0}, {2, 2, 1}, {6, 5, 0}, {6, 6, 1},
	};
	static const struct pod_row pods[] = {
	    {0, 0, RUNNING, 0}, {1, 3, EXITED(137, "OOMKilled"), 0}, {0}};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char spec[256], status[512], want[1024];
		int f = cases[i].failures_before;
		struct world w;

		snprintf(the_case, sizeof(the_case), "backoffLimit %d after %d failures",
		         cases[i].limit, f);
		snprintf(spec, sizeof(spec), "'workers': 2, 'backoffLimit': %d, " TMPL,
		         cases[i].limit);
		/* Preemptions never count: there have been many. */
		snprintf(status, sizeof(status),
		         "{'phase': 'Running', 'startTime': '" START "', 'workerAttempts': [0, 3], "
		         "'restarts': {'total': %d, 'preemptions': 9, 'failures': %d}}",
		         f + 9, f);
		world_init(&w, spec, status);
		world_pods(&w, pods);
		world_reconcile(&w, NOW_S);
		if (cases[i].fails) {
			assert_actions(&w, "event Warning BackoffLimitExceeded; "
			                   "delete mnist-worker-0 (pod-0-0)");
			snprintf(want, sizeof(want),
			         "{'phase': 'Failed', 'completionTime': '" NOW "', "
			         "'restarts': {'total': %d, 'preemptions': 9, 'failures': %d}, "
			         "'conditions': [{'type': 'Failed', 'status': 'True', "
			         "'reason': 'BackoffLimitExceeded', 'message': '%d failures exceed "
			         "backoffLimit %d; the last: worker 1 (pod mnist-worker-1) failed "
			         "with exit code 137 (OOMKilled)'}], "
			         "'lastFailure': {'pod': 'mnist-worker-1', 'exitCode': 137, "
			         "'reason': 'OOMKilled'}}",
			         f + 9, f + 1, f + 1, cases[i].limit);
		} else {
			assert_actions(&w, "event Warning WorkerFailed; event Normal Restarting; "
			                   "delete mnist-worker-1 (pod-1-3)");
			snprintf(want, sizeof(want),
			         "{'phase': 'Restarting', "
			         "'restarts': {'total': %d, 'preemptions': 9, 'failures': %d}, "
			         "'workerAttempts': [0, 4]}",
			         f + 10, f + 1);
		}
		assert_status(&w, want);
		world_release(&w);
	}
}

/* Kubeflow trainer#2045: exit 137 again and again was never counted, and
 * such a job restarted forever. */
static void test_reconcile_counts_exit_137_against_backoff_limit_every_time(void **state)
{
	long long now_s = NOW_S;
	struct world w;
	int attempt = 0, failures = 0;

	(void)state;
	world_init(&w, "'workers': 2, 'backoffLimit': 2, " TMPL, RUNNING_STATUS("[0, 0]"));
	for (;;) {
		struct pod_row killed[] = {
		    {0, 0, RUNNING, 0}, {1, attempt, EXITED(137, "OOMKilled"), 0}, {0}};
		struct pod_row gone[] = {{0, 0, RUNNING, 0}, {0}};
		struct pod_row back[] = {{0, 0, RUNNING, 0}, {1, attempt + 1, RUNNING, 0}, {0}};

		world_pods(&w, killed);
		world_reconcile(&w, now_s);
		failures++;
		if (w.out.status.phase == PHASE_FAILED)
			break;
		assert_int_equal(w.out.status.failures, failures);
		assert_true(failures <= 2);
		world_write_status(&w);
		world_pods(&w, gone);
		world_reconcile(&w, now_s + 30);
		assert_int_equal(w.out.nactions, 1);
		assert_int_equal(w.out.actions[0].kind, ACT_CREATE_POD);
		assert_int_equal(w.out.actions[0].attempt, attempt + 1);
		world_write_status(&w);
		world_pods(&w, back);
		world_reconcile(&w, now_s + 40);
		assert_int_equal(w.out.status.phase, PHASE_RUNNING);
		world_write_status(&w);
		attempt++;
		now_s += 100;
	}
	/* The third failure exceeds backoffLimit 2. */
	assert_int_equal(failures, 3);
	assert_status(&w, "{'phase': 'Failed', "
	                  "'restarts': {'total': 2, 'preemptions': 0, 'failures': 3}, "
	                  "'conditions': [{'type': 'Failed', 'status': 'True', "
	                  "'reason': 'BackoffLimitExceeded'}]}");
	world_release(&w);
}

/* --- restartScope All --- */

static void test_reconcile_restarts_every_worker_together_under_scope_all(void **state)
{
	static const struct pod_row failed[] = {
	    {0, 0, RUNNING, 0}, {1, 0, EXITED(137, "Error"), 0}, {2, 0, RUNNING, 0}, {0}};
	/* The deletes not all shown yet: one terminating, two as they were. */
	static const struct pod_row lagging[] = {{0, 0, RUNNING, DELETING},
	                                         {1, 0, EXITED(137, "Error"), 0},
	                                         {2, 0, EXITED(143, "Error"), 0},
	                                         {0}};
	static const struct pod_row one_left[] = {{2, 0, EXITED(143, "Error"), DELETING}, {0}};
	static const struct pod_row none[] = {{0}};
	/* Workers 0 and 1 of the new attempt are up; worker 2's create failed. */
	static const struct pod_row partly[] = {{0, 1, PENDING, 0}, {1, 1, RUNNING, 0}, {0}};
	static const struct pod_row all_back[] = {
	    {0, 1, RUNNING, 0}, {1, 1, RUNNING, 0}, {2, 1, RUNNING, 0}, {0}};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 3, 'restartScope': 'All', " TMPL, RUNNING_STATUS("[0, 0, 0]"));
	world_pods(&w, failed);
	world_reconcile(&w, NOW_S);
	/* Each pod deleted once, however many rules want it gone. */
	assert_actions(&w, "event Warning WorkerFailed; event Normal Restarting; "
	                   "delete mnist-worker-1 (pod-1-0); delete mnist-worker-2 (pod-2-0); "
	                   "delete mnist-worker-0 (pod-0-0)");
	assert_status(&w, "{'phase': 'Restarting', "
	                  "'restarts': {'total': 1, 'preemptions': 0, 'failures': 1}, "
	                  "'workerAttempts': [1, 1, 1], "
	                  "'restartingWorkers': [{'index': 0, 'cause': 'Scope'}, "
	                  "{'index': 1, 'cause': 'Failure'}, {'index': 2, 'cause': 'Scope'}]}");
	world_write_status(&w);

	/* The old pods' own exits (143 from the operator's SIGTERM) are not
	 * failures; nothing is created while any of them remains. */
	world_pods(&w, lagging);
	world_reconcile(&w, NOW_S + 1);
	assert_actions(&w, "delete mnist-worker-1 (pod-1-0); delete mnist-worker-2 (pod-2-0)");
	assert_status(&w, "{'restarts': {'total': 1, 'preemptions': 0, 'failures': 1}, "
	                  "'workerAttempts': [1, 1, 1]}");
	world_write_status(&w);
	world_pods(&w, one_left);
	world_reconcile(&w, NOW_S + 2);
	assert_actions(&w, "");

	/* All gone: all created, at the next attempt. */
	world_pods(&w, none);
	world_reconcile(&w, NOW_S + 30);
	assert_actions(&w, "create mnist-worker-0 attempt 1; create mnist-worker-1 attempt 1; "
	                   "create mnist-worker-2 attempt 1");
	world_write_status(&w);

	/* The new attempt's own pods do not hold back the one missing. */
	world_pods(&w, partly);
	world_outcome(&w, 2, 1, CREATE_REFUSED);
	world_reconcile(&w, NOW_S + 31);
	assert_actions(&w, "create mnist-worker-2 attempt 1; event Warning CreateRefused");
	assert_status(&w, "{'phase': 'Restarting', "
	                  "'restartingWorkers': [{'index': 2, 'cause': 'Scope'}]}");
	world_write_status(&w);

	world_pods(&w, all_back);
	world_reconcile(&w, NOW_S + 60);
	assert_actions(&w, "");
	assert_status(&w, "{'phase': 'Running', 'restartingWorkers': null, "
	                  "'restarts': {'total': 1, 'preemptions': 0, 'failures': 1}, "
	                  "'workerAttempts': [1, 1, 1]}");
	world_release(&w);
}

static void test_reconcile_restarts_every_worker_for_a_preemption_under_scope_all(void **state)
{
	static const struct pod_row pods[] = {{0, 2, RUNNING, 0}, {2, 2, RUNNING, 0}, {0}};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 3, 'restartScope': 'All', " TMPL, RUNNING_STATUS("[2, 2, 2]"));
	world_pods(&w, pods);
	world_reconcile(&w, NOW_S);
	/* Worker 1 is gone: the others go too, and nothing is created yet. */
	assert_actions(&w, "event Normal WorkerPreempted; delete mnist-worker-0 (pod-0-2); "
	                   "delete mnist-worker-2 (pod-2-2)");
	assert_status(&w, "{'phase': 'Restarting', "
	                  "'restarts': {'total': 1, 'preemptions': 1, 'failures': 0}, "
	                  "'workerAttempts': [3, 3, 3], "
	                  "'restartingWorkers': [{'index': 0, 'cause': 'Scope'}, "
	                  "{'index': 1, 'cause': 'Preemption'}, {'index': 2, 'cause': 'Scope'}]}");
	world_release(&w);
}

/* --- The end --- */

static void test_reconcile_succeeds_when_the_chief_exits_0(void **state)
{
	static const struct pod_row done[] = {
	    {0, 0, SUCCEEDED, 0}, {1, 0, RUNNING, 0}, {2, 0, RUNNING, 0}, {0}};
	static const struct pod_row cleaning[] = {
	    {0, 0, SUCCEEDED, 0}, {1, 0, RUNNING, DELETING}, {2, 0, RUNNING, DELETING}, {0}};
	static const struct pod_row gone[] = {{0}};
	static const struct pod_row worker_done[] = {
	    {0, 0, RUNNING, 0}, {1, 0, SUCCEEDED, 0}, {2, 0, RUNNING, 0}, {0}};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 3, " TMPL, RUNNING_STATUS("[0, 0, 0]"));
	world_pods(&w, done);
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "event Normal Succeeded; delete mnist-worker-1 (pod-1-0); "
	                   "delete mnist-worker-2 (pod-2-0)");
	assert_string_equal(the_event(&w, "Succeeded")->message, "worker 0, the chief, exited 0");
	assert_status(&w, "{'phase': 'Succeeded', 'startTime': '" START "', "
	                  "'completionTime': '" NOW "', "
	                  "'conditions': [{'type': 'Succeeded', 'status': 'True', "
	                  "'reason': 'ChiefSucceeded', 'lastTransitionTime': '" NOW "'}, "
	                  "{'type': 'Running', 'status': 'False', 'reason': 'ChiefSucceeded'}, "
	                  "{'type': 'Restarting', 'status': 'False'}, "
	                  "{'type': 'Failed', 'status': null}], "
	                  "'workers': {'active': 2, 'ready': 2, 'succeeded': 1, 'failed': 0}, "
	                  "'restarts': {'total': 0, 'preemptions': 0, 'failures': 0}}");
	assert_int_equal(w.out.requeue_at_s, -1);
	world_write_status(&w);

	world_pods(&w, cleaning);
	world_reconcile(&w, NOW_S + 1);
	assert_actions(&w, "");
	/* Its pods, Service, Secret and NetworkPolicy gone: never made again. */
	world_pods(&w, gone);
	w.have_service = w.have_secret = w.have_network_policy = 0;
	world_reconcile(&w, NOW_S + 3600);
	assert_actions(&w, "");
	assert_status(&w, "{'phase': 'Succeeded', 'completionTime': '" NOW "', "
	                  "'workers': {'active': 0, 'ready': 0, 'succeeded': 0, 'failed': 0}}");
	world_release(&w);

	/* Another worker exiting 0 ends nothing: the chief decides, and the
	 * job is still Running, not Pending again. */
	world_init(&w, "'workers': 3, " TMPL, RUNNING_STATUS("[0, 0, 0]"));
	world_pods(&w, worker_done);
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "");
	assert_status(&w, "{'phase': 'Running', 'completionTime': null, "
	                  "'conditions': [{'type': 'Succeeded', 'status': null}, "
	                  "{'type': 'Running', 'status': 'True', 'reason': 'AllWorkersRunning'}], "
	                  "'workers': {'active': 2, 'ready': 2, 'succeeded': 1, 'failed': 0}}");
	world_release(&w);
}

static void test_reconcile_never_recreates_the_pods_of_a_finished_job(void **state)
{
	static const char *const statuses[] = {
	    "{'phase': 'Succeeded', 'startTime': '" START "', 'completionTime': '" DONE "', "
	    "'observedGeneration': 1, 'workerAttempts': [0, 0, 0], 'conditions': [{'type': "
	    "'Succeeded', "
	    "'status': 'True', 'reason': 'ChiefSucceeded'}]}",
	    "{'phase': 'Failed', 'startTime': '" START "', 'completionTime': '" DONE "', "
	    "'observedGeneration': 1, 'workerAttempts': [0, 1, 0], 'restartingWorkers': [{'index': "
	    "1, "
	    "'cause': 'Failure'}], 'conditions': [{'type': 'Failed', 'status': 'True', "
	    "'reason': 'BackoffLimitExceeded'}]}",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(statuses); i++) {
		struct world w;

		world_init(&w, "'workers': 3, " TMPL, statuses[i]);
		w.have_service = w.have_secret = w.have_network_policy = 0;
		world_reconcile(&w, DONE_S + 60);
		assert_actions(&w, "");
		assert_false(status_changed(&w));
		assert_int_equal(w.out.requeue_at_s, -1);
		world_release(&w);
	}
}

static void test_reconcile_applies_clean_pod_policy_at_the_end(void **state)
{
	static const struct pod_row pods[] = {{0, 0, SUCCEEDED, 0},
	                                      {1, 0, RUNNING, 0},
	                                      {2, 0, EXITED(75, "Error"), 0},
	                                      {3, 0, PENDING, 0},
	                                      {0}};
	static const struct {
		const char *policy; /* spec member, or "" for the default */
		const char *deletes;
	} cases[] = {
	    {"", "delete mnist-worker-1 (pod-1-0); delete mnist-worker-3 (pod-3-0)"},
	    {"'cleanPodPolicy': 'Running', ",
	     "delete mnist-worker-1 (pod-1-0); delete mnist-worker-3 (pod-3-0)"},
	    {"'cleanPodPolicy': 'All', ",
	     "delete mnist-worker-0 (pod-0-0); delete mnist-worker-1 (pod-1-0); "
	     "delete mnist-worker-2 (pod-2-0); delete mnist-worker-3 (pod-3-0)"},
	    {"'cleanPodPolicy': 'None', ", ""},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char spec[512], want[512];
		struct world w;

		snprintf(the_case, sizeof(the_case), "cleanPodPolicy {%s}", cases[i].policy);
		snprintf(spec, sizeof(spec), "'workers': 4, %s" TMPL, cases[i].policy);
		/* Ending in this pass: the chief has exited 0. */
		world_init(&w, spec, RUNNING_STATUS("[0, 0, 0, 0]"));
		world_pods(&w, pods);
		world_reconcile(&w, NOW_S);
		snprintf(want, sizeof(want), "event Normal Succeeded%s%s",
		         cases[i].deletes[0] ? "; " : "", cases[i].deletes);
		assert_actions(&w, want);
		assert_int_equal(w.out.status.phase, PHASE_SUCCEEDED);
		/* Ended before: the same pods go, and nothing is told again. */
		world_write_status(&w);
		world_reconcile(&w, NOW_S + 5);
		assert_actions(&w, cases[i].deletes);
		assert_false(status_changed(&w));
		world_release(&w);
	}
}

/* --- Suspend --- */

static void test_reconcile_suspends_and_resumes_without_counting_a_restart(void **state)
{
	static const struct pod_row running[] = {{0, 0, RUNNING, 0}, {1, 0, RUNNING, 0}, {0}};
	static const struct pod_row stopping[] = {
	    {0, 0, RUNNING, DELETING}, {1, 0, RUNNING, DELETING}, {0}};
	static const struct pod_row one_stopping[] = {{1, 0, RUNNING, DELETING}, {0}};
	static const struct pod_row none[] = {{0}};
	static const struct pod_row half[] = {{0, 1, PENDING, 0}, {0}};
	static const struct pod_row resumed[] = {{0, 1, RUNNING, 0}, {1, 1, RUNNING, 0}, {0}};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 2, " TMPL, RUNNING_STATUS("[0, 0]"));
	world_pods(&w, running);
	world_edit_spec(&w, "suspend", "true");
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "delete mnist-worker-0 (pod-0-0); delete mnist-worker-1 (pod-1-0); "
	                   "event Normal Suspended");
	assert_status(&w, "{'phase': 'Suspended', 'startTime': null, "
	                  "'conditions': [{'type': 'Suspended', 'status': 'True', "
	                  "'reason': 'JobSuspended'}, {'type': 'Running', 'status': 'False', "
	                  "'reason': 'JobSuspended'}], "
	                  "'restarts': {'total': 0, 'preemptions': 0, 'failures': 0}, "
	                  "'workerAttempts': [0, 0], 'restartingWorkers': null}");
	world_write_status(&w);
	world_pods(&w, stopping);
	world_reconcile(&w, NOW_S + 1);
	assert_actions(&w, "");
	world_pods(&w, none);
	world_reconcile(&w, NOW_S + 30);
	assert_actions(&w, "");
	assert_status(&w, "{'phase': 'Suspended', 'startTime': null}");
	world_write_status(&w);

	/* Resumed while worker 1 still terminates: worker 0 now, worker 1
	 * once it is gone; nothing counted as a restart. */
	world_edit_spec(&w, "suspend", "false");
	world_pods(&w, one_stopping);
	world_reconcile(&w, NOW_S + 100);
	assert_actions(&w, "event Normal Resumed; create mnist-worker-0 attempt 1");
	assert_status(&w, "{'phase': 'Pending', 'startTime': '2026-11-25T01:18:20Z', "
	                  "'conditions': [{'type': 'Suspended', 'status': 'False', "
	                  "'reason': 'JobResumed'}, {'type': 'Restarting', 'status': 'False'}], "
	                  "'restarts': {'total': 0, 'preemptions': 0, 'failures': 0}, "
	                  "'workerAttempts': [1, 1], "
	                  "'restartingWorkers': [{'index': 0, 'cause': 'Resume'}, "
	                  "{'index': 1, 'cause': 'Resume'}]}");
	world_write_status(&w);
	world_pods(&w, half);
	world_reconcile(&w, NOW_S + 101);
	assert_actions(&w, "create mnist-worker-1 attempt 1");
	world_write_status(&w);
	world_pods(&w, resumed);
	world_reconcile(&w, NOW_S + 130);
	assert_actions(&w, "");
	assert_status(&w, "{'phase': 'Running', 'restartingWorkers': null, "
	                  "'restarts': {'total': 0, 'preemptions': 0, 'failures': 0}}");
	world_release(&w);
}

static void test_reconcile_creates_nothing_for_a_job_created_suspended(void **state)
{
	struct world w;

	(void)state;
	world_init(&w, "'workers': 2, 'suspend': true, " TMPL, NULL);
	w.have_service = w.have_secret = w.have_network_policy = 0;
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "event Normal Suspended");
	assert_status(&w, "{'phase': 'Suspended', 'startTime': null, "
	                  "'workerAttempts': [-1, -1]}");
	world_release(&w);
}

/* --- Time --- */

static void test_reconcile_fails_the_job_at_its_active_deadline(void **state)
{
	static const struct pod_row pods[] = {{0, 0, RUNNING, 0}, {1, 0, RUNNING, 0}, {0}};
	static const struct {
		const char *clean;
		long long now_s;
		const char *actions;
		enum job_phase phase;
		long long requeue_at_s;
	} cases[] = {
	    {"", START_S + 1, "", PHASE_RUNNING, START_S + 600},
	    {"", START_S + 599, "", PHASE_RUNNING, START_S + 600},
	    {"", START_S + 600,
	     "event Warning DeadlineExceeded; delete mnist-worker-0 (pod-0-0); "
	     "delete mnist-worker-1 (pod-1-0)",
	     PHASE_FAILED, -1},
	    {"'cleanPodPolicy': 'None', ", START_S + 600, "event Warning DeadlineExceeded",
	     PHASE_FAILED, -1},
	    {"'cleanPodPolicy': 'All', ", START_S + 7200,
	     "event Warning DeadlineExceeded; delete mnist-worker-0 (pod-0-0); "
	     "delete mnist-worker-1 (pod-1-0)",
	     PHASE_FAILED, -1},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char spec[512];
		struct world w;

		snprintf(the_case, sizeof(the_case), "{%s} at start + %lld s", cases[i].clean,
		         cases[i].now_s - START_S);
		snprintf(spec, sizeof(spec), "'workers': 2, 'activeDeadlineSeconds': 600, %s" TMPL,
		         cases[i].clean);
		world_init(&w, spec, RUNNING_STATUS("[0, 0]"));
		world_pods(&w, pods);
		world_reconcile(&w, cases[i].now_s);
		assert_actions(&w, cases[i].actions);
		assert_int_equal(w.out.status.phase, cases[i].phase);
		assert_int_equal(w.out.requeue_at_s, cases[i].requeue_at_s);
		if (cases[i].phase == PHASE_FAILED)
			assert_status(&w,
			              "{'conditions': [{'type': 'Failed', 'status': 'True', "
			              "'reason': 'DeadlineExceeded', 'message': 'the job ran "
			              "longer than activeDeadlineSeconds 600'}], "
			              "'restarts': {'total': 0, 'preemptions': 0, 'failures': 0}}");
		world_release(&w);
	}
}

static void test_reconcile_deletes_a_finished_job_after_its_ttl(void **state)
{
	static const struct {
		const char *phase;
		long long now_s;
		const char *actions;
		long long requeue_at_s;
	} cases[] = {
	    {"Succeeded", DONE_S, "", DONE_S + 100},
	    {"Succeeded", DONE_S + 99, "", DONE_S + 100},
	    {"Succeeded", DONE_S + 100, "delete job", -1},
	    {"Failed", DONE_S + 99, "", DONE_S + 100},
	    {"Failed", DONE_S + 5000, "delete job", -1},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char status[512];
		struct world w;

		snprintf(status, sizeof(status),
		         "{'phase': '%s', 'startTime': '" START "', 'completionTime': '" DONE "', "
		         "'workerAttempts': [0, 0]}",
		         cases[i].phase);
		world_init(&w, "'workers': 2, 'ttlSecondsAfterFinished': 100, " TMPL, status);
		world_reconcile(&w, cases[i].now_s);
		assert_actions(&w, cases[i].actions);
		assert_int_equal(w.out.requeue_at_s, cases[i].requeue_at_s);
		world_release(&w);
	}
}

static void test_reconcile_ttl_0_deletes_the_job_as_it_ends(void **state)
{
	static const struct pod_row pods[] = {{0, 0, SUCCEEDED, 0}, {1, 0, RUNNING, 0}, {0}};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 2, 'ttlSecondsAfterFinished': 0, " TMPL,
	           RUNNING_STATUS("[0, 0]"));
	world_pods(&w, pods);
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "event Normal Succeeded; delete mnist-worker-1 (pod-1-0); delete job");
	assert_int_equal(w.out.requeue_at_s, -1);
	world_release(&w);
}

static void test_reconcile_ttl_counts_from_when_a_lost_completion_time_is_noticed(void **state)
{
	struct world w;

	(void)state;
	/* A user's edit dropped completionTime. */
	world_init(&w, "'workers': 2, 'ttlSecondsAfterFinished': 100, " TMPL,
	           "{'phase': 'Succeeded', 'startTime': '" START "', 'workerAttempts': [0, 0]}");
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "");
	assert_status(&w, "{'completionTime': '" NOW "'}");
	assert_int_equal(w.out.requeue_at_s, NOW_S + 100);
	world_write_status(&w);
	world_reconcile(&w, NOW_S + 100);
	assert_actions(&w, "delete job");
	world_release(&w);
}

/* --- Specs the operator cannot honour --- */

static void test_reconcile_fails_a_spec_it_cannot_honour(void **state)
{
	static const struct {
		const char *name, *spec, *why;
	} cases[] = {
	    {"mnist", "'workers': 2, 'template': {'spec': {'containers': []}}",
	     "'spec.template.spec.containers' is empty: a worker needs a container"},
	    {"mnist", "'workers': 2, 'template': {'spec': {}}",
	     "'spec.template.spec.containers' is missing: a worker needs a container"},
	    {"mnist", "'workers': 2", "'spec.template' is missing"},
	    {"mnist", "'workers': 0, " TMPL, "'spec.workers' is out of range [1, 4096]"},
	    {"mnist", "'workers': 2, 'restartPolicy': 'Sometimes', " TMPL,
	     "'spec.restartPolicy' is 'Sometimes'"},
	    /* "<name>-worker-2" would be 64 characters, one too many. */
	    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "'workers': 3, " TMPL,
	     "job name 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' is too long (55 "
	     "characters)"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const struct job_condition *c;
		struct world w;

		snprintf(the_case, sizeof(the_case), "{%s}", cases[i].spec);
		world_init_named(&w, cases[i].name, cases[i].spec, NULL);
		w.have_service = w.have_secret = w.have_network_policy = 0;
		world_reconcile(&w, NOW_S);
		/* Nothing created: only the user told. */
		assert_actions(&w, "event Warning InvalidSpec");
		assert_status(&w,
		              "{'phase': 'Failed', 'completionTime': '" NOW "', "
		              "'conditions': [{'type': 'Failed', 'status': 'True', "
		              "'reason': 'InvalidSpec'}, {'type': 'Created', 'status': null}]}");
		c = job_status_condition(&w.out.status, "Failed");
		if (strncmp(c->message, cases[i].why, strlen(cases[i].why)) != 0)
			fail_msg("message '%s', want '%s...'", c->message, cases[i].why);
		assert_string_equal(the_event(&w, "InvalidSpec")->message, c->message);
		/* Decided once. */
		world_write_status(&w);
		world_reconcile(&w, NOW_S + 60);
		assert_actions(&w, "");
		world_release(&w);
	}
}

static void test_reconcile_stops_the_pods_of_a_spec_edited_into_one_it_cannot_honour(void **state)
{
	static const struct pod_row pods[] = {{0, 0, RUNNING, 0}, {1, 0, RUNNING, 0}, {0}};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 2, " TMPL, RUNNING_STATUS("[0, 0]"));
	world_pods(&w, pods);
	world_edit_spec(&w, "restartScope", "'Node'");
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "event Warning InvalidSpec; delete mnist-worker-0 (pod-0-0); "
	                   "delete mnist-worker-1 (pod-1-0)");
	assert_status(&w, "{'phase': 'Failed', "
	                  "'workers': {'active': 2, 'ready': 2, 'succeeded': 0, 'failed': 0}}");
	world_release(&w);
}

/* --- Pods that cannot start --- */

static void test_reconcile_tells_once_of_a_pod_stuck_on_its_image_or_config(void **state)
{
	static const struct {
		const char *reason, *status;
		const char *later; /* what the kubelet says next while it still fails */
	} cases[] = {
	    {"ErrImagePull", NULL /* the fixture */, WAITING("ImagePullBackOff")},
	    {"ImagePullBackOff", WAITING("ImagePullBackOff"), WAITING("ErrImagePull")},
	    {"CreateContainerConfigError", WAITING("CreateContainerConfigError"),
	     WAITING("CreateContainerConfigError")},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct pod_row stuck[] = {{1, 0, RUNNING, 0}, {0, 0, cases[i].status, 0}, {0}};
		struct pod_row later[] = {{0, 0, cases[i].later, 0}, {1, 0, RUNNING, 0}, {0}};
		struct pod_row fixed[] = {{0, 0, RUNNING, 0}, {1, 0, RUNNING, 0}, {0}};
		struct pod_row starting[] = {{0, 0, PENDING, 0}, {1, 0, RUNNING, 0}, {0}};
		char want[1024];
		struct world w;

		snprintf(the_case, sizeof(the_case), "%s", cases[i].reason);
		world_init(&w, "'workers': 2, " TMPL,
		           "{'phase': 'Pending', 'startTime': '" START
		           "', 'workerAttempts': [0, 0]}");
		world_pods(&w, stuck);
		if (cases[i].status == NULL)
			world_fixture(&w, "pending-errimagepull");
		/* Not yet long enough: look again when it will be. */
		world_reconcile(&w, CREATED_S + RECONCILE_STUCK_S - 1);
		assert_actions(&w, "");
		assert_int_equal(w.out.requeue_at_s, CREATED_S + RECONCILE_STUCK_S);
		assert_status(&w, "{'conditions': [{'type': 'Running', 'status': 'False', "
		                  "'reason': 'WorkersNotRunning'}]}");
		/* Long enough: told, in the Running condition and an event. */
		world_reconcile(&w, CREATED_S + RECONCILE_STUCK_S);
		assert_actions(&w, "event Warning WorkerNotStarting");
		assert_int_equal(w.out.requeue_at_s, -1);
		snprintf(want, sizeof(want),
		         "{'phase': 'Pending', 'conditions': [{'type': 'Running', "
		         "'status': 'False', 'reason': '%s'}]}",
		         cases[i].reason);
		assert_status(&w, want);
		assert_string_equal(the_event(&w, "WorkerNotStarting")->message,
		                    job_status_condition(&w.out.status, "Running")->message);
		assert_non_null(strstr(the_event(&w, "WorkerNotStarting")->message,
		                       "worker 0 (pod mnist-worker-0) cannot start: "));
		world_write_status(&w);
		/* Told once: not again, nor when the kubelet's reason changes. */
		world_reconcile(&w, CREATED_S + 600);
		assert_actions(&w, "");
		assert_false(status_changed(&w));
		world_pods(&w, later);
		world_reconcile(&w, CREATED_S + 660);
		assert_actions(&w, "");
		world_write_status(&w);
		/* Past it: the condition no longer blames the pod. */
		world_pods(&w, starting);
		world_reconcile(&w, CREATED_S + 700);
		assert_actions(&w, "");
		assert_status(&w, "{'conditions': [{'type': 'Running', 'status': 'False', "
		                  "'reason': 'WorkersNotRunning'}]}");
		world_pods(&w, fixed);
		world_reconcile(&w, CREATED_S + 720);
		assert_actions(&w, "");
		assert_status(&w, "{'phase': 'Running', 'conditions': [{'type': 'Running', "
		                  "'status': 'True', 'reason': 'AllWorkersRunning'}]}");
		world_release(&w);
	}
}

static void test_reconcile_tells_of_each_pod_that_gets_stuck(void **state)
{
	static const struct pod_row first[] = {
	    {0, 0, WAITING("ErrImagePull"), 0}, {1, 0, RUNNING, 0}, {0}};
	/* Worker 0 got its image; worker 1, recreated, cannot read a Secret. */
	static const struct pod_row second[] = {
	    {0, 0, RUNNING, 0}, {1, 1, WAITING("CreateContainerConfigError"), 0}, {0}};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 2, " TMPL,
	           "{'phase': 'Pending', 'startTime': '" START "', 'workerAttempts': [0, 1]}");
	world_pods(&w, first);
	world_reconcile(&w, CREATED_S + 300);
	assert_actions(&w, "event Warning WorkerNotStarting");
	world_write_status(&w);
	world_pods(&w, second);
	world_reconcile(&w, CREATED_S + 600);
	assert_actions(&w, "event Warning WorkerNotStarting");
	assert_string_equal(the_event(&w, "WorkerNotStarting")->message,
	                    "worker 1 (pod mnist-worker-1) cannot start: "
	                    "CreateContainerConfigError: it says why");
	assert_status(&w, "{'conditions': [{'type': 'Running', 'status': 'False', "
	                  "'reason': 'CreateContainerConfigError', 'message': 'worker 1 (pod "
	                  "mnist-worker-1) cannot start: CreateContainerConfigError: it says "
	                  "why'}]}");
	world_release(&w);
}

/* --- Odd pods and jobs --- */

static void test_reconcile_deletes_pods_that_belong_to_no_worker(void **state)
{
	/* Worker 2 of a job scaled from 3 workers down to 2. */
	static const struct pod_row pods[] = {
	    {0, 0, RUNNING, 0}, {1, 0, RUNNING, 0}, {2, 0, RUNNING, 0}, {0}};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 2, " TMPL, RUNNING_STATUS("[0, 0]"));
	world_pods(&w, pods);
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "delete mnist-worker-2 (pod-2-0)");
	assert_status(&w, "{'phase': 'Running', 'workerAttempts': [0, 0], "
	                  "'restarts': {'total': 0, 'preemptions': 0, 'failures': 0}}");
	world_release(&w);
}

static void test_reconcile_leaves_a_job_being_deleted_to_garbage_collection(void **state)
{
	static const struct pod_row pods[] = {{0, 0, RUNNING, 0}, {0}};
	cJSON *meta;
	struct world w;

	(void)state;
	world_init(&w, "'workers': 2, " TMPL, RUNNING_STATUS("[0, 0]"));
	meta = cJSON_GetObjectItem(w.obj, "metadata");
	cJSON_AddStringToObject(meta, "deletionTimestamp", NOW);
	job_release(&w.job);
	world_parse_job(&w);
	world_pods(&w, pods);
	w.have_service = 0;
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "");
	assert_int_equal(w.out.requeue_at_s, -1);
	world_release(&w);
}

/* --- Refusals, names and sidecars --- */

/* The API refused the Secret (a quota on Secrets): the user is told, and
 * told once; nothing is counted; the next pass asks again. */
static void test_reconcile_names_a_refused_object_once(void **state)
{
	struct world w;

	(void)state;
	world_init(&w, "'workers': 2, " TMPL, NULL);
	w.have_secret = 0;
	world_object_outcome(&w, OBJ_SECRET, CREATE_REFUSED,
	                     "secrets is forbidden: exceeded quota: q, requested: secrets=1, "
	                     "used: secrets=0, limited: secrets=0");
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "create Secret; create mnist-worker-0 attempt 0; "
	                   "create mnist-worker-1 attempt 0; event Warning CreateRefused");
	assert_status(&w, "{'phase': 'Pending', 'conditions': [{'type': 'Created', "
	                  "'status': 'False', 'reason': 'CreateRefused', 'message': "
	                  "'cannot create the Secret of the job: secrets is forbidden: exceeded "
	                  "quota: q, requested: secrets=1, used: secrets=0, limited: "
	                  "secrets=0'}], 'restarts': {'total': 0, 'preemptions': 0, "
	                  "'failures': 0}, 'workerAttempts': [-1, -1]}");
	/* As the actions left it: no Secret, and so no pod create sent. */
	w.out.status.sent[0] = w.out.status.sent[1] = -1;
	w.out.nactions = 0;
	world_write_status(&w);
	world_reconcile(&w, NOW_S + 60);
	assert_actions(&w, "create Secret; create mnist-worker-0 attempt 0; "
	                   "create mnist-worker-1 attempt 0");
	assert_status(&w, "{'workerAttempts': [-1, -1], 'sentAttempts': [0, 0]}");
	world_release(&w);
}

/* A name the job needs is held by something it does not own: the
 * operator never uses it, and the job fails saying so. */
static void test_reconcile_fails_a_job_whose_names_are_taken(void **state)
{
	static const struct pod_row one[] = {{0, 0, RUNNING, 0}, {0}};
	struct world w;

	(void)state;
	snprintf(the_case, sizeof(the_case), "a planted Service");
	world_init(&w, "'workers': 2, " TMPL, NULL);
	w.have_service = 0;
	world_object_outcome(&w, OBJ_SERVICE, CREATE_NOT_OWNED,
	                     "a Service named mnist already exists in namespace ml and is not "
	                     "owned by this job");
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "event Warning NameConflict");
	assert_status(&w, "{'phase': 'Failed', 'conditions': [{'type': 'Created', "
	                  "'status': 'False', 'reason': 'NameConflict'}, {'type': 'Failed', "
	                  "'status': 'True', 'reason': 'NameConflict', 'message': "
	                  "'cannot create the Service of the job: a Service named mnist already "
	                  "exists in namespace ml and is not owned by this job'}]}");
	world_release(&w);

	snprintf(the_case, sizeof(the_case), "a planted pod");
	world_init(&w, "'workers': 2, " TMPL, RUNNING_STATUS("[0, -1]"));
	world_pods(&w, one);
	world_outcome_said(&w, 1, 0, CREATE_NOT_OWNED, "a Pod named mnist-worker-1 already exists");
	world_reconcile(&w, NOW_S);
	/* Its pods go, as at any end. */
	assert_actions(&w, "event Warning NameConflict; delete mnist-worker-0 (pod-0-0)");
	assert_status(&w, "{'phase': 'Failed'}");
	world_release(&w);
}

/* spec.workers of a running job changed on a server that lets it: told
 * once per edit, and not acted on. */
static void test_reconcile_keeps_the_workers_a_job_started_with(void **state)
{
	static const struct pod_row two[] = {{0, 0, RUNNING, 0}, {1, 0, RUNNING, 0}, {0}};
	struct world w;

	(void)state;
	world_init(&w, "'workers': 2, " TMPL, RUNNING_STATUS("[0, 0]"));
	cJSON *status = cJSON_GetObjectItem(w.obj, "status"),
	      *meta = cJSON_GetObjectItem(w.obj, "metadata");
	cJSON_DeleteItemFromObject(status, "observedGeneration");
	cJSON_AddNumberToObject(status, "observedGeneration", 1);
	cJSON_DeleteItemFromObject(meta, "generation");
	cJSON_AddNumberToObject(meta, "generation", 2);
	world_edit_spec(&w, "workers", "3");
	assert_int_equal(w.job.workers, 2);
	assert_int_equal(w.job.workers_spec, 3);
	world_pods(&w, two);
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "event Warning WorkersImmutable");
	assert_string_equal(the_event(&w, "WorkersImmutable")->message,
	                    "spec.workers was changed to 3; the job keeps its 2 workers, whose "
	                    "TF_CONFIG names them all: delete the job and create it again to "
	                    "change the number");
	assert_status(&w, "{'observedGeneration': 2, 'workerAttempts': [0, 0]}");
	world_write_status(&w);
	world_reconcile(&w, NOW_S + 1);
	assert_actions(&w, "");
	world_release(&w);
}

/* A worker container that ended beside a sidecar that still runs: the
 * worker decides, and its pod is deleted so that the sidecar stops. */
#define HELD(code)                                                                                 \
	"{'phase': 'Running', 'conditions': [{'type': 'Ready', 'status': 'False'}], "              \
	"'containerStatuses': [{'name': 'log-shipper', 'ready': true, "                            \
	"'state': {'running': {'startedAt': '2026-11-25T01:02:09Z'}}}, {'name': 'worker', "        \
	"'ready': false, 'state': {'terminated': {'exitCode': " #code ", 'reason': 'X'}}}]}"

static void test_reconcile_follows_the_worker_container_whatever_its_sidecars_do(void **state)
{
	static const struct pod_row chief_done[] = {{0, 0, HELD(0), 0}, {1, 0, HELD(0), 0}, {0}};
	static const struct pod_row failed[] = {{0, 0, RUNNING, 0}, {1, 0, HELD(75), 0}, {0}};
	static const struct pod_row broken[] = {{0, 0, RUNNING, 0}, {1, 0, HELD(1), 0}, {0}};
	struct world w;

	(void)state;
	snprintf(the_case, sizeof(the_case), "the chief done, cleanPodPolicy None");
	world_init(&w, "'workers': 2, 'cleanPodPolicy': 'None', " TMPL, RUNNING_STATUS("[0, 0]"));
	world_pods(&w, chief_done);
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "event Normal Succeeded; delete mnist-worker-0 (pod-0-0); "
	                   "delete mnist-worker-1 (pod-1-0)");
	assert_status(&w, "{'phase': 'Succeeded', 'workers': {'active': 0, 'ready': 0, "
	                  "'succeeded': 2, 'failed': 0}}");
	world_release(&w);

	snprintf(the_case, sizeof(the_case), "a worker exits 75");
	world_init(&w, "'workers': 2, " TMPL, RUNNING_STATUS("[0, 0]"));
	world_pods(&w, failed);
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "event Warning WorkerFailed; event Normal Restarting; "
	                   "delete mnist-worker-1 (pod-1-0)");
	assert_status(&w, "{'phase': 'Restarting', 'workerAttempts': [0, 1], "
	                  "'restarts': {'total': 1, 'preemptions': 0, 'failures': 1}}");
	world_release(&w);

	snprintf(the_case, sizeof(the_case), "a worker exits 1");
	world_init(&w, "'workers': 2, " TMPL, RUNNING_STATUS("[0, 0]"));
	world_pods(&w, broken);
	world_reconcile(&w, NOW_S);
	assert_actions(&w, "event Warning WorkerFailed; delete mnist-worker-0 (pod-0-0); "
	                   "delete mnist-worker-1 (pod-1-0)");
	assert_status(&w, "{'phase': 'Failed', 'lastFailure': {'pod': 'mnist-worker-1', "
	                  "'exitCode': 1}}");
	world_release(&w);
}

/* A TF_CONFIG too big for an environment variable: the job also gets a
 * ConfigMap for it, before its pods. */
static void test_reconcile_makes_a_config_map_for_a_large_cluster(void **state)
{
	struct world w;

	(void)state;
	world_init_named(&w, "a-job-whose-name-is-long-enough-to-matter", "'workers': 2000, " TMPL,
	                 NULL);
	assert_true(pod_spec_tf_config_in_file(&w.job));
	struct reconcile_input in = {.job = &w.job, .now_s = NOW_S, .now = NOW};
	reconcile(&in, &w.out);
	assert_true(w.out.nactions > 3);
	assert_int_equal(w.out.actions[0].kind, ACT_CREATE_OBJECT);
	assert_int_equal(w.out.actions[0].object, OBJ_SECRET);
	assert_int_equal(w.out.actions[1].object, OBJ_CONFIG_MAP);
	assert_int_equal(w.out.actions[2].object, OBJ_SERVICE);
	assert_int_equal(w.out.actions[3].object, OBJ_NETWORK_POLICY);
	world_release(&w);

	world_init_named(&w, "short", "'workers': 1000, " TMPL, NULL);
	assert_false(pod_spec_tf_config_in_file(&w.job));
	world_release(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reconcile_creates_every_object_and_pod_of_a_new_job),
	    cmocka_unit_test(test_reconcile_settles_a_new_job_and_then_has_nothing_to_do),
	    cmocka_unit_test(test_reconcile_shows_the_report_and_says_when_training_went_back),
	    cmocka_unit_test(test_reconcile_makes_the_status_ca_when_the_chief_reports),
	    cmocka_unit_test(test_reconcile_retries_a_refused_create_without_counting_a_preemption),
	    cmocka_unit_test(test_reconcile_never_creates_one_attempt_twice),
	    cmocka_unit_test(test_reconcile_recreates_a_preempted_worker_and_only_it),
	    cmocka_unit_test(test_reconcile_says_who_was_preempted_and_how),
	    cmocka_unit_test(test_reconcile_recreates_a_terminating_pod_only_once_it_is_gone),
	    cmocka_unit_test(test_reconcile_applies_the_restart_policy_to_each_exit_code),
	    cmocka_unit_test(test_reconcile_tells_one_failure_once),
	    cmocka_unit_test(test_reconcile_fails_the_job_when_failures_exceed_backoff_limit),
	    cmocka_unit_test(test_reconcile_counts_exit_137_against_backoff_limit_every_time),
	    cmocka_unit_test(test_reconcile_restarts_every_worker_together_under_scope_all),
	    cmocka_unit_test(test_reconcile_restarts_every_worker_for_a_preemption_under_scope_all),
	    cmocka_unit_test(test_reconcile_succeeds_when_the_chief_exits_0),
	    cmocka_unit_test(test_reconcile_never_recreates_the_pods_of_a_finished_job),
	    cmocka_unit_test(test_reconcile_applies_clean_pod_policy_at_the_end),
	    cmocka_unit_test(test_reconcile_suspends_and_resumes_without_counting_a_restart),
	    cmocka_unit_test(test_reconcile_creates_nothing_for_a_job_created_suspended),
	    cmocka_unit_test(test_reconcile_fails_the_job_at_its_active_deadline),
	    cmocka_unit_test(test_reconcile_deletes_a_finished_job_after_its_ttl),
	    cmocka_unit_test(test_reconcile_ttl_0_deletes_the_job_as_it_ends),
	    cmocka_unit_test(test_reconcile_ttl_counts_from_when_a_lost_completion_time_is_noticed),
	    cmocka_unit_test(test_reconcile_fails_a_spec_it_cannot_honour),
	    cmocka_unit_test(
	        test_reconcile_stops_the_pods_of_a_spec_edited_into_one_it_cannot_honour),
	    cmocka_unit_test(test_reconcile_tells_once_of_a_pod_stuck_on_its_image_or_config),
	    cmocka_unit_test(test_reconcile_tells_of_each_pod_that_gets_stuck),
	    cmocka_unit_test(test_reconcile_deletes_pods_that_belong_to_no_worker),
	    cmocka_unit_test(test_reconcile_leaves_a_job_being_deleted_to_garbage_collection),
	    cmocka_unit_test(test_reconcile_names_a_refused_object_once),
	    cmocka_unit_test(test_reconcile_fails_a_job_whose_names_are_taken),
	    cmocka_unit_test(test_reconcile_keeps_the_workers_a_job_started_with),
	    cmocka_unit_test(test_reconcile_follows_the_worker_container_whatever_its_sidecars_do),
	    cmocka_unit_test(test_reconcile_makes_a_config_map_for_a_large_cluster),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
