/* timefmt.h - times as the Kubernetes API writes them: RFC 3339 in UTC,
 * seconds ("2026-11-25T01:02:03Z", metav1.Time) or microseconds
 * ("2026-11-25T01:02:03.000000Z", metav1.MicroTime, which a real API
 * server requires with exactly six fractional digits), and back.
 */
#ifndef MWJ_TIMEFMT_H
#define MWJ_TIMEFMT_H

#include <stddef.h>
#include <time.h>

#define TIMEFMT_LEN 32

/* t (Unix seconds) as "YYYY-MM-DDTHH:MM:SSZ" into out (TIMEFMT_LEN). */
void timefmt_rfc3339(time_t t, char *out);

/* ts as "YYYY-MM-DDTHH:MM:SS.uuuuuuZ" into out (TIMEFMT_LEN). */
void timefmt_micro(const struct timespec *ts, char *out);

/* The current wall-clock time in those forms. */
void timefmt_now(char *out);
void timefmt_now_micro(char *out);

/* Parses an RFC 3339 time ("Z" or a numeric offset, any number of
 * fractional digits) into Unix seconds (the fraction dropped). Returns 0,
 * or -1 for anything else. */
int timefmt_parse(const char *s, long long *out);

#endif
