/* test_json.c - parsing with error offsets and typed member getters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "json.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static cJSON *parse_ok(const char *text)
{
	char err[ERR_LEN] = "";
	cJSON *root = json_parse(text, strlen(text), err);

	if (root == NULL)
		fail_msg("parse '%s': %s", text, err);
	return root;
}

static void test_json_parse_reads_only_len_bytes(void **state)
{
	/* Not NUL-terminated where the document ends: the rest is another
	 * message in the same buffer. */
	const char buf[] = {'{', '"', 'a', '"', ':', '1', '}', 'X', 'Y'};
	char err[ERR_LEN] = "";
	cJSON *root = json_parse(buf, 7, err);
	int64_t a = 0;

	(void)state;
	assert_non_null(root);
	assert_int_equal(json_get_i64(root, "", "a", 0, 10, &a, err), 0);
	assert_int_equal(a, 1);
	cJSON_Delete(root);
}

static void test_json_parse_reports_byte_offset_of_error(void **state)
{
	static const struct {
		const char *text;
		const char *msg;
	} cases[] = {
	    {"{\"a\": tru}", "invalid JSON near byte 6"},      {"", "invalid JSON near byte 0"},
	    {"{\"a\":1} x", "invalid JSON near byte 8"}, /* trailing garbage */
	    {"{\"a\":1}\n\n}", "invalid JSON near byte 9"},    {"[1,2", "invalid JSON near byte 3"},
	    {"{\"a\":\"b\"\n,}", "invalid JSON near byte 10"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char err[ERR_LEN] = "";
		cJSON *root = json_parse(cases[i].text, strlen(cases[i].text), err);

		if (root != NULL || strcmp(err, cases[i].msg) != 0)
			fail_msg("'%s': got '%s', want '%s'", cases[i].text, err, cases[i].msg);
	}
}

static void test_json_parse_accepts_surrounding_whitespace(void **state)
{
	cJSON *root = parse_ok(" \n\t{\"a\": [1, 2]}\r\n ");

	(void)state;
	assert_true(cJSON_IsObject(root));
	cJSON_Delete(root);
}

static void test_json_parse_rejects_embedded_nul_byte(void **state)
{
	/* cJSON would silently cut the string at the NUL. */
	const char buf[] = "{\"a\":\"x\0y\"}";
	char err[ERR_LEN] = "";

	(void)state;
	assert_null(json_parse(buf, sizeof(buf) - 1, err));
	assert_string_equal(err, "invalid JSON near byte 7");
}

struct i64_case {
	const char *json;
	int64_t min, max;
	int64_t want;
	const char *msg;
};

static void run_i64_cases(const char *path, const struct i64_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct i64_case *c = &cases[i];
		cJSON *root = parse_ok(c->json);
		char err[ERR_LEN] = "";
		int64_t out = 777;
		int rc = json_get_i64(root, path, "index", c->min, c->max, &out, err);

		cJSON_Delete(root);
		if (c->msg == NULL && (rc != 0 || out != c->want))
			fail_msg("%s: rc %d, out %" PRId64 ", err '%s'", c->json, rc, out, err);
		if (c->msg != NULL && (rc != -1 || strcmp(err, c->msg) != 0 || out != 777))
			fail_msg("%s: rc %d, err '%s', want '%s'", c->json, rc, err, c->msg);
	}
}

static void test_json_get_i64_accepts_exact_integers_in_range(void **state)
{
	static const struct i64_case cases[] = {
	    {"{\"index\": 2}", 0, 3, 2, NULL},
	    {"{\"index\": 0}", 0, 3, 0, NULL},
	    {"{\"index\": -7}", -10, 10, -7, NULL},
	    {"{\"index\": 3.0}", 0, 3, 3, NULL},
	    {"{\"index\": 1e3}", 0, 5000, 1000, NULL},
	    {"{\"index\": 9007199254740992}", 0, INT64_MAX, 9007199254740992, NULL},
	    {"{\"index\": -9007199254740992}", INT64_MIN, 0, -9007199254740992, NULL},
	};

	(void)state;
	run_i64_cases("task", cases, ARRAY_LEN(cases));
}

static void test_json_get_i64_rejects_non_integers(void **state)
{
	static const struct i64_case cases[] = {
	    {"{\"index\": 1.5}", 0, 3, 0, "'task.index' must be an integer"},
	    {"{\"index\": \"2\"}", 0, 3, 0, "'task.index' must be an integer"},
	    {"{\"index\": true}", 0, 3, 0, "'task.index' must be an integer"},
	    {"{\"index\": null}", 0, 3, 0, "'task.index' must be an integer"},
	    {"{\"index\": [1]}", 0, 3, 0, "'task.index' must be an integer"},
	    {"{\"index\": 1e400}", 0, 3, 0, "'task.index' must be an integer"},
	    {"{\"Index\": 1}", 0, 3, 0, "'task.index' is missing"},
	    {"{}", 0, 3, 0, "'task.index' is missing"},
	};

	(void)state;
	run_i64_cases("task", cases, ARRAY_LEN(cases));
}

static void test_json_get_i64_rejects_values_out_of_range(void **state)
{
	static const struct i64_case cases[] = {
	    {"{\"index\": 4}", 0, 3, 0, "'task.index' is out of range [0, 3]"},
	    {"{\"index\": -1}", 0, 3, 0, "'task.index' is out of range [0, 3]"},
	    {"{\"index\": 9007199254740994}", INT64_MIN, INT64_MAX, 0,
	     "'task.index' is too large to be exact (beyond 2^53)"},
	    {"{\"index\": -1e300}", INT64_MIN, INT64_MAX, 0,
	     "'task.index' is too large to be exact (beyond 2^53)"},
	};

	(void)state;
	run_i64_cases("task", cases, ARRAY_LEN(cases));
}

static void test_json_messages_at_root_name_just_the_member(void **state)
{
	static const struct i64_case cases[] = {
	    {"{\"index\": 1.5}", 0, 3, 0, "'index' must be an integer"},
	    {"{\"index\": 9}", 0, 3, 0, "'index' is out of range [0, 3]"},
	    {"{}", 0, 3, 0, "'index' is missing"},
	};

	(void)state;
	run_i64_cases("", cases, ARRAY_LEN(cases));
}

static void test_json_getters_refuse_a_non_object(void **state)
{
	cJSON *root = parse_ok("[1, 2]");
	char err[ERR_LEN] = "";
	const char *s = NULL;

	(void)state;
	assert_int_equal(json_get_string(root, "", "name", &s, err), -1);
	assert_string_equal(err, "top-level value must be an object");
	assert_int_equal(json_get_string(root, "spec", "name", &s, err), -1);
	assert_string_equal(err, "'spec' must be an object");
	assert_int_equal(json_get_string(NULL, "spec", "name", &s, err), -1);
	assert_string_equal(err, "'spec' must be an object");
	assert_null(s);
	cJSON_Delete(root);
}

static const char *doc = "{\"cluster\": {\"worker\": [\"a:1\", \"b:2\"]},"
                         " \"task\": {\"type\": \"worker\", \"index\": 1},"
                         " \"name\": \"job\", \"debug\": false, \"none\": null}";

static void test_json_typed_getters_return_borrowed_members(void **state)
{
	cJSON *root = parse_ok(doc);
	const cJSON *cluster = NULL;
	const cJSON *workers = NULL;
	const char *name = NULL;
	char err[ERR_LEN] = "";
	int debug = -1;

	(void)state;
	assert_int_equal(json_get_object(root, "", "cluster", &cluster, err), 0);
	assert_int_equal(json_get_array(cluster, "cluster", "worker", &workers, err), 0);
	assert_int_equal(cJSON_GetArraySize(workers), 2);
	assert_string_equal(cJSON_GetArrayItem(workers, 1)->valuestring, "b:2");
	assert_int_equal(json_get_string(root, "", "name", &name, err), 0);
	assert_string_equal(name, "job");
	assert_ptr_equal(name, cJSON_GetObjectItem(root, "name")->valuestring);
	assert_int_equal(json_get_bool(root, "", "debug", &debug, err), 0);
	assert_int_equal(debug, 0);
	cJSON_Delete(root);
}

static void test_json_typed_getters_name_the_member_on_type_mismatch(void **state)
{
	cJSON *root = parse_ok(doc);
	const cJSON *node = NULL;
	const char *s = NULL;
	char err[ERR_LEN] = "";
	int b = -1;

	(void)state;
	assert_int_equal(json_get_object(root, "job", "name", &node, err), -1);
	assert_string_equal(err, "'job.name' must be an object");
	assert_int_equal(json_get_array(root, "job", "task", &node, err), -1);
	assert_string_equal(err, "'job.task' must be an array");
	assert_int_equal(json_get_string(root, "job", "debug", &s, err), -1);
	assert_string_equal(err, "'job.debug' must be a string");
	assert_int_equal(json_get_bool(root, "job", "name", &b, err), -1);
	assert_string_equal(err, "'job.name' must be a boolean");
	assert_int_equal(json_get_string(root, "job", "none", &s, err), -1);
	assert_string_equal(err, "'job.none' must be a string");
	assert_int_equal(json_get_object(root, "job", "missing", &node, err), -1);
	assert_string_equal(err, "'job.missing' is missing");
	assert_null(node);
	assert_null(s);
	assert_int_equal(b, -1);
	cJSON_Delete(root);
}

static void test_json_optional_getters_leave_output_when_absent_or_null(void **state)
{
	cJSON *root = parse_ok(doc);
	const char *s = "default";
	char err[ERR_LEN] = "";
	int64_t v = 42;

	(void)state;
	assert_int_equal(json_opt_string(root, "", "absent", &s, err), 0);
	assert_int_equal(json_opt_string(root, "", "none", &s, err), 0);
	assert_string_equal(s, "default");
	assert_int_equal(json_opt_i64(root, "", "absent", 0, 100, &v, err), 0);
	assert_int_equal(json_opt_i64(root, "", "none", 0, 100, &v, err), 0);
	assert_int_equal(v, 42);
	cJSON_Delete(root);
}

static void test_json_optional_getters_check_present_members(void **state)
{
	cJSON *root = parse_ok("{\"s\": \"x\", \"n\": 5, \"bad\": 2.5}");
	const char *s = "default";
	char err[ERR_LEN] = "";
	int64_t v = 42;

	(void)state;
	assert_int_equal(json_opt_string(root, "cfg", "s", &s, err), 0);
	assert_string_equal(s, "x");
	assert_int_equal(json_opt_i64(root, "cfg", "n", 0, 100, &v, err), 0);
	assert_int_equal(v, 5);
	assert_int_equal(json_opt_string(root, "cfg", "n", &s, err), -1);
	assert_string_equal(err, "'cfg.n' must be a string");
	assert_int_equal(json_opt_i64(root, "cfg", "bad", 0, 100, &v, err), -1);
	assert_string_equal(err, "'cfg.bad' must be an integer");
	assert_int_equal(json_opt_i64(root, "cfg", "n", 0, 4, &v, err), -1);
	assert_string_equal(err, "'cfg.n' is out of range [0, 4]");
	assert_int_equal(v, 5);
	cJSON_Delete(root);
}

static void test_json_print_writes_compact_text_that_parses_back(void **state)
{
	cJSON *root = parse_ok("{ \"a\" : 1,\n \"b\" : [ true, null ], \"s\": \"q\\\"\\n\" }");
	char *text = json_print(root);
	cJSON *again;

	(void)state;
	assert_non_null(text);
	assert_string_equal(text, "{\"a\":1,\"b\":[true,null],\"s\":\"q\\\"\\n\"}");
	again = parse_ok(text);
	assert_true(cJSON_Compare(root, again, 1));
	assert_null(json_print(NULL));
	free(text);
	cJSON_Delete(again);
	cJSON_Delete(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_json_parse_reads_only_len_bytes),
	    cmocka_unit_test(test_json_parse_reports_byte_offset_of_error),
	    cmocka_unit_test(test_json_parse_accepts_surrounding_whitespace),
	    cmocka_unit_test(test_json_parse_rejects_embedded_nul_byte),
	    cmocka_unit_test(test_json_get_i64_accepts_exact_integers_in_range),
	    cmocka_unit_test(test_json_get_i64_rejects_non_integers),
	    cmocka_unit_test(test_json_get_i64_rejects_values_out_of_range),
	    cmocka_unit_test(test_json_messages_at_root_name_just_the_member),
	    cmocka_unit_test(test_json_getters_refuse_a_non_object),
	    cmocka_unit_test(test_json_typed_getters_return_borrowed_members),
	    cmocka_unit_test(test_json_typed_getters_name_the_member_on_type_mismatch),
	    cmocka_unit_test(test_json_optional_getters_leave_output_when_absent_or_null),
	    cmocka_unit_test(test_json_optional_getters_check_present_members),
	    cmocka_unit_test(test_json_print_writes_compact_text_that_parses_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
