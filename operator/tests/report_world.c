/* report_world.c - a job, its pods and a TokenReview API for the tests
 * of the chiefs' reports; see report_world.h. */
#include "report_world.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "json.h"
#include "json_doc.h"

cJSON *report_world_pod(const char *name, const char *uid, const char *index, const char *owner_uid)
{
	char doc[2048];

	snprintf(doc, sizeof(doc),
	         "{'metadata': {'name': '%s', 'namespace': 'ml', 'uid': '%s', 'labels': "
	         "{'training.mwj.io/job-name': 'mnist', 'training.mwj.io/replica-index': '%s', "
	         "'app.kubernetes.io/managed-by': 'mwj-operator'}, 'ownerReferences': "
	         "[{'apiVersion': 'training.mwj.io/v1', 'kind': 'MultiWorkerJob', 'name': 'mnist', "
	         "'uid': '%s', 'controller': true}]}, 'status': {'phase': 'Running'}}",
	         name, uid, index, owner_uid);
	return json_doc_parse(doc);
}

cJSON *report_world_job(void *ctx, const char *ns, const char *name)
{
	(void)ctx;
	return strcmp(ns, "ml") == 0 && strcmp(name, "mnist") == 0
	           ? json_doc_parse(REPORT_WORLD_JOB)
	           : NULL;
}

static const struct {
	const char *token, *pod, *uid, *index, *owner;
} PODS[] = {{"chief", "mnist-worker-0", "pod-0", "0", "job-uid"},
            {"worker1", "mnist-worker-1", "pod-1", "1", "job-uid"},
            {"other", "other-worker-0", "pod-9", "0", "other-uid"}};

cJSON *report_world_pods(void *ctx, const char *ns, const char *name)
{
	(void)ctx;
	for (size_t i = 0; strcmp(ns, "ml") == 0 && i < sizeof(PODS) / sizeof(PODS[0]); i++)
		if (strcmp(name, PODS[i].pod) == 0)
			return report_world_pod(name, PODS[i].uid, PODS[i].index, PODS[i].owner);
	return NULL;
}

/* The TokenReview's status for token, as the API server writes it. */
static void review_of(const char *token, char *text, size_t n)
{
	snprintf(text, n,
	         "{'kind': 'TokenReview', 'apiVersion': 'authentication.k8s.io/v1', 'status': "
	         "{'user': {}, 'error': '[invalid bearer token, square/go-jose: error in "
	         "cryptographic primitive]'}}");
	for (size_t i = 0; i < sizeof(PODS) / sizeof(PODS[0]); i++)
		if (strcmp(token, PODS[i].token) == 0)
			snprintf(
			    text, n,
			    "{'kind': 'TokenReview', 'apiVersion': 'authentication.k8s.io/v1', "
			    "'status': {'authenticated': true, 'user': {'username': "
			    "'system:serviceaccount:ml:default', 'uid': 'sa', 'groups': "
			    "['system:serviceaccounts'], 'extra': {"
			    "'authentication.kubernetes.io/pod-name': ['%s'], "
			    "'authentication.kubernetes.io/pod-uid': ['%s']}}, 'audiences': "
			    "['mwj-operator']}}",
			    PODS[i].pod, PODS[i].uid);
	if (strcmp(token, "apiserver") == 0)
		snprintf(
		    text, n,
		    "{'kind': 'TokenReview', 'apiVersion': 'authentication.k8s.io/v1', 'status': "
		    "{'user': {}, 'error': '[invalid bearer token, token audiences "
		    "[\\\"https://kubernetes.default.svc.cluster.local\\\"] is invalid for the "
		    "target audiences [\\\"mwj-operator\\\"]]'}}");
}

static int round_trip(struct kube_api *api, const struct kube_req *req, struct kube_resp *resp,
                      char *err)
{
	struct report_world_api *a = api->impl;
	cJSON *body, *answer;
	char text[4096];

	if (__atomic_load_n(&a->down, __ATOMIC_RELAXED)) {
		snprintf(err, ERR_LEN, "connect to 'apiserver:443': connection refused");
		return -1;
	}
	assert_string_equal(req->method, "POST");
	assert_string_equal(req->path, "/apis/authentication.k8s.io/v1/tokenreviews");
	body = json_parse(req->body, req->body_len, NULL);
	review_of(cJSON_GetObjectItem(cJSON_GetObjectItem(body, "spec"), "token")->valuestring,
	          text, sizeof(text));
	__atomic_fetch_add(&a->reviews, 1, __ATOMIC_RELAXED);
	answer = json_doc_parse(text);
	resp->status = 201;
	resp->body = cJSON_PrintUnformatted(answer);
	resp->body_len = strlen(resp->body);
	cJSON_Delete(answer);
	cJSON_Delete(body);
	return 0;
}

static const struct kube_api_ops OPS = {.name = "report-world", .round_trip = round_trip};

void report_world_api_init(struct report_world_api *a)
{
	memset(a, 0, sizeof(*a));
	a->api.ops = &OPS;
	a->api.impl = a;
}
