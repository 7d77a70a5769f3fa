/* test_cli.c - the mwj-operator command line: defaults, the MWJ_*
 * environment under the flags, and the leader election, metrics and
 * health flags, with every bad value refused by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/cmd/cli.h" /* not the worker's cli.h, which -Iworker/src/app finds first */
#include "err.h"

static const char *const ENV[] = {
    "MWJ_KUBECONFIG",   "MWJ_CONTEXT",         "MWJ_NAMESPACE",
    "MWJ_WORKERS",      "MWJ_RESYNC_SECONDS",  "MWJ_LOG_FORMAT",
    "MWJ_LOG_LEVEL",    "MWJ_LEADER_ELECT",    "MWJ_LEADER_ELECTION_NAMESPACE",
    "MWJ_METRICS_ADDR", "MWJ_HEALTH_ADDR",     "MWJ_STATUS_URL",
    "MWJ_STATUS_ADDR",  "MWJ_STATUS_AUDIENCE", "MWJ_STATUS_CA_DIR"};

static int clean_env(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(ENV) / sizeof(ENV[0]); i++)
		unsetenv(ENV[i]);
	return 0;
}

/* Parses the words given (NULL-terminated) after "mwj-operator". */
static int parse(struct operator_cli *c, char *err, ...)
{
	char *argv[32] = {"mwj-operator"};
	int argc = 1;
	va_list ap;
	FILE *out = fopen("/dev/null", "w");
	int rc;

	va_start(ap, err);
	for (char *w = va_arg(ap, char *); w != NULL && argc < 31; w = va_arg(ap, char *))
		argv[argc++] = w;
	va_end(ap);
	rc = operator_cli_parse(c, argc, argv, out, err);
	fclose(out);
	return rc;
}

static void test_defaults(void **state)
{
	static struct operator_cli c;
	char err[ERR_LEN];

	(void)state;
	assert_int_equal(parse(&c, err, NULL), 0);
	assert_int_equal(c.leader_elect, -1); /* decided by where it runs */
	assert_string_equal(c.leader_id, "mwj-operator");
	assert_string_equal(c.leader_namespace, "");
	assert_int_equal(c.lease_ms, 15000);
	assert_int_equal(c.renew_ms, 10000);
	assert_int_equal(c.retry_ms, 2000);
	assert_string_equal(c.metrics_addr, ":8080");
	assert_string_equal(c.health_addr, ":8081");
	assert_int_equal(c.workers, 4);
	/* No reports are taken unless a URL says where the chiefs send them. */
	assert_string_equal(c.status_url, "");
	assert_string_equal(c.status_addr, ":8443");
	assert_string_equal(c.status_audience, "mwj-operator");
	assert_string_equal(c.status_ca_dir, "");
}

static void test_the_status_url_is_https_to_a_host_and_port(void **state)
{
	static const struct {
		const char *url, *host;
	} good[] = {
	    {"https://mwj-operator-status.mwj-system.svc:8443",
	     "mwj-operator-status.mwj-system.svc"},
	    {"https://127.0.0.1:8443", "127.0.0.1"},
	    {"https://[::1]:8443", "::1"},
	    {"https://status.example", "status.example"},
	};
	static const char *const bad[] = {
	    "http://status:8443",
	    "https://",
	    "https://:8443",
	    "https://status:0",
	    "https://status:65536",
	    "https://status:84x",
	    "https://status:8443/path",
	    "https://status/",
	    "status:8443",
	};
	static struct operator_cli c;
	char err[ERR_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (parse(&c, err, "--status-url", good[i].url, NULL) != 0)
			fail_msg("%s: %s", good[i].url, err);
		assert_string_equal(c.status_url, good[i].url);
		assert_string_equal(c.status_host, good[i].host);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(&c, err, "--status-url", bad[i], NULL) != -1)
			fail_msg("%s: taken", bad[i]);
		assert_non_null(strstr(err, "--status-url"));
	}
	setenv("MWJ_STATUS_URL", "http://x:1", 1);
	assert_int_equal(parse(&c, err, NULL), -1);
	assert_non_null(strstr(err, "MWJ_STATUS_URL"));
	assert_non_null(strstr(err, "never sent in the clear"));
	unsetenv("MWJ_STATUS_URL");
	assert_int_equal(parse(&c, err, "--status-addr", "127.0.0.1:0", "--status-audience", "x",
	                       "--status-ca-dir", "/etc/ca", NULL),
	                 0);
	assert_string_equal(c.status_addr, "127.0.0.1:0");
	assert_string_equal(c.status_audience, "x");
	assert_string_equal(c.status_ca_dir, "/etc/ca");
}

static void test_leader_elect_takes_an_optional_go_bool(void **state)
{
	static struct operator_cli c;
	char err[ERR_LEN];

	(void)state;
	assert_int_equal(parse(&c, err, "--leader-elect", NULL), 0);
	assert_int_equal(c.leader_elect, 1);
	assert_int_equal(parse(&c, err, "--leader-elect=false", NULL), 0);
	assert_int_equal(c.leader_elect, 0);
	assert_int_equal(parse(&c, err, "--leader-elect=True", NULL), 0);
	assert_int_equal(c.leader_elect, 1);
	assert_int_equal(parse(&c, err, "--leader-elect=maybe", NULL), -1);
	assert_non_null(strstr(err, "--leader-elect"));
	setenv("MWJ_LEADER_ELECT", "0", 1);
	assert_int_equal(parse(&c, err, NULL), 0);
	assert_int_equal(c.leader_elect, 0);
	assert_int_equal(parse(&c, err, "--leader-elect", NULL), 0); /* the flag wins */
	assert_int_equal(c.leader_elect, 1);
}

static void test_durations_and_their_rules(void **state)
{
	static struct operator_cli c;
	char err[ERR_LEN];

	(void)state;
	assert_int_equal(parse(&c, err, "--leader-elect-lease-duration", "4s",
	                       "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period",
	                       "500ms", "--leader-election-namespace", "ops",
	                       "--leader-election-id", "mine", NULL),
	                 0);
	assert_int_equal(c.lease_ms, 4000);
	assert_int_equal(c.renew_ms, 3000);
	assert_int_equal(c.retry_ms, 500);
	assert_string_equal(c.leader_namespace, "ops");
	assert_string_equal(c.leader_id, "mine");
	/* The renew deadline must be shorter than the lease. */
	assert_int_equal(parse(&c, err, "--leader-elect-renew-deadline", "20s", NULL), -1);
	assert_non_null(strstr(err, "renew deadline"));
	assert_int_equal(parse(&c, err, "--leader-elect-retry-period", "10", NULL), -1);
	assert_non_null(strstr(err, "--leader-elect-retry-period"));
	assert_int_equal(parse(&c, err, "--leader-election-id", "a/b", NULL), -1);
}

static void test_addresses(void **state)
{
	static struct operator_cli c;
	char err[ERR_LEN];

	(void)state;
	assert_int_equal(
	    parse(&c, err, "--metrics-addr", "127.0.0.1:9090", "--health-addr", "0", NULL), 0);
	assert_string_equal(c.metrics_addr, "127.0.0.1:9090");
	assert_string_equal(c.health_addr, "0");
	assert_int_equal(parse(&c, err, "--metrics-addr", "[::1]:9090", NULL), 0);
	setenv("MWJ_HEALTH_ADDR", ":9091", 1);
	assert_int_equal(parse(&c, err, NULL), 0);
	assert_string_equal(c.health_addr, ":9091");
	unsetenv("MWJ_HEALTH_ADDR");
	const char *bad[] = {"8080", ":http", ":65536", "::1:80", "[::1]80", ":-1", ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(&c, err, "--metrics-addr", bad[i], NULL), -1);
		assert_non_null(strstr(err, "--metrics-addr"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_defaults, clean_env),
	    cmocka_unit_test_setup(test_leader_elect_takes_an_optional_go_bool, clean_env),
	    cmocka_unit_test_setup(test_durations_and_their_rules, clean_env),
	    cmocka_unit_test_setup(test_addresses, clean_env),
	    cmocka_unit_test_setup(test_the_status_url_is_https_to_a_host_and_port, clean_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
