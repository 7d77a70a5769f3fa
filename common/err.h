/* err.h - error buffers and fatal errors.
 *
 * Recoverable code returns 0 / -1 and writes one lower-case message into a
 * caller-provided buffer of ERR_LEN bytes (redis anet style). The caller that
 * decides what to do logs it once. Fatal start-up errors go through die().
 */
#ifndef MWJ_ERR_H
#define MWJ_ERR_H

#include <stddef.h>

#define ERR_LEN 512

/* Formats a message into err (ERR_LEN bytes, always NUL-terminated, truncated
 * if too long) and returns -1, so that callers can write
 * `return err_set(err, "open '%s': %s", path, strerror(errno));`.
 * err may be NULL, in which case only -1 is returned. */
int err_set(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes an existing message in err with a formatted context, separated by
 * ": ", e.g. err_prefix(err, "load '%s'", path). Returns -1. */
int err_prefix(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints "fatal: <file>:<line>: <message>" on stderr and exits with status 1.
 * For start-up misconfiguration and out-of-memory, never for bad input that a
 * caller could report. */
#define die(...) die_at(__FILE__, __LINE__, __VA_ARGS__)
void die_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

/* malloc/calloc that die() on failure. Sizes are checked for overflow. */
void *xmalloc(size_t size);
void *xcalloc(size_t count, size_t size);

#endif
