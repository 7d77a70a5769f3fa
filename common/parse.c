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
#include <string.h>

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

int parse_bool(const char *s, int *out, char *err)
{
	static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
	static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False"};

	for (size_t i = 0; s && i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcmp(s, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcmp(s, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return err_set(err, "'%s' is not true or false", s ? s : "");
}

int parse_duration_ms(const char *s, long long min_ms, long long max_ms, long long *out, char *err)
{
	static const struct {
		const char *unit;
		double ms;
	} units[] = {{"ms", 1}, {"s", 1e3}, {"m", 60e3}, {"h", 3600e3}};
	const char *p = s;
	double total = 0;

	if (s == NULL || *s == '\0')
		return err_set(err, "'' is no duration (write 15s, 500ms, 1m)");
	while (*p) {
		/* Go's form: digits, at most one '.', no sign, no exponent. */
		size_t d = strspn(p, "0123456789"), f = 0, k, len = 0;
		char num[32];
		double v;

		if (p[d] == '.')
			f = 1 + strspn(p + d + 1, "0123456789");
		if (d + f == 0 || (d == 0 && f == 1) || d + f >= sizeof(num))
			return err_set(err, "'%s' is no duration (write 15s, 500ms, 1m)", s);
		memcpy(num, p, d + f);
		num[d + f] = '\0';
		v = strtod(num, NULL);
		p += d + f;
		for (k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
			len = strlen(units[k].unit);
			/* "ms" comes before "m", so "m" never takes its "m". */
			if (strncmp(p, units[k].unit, len) == 0)
				break;
		}
		if (k == sizeof(units) / sizeof(units[0]))
			return err_set(err, "'%s': a number needs a unit (ms, s, m or h)", s);
		total += v * units[k].ms;
		if (total > 1e15)
			return err_set(err, "'%s' is too long", s);
		p += len;
	}
	if (total < (double)min_ms || total > (double)max_ms)
		return err_set(err, "'%s' is out of range [%lldms, %lldms]", s, min_ms, max_ms);
	*out = (long long)total;
	return 0;
}
