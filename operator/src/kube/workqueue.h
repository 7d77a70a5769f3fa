/* workqueue.h - the keys of the jobs to reconcile, as client-go's rate
 * limited work queue keeps them:
 *
 * - a key is queued at most once however often it is added (adding it
 *   again while it waits changes nothing);
 * - no two workers ever hold the same key: a key added while a worker
 *   processes it is queued again once that worker is done;
 * - a key whose reconcile failed comes back after a per-key exponential
 *   back-off (base doubling up to a cap), reset by workqueue_forget when
 *   it succeeds; each failure's back-off replaces the one before, so that
 *   the delay workqueue_add_rate_limited returns is when the key comes
 *   back when nothing else adds it, never sooner;
 * - as in client-go, workqueue_add (an event) or a due workqueue_add_after
 *   brings a key in back-off at once: workqueue_get_taken says so, and by
 *   how much the retry comes early, so that the log can say it too; a
 *   pass that then succeeds (workqueue_forget) cancels the back-off left;
 * - workqueue_add_after brings a key back at a time (timers.h), for
 *   deadlines and time-to-live;
 * - workqueue_shutdown wakes every waiting worker; get then returns 0.
 *
 * Thread-safe.
 */
#ifndef MWJ_WORKQUEUE_H
#define MWJ_WORKQUEUE_H

#include <pthread.h>

#include "strmap.h"
#include "timers.h"

#define WORKQUEUE_KEY_LEN 512

struct workqueue_item;

/* What queued the key that workqueue_get_taken hands out. */
enum workqueue_reason {
	WORKQUEUE_ADDED,         /* workqueue_add: an event */
	WORKQUEUE_DELAY_ENDED,   /* workqueue_add_after's time came */
	WORKQUEUE_BACKOFF_ENDED, /* its back-off after a failure ended */
};

struct workqueue_taken {
	enum workqueue_reason why;
	unsigned long failures;    /* consecutive failures before this pass: it is retry N */
	long long backoff_left_ms; /* > 0: its back-off had this long to run; the retry
	                              comes early, brought by why */
};

struct workqueue {
	pthread_mutex_t lock;
	pthread_cond_t ready;
	struct workqueue_item *head, *tail; /* the queue, in order of arrival */
	struct strmap queued;               /* keys in the queue */
	struct strmap processing;           /* keys a worker holds */
	struct strmap dirty;                /* keys added while processed: queue again when done */
	struct strmap failures;             /* key -> (void *)(uintptr_t)consecutive failures */
	struct strmap backoff_due;          /* key -> (void *)(uintptr_t)when its back-off ends */
	struct timers timers;               /* add_after and back-off, apart (workqueue.c) */
	int backoff_base_ms, backoff_max_ms;
	int shutting_down;
	/* Counters, for logs and metrics. */
	unsigned long adds, retries;
};

#define WORKQUEUE_BACKOFF_BASE_MS 500
#define WORKQUEUE_BACKOFF_MAX_MS  60000

/* Sets q up and starts its timers. base_ms, max_ms: the back-off (0: the
 * defaults above). Returns 0, or -1 with a message. */
int workqueue_init(struct workqueue *q, int base_ms, int max_ms, char *err);

/* Queues key (see above). */
void workqueue_add(struct workqueue *q, const char *key);

/* A periodic resync's workqueue_add: queues key unless a back-off after a
 * failure is pending for it (that retry comes anyway, and a resync must not
 * bring a refused job back sooner). Returns 1 if queued, 0 if not. */
int workqueue_resync(struct workqueue *q, const char *key);

/* Queues key in delay_ms (at once when <= 0). */
void workqueue_add_after(struct workqueue *q, const char *key, long long delay_ms);

/* Queues key after its back-off, which doubles with each call until
 * workqueue_forget, and replaces the back-off still pending from the call
 * before. Returns the delay chosen, in ms. */
long long workqueue_add_rate_limited(struct workqueue *q, const char *key);

/* Resets key's back-off (its reconcile succeeded), and cancels the rest
 * of one still pending. */
void workqueue_forget(struct workqueue *q, const char *key);

/* Takes the next key into out (WORKQUEUE_KEY_LEN), waiting for one.
 * Returns 1, or 0 when the queue is shutting down. The caller must call
 * workqueue_done with the key. */
int workqueue_get(struct workqueue *q, char *out);

/* workqueue_get, and fills t (NULL: not wanted) with why the key came
 * and whether it came before its back-off ended. */
int workqueue_get_taken(struct workqueue *q, char *out, struct workqueue_taken *t);

/* Releases key from its worker; queues it again if it was added meanwhile. */
void workqueue_done(struct workqueue *q, const char *key);

/* How many keys wait, for logs and metrics. */
size_t workqueue_len(struct workqueue *q);

/* How long the key at the head of the queue has waited, and how long the
 * longest-held key has been with its worker (0 when none), in ms, for
 * metrics and /healthz (a reconcile that never ends). */
void workqueue_ages(struct workqueue *q, long long *oldest_wait_ms, long long *longest_held_ms);

/* Wakes every worker: get returns 0 from now on. */
void workqueue_shutdown(struct workqueue *q);

/* Frees q after its workers have stopped. Accepts a zeroed struct. */
void workqueue_release(struct workqueue *q);

#endif
