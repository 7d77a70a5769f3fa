/* fuzz_watch_stream.c - a libFuzzer target for the watch body's framer and
 * event parser (watch_stream.h): bytes from the API server (or whatever
 * answers in its place), in pieces of any size.
 *
 * Input: byte 0 is the longest line allowed (0: WATCH_LINE_MAX); byte 1
 * says how many of the bytes after it (1 to 8) are piece sizes, used in
 * turn; the rest is the body, fed through watch_stream_feed in pieces of
 * those sizes. Each line is parsed with watch_event_parse.
 * Checked beyond "no crash": however the body is cut, the lines that come
 * out are the body's lines (split at "\n", a "\r" before it dropped, empty
 * ones skipped) in order, and a line over the cap stops the stream with an
 * error exactly where a reader of the whole body would stop; what is left
 * over is the unfinished last line. A parsed event has a known type, an
 * object, and a resourceVersion and error message safe to log.
 */
#include <stdint.h>
#include <string.h>

#include "err.h"
#include "fuzz/harness.h"
#include "watch_stream.h"

#define SIZES_MAX 8

/* The lines a reader of the whole body expects, one after the other. */
struct expect {
	const char *body;
	size_t len, at; /* the next line starts at body + at */
	size_t max;
	int lines;
};

/* The next non-empty line in e, without its "\r", as watch_stream.h
 * frames them. Returns 1 with it, 0 at the end or before a line over the
 * cap, which *over then says. */
static int expect_next(struct expect *e, const char **line, size_t *n, int *over)
{
	*over = 0;
	while (e->at < e->len) {
		const char *start = e->body + e->at;
		const char *nl = memchr(start, '\n', e->len - e->at);
		size_t len = nl != NULL ? (size_t)(nl - start) : e->len - e->at;

		if (len > e->max) {
			*over = 1;
			return 0;
		}
		if (nl == NULL)
			return 0; /* the unfinished last line stays in the buffer */
		e->at += len + 1;
		if (len > 0 && start[len - 1] == '\r')
			len--;
		if (len > 0) {
			*line = start;
			*n = len;
			return 1;
		}
	}
	return 0;
}

static int is_safe(const char *s, int blank_ok)
{
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f || (!blank_ok && c == ' '))
			return 0;
	}
	return 1;
}

static void check_event(const char *line, size_t len)
{
	struct watch_event ev;
	char err[ERR_LEN] = "";

	if (watch_event_parse(&ev, line, len, err) < 0) {
		FUZZ_CHECK(err[0] != '\0' && memchr(err, '\0', sizeof(err)) != NULL);
		FUZZ_CHECK(ev.object == NULL);
		return;
	}
	FUZZ_CHECK(ev.type >= WATCH_ADDED && ev.type <= WATCH_ERROR);
	FUZZ_CHECK(cJSON_IsObject(ev.object));
	FUZZ_CHECK(memchr(ev.resource_version, '\0', sizeof(ev.resource_version)) != NULL);
	FUZZ_CHECK(is_safe(ev.resource_version, 0));
	FUZZ_CHECK(ev.error_code >= 0 && ev.error_code <= 999);
	FUZZ_CHECK(ev.type == WATCH_ERROR || (ev.error_code == 0 && ev.error_message[0] == '\0'));
	FUZZ_CHECK(is_safe(ev.error_message, 1));
	watch_event_release(&ev);
}

/* Compares each line the framer gives with the next one expected. */
static int on_line(const char *line, size_t len, void *ctx, char *err)
{
	struct expect *e = ctx;
	const char *want = NULL;
	size_t n = 0;
	int over = 0;

	(void)err;
	FUZZ_CHECK(expect_next(e, &want, &n, &over) == 1);
	FUZZ_CHECK(n == len && memcmp(want, line, len) == 0);
	e->lines++;
	check_event(line, len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct watch_stream ws;
	struct expect e = {0};
	char err[ERR_LEN] = "";
	const uint8_t *sizes;
	size_t nsizes, at = 0;
	int rc = 0, over = 0;
	const char *line;
	size_t n;

	if (size < 3)
		return 0;
	nsizes = data[1] % SIZES_MAX + 1;
	if (size < 2 + nsizes)
		return 0;
	sizes = data + 2;
	e.body = (const char *)data + 2 + nsizes;
	e.len = size - 2 - nsizes;
	watch_stream_init(&ws, data[0]);
	e.max = ws.max;
	for (size_t i = 0; at < e.len && rc == 0; i++) {
		size_t piece = sizes[i % nsizes] ? sizes[i % nsizes] : 1024;

		piece = piece < e.len - at ? piece : e.len - at;
		rc = watch_stream_feed(&ws, e.body + at, piece, on_line, &e, err);
		at += piece;
	}
	/* Every expected line came out, and the stream stopped only at a line
	 * over the cap. */
	FUZZ_CHECK(expect_next(&e, &line, &n, &over) == 0);
	if (over) {
		FUZZ_CHECK(rc < 0 && strstr(err, "longer than") != NULL);
	} else {
		FUZZ_CHECK(rc == 0);
		FUZZ_CHECK(ws.len == e.len - e.at);
		FUZZ_CHECK(ws.len == 0 || memcmp(ws.buf, e.body + e.at, ws.len) == 0);
	}
	watch_stream_release(&ws);
	return 0;
}
