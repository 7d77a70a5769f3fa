/* timers.h - everything that is due at a time, on one thread: a job's
 * deadline, its time-to-live, a retry after back-off. A min-heap of
 * (due time, key), so that no timer waits for an unrelated event (TFJob's
 * activeDeadlineSeconds fired only when some other event arrived).
 *
 * Each key has at most one pending timer: setting it again keeps the
 * earlier of the two due times, so that several reasons to come back to
 * one job collapse into one wake-up. When a timer is due, the callback is
 * called with its key on the timers' thread (the work queue adds the key).
 */
#ifndef MWJ_TIMERS_H
#define MWJ_TIMERS_H

#include <pthread.h>

#include "strmap.h"

typedef void (*timers_fn)(void *ctx, const char *key);

struct timer_entry;

struct timers {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct timer_entry **heap; /* by due time */
	size_t len, cap;
	struct strmap by_key; /* key -> struct timer_entry * */
	timers_fn fn;
	void *ctx;
	pthread_t thread;
	int started, stopping;
};

/* Monotonic milliseconds, the clock every due time is on. */
long long timers_now_ms(void);

/* Sets t up and starts its thread. Returns 0, or -1 with a message. */
int timers_start(struct timers *t, timers_fn fn, void *ctx, char *err);

/* Calls fn(ctx, key) at due_ms (timers_now_ms clock), or at once if that
 * has passed; if key already has a timer, the earlier due time wins. */
void timers_set(struct timers *t, const char *key, long long due_ms);

/* Forgets key's timer, if any. */
void timers_cancel(struct timers *t, const char *key);

/* The due time of key's timer, or -1. */
long long timers_due(struct timers *t, const char *key);

/* Stops the thread and frees everything; pending timers never fire.
 * Accepts a zeroed struct. */
void timers_stop(struct timers *t);

#endif
