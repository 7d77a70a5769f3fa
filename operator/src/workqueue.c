/* workqueue.c - client-go's rate limited work queue (util/workqueue:
 * queue.go, delaying_queue.go, ItemExponentialFailureRateLimiter).
 *
 * client-go's dirty set is split in two here: `queued` holds the keys in
 * the queue and `dirty` only those added while a worker held them, so
 * that a key is in at most one of queued, processing and dirty+processing,
 * and the queue itself is a plain FIFO list of the keys in `queued`. */
#include "workqueue.h"

#include "err.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct workqueue_item {
	struct workqueue_item *next;
	long long added_ms; /* when it entered the queue (timers_now_ms) */
	char key[];
};

/* Kubernetes keys ("namespace/name": 63 + 1 + 253 bytes) always fit; a
 * longer one cannot be handed to get's buffer, so it is never queued. */
static int key_fits(const char *key)
{
	return strnlen(key, WORKQUEUE_KEY_LEN) < WORKQUEUE_KEY_LEN;
}

/* The failure count is kept in the map's value pointer itself, as the
 * header says, so that counting needs no allocation. */
static uintptr_t failures_of(struct workqueue *q, const char *key)
{
	return (uintptr_t)strmap_get(&q->failures, key);
}

static void set_failures(struct workqueue *q, const char *key, uintptr_t n)
{
	/* NOLINTNEXTLINE(performance-no-int-to-ptr): a counter, never dereferenced */
	strmap_put(&q->failures, key, (void *)n);
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

static void push_locked(struct workqueue *q, const char *key)
{
	size_t n = strlen(key) + 1;
	struct workqueue_item *it = xmalloc(sizeof(*it) + n);

	memcpy(it->key, key, n);
	it->next = NULL;
	it->added_ms = timers_now_ms();
	if (q->tail != NULL)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	strmap_put(&q->queued, key, it);
	pthread_cond_signal(&q->ready);
}

static void add_locked(struct workqueue *q, const char *key)
{
	if (q->shutting_down || strmap_has(&q->queued, key) || strmap_has(&q->dirty, key))
		return;
	q->adds++;
	/* Its worker queues it again in done: never two workers on one key. */
	if (strmap_has(&q->processing, key)) {
		strmap_put(&q->dirty, key, NULL);
		return;
	}
	push_locked(q, key);
}

/* The timers' callback: a delay or back-off is over. */
static void on_timer(void *ctx, const char *key)
{
	workqueue_add(ctx, key);
}

int workqueue_init(struct workqueue *q, int base_ms, int max_ms, char *err)
{
	int rc;

	memset(q, 0, sizeof(*q));
	strmap_init(&q->queued);
	strmap_init(&q->processing);
	strmap_init(&q->dirty);
	strmap_init(&q->failures);
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
	add_locked(q, key);
	pthread_mutex_unlock(&q->lock);
}

void workqueue_add_after(struct workqueue *q, const char *key, long long delay_ms)
{
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
	timers_set(&q->timers, key, now + delay_ms);
}

long long workqueue_add_rate_limited(struct workqueue *q, const char *key)
{
	long long delay;
	uintptr_t n;

	if (!key_fits(key))
		return 0;
	pthread_mutex_lock(&q->lock);
	n = failures_of(q, key);
	delay = backoff_ms(q->backoff_base_ms, q->backoff_max_ms, n);
	if (n < UINTPTR_MAX)
		set_failures(q, key, n + 1);
	q->retries++;
	pthread_mutex_unlock(&q->lock);
	workqueue_add_after(q, key, delay);
	return delay;
}

void workqueue_forget(struct workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	strmap_remove(&q->failures, key);
	pthread_mutex_unlock(&q->lock);
}

int workqueue_get(struct workqueue *q, char *out)
{
	struct workqueue_item *it;

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
	/* NOLINTNEXTLINE(performance-no-int-to-ptr): a time, never dereferenced */
	strmap_put(&q->processing, it->key, (void *)(uintptr_t)timers_now_ms());
	pthread_mutex_unlock(&q->lock);
	/* key_fits let in only keys shorter than out. */
	memcpy(out, it->key, strlen(it->key) + 1);
	free(it);
	return 1;
}

void workqueue_done(struct workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	strmap_remove(&q->processing, key);
	if (strmap_has(&q->dirty, key)) {
		strmap_remove(&q->dirty, key);
		if (!q->shutting_down)
			push_locked(q, key);
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
	if (inited) {
		pthread_cond_destroy(&q->ready);
		pthread_mutex_destroy(&q->lock);
	}
	memset(q, 0, sizeof(*q));
}
