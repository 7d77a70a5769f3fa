/* test_log.c - log lines in both formats, escaping, level filtering and
 * whole-line writes from many threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "log.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static FILE *capture;

static int setup(void **state)
{
	(void)state;
	capture = tmpfile();
	if (capture == NULL)
		return -1;
	log_set_stream(capture);
	log_set_level(LOG_INFO);
	log_set_format(LOG_TEXT);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	log_set_stream(NULL);
	fclose(capture);
	return 0;
}

/* Everything logged so far, NUL-terminated; the caller frees it. */
static char *captured(void)
{
	long size;
	char *buf;

	assert_int_equal(fseek(capture, 0, SEEK_END), 0);
	size = ftell(capture);
	assert_true(size >= 0);
	buf = malloc((size_t)size + 1);
	assert_non_null(buf);
	rewind(capture);
	assert_int_equal(fread(buf, 1, (size_t)size, capture), (size_t)size);
	buf[size] = '\0';
	return buf;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

/* Checks "YYYY-MM-DDTHH:MM:SS.mmmZ" and that it is within a minute of now. */
static void assert_timestamp_now(const char *ts)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ";
	struct tm tm = {0};
	time_t t;

	for (size_t i = 0; i < sizeof(shape) - 1; i++) {
		if (shape[i] == 'd' ? !isdigit((unsigned char)ts[i]) : ts[i] != shape[i])
			fail_msg("bad timestamp '%.24s' at %zu", ts, i);
	}
	assert_non_null(strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm));
	t = timegm(&tm);
	assert_true(labs((long)(t - time(NULL))) < 60);
}

static void test_log_text_line_has_timestamp_level_and_message(void **state)
{
	char *out;

	(void)state;
	log_info("loaded %d images from '%s'", 60000, "/data");
	out = captured();
	assert_timestamp_now(out);
	assert_string_equal(out + 24, " info  loaded 60000 images from '/data'\n");
	free(out);
}

static void test_log_text_pads_every_level_name_to_one_width(void **state)
{
	char *out;
	char *line;

	(void)state;
	log_set_level(LOG_DEBUG);
	log_msg(LOG_DEBUG, "m");
	log_msg(LOG_INFO, "m");
	log_msg(LOG_WARN, "m");
	log_msg(LOG_ERROR, "m");
	out = captured();
	assert_int_equal(count_lines(out), 4);
	line = out;
	assert_memory_equal(line + 24, " debug m\n", 9);
	line = strchr(line, '\n') + 1;
	assert_memory_equal(line + 24, " info  m\n", 9);
	line = strchr(line, '\n') + 1;
	assert_memory_equal(line + 24, " warn  m\n", 9);
	line = strchr(line, '\n') + 1;
	assert_memory_equal(line + 24, " error m\n", 9);
	free(out);
}

static void test_log_text_keeps_an_event_on_one_line(void **state)
{
	char *out;

	(void)state;
	log_info("two\nlines\r\tand \x01 bell");
	out = captured();
	assert_int_equal(count_lines(out), 1);
	assert_string_equal(out + 24, " info  two\\nlines\\r\\tand \\x01 bell\n");
	free(out);
}

static void test_log_kv_text_appends_fields_quoting_where_needed(void **state)
{
	const char *keys[] = {"pod", "reason", "empty", "quote"};
	const char *vals[] = {"w-0", "node lost", "", "say \"hi\""};
	char *out;

	(void)state;
	log_kv(LOG_WARN, "pod restarted", keys, vals, 4);
	out = captured();
	assert_string_equal(out + 24,
	                    " warn  pod restarted pod=w-0 reason=\"node lost\" empty=\"\" "
	                    "quote=\"say \\\"hi\\\"\"\n");
	free(out);
}

/* Parses the only line in the capture; the caller deletes it. */
static cJSON *captured_json(void)
{
	char *out = captured();
	cJSON *line;

	assert_int_equal(count_lines(out), 1);
	line = cJSON_Parse(out);
	if (line == NULL)
		fail_msg("not JSON: %s", out);
	free(out);
	return line;
}

static const char *member(const cJSON *obj, const char *name)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

	assert_true(cJSON_IsString(it));
	return it->valuestring;
}

static void test_log_json_line_has_ts_level_and_msg(void **state)
{
	cJSON *line;

	(void)state;
	log_set_format(LOG_JSON);
	log_error("step %d failed", 7);
	line = captured_json();
	assert_timestamp_now(member(line, "ts"));
	assert_string_equal(member(line, "level"), "error");
	assert_string_equal(member(line, "msg"), "step 7 failed");
	assert_int_equal(cJSON_GetArraySize(line), 3);
	cJSON_Delete(line);
}

static void test_log_json_escapes_quotes_newlines_and_control_chars(void **state)
{
	const char *msg = "say \"hi\"\nback\\slash\ttab\r\x01\x1f\x7f end";
	char *raw;
	cJSON *line;

	(void)state;
	log_set_format(LOG_JSON);
	log_info("%s", msg);
	raw = captured();
	/* No raw control character may reach the line. */
	for (const char *p = raw; p[1] != '\0'; p++)
		assert_false((unsigned char)*p < 0x20 || *p == 0x7f);
	free(raw);
	line = captured_json();
	assert_string_equal(member(line, "msg"), msg);
	cJSON_Delete(line);
}

static void test_log_json_keeps_utf8_and_replaces_invalid_bytes(void **state)
{
	cJSON *line;

	(void)state;
	log_set_format(LOG_JSON);
	log_info("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 bad \xff \xc0\xaf \xed\xa0\x80 cut "
	         "\xe2\x9c");
	line = captured_json();
	assert_string_equal(member(line, "msg"),
	                    "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 bad \xef\xbf\xbd "
	                    "\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd cut "
	                    "\xef\xbf\xbd\xef\xbf\xbd");
	cJSON_Delete(line);
}

static void test_log_kv_json_adds_string_fields(void **state)
{
	const char *keys[] = {"pod", "exit\"code"};
	const char *vals[] = {"w-1", "137\n"};
	cJSON *line;

	(void)state;
	log_set_format(LOG_JSON);
	log_kv(LOG_INFO, "pod exited", keys, vals, 2);
	line = captured_json();
	assert_string_equal(member(line, "msg"), "pod exited");
	assert_string_equal(member(line, "pod"), "w-1");
	assert_string_equal(member(line, "exit\"code"), "137\n");
	cJSON_Delete(line);
}

static void test_log_cuts_long_message_to_one_valid_line(void **state)
{
	size_t n = 20000;
	char *big = malloc(n + 1);
	const char *msg;
	char *raw;
	cJSON *line;

	(void)state;
	assert_non_null(big);
	for (size_t i = 0; i < n; i++)
		big[i] = i % 7 == 0 ? '"' : 'x'; /* escapes double the length */
	big[n] = '\0';
	log_set_format(LOG_JSON);
	log_info("%s", big);
	raw = captured();
	assert_true(strlen(raw) <= 8192);
	free(raw);
	line = captured_json();
	msg = member(line, "msg");
	assert_true(strlen(msg) > 1000);
	assert_memory_equal(msg, big, strlen(msg) - 3);
	assert_string_equal(msg + strlen(msg) - 3, "...");
	cJSON_Delete(line);
	free(big);
}

static void test_log_kv_text_cuts_huge_value_to_one_line(void **state)
{
	size_t n = 50000;
	char *big = malloc(n + 1);
	const char *keys[] = {"body", "after"};
	const char *vals[2];
	char *out;
	size_t len;

	(void)state;
	assert_non_null(big);
	memset(big, 'v', n);
	big[n] = '\0';
	vals[0] = big;
	vals[1] = "dropped";
	log_kv(LOG_INFO, "response", keys, vals, 2);
	out = captured();
	len = strlen(out);
	assert_int_equal(count_lines(out), 1);
	assert_true(len <= 8192 && len > 4096);
	assert_non_null(strstr(out, " info  response body=vvv"));
	assert_string_equal(out + len - 4, "...\n");
	assert_null(strstr(out, "dropped"));
	free(out);
	free(big);
}

static void test_log_level_filtering_drops_lower_levels(void **state)
{
	char *out;

	(void)state;
	log_set_level(LOG_WARN);
	assert_false(log_enabled(LOG_DEBUG));
	assert_false(log_enabled(LOG_INFO));
	assert_true(log_enabled(LOG_WARN));
	assert_true(log_enabled(LOG_ERROR));
	log_debug("d");
	log_info("i");
	log_msg(LOG_INFO, "i2");
	log_kv(LOG_INFO, "i3", NULL, NULL, 0);
	log_warn("w");
	log_error("e");
	out = captured();
	assert_int_equal(count_lines(out), 2);
	assert_non_null(strstr(out, " warn  w\n"));
	assert_non_null(strstr(out, " error e\n"));
	free(out);
}

static void test_log_level_off_writes_nothing(void **state)
{
	char *out;

	(void)state;
	log_set_level(LOG_OFF);
	log_error("e");
	log_msg(LOG_OFF, "off is not a message level");
	out = captured();
	assert_string_equal(out, "");
	free(out);
}

static int calls;

static int side_effect(void)
{
	return ++calls;
}

static void test_log_level_is_checked_before_arguments_are_evaluated(void **state)
{
	(void)state;
	calls = 0;
	log_debug("value %d", side_effect());
	assert_int_equal(calls, 0);
	log_info("value %d", side_effect());
	assert_int_equal(calls, 1);
}

static void test_log_preserves_errno(void **state)
{
	(void)state;
	errno = ENOSPC;
	log_info("writing");
	assert_int_equal(errno, ENOSPC);
}

static void test_log_parse_level_and_format_accept_only_known_names(void **state)
{
	static const struct {
		const char *name;
		int rc;
		enum log_level level;
	} levels[] = {
	    {"debug", 0, LOG_DEBUG}, {"info", 0, LOG_INFO}, {"warn", 0, LOG_WARN},
	    {"error", 0, LOG_ERROR}, {"off", 0, LOG_OFF},   {"warning", -1, LOG_INFO},
	    {"INFO", -1, LOG_INFO},  {"", -1, LOG_INFO},
	};
	enum log_format format = LOG_TEXT;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(levels); i++) {
		enum log_level level = LOG_INFO;

		if (log_parse_level(levels[i].name, &level) != levels[i].rc ||
		    level != levels[i].level)
			fail_msg("level '%s'", levels[i].name);
	}
	assert_int_equal(log_parse_format("json", &format), 0);
	assert_int_equal(format, LOG_JSON);
	assert_int_equal(log_parse_format("text", &format), 0);
	assert_int_equal(format, LOG_TEXT);
	assert_int_equal(log_parse_format("yaml", &format), -1);
	assert_int_equal(format, LOG_TEXT);
	assert_int_equal(log_parse_level(NULL, &(enum log_level){LOG_INFO}), -1);
}

static void test_log_getters_return_what_was_set(void **state)
{
	(void)state;
	log_set_level(LOG_ERROR);
	log_set_format(LOG_JSON);
	assert_int_equal(log_get_level(), LOG_ERROR);
	assert_int_equal(log_get_format(), LOG_JSON);
}

enum { THREADS = 4, LINES = 500, PAD = 1500 };

/* Long lines make a torn write likely if an event took more than one write. */
static void thread_msg(char *buf, size_t size, int id, int i)
{
	int n = snprintf(buf, size, "thread %d line %d ", id, i);

	memset(buf + n, 'a' + id, PAD);
	buf[n + PAD] = '\0';
}

static void *log_from_thread(void *arg)
{
	int id = *(const int *)arg;
	char msg[PAD + 64];

	for (int i = 0; i < LINES; i++) {
		thread_msg(msg, sizeof(msg), id, i);
		log_info("%s", msg);
	}
	return NULL;
}

static void test_log_lines_from_threads_never_interleave(void **state)
{
	static const int ids[THREADS] = {0, 1, 2, 3};
	pthread_t threads[THREADS];
	int next[THREADS] = {0};
	char want[PAD + 64];
	char *out;
	char *save = NULL;
	int lines = 0;

	(void)state;
	log_set_format(LOG_JSON);
	for (int t = 0; t < THREADS; t++)
		assert_int_equal(
		    pthread_create(&threads[t], NULL, log_from_thread, (void *)&ids[t]), 0);
	for (int t = 0; t < THREADS; t++)
		assert_int_equal(pthread_join(threads[t], NULL), 0);

	out = captured();
	for (char *l = strtok_r(out, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
		cJSON *line = cJSON_Parse(l);
		const char *msg;
		int id;

		if (line == NULL)
			fail_msg("line %d is not JSON", lines);
		msg = member(line, "msg");
		assert_memory_equal(msg, "thread ", 7);
		id = msg[7] - '0';
		assert_true(id >= 0 && id < THREADS);
		/* Each thread's lines arrive whole and in order. */
		thread_msg(want, sizeof(want), id, next[id]++);
		assert_string_equal(msg, want);
		cJSON_Delete(line);
		lines++;
	}
	assert_int_equal(lines, THREADS * LINES);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_log_text_line_has_timestamp_level_and_message,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_text_pads_every_level_name_to_one_width, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_log_text_keeps_an_event_on_one_line, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_log_kv_text_appends_fields_quoting_where_needed,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_json_line_has_ts_level_and_msg, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_log_json_escapes_quotes_newlines_and_control_chars,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_json_keeps_utf8_and_replaces_invalid_bytes,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_kv_json_adds_string_fields, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_cuts_long_message_to_one_valid_line, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_log_kv_text_cuts_huge_value_to_one_line, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_log_level_filtering_drops_lower_levels, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_log_level_off_writes_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_log_level_is_checked_before_arguments_are_evaluated, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_preserves_errno, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_parse_level_and_format_accept_only_known_names,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_getters_return_what_was_set, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_lines_from_threads_never_interleave, setup,
	                                    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
