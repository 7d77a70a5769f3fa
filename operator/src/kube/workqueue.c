/* workqueue.c - client-go's rate limited work queue (util/workqueue:
 * queue.go, delaying_queue.go, ItemExponentialFailureRateLimiter).
 *
 * client-go's dirty set is split in two here: `queued` holds the keys in
 * the queue and `dirty` only those added while a worker held them, so
 * that a key is in at most one of queued, processing and dirty+processing,
 * and the queue itself is a plain FIFO list of the keys in `queued`.
 *
 * A key may wait on two timers at once: its delay (add_after: a deadline,
 * a time to live) and its back-off. They are kept apart, each timer's key
 * being the queue's key behind one byte that names the kind, so that a
 * new back-off replaces the old one (a stale back-off would bring the key
 * back sooner than announced) while add_after keeps the earlier of two
 * delays (several reasons to come back collapse into one wake-up). */
#include "workqueue.h"

#include "err.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct workqueue_item {
	struct workqueue_item *next;
	long long added_ms;        /* when it entered the queue (timers_now_ms) */
	enum workqueue_reason why; /* what queued it */
	char key[];
};

/* The kind of a timer: its key's first byte. */
enum { TIMER_DELAY = 'd', TIMER_BACKOFF = 'b' };

/* Kubernetes keys ("namespace/name": 63 + 1 + 253 bytes) always fit; a
 * longer one cannot be handed to get's buffer, so it is never queued. */
static int key_fits(const char *key)
{
	return strnlen(key, WORKQUEUE_KEY_LEN) < WORKQUEUE_KEY_LEN;
}

/* Values kept in a map's value pointer itself (counts, times, reasons),
 * never dereferenced. */
static void *as_value(uintptr_t v)
{
	/* NOLINTNEXTLINE(performance-no-int-to-ptr): never dereferenced */
	return (void *)v;
}

/* The failure count is kept in the map's value pointer itself, as the
 * header says, so that counting needs no allocation. */
static uintptr_t failures_of(struct workqueue *q, const char *key)
{
	return (uintptr_t)strmap_get(&q->failures, key);
}

static void set_failures(struct workqueue *q, const char *key, uintptr_t n)
{
	strmap_put(&q->failures, key, as_value(n));
}

/* base * 2^failures, capped at max; doubling stops at the cap, so there
 * is no overflow however many failures. */
static long long backoff_ms(long long base, long long max, uintptr_t failures)
{
	long long d = base;

	for (uintptr_t i = 0; i < failures && d < max; i++)
		d *= 2;
	return d < max ? d : max;
}

/* The timers' key of key's timer of a kind, into out (WORKQUEUE_KEY_LEN + 1). */
static void timer_key(char *out, int kind, const char *key)
{
	out[0] = (char)kind;
	memcpy(out + 1, key, strlen(key) + 1);
}

static void push_locked(struct workqueue *q, const char *key, enum workqueue_reason why)
{
	size_t n = strlen(key) + 1;
	struct workqueue_item *it = xmalloc(sizeof(*it) + n);

	memcpy(it->key, key, n);
	it->next = NULL;
	it->added_ms = timers_now_ms();
	it->why = why;
	if (q->tail != NULL)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	strmap_put(&q->queued, key, it);
	pthread_cond_signal(&q->ready);
}

static void add_locked(struct workqueue *q, const char *key, enum workqueue_reason why)
{
	if (q->shutting_down || strmap_has(&q->queued, key) || strmap_has(&q->dirty, key))
		return;
	q->adds++;
	/* Its worker queues it again in done: never two workers on one key. */
	if (strmap_has(&q->processing, key)) {
		strmap_put(&q->dirty, key, as_value((uintptr_t)why));
		return;
	}
	push_locked(q, key, why);
}

/* The timers' callback: a delay or a back-off is over. */
static void on_timer(void *ctx, const char *tkey)
{
	struct workqueue *q = ctx;
	const char *key = tkey + 1;

	pthread_mutex_lock(&q->lock);
	if (tkey[0] == TIMER_BACKOFF) {
		strmap_remove(&q->backoff_due, key);
		add_locked(q, key, WORKQUEUE_BACKOFF_ENDED);
	} else {
		add_locked(q, key, WORKQUEUE_DELAY_ENDED);
	}
	pthread_mutex_unlock(&q->lock);
}

int workqueue_init(struct workqueue *q, int base_ms, int max_ms, char *err)
{
	int rc;

	memset(q, 0, sizeof(*q));
	strmap_init(&q->queued);
	strmap_init(&q->processing);
	strmap_init(&q->dirty);
	strmap_init(&q->failures);
	strmap_init(&q->backoff_due);
	q->backoff_base_ms = base_ms > 0 ? base_ms : WORKQUEUE_BACKOFF_BASE_MS;
	q->backoff_max_ms = max_ms > 0 ? max_ms : WORKQUEUE_BACKOFF_MAX_MS;
	rc = pthread_mutex_init(&q->lock, NULL);
	if (rc != 0)
		return err_set(err, "workqueue: pthread_mutex_init: %s", strerror(rc));
	rc = pthread_cond_init(&q->ready, NULL);
	if (rc != 0) {
		pthread_mutex_destroy(&q->lock);
		return err_set(err, "workqueue: pthread_cond_init: %s", strerror(rc));
	}
	if (timers_start(&q->timers, on_timer, q, err) < 0) {
		pthread_cond_destroy(&q->ready);
		pthread_mutex_destroy(&q->lock);
		return err_prefix(err, "workqueue");
	}
	return 0;
}

void workqueue_add(struct workqueue *q, const char *key)
{
	if (!key_fits(key))
		return;
	pthread_mutex_lock(&q->lock);
	add_locked(q, key, WORKQUEUE_ADDED);
	pthread_mutex_unlock(&q->lock);
}

int workqueue_resync(struct workqueue *q, const char *key)
{
	int add;

	if (!key_fits(key))
		return 0;
	pthread_mutex_lock(&q->lock);
	add = !strmap_has(&q->backoff_due, key);
	if (add)
		add_locked(q, key, WORKQUEUE_ADDED);
	pthread_mutex_unlock(&q->lock);
	return add;
}

void workqueue_add_after(struct workqueue *q, const char *key, long long delay_ms)
{
	char tkey[WORKQUEUE_KEY_LEN + 1];
	long long now;
	int down;

	if (delay_ms <= 0) {
		workqueue_add(q, key);
		return;
	}
	if (!key_fits(key))
		return;
	pthread_mutex_lock(&q->lock);
	down = q->shutting_down;
	pthread_mutex_unlock(&q->lock);
	if (down)
		return;
	now = timers_now_ms();
	if (delay_ms > LLONG_MAX - now)
		delay_ms = LLONG_MAX - now;
	/* A key already waiting keeps the earlier of the two times. */
	timer_key(tkey, TIMER_DELAY, key);
	timers_set(&q->timers, tkey, now + delay_ms);
}

long long workqueue_add_rate_limited(struct workqueue *q, const char *key)
{
	char tkey[WORKQUEUE_KEY_LEN + 1];
	long long delay, due;
	uintptr_t n;
	int down;

	if (!key_fits(key))
		return 0;
	pthread_mutex_lock(&q->lock);
	n = failures_of(q, key);
	delay = backoff_ms(q->backoff_base_ms, q->backoff_max_ms, n);
	if (n < UINTPTR_MAX)
		set_failures(q, key, n + 1);
	q->retries++;
	due = timers_now_ms() + delay;
	down = q->shutting_down;
	if (!down)
		strmap_put(&q->backoff_due, key, as_value((uintptr_t)due));
	pthread_mutex_unlock(&q->lock);
	if (down)
		return delay;
	/* This failure's back-off, not the earlier of it and the last one's. */
	timer_key(tkey, TIMER_BACKOFF, key);
	timers_cancel(&q->timers, tkey);
	timers_set(&q->timers, tkey, due);
	return delay;
}

void workqueue_forget(struct workqueue *q, const char *key)
{
	char tkey[WORKQUEUE_KEY_LEN + 1];

	if (!key_fits(key))
		return;
	pthread_mutex_lock(&q->lock);
	strmap_remove(&q->failures, key);
	strmap_remove(&q->backoff_due, key);
	pthread_mutex_unlock(&q->lock);
	/* A pass that came early and succeeded leaves nothing to retry. */
	timer_key(tkey, TIMER_BACKOFF, key);
	timers_cancel(&q->timers, tkey);
}

int workqueue_get_taken(struct workqueue *q, char *out, struct workqueue_taken *t)
{
	struct workqueue_item *it;
	long long now;

	pthread_mutex_lock(&q->lock);
	while (q->head == NULL && !q->shutting_down)
		pthread_cond_wait(&q->ready, &q->lock);
	if (q->shutting_down) {
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	it = q->head;
	q->head = it->next;
	if (q->head == NULL)
		q->tail = NULL;
	strmap_remove(&q->queued, it->key);
	now = timers_now_ms();
	strmap_put(&q->processing, it->key, as_value((uintptr_t)now));
	if (t != NULL) {
		long long due = (long long)(uintptr_t)strmap_get(&q->backoff_due, it->key);

		t->why = it->why;
		t->failures = (unsigned long)failures_of(q, it->key);
		t->backoff_left_ms = due > now ? due - now : 0;
	}
	pthread_mutex_unlock(&q->lock);
	/* key_fits let in only keys shorter than out. */
	memcpy(out, it->key, strlen(it->key) + 1);
	free(it);
	return 1;
}

int workqueue_get(struct workqueue *q, char *out)
{
	return workqueue_get_taken(q, out, NULL);
}

void workqueue_done(struct workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	strmap_remove(&q->processing, key);
	if (strmap_has(&q->dirty, key)) {
		enum workqueue_reason why =
		    (enum workqueue_reason)(uintptr_t)strmap_get(&q->dirty, key);

		strmap_remove(&q->dirty, key);
		if (!q->shutting_down)
			push_locked(q, key, why);
	}
	pthread_mutex_unlock(&q->lock);
}

size_t workqueue_len(struct workqueue *q)
{
	size_t n;

	pthread_mutex_lock(&q->lock);
	n = q->queued.len;
	pthread_mutex_unlock(&q->lock);
	return n;
}

void workqueue_ages(struct workqueue *q, long long *oldest_wait_ms, long long *longest_held_ms)
{
	long long now = timers_now_ms(), held = 0;
	struct strmap_slot *slot;
	size_t i = 0;

	pthread_mutex_lock(&q->lock);
	*oldest_wait_ms = q->head != NULL ? now - q->head->added_ms : 0;
	while ((slot = strmap_next(&q->processing, &i)) != NULL) {
		long long since = (long long)(uintptr_t)slot->value;

		if (now - since > held)
			held = now - since;
	}
	*longest_held_ms = held;
	pthread_mutex_unlock(&q->lock);
}

void workqueue_shutdown(struct workqueue *q)
{
	pthread_mutex_lock(&q->lock);
	q->shutting_down = 1;
	pthread_cond_broadcast(&q->ready);
	pthread_mutex_unlock(&q->lock);
}

void workqueue_release(struct workqueue *q)
{
	int inited;

	if (q == NULL)
		return;
	inited = q->timers.started;
	/* First, so that no timer adds a key into what is being freed. */
	timers_stop(&q->timers);
	while (q->head != NULL) {
		struct workqueue_item *next = q->head->next;
		free(q->head);
		q->head = next;
	}
	strmap_release(&q->queued, NULL);
	strmap_release(&q->processing, NULL);
	strmap_release(&q->dirty, NULL);
	strmap_release(&q->failures, NULL);
	strmap_release(&q->backoff_due, NULL);
	if (inited) {
		pthread_cond_destroy(&q->ready);
		pthread_mutex_destroy(&q->lock);
	}
	memset(q, 0, sizeof(*q));
}
