/* timers.c - a min-heap of (due time, key) served by one thread.
 *
 * Every entry knows its index in the heap, and the map finds an entry by
 * key, so that set, re-set and cancel are each O(log n) however many
 * timers wait. The thread sleeps on a condition variable bound to
 * CLOCK_MONOTONIC until the earliest due time or a change at the top of
 * the heap: a wall-clock step (NTP, a suspended laptop) neither fires
 * timers early nor holds them back. */
#include "timers.h"

#include "err.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct timer_entry {
	long long due_ms;
	size_t index; /* in t->heap */
	char key[];
};

long long timers_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Heap order; equal due times keep no particular order. */
static int earlier(const struct timer_entry *a, const struct timer_entry *b)
{
	return a->due_ms < b->due_ms;
}

static void place(struct timers *t, struct timer_entry *e, size_t i)
{
	t->heap[i] = e;
	e->index = i;
}

static void sift_up(struct timers *t, size_t i)
{
	struct timer_entry *e = t->heap[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!earlier(e, t->heap[parent]))
			break;
		place(t, t->heap[parent], i);
		i = parent;
	}
	place(t, e, i);
}

static void sift_down(struct timers *t, size_t i)
{
	struct timer_entry *e = t->heap[i];

	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= t->len)
			break;
		if (child + 1 < t->len && earlier(t->heap[child + 1], t->heap[child]))
			child++;
		if (!earlier(t->heap[child], e))
			break;
		place(t, t->heap[child], i);
		i = child;
	}
	place(t, e, i);
}

static void heap_push(struct timers *t, struct timer_entry *e)
{
	if (t->len == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct timer_entry **heap;

		if (cap > SIZE_MAX / sizeof(struct timer_entry *))
			die("timers: %zu timers overflow the heap", t->len);
		heap = realloc(t->heap, cap * sizeof(struct timer_entry *));
		if (heap == NULL)
			die("out of memory growing the timer heap to %zu entries", cap);
		t->heap = heap;
		t->cap = cap;
	}
	place(t, e, t->len++);
	sift_up(t, e->index);
}

/* Takes e out of the heap and the map; the caller frees it. */
static void heap_remove(struct timers *t, struct timer_entry *e)
{
	size_t i = e->index;
	struct timer_entry *last = t->heap[--t->len];

	strmap_remove(&t->by_key, e->key);
	if (last == e)
		return;
	/* The last entry fills the hole and moves whichever way it must. */
	place(t, last, i);
	if (i > 0 && earlier(last, t->heap[(i - 1) / 2]))
		sift_up(t, i);
	else
		sift_down(t, i);
}

/* Sleeps until due_ms, or until someone signals a change. */
static void wait_until(struct timers *t, long long due_ms)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(due_ms / 1000);
	ts.tv_nsec = (long)(due_ms % 1000) * 1000000L;
	pthread_cond_timedwait(&t->changed, &t->lock, &ts);
}

/* The timers' thread: fires each entry once it is due, with the lock
 * released so that the callback may set timers or take its own locks. */
static void *run(void *arg)
{
	struct timers *t = arg;

	pthread_mutex_lock(&t->lock);
	while (!t->stopping) {
		struct timer_entry *top;

		if (t->len == 0) {
			pthread_cond_wait(&t->changed, &t->lock);
			continue;
		}
		top = t->heap[0];
		if (top->due_ms > timers_now_ms()) {
			wait_until(t, top->due_ms);
			continue;
		}
		heap_remove(t, top);
		pthread_mutex_unlock(&t->lock);
		t->fn(t->ctx, top->key);
		free(top);
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* A condition variable whose timed waits run on CLOCK_MONOTONIC. */
static int init_monotonic_cond(pthread_cond_t *c, char *err)
{
	pthread_condattr_t attr;
	int rc;

	rc = pthread_condattr_init(&attr);
	if (rc != 0)
		return err_set(err, "timers: pthread_condattr_init: %s", strerror(rc));
	rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (rc == 0)
		rc = pthread_cond_init(c, &attr);
	pthread_condattr_destroy(&attr);
	if (rc != 0)
		return err_set(err, "timers: monotonic condition variable: %s", strerror(rc));
	return 0;
}

int timers_start(struct timers *t, timers_fn fn, void *ctx, char *err)
{
	int rc;

	memset(t, 0, sizeof(*t));
	strmap_init(&t->by_key);
	t->fn = fn;
	t->ctx = ctx;
	rc = pthread_mutex_init(&t->lock, NULL);
	if (rc != 0)
		return err_set(err, "timers: pthread_mutex_init: %s", strerror(rc));
	if (init_monotonic_cond(&t->changed, err) < 0) {
		pthread_mutex_destroy(&t->lock);
		return -1;
	}
	rc = pthread_create(&t->thread, NULL, run, t);
	if (rc != 0) {
		pthread_cond_destroy(&t->changed);
		pthread_mutex_destroy(&t->lock);
		return err_set(err, "timers: pthread_create: %s", strerror(rc));
	}
	t->started = 1;
	return 0;
}

/* Sets a new entry, or moves an existing one earlier. Returns whether the
 * earliest due time changed, which is all the thread needs to hear. */
static int set_locked(struct timers *t, const char *key, long long due_ms)
{
	struct timer_entry *e = strmap_get(&t->by_key, key);

	if (e != NULL) {
		if (due_ms >= e->due_ms)
			return 0;
		e->due_ms = due_ms;
		sift_up(t, e->index);
		return e->index == 0;
	}
	size_t n = strlen(key) + 1;
	e = xmalloc(sizeof(*e) + n);
	memcpy(e->key, key, n);
	e->due_ms = due_ms;
	strmap_put(&t->by_key, key, e);
	heap_push(t, e);
	return e->index == 0;
}

void timers_set(struct timers *t, const char *key, long long due_ms)
{
	pthread_mutex_lock(&t->lock);
	if (set_locked(t, key, due_ms))
		pthread_cond_signal(&t->changed);
	pthread_mutex_unlock(&t->lock);
}

void timers_cancel(struct timers *t, const char *key)
{
	struct timer_entry *e;

	pthread_mutex_lock(&t->lock);
	e = strmap_get(&t->by_key, key);
	/* A later earliest due time only makes the thread wake once for
	 * nothing; no signal needed. */
	if (e != NULL) {
		heap_remove(t, e);
		free(e);
	}
	pthread_mutex_unlock(&t->lock);
}

long long timers_due(struct timers *t, const char *key)
{
	struct timer_entry *e;
	long long due = -1;

	pthread_mutex_lock(&t->lock);
	e = strmap_get(&t->by_key, key);
	if (e != NULL)
		due = e->due_ms;
	pthread_mutex_unlock(&t->lock);
	return due;
}

void timers_stop(struct timers *t)
{
	if (t == NULL)
		return;
	if (t->started) {
		pthread_mutex_lock(&t->lock);
		t->stopping = 1;
		pthread_cond_signal(&t->changed);
		pthread_mutex_unlock(&t->lock);
		pthread_join(t->thread, NULL);
		pthread_cond_destroy(&t->changed);
		pthread_mutex_destroy(&t->lock);
	}
	for (size_t i = 0; i < t->len; i++)
		free(t->heap[i]);
	free(t->heap);
	strmap_release(&t->by_key, NULL);
	memset(t, 0, sizeof(*t));
}
