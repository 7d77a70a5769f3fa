/* test_watch_stream.c - framing a watch body into lines (pieces of any
 * size, several lines in one piece, the cap, empty lines, CRLF) and
 * parsing a line into an event (each type, ERROR's Status, bad lines). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "watch_stream.h"

#define MAX_LINES 16
#define LINE_CAP  256

/* The lines a feed delivered, each copied and NUL-terminated. */
struct lines {
	int n;
	char text[MAX_LINES][LINE_CAP];
	size_t len[MAX_LINES];
	int stop_at; /* the callback returns -1 on this line (0-based); -1: never */
};

static int collect(const char *line, size_t len, void *ctx, char *err)
{
	struct lines *l = ctx;

	assert_true(l->n < MAX_LINES);
	assert_true(len < LINE_CAP);
	memcpy(l->text[l->n], line, len);
	l->text[l->n][len] = '\0';
	l->len[l->n] = len;
	if (l->n++ == l->stop_at)
		return err_set(err, "stopped by the callback");
	return 0;
}

static void lines_init(struct lines *l)
{
	memset(l, 0, sizeof(*l));
	l->stop_at = -1;
}

/* --- Framing --- */

static void test_an_event_split_into_one_byte_pieces_arrives_whole(void **state)
{
	const char *body = "{\"type\":\"ADDED\",\"object\":{}}\n";
	struct watch_stream ws;
	struct lines l;
	char err[ERR_LEN];

	(void)state;
	lines_init(&l);
	watch_stream_init(&ws, 0);
	for (size_t i = 0; body[i] != '\0'; i++) {
		assert_int_equal(watch_stream_feed(&ws, body + i, 1, collect, &l, err), 0);
		/* Nothing is delivered before the newline. */
		assert_int_equal(l.n, body[i] == '\n' ? 1 : 0);
	}
	assert_string_equal(l.text[0], "{\"type\":\"ADDED\",\"object\":{}}");
	watch_stream_release(&ws);
}

static void test_several_events_in_one_piece_arrive_in_order(void **state)
{
	const char *body = "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\"";
	struct watch_stream ws;
	struct lines l;
	char err[ERR_LEN];

	(void)state;
	lines_init(&l);
	watch_stream_init(&ws, 0);
	assert_int_equal(watch_stream_feed(&ws, body, strlen(body), collect, &l, err), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.text[0], "{\"a\":1}");
	assert_string_equal(l.text[1], "{\"b\":2}");
	assert_string_equal(l.text[2], "{\"c\":3}");
	/* The partial fourth is kept and completed by the next piece. */
	assert_int_equal(watch_stream_feed(&ws, ":4}\n", 4, collect, &l, err), 0);
	assert_int_equal(l.n, 4);
	assert_string_equal(l.text[3], "{\"d\":4}");
	watch_stream_release(&ws);
}

static void test_empty_lines_are_skipped(void **state)
{
	const char *body = "\n\n{\"a\":1}\n\n\r\n{\"b\":2}\n";
	struct watch_stream ws;
	struct lines l;
	char err[ERR_LEN];

	(void)state;
	lines_init(&l);
	watch_stream_init(&ws, 0);
	assert_int_equal(watch_stream_feed(&ws, body, strlen(body), collect, &l, err), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.text[0], "{\"a\":1}");
	assert_string_equal(l.text[1], "{\"b\":2}");
	watch_stream_release(&ws);
}

static void test_a_carriage_return_before_the_newline_is_dropped(void **state)
{
	struct watch_stream ws;
	struct lines l;
	char err[ERR_LEN];

	(void)state;
	lines_init(&l);
	watch_stream_init(&ws, 0);
	/* Split between the \r and the \n, so the \r sits in the buffer. */
	assert_int_equal(watch_stream_feed(&ws, "{\"a\":1}\r", 8, collect, &l, err), 0);
	assert_int_equal(watch_stream_feed(&ws, "\n", 1, collect, &l, err), 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.len[0], 7);
	assert_string_equal(l.text[0], "{\"a\":1}");
	watch_stream_release(&ws);
}

/* A line of exactly max bytes passes, whole or in pieces; max + 1 fails. */
static void test_a_line_at_the_cap_passes_and_one_over_it_fails(void **state)
{
	enum { MAX = 64 };
	char line[MAX + 2];
	struct watch_stream ws;
	struct lines l;
	char err[ERR_LEN];

	(void)state;
	memset(line, 'x', sizeof(line));

	lines_init(&l);
	watch_stream_init(&ws, MAX);
	line[MAX] = '\n';
	assert_int_equal(watch_stream_feed(&ws, line, MAX + 1, collect, &l, err), 0);
	assert_int_equal(watch_stream_feed(&ws, line, 10, collect, &l, err), 0);
	assert_int_equal(watch_stream_feed(&ws, line + 10, MAX + 1 - 10, collect, &l, err), 0);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.len[0], MAX);
	assert_int_equal(l.len[1], MAX);

	/* One byte more, in one piece: refused, nothing delivered. */
	line[MAX] = 'x';
	line[MAX + 1] = '\n';
	assert_int_equal(watch_stream_feed(&ws, line, MAX + 2, collect, &l, err), -1);
	assert_string_equal(err, "watch line longer than 64 bytes");
	assert_int_equal(l.n, 2);
	watch_stream_release(&ws);

	/* In pieces with no newline yet: refused as soon as it passes the cap,
	 * not only when the newline comes. */
	lines_init(&l);
	watch_stream_init(&ws, MAX);
	assert_int_equal(watch_stream_feed(&ws, line, MAX, collect, &l, err), 0);
	assert_int_equal(watch_stream_feed(&ws, "y", 1, collect, &l, err), -1);
	assert_int_equal(l.n, 0);
	watch_stream_release(&ws);
}

static void test_the_default_cap_is_watch_line_max(void **state)
{
	struct watch_stream ws;

	(void)state;
	watch_stream_init(&ws, 0);
	assert_int_equal(ws.max, WATCH_LINE_MAX);
	watch_stream_release(&ws);
}

static void test_a_callback_that_stops_stops_the_feed(void **state)
{
	const char *body = "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n";
	struct watch_stream ws;
	struct lines l;
	char err[ERR_LEN];

	(void)state;
	lines_init(&l);
	l.stop_at = 1;
	watch_stream_init(&ws, 0);
	assert_int_equal(watch_stream_feed(&ws, body, strlen(body), collect, &l, err), -1);
	assert_string_equal(err, "stopped by the callback");
	assert_int_equal(l.n, 2);
	watch_stream_release(&ws);
}

static void test_release_accepts_a_stream_never_fed(void **state)
{
	struct watch_stream ws;

	(void)state;
	watch_stream_init(&ws, 0);
	watch_stream_release(&ws);
	watch_stream_release(&ws);
	watch_stream_release(NULL);
}

/* --- Events --- */

static int parse(struct watch_event *ev, const char *line, char *err)
{
	return watch_event_parse(ev, line, strlen(line), err);
}

static void test_each_event_type_is_parsed_with_its_object_and_version(void **state)
{
	static const struct {
		const char *name;
		enum watch_type type;
	} cases[] = {
	    {"ADDED", WATCH_ADDED},
	    {"MODIFIED", WATCH_MODIFIED},
	    {"DELETED", WATCH_DELETED},
	    {"BOOKMARK", WATCH_BOOKMARK},
	};
	char line[256], err[ERR_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct watch_event ev;
		const cJSON *name;

		snprintf(line, sizeof(line),
		         "{\"type\":\"%s\",\"object\":{\"kind\":\"Pod\",\"metadata\":"
		         "{\"name\":\"p%zu\",\"resourceVersion\":\"%zu\"}}}",
		         cases[i].name, i, 100 + i);
		assert_int_equal(parse(&ev, line, err), 0);
		assert_int_equal(ev.type, cases[i].type);
		assert_non_null(ev.object);
		name = cJSON_GetObjectItem(cJSON_GetObjectItem(ev.object, "metadata"), "name");
		assert_true(cJSON_IsString(name));
		snprintf(line, sizeof(line), "p%zu", i);
		assert_string_equal(name->valuestring, line);
		snprintf(line, sizeof(line), "%zu", 100 + i);
		assert_string_equal(ev.resource_version, line);
		assert_int_equal(ev.error_code, 0);
		watch_event_release(&ev);
		assert_null(ev.object);
	}
}

static void test_a_bookmark_carries_only_a_resource_version(void **state)
{
	const char *line =
	    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
	    "\"metadata\":{\"resourceVersion\":\"98765\"}}}";
	struct watch_event ev;
	char err[ERR_LEN];

	(void)state;
	assert_int_equal(parse(&ev, line, err), 0);
	assert_int_equal(ev.type, WATCH_BOOKMARK);
	assert_string_equal(ev.resource_version, "98765");
	watch_event_release(&ev);
}

static void test_an_error_event_gives_the_status_code_and_message(void **state)
{
	const char *line =
	    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
	    "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource "
	    "version: 1 (5000)\",\"reason\":\"Expired\",\"code\":410}}";
	struct watch_event ev;
	char err[ERR_LEN];

	(void)state;
	assert_int_equal(parse(&ev, line, err), 0);
	assert_int_equal(ev.type, WATCH_ERROR);
	assert_int_equal(ev.error_code, 410);
	assert_string_equal(ev.error_message, "too old resource version: 1 (5000)");
	assert_string_equal(ev.resource_version, "");
	watch_event_release(&ev);
}

static void test_an_error_event_with_a_code_out_of_range_has_none(void **state)
{
	const char *line = "{\"type\":\"ERROR\",\"object\":{\"code\":1e300,\"message\":7}}";
	struct watch_event ev;
	char err[ERR_LEN];

	(void)state;
	assert_int_equal(parse(&ev, line, err), 0);
	assert_int_equal(ev.error_code, 0);
	assert_string_equal(ev.error_message, "");
	watch_event_release(&ev);
}

static void test_lines_that_are_not_events_are_refused(void **state)
{
	static const struct {
		const char *line, *message;
	} cases[] = {
	    {"not json", "watch event: invalid JSON near byte 0"},
	    {"{\"type\":\"ADDED\",\"object\":{}} trailing",
	     "watch event: invalid JSON near byte 29"},
	    {"[1,2]", "watch event: not a JSON object"},
	    {"{\"object\":{}}", "watch event: 'type' must be a string"},
	    {"{\"type\":7,\"object\":{}}", "watch event: 'type' must be a string"},
	    {"{\"type\":\"RENAMED\",\"object\":{}}", "watch event: unknown type 'RENAMED'"},
	    {"{\"type\":\"ADDED\"}", "watch event: 'object' must be an object"},
	    {"{\"type\":\"ADDED\",\"object\":null}", "watch event: 'object' must be an object"},
	    {"{\"type\":\"ADDED\",\"object\":\"pod\"}", "watch event: 'object' must be an object"},
	    {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":"
	     "\"12345678901234567890123456789012\"}}}",
	     "watch event: resourceVersion of 32 bytes, more than 31"},
	    {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\\n2\"}}}",
	     "watch event: resourceVersion with byte 0x0a"},
	    {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1 2\"}}}",
	     "watch event: resourceVersion with byte 0x20"},
	};
	char err[ERR_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct watch_event ev;

		assert_int_equal(parse(&ev, cases[i].line, err), -1);
		assert_string_equal(err, cases[i].message);
		assert_null(ev.object);
		/* Release after a failure is harmless. */
		watch_event_release(&ev);
	}
}

static void test_a_nul_byte_inside_a_line_is_refused(void **state)
{
	const char line[] = "{\"type\":\"ADDED\",\"object\":{\"a\":\"x\0y\"}}";
	struct watch_event ev;
	char err[ERR_LEN];

	(void)state;
	assert_int_equal(watch_event_parse(&ev, line, sizeof(line) - 1, err), -1);
	assert_null(ev.object);
}

static void test_server_text_cannot_forge_a_log_line(void **state)
{
	const char *error = "{\"type\":\"ERROR\",\"object\":{\"code\":500,\"message\":"
	                    "\"bad\\nfatal: forged\\r\"}}";
	const char *type = "{\"type\":\"X\\ninfo  forged\",\"object\":{}}";
	struct watch_event ev;
	char err[ERR_LEN];

	(void)state;
	assert_int_equal(parse(&ev, error, err), 0);
	assert_string_equal(ev.error_message, "bad fatal: forged ");
	watch_event_release(&ev);
	assert_int_equal(parse(&ev, type, err), -1);
	assert_string_equal(err, "watch event: unknown type 'X info  forged'");
}

static void test_a_long_unknown_type_is_quoted_in_part(void **state)
{
	char line[512], err[ERR_LEN];
	struct watch_event ev;

	(void)state;
	snprintf(line, sizeof(line), "{\"type\":\"%0300d\",\"object\":{}}", 0);
	assert_int_equal(parse(&ev, line, err), -1);
	assert_true(strlen(err) < 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_an_event_split_into_one_byte_pieces_arrives_whole),
	    cmocka_unit_test(test_several_events_in_one_piece_arrive_in_order),
	    cmocka_unit_test(test_empty_lines_are_skipped),
	    cmocka_unit_test(test_a_carriage_return_before_the_newline_is_dropped),
	    cmocka_unit_test(test_a_line_at_the_cap_passes_and_one_over_it_fails),
	    cmocka_unit_test(test_the_default_cap_is_watch_line_max),
	    cmocka_unit_test(test_a_callback_that_stops_stops_the_feed),
	    cmocka_unit_test(test_release_accepts_a_stream_never_fed),
	    cmocka_unit_test(test_each_event_type_is_parsed_with_its_object_and_version),
	    cmocka_unit_test(test_a_bookmark_carries_only_a_resource_version),
	    cmocka_unit_test(test_an_error_event_gives_the_status_code_and_message),
	    cmocka_unit_test(test_an_error_event_with_a_code_out_of_range_has_none),
	    cmocka_unit_test(test_lines_that_are_not_events_are_refused),
	    cmocka_unit_test(test_a_nul_byte_inside_a_line_is_refused),
	    cmocka_unit_test(test_server_text_cannot_forge_a_log_line),
	    cmocka_unit_test(test_a_long_unknown_type_is_quoted_in_part),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
