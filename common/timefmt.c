/* timefmt.c - RFC 3339 times as the Kubernetes API writes and reads them.
 *
 * Dates are converted with the proleptic Gregorian day count of
 * days_from_civil() (Howard Hinnant's algorithm) rather than timegm(), so
 * that parsing depends on no time zone setting and no range of time_t.
 */
#include "timefmt.h"

#include <stdio.h>
#include <string.h>

/* RFC 3339 years have four digits: times outside them are clamped. */
#define TIMEFMT_MIN (-62167219200LL) /* 0000-01-01T00:00:00Z */
#define TIMEFMT_MAX 253402300799LL   /* 9999-12-31T23:59:59Z */

/* Days since 1970-01-01 of y-m-d (m 1..12, d 1..31). */
static long long days_from_civil(long long y, int m, int d)
{
	long long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* The civil date of z days since 1970-01-01. */
static void civil_from_days(long long z, long long *y, int *m, int *d)
{
	long long era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* "YYYY-MM-DDTHH:MM:SS" of t, without the zone, into out (TIMEFMT_LEN). */
static void format_seconds(long long t, char *out)
{
	long long days, y;
	unsigned secs;
	int m, d;

	if (t < TIMEFMT_MIN)
		t = TIMEFMT_MIN;
	if (t > TIMEFMT_MAX)
		t = TIMEFMT_MAX;
	/* Floor division: -1 is 1969-12-31T23:59:59. */
	days = t / 86400 - (t % 86400 < 0);
	secs = (unsigned)(t - days * 86400) % 86400;
	civil_from_days(days, &y, &m, &d);
	/* Clamped above to years 0..9999; the modulos tell the compiler the
	 * fields' widths. */
	snprintf(out, TIMEFMT_LEN, "%04u-%02u-%02uT%02u:%02u:%02u", (unsigned)y % 10000,
	         (unsigned)m % 100, (unsigned)d % 100, secs / 3600, secs / 60 % 60, secs % 60);
}

void timefmt_rfc3339(time_t t, char *out)
{
	size_t n;

	format_seconds((long long)t, out);
	n = strlen(out);
	snprintf(out + n, TIMEFMT_LEN - n, "Z");
}

void timefmt_micro(const struct timespec *ts, char *out)
{
	long nsec = ts->tv_nsec;
	long long t = (long long)ts->tv_sec;
	size_t n;

	/* A normalised timespec has 0 <= tv_nsec < 1e9; anything else is cut
	 * into range rather than printed as more than six digits. */
	if (nsec < 0)
		nsec = 0;
	if (nsec > 999999999L)
		nsec = 999999999L;
	if (t < TIMEFMT_MIN || t > TIMEFMT_MAX)
		nsec = t < TIMEFMT_MIN ? 0 : 999999999L;
	format_seconds(t, out);
	n = strlen(out);
	snprintf(out + n, TIMEFMT_LEN - n, ".%06ldZ", nsec / 1000);
}

void timefmt_now(char *out)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	timefmt_rfc3339(ts.tv_sec, out);
}

void timefmt_now_micro(char *out)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	timefmt_micro(&ts, out);
}

/* Reads exactly n digits at *s into *v, advancing *s. */
static int digits(const char **s, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		char c = (*s)[i];

		if (c < '0' || c > '9')
			return -1;
		*v = *v * 10 + (c - '0');
	}
	*s += n;
	return 0;
}

/* Reads the character c at *s, advancing *s. */
static int expect(const char **s, char c)
{
	if (**s != c)
		return -1;
	(*s)++;
	return 0;
}

static int is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* The zone at *s: "Z" (or "z") gives 0, "+HH:MM" / "-HH:MM" the offset in
 * seconds east of UTC. It must end the string. */
static int parse_zone(const char *s, long long *offset)
{
	int sign, hh, mm;

	if ((s[0] == 'Z' || s[0] == 'z') && s[1] == '\0') {
		*offset = 0;
		return 0;
	}
	if (s[0] != '+' && s[0] != '-')
		return -1;
	sign = s[0] == '-' ? -1 : 1;
	s++;
	if (digits(&s, 2, &hh) < 0 || expect(&s, ':') < 0 || digits(&s, 2, &mm) < 0 || *s != '\0' ||
	    hh > 23 || mm > 59)
		return -1;
	*offset = sign * (hh * 3600LL + mm * 60LL);
	return 0;
}

int timefmt_parse(const char *s, long long *out)
{
	int y, mo, d, h, mi, sec;
	long long offset = 0;

	if (s == NULL)
		return -1;
	if (digits(&s, 4, &y) < 0 || expect(&s, '-') < 0 || digits(&s, 2, &mo) < 0 ||
	    expect(&s, '-') < 0 || digits(&s, 2, &d) < 0)
		return -1;
	/* RFC 3339 allows a lower-case "t" as well. */
	if (*s != 'T' && *s != 't')
		return -1;
	s++;
	if (digits(&s, 2, &h) < 0 || expect(&s, ':') < 0 || digits(&s, 2, &mi) < 0 ||
	    expect(&s, ':') < 0 || digits(&s, 2, &sec) < 0)
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 60)
		return -1;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return -1;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (parse_zone(s, &offset) < 0)
		return -1;
	/* A leap second (:60) counts as the next minute's first, as POSIX
	 * time does. */
	*out = days_from_civil(y, mo, d) * 86400 + h * 3600LL + mi * 60LL + sec - offset;
	return 0;
}
