/* test_status_server.c - the reports' HTTPS server over real sockets on
 * 127.0.0.1, with libcurl as the chief: a report over TLS that the CA
 * verifies is taken; a client that trusts another CA, or speaks plain
 * HTTP, gets nothing; a body over the cap is 413 before it is all sent;
 * a renewed certificate is served from then on by the same port, and a
 * connection kept open across the renewal still works. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_world.h"
#include "status_server.h"

#define PATH   REPORT_WORLD_PATH
#define REPORT "{\"training\": {\"globalStep\": 40, \"totalSteps\": 100}}"

/* The job, its pods and the API server of report_world.h, the server
 * before them, and what was reported. */
struct world {
	struct report_world_api api;
	struct reports reports;
	struct status_endpoint e;
	struct status_server s;
	struct pem_pair ca;
	int reported;
};

static void take_report(void *ctx, const char *key, const char *uid,
                        const struct training_status *t)
{
	(void)key;
	(void)uid;
	(void)t;
	__atomic_fetch_add(&((struct world *)ctx)->reported, 1, __ATOMIC_RELAXED);
}

static int setup(void **state)
{
	static const char *const names[] = {"localhost", "127.0.0.1"};
	struct world *w = calloc(1, sizeof(*w));
	struct status_sources src = {
	    .job = report_world_job, .pod = report_world_pods, .report = take_report, .ctx = w};
	char err[ERR_LEN] = "";

	report_world_api_init(&w->api);
	reports_init(&w->reports, 5000);
	src.reports = &w->reports;
	status_endpoint_init_sources(&w->e, &src, &w->api.api, NULL);
	if (serving_cert_make_ca(&w->ca, "test CA", 1, err) < 0 ||
	    status_server_start(&w->s, &w->e, "127.0.0.1:0", &w->ca, names, 2, err) < 0)
		fail_msg("%s", err);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;

	status_server_stop(&w->s);
	status_endpoint_release(&w->e);
	reports_release(&w->reports);
	pem_pair_release(&w->ca);
	free(w);
	return 0;
}

static size_t sink(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

/* A handle that trusts ca (NULL: nothing but the system's) and posts
 * body with the bearer token to the server's report path over scheme. */
static CURL *handle(const struct world *w, const char *scheme, const struct pem_pair *ca,
                    const char *token, const char *body, struct curl_slist **headers)
{
	CURL *h = curl_easy_init();
	char url[256], auth[128];

	snprintf(url, sizeof(url), "%s://localhost:%d" PATH, scheme, w->s.port);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
	*headers = curl_slist_append(NULL, auth);
	*headers = curl_slist_append(*headers, "Content-Type: application/json");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, *headers);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
	if (ca != NULL) {
		struct curl_blob blob = {ca->cert, strlen(ca->cert), CURL_BLOB_COPY};

		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
	}
	return h;
}

/* One request: the HTTP status, or -1 when none came (curl's error). */
static long post(const struct world *w, const char *scheme, const struct pem_pair *ca,
                 const char *token, const char *body)
{
	struct curl_slist *headers;
	CURL *h = handle(w, scheme, ca, token, body, &headers);
	long code = -1;

	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(headers);
	curl_easy_cleanup(h);
	return code;
}

static void test_a_report_over_verified_tls_is_taken(void **state)
{
	struct world *w = *state;

	assert_int_equal(post(w, "https", &w->ca, "chief", REPORT), 200);
	assert_int_equal(w->reported, 1);
	assert_int_equal(post(w, "https", &w->ca, "forged", REPORT), 401);
	assert_int_equal(w->reported, 1);
}

static void test_no_report_goes_in_the_clear_or_to_an_unverified_server(void **state)
{
	struct world *w = *state;
	struct pem_pair other;
	char err[ERR_LEN];

	assert_int_equal(serving_cert_make_ca(&other, "another CA", 1, err), 0);
	assert_int_equal(post(w, "https", &other, "chief", REPORT), -1);
	assert_int_equal(post(w, "http", NULL, "chief", REPORT), -1);
	assert_int_equal(w->reported, 0);
	pem_pair_release(&other);
}

static void test_a_body_over_the_cap_is_refused(void **state)
{
	struct world *w = *state;
	char *big = malloc((size_t)4 * TRAINING_REPORT_MAX + 1);

	memset(big, ' ', (size_t)4 * TRAINING_REPORT_MAX);
	big[(size_t)4 * TRAINING_REPORT_MAX] = '\0';
	assert_int_equal(post(w, "https", &w->ca, "chief", big), 413);
	assert_int_equal(w->reported, 0);
	free(big);
}

static void test_a_renewed_certificate_is_served_on_the_same_port(void **state)
{
	struct world *w = *state;
	struct curl_slist *headers;
	char before[4096], err[ERR_LEN] = "";
	int port = w->s.port;
	CURL *kept;
	long code = 0;

	snprintf(before, sizeof(before), "%s", w->s.cert.cert);
	/* A connection opened before the renewal. */
	kept = handle(w, "https", &w->ca, "chief", REPORT, &headers);
	assert_int_equal(curl_easy_perform(kept), CURLE_OK);
	assert_int_equal(status_server_renew(&w->s, err), 0);
	assert_int_equal(w->s.port, port);
	assert_string_not_equal(w->s.cert.cert, before);
	assert_int_equal(w->s.renewals, 1);
	/* New connections get the new certificate, which the CA verifies. */
	assert_int_equal(post(w, "https", &w->ca, "chief", REPORT), 200);
	/* The old handle reconnects if its connection went with the old
	 * daemon, and still gets an answer. */
	assert_int_equal(curl_easy_perform(kept), CURLE_OK);
	curl_easy_getinfo(kept, CURLINFO_RESPONSE_CODE, &code);
	assert_int_equal(code, 200);
	curl_slist_free_all(headers);
	curl_easy_cleanup(kept);
	assert_int_equal(w->reported, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_a_report_over_verified_tls_is_taken, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(
	        test_no_report_goes_in_the_clear_or_to_an_unverified_server, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_body_over_the_cap_is_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_renewed_certificate_is_served_on_the_same_port,
	                                    setup, teardown),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
