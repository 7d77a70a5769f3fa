/* watch_stream.c - framing a watch body into lines, and a line into an
 * event (format in watch_stream.h). */
#include "watch_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define BUF_FIRST 4096
/* A buffer grown for one big line is freed once the line is done, rather
 * than held for the rest of a watch that may last minutes. */
#define BUF_KEEP (256u << 10)

/* --- Framing --- */

void watch_stream_init(struct watch_stream *ws, size_t max)
{
	memset(ws, 0, sizeof(*ws));
	ws->max = max > 0 ? max : WATCH_LINE_MAX;
}

void watch_stream_release(struct watch_stream *ws)
{
	if (ws == NULL)
		return;
	free(ws->buf);
	ws->buf = NULL;
	ws->len = 0;
	ws->cap = 0;
}

/* Forgets the partial line, giving back a buffer grown for a big one. */
static void reset(struct watch_stream *ws)
{
	ws->len = 0;
	if (ws->cap > BUF_KEEP) {
		free(ws->buf);
		ws->buf = NULL;
		ws->cap = 0;
	}
}

/* Appends n bytes to the partial line; the caller has checked the cap. */
static void append(struct watch_stream *ws, const char *data, size_t n)
{
	size_t want = ws->len + n;

	if (want > ws->cap) {
		size_t cap = ws->cap > 0 ? ws->cap : BUF_FIRST;
		char *p;

		while (cap < want)
			cap = cap > ws->max / 2 ? ws->max : cap * 2;
		p = realloc(ws->buf, cap);
		if (p == NULL)
			die("out of memory allocating %zu bytes", cap);
		ws->buf = p;
		ws->cap = cap;
	}
	memcpy(ws->buf + ws->len, data, n);
	ws->len = want;
}

/* Calls fn on one whole line unless it is empty. The server ends lines
 * with "\n" alone; a "\r" before it (a proxy's doing) is dropped so that
 * "\r\n" alone still counts as an empty line. */
static int emit(const char *line, size_t len, watch_line_fn fn, void *ctx, char *err)
{
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0)
		return 0;
	return fn(line, len, ctx, err);
}

int watch_stream_feed(struct watch_stream *ws, const char *data, size_t len, watch_line_fn fn,
                      void *ctx, char *err)
{
	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl != NULL ? (size_t)(nl - data) : len;
		int rc;

		/* Subtraction first: ws->len never exceeds ws->max. */
		if (n > ws->max - ws->len) {
			reset(ws);
			return err_set(err, "watch line longer than %zu bytes", ws->max);
		}
		if (nl == NULL) {
			append(ws, data, n);
			return 0;
		}
		if (ws->len == 0) {
			/* The whole line is in this piece: no copy. */
			rc = emit(data, n, fn, ctx, err);
		} else {
			append(ws, data, n);
			rc = emit(ws->buf, ws->len, fn, ctx, err);
			reset(ws);
		}
		if (rc < 0) {
			reset(ws);
			return -1;
		}
		data += n + 1;
		len -= n + 1;
	}
	return 0;
}

/* --- Events --- */

/* Copies src into out (n bytes) as one printable line: a control character
 * (a newline in a server's message would forge a log line) becomes a
 * space, and a cut never splits a UTF-8 character. */
static void copy_printable(char *out, size_t n, const char *src)
{
	size_t len = strlen(src);

	if (len > n - 1) {
		len = n - 1;
		while (len > 0 && ((unsigned char)src[len] & 0xC0) == 0x80)
			len--;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)src[i];

		out[i] = c < 0x20 || c == 0x7F ? ' ' : (char)c;
	}
	out[len] = '\0';
}

static const char *const TYPE_NAMES[] = {
    [WATCH_ADDED] = "ADDED",       [WATCH_MODIFIED] = "MODIFIED", [WATCH_DELETED] = "DELETED",
    [WATCH_BOOKMARK] = "BOOKMARK", [WATCH_ERROR] = "ERROR",
};

static int parse_type(const cJSON *root, enum watch_type *out, char *err)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "type");

	if (!cJSON_IsString(t))
		return err_set(err, "watch event: 'type' must be a string");
	for (size_t i = 0; i < sizeof(TYPE_NAMES) / sizeof(TYPE_NAMES[0]); i++) {
		if (strcmp(t->valuestring, TYPE_NAMES[i]) == 0) {
			*out = (enum watch_type)i;
			return 0;
		}
	}
	/* The type came from the server: quote a bounded, printable part. */
	char quoted[41];

	copy_printable(quoted, sizeof(quoted), t->valuestring);
	return err_set(err, "watch event: unknown type '%s'", quoted);
}

/* The object's metadata.resourceVersion, "" when it has none. A version
 * that does not fit is refused rather than cut: a shortened version would
 * resume the watch at the wrong place. Versions are opaque, but go into
 * logs and URLs: only printable ASCII without spaces is taken. */
static int parse_version(struct watch_event *ev, char *err)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(ev->object, "metadata");
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion");
	size_t n;

	if (!cJSON_IsString(rv))
		return 0;
	n = strlen(rv->valuestring);
	if (n >= sizeof(ev->resource_version))
		return err_set(err, "watch event: resourceVersion of %zu bytes, more than %zu", n,
		               sizeof(ev->resource_version) - 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)rv->valuestring[i];

		if (c <= 0x20 || c >= 0x7F)
			return err_set(err, "watch event: resourceVersion with byte 0x%02x", c);
	}
	memcpy(ev->resource_version, rv->valuestring, n + 1);
	return 0;
}

/* An ERROR event's object is a Status: {"kind":"Status","code":410,
 * "reason":"Expired","message":"too old resource version: 1 (5)"}. */
static void parse_status(struct watch_event *ev)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(ev->object, "code");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(ev->object, "message");

	if (cJSON_IsNumber(code) && code->valuedouble >= 0 && code->valuedouble <= 999)
		ev->error_code = (long)code->valuedouble;
	if (cJSON_IsString(msg))
		copy_printable(ev->error_message, sizeof(ev->error_message), msg->valuestring);
}

int watch_event_parse(struct watch_event *ev, const char *line, size_t len, char *err)
{
	cJSON *root;
	cJSON *obj;
	int rc = -1;

	memset(ev, 0, sizeof(*ev));
	root = json_parse(line, len, err);
	if (root == NULL)
		return err_prefix(err, "watch event");
	if (!cJSON_IsObject(root)) {
		err_set(err, "watch event: not a JSON object");
		goto out;
	}
	if (parse_type(root, &ev->type, err) < 0)
		goto out;
	obj = cJSON_GetObjectItemCaseSensitive(root, "object");
	if (!cJSON_IsObject(obj)) {
		err_set(err, "watch event: 'object' must be an object");
		goto out;
	}
	ev->object = cJSON_DetachItemViaPointer(root, obj);
	if (parse_version(ev, err) < 0)
		goto out;
	if (ev->type == WATCH_ERROR)
		parse_status(ev);
	rc = 0;
out:
	cJSON_Delete(root);
	if (rc < 0)
		watch_event_release(ev);
	return rc;
}

void watch_event_release(struct watch_event *ev)
{
	if (ev == NULL)
		return;
	cJSON_Delete(ev->object);
	memset(ev, 0, sizeof(*ev));
}
