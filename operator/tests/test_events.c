/* test_events.c - the core/v1 Events the operator writes on a job: every
 * field `kubectl describe` and the API server look at, names that never
 * repeat, and a valid name even for a job whose own name is too long. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "json_doc.h"

#define T0 "2026-11-25T01:02:03Z"

static cJSON *make_job(struct job *j, const char *name)
{
	char text[1024], err[ERR_LEN] = "";
	cJSON *obj;

	snprintf(text, sizeof(text),
	         "{'apiVersion': 'training.mwj.io/v1', 'kind': 'MultiWorkerJob', 'metadata': "
	         "{'name': '%s', 'namespace': 'ml', 'uid': 'u-1', 'resourceVersion': '4711'}, "
	         "'spec': {'workers': 1, 'template': {'spec': {'containers': [{'name': 'w'}]}}}}",
	         name);
	obj = json_doc_parse(text);
	if (job_parse(j, obj, err) != 0)
		fail_msg("job_parse: %s", err);
	return obj;
}

/* Asserts name is "<prefix>.<16 lower-case hex digits>". */
static void assert_event_name(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(name, prefix, n) != 0 || name[n] != '.' || strlen(name + n + 1) != 16 ||
	    strspn(name + n + 1, "0123456789abcdef") != 16)
		fail_msg("event name '%s', want '%s.<16 hex digits>'", name, prefix);
}

static void test_events_build_writes_a_legacy_event_involving_the_job(void **state)
{
	struct job j;
	cJSON *obj = make_job(&j, "mnist");
	cJSON *ev = events_build(&j, obj, EVENT_WARNING, "WorkerFailed",
	                         "worker 1 (pod mnist-worker-1) exited with code 137 (OOMKilled)",
	                         T0, "mwj-operator-7d9f-abcde");
	cJSON *meta = cJSON_DetachItemFromObject(ev, "metadata");
	cJSON *want = json_doc_parse(
	    "{'apiVersion': 'v1', 'kind': 'Event', "
	    "'involvedObject': {'kind': 'MultiWorkerJob', 'namespace': 'ml', 'name': 'mnist', "
	    "'uid': 'u-1', 'apiVersion': 'training.mwj.io/v1', 'resourceVersion': '4711'}, "
	    "'type': 'Warning', 'reason': 'WorkerFailed', "
	    "'message': 'worker 1 (pod mnist-worker-1) exited with code 137 (OOMKilled)', "
	    "'firstTimestamp': '" T0 "', 'lastTimestamp': '" T0 "', 'count': 1, "
	    "'source': {'component': 'mwj-operator'}, 'reportingComponent': 'mwj-operator', "
	    "'reportingInstance': 'mwj-operator-7d9f-abcde'}");

	(void)state;
	if (!cJSON_Compare(ev, want, 1))
		fail_msg("got %s", cJSON_PrintUnformatted(ev));
	/* No eventTime: the legacy form, whose MicroTime rules do not apply. */
	assert_null(cJSON_GetObjectItem(ev, "eventTime"));
	assert_string_equal(cJSON_GetObjectItem(meta, "namespace")->valuestring, "ml");
	assert_int_equal(cJSON_GetArraySize(meta), 2);
	assert_event_name(cJSON_GetObjectItem(meta, "name")->valuestring, "mnist");
	cJSON_Delete(meta);
	cJSON_Delete(want);
	cJSON_Delete(ev);
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_events_build_never_repeats_a_name(void **state)
{
	enum { N = 2000 };
	char(*names)[300] = calloc(N, sizeof(*names));
	struct job j;
	cJSON *obj = make_job(&j, "mnist");

	(void)state;
	assert_non_null(names);
	/* Built as fast as possible, many fall in the same clock tick. */
	for (int i = 0; i < N; i++) {
		cJSON *ev = events_build(&j, obj, EVENT_NORMAL, "PodCreated", "m", T0, "h");

		snprintf(
		    names[i], sizeof(names[i]), "%s",
		    cJSON_GetObjectItem(cJSON_GetObjectItem(ev, "metadata"), "name")->valuestring);
		cJSON_Delete(ev);
	}
	/* The suffix only grows, so sorted order is creation order. */
	for (int i = 1; i < N; i++) {
		if (strcmp(names[i - 1], names[i]) >= 0)
			fail_msg("'%s' then '%s'", names[i - 1], names[i]);
	}
	free(names);
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_events_build_gives_a_valid_name_for_a_job_name_too_long(void **state)
{
	char name[254];
	struct job j;
	cJSON *obj, *ev;
	const char *got;

	(void)state;
	/* 253 characters with a '-' where the cut falls (at 236). */
	memset(name, 'a', 253);
	name[235] = '-';
	name[253] = '\0';
	obj = make_job(&j, name);
	ev = events_build(&j, obj, EVENT_WARNING, "InvalidSpec", j.invalid, T0, NULL);
	got = cJSON_GetObjectItem(cJSON_GetObjectItem(ev, "metadata"), "name")->valuestring;
	assert_true(strlen(got) <= 253);
	name[235] = '\0';
	assert_event_name(got, name);
	/* The involved object keeps the whole name. */
	assert_int_equal(
	    strlen(cJSON_GetObjectItem(cJSON_GetObjectItem(ev, "involvedObject"), "name")
	               ->valuestring),
	    253);
	assert_non_null(strstr(cJSON_GetObjectItem(ev, "message")->valuestring, "is too long"));
	/* Without an instance there is no reportingInstance. */
	assert_null(cJSON_GetObjectItem(ev, "reportingInstance"));
	cJSON_Delete(ev);
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_events_build_defaults_what_the_job_object_lacks(void **state)
{
	struct job j;
	cJSON *obj = make_job(&j, "mnist");
	cJSON *bare = json_doc_parse("{'metadata': {'name': 'mnist'}}");
	cJSON *ev = events_build(&j, bare, EVENT_NORMAL, "Succeeded", "done", T0, "h");
	const cJSON *io = cJSON_GetObjectItem(ev, "involvedObject");

	(void)state;
	assert_string_equal(cJSON_GetObjectItem(io, "apiVersion")->valuestring,
	                    "training.mwj.io/v1");
	assert_null(cJSON_GetObjectItem(io, "resourceVersion"));
	assert_string_equal(cJSON_GetObjectItem(ev, "type")->valuestring, "Normal");
	cJSON_Delete(ev);
	ev = events_build(&j, NULL, EVENT_NORMAL, "Succeeded", NULL, T0, "h");
	assert_string_equal(cJSON_GetObjectItem(ev, "message")->valuestring, "");
	cJSON_Delete(ev);
	cJSON_Delete(bare);
	job_release(&j);
	cJSON_Delete(obj);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_events_build_writes_a_legacy_event_involving_the_job),
	    cmocka_unit_test(test_events_build_never_repeats_a_name),
	    cmocka_unit_test(test_events_build_gives_a_valid_name_for_a_job_name_too_long),
	    cmocka_unit_test(test_events_build_defaults_what_the_job_object_lacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
