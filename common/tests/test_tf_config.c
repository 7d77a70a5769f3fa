/* test_tf_config.c - TF_CONFIG parsing, validation messages, ranks and the
 * TF_CONFIG the operator writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "tf_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Test documents write ' for ", which json_text() swaps back. */
#define W0 "{'type': 'worker', 'index': 0}"
#define W3 "{'cluster': {'worker': ['w0:2222', 'w1:2222', 'w2:2222']}, 'task': "

/* A malloc'd copy of s with every ' turned into ". */
static char *json_text(const char *s)
{
	char *t = strdup(s);

	assert_non_null(t);
	for (char *p = t; *p != '\0'; p++) {
		if (*p == '\'')
			*p = '"';
	}
	return t;
}

static void parse_ok(struct tf_config *c, const char *quoted)
{
	char *text = json_text(quoted);
	char err[ERR_LEN] = "";

	if (tf_config_parse(c, text, strlen(text), err) != 0)
		fail_msg("parse '%.200s': %s", text, err);
	free(text);
}

/* Asserts a refusal: -1, the message prefix, the expected part, c zeroed. */
static void assert_refused(const char *text, size_t len, const char *want)
{
	struct tf_config c;
	char err[ERR_LEN] = "";
	int rc;

	memset(&c, 0x5a, sizeof(c));
	rc = tf_config_parse(&c, text, len, err);
	if (rc != -1 || strncmp(err, "TF_CONFIG: ", 11) != 0 || strstr(err, want) == NULL)
		fail_msg("'%.200s': rc %d, err '%s', want '%s'", text, rc, err, want);
	assert_null(c.addrs);
	assert_int_equal(c.world, 0);
	assert_true(strlen(err) < ERR_LEN);
}

/* Fails the test, showing both, unless s contains part. */
static void assert_contains(const char *s, const char *part)
{
	if (strstr(s, part) == NULL)
		fail_msg("'%s' does not contain '%s'", s, part);
}

/* Every rank's address, as tf_address_format() writes it, space-separated. */
static void join_addrs(const struct tf_config *c, char *out, size_t n)
{
	size_t len = 0;

	out[0] = '\0';
	for (int r = 0; r < c->world && len + 1 < n; r++) {
		if (r > 0)
			out[len++] = ' ';
		tf_address_format(&c->addrs[r], out + len, n - len);
		len += strlen(out + len);
	}
}

#define CW "{'cluster': {'worker': ['w0:2', 'w1:3'], 'chief': ['c0:1']}, 'task': "

static void test_tf_config_parse_accepts_good_configs_in_rank_order(void **state)
{
	static const struct {
		const char *text;
		int world, rank, has_chief;
		const char *addrs; /* in rank order */
	} cases[] = {
	    {W3 "{'type': 'worker', 'index': 0}}", 3, 0, 0, "w0:2222 w1:2222 w2:2222"},
	    {W3 "{'type': 'worker', 'index': 1}}", 3, 1, 0, "w0:2222 w1:2222 w2:2222"},
	    {W3 "{'type': 'worker', 'index': 2}}", 3, 2, 0, "w0:2222 w1:2222 w2:2222"},
	    /* The chief is rank 0, whatever the key order; workers follow. */
	    {CW "{'type': 'chief', 'index': 0}}", 3, 0, 1, "c0:1 w0:2 w1:3"},
	    {CW "{'type': 'worker', 'index': 0}}", 3, 1, 1, "c0:1 w0:2 w1:3"},
	    {CW "{'type': 'worker', 'index': 1}}", 3, 2, 1, "c0:1 w0:2 w1:3"},
	    {"{'cluster': {'chief': ['c:1']}, 'task': {'type': 'chief', 'index': 0}}", 1, 0, 1,
	     "c:1"},
	    {"{'cluster': {'worker': ['host_1.example-2.svc:1']}, 'task': " W0 "}", 1, 0, 0,
	     "host_1.example-2.svc:1"},
	    /* Hosts are kept without their brackets, so they format back. */
	    {"{'cluster': {'worker': ['[::1]:2222', '[FE80::1:2]:1', '[::ffff:10.0.0.1]:65535']}, "
	     "'task': " W0 "}",
	     3, 0, 0, "[::1]:2222 [FE80::1:2]:1 [::ffff:10.0.0.1]:65535"},
	    /* TensorFlow's other keys are ignored; so are empty ps lists. */
	    {"{'environment': 'cloud', 'rpc_layer': 'grpc', 'cluster': {'ps': [], "
	     "'worker': ['w0:1', 'w0:02'], 'evaluator': []}, "
	     "'task': {'type': 'worker', 'index': 1, 'trial': '7'}}",
	     2, 1, 0, "w0:1 w0:2"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		int chief = cases[i].has_chief && cases[i].rank == 0;
		struct tf_config c;
		char addrs[256];

		parse_ok(&c, cases[i].text);
		join_addrs(&c, addrs, sizeof(addrs));
		if (c.world != cases[i].world || c.rank != cases[i].rank ||
		    c.has_chief_task != cases[i].has_chief || strcmp(addrs, cases[i].addrs) != 0)
			fail_msg("%s: world %d, rank %d, chief %d, addrs '%s'", cases[i].text,
			         c.world, c.rank, c.has_chief_task, addrs);
		assert_string_equal(c.task_type, chief ? "chief" : "worker");
		assert_int_equal(c.task_index, chief ? 0 : c.rank - c.has_chief_task);
		tf_config_release(&c);
	}
}

static void test_tf_config_parse_reads_only_len_bytes(void **state)
{
	char *text = json_text(W3 W0 "}garbage");
	struct tf_config c;
	char err[ERR_LEN] = "";

	(void)state;
	assert_int_equal(tf_config_parse(&c, text, strlen(text) - 7, err), 0);
	assert_int_equal(c.world, 3);
	tf_config_release(&c);
	assert_refused(text, strlen(text), "invalid JSON near byte");
	free(text);
}

static void test_tf_config_parse_rejects_malformed_documents(void **state)
{
	static const struct {
		const char *text;
		const char *msg;
	} cases[] = {
	    {"{'cluster': {}", "TF_CONFIG: invalid JSON near byte 13"},
	    {"", "TF_CONFIG: invalid JSON near byte 0"},
	    {"[1]", "TF_CONFIG: top-level value must be an object"},
	    {"{'task': " W0 "}", "TF_CONFIG: 'cluster' is missing"},
	    {"{'cluster': [], 'task': " W0 "}", "TF_CONFIG: 'cluster' must be an object"},
	    {"{'cluster': {'worker': ['a:1']}}", "TF_CONFIG: 'task' is missing"},
	    {W3 "1}", "TF_CONFIG: 'task' must be an object"},
	    {W3 W0 ", 'task': " W0 "}", "TF_CONFIG: 'task' appears twice"},
	    {W3 W0 ", 'cluster': {}}", "TF_CONFIG: 'cluster' appears twice"},
	    /* cJSON would cut the string at the NUL and read 'w0:1'. */
	    {"{'cluster': {'worker': ['w0:1\\u0000x']}, 'task': " W0 "}",
	     "TF_CONFIG: '\\u0000' near byte 29: strings must not contain NUL"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char *text = json_text(cases[i].text);

		assert_refused(text, strlen(text), cases[i].msg);
		free(text);
	}
}

/* Asserts that {'cluster': {cluster}, 'task': {task}} is refused with msg. */
static void assert_cluster_refused(const char *cluster, const char *task, const char *msg)
{
	char quoted[1024];
	char *text;

	snprintf(quoted, sizeof(quoted), "{'cluster': {%s}, 'task': {%s}}", cluster, task);
	text = json_text(quoted);
	assert_refused(text, strlen(text), msg);
	free(text);
}

#define A1 "'worker': ['a:1']"

static void test_tf_config_parse_names_the_bad_cluster_or_task(void **state)
{
	static const struct {
		const char *cluster, *task, *msg;
	} cases[] = {
	    {A1, "'index': 0", "'task.type' is missing"},
	    {A1, "'type': 1, 'index': 0", "'task.type' must be a string"},
	    {A1, "'type': 'worker'", "'task.index' is missing"},
	    {A1, "'type': 'worker', 'index': 0.5", "'task.index' must be an integer"},
	    {A1, "'type': 'worker', 'index': '0'", "'task.index' must be an integer"},
	    {A1, "'type': 'worker', 'type': 'chief', 'index': 0", "'task.type' appears twice"},
	    {A1, "'type': 'master', 'index': 0", "'task.type' is 'master': expected 'chief' or "},
	    {A1, "'type': 'chief', 'index': 0", "'task.type' is 'chief' but 'cluster.chief' lists"},
	    {A1 ", 'ps': []", "'type': 'ps', 'index': 0",
	     "'task.type' is 'ps': 'ps' tasks are not supported: mwj trains synchronously"},
	    {A1, "'type': 'evaluator', 'index': 0",
	     "'task.type' is 'evaluator': 'evaluator' tasks are not supported: run evaluation"},
	    {"'worker': ['a:1', 'b:1', 'c:1']", "'type': 'worker', 'index': 3",
	     "'task.index' is 3, out of range [0, 2] for the 3 'worker' tasks in 'cluster.worker'"},
	    {"'worker': ['a:1', 'b:1', 'c:1']", "'type': 'worker', 'index': -1",
	     "'task.index' is -1, out of range [0, 2]"},
	    {"'chief': ['c:1'], " A1, "'type': 'chief', 'index': 1",
	     "'task.index' is 1, out of range [0, 0] for the 1 'chief' task in 'cluster.chief'"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++)
		assert_cluster_refused(cases[i].cluster, cases[i].task, cases[i].msg);
}

static void test_tf_config_parse_names_the_bad_cluster_entry(void **state)
{
	static const struct {
		const char *cluster, *msg;
	} cases[] = {
	    {"'master': ['a:1']", "'cluster' has an unknown task type 'master' (expected"},
	    {"'Worker': ['a:1']", "'cluster' has an unknown task type 'Worker'"},
	    {A1 ", 'worker': ['b:1']", "'cluster.worker' appears twice"},
	    {A1 ", 'ps': ['p:1']",
	     "'cluster.ps' is not empty: 'ps' tasks are not supported: mwj trains synchronously "
	     "like MultiWorkerMirroredStrategy, without parameter servers"},
	    {A1 ", 'evaluator': ['e:1']",
	     "'cluster.evaluator' is not empty: 'evaluator' tasks are not supported: run "
	     "evaluation with 'mwj-worker evaluate'"},
	    {A1 ", 'ps': 'p:1'", "'cluster.ps' must be an array"},
	    {"'worker': 'a:1'", "'cluster.worker' must be an array of 'host:port' strings"},
	    {"'chief': {'0': 'a:1'}", "'cluster.chief' must be an array"},
	    {"'chief': ['a:1', 'b:1']", "'cluster.chief' has 2 entries: there can be only one"},
	    {"", "'cluster' has no 'chief' or 'worker' tasks"},
	    {"'worker': [], 'chief': [], 'ps': []", "'cluster' has no 'chief' or 'worker' tasks"},
	    {"'worker': ['a:1', 2]", "'cluster.worker[1]' must be a 'host:port' string"},
	    {"'worker': [null]", "'cluster.worker[0]' must be a 'host:port' string"},
	    {"'worker': ['w0']", "'cluster.worker[0]': 'w0' has no port (expected 'host:port')"},
	    {"'worker': [':2222']", "'cluster.worker[0]': empty host in ':2222'"},
	    {"'worker': ['w0:1', 'w1:1', 'w2:99999']",
	     "'cluster.worker[2]': bad port in 'w2:99999': '99999' is out of range [1, 65535]"},
	    {"'chief': ['c:0']", "'cluster.chief[0]': bad port in 'c:0': '0' is out of range"},
	    {"'worker': ['w0:+80']", "bad port in 'w0:+80': '+80' is not a whole number"},
	    {"'worker': ['w0: 80']", "bad port in 'w0: 80': ' 80' is not a whole number"},
	    {"'worker': ['w0:80x']", "bad port in 'w0:80x': '80x' is not a whole number"},
	    {"'worker': ['w0:']", "bad port in 'w0:': '' is not a whole number"},
	    {"'worker': ['w 0:1']", "bad character ' ' in host of 'w 0:1': a host has letters"},
	    {"'worker': ['w\xc3\xb6rker:1']", "bad character 0xc3 in host of 'w??rker:1'"},
	    {"'worker': ['w\\n0:1']", "bad character 0x0a in host of 'w?0:1'"},
	    {"'worker': ['::1:2222']",
	     "'::1:2222' has more than one ':' (an IPv6 host goes in brackets: '[::1]:2222')"},
	    {"'worker': ['[::1']", "'cluster.worker[0]': missing ']' in '[::1'"},
	    {"'worker': ['[::1]']", "'[::1]' has no port (expected '[host]:port')"},
	    {"'worker': ['[::1]2222']", "'[::1]2222' has no port"},
	    {"'worker': ['[]:1']", "empty host in '[]:1'"},
	    {"'worker': ['[abc]:1']", "'[abc]:1' is not an IPv6 address in brackets"},
	    {"'worker': ['[::g]:1']",
	     "bad character 'g' in host of '[::g]:1': an IPv6 host has hex digits, ':' and '.'"},
	    {"'worker': ['w0:1', 'W0:1']",
	     "'cluster.worker[0]' ('w0:1') and 'cluster.worker[1]' ('W0:1') are the same address"},
	    {"'chief': ['c:1'], 'worker': ['a:1', 'b:1', 'c:1', 'a:1']",
	     "'cluster.chief[0]' ('c:1') and 'cluster.worker[2]' ('c:1') are the same address"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++)
		assert_cluster_refused(cases[i].cluster, "'type': 'worker', 'index': 0",
		                       cases[i].msg);
}

/* A malloc'd TF_CONFIG for the last of n workers "w<k>:2222", where the last
 * one repeats worker dup if dup >= 0. */
static char *big_config(int n, int dup)
{
	size_t cap = (size_t)n * 32 + 128;
	char *quoted = malloc(cap);
	size_t len;
	char *text;

	assert_non_null(quoted);
	len = (size_t)snprintf(quoted, cap, "{'cluster': {'worker': [");
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(quoted + len, cap - len, "%s'w%d:2222'", i ? ", " : "",
		                        i == n - 1 && dup >= 0 ? dup : i);
	snprintf(quoted + len, cap - len, "]}, 'task': {'type': 'worker', 'index': %d}}", n - 1);
	text = json_text(quoted);
	free(quoted);
	return text;
}

static void test_tf_config_parse_caps_the_world_size(void **state)
{
	char *text = big_config(TF_CONFIG_MAX_WORKERS, -1);
	struct tf_config c;

	(void)state;
	parse_ok(&c, text);
	assert_int_equal(c.world, TF_CONFIG_MAX_WORKERS);
	assert_int_equal(c.rank, TF_CONFIG_MAX_WORKERS - 1);
	assert_string_equal(c.addrs[4095].host, "w4095");
	tf_config_release(&c);
	free(text);
	text = big_config(TF_CONFIG_MAX_WORKERS + 1, -1);
	assert_refused(text, strlen(text),
	               "'cluster' has 0 chief and 4097 worker tasks, more than the limit of 4096");
	free(text);
}

static void test_tf_config_parse_finds_a_duplicate_among_4096_workers(void **state)
{
	char *text = big_config(TF_CONFIG_MAX_WORKERS, 2000);

	(void)state;
	assert_refused(text, strlen(text),
	               "TF_CONFIG: 'cluster.worker[2000]' ('w2000:2222') and "
	               "'cluster.worker[4095]' ('w2000:2222') are the same address");
	free(text);
}

static void test_tf_config_parse_survives_hostile_input(void **state)
{
	/* {'cluster': {'worker': ['<prefix><n x fill><suffix>']}, 'task': W0} */
	static const struct {
		const char *prefix;
		char fill;
		size_t n;
		const char *suffix, *msg;
	} cases[] = {
	    {"", 'a', 254, ":1", "a:1' is longer than 253 characters"},
	    {"", 'a', 1 << 20, ":1", "aaa...' is longer than 253 characters"},
	    {"[", ':', 1 << 20, "]:1", ":::...' is longer than 253 characters"},
	    {"w0:", '9', 1 << 20, "", "bad port in 'w0:999"},
	    {"w0:1", '\x7f', 1 << 20, "", "bad port in 'w0:1???"},
	};
	static const char nul[] = "{\"cluster\": {\"worker\": [\"a:1\"]}, \"task\": {\"type\": "
	                          "\"wor\0ker\", \"index\": 0}}";
	const size_t big = 1 << 20;
	char host[TF_CONFIG_HOST_LEN];
	char doc[512];
	struct tf_config c;
	char *deep;

	(void)state;
	/* The longest DNS name is accepted; one more character is refused below. */
	memset(host, 'a', TF_CONFIG_HOST_LEN - 1);
	host[TF_CONFIG_HOST_LEN - 1] = '\0';
	snprintf(doc, sizeof(doc), "{'cluster': {'worker': ['%s:1']}, 'task': " W0 "}", host);
	parse_ok(&c, doc);
	assert_string_equal(c.addrs[0].host, host);
	tf_config_release(&c);
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		size_t cap = cases[i].n + 128;
		char *quoted = malloc(cap);
		int len;
		char *text;

		assert_non_null(quoted);
		len = snprintf(quoted, cap, "{'cluster': {'worker': ['%s", cases[i].prefix);
		memset(quoted + len, cases[i].fill, cases[i].n);
		snprintf(quoted + len + cases[i].n, cap - len - cases[i].n,
		         "%s']}, 'task': " W0 "}", cases[i].suffix);
		text = json_text(quoted);
		assert_refused(text, strlen(text), cases[i].msg);
		free(text);
		free(quoted);
	}
	assert_refused(nul, sizeof(nul) - 1, "invalid JSON near byte");
	/* Deep nesting: cJSON stops at its nesting limit. */
	deep = malloc(2 * big);
	assert_non_null(deep);
	memset(deep, '[', big);
	memset(deep + big, ']', big);
	assert_refused(deep, 2 * big, "invalid JSON near byte");
	free(deep);
}

static void test_tf_config_format_round_trips_through_parse(void **state)
{
	static const char *const workers[] = {"w0:2222", "[::1]:2223", "host-2.ns.svc:1"};
	char err[ERR_LEN] = "";
	char *text;

	(void)state;
	text = tf_config_format(workers, 3, 2, err);
	assert_non_null(text);
	assert_string_equal(text,
	                    "{\"cluster\":{\"worker\":[\"w0:2222\",\"[::1]:2223\","
	                    "\"host-2.ns.svc:1\"]},\"task\":{\"type\":\"worker\",\"index\":2}}");
	free(text);
	for (int i = 0; i < 3; i++) {
		struct tf_config c;
		char addrs[128];

		text = tf_config_format(workers, 3, i, err);
		assert_non_null(text);
		parse_ok(&c, text);
		join_addrs(&c, addrs, sizeof(addrs));
		assert_string_equal(addrs, "w0:2222 [::1]:2223 host-2.ns.svc:1");
		assert_int_equal(c.rank, i);
		assert_int_equal(c.has_chief_task, 0);
		assert_string_equal(c.task_type, "worker");
		tf_config_release(&c);
		free(text);
	}
}

static void test_tf_config_format_refuses_what_a_worker_would_refuse(void **state)
{
	static const char *const bad[] = {"w0:1", "w1"};
	static const char *const dup[] = {"w0:1", "W0:1"};
	static const char *const missing[] = {"w0:1", NULL};
	char err[ERR_LEN] = "";

	(void)state;
	assert_null(tf_config_format(bad, 2, 0, err));
	assert_string_equal(err, "TF_CONFIG: 'cluster.worker[1]': 'w1' has no port (expected "
	                         "'host:port')");
	assert_null(tf_config_format(dup, 2, 0, err));
	assert_non_null(strstr(err, "are the same address"));
	assert_null(tf_config_format(missing, 2, 0, err));
	assert_string_equal(err, "TF_CONFIG: 'cluster.worker[1]' is missing");
	assert_null(tf_config_format(bad, 1, 1, err));
	assert_string_equal(err, "TF_CONFIG: 'task.index' is 1, out of range [0, 0] for the 1 "
	                         "'worker' task in 'cluster.worker'");
	assert_null(tf_config_format(bad, 0, 0, err));
	assert_string_equal(err, "TF_CONFIG: 'cluster' has no 'chief' or 'worker' tasks");
	assert_null(tf_config_format(NULL, 1, 0, err));
	assert_string_equal(err, "TF_CONFIG: no list of 1 workers");
}

static void test_tf_config_from_env_reads_the_environment(void **state)
{
	char *text = json_text(W3 "{'type': 'worker', 'index': 2}}");
	struct tf_config c;
	char err[ERR_LEN] = "";

	(void)state;
	assert_int_equal(setenv("TF_CONFIG", text, 1), 0);
	free(text);
	assert_int_equal(tf_config_from_env(&c, err), 0);
	assert_int_equal(c.world, 3);
	assert_int_equal(c.rank, 2);
	tf_config_release(&c);
	assert_int_equal(setenv("TF_CONFIG", "{\"cluster\": {}}", 1), 0);
	assert_int_equal(tf_config_from_env(&c, err), -1);
	assert_string_equal(err, "TF_CONFIG: 'task' is missing");
	assert_null(c.addrs);
	unsetenv("TF_CONFIG");
}

static void test_tf_config_from_env_defaults_to_one_local_worker(void **state)
{
	static const char *const values[] = {NULL, ""};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(values); i++) {
		struct tf_config c;
		char err[ERR_LEN] = "";

		if (values[i] == NULL)
			unsetenv("TF_CONFIG");
		else
			setenv("TF_CONFIG", values[i], 1);
		assert_int_equal(tf_config_from_env(&c, err), 0);
		assert_int_equal(c.world, 1);
		assert_int_equal(c.rank, 0);
		assert_int_equal(c.has_chief_task, 0);
		assert_string_equal(c.task_type, "worker");
		assert_int_equal(c.task_index, 0);
		assert_string_equal(c.addrs[0].host, "localhost");
		assert_int_equal(c.addrs[0].port, 0);
		tf_config_release(&c);
	}
	unsetenv("TF_CONFIG");
}

/* --- The cluster in a file: MWJ_TF_CONFIG_FILE --- */

/* The longest names a MultiWorkerJob allows: a job name of 51 characters
 * (so that "<job>-worker-4095" is a 63-character DNS label) in a namespace
 * of 63, each worker at "<job>-worker-<i>.<job>.<ns>.svc:<5 digits>". */
#define LONG_JOB "j123456789-123456789-123456789-123456789-1234567890"
#define LONG_NS  "n123456789-123456789-123456789-123456789-123456789-123456789-12"

/* A malloc'd cluster of n workers with the longest names, with a task of
 * worker index, or none for index < 0. */
static char *long_names_config(int n, int index)
{
	size_t cap = (size_t)n * 200 + 128, len;
	char *text = malloc(cap);

	assert_int_equal(strlen(LONG_JOB), 51);
	assert_int_equal(strlen(LONG_NS), 63);
	assert_non_null(text);
	len = (size_t)snprintf(text, cap, "{\"cluster\":{\"worker\":[");
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, cap - len,
		                        "%s\"" LONG_JOB "-worker-%d." LONG_JOB "." LONG_NS
		                        ".svc:65535\"",
		                        i ? "," : "", i);
	if (index >= 0)
		snprintf(text + len, cap - len, "]},\"task\":{\"type\":\"worker\",\"index\":%d}}",
		         index);
	else
		snprintf(text + len, cap - len, "]}}");
	return text;
}

static void test_tf_config_parse_takes_4096_workers_with_the_longest_names(void **state)
{
	char *text = long_names_config(TF_CONFIG_MAX_WORKERS, 4095);
	struct tf_config c;
	char err[ERR_LEN] = "";

	(void)state;
	/* Past what one environment variable may hold (128 KiB), by far. */
	assert_true(strlen(text) > 750000);
	if (tf_config_parse(&c, text, strlen(text), err) != 0)
		fail_msg("%s", err);
	assert_int_equal(c.world, TF_CONFIG_MAX_WORKERS);
	assert_int_equal(c.rank, 4095);
	assert_string_equal(c.addrs[4095].host,
	                    LONG_JOB "-worker-4095." LONG_JOB "." LONG_NS ".svc");
	assert_int_equal(c.addrs[4095].port, 65535);
	tf_config_release(&c);
	free(text);
}

/* A scratch file for one test: its path, removed by remove_file(). */
static char *write_file(const char *text, size_t len)
{
	char *path = strdup("/tmp/mwj-test-tf-config-XXXXXX");
	int fd;

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
	return path;
}

static void remove_file(char *path)
{
	unlink(path);
	free(path);
}

/* The environment tf_config_from_env reads, set for one case: NULL unsets. */
static void set_env(const char *tf_config, const char *file, const char *index)
{
	const char *names[] = {"TF_CONFIG", "MWJ_TF_CONFIG_FILE", "MWJ_WORKER_INDEX"};
	const char *values[] = {tf_config, file, index};

	for (size_t i = 0; i < ARRAY_LEN(names); i++) {
		if (values[i] == NULL)
			assert_int_equal(unsetenv(names[i]), 0);
		else
			assert_int_equal(setenv(names[i], values[i], 1), 0);
	}
}

/* tf_config_from_env succeeds, for a world of world with this task as rank. */
static void assert_env_gives(int world, int rank)
{
	struct tf_config c;
	char err[ERR_LEN] = "";

	if (tf_config_from_env(&c, err) != 0)
		fail_msg("%s", err);
	assert_int_equal(c.world, world);
	assert_int_equal(c.rank, rank);
	assert_string_equal(c.task_type, "worker");
	assert_int_equal(c.task_index, rank);
	tf_config_release(&c);
}

/* tf_config_from_env fails with c zeroed and a message holding each part. */
static void assert_env_refused(const char *part1, const char *part2)
{
	struct tf_config c;
	char err[ERR_LEN] = "";

	memset(&c, 0x5a, sizeof(c));
	assert_int_equal(tf_config_from_env(&c, err), -1);
	print_message("    %s\n", err);
	assert_null(c.addrs);
	assert_int_equal(c.world, 0);
	assert_contains(err, part1);
	if (part2)
		assert_contains(err, part2);
}

static void test_tf_config_from_env_reads_the_cluster_file_when_tf_config_is_unset(void **state)
{
	char *text = long_names_config(TF_CONFIG_MAX_WORKERS, -1);
	char *path = write_file(text, strlen(text));
	char *with_task = json_text(W3 "{'type': 'worker', 'index': 1}}");
	char *path_task = write_file(with_task, strlen(with_task));

	(void)state;
	/* No task in the file: MWJ_WORKER_INDEX stands for it. */
	set_env(NULL, path, "4095");
	assert_env_gives(TF_CONFIG_MAX_WORKERS, 4095);
	set_env("", path, "17");
	assert_env_gives(TF_CONFIG_MAX_WORKERS, 17);
	/* A task in the file is the task. */
	set_env(NULL, path_task, NULL);
	assert_env_gives(3, 1);
	set_env(NULL, NULL, NULL);
	remove_file(path);
	remove_file(path_task);
	free(text);
	free(with_task);
}

static void test_tf_config_from_env_refuses_a_cluster_file_that_names_no_task(void **state)
{
	char *text = json_text("{'cluster': {'worker': ['w0:2222', 'w1:2222', 'w2:2222']}}");
	char *path = write_file(text, strlen(text));
	char want[128];

	(void)state;
	snprintf(want, sizeof(want), "MWJ_TF_CONFIG_FILE '%s': ", path);
	set_env(NULL, path, NULL);
	assert_env_refused(want, "'task' is missing, and so is MWJ_WORKER_INDEX");
	set_env(NULL, path, "3");
	assert_env_refused(want, "'task.index' is 3, out of range [0, 2]");
	set_env(NULL, path, "-1");
	assert_env_refused("MWJ_WORKER_INDEX: '-1' is not a whole number", NULL);
	set_env(NULL, "/nonexistent/tf-config.json", "x");
	assert_env_refused("MWJ_WORKER_INDEX: 'x' is not a whole number", NULL);
	set_env(NULL, path, "1x");
	assert_env_refused("MWJ_WORKER_INDEX: '1x' is not a whole number", NULL);
	set_env(NULL, path, "4096");
	assert_env_refused("MWJ_WORKER_INDEX: ", "out of range");
	set_env(NULL, NULL, NULL);
	remove_file(path);
	free(text);
}

static void test_tf_config_from_env_refuses_a_cluster_file_too_big_or_missing(void **state)
{
	size_t len = TF_CONFIG_FILE_MAX_BYTES + 1;
	char *big = malloc(len), *path;
	char want[128];

	(void)state;
	assert_non_null(big);
	/* Valid JSON in all but its size: a cluster padded with blanks. */
	memset(big, ' ', len);
	memcpy(big, "{\"cluster\":{\"worker\":[\"w0:1\"]}}", 30);
	path = write_file(big, len);
	snprintf(want, sizeof(want), "MWJ_TF_CONFIG_FILE '%s': ", path);
	set_env(NULL, path, "0");
	assert_env_refused(want, "more than the limit of 4194304");
	remove_file(path);
	set_env(NULL, "/nonexistent/tf-config.json", "0");
	assert_env_refused("MWJ_TF_CONFIG_FILE '/nonexistent/tf-config.json': ",
	                   "No such file or directory");
	set_env(NULL, NULL, NULL);
	free(big);
}

static void
test_tf_config_from_env_prefers_tf_config_and_refuses_a_file_that_disagrees(void **state)
{
	char *env = json_text(W3 "{'type': 'worker', 'index': 2}}");
	char *same = json_text("{'cluster': {'worker': ['w0:2222', 'w1:2222', 'w2:2222']}}");
	char *other = json_text("{'cluster': {'worker': ['w0:2222', 'x1:2222', 'w2:2222']}}");
	char *fewer = json_text("{'cluster': {'worker': ['w0:2222', 'w1:2222']}}");
	char *path_same = write_file(same, strlen(same));
	char *path_other = write_file(other, strlen(other));
	char *path_fewer = write_file(fewer, strlen(fewer));

	(void)state;
	set_env(env, NULL, NULL);
	assert_env_gives(3, 2);
	set_env(env, path_same, "2");
	assert_env_gives(3, 2);
	set_env(env, path_other, "2");
	assert_env_refused("TF_CONFIG and MWJ_TF_CONFIG_FILE '",
	                   "disagree: 'cluster.worker[1]' is 'w1:2222' in TF_CONFIG, 'x1:2222' in "
	                   "the file");
	set_env(env, path_same, "1");
	assert_env_refused("TF_CONFIG and MWJ_TF_CONFIG_FILE",
	                   "the task is worker 2 in TF_CONFIG, worker 1 by the file");
	set_env(env, path_fewer, "1");
	assert_env_refused("TF_CONFIG and MWJ_TF_CONFIG_FILE",
	                   "TF_CONFIG has 3 tasks (0 chief), the file 2 (0 chief)");
	/* A file that cannot be read is refused even beside a good TF_CONFIG. */
	set_env(env, "/nonexistent/tf-config.json", "2");
	assert_env_refused("MWJ_TF_CONFIG_FILE '/nonexistent/tf-config.json'", NULL);
	set_env(NULL, NULL, NULL);
	remove_file(path_same);
	remove_file(path_other);
	remove_file(path_fewer);
	free(env);
	free(same);
	free(other);
	free(fewer);
}

static void test_tf_config_release_accepts_zeroed_and_released_structs(void **state)
{
	struct tf_config c = {0};

	(void)state;
	tf_config_release(&c);
	tf_config_release(NULL);
	parse_ok(&c, W3 W0 "}");
	tf_config_release(&c);
	assert_null(c.addrs);
	assert_int_equal(c.world, 0);
	tf_config_release(&c);
}

static void test_tf_address_format_brackets_ipv6_and_stays_in_bounds(void **state)
{
	struct tf_address name = {"w0.svc", 2222};
	struct tf_address v6 = {"fe80::1", 1};
	char out[32];

	(void)state;
	tf_address_format(&name, out, sizeof(out));
	assert_string_equal(out, "w0.svc:2222");
	tf_address_format(&v6, out, sizeof(out));
	assert_string_equal(out, "[fe80::1]:1");
	memset(out, 'x', sizeof(out));
	tf_address_format(&name, out, 5);
	assert_string_equal(out, "w0.s");
	assert_int_equal(out[5], 'x');
	tf_address_format(&name, out, 0);
	assert_int_equal(out[0], 'w');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tf_config_parse_accepts_good_configs_in_rank_order),
	    cmocka_unit_test(test_tf_config_parse_reads_only_len_bytes),
	    cmocka_unit_test(test_tf_config_parse_rejects_malformed_documents),
	    cmocka_unit_test(test_tf_config_parse_names_the_bad_cluster_or_task),
	    cmocka_unit_test(test_tf_config_parse_names_the_bad_cluster_entry),
	    cmocka_unit_test(test_tf_config_parse_caps_the_world_size),
	    cmocka_unit_test(test_tf_config_parse_finds_a_duplicate_among_4096_workers),
	    cmocka_unit_test(test_tf_config_parse_survives_hostile_input),
	    cmocka_unit_test(test_tf_config_format_round_trips_through_parse),
	    cmocka_unit_test(test_tf_config_format_refuses_what_a_worker_would_refuse),
	    cmocka_unit_test(test_tf_config_from_env_reads_the_environment),
	    cmocka_unit_test(test_tf_config_from_env_defaults_to_one_local_worker),
	    cmocka_unit_test(test_tf_config_parse_takes_4096_workers_with_the_longest_names),
	    cmocka_unit_test(
	        test_tf_config_from_env_reads_the_cluster_file_when_tf_config_is_unset),
	    cmocka_unit_test(test_tf_config_from_env_refuses_a_cluster_file_that_names_no_task),
	    cmocka_unit_test(test_tf_config_from_env_refuses_a_cluster_file_too_big_or_missing),
	    cmocka_unit_test(
	        test_tf_config_from_env_prefers_tf_config_and_refuses_a_file_that_disagrees),
	    cmocka_unit_test(test_tf_config_release_accepts_zeroed_and_released_structs),
	    cmocka_unit_test(test_tf_address_format_brackets_ipv6_and_stays_in_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
