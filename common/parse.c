/* parse.c - checked number parsing for flags, environment and config.
 *
 * The strto* functions are permissive in ways a flag parser must not be: they
 * skip leading whitespace, stop quietly at trailing garbage, accept "-1" as an
 * unsigned number and "nan"/"inf" as doubles. Each of those is checked here.
 */
#include "parse.h"

#include "err.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

/* Rejects what strto* would accept or skip before looking at the number. */
static int starts_like_number(const char *s)
{
	return s != NULL && s[0] != '\0' && !isspace((unsigned char)s[0]);
}

int parse_i64(const char *s, int64_t min, int64_t max, int64_t *out, char *err)
{
	char *end = NULL;
	long long v;

	if (!starts_like_number(s))
		return err_set(err, "'%s' is not a whole number", s ? s : "");
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end != '\0')
		return err_set(err, "'%s' is not a whole number", s);
	if (errno == ERANGE || v < min || v > max)
		return err_set(err, "'%s' is out of range [%" PRId64 ", %" PRId64 "]", s, min, max);
	*out = v;
	return 0;
}

int parse_int(const char *s, int min, int max, int *out, char *err)
{
	int64_t v = 0;

	if (parse_i64(s, min, max, &v, err) < 0)
		return -1;
	*out = (int)v;
	return 0;
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err)
{
	char *end = NULL;
	unsigned long long v;

	if (!starts_like_number(s))
		return err_set(err, "'%s' is not a whole number", s ? s : "");
	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || *end != '\0')
		return err_set(err, "'%s' is not a whole number", s);
	/* strtoull negates "-1" into ULLONG_MAX; only "-0" is really in range. */
	if (errno == ERANGE || (s[0] == '-' && v != 0) || v < min || v > max)
		return err_set(err, "'%s' is out of range [%" PRIu64 ", %" PRIu64 "]", s, min, max);
	*out = v;
	return 0;
}

int parse_double(const char *s, double min, double max, double *out, char *err)
{
	char *end = NULL;
	double v;

	if (!starts_like_number(s))
		return err_set(err, "'%s' is not a number", s ? s : "");
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0')
		return err_set(err, "'%s' is not a number", s);
	/* ERANGE also reports underflow, where the result is a usable value
	 * next to zero; only overflow to infinity is an error. */
	if (errno == ERANGE && isinf(v))
		return err_set(err, "'%s' is out of range [%g, %g]", s, min, max);
	if (!isfinite(v))
		return err_set(err, "'%s' is not a finite number", s);
	if (v < min || v > max)
		return err_set(err, "'%s' is out of range [%g, %g]", s, min, max);
	*out = v;
	return 0;
}
