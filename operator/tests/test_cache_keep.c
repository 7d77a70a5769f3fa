/* test_cache_keep.c - what the caches keep: every pod fixture reads the
 * same through pod_view_parse after cache_keep_pod as before, and what is
 * dropped is gone; jobs lose only managedFields and kubectl's copy;
 * owned objects keep only their metadata. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_keep.h"
#include "json_doc.h"
#include "pod_spec.h"

#define PODS "operator/tests/fixtures/pods/"

static size_t printed_len(const cJSON *obj)
{
	char *text = cJSON_PrintUnformatted(obj);
	size_t n;

	assert_non_null(text);
	n = strlen(text);
	cJSON_free(text);
	return n;
}

static void assert_views_equal(const char *file, const struct pod_view *a, const struct pod_view *b)
{
	if (strcmp(a->name, b->name) != 0 || strcmp(a->uid, b->uid) != 0 || a->index != b->index ||
	    a->attempt != b->attempt || a->phase != b->phase || a->ready != b->ready ||
	    a->deleting != b->deleting || a->disrupted != b->disrupted ||
	    strcmp(a->status_reason, b->status_reason) != 0 || a->exit_code != b->exit_code ||
	    strcmp(a->reason, b->reason) != 0 ||
	    strcmp(a->waiting_reason, b->waiting_reason) != 0 ||
	    strcmp(a->waiting_message, b->waiting_message) != 0 || a->created_s != b->created_s)
		fail_msg(
		    "%s: the kept pod reads differently (phase %d/%d, ready %d/%d, exit %d/%d, "
		    "reason '%s'/'%s', waiting '%s'/'%s')",
		    file, (int)a->phase, (int)b->phase, a->ready, b->ready, a->exit_code,
		    b->exit_code, a->reason, b->reason, a->waiting_reason, b->waiting_reason);
}

static void test_a_kept_pod_reads_the_same_for_every_fixture(void **state)
{
	char err[ERR_LEN] = "";
	cJSON *job_obj = json_doc_parse(
	    "{'metadata': {'name': 'mnist', 'namespace': 'ml', 'uid': 'u-1'}, 'spec': {'workers': "
	    "4, 'template': {'spec': {'containers': [{'name': 'worker'}]}}}}");
	struct job j;
	DIR *d = opendir(PODS);
	struct dirent *e;
	int files = 0;

	(void)state;
	assert_non_null(d);
	assert_int_equal(job_parse(&j, job_obj, err), 0);
	while ((e = readdir(d)) != NULL) {
		char path[512];
		struct pod_view before, after;
		cJSON *pod, *kept;

		if (strstr(e->d_name, ".json") == NULL)
			continue;
		snprintf(path, sizeof(path), PODS "%s", e->d_name);
		pod = json_doc_load(path);
		kept = cJSON_Duplicate(pod, 1);
		cache_keep_pod(kept);
		memset(&before, 0, sizeof(before));
		memset(&after, 0, sizeof(after));
		assert_int_equal(pod_view_parse(&before, &j, pod, err), 0);
		assert_int_equal(pod_view_parse(&after, &j, kept, err), 0);
		assert_views_equal(e->d_name, &before, &after);
		assert_true(printed_len(kept) < printed_len(pod));
		cJSON_Delete(pod);
		cJSON_Delete(kept);
		files++;
	}
	closedir(d);
	assert_true(files >= 9);
	job_release(&j);
	cJSON_Delete(job_obj);
}

/* What a real server's pod carries beyond what the operator reads. */
static void test_a_kept_pod_drops_what_nothing_reads(void **state)
{
	cJSON *pod = json_doc_load(PODS "running-full.json");
	const cJSON *meta, *status, *cs, *cond, *container;
	size_t full = printed_len(pod);

	(void)state;
	cache_keep_pod(pod);
	meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
	status = cJSON_GetObjectItemCaseSensitive(pod, "status");
	cs = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(status, "containerStatuses"), 0);
	cond = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(status, "conditions"), 0);
	container =
	    cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
	                           cJSON_GetObjectItemCaseSensitive(pod, "spec"), "containers"),
	                       0);
	/* Kept: identity, ownership, and what decides the pod's state. */
	assert_non_null(cJSON_GetObjectItemCaseSensitive(meta, "ownerReferences"));
	assert_non_null(cJSON_GetObjectItemCaseSensitive(meta, "labels"));
	assert_non_null(cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion"));
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(status, "phase")->valuestring,
	                    "Running");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(cond, "type")->valuestring,
	                    "PodReadyToStartContainers");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(container, "name")->valuestring,
	                    "worker");
	assert_non_null(cJSON_GetObjectItemCaseSensitive(cs, "state"));
	/* Dropped. */
	assert_null(cJSON_GetObjectItemCaseSensitive(meta, "managedFields"));
	assert_null(cJSON_GetObjectItemCaseSensitive(container, "env"));
	assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "spec"),
	                                             "volumes"));
	assert_null(cJSON_GetObjectItemCaseSensitive(cond, "lastTransitionTime"));
	assert_null(cJSON_GetObjectItemCaseSensitive(cs, "lastState"));
	assert_null(cJSON_GetObjectItemCaseSensitive(cs, "volumeMounts"));
	assert_null(cJSON_GetObjectItemCaseSensitive(cs, "image"));
	assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cs, "state"),
	                                             "running"));
	assert_null(cJSON_GetObjectItemCaseSensitive(status, "podIPs"));
	assert_null(cJSON_GetObjectItemCaseSensitive(status, "startTime"));
	/* A real server's pod shrinks to under a third. */
	assert_true(printed_len(pod) * 3 < full);
	cJSON_Delete(pod);
}

static void test_a_kept_pod_survives_odd_shapes(void **state)
{
	static const char *const docs[] = {
	    "{'metadata': {'name': 'p'}}",
	    "{'metadata': {'name': 'p'}, 'spec': 3, 'status': 'x'}",
	    "{'metadata': {'name': 'p'}, 'spec': {'containers': [1, {'name': 'w', 'image': 'i'}]}, "
	    "'status': {'conditions': [null, 'x', {'type': 'Ready'}], 'containerStatuses': "
	    "{'name': 'w'}}}",
	    "{'metadata': {'name': 'p'}, 'status': {'containerStatuses': [{'state': "
	    "{'terminated': 7, 'waiting': [], 'running': {}}}]}}",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		cJSON *pod = json_doc_parse(docs[i]);

		cache_keep_pod(pod);
		assert_non_null(cJSON_GetObjectItemCaseSensitive(pod, "metadata"));
		assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(pod, "spec")));
		cJSON_Delete(pod);
	}
}

static void test_a_kept_job_loses_only_managed_fields_and_the_applied_copy(void **state)
{
	cJSON *job = json_doc_parse(
	    "{'metadata': {'name': 'mnist', 'managedFields': [{'manager': 'kubectl'}], "
	    "'annotations': {'kubectl.kubernetes.io/last-applied-configuration': '{}', 'team': "
	    "'ml'}}, 'spec': {'workers': 2, 'template': {'spec': {'containers': [{'name': "
	    "'worker', 'image': 'w'}]}}}, 'status': {'phase': 'Running'}}");
	cJSON *want = json_doc_parse(
	    "{'metadata': {'name': 'mnist', 'annotations': {'team': 'ml'}}, 'spec': {'workers': 2, "
	    "'template': {'spec': {'containers': [{'name': 'worker', 'image': 'w'}]}}}, 'status': "
	    "{'phase': 'Running'}}");

	(void)state;
	cache_keep_job(job);
	assert_true(cJSON_Compare(job, want, 1));
	cJSON_Delete(job);
	cJSON_Delete(want);
}

static void test_an_owned_object_keeps_only_its_metadata(void **state)
{
	cJSON *secret = json_doc_parse(
	    "{'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'mnist-ring', "
	    "'managedFields': [], 'ownerReferences': [{'uid': 'u-1'}]}, 'type': 'Opaque', 'data': "
	    "{'key': 'c2VjcmV0'}}");
	cJSON *want = json_doc_parse(
	    "{'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'mnist-ring', "
	    "'ownerReferences': [{'uid': 'u-1'}]}}");

	(void)state;
	cache_keep_metadata(secret);
	assert_true(cJSON_Compare(secret, want, 1));
	cJSON_Delete(secret);
	cJSON_Delete(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_kept_pod_reads_the_same_for_every_fixture),
	    cmocka_unit_test(test_a_kept_pod_drops_what_nothing_reads),
	    cmocka_unit_test(test_a_kept_pod_survives_odd_shapes),
	    cmocka_unit_test(test_a_kept_job_loses_only_managed_fields_and_the_applied_copy),
	    cmocka_unit_test(test_an_owned_object_keeps_only_its_metadata),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
