/* err.c - error buffers and fatal errors. */
#include "err.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int err_set(char *err, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return -1;
	va_start(ap, fmt);
	/* clang-tidy misreads ap when checking several files at once (llvm#40656).
	 * NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	if (vsnprintf(err, ERR_LEN, fmt, ap) < 0)
		err[0] = '\0';
	va_end(ap);
	return -1;
}

int err_prefix(char *err, const char *fmt, ...)
{
	/* The prefix is formatted into its own buffer first: its arguments may
	 * point into err itself. */
	char prefix[ERR_LEN];
	char old[ERR_LEN];
	size_t len;
	va_list ap;

	if (err == NULL)
		return -1;
	va_start(ap, fmt);
	/* clang-tidy misreads ap when checking several files at once (llvm#40656).
	 * NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	if (vsnprintf(prefix, sizeof(prefix), fmt, ap) < 0)
		prefix[0] = '\0';
	va_end(ap);

	len = strnlen(err, sizeof(old) - 1);
	memcpy(old, err, len);
	old[len] = '\0';
	/* Too long a result is cut at the end, like err_set(). */
	if (old[0] == '\0')
		memcpy(err, prefix, sizeof(prefix));
	else if (snprintf(err, ERR_LEN, "%s: %s", prefix, old) < 0)
		err[0] = '\0';
	return -1;
}

void die_at(const char *file, int line, const char *fmt, ...)
{
	/* One buffer, one write: a fatal message must not interleave with log
	 * lines from other threads. */
	char msg[ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	/* clang-tidy misreads ap when checking several files at once (llvm#40656).
	 * NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0)
		msg[0] = '\0';
	va_end(ap);
	fprintf(stderr, "fatal: %s:%d: %s\n", file, line, msg);
	exit(1);
}

void *xmalloc(size_t size)
{
	/* malloc(0) may legitimately return NULL; ask for one byte instead so
	 * that NULL always means out of memory. */
	void *p = malloc(size ? size : 1);

	if (p == NULL)
		die("out of memory allocating %zu bytes", size);
	return p;
}

void *xcalloc(size_t count, size_t size)
{
	void *p;

	if (size != 0 && count > SIZE_MAX / size)
		die("allocation of %zu * %zu bytes overflows", count, size);
	if (count == 0 || size == 0)
		p = calloc(1, 1);
	else
		p = calloc(count, size);
	if (p == NULL)
		die("out of memory allocating %zu * %zu bytes", count, size);
	return p;
}
