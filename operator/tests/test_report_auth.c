/* test_report_auth.c - who may report a job's training: a TokenReview's
 * answer read as the API server writes it, the decision as a table (the
 * chief, another worker, another job's pod, a pod that is no worker, an
 * older pod of the chief's name, a token of another namespace, not bound
 * to a pod, for the wrong audience, expired), and the cache of reviews. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "json_doc.h"
#include "report_auth.h"
#include "report_world.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* An authenticated review of a token of ServiceAccount ns:default bound to
 * pod name/uid. */
static struct token_review review(const char *ns, const char *name, const char *uid)
{
	struct token_review r;

	memset(&r, 0, sizeof(r));
	r.authenticated = r.audience_ok = 1;
	snprintf(r.username, sizeof(r.username), "system:serviceaccount:%s:default", ns);
	snprintf(r.pod_name, sizeof(r.pod_name), "%s", name);
	snprintf(r.pod_uid, sizeof(r.pod_uid), "%s", uid);
	return r;
}

static void test_the_answer_is_read_as_the_api_server_writes_it(void **state)
{
	/* pkg/registry/authentication/tokenreview: status.user of a
	 * pod-bound ServiceAccount token, and the audiences it matched. */
	cJSON *answer = json_doc_parse(
	    "{'kind': 'TokenReview', 'apiVersion': 'authentication.k8s.io/v1', 'metadata': {}, "
	    "'spec': {'token': 'x', 'audiences': ['mwj-operator']}, 'status': {'authenticated': "
	    "true, 'user': {'username': 'system:serviceaccount:ml:default', 'uid': 'sa-uid', "
	    "'groups': ['system:serviceaccounts', 'system:serviceaccounts:ml', "
	    "'system:authenticated'], 'extra': {'authentication.kubernetes.io/credential-id': "
	    "['JTI=1'], 'authentication.kubernetes.io/pod-name': ['mnist-worker-0'], "
	    "'authentication.kubernetes.io/pod-uid': ['pod-0']}}, 'audiences': "
	    "['mwj-operator']}}");
	cJSON *refused = json_doc_parse(
	    "{'kind': 'TokenReview', 'apiVersion': 'authentication.k8s.io/v1', 'status': {'user': "
	    "{}, 'error': '[invalid bearer token, service account token has expired]'}}");
	struct token_review r;
	char err[ERR_LEN] = "";

	(void)state;
	assert_int_equal(report_review_parse(&r, answer, "mwj-operator", err), 0);
	assert_true(r.authenticated);
	assert_true(r.audience_ok);
	assert_string_equal(r.username, "system:serviceaccount:ml:default");
	assert_string_equal(r.pod_name, "mnist-worker-0");
	assert_string_equal(r.pod_uid, "pod-0");
	assert_int_equal(report_review_parse(&r, answer, "another", err), 0);
	assert_false(r.audience_ok);
	assert_int_equal(report_review_parse(&r, refused, "mwj-operator", err), 0);
	assert_false(r.authenticated);
	assert_string_equal(r.error, "[invalid bearer token, service account token has expired]");
	cJSON_Delete(refused);
	refused = json_doc_parse("{'kind': 'Status', 'status': 'Failure'}");
	assert_int_equal(report_review_parse(&r, refused, "mwj-operator", err), -1);
	assert_false(r.authenticated);
	cJSON_Delete(refused);
	cJSON_Delete(answer);
}

static void test_only_the_jobs_own_chief_may_report(void **state)
{
	struct token_review expired = review("ml", "mnist-worker-0", "pod-0");
	struct token_review wrong_audience = review("ml", "mnist-worker-0", "pod-0");
	struct token_review unbound = review("ml", "", "");
	struct token_review user = review("ml", "mnist-worker-0", "pod-0");
	struct {
		const char *name;
		struct token_review r;
		cJSON *pod; /* the cache's pod named as the token's */
		enum report_verdict want;
		const char *why;
	} cases[] = {
	    {"the chief", review("ml", "mnist-worker-0", "pod-0"),
	     report_world_pod("mnist-worker-0", "pod-0", "0", "job-uid"), REPORT_ALLOW, ""},
	    {"worker 1", review("ml", "mnist-worker-1", "pod-1"),
	     report_world_pod("mnist-worker-1", "pod-1", "1", "job-uid"), REPORT_FORBIDDEN,
	     "pod 'mnist-worker-1' is worker 1 of job 'mnist', not its chief"},
	    {"another job's chief", review("ml", "other-worker-0", "pod-9"),
	     report_world_pod("other-worker-0", "pod-9", "0", "other-uid"), REPORT_FORBIDDEN,
	     "pod 'other-worker-0' is not a worker of job 'mnist'"},
	    {"a pod the cache does not hold", review("ml", "debug", "pod-d"), NULL,
	     REPORT_FORBIDDEN, "pod 'debug' is not a worker of job 'mnist'"},
	    {"an older pod of the chief's name", review("ml", "mnist-worker-0", "pod-old"),
	     report_world_pod("mnist-worker-0", "pod-0", "0", "job-uid"), REPORT_FORBIDDEN,
	     "pod 'mnist-worker-0' is not a worker of job 'mnist'"},
	    {"a service account of another namespace", review("other", "mnist-worker-0", "pod-0"),
	     report_world_pod("mnist-worker-0", "pod-0", "0", "job-uid"), REPORT_FORBIDDEN,
	     "'system:serviceaccount:other:default' is not a service account of namespace 'ml'"},
	    {"a token bound to no pod", unbound, NULL, REPORT_FORBIDDEN,
	     "the token of 'system:serviceaccount:ml:default' is not bound to a pod"},
	    {"a user's token", user, report_world_pod("mnist-worker-0", "pod-0", "0", "job-uid"),
	     REPORT_FORBIDDEN, "'admin' is not a service account of namespace 'ml'"},
	    {"the wrong audience", wrong_audience,
	     report_world_pod("mnist-worker-0", "pod-0", "0", "job-uid"), REPORT_UNAUTHORIZED,
	     "the token is not for the audience of the operator"},
	    {"an expired token", expired,
	     report_world_pod("mnist-worker-0", "pod-0", "0", "job-uid"), REPORT_UNAUTHORIZED,
	     "the token is not valid: [invalid bearer token, service account token has expired]"},
	};
	cJSON *obj = json_doc_parse(REPORT_WORLD_JOB);
	char err[ERR_LEN] = "", why[ERR_LEN];
	struct job j;

	(void)state;
	cases[7].r.pod_name[0] = '\0';
	snprintf(cases[7].r.username, sizeof(cases[7].r.username), "admin");
	cases[8].r.audience_ok = 0;
	cases[9].r.authenticated = 0;
	snprintf(cases[9].r.error, sizeof(cases[9].r.error),
	         "[invalid bearer token, service account token has expired]");
	assert_int_equal(job_parse(&j, obj, err), 0);
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		why[0] = '\0';
		if (report_decide(&cases[i].r, &j, cases[i].pod, why) != cases[i].want)
			fail_msg("%s: verdict %d, not %d (%s)", cases[i].name,
			         (int)report_decide(&cases[i].r, &j, cases[i].pod, why),
			         (int)cases[i].want, why);
		if (cases[i].want != REPORT_ALLOW && strcmp(why, cases[i].why) != 0)
			fail_msg("%s: '%s', not '%s'", cases[i].name, why, cases[i].why);
		cJSON_Delete(cases[i].pod);
	}
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_the_review_request_names_the_token_and_the_audience(void **state)
{
	cJSON *req = report_review_request("tok", "mwj-operator");
	cJSON *want = json_doc_parse("{'apiVersion': 'authentication.k8s.io/v1', 'kind': "
	                             "'TokenReview', 'spec': {'token': 'tok', 'audiences': "
	                             "['mwj-operator']}}");

	(void)state;
	assert_true(cJSON_Compare(req, want, 1));
	cJSON_Delete(req);
	cJSON_Delete(want);
}

static void test_reviews_are_cached_by_token_for_a_while(void **state)
{
	struct report_reviews c;
	struct token_review good = review("ml", "mnist-worker-0", "pod-0"), bad, got;

	(void)state;
	memset(&bad, 0, sizeof(bad));
	report_reviews_init(&c);
	assert_int_equal(report_reviews_get(&c, "tok", 100, &got), 0);
	report_reviews_put(&c, "tok", 100, &good);
	report_reviews_put(&c, "bad", 100, &bad);
	assert_int_equal(report_reviews_get(&c, "tok", 100 + REPORT_REVIEW_TTL_S - 1, &got), 1);
	assert_string_equal(got.pod_uid, "pod-0");
	assert_int_equal(report_reviews_get(&c, "tok", 100 + REPORT_REVIEW_TTL_S, &got), 0);
	/* A refused token is asked about again sooner. */
	assert_int_equal(report_reviews_get(&c, "bad", 100 + REPORT_REFUSED_TTL_S - 1, &got), 1);
	assert_false(got.authenticated);
	assert_int_equal(report_reviews_get(&c, "bad", 100 + REPORT_REFUSED_TTL_S, &got), 0);
	/* A flood of tokens never grows the cache past its cap. */
	for (int i = 0; i < REPORT_REVIEW_CACHE_MAX + 10; i++) {
		char tok[32];

		snprintf(tok, sizeof(tok), "t%d", i);
		report_reviews_put(&c, tok, 200, &bad);
	}
	assert_true(c.by_token.len <= REPORT_REVIEW_CACHE_MAX);
	report_reviews_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_the_answer_is_read_as_the_api_server_writes_it),
	    cmocka_unit_test(test_only_the_jobs_own_chief_may_report),
	    cmocka_unit_test(test_the_review_request_names_the_token_and_the_audience),
	    cmocka_unit_test(test_reviews_are_cached_by_token_for_a_while),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
