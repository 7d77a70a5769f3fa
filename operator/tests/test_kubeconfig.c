/* test_kubeconfig.c - kubeconfig files read as client-go reads them (the
 * fixtures in fixtures/kubeconfig/, good ones and bad ones, each bad one
 * refused naming the file and the field), hostile files refused without
 * a crash, the in-cluster configuration from a service-account folder,
 * the token file read again when it changes, and the order in which
 * kube_config_resolve looks. Each test runs in a fresh temporary folder
 * that is also $HOME, with the in-cluster variables and $KUBECONFIG unset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "atomic_file.h"
#include "err.h"
#include "kubeconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The fixtures' folder beside this file, and the working directory that
 * relative paths in messages resolve against. */
static char fixtures[PATH_MAX];
static char cwd[PATH_MAX];
/* The running test's scratch folder. */
static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/mwj-test-kubeconfig-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	unsetenv("POD_NAMESPACE");
	unsetenv("KUBECONFIG");
	return setenv("HOME", dir, 1);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	(void)state;
	return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* fixtures/kubeconfig/name, or the scratch folder's name; one live result
 * per slot. */
static const char *fixture(int slot, const char *name)
{
	static char paths[4][PATH_MAX + 64];

	snprintf(paths[slot], sizeof(paths[slot]), "%s/%s", fixtures, name);
	return paths[slot];
}

static const char *scratch(int slot, const char *name)
{
	static char paths[4][128];

	snprintf(paths[slot], sizeof(paths[slot]), "%s/%s", dir, name);
	return paths[slot];
}

/* A fixture's absolute path, as client-go resolves paths inside it. */
static const char *resolved(const char *name)
{
	static char path[3 * PATH_MAX];

	if (fixtures[0] == '/')
		snprintf(path, sizeof(path), "%s/%s", fixtures, name);
	else
		snprintf(path, sizeof(path), "%s/%s/%s", cwd, fixtures, name);
	return path;
}

static void write_file(const char *path, const void *data, size_t len)
{
	char err[ERR_LEN] = "";

	if (atomic_file_write(path, data, len, 0600, err) < 0)
		fail_msg("%s", err);
}

static void write_text(const char *path, const char *text)
{
	write_file(path, text, strlen(text));
}

static void *read_fixture(const char *name, size_t *len)
{
	unsigned char *data = NULL;
	char err[ERR_LEN] = "";

	if (file_read_all(fixture(3, name), 1 << 20, &data, len, err) < 0)
		fail_msg("%s", err);
	return data;
}

static void load_ok(struct kube_config *c, const char *path, const char *context)
{
	char err[ERR_LEN] = "";

	if (kube_config_load_file(c, path, context, err) < 0)
		fail_msg("%s", err);
}

static void assert_token(struct kube_config *c, const char *want)
{
	char tok[KUBE_CONFIG_TOKEN_LEN], err[ERR_LEN] = "";

	if (kube_config_token(c, tok, sizeof(tok), err) < 0)
		fail_msg("%s", err);
	assert_string_equal(tok, want);
}

/* Loading path fails with exactly "'<path>': <want>", and leaves c
 * zeroed: nothing to free, nothing half-set. */
static void assert_refused(const char *path, const char *context, const char *want)
{
	struct kube_config c, zero;
	char err[ERR_LEN] = "", expect[ERR_LEN + 64];

	memset(&c, 0x5a, sizeof(c));
	memset(&zero, 0, sizeof(zero));
	if (kube_config_load_file(&c, path, context, err) == 0)
		fail_msg("'%s' was accepted", path);
	snprintf(expect, sizeof(expect), "'%s': %s", path, want);
	assert_string_equal(err, expect);
	assert_memory_equal(&c, &zero, sizeof(c));
	kube_config_release(&c);
}

/* --- Good kubeconfigs --- */

static void test_a_literal_token_and_embedded_ca_are_read_with_the_context_namespace(void **state)
{
	struct kube_config c;
	size_t ca_len = 0;
	char *ca = read_fixture("ca.crt", &ca_len);

	(void)state;
	load_ok(&c, fixture(0, "token.yaml"), NULL);
	assert_string_equal(c.server, "https://10.0.0.1:6443");
	assert_string_equal(c.source, fixture(0, "token.yaml"));
	assert_string_equal(c.context, "ml");
	assert_string_equal(c.namespace, "ml-team");
	assert_int_equal(c.ca_pem_len, ca_len);
	assert_memory_equal(c.ca_pem, ca, ca_len);
	assert_string_equal(c.ca_file, "");
	assert_int_equal(c.insecure, 0);
	assert_string_equal(c.token_file, "");
	assert_null(c.cert_pem);
	assert_null(c.key_pem);
	assert_token(&c, "fixture-literal-token");
	kube_config_release(&c);
	free(ca);
}

static void test_a_token_file_is_read_relative_to_the_kubeconfig(void **state)
{
	struct kube_config c;

	(void)state;
	load_ok(&c, fixture(0, "token-file.yaml"), "");
	assert_string_equal(c.token_file, resolved("token"));
	assert_string_equal(c.ca_file, resolved("ca.crt"));
	assert_string_equal(c.token, "fixture-token-from-file");
	assert_token(&c, "fixture-token-from-file");
	kube_config_release(&c);
}

static void test_client_certificate_and_key_data_are_decoded(void **state)
{
	struct kube_config c;
	size_t cert_len = 0, key_len = 0;
	char *cert = read_fixture("client.crt", &cert_len);
	char *key = read_fixture("client.key", &key_len);

	(void)state;
	load_ok(&c, fixture(0, "client-cert-data.yaml"), NULL);
	assert_string_equal(c.server, "https://127.0.0.1:39245");
	assert_non_null(c.ca_pem);
	/* Wrapped at 76 columns in a block scalar: line breaks are skipped. */
	assert_int_equal(c.cert_pem_len, cert_len);
	assert_memory_equal(c.cert_pem, cert, cert_len);
	assert_int_equal(c.key_pem_len, key_len);
	assert_memory_equal(c.key_pem, key, key_len);
	assert_int_equal(c.cert_pem[c.cert_pem_len], '\0');
	assert_string_equal(c.cert_file, "");
	assert_token(&c, "");
	kube_config_release(&c);
	free(cert);
	free(key);
}

static void test_client_certificate_and_key_files_are_resolved_and_cleaned(void **state)
{
	struct kube_config c;

	(void)state;
	load_ok(&c, fixture(0, "client-cert-files.yaml"), NULL);
	assert_string_equal(c.cert_file, resolved("client.crt"));
	assert_string_equal(c.key_file, resolved("client.key"));
	assert_string_equal(c.ca_file, resolved("ca.crt"));
	assert_null(c.key_pem);
	kube_config_release(&c);
}

static void test_a_relative_ca_file_is_resolved_against_the_kubeconfig_folder(void **state)
{
	struct kube_config c;

	(void)state;
	load_ok(&c, fixture(0, "ca-file.yaml"), NULL);
	assert_string_equal(c.ca_file, resolved("ca.crt"));
	assert_null(c.ca_pem);
	assert_int_equal(c.insecure, 0);
	kube_config_release(&c);
}

static void test_insecure_skip_tls_verify_is_read(void **state)
{
	struct kube_config c;

	(void)state;
	load_ok(&c, fixture(0, "insecure.yaml"), NULL);
	assert_int_equal(c.insecure, 1);
	assert_string_equal(c.ca_file, "");
	assert_null(c.ca_pem);
	kube_config_release(&c);
}

static void test_the_current_context_is_used_unless_another_is_named(void **state)
{
	struct kube_config c;

	(void)state;
	load_ok(&c, fixture(0, "two-contexts.yaml"), NULL);
	assert_string_equal(c.context, "dev");
	assert_string_equal(c.server, "https://dev.example.test:6443");
	assert_string_equal(c.namespace, "");
	assert_token(&c, "dev-token");
	kube_config_release(&c);

	load_ok(&c, fixture(0, "two-contexts.yaml"), "prod");
	assert_string_equal(c.context, "prod");
	assert_string_equal(c.server, "https://prod.example.test:6443");
	assert_string_equal(c.namespace, "training");
	assert_int_equal(c.insecure, 0);
	assert_non_null(c.ca_pem);
	assert_token(&c, "prod-token");
	kube_config_release(&c);
}

static void test_a_server_without_tls_gets_no_credentials_as_in_client_go(void **state)
{
	static const struct {
		const char *server, *want;
	} cases[] = {
	    {"http://10.0.0.1:8080", "http://10.0.0.1:8080"},
	    {"10.0.0.1:8080", "http://10.0.0.1:8080"}, /* no scheme: http, as client-go */
	    {"HTTPS://10.0.0.1", "HTTPS://10.0.0.1"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char text[512];
		struct kube_config c;

		snprintf(text, sizeof(text),
		         "current-context: c\n"
		         "clusters: [{name: c, cluster: {server: '%s'}}]\n"
		         "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
		         "users: [{name: u, user: {token: secret}}]\n",
		         cases[i].server);
		write_text(scratch(0, "config"), text);
		load_ok(&c, scratch(0, "config"), NULL);
		assert_string_equal(c.server, cases[i].want);
		assert_token(&c, i == 2 ? "secret" : "");
		kube_config_release(&c);
	}
}

/* --- Bad kubeconfigs: each refused naming the file and the field --- */

static void test_a_file_that_is_not_yaml_is_refused_naming_the_line(void **state)
{
	(void)state;
	assert_refused(fixture(0, "bad-not-yaml.yaml"), NULL,
	               "not YAML: line 5 column 9: did not find expected ',' or ']' while "
	               "parsing a flow sequence");
}

static void test_a_kubeconfig_without_current_context_is_refused(void **state)
{
	(void)state;
	assert_refused(fixture(0, "bad-no-current-context.yaml"), NULL,
	               "current-context: not set, and no context was asked for");
}

static void test_a_current_context_naming_no_context_is_refused(void **state)
{
	(void)state;
	assert_refused(fixture(0, "bad-unknown-current-context.yaml"), NULL,
	               "current-context: no context named 'staging'");
	assert_refused(fixture(0, "two-contexts.yaml"), "staging",
	               "contexts: no context named 'staging'");
}

static void test_a_context_naming_no_cluster_or_no_user_is_refused(void **state)
{
	(void)state;
	assert_refused(fixture(0, "bad-context-unknown-cluster.yaml"), NULL,
	               "contexts[1].context.cluster: no cluster named 'gone'");
	assert_refused(fixture(0, "bad-context-unknown-user.yaml"), NULL,
	               "contexts[0].context.user: no user named 'nobody'");
	assert_refused(fixture(0, "bad-context-without-user.yaml"), NULL,
	               "contexts[0].context.user: missing in context 'c'");
}

static void test_a_cluster_without_server_is_refused(void **state)
{
	(void)state;
	assert_refused(fixture(0, "bad-cluster-without-server.yaml"), NULL,
	               "clusters[0].cluster.server: missing: cluster 'c' has no server");
}

static void test_a_kubeconfig_with_an_exec_user_is_refused_naming_it(void **state)
{
	(void)state;
	assert_refused(fixture(0, "bad-exec-user.yaml"), NULL,
	               "users[1].user.exec: user 'eks-admin' needs an exec credential plugin, "
	               "and the operator runs no plugins");
}

static void test_a_kubeconfig_with_an_auth_provider_user_is_refused_naming_it(void **state)
{
	(void)state;
	assert_refused(fixture(0, "bad-auth-provider-user.yaml"), NULL,
	               "users[0].user.auth-provider: user 'gke' needs an auth-provider plugin, and "
	               "the operator runs no plugins");
}

static void test_bad_base64_is_refused_naming_the_field(void **state)
{
	(void)state;
	assert_refused(fixture(0, "bad-base64.yaml"), NULL,
	               "users[0].user.client-key-data: invalid base64 at byte 8");
}

static void test_a_missing_ca_file_is_refused_naming_the_field_and_the_file(void **state)
{
	char want[3 * PATH_MAX + 128];

	(void)state;
	snprintf(want, sizeof(want),
	         "clusters[0].cluster.certificate-authority: open '%s': No such file or directory",
	         resolved("certs/missing-ca.crt"));
	assert_refused(fixture(0, "bad-missing-ca-file.yaml"), NULL, want);
}

static void test_a_missing_kubeconfig_is_refused_naming_it(void **state)
{
	struct kube_config c;
	char err[ERR_LEN] = "", want[ERR_LEN];

	(void)state;
	assert_int_equal(kube_config_load_file(&c, scratch(0, "absent"), NULL, err), -1);
	snprintf(want, sizeof(want), "open '%s': No such file or directory", scratch(0, "absent"));
	assert_string_equal(err, want);
	kube_config_release(&c);
}

/* Small files that client-go refuses, or that would be unsafe to honour,
 * and what the refusal says after the file's name. */
static const struct {
	const char *yaml, *msg;
} REFUSED[] = {
    {"- a\n- b\n", "not a kubeconfig: the top level is a list, not a mapping"},
    {"just words\n", "not a kubeconfig: the top level is a scalar, not a mapping"},
    {"", "current-context: not set, and no context was asked for"},
    {"kind: Pod\n", "kind: not 'Config', so not a kubeconfig"},
    {"apiVersion: v2\n", "apiVersion: not 'v1', so not a kubeconfig"},
    {"clusters: {a: b}\n", "clusters: a mapping, not a list"},
    {"users: [x]\n", "users[0]: a scalar, not a mapping"},
    {"contexts: [{name: c, context: [a]}]\n", "contexts[0].context: a list, not a mapping"},
    {"clusters: [{name: [a]}]\n", "clusters[0].name: a list, not a string"},
    {"clusters: [{name: a}, {name: b}, {name: a}]\n",
     "clusters[2].name: 'a' is also the name of clusters[0]"},
    {"clusters: [{name: a, cluster: {insecure-skip-tls-verify: 'true'}}]\n",
     "clusters[0].cluster.insecure-skip-tls-verify: not a boolean"},
    {"clusters: [{name: a, cluster: {server: [x]}}]\n",
     "clusters[0].cluster.server: a list, not a string"},
    {"users: [{name: a, user: {token: a, token: b}}]\n", "users[0].user.token: given 2 times"},
    {"users: [{name: a, user: {tokenFile: \"a\\0b\"}}]\n",
     "users[0].user.tokenFile: contains a NUL byte"},
    /* Unused entries are checked too, as client-go's decoder checks them. */
    {"current-context: c\n"
     "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
     "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
     "users: [{name: u, user: {token: t}}, {name: v, user: {client-key-data: '%%%'}}]\n",
     "users[1].user.client-key-data: invalid base64 at byte 0"},
    {"current-context: c\n"
     "clusters: [{name: c, cluster: {server: 'https://a', certificate-authority-data: Zm9v, "
     "insecure-skip-tls-verify: true}}]\n"
     "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
     "users: [{name: u, user: {token: t}}]\n",
     "clusters[0].cluster.insecure-skip-tls-verify: cannot be true with a certificate "
     "authority given"},
    {"current-context: c\n"
     "clusters: [{name: c, cluster: {server: 'https://a', certificate-authority-data: Zm9v, "
     "certificate-authority: /etc/hostname}}]\n"
     "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
     "users: [{name: u, user: {token: t}}]\n",
     "clusters[0].cluster.certificate-authority: cannot be given with "
     "certificate-authority-data"},
    {"current-context: c\n"
     "clusters: [{name: c, cluster: {server: 'https://a', tls-server-name: b}}]\n"
     "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
     "users: [{name: u, user: {token: t}}]\n",
     "clusters[0].cluster.tls-server-name: not supported"},
    {"current-context: c\n"
     "clusters: [{name: c, cluster: {server: 'ftp://a'}}]\n"
     "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
     "users: [{name: u, user: {token: t}}]\n",
     "clusters[0].cluster.server: 'ftp://a': not an http or https URL"},
    {"current-context: c\n"
     "clusters: [{name: c, cluster: {server: \"https://a\\nHost: b\"}}]\n"
     "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
     "users: [{name: u, user: {token: t}}]\n",
     "clusters[0].cluster.server: 'https://a\nHost: b' is not a URL"},
    {"current-context: c\n"
     "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
     "contexts: [{name: c, context: {cluster: c, user: u, namespace: Not_A_Label}}]\n"
     "users: [{name: u, user: {token: t}}]\n",
     "contexts[0].context.namespace: 'Not_A_Label' is not a namespace name"},
    {"current-context: c\n"
     "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
     "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
     "users: [{name: u, user: {client-certificate-data: Zm9v}}]\n",
     "users[0].user.client-key: missing: a client certificate needs client-key or "
     "client-key-data"},
    {"current-context: c\n"
     "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
     "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
     "users: [{name: u, user: {username: admin, password: hunter2}}]\n",
     "users[0].user.username: user 'u' needs basic authentication, which the operator does "
     "not support"},
    {"current-context: c\n"
     "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
     "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
     "users: [{name: u, user: {token: t, as: admin}}]\n",
     "users[0].user.as: user 'u' needs impersonation, which the operator does not support"},
    /* A header injected through the token must not reach a request. */
    {"current-context: c\n"
     "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
     "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
     "users: [{name: u, user: {token: \"SECRET\\r\\nX-Evil: 1\"}}]\n",
     "users[0].user.token: holds control characters"},
    /* An alias cycle, and a list that holds itself. */
    {"&a [*a]\n", "not a kubeconfig: the top level is a list, not a mapping"},
    {"clusters: &l [*l]\n", "clusters[0]: a list, not a mapping"},
};

static void test_hostile_and_inconsistent_files_are_refused_naming_the_field(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(REFUSED); i++) {
		write_text(scratch(0, "config"), REFUSED[i].yaml);
		assert_refused(scratch(0, "config"), NULL, REFUSED[i].msg);
	}
}

static void test_a_refusal_never_quotes_a_token_or_a_key(void **state)
{
	struct kube_config c;
	char err[ERR_LEN] = "";

	(void)state;
	write_text(scratch(0, "config"),
	           "current-context: c\n"
	           "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
	           "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
	           "users: [{name: u, user: {token: \"SECRET\\n\", "
	           "client-certificate-data: Zm9v, client-key-data: SECRETKEY*}}]\n");
	assert_int_equal(kube_config_load_file(&c, scratch(0, "config"), NULL, err), -1);
	assert_null(strstr(err, "SECRET"));
	kube_config_release(&c);
}

static void test_a_kubeconfig_over_one_mebibyte_is_refused(void **state)
{
	size_t len = (1 << 20) + 1;
	char *big = malloc(len);
	char want[ERR_LEN];
	struct kube_config c;
	char err[ERR_LEN] = "";

	(void)state;
	assert_non_null(big);
	memset(big, '#', len);
	write_file(scratch(0, "config"), big, len);
	free(big);
	assert_int_equal(kube_config_load_file(&c, scratch(0, "config"), NULL, err), -1);
	snprintf(want, sizeof(want), "read '%s': file is %zu bytes, more than the limit of %d",
	         scratch(0, "config"), len, 1 << 20);
	assert_string_equal(err, want);
}

static void test_a_field_longer_than_its_buffer_is_refused(void **state)
{
	size_t pad = KUBE_CONFIG_PATH_LEN + 10;
	char *text = malloc(pad + 512);
	char want[128];
	int n;

	(void)state;
	assert_non_null(text);
	n = snprintf(text, 512,
	             "current-context: c\n"
	             "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
	             "users: [{name: u, user: {token: t}}]\n"
	             "clusters: [{name: c, cluster: {server: https://");
	memset(text + n, 'a', pad);
	snprintf(text + n + pad, 512, "}}]\n");
	write_text(scratch(0, "config"), text);
	free(text);
	snprintf(want, sizeof(want),
	         "clusters[0].cluster.server: %zu bytes, more than the limit of 4095",
	         strlen("https://") + pad);
	assert_refused(scratch(0, "config"), NULL, want);
}

static void test_deep_nesting_and_binary_garbage_are_refused_without_a_crash(void **state)
{
	size_t len = 1 << 20;
	unsigned char *junk = malloc(len);
	struct kube_config c;
	char err[ERR_LEN] = "";
	uint32_t x = 12345;

	(void)state;
	assert_non_null(junk);
	memset(junk, '[', len);
	write_file(scratch(0, "config"), junk, len);
	assert_int_equal(kube_config_load_file(&c, scratch(0, "config"), NULL, err), -1);
	assert_non_null(strstr(err, "not YAML"));

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		junk[i] = (unsigned char)(x >> 16);
	}
	write_file(scratch(0, "config"), junk, 4096);
	assert_int_equal(kube_config_load_file(&c, scratch(0, "config"), NULL, err), -1);
	free(junk);
	kube_config_release(&c);
}

/* The depth guard counts only brackets that open flow collections: ones
 * inside quoted strings, comments and a bracketed IPv6 server do not. */
static void test_brackets_in_strings_comments_and_ipv6_servers_are_not_nesting(void **state)
{
	char text[4096], brackets[200];
	struct kube_config c;

	(void)state;
	memset(brackets, '[', sizeof(brackets) - 1);
	brackets[sizeof(brackets) - 1] = '\0';
	snprintf(text, sizeof(text),
	         "# %s\n"
	         "current-context: c\n"
	         "contexts: [{name: c, context: {cluster: c, user: u, namespace: \"%s\"}}]\n"
	         "users: [{name: u, user: {token: '%s'}}]\n"
	         "clusters: [{name: c, cluster: {server: 'https://[::1]:6443'}}]\n",
	         brackets, "ns", brackets);
	write_text(scratch(0, "config"), text);
	load_ok(&c, scratch(0, "config"), NULL);
	assert_string_equal(c.server, "https://[::1]:6443");
	kube_config_release(&c);

	snprintf(text, sizeof(text), "current-context: c\nx: %s\n", brackets);
	write_text(scratch(0, "config"), text);
	assert_refused(scratch(0, "config"), NULL,
	               "not YAML we accept: line 2: flow collections nested deeper than 64");
}

/* --- In a pod --- */

/* A service-account folder in the scratch folder: token, ca.crt and
 * namespace, each when given. */
static const char *make_sa_dir(const char *token, int with_ca, const char *ns)
{
	const char *sa = scratch(1, "serviceaccount");
	char path[256];

	assert_int_equal(mkdir(sa, 0700), 0);
	if (token != NULL) {
		snprintf(path, sizeof(path), "%s/token", sa);
		write_text(path, token);
	}
	if (with_ca) {
		size_t len = 0;
		char *ca = read_fixture("ca.crt", &len);

		snprintf(path, sizeof(path), "%s/ca.crt", sa);
		write_file(path, ca, len);
		free(ca);
	}
	if (ns != NULL) {
		snprintf(path, sizeof(path), "%s/namespace", sa);
		write_text(path, ns);
	}
	return sa;
}

static void test_in_cluster_reads_the_service_account_and_the_environment(void **state)
{
	const char *sa = make_sa_dir("in-cluster-token\n", 1, "ml-jobs\n");
	struct kube_config c;
	char err[ERR_LEN] = "", path[256];

	(void)state;
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	if (kube_config_in_cluster(&c, sa, err) < 0)
		fail_msg("%s", err);
	assert_string_equal(c.server, "https://10.96.0.1:443");
	assert_string_equal(c.source, "in-cluster");
	assert_string_equal(c.context, "");
	assert_string_equal(c.namespace, "ml-jobs");
	snprintf(path, sizeof(path), "%s/ca.crt", sa);
	assert_string_equal(c.ca_file, path);
	snprintf(path, sizeof(path), "%s/token", sa);
	assert_string_equal(c.token_file, path);
	assert_int_equal(c.insecure, 0);
	assert_token(&c, "in-cluster-token");
	kube_config_release(&c);

	/* The downward API's POD_NAMESPACE comes first, as in clientcmd. */
	setenv("POD_NAMESPACE", "from-env", 1);
	if (kube_config_in_cluster(&c, sa, err) < 0)
		fail_msg("%s", err);
	assert_string_equal(c.namespace, "from-env");
	kube_config_release(&c);
}

static void test_in_cluster_brackets_an_ipv6_service_host(void **state)
{
	const char *sa = make_sa_dir("t", 1, NULL);
	struct kube_config c;
	char err[ERR_LEN] = "";

	(void)state;
	setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
	if (kube_config_in_cluster(&c, sa, err) < 0)
		fail_msg("%s", err);
	assert_string_equal(c.server, "https://[fd00:10:96::1]:6443");
	assert_string_equal(c.namespace, "");
	kube_config_release(&c);
}

static void test_in_cluster_without_a_usable_ca_uses_the_system_roots_as_client_go(void **state)
{
	const char *sa = make_sa_dir("t", 0, NULL);
	struct kube_config c;
	char err[ERR_LEN] = "";

	(void)state;
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	if (kube_config_in_cluster(&c, sa, err) < 0)
		fail_msg("%s", err);
	assert_string_equal(c.ca_file, "");
	kube_config_release(&c);
}

static void test_in_cluster_without_a_token_or_the_variables_is_refused(void **state)
{
	const char *sa = make_sa_dir(NULL, 1, "ns");
	struct kube_config c;
	char err[ERR_LEN] = "", want[ERR_LEN];

	(void)state;
	assert_int_equal(kube_config_in_cluster(&c, sa, err), -1);
	assert_string_equal(err, "not in a cluster: KUBERNETES_SERVICE_HOST and "
	                         "KUBERNETES_SERVICE_PORT must both be set");
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	assert_int_equal(kube_config_in_cluster(&c, sa, err), -1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kube_config_in_cluster(&c, sa, err), -1);
	snprintf(want, sizeof(want), "in-cluster: token file '%s/token': No such file or directory",
	         sa);
	assert_string_equal(err, want);
	kube_config_release(&c);
}

static void test_in_cluster_refuses_a_malformed_host_port_or_namespace(void **state)
{
	const char *sa = make_sa_dir("t", 1, "Bad_Namespace");
	struct kube_config c;
	char err[ERR_LEN] = "";

	(void)state;
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1/evil?", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kube_config_in_cluster(&c, sa, err), -1);
	assert_string_equal(
	    err, "KUBERNETES_SERVICE_HOST '10.96.0.1/evil?': not a host name or address");
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "70000", 1);
	assert_int_equal(kube_config_in_cluster(&c, sa, err), -1);
	assert_string_equal(err, "KUBERNETES_SERVICE_PORT: '70000' is out of range [1, 65535]");
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kube_config_in_cluster(&c, sa, err), -1);
	assert_non_null(strstr(err, "'Bad_Namespace' is not a namespace name"));
	kube_config_release(&c);
}

/* --- The token file --- */

/* A kubeconfig in the scratch folder whose user reads token_path. */
static const char *write_token_kubeconfig(const char *token_path)
{
	char text[512];

	snprintf(text, sizeof(text),
	         "current-context: c\n"
	         "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
	         "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
	         "users: [{name: u, user: {tokenFile: '%s'}}]\n",
	         token_path);
	write_text(scratch(2, "config"), text);
	return scratch(2, "config");
}

static void set_mtime(const char *path, time_t sec)
{
	struct timespec ts[2] = {{sec, 0}, {sec, 0}};

	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void test_a_rewritten_token_file_is_read_again(void **state)
{
	const char *tok = scratch(0, "token");
	struct kube_config c;

	(void)state;
	write_text(tok, "first-token\n");
	set_mtime(tok, 1000000000);
	load_ok(&c, write_token_kubeconfig(tok), NULL);
	assert_token(&c, "first-token");

	/* Another size. */
	write_text(tok, "second-token-longer\n");
	set_mtime(tok, 1000000000);
	assert_token(&c, "second-token-longer");

	/* The same size, another modification time. */
	write_text(tok, "third--token-longer\n");
	set_mtime(tok, 1000000001);
	assert_token(&c, "third--token-longer");
	kube_config_release(&c);
}

static void test_a_removed_token_file_keeps_the_last_token_and_fails(void **state)
{
	const char *tok = scratch(0, "token");
	struct kube_config c;
	char out[KUBE_CONFIG_TOKEN_LEN], err[ERR_LEN] = "", want[ERR_LEN];

	(void)state;
	write_text(tok, "kept-token");
	load_ok(&c, write_token_kubeconfig(tok), NULL);
	assert_token(&c, "kept-token");
	assert_int_equal(unlink(tok), 0);
	assert_int_equal(kube_config_token(&c, out, sizeof(out), err), -1);
	assert_string_equal(out, "kept-token");
	snprintf(want, sizeof(want), "token file '%s': No such file or directory", tok);
	assert_string_equal(err, want);

	/* An empty replacement is refused too, and the last token kept. */
	write_text(tok, "\n");
	assert_int_equal(kube_config_token(&c, out, sizeof(out), err), -1);
	assert_string_equal(out, "kept-token");
	kube_config_release(&c);
}

static void test_a_missing_token_file_is_refused_at_load_naming_the_field(void **state)
{
	char want[ERR_LEN];

	(void)state;
	snprintf(want, sizeof(want),
	         "users[0].user.tokenFile: token file '%s': No such file or directory",
	         scratch(0, "absent"));
	assert_refused(write_token_kubeconfig(scratch(0, "absent")), NULL, want);
}

static void test_a_token_that_does_not_fit_the_caller_buffer_is_refused(void **state)
{
	struct kube_config c;
	char out[4], err[ERR_LEN] = "";

	(void)state;
	load_ok(&c, fixture(0, "token.yaml"), NULL);
	assert_int_equal(kube_config_token(&c, out, sizeof(out), err), -1);
	assert_string_equal(out, "");
	assert_string_equal(err, "token: 21 bytes do not fit in 4");
	kube_config_release(&c);
}

struct reader {
	struct kube_config *c;
	int bad;
};

static void *read_tokens(void *arg)
{
	struct reader *r = arg;
	char out[KUBE_CONFIG_TOKEN_LEN], err[ERR_LEN];

	for (int i = 0; i < 2000; i++) {
		if (kube_config_token(r->c, out, sizeof(out), err) < 0 ||
		    (strcmp(out, "token-a") != 0 && strcmp(out, "token-bb") != 0))
			r->bad++;
	}
	return NULL;
}

static void test_token_reads_are_whole_while_the_file_rotates(void **state)
{
	const char *tok = scratch(0, "token");
	struct kube_config c;
	struct reader readers[4];
	pthread_t threads[4];

	(void)state;
	write_text(tok, "token-a");
	load_ok(&c, write_token_kubeconfig(tok), NULL);
	for (int i = 0; i < 4; i++) {
		readers[i] = (struct reader){&c, 0};
		assert_int_equal(pthread_create(&threads[i], NULL, read_tokens, &readers[i]), 0);
	}
	/* Rotated as the kubelet does: a new file renamed into place. */
	for (int i = 0; i < 200; i++)
		write_text(tok, i % 2 ? "token-a" : "token-bb");
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(threads[i], NULL), 0);
		assert_int_equal(readers[i].bad, 0);
	}
	kube_config_release(&c);
}

/* --- Which configuration: flag, in-cluster, $KUBECONFIG, ~/.kube/config --- */

/* A kubeconfig at path whose one context is named name. */
static void write_named_kubeconfig(const char *path, const char *name)
{
	char text[512];

	snprintf(text, sizeof(text),
	         "current-context: %s\n"
	         "clusters: [{name: c, cluster: {server: 'https://%s.test'}}]\n"
	         "contexts: [{name: %s, context: {cluster: c, user: u}}]\n"
	         "users: [{name: u, user: {token: t}}]\n",
	         name, name, name);
	write_text(path, text);
}

static void assert_resolves_to(const char *flag, const char *sa, const char *source)
{
	struct kube_config c;
	char err[ERR_LEN] = "";

	if (kube_config_resolve_from(&c, flag, NULL, sa, err) < 0)
		fail_msg("%s", err);
	assert_string_equal(c.source, source);
	kube_config_release(&c);
}

static void test_resolve_prefers_flag_then_in_cluster_then_kubeconfig_then_home(void **state)
{
	const char *sa = make_sa_dir("t", 1, NULL);
	const char *flag = scratch(0, "flag-config");
	const char *env = scratch(2, "env-config");
	char home[128];
	struct kube_config c;
	char err[ERR_LEN] = "", want[ERR_LEN];

	(void)state;
	snprintf(home, sizeof(home), "%s/.kube", dir);
	assert_int_equal(mkdir(home, 0700), 0);
	snprintf(home, sizeof(home), "%s/.kube/config", dir);
	write_named_kubeconfig(flag, "flag");
	write_named_kubeconfig(env, "env");
	write_named_kubeconfig(home, "home");
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	setenv("KUBECONFIG", env, 1);

	assert_resolves_to(flag, sa, flag);
	assert_resolves_to(NULL, sa, "in-cluster");
	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_resolves_to("", sa, env);
	unsetenv("KUBECONFIG");
	assert_resolves_to(NULL, sa, home);

	assert_int_equal(unlink(home), 0);
	assert_int_equal(kube_config_resolve_from(&c, NULL, NULL, sa, err), -1);
	snprintf(want, sizeof(want),
	         "no kubeconfig: not in a cluster (KUBERNETES_SERVICE_HOST is not set); "
	         "$KUBECONFIG is not set; '%s' does not exist",
	         home);
	assert_string_equal(err, want);
}

static void test_resolve_falls_back_from_a_failed_in_cluster_as_client_go(void **state)
{
	const char *sa = make_sa_dir(NULL, 1, NULL);
	const char *env = scratch(2, "env-config");
	struct kube_config c;
	char err[ERR_LEN] = "", want[ERR_LEN];

	(void)state;
	write_named_kubeconfig(env, "env");
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	setenv("KUBECONFIG", env, 1);
	assert_resolves_to(NULL, sa, env);

	/* With nothing else, the message says what was tried. */
	unsetenv("KUBECONFIG");
	assert_int_equal(kube_config_resolve_from(&c, NULL, NULL, sa, err), -1);
	snprintf(want, sizeof(want),
	         "no kubeconfig: in-cluster: token file '%s/token': No such file or directory; "
	         "$KUBECONFIG is not set; '%s/.kube/config' does not exist",
	         sa, dir);
	assert_string_equal(err, want);
}

static void test_a_kubeconfig_list_merges_with_the_first_file_winning(void **state)
{
	const char *a = scratch(0, "a");
	const char *b = scratch(2, "b");
	char list[512];
	struct kube_config c;
	char err[ERR_LEN] = "";

	(void)state;
	/* a: the current context and its cluster; b: its user, and a
	 * cluster of the same name that loses. A missing file is skipped. */
	write_text(a, "current-context: ctx\n"
	              "clusters: [{name: c, cluster: {server: 'https://from-a'}}]\n"
	              "contexts: [{name: ctx, context: {cluster: c, user: u, namespace: ns-a}}]\n");
	write_text(b, "current-context: other\n"
	              "clusters: [{name: c, cluster: {server: 'https://from-b'}}]\n"
	              "users: [{name: u, user: {token: from-b}}]\n");
	snprintf(list, sizeof(list), "%s/missing::%s:%s:%s", dir, a, b, a);
	setenv("KUBECONFIG", list, 1);
	if (kube_config_resolve_from(&c, NULL, NULL, scratch(1, "no-sa"), err) < 0)
		fail_msg("%s", err);
	assert_string_equal(c.context, "ctx");
	assert_string_equal(c.server, "https://from-a");
	assert_string_equal(c.namespace, "ns-a");
	assert_string_equal(c.source, a);
	assert_token(&c, "from-b");
	kube_config_release(&c);
}

static void test_release_accepts_null_and_a_zeroed_config_and_wipes_the_token(void **state)
{
	struct kube_config c;
	char out[8], err[ERR_LEN] = "";

	(void)state;
	kube_config_release(NULL);
	memset(&c, 0, sizeof(c));
	kube_config_release(&c);
	assert_int_equal(kube_config_token(&c, out, sizeof(out), err), -1);
	load_ok(&c, fixture(0, "client-cert-data.yaml"), NULL);
	kube_config_release(&c);
	assert_null(c.key_pem);
	assert_int_equal(c.token[0], '\0');
	kube_config_release(&c);
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_a_literal_token_and_embedded_ca_are_read_with_the_context_namespace),
	    TEST(test_a_token_file_is_read_relative_to_the_kubeconfig),
	    TEST(test_client_certificate_and_key_data_are_decoded),
	    TEST(test_client_certificate_and_key_files_are_resolved_and_cleaned),
	    TEST(test_a_relative_ca_file_is_resolved_against_the_kubeconfig_folder),
	    TEST(test_insecure_skip_tls_verify_is_read),
	    TEST(test_the_current_context_is_used_unless_another_is_named),
	    TEST(test_a_server_without_tls_gets_no_credentials_as_in_client_go),
	    TEST(test_a_file_that_is_not_yaml_is_refused_naming_the_line),
	    TEST(test_a_kubeconfig_without_current_context_is_refused),
	    TEST(test_a_current_context_naming_no_context_is_refused),
	    TEST(test_a_context_naming_no_cluster_or_no_user_is_refused),
	    TEST(test_a_cluster_without_server_is_refused),
	    TEST(test_a_kubeconfig_with_an_exec_user_is_refused_naming_it),
	    TEST(test_a_kubeconfig_with_an_auth_provider_user_is_refused_naming_it),
	    TEST(test_bad_base64_is_refused_naming_the_field),
	    TEST(test_a_missing_ca_file_is_refused_naming_the_field_and_the_file),
	    TEST(test_a_missing_kubeconfig_is_refused_naming_it),
	    TEST(test_hostile_and_inconsistent_files_are_refused_naming_the_field),
	    TEST(test_a_refusal_never_quotes_a_token_or_a_key),
	    TEST(test_a_kubeconfig_over_one_mebibyte_is_refused),
	    TEST(test_a_field_longer_than_its_buffer_is_refused),
	    TEST(test_deep_nesting_and_binary_garbage_are_refused_without_a_crash),
	    TEST(test_brackets_in_strings_comments_and_ipv6_servers_are_not_nesting),
	    TEST(test_in_cluster_reads_the_service_account_and_the_environment),
	    TEST(test_in_cluster_brackets_an_ipv6_service_host),
	    TEST(test_in_cluster_without_a_usable_ca_uses_the_system_roots_as_client_go),
	    TEST(test_in_cluster_without_a_token_or_the_variables_is_refused),
	    TEST(test_in_cluster_refuses_a_malformed_host_port_or_namespace),
	    TEST(test_a_rewritten_token_file_is_read_again),
	    TEST(test_a_removed_token_file_keeps_the_last_token_and_fails),
	    TEST(test_a_missing_token_file_is_refused_at_load_naming_the_field),
	    TEST(test_a_token_that_does_not_fit_the_caller_buffer_is_refused),
	    TEST(test_token_reads_are_whole_while_the_file_rotates),
	    TEST(test_resolve_prefers_flag_then_in_cluster_then_kubeconfig_then_home),
	    TEST(test_resolve_falls_back_from_a_failed_in_cluster_as_client_go),
	    TEST(test_a_kubeconfig_list_merges_with_the_first_file_winning),
	    TEST(test_release_accepts_null_and_a_zeroed_config_and_wipes_the_token),
	};
	/* The fixtures sit beside this file; __FILE__ is the path the
	 * Makefile compiled it by, relative to the repository root that
	 * `make test` runs the tests from. */
	const char *slash = strrchr(__FILE__, '/');

	snprintf(fixtures, sizeof(fixtures), "%.*s/fixtures/kubeconfig",
	         slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".");
	if (getcwd(cwd, sizeof(cwd)) == NULL) {
		perror("getcwd");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
