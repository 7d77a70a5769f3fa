/* log.h - one line per event on stderr, as text for people or JSON for machines.
 *
 * The level is checked before anything is formatted. Text lines look like
 *   2026-11-22T01:02:03.456Z info  loaded 60000 images from '/data'
 * and JSON lines like
 *   {"ts":"2026-11-22T01:02:03.456Z","level":"info","msg":"loaded ..."}
 * Extra key/value fields can be attached with log_kv().
 */
#ifndef MWJ_LOG_H
#define MWJ_LOG_H

#include <stdio.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_OFF };
enum log_format { LOG_TEXT, LOG_JSON };

/* Configuration: process-wide, set once at start before threads exist.
 * Defaults: LOG_INFO, LOG_TEXT, stderr. */
void log_set_level(enum log_level level);
void log_set_format(enum log_format format);
void log_set_stream(FILE *stream); /* for tests; NULL restores stderr */
enum log_level log_get_level(void);
enum log_format log_get_format(void);

/* Parses "debug|info|warn|error|off" and "text|json". Return 0, or -1 for an
 * unknown name. */
int log_parse_level(const char *name, enum log_level *out);
int log_parse_format(const char *name, enum log_format *out);

/* Whether a message at level would be written. */
int log_enabled(enum log_level level);

/* Writes one event. The message is printf-formatted. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes one event with extra fields: keys[i] = vals[i], n pairs, values
 * emitted as JSON strings (in text form as key=value after the message). */
void log_kv(enum log_level level, const char *msg, const char *const *keys, const char *const *vals,
            int n);

#define log_debug(...) (log_enabled(LOG_DEBUG) ? log_msg(LOG_DEBUG, __VA_ARGS__) : (void)0)
#define log_info(...)  (log_enabled(LOG_INFO) ? log_msg(LOG_INFO, __VA_ARGS__) : (void)0)
#define log_warn(...)  (log_enabled(LOG_WARN) ? log_msg(LOG_WARN, __VA_ARGS__) : (void)0)
#define log_error(...) (log_enabled(LOG_ERROR) ? log_msg(LOG_ERROR, __VA_ARGS__) : (void)0)

#endif
