/* ratelimit.h - a token bucket for log lines that strangers can trigger.
 *
 * A flood of bad connections must not fill the log, yet the first of them
 * and a steady trickle must still be seen. The bucket holds up to burst
 * tokens and gains one every interval_ms; each allowed event takes one.
 * Events refused are counted, so that the next line allowed can say how
 * many were left out.
 *
 * Not thread-safe: give each thread that logs its own bucket.
 */
#ifndef MWJ_RATELIMIT_H
#define MWJ_RATELIMIT_H

struct ratelimit {
	int burst;          /* most tokens held */
	long long interval; /* milliseconds per new token */
	int tokens;
	long long refilled_ms; /* when tokens were last topped up */
	long long suppressed;  /* events refused since the last allowed one */
};

/* A bucket that starts full. */
void ratelimit_init(struct ratelimit *rl, int burst, long long interval_ms);

/* Whether an event at now_ms (any monotonic millisecond clock) may be
 * logged. When it may, *suppressed is set to how many events were refused
 * since the last allowed one, and the count starts again. */
int ratelimit_allow(struct ratelimit *rl, long long now_ms, long long *suppressed);

#endif
