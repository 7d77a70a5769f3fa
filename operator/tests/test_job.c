/* test_job.c - a MultiWorkerJob read into struct job (the CRD's defaults,
 * every reason a spec cannot be honoured), its status read back from JSON
 * a user may have edited, written out, diffed into a merge patch, and its
 * conditions' transition times. */
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

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Test documents write ' for ", which json_doc_parse() swaps back. */
#define META "'metadata': {'name': 'mnist', 'namespace': 'ml', 'uid': 'u-1', 'generation': 4}"
#define TMPL "'template': {'spec': {'containers': [{'name': 'worker', 'image': 'w:1'}]}}"
#define T0   "2026-11-25T01:02:03Z"
#define T1   "2026-11-25T01:05:00Z"
#define T2   "2026-11-25T02:00:00Z"

/* A job with spec members spec_members (without braces), parsed into j. */
static cJSON *job_with_spec(struct job *j, const char *spec_members)
{
	char text[4096];
	char err[ERR_LEN] = "";
	cJSON *obj;

	snprintf(text, sizeof(text), "{" META ", 'spec': {%s}}", spec_members);
	obj = json_doc_parse(text);
	if (job_parse(j, obj, err) != 0)
		fail_msg("job_parse: %s", err);
	return obj;
}

/* --- Reading the spec --- */

static void test_job_parse_applies_the_crds_defaults(void **state)
{
	struct job j;
	cJSON *obj = job_with_spec(&j, "'workers': 2, " TMPL);

	(void)state;
	assert_string_equal(j.invalid, "");
	assert_string_equal(j.ns, "ml");
	assert_string_equal(j.name, "mnist");
	assert_string_equal(j.uid, "u-1");
	assert_int_equal(j.generation, 4);
	assert_false(j.deleting);
	assert_int_equal(j.workers, 2);
	assert_int_equal(j.port, 2222);
	assert_int_equal(j.restart_policy, RESTART_EXIT_CODE);
	assert_int_equal(j.restart_scope, SCOPE_POD);
	assert_int_equal(j.clean_pod_policy, CLEAN_RUNNING);
	assert_int_equal(j.backoff_limit, 6);
	assert_int_equal(j.active_deadline_s, -1);
	assert_int_equal(j.ttl_after_finished_s, -1);
	assert_false(j.suspend);
	assert_null(j.checkpoint_volume);
	assert_string_equal(j.checkpoint_mount, "/mwj/checkpoint");
	assert_ptr_equal(j.template,
	                 cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "spec"), "template"));
	/* No status yet: never reconciled, no index ever created. */
	assert_int_equal(j.status.phase, PHASE_NONE);
	assert_int_equal(j.status.nworkers, 2);
	assert_int_equal(j.status.attempts[0], -1);
	assert_int_equal(j.status.attempts[1], -1);
	assert_int_equal(j.status.restarting[1], CAUSE_NONE);
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_job_parse_reads_every_field(void **state)
{
	struct job j;
	cJSON *obj = job_with_spec(
	    &j, "'workers': 3, 'port': 3333, 'restartPolicy': 'OnFailure', 'restartScope': 'All', "
	        "'backoffLimit': 0, 'activeDeadlineSeconds': 7200, 'ttlSecondsAfterFinished': 0, "
	        "'cleanPodPolicy': 'None', 'suspend': true, 'checkpoint': {'mountPath': '/b', "
	        "'volume': {'emptyDir': {}}}, " TMPL);

	(void)state;
	assert_string_equal(j.invalid, "");
	assert_int_equal(j.workers, 3);
	assert_int_equal(j.port, 3333);
	assert_int_equal(j.restart_policy, RESTART_ON_FAILURE);
	assert_int_equal(j.restart_scope, SCOPE_ALL);
	assert_int_equal(j.backoff_limit, 0);
	assert_int_equal(j.active_deadline_s, 7200);
	assert_int_equal(j.ttl_after_finished_s, 0);
	assert_int_equal(j.clean_pod_policy, CLEAN_NONE);
	assert_true(j.suspend);
	assert_non_null(cJSON_GetObjectItem(j.checkpoint_volume, "emptyDir"));
	assert_string_equal(j.checkpoint_mount, "/b");
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_job_parse_records_why_a_spec_cannot_be_honoured(void **state)
{
	static const struct {
		const char *spec, *want;
	} cases[] = {
	    {TMPL, "'spec.workers' is missing"},
	    {"'workers': 0, " TMPL, "'spec.workers' is out of range [1, 4096]"},
	    {"'workers': 4097, " TMPL, "'spec.workers' is out of range [1, 4096]"},
	    {"'workers': '3', " TMPL, "'spec.workers' must be an integer"},
	    {"'workers': 2.5, " TMPL, "'spec.workers' must be an integer"},
	    {"'workers': 2, 'port': 0, " TMPL, "'spec.port' is out of range [1, 65535]"},
	    {"'workers': 2, 'port': 65536, " TMPL, "'spec.port' is out of range [1, 65535]"},
	    {"'workers': 2, 'metricsPort': 70000, " TMPL,
	     "'spec.metricsPort' is out of range [0, 65535]"},
	    {"'workers': 2, 'port': 9100, " TMPL,
	     "'spec.metricsPort' 9100 is the ring's 'spec.port'"},
	    {"'workers': 2, 'restartPolicy': 'Sometimes', " TMPL,
	     "'spec.restartPolicy' is 'Sometimes': expected 'ExitCode', 'OnFailure', 'Never' or "
	     "'Always'"},
	    {"'workers': 2, 'restartScope': 'Node', " TMPL,
	     "'spec.restartScope' is 'Node': expected 'Pod' or 'All'"},
	    {"'workers': 2, 'cleanPodPolicy': 1, " TMPL, "'spec.cleanPodPolicy' must be a string"},
	    {"'workers': 2, 'backoffLimit': -1, " TMPL, "'spec.backoffLimit' is out of range"},
	    {"'workers': 2, 'backoffLimit': 1000001, " TMPL, "'spec.backoffLimit' is out of range"},
	    {"'workers': 2, 'activeDeadlineSeconds': 0, " TMPL,
	     "'spec.activeDeadlineSeconds' is out of range"},
	    {"'workers': 2, 'ttlSecondsAfterFinished': -1, " TMPL,
	     "'spec.ttlSecondsAfterFinished' is out of range"},
	    {"'workers': 2, 'ttlSecondsAfterFinished': 2147483648, " TMPL,
	     "'spec.ttlSecondsAfterFinished' is out of range [0, 2147483647]"},
	    {"'workers': 2, 'suspend': 'yes', " TMPL, "'spec.suspend' must be a boolean"},
	    {"'workers': 2", "'spec.template' is missing"},
	    {"'workers': 2, 'template': []", "'spec.template' must be an object"},
	    {"'workers': 2, 'template': {}", "'spec.template.spec' is missing"},
	    {"'workers': 2, 'template': {'spec': {}}",
	     "'spec.template.spec.containers' is missing: a worker needs a container"},
	    {"'workers': 2, 'template': {'spec': {'containers': []}}",
	     "'spec.template.spec.containers' is empty: a worker needs a container"},
	    {"'workers': 2, 'template': {'spec': {'containers': [{'name': 'a'}, {'image': 'x'}]}}",
	     "'spec.template.spec.containers[1]' has no name"},
	    {"'workers': 2, 'checkpoint': {'mountPath': '/c'}, " TMPL,
	     "'spec.checkpoint.volume' must be a volume source with exactly one member"},
	    {"'workers': 2, 'checkpoint': {'volume': {'emptyDir': {}, 'nfs': {}}}, " TMPL,
	     "'spec.checkpoint.volume' must be a volume source with exactly one member"},
	    {"'workers': 2, 'checkpoint': {'volume': {'emptyDir': {}}, 'mountPath': 'c'}, " TMPL,
	     "'spec.checkpoint.mountPath' must be an absolute path"},
	    {"'workers': 2, 'checkpoint': 'pvc', " TMPL, "'spec.checkpoint' must be an object"},
	    /* The first reason found is the one given. */
	    {"'workers': 0, 'port': 0, " TMPL, "'spec.workers' is out of range"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct job j;
		cJSON *obj = job_with_spec(&j, cases[i].spec);

		if (strstr(j.invalid, cases[i].want) != j.invalid)
			fail_msg("{%s}: invalid '%s', want '%s'", cases[i].spec, j.invalid,
			         cases[i].want);
		/* What is left is still usable: at least one worker, in range. */
		assert_true(j.workers >= 1 && j.workers <= JOB_WORKERS_MAX);
		assert_true(j.port >= 1 && j.port <= 65535);
		assert_int_equal(j.status.nworkers, j.workers);
		job_release(&j);
		cJSON_Delete(obj);
	}
}

static void test_job_parse_refuses_names_too_long_for_the_pods(void **state)
{
	char text[1024], name[64];
	char err[ERR_LEN] = "";
	struct job j;
	cJSON *obj;

	(void)state;
	/* 55 characters: "<name>-worker-2" would be 64, one too many. */
	memset(name, 'a', 55);
	name[55] = '\0';
	snprintf(text, sizeof(text),
	         "{'metadata': {'name': '%s', 'uid': 'u'}, 'spec': {'workers': 3, " TMPL "}}",
	         name);
	obj = json_doc_parse(text);
	assert_int_equal(job_parse(&j, obj, err), 0);
	assert_non_null(strstr(j.invalid, "is too long (55 characters)"));
	assert_non_null(strstr(j.invalid, "with 3 workers the job name can have at most 54"));
	/* Without a namespace the job is in "default", as kubectl's would be. */
	assert_string_equal(j.ns, "default");
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_job_parse_refuses_an_object_without_name_or_uid(void **state)
{
	static const struct {
		const char *doc, *want;
	} cases[] = {
	    {"[]", "MultiWorkerJob: a MultiWorkerJob must be an object"},
	    {"{}", "MultiWorkerJob: 'metadata' is missing"},
	    {"{'metadata': {'uid': 'u'}}", "MultiWorkerJob: 'metadata.name' is missing"},
	    {"{'metadata': {'name': 'x'}}", "MultiWorkerJob: 'metadata.uid' is missing"},
	    {"{'metadata': {'name': '', 'uid': 'u'}}", "MultiWorkerJob: 'metadata.name' is empty"},
	    {"{'metadata': {'name': 'x', 'uid': 7}}",
	     "MultiWorkerJob: 'metadata.uid' must be a string"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char err[ERR_LEN] = "";
		cJSON *obj = json_doc_parse(cases[i].doc);
		struct job j;

		if (job_parse(&j, obj, err) != -1 || strcmp(err, cases[i].want) != 0)
			fail_msg("%s: '%s', want '%s'", cases[i].doc, err, cases[i].want);
		assert_null(j.status.attempts);
		job_release(&j); /* safe after a failed parse */
		cJSON_Delete(obj);
	}
	job_release(NULL);
}

static void test_job_parse_sees_a_deletion_in_progress(void **state)
{
	char err[ERR_LEN] = "";
	cJSON *obj =
	    json_doc_parse("{'metadata': {'name': 'x', 'uid': 'u', 'deletionTimestamp': '" T0
	                   "'}, 'spec': {'workers': 1, " TMPL "}}");
	struct job j;

	(void)state;
	assert_int_equal(job_parse(&j, obj, err), 0);
	assert_true(j.deleting);
	job_release(&j);
	cJSON_Delete(obj);
}

/* --- The status --- */

/* A status with every field set, for workers 3. */
static void full_status(struct job_status *s)
{
	job_status_parse(s, NULL, 3);
	s->phase = PHASE_RESTARTING;
	job_status_set_condition(s, "Created", "True", "PodsCreated", "all 3 pods created", T0);
	job_status_set_condition(s, "Running", "False", "WorkersRestarting", "", T1);
	s->active = 2;
	s->ready = 1;
	s->succeeded = 0;
	s->failed = 1;
	s->total_restarts = 5;
	s->preemptions = 3;
	s->failures = 2;
	snprintf(s->start_time, sizeof(s->start_time), T0);
	s->observed_generation = 4;
	snprintf(s->last_failure_pod, sizeof(s->last_failure_pod), "mnist-worker-1");
	s->last_failure_exit_code = 137;
	snprintf(s->last_failure_reason, sizeof(s->last_failure_reason), "OOMKilled");
	s->attempts[0] = 2;
	s->attempts[1] = 3;
	s->attempts[2] = -1;
	s->restarting[1] = CAUSE_FAILURE;
	s->restarting[2] = CAUSE_RESUME;
	s->sent[0] = 2;
	s->sent[1] = 3;
	snprintf(s->ring_key_secret, sizeof(s->ring_key_secret), "mnist-ring-key-x7k2q");
}

#define FULL_STATUS_JSON                                                                           \
	"{'phase': 'Restarting', 'conditions': ["                                                  \
	"{'type': 'Created', 'status': 'True', 'reason': 'PodsCreated', "                          \
	"'message': 'all 3 pods created', 'lastTransitionTime': '" T0 "'}, "                       \
	"{'type': 'Running', 'status': 'False', 'reason': 'WorkersRestarting', "                   \
	"'lastTransitionTime': '" T1 "'}], "                                                       \
	"'workers': {'active': 2, 'ready': 1, 'succeeded': 0, 'failed': 1}, "                      \
	"'restarts': {'total': 5, 'preemptions': 3, 'failures': 2}, "                              \
	"'startTime': '" T0 "', 'observedGeneration': 4, "                                         \
	"'lastFailure': {'pod': 'mnist-worker-1', 'exitCode': 137, 'reason': 'OOMKilled'}, "       \
	"'workerAttempts': [2, 3, -1], 'sentAttempts': [2, 3, -1], "                               \
	"'restartingWorkers': [{'index': 1, 'cause': 'Failure'}, {'index': 2, 'cause': "           \
	"'Resume'}], 'ringKeySecret': 'mnist-ring-key-x7k2q'}"

static void test_job_status_to_json_writes_the_crds_field_names(void **state)
{
	struct job_status s;
	cJSON *json;

	(void)state;
	full_status(&s);
	json = job_status_to_json(&s);
	json_doc_assert_equal(json, FULL_STATUS_JSON);
	cJSON_Delete(json);
	job_status_release(&s);
}

static void test_job_status_round_trips_through_json(void **state)
{
	struct job_status s, back;
	cJSON *json, *again;

	(void)state;
	full_status(&s);
	json = job_status_to_json(&s);
	job_status_parse(&back, json, 3);
	assert_int_equal(back.phase, PHASE_RESTARTING);
	assert_int_equal(back.nconditions, 2);
	assert_string_equal(back.conditions[1].last_transition, T1);
	assert_string_equal(back.conditions[1].message, "");
	assert_int_equal(back.failed, 1);
	assert_int_equal(back.total_restarts, 5);
	assert_string_equal(back.start_time, T0);
	assert_string_equal(back.completion_time, "");
	assert_string_equal(back.last_failure_reason, "OOMKilled");
	assert_int_equal(back.last_failure_exit_code, 137);
	assert_int_equal(back.attempts[1], 3);
	assert_int_equal(back.attempts[2], -1);
	assert_int_equal(back.restarting[0], CAUSE_NONE);
	assert_int_equal(back.restarting[2], CAUSE_RESUME);
	assert_int_equal(back.sent[1], 3);
	assert_int_equal(back.sent[2], -1);
	assert_string_equal(back.ring_key_secret, "mnist-ring-key-x7k2q");
	assert_string_equal(back.tf_config_map, "");
	again = job_status_to_json(&back);
	assert_true(cJSON_Compare(json, again, 1));
	/* Nothing changed, nothing to write. */
	assert_null(job_status_patch(&s, &back));
	cJSON_Delete(again);
	cJSON_Delete(json);
	job_status_release(&back);
	job_status_release(&s);
}

static void test_job_status_copy_is_deep(void **state)
{
	struct job_status s, c;

	(void)state;
	full_status(&s);
	job_status_copy(&c, &s);
	assert_ptr_not_equal(c.attempts, s.attempts);
	c.attempts[0] = 9;
	c.restarting[0] = CAUSE_SCOPE;
	c.sent[0] = 9;
	assert_int_equal(s.attempts[0], 2);
	assert_int_equal(s.sent[0], 2);
	assert_int_equal(s.restarting[0], CAUSE_NONE);
	assert_string_equal(c.last_failure_pod, "mnist-worker-1");
	job_status_release(&c);
	job_status_release(&s);
	job_status_release(NULL);
}

static void test_job_status_parse_tolerates_a_malformed_status(void **state)
{
	static const char *const junk[] = {
	    "'Running'",
	    "[]",
	    "{'phase': 5, 'conditions': {'type': 'Running', 'status': 'True'}}",
	    "{'phase': 'Sleeping', 'conditions': [7, {'status': 'True'}, {'type': 'X'}, "
	    "{'type': 'a-type-name-much-longer-than-thirty-one-bytes', 'status': 'True'}]}",
	    "{'workers': {'active': -3, 'ready': 'two', 'failed': 1e300}, 'restarts': 'many'}",
	    "{'startTime': 'yesterday', 'completionTime': 17, 'observedGeneration': -1}",
	    "{'lastFailure': {'exitCode': 1}, 'workerAttempts': {'0': 1}}",
	    "{'workerAttempts': ['1', -5, 1.5, null, 1e300], 'restartingWorkers': 'all'}",
	    "{'sentAttempts': ['1', -5, 1.5, null, 1e300]}",
	    "{'sentAttempts': {'0': 1}, "
	    "'workerAttempts': 7}",
	    "{'restartingWorkers': [{'index': 3, 'cause': 'Failure'}, {'index': -1}, "
	    "{'index': '0', 'cause': 'Failure'}, {'index': 1, 'cause': 'Boredom'}, 5]}",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(junk); i++) {
		cJSON *doc = json_doc_parse(junk[i]);
		struct job_status s;

		job_status_parse(&s, doc, 3);
		if (s.phase != PHASE_NONE || s.nconditions != 0 || s.active != 0 || s.ready != 0 ||
		    s.failed != 0 || s.total_restarts != 0 || s.start_time[0] != '\0' ||
		    s.completion_time[0] != '\0' || s.observed_generation != 0 ||
		    s.last_failure_pod[0] != '\0' || s.last_failure_exit_code != 0)
			fail_msg("%s: a malformed field was taken", junk[i]);
		for (int k = 0; k < 3; k++) {
			if (s.attempts[k] != -1 || s.restarting[k] != CAUSE_NONE || s.sent[k] != -1)
				fail_msg("%s: index %d: attempt %ld, cause %d, sent %ld", junk[i],
				         k, s.attempts[k], (int)s.restarting[k], s.sent[k]);
		}
		job_status_release(&s);
		cJSON_Delete(doc);
	}
}

static void test_job_status_parse_keeps_the_good_fields_beside_bad_ones(void **state)
{
	cJSON *doc = json_doc_parse("{'phase': 'Running', 'conditions': [{'type': 'Running', "
	                            "'status': 'True', 'lastTransitionTime': 'soon'}, "
	                            "{'type': 'Running', 'status': 'False'}], "
	                            "'startTime': '2026-11-25T02:02:03+01:00', "
	                            "'workerAttempts': [4, 'x', 6, 7, 8], "
	                            "'restartingWorkers': [{'index': 2, 'cause': 'Preemption'}]}");
	struct job_status s;

	(void)state;
	job_status_parse(&s, doc, 3);
	assert_int_equal(s.phase, PHASE_RUNNING);
	/* One entry per type: the first wins; a bad time is dropped. */
	assert_int_equal(s.nconditions, 1);
	assert_string_equal(s.conditions[0].status, "True");
	assert_string_equal(s.conditions[0].last_transition, "");
	assert_string_equal(s.start_time, "2026-11-25T02:02:03+01:00");
	/* Entries beyond the worker count are ignored. */
	assert_int_equal(s.attempts[0], 4);
	assert_int_equal(s.attempts[1], -1);
	assert_int_equal(s.attempts[2], 6);
	assert_int_equal(s.restarting[2], CAUSE_PREEMPTION);
	job_status_release(&s);
	cJSON_Delete(doc);
}

/* --- The merge patch --- */

static void test_job_status_patch_is_null_when_nothing_changed(void **state)
{
	struct job_status a, b;

	(void)state;
	full_status(&a);
	job_status_copy(&b, &a);
	assert_null(job_status_patch(&a, &b));
	/* Setting a condition to what it is changes nothing either. */
	job_status_set_condition(&b, "Created", "True", "PodsCreated", "all 3 pods created", T2);
	assert_null(job_status_patch(&a, &b));
	job_status_release(&a);
	job_status_release(&b);
}

static void test_job_status_patch_carries_the_whole_changed_status(void **state)
{
	struct job_status a, b;
	cJSON *patch;

	(void)state;
	full_status(&a);
	job_status_copy(&b, &a);
	b.phase = PHASE_RUNNING;
	patch = job_status_patch(&a, &b);
	assert_non_null(patch);
	json_doc_assert_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(patch, "status"), "phase"),
	                      "'Running'");
	/* The rest is there too: the operator owns the status whole. */
	json_doc_assert_equal(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(patch, "status"), "lastFailure"),
	    "{'pod': 'mnist-worker-1', 'exitCode': 137, 'reason': 'OOMKilled'}");
	assert_int_equal(cJSON_GetArraySize(patch), 1);
	cJSON_Delete(patch);
	job_status_release(&a);
	job_status_release(&b);
}

static void test_job_status_patch_sends_null_for_a_field_that_became_unset(void **state)
{
	struct job_status a, b;
	cJSON *patch, *st;

	(void)state;
	full_status(&a);
	snprintf(a.completion_time, sizeof(a.completion_time), T2);
	job_status_copy(&b, &a);
	b.completion_time[0] = '\0';
	b.last_failure_reason[0] = '\0';
	b.restarting[1] = CAUSE_NONE;
	b.restarting[2] = CAUSE_NONE;
	b.phase = PHASE_NONE;
	patch = job_status_patch(&a, &b);
	st = cJSON_GetObjectItem(patch, "status");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(st, "completionTime")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(st, "restartingWorkers")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(st, "phase")));
	/* Inside an object the patch merges into, too. */
	json_doc_assert_equal(cJSON_GetObjectItem(st, "lastFailure"),
	                      "{'pod': 'mnist-worker-1', 'exitCode': 137, 'reason': null}");
	cJSON_Delete(patch);
	/* A whole object gone is one null. */
	b.last_failure_pod[0] = '\0';
	patch = job_status_patch(&a, &b);
	st = cJSON_GetObjectItem(patch, "status");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(st, "lastFailure")));
	cJSON_Delete(patch);
	job_status_release(&a);
	job_status_release(&b);
}

/* --- Conditions --- */

static void test_job_status_set_condition_keeps_the_transition_time_while_status_holds(void **state)
{
	struct job_status s;
	const struct job_condition *c;

	(void)state;
	job_status_parse(&s, NULL, 1);
	assert_null(job_status_condition(&s, "Running"));
	job_status_set_condition(&s, "Running", "False", "WorkersNotRunning", "0 of 1", T0);
	job_status_set_condition(&s, "Running", "False", "WorkersNotRunning", "still 0 of 1", T1);
	c = job_status_condition(&s, "Running");
	assert_non_null(c);
	assert_string_equal(c->last_transition, T0);
	assert_string_equal(c->message, "still 0 of 1");
	job_status_set_condition(&s, "Running", "True", "AllWorkersRunning", "1 of 1", T2);
	assert_string_equal(c->status, "True");
	assert_string_equal(c->reason, "AllWorkersRunning");
	assert_string_equal(c->last_transition, T2);
	job_status_set_condition(&s, "Succeeded", "True", "ChiefSucceeded", "", T2);
	assert_int_equal(s.nconditions, 2);
	assert_string_equal(job_status_condition(&s, "Succeeded")->reason, "ChiefSucceeded");
	job_status_release(&s);
}

static void test_job_status_set_condition_cuts_a_long_message_at_a_character(void **state)
{
	char msg[JOB_MESSAGE_LEN + 9];
	struct job_status s;

	(void)state;
	/* Two-byte characters: the cut at 511 bytes falls inside one. */
	for (size_t i = 0; i + 2 < sizeof(msg); i += 2)
		memcpy(msg + i, "\xc3\xa9", 2);
	msg[sizeof(msg) - 1] = '\0';
	job_status_parse(&s, NULL, 1);
	job_status_set_condition(&s, "Failed", "True", "InvalidSpec", msg, T0);
	assert_int_equal(strlen(s.conditions[0].message), JOB_MESSAGE_LEN - 2);
	job_status_release(&s);
}

static void test_job_phase_names_and_keys(void **state)
{
	static const char *const names[] = {"",          "Pending", "Running",  "Restarting",
	                                    "Succeeded", "Failed",  "Suspended"};
	struct job j;
	char key[16];

	(void)state;
	for (int p = PHASE_NONE; p <= PHASE_SUSPENDED; p++)
		assert_string_equal(job_phase_name((enum job_phase)p), names[p]);
	assert_string_equal(job_phase_name((enum job_phase)99), "");
	memset(&j, 0, sizeof(j));
	snprintf(j.ns, sizeof(j.ns), "ml");
	snprintf(j.name, sizeof(j.name), "mnist-long-name");
	job_key(&j, key, sizeof(key));
	assert_string_equal(key, "ml/mnist-long-n");
}

/* A job started by an operator of release 0.1 has pods with the key
 * "<job>-ring-key" and no name for it in its status: its new pods must
 * use that key. A new job has none until the operator makes one. */
static void test_job_parse_keeps_the_ring_key_of_a_job_started_before(void **state)
{
	static const struct {
		const char *status;
		const char *want;
	} cases[] = {
	    {"{'workerAttempts': [0, -1]}", "mnist-ring-key"},
	    {"{'workerAttempts': [-1, -1], 'sentAttempts': [0, 0]}", "mnist-ring-key"},
	    {"{'workerAttempts': [-1, -1]}", ""},
	    {"{'workerAttempts': [0, 0], 'ringKeySecret': 'mnist-ring-key-ab12c'}",
	     "mnist-ring-key-ab12c"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char text[1024], err[ERR_LEN] = "";
		struct job j;
		cJSON *obj;

		snprintf(text, sizeof(text),
		         "{'metadata': {'name': 'mnist', 'namespace': 'ml', 'uid': 'u'}, 'spec': "
		         "{'workers': 2, " TMPL "}, 'status': %s}",
		         cases[i].status);
		obj = json_doc_parse(text);
		assert_int_equal(job_parse(&j, obj, err), 0);
		assert_string_equal(j.status.ring_key_secret, cases[i].want);
		job_release(&j);
		cJSON_Delete(obj);
	}
}

/* spec.workers of a job that has started stays what it started with. */
static void test_job_parse_keeps_the_number_of_workers_a_job_started_with(void **state)
{
	static const struct {
		const char *workers, *status;
		int want, want_spec;
	} cases[] = {
	    {"2", "{}", 2, 2},
	    {"3", "{'workerAttempts': [0, 0]}", 2, 3},
	    {"1", "{'workerAttempts': [0, 4]}", 2, 1},
	    {"2", "{'workerAttempts': 'x'}", 2, 2},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char text[1024], err[ERR_LEN] = "";
		struct job j;
		cJSON *obj;

		snprintf(text, sizeof(text),
		         "{'metadata': {'name': 'mnist', 'namespace': 'ml', 'uid': 'u'}, 'spec': "
		         "{'workers': %s, " TMPL "}, 'status': %s}",
		         cases[i].workers, cases[i].status);
		obj = json_doc_parse(text);
		assert_int_equal(job_parse(&j, obj, err), 0);
		assert_int_equal(j.workers, cases[i].want);
		assert_int_equal(j.workers_spec, cases[i].want_spec);
		assert_int_equal(j.status.nworkers, cases[i].want);
		job_release(&j);
		cJSON_Delete(obj);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_job_parse_keeps_the_ring_key_of_a_job_started_before),
	    cmocka_unit_test(test_job_parse_keeps_the_number_of_workers_a_job_started_with),
	    cmocka_unit_test(test_job_parse_applies_the_crds_defaults),
	    cmocka_unit_test(test_job_parse_reads_every_field),
	    cmocka_unit_test(test_job_parse_records_why_a_spec_cannot_be_honoured),
	    cmocka_unit_test(test_job_parse_refuses_names_too_long_for_the_pods),
	    cmocka_unit_test(test_job_parse_refuses_an_object_without_name_or_uid),
	    cmocka_unit_test(test_job_parse_sees_a_deletion_in_progress),
	    cmocka_unit_test(test_job_status_to_json_writes_the_crds_field_names),
	    cmocka_unit_test(test_job_status_round_trips_through_json),
	    cmocka_unit_test(test_job_status_copy_is_deep),
	    cmocka_unit_test(test_job_status_parse_tolerates_a_malformed_status),
	    cmocka_unit_test(test_job_status_parse_keeps_the_good_fields_beside_bad_ones),
	    cmocka_unit_test(test_job_status_patch_is_null_when_nothing_changed),
	    cmocka_unit_test(test_job_status_patch_carries_the_whole_changed_status),
	    cmocka_unit_test(test_job_status_patch_sends_null_for_a_field_that_became_unset),
	    cmocka_unit_test(
	        test_job_status_set_condition_keeps_the_transition_time_while_status_holds),
	    cmocka_unit_test(test_job_status_set_condition_cuts_a_long_message_at_a_character),
	    cmocka_unit_test(test_job_phase_names_and_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
