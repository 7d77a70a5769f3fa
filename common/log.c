/* log.c - one line per event, as text for people or JSON for machines.
 *
 * Each event is built in a buffer on the stack and written with one fwrite
 * under the stream lock, so lines from different threads never interleave.
 * Lines have a hard length cap; longer strings are cut and end in "...".
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#define LOG_LINE_MAX 8192
#define LOG_MSG_MAX  4096
/* Room kept free by content so that a line can always be closed: the
 * truncation mark, closing quotes, braces and the newline. */
#define LOG_RESERVE 16

static enum log_level log_level = LOG_INFO;
static enum log_format log_format = LOG_TEXT;
static FILE *log_stream; /* NULL means stderr, which is not a constant */

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};
static const char *const level_padded[] = {"debug", "info ", "warn ", "error"};

void log_set_level(enum log_level level)
{
	if (level >= LOG_DEBUG && level <= LOG_OFF)
		log_level = level;
}

void log_set_format(enum log_format format)
{
	if (format == LOG_TEXT || format == LOG_JSON)
		log_format = format;
}

void log_set_stream(FILE *stream)
{
	log_stream = stream;
}

enum log_level log_get_level(void)
{
	return log_level;
}

enum log_format log_get_format(void)
{
	return log_format;
}

int log_parse_level(const char *name, enum log_level *out)
{
	if (name == NULL)
		return -1;
	for (int i = LOG_DEBUG; i <= LOG_OFF; i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

int log_parse_format(const char *name, enum log_format *out)
{
	if (name == NULL)
		return -1;
	if (strcmp(name, "text") == 0) {
		*out = LOG_TEXT;
		return 0;
	}
	if (strcmp(name, "json") == 0) {
		*out = LOG_JSON;
		return 0;
	}
	return -1;
}

int log_enabled(enum log_level level)
{
	return level >= LOG_DEBUG && level < LOG_OFF && level >= log_level;
}

/* A line under construction. Once a string no longer fits, full is set and
 * all further content is dropped; only the closing bytes still go in. */
struct line {
	char buf[LOG_LINE_MAX];
	size_t len;
	int full;
};

static void line_raw(struct line *l, const char *s, size_t n)
{
	if (n > LOG_LINE_MAX - l->len)
		n = LOG_LINE_MAX - l->len;
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void line_str(struct line *l, const char *s)
{
	line_raw(l, s, strlen(s));
}

static void line_content(struct line *l, const char *s, size_t n)
{
	if (l->full)
		return;
	if (l->len + n + LOG_RESERVE > LOG_LINE_MAX) {
		l->full = 1;
		line_str(l, "...");
		return;
	}
	line_raw(l, s, n);
}

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one (overlong
 * forms, surrogates and code points past U+10FFFF included). Never reads past
 * a NUL. */
static int utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80;
	unsigned char hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if (s[0] == 0xe0)
			lo = 0xa0;
		if (s[0] == 0xed)
			hi = 0x9f;
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if (s[0] == 0xf0)
			lo = 0x90;
		if (s[0] == 0xf4)
			hi = 0x8f;
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80
		           ? 4
		           : 0;
	}
	return 0;
}

/* Appends s as a JSON string. Control characters are escaped and invalid
 * UTF-8 becomes U+FFFD, so every line is valid JSON whatever s holds. */
static void line_json_string(struct line *l, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	line_raw(l, "\"", 1);
	while (*p != '\0' && !l->full) {
		char esc[8];
		int n = utf8_len(p);

		if (n == 0) {
			line_content(l, "\\ufffd", 6);
			p++;
			continue;
		}
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			line_content(l, esc, 2);
		} else if (*p == '\n') {
			line_content(l, "\\n", 2);
		} else if (*p == '\r') {
			line_content(l, "\\r", 2);
		} else if (*p == '\t') {
			line_content(l, "\\t", 2);
		} else if (*p < 0x20 || *p == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			line_content(l, esc, 6);
		} else {
			line_content(l, (const char *)p, (size_t)n);
		}
		p += n;
	}
	line_raw(l, "\"", 1);
}

/* Appends s for a person to read on one line: control characters are
 * escaped; with quote, the value is quoted when it would not read back as
 * one key=value token. */
static void line_text_string(struct line *l, const char *s, int quote)
{
	const unsigned char *p = (const unsigned char *)s;

	if (quote) {
		quote = s[0] == '\0';
		for (; *p != '\0' && !quote; p++)
			quote = *p <= ' ' || *p == '"' || *p == '=' || *p == 0x7f;
		p = (const unsigned char *)s;
	}
	if (quote)
		line_raw(l, "\"", 1);
	for (; *p != '\0' && !l->full; p++) {
		char esc[8];

		if (*p == '\n') {
			line_content(l, "\\n", 2);
		} else if (*p == '\r') {
			line_content(l, "\\r", 2);
		} else if (*p == '\t') {
			line_content(l, "\\t", 2);
		} else if (*p < 0x20 || *p == 0x7f) {
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
			line_content(l, esc, 4);
		} else if (quote && (*p == '"' || *p == '\\')) {
			esc[0] = '\\';
			esc[1] = (char)*p;
			line_content(l, esc, 2);
		} else {
			line_content(l, (const char *)p, 1);
		}
	}
	if (quote)
		line_raw(l, "\"", 1);
}

/* ISO-8601 UTC with milliseconds: 2026-11-22T01:02:03.456Z */
static void format_time(char *out, size_t size)
{
	struct timespec ts;
	struct tm tm = {0};
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, size - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

static void emit(enum log_level level, const char *msg, const char *const *keys,
                 const char *const *vals, int n)
{
	struct line l;
	char ts[48];
	FILE *out = log_stream ? log_stream : stderr;

	l.len = 0;
	l.full = 0;
	format_time(ts, sizeof(ts));
	if (log_format == LOG_JSON) {
		line_str(&l, "{\"ts\":\"");
		line_str(&l, ts);
		line_str(&l, "\",\"level\":\"");
		line_str(&l, level_names[level]);
		line_str(&l, "\",\"msg\":");
		line_json_string(&l, msg);
		for (int i = 0; i < n && !l.full; i++) {
			if (keys[i] == NULL)
				continue;
			line_raw(&l, ",", 1);
			line_json_string(&l, keys[i]);
			line_raw(&l, ":", 1);
			line_json_string(&l, vals[i] ? vals[i] : "");
		}
		line_raw(&l, "}\n", 2);
	} else {
		line_str(&l, ts);
		line_raw(&l, " ", 1);
		line_str(&l, level_padded[level]);
		line_raw(&l, " ", 1);
		line_text_string(&l, msg, 0);
		for (int i = 0; i < n && !l.full; i++) {
			if (keys[i] == NULL)
				continue;
			line_raw(&l, " ", 1);
			line_text_string(&l, keys[i], 0);
			line_raw(&l, "=", 1);
			line_text_string(&l, vals[i] ? vals[i] : "", 1);
		}
		line_raw(&l, "\n", 1);
	}

	flockfile(out);
	fwrite(l.buf, 1, l.len, out);
	fflush(out);
	funlockfile(out);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char msg[LOG_MSG_MAX];
	int saved_errno = errno;
	va_list ap;
	int n;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	/* clang-tidy misreads ap when checking several files at once (llvm#40656).
	 * NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		snprintf(msg, sizeof(msg), "(bad log format '%s')", fmt);
	else if ((size_t)n >= sizeof(msg))
		memcpy(msg + sizeof(msg) - 4, "...", 4);
	emit(level, msg, NULL, NULL, 0);
	/* Callers log and then report errno; logging must not change it. */
	errno = saved_errno;
}

void log_kv(enum log_level level, const char *msg, const char *const *keys, const char *const *vals,
            int n)
{
	int saved_errno = errno;

	if (!log_enabled(level))
		return;
	if (keys == NULL || vals == NULL || n < 0)
		n = 0;
	emit(level, msg ? msg : "", keys, vals, n);
	errno = saved_errno;
}
