/* watch_stream.h - the body of a watch: JSON lines, one event each
 * ({"type":"ADDED","object":{...}}), arriving in pieces of any size.
 *
 * A line may be split across reads and several may come in one read; the
 * framer joins and splits them, in a buffer with a hard cap, so that a
 * server (or a stranger) cannot make the operator hold an unbounded line:
 * an oversized line is an error, and the caller restarts the watch. Each
 * whole line is parsed into a watch_event: its type, its object, the
 * object's resourceVersion, and for an ERROR event the Status code inside
 * (410 Gone means the caller must list again).
 */
#ifndef MWJ_WATCH_STREAM_H
#define MWJ_WATCH_STREAM_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "err.h"

/* A line longer than this (an object of 16 MiB) is refused; the API
 * server's own limit on an object is about 1.5 MiB in etcd. */
#define WATCH_LINE_MAX (16u << 20)

enum watch_type { WATCH_ADDED, WATCH_MODIFIED, WATCH_DELETED, WATCH_BOOKMARK, WATCH_ERROR };

struct watch_event {
	enum watch_type type;
	cJSON *object;             /* owned: the event's object; freed by watch_event_release */
	char resource_version[32]; /* the object's metadata.resourceVersion, or "" */
	long error_code;           /* ERROR: the Status' code (410: expired), else 0 */
	char error_message[ERR_LEN];
};

/* --- Framing --- */

struct watch_stream {
	char *buf; /* the partial line so far */
	size_t len, cap, max;
};

/* max: the longest line allowed (0: WATCH_LINE_MAX). */
void watch_stream_init(struct watch_stream *ws, size_t max);
void watch_stream_release(struct watch_stream *ws);

/* Called with each whole line (without its "\n", not NUL-terminated);
 * return 0 to go on, -1 to stop (watch_stream_feed then returns -1 with
 * err as the callback left it). */
typedef int (*watch_line_fn)(const char *line, size_t len, void *ctx, char *err);

/* Feeds len bytes. Calls fn for every line they complete; keeps the rest.
 * Empty lines are skipped. Returns 0, or -1 with a message when a line
 * exceeds the cap ("watch line longer than N bytes") or fn stopped. */
int watch_stream_feed(struct watch_stream *ws, const char *data, size_t len, watch_line_fn fn,
                      void *ctx, char *err);

/* --- Events --- */

/* Parses one line into ev. Returns 0, or -1 with a message for a line that
 * is not a watch event (not JSON, no known type, no object). */
int watch_event_parse(struct watch_event *ev, const char *line, size_t len, char *err);

void watch_event_release(struct watch_event *ev);

#endif
