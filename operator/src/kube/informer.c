/* informer.c - list, then watch, on a thread of its own (informer.h).
 *
 * The thread is the only writer of the cache: it changes it under the lock
 * and calls the handler without the lock, so that a handler may read this
 * informer (informer_get) and the objects it is handed stay valid for the
 * call. Readers on other threads copy under the lock.
 *
 * As client-go's reflector, the list is paged (following
 * metadata.continue; a continue token that expired falls back to one list
 * of everything, as tools/pager does); the watch resumes from the newest
 * resourceVersion seen, an event's or a bookmark's; 410 Gone, as the
 * watch's status or as an ERROR event, lists again. Unlike client-go's
 * first list (resourceVersion=0, from the API server's watch cache, which
 * may be older than what this process saw before a restart), every list
 * asks for the most recent state (no resourceVersion): the few objects of
 * one operator make a consistent read cheap, and a relist never goes back
 * in time.
 *
 * This file holds the thread, the watch and the readers; the list, and
 * putting it in place of the cache, is list_pager.c; the request paths
 * are informer_path.c.
 */
#include "informer.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "informer_path.h"
#include "json.h"
#include "list_pager.h"
#include "log.h"
#include "watch_stream.h"

#define WATCH_TIMEOUT_S     300
#define WATCH_TIMEOUT_MAX_S 86400 /* keeps the idle time-out in an int */
#define WATCH_IDLE_MARGIN_S 30
/* A watch that ends this soon with nothing in it failed, whatever its
 * status said (client-go's "very short watch"): without a pause a server
 * that closes at once would be asked again in a tight loop. */
#define SHORT_WATCH_MS 1000
/* Watches in a row ended by a bad line before any event: the same event is
 * being replayed from the same version; a list steps over it. */
#define BAD_LINES_BEFORE_RELIST 2
#define KEY_LEN                 512
#define RV_LEN                  32

_Static_assert(sizeof(((struct informer *)0)->last_rv) == RV_LEN, "informer.h's last_rv");
_Static_assert(sizeof(((struct watch_event *)0)->resource_version) == RV_LEN,
               "watch_stream.h's resource_version");

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int is_stopping(struct informer *inf)
{
	return __atomic_load_n(&inf->stopping, __ATOMIC_ACQUIRE);
}

/* The controller stops the client before its informers: a request that
 * failed then is no news worth a warning. */
static int quiet(struct informer *inf)
{
	return is_stopping(inf) || __atomic_load_n(&inf->api->stopping, __ATOMIC_ACQUIRE);
}

static void notify(struct informer *inf, enum informer_op op, const cJSON *old, const cJSON *obj)
{
	if (inf->cfg.handler != NULL)
		inf->cfg.handler(inf->cfg.handler_ctx, op, old, obj);
}

static void set_last_rv(struct informer *inf, const char *rv)
{
	pthread_mutex_lock(&inf->lock);
	snprintf(inf->last_rv, sizeof(inf->last_rv), "%s", rv);
	pthread_mutex_unlock(&inf->lock);
}

static void count(struct informer *inf, unsigned long *counter)
{
	pthread_mutex_lock(&inf->lock);
	(*counter)++;
	pthread_mutex_unlock(&inf->lock);
}

static const char *string_member(const cJSON *obj, const char *name)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsString(s) ? s->valuestring : NULL;
}

/* --- Back-off between failed attempts --- */

/* The API client's own back-off settings: one pair of knobs says how hard
 * the operator presses a failing server (and lets tests run fast). */
struct backoff {
	long long first_ms, max_ms;
	int failures; /* in a row */
	uint64_t rng;
};

static void backoff_init(struct backoff *b, const struct kube_api *api, uint64_t seed)
{
	b->first_ms = api->backoff_first_ms > 0 ? api->backoff_first_ms : KUBE_BACKOFF_FIRST_MS;
	b->max_ms = api->backoff_max_ms > 0 ? api->backoff_max_ms : KUBE_BACKOFF_MAX_MS;
	if (b->max_ms < b->first_ms)
		b->max_ms = b->first_ms;
	b->failures = 0;
	b->rng = seed != 0 ? seed : 0x9e3779b97f4a7c15ull;
}

/* Counts a failure and returns the wait before the next attempt: doubling
 * from first_ms up to max_ms, drawn from the upper half of that (jitter,
 * so that informers that failed together do not come back together). */
static long long backoff_fail(struct backoff *b)
{
	long long d = b->first_ms;
	long long half;

	for (int i = 0; i < b->failures && d < b->max_ms; i++)
		d *= 2;
	if (d > b->max_ms)
		d = b->max_ms;
	if (b->failures < 64)
		b->failures++;
	/* xorshift64 */
	b->rng ^= b->rng << 13;
	b->rng ^= b->rng >> 7;
	b->rng ^= b->rng << 17;
	half = d / 2;
	return d - half + (long long)(b->rng % (uint64_t)(half + 1));
}

/* Waits ms, or less if stopped. Returns -1 when stopping. */
static int pause_ms(struct informer *inf, long long ms)
{
	struct timespec ts;
	int stopping;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&inf->lock);
	while (!inf->stopping) {
		if (pthread_cond_timedwait(&inf->synced_cond, &inf->lock, &ts) == ETIMEDOUT)
			break;
	}
	stopping = inf->stopping;
	pthread_mutex_unlock(&inf->lock);
	return stopping ? -1 : 0;
}

/* What the thread carries from one request to the next. */
struct loop {
	struct backoff bo;
	long long delay_ms;    /* to wait before the next request */
	long long next_resync; /* monotonic ms; 0 before the first list */
	int need_list;
	int bad_lines; /* see BAD_LINES_BEFORE_RELIST */
};

/* --- Resync --- */

static void resync_if_due(struct informer *inf, struct loop *st)
{
	size_t i = 0;
	struct strmap_slot *s;
	long long now;

	if (inf->cfg.resync_s <= 0 || st->next_resync == 0)
		return;
	now = now_ms();
	if (now < st->next_resync)
		return;
	st->next_resync = now + (long long)inf->cfg.resync_s * 1000;
	/* As client-go's resync, old and new are the same object. */
	while ((s = strmap_next(&inf->cache, &i)) != NULL)
		notify(inf, INFORMER_RESYNC, s->value, s->value);
}

/* --- Watching --- */

enum watch_end { END_NONE, END_BAD_LINE, END_ERROR_EVENT };

/* One watch: what it was asked, what it met, how it ended. */
struct watch_ctx {
	struct informer *inf;
	struct loop *st;
	char rv[RV_LEN]; /* the version it started from */
	struct watch_stream ws;
	int events; /* bookmarks included */
	enum watch_end end;
	long error_code;   /* END_ERROR_EVENT: the Status' code */
	char why[ERR_LEN]; /* END_*: the bad line's or the ERROR event's message */
	/* What the stream op returned. */
	int rc;
	long status;
	char *body; /* a refused watch's body */
	char err[ERR_LEN];
	long long elapsed_ms;
};

/* ADDED, MODIFIED or DELETED: the cache, then the handler. An ADDED for a
 * key already cached is an update, as in client-go (a watch resumed from
 * an older version than the cache's may replay one). */
static int apply_object(struct informer *inf, struct watch_event *ev, char *err)
{
	char key[KEY_LEN];
	cJSON *old;

	if (informer_key(ev->object, key, sizeof(key)) < 0)
		return err_set(err, "watch event: object without a usable metadata.name");
	if (inf->cfg.transform)
		inf->cfg.transform(ev->object);
	pthread_mutex_lock(&inf->lock);
	if (ev->type == WATCH_DELETED)
		old = strmap_remove(&inf->cache, key);
	else
		old = strmap_put(&inf->cache, key, ev->object);
	if (ev->resource_version[0] != '\0')
		snprintf(inf->last_rv, sizeof(inf->last_rv), "%s", ev->resource_version);
	pthread_mutex_unlock(&inf->lock);

	if (ev->type == WATCH_DELETED) {
		notify(inf, INFORMER_DELETE, old, ev->object);
	} else {
		const cJSON *obj = ev->object;

		ev->object = NULL; /* the cache's now */
		notify(inf, old != NULL ? INFORMER_UPDATE : INFORMER_ADD, old, obj);
	}
	cJSON_Delete(old);
	return 0;
}

static int on_line(const char *line, size_t len, void *ctx, char *err)
{
	struct watch_ctx *wc = ctx;
	struct watch_event ev;
	int rc = 0;

	if (is_stopping(wc->inf))
		return -1;
	if (watch_event_parse(&ev, line, len, err) < 0) {
		wc->end = END_BAD_LINE;
		return -1;
	}
	switch (ev.type) {
	case WATCH_BOOKMARK:
		/* A bookmark moves the version on and changes nothing else. */
		if (ev.resource_version[0] != '\0')
			set_last_rv(wc->inf, ev.resource_version);
		wc->events++;
		break;
	case WATCH_ERROR:
		wc->end = END_ERROR_EVENT;
		wc->error_code = ev.error_code;
		snprintf(err, ERR_LEN, "%s", ev.error_message);
		rc = -1;
		break;
	default:
		rc = apply_object(wc->inf, &ev, err);
		if (rc < 0)
			wc->end = END_BAD_LINE;
		else
			wc->events++;
	}
	watch_event_release(&ev);
	return rc;
}

static int on_chunk(const char *data, size_t len, void *ctx)
{
	struct watch_ctx *wc = ctx;

	if (is_stopping(wc->inf))
		return -1;
	__atomic_store_n(&wc->inf->heartbeat_ms, now_ms(), __ATOMIC_RELAXED);
	if (watch_stream_feed(&wc->ws, data, len, on_line, wc, wc->why) < 0) {
		/* Otherwise the line was too long for the framer. */
		if (wc->end == END_NONE)
			wc->end = END_BAD_LINE;
		return -1;
	}
	resync_if_due(wc->inf, wc->st);
	return is_stopping(wc->inf) ? -1 : 0;
}

/* A failed attempt: counted, logged with the wait before the next. */
static void watch_failed(struct informer *inf, struct loop *st, const char *what)
{
	count(inf, &inf->watch_errors);
	st->delay_ms = backoff_fail(&st->bo);
	log_warn("informer %s: %s: resuming from %s in %lld ms", inf->cfg.name, what, inf->last_rv,
	         st->delay_ms);
}

static void watch_expired(struct informer *inf, struct loop *st, const char *rv, const char *why)
{
	count(inf, &inf->relists_after_gone);
	st->need_list = 1;
	st->delay_ms = backoff_fail(&st->bo);
	log_info("informer %s: watch from %s expired (410 Gone%s%s): listing again in %lld ms",
	         inf->cfg.name, rv, why[0] != '\0' ? ": " : "", why, st->delay_ms);
}

/* A line that is no event (or too long for one): the watch is restarted,
 * or, when that keeps meeting a bad line before any event, the collection
 * listed again. */
static void watch_bad_line(struct informer *inf, struct loop *st, const char *rv, const char *why)
{
	count(inf, &inf->watch_errors);
	st->delay_ms = backoff_fail(&st->bo);
	if (++st->bad_lines >= BAD_LINES_BEFORE_RELIST) {
		st->bad_lines = 0;
		st->need_list = 1;
		log_warn("informer %s: watch from %s: %s: listing again in %lld ms", inf->cfg.name,
		         rv, why, st->delay_ms);
		return;
	}
	log_warn("informer %s: watch from %s: %s: restarting the watch from %s in %lld ms",
	         inf->cfg.name, rv, why, inf->last_rv, st->delay_ms);
}

/* The message of a Status body, or "": bounded, and with control
 * characters blanked (a newline in it would forge a log line). */
static void status_message(const char *body, char *out)
{
	cJSON *root = body != NULL ? json_parse(body, strnlen(body, 1 << 16), NULL) : NULL;
	const char *msg = string_member(root, "message");

	snprintf(out, ERR_LEN, "%s", msg != NULL ? msg : "");
	for (char *p = out; *p != '\0'; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7F)
			*p = ' ';
	}
	cJSON_Delete(root);
}

/* What to do after a watch, from how it ended. */
static void watch_ended(struct informer *inf, struct loop *st, const struct watch_ctx *wc)
{
	char what[ERR_LEN + 64], msg[ERR_LEN];

	if (wc->events > 0) {
		st->bo.failures = 0;
		st->bad_lines = 0;
	}
	if (wc->end == END_ERROR_EVENT && wc->error_code == 410) {
		watch_expired(inf, st, wc->rv, wc->why);
	} else if (wc->end == END_ERROR_EVENT) {
		snprintf(what, sizeof(what), "watch from %s: error event %ld: %s", wc->rv,
		         wc->error_code, wc->why);
		watch_failed(inf, st, what);
	} else if (wc->end == END_BAD_LINE) {
		watch_bad_line(inf, st, wc->rv, wc->why);
	} else if (wc->rc < 0) {
		snprintf(what, sizeof(what), "watch from %s: %s", wc->rv, wc->err);
		watch_failed(inf, st, what);
	} else if (wc->status == 410) {
		status_message(wc->body, msg);
		watch_expired(inf, st, wc->rv, msg);
	} else if (wc->status != 200) {
		status_message(wc->body, msg);
		snprintf(what, sizeof(what), "watch from %s: status %ld%s%s", wc->rv, wc->status,
		         msg[0] != '\0' ? ": " : "", msg);
		watch_failed(inf, st, what);
	} else if (wc->events == 0 && wc->elapsed_ms < SHORT_WATCH_MS) {
		snprintf(what, sizeof(what), "watch from %s ended after %lld ms with no event",
		         wc->rv, wc->elapsed_ms);
		watch_failed(inf, st, what);
	} else {
		st->bo.failures = 0;
		log_info("informer %s: watch ended after %lld s: resuming from %s", inf->cfg.name,
		         wc->elapsed_ms / 1000, inf->last_rv);
	}
}

/* One watch from the last version seen, until it ends. Its timeoutSeconds
 * is cut to the next resync, so that a quiet watch does not hold a resync
 * back. */
static void watch_once(struct informer *inf, struct loop *st)
{
	char path[KUBE_PATH_LEN], err[ERR_LEN];
	struct watch_ctx *wc = xcalloc(1, sizeof(*wc)); /* 1 KiB of messages: not on the stack */
	int timeout_s = inf->cfg.watch_timeout_s > 0 ? inf->cfg.watch_timeout_s : WATCH_TIMEOUT_S;
	long long start;

	if (timeout_s > WATCH_TIMEOUT_MAX_S)
		timeout_s = WATCH_TIMEOUT_MAX_S;
	if (st->next_resync > 0) {
		long long left = (st->next_resync - now_ms() + 999) / 1000;

		if (left < timeout_s)
			timeout_s = left > 1 ? (int)left : 1;
	}
	wc->inf = inf;
	wc->st = st;
	snprintf(wc->rv, sizeof(wc->rv), "%s", inf->last_rv);
	if (informer_path_watch(inf, wc->rv, timeout_s, path, err) < 0) {
		watch_failed(inf, st, err);
		free(wc);
		return;
	}
	count(inf, &inf->watches);
	watch_stream_init(&wc->ws, 0);
	start = now_ms();
	wc->rc = kube_api_watch(inf->api, path, (timeout_s + WATCH_IDLE_MARGIN_S) * 1000, on_chunk,
	                        wc, &wc->status, &wc->body, wc->err);
	wc->elapsed_ms = now_ms() - start;
	watch_stream_release(&wc->ws);
	if (!quiet(inf))
		watch_ended(inf, st, wc);
	else
		st->delay_ms = backoff_fail(&st->bo);
	free(wc->body);
	free(wc);
}

static void *informer_main(void *arg)
{
	struct informer *inf = arg;
	struct loop st = {.need_list = 1};
	char err[ERR_LEN];

	backoff_init(&st.bo, inf->api, (uint64_t)now_ms() ^ (uint64_t)(uintptr_t)inf);
	while (!is_stopping(inf)) {
		__atomic_store_n(&inf->heartbeat_ms, now_ms(), __ATOMIC_RELAXED);
		if (st.delay_ms > 0 && pause_ms(inf, st.delay_ms) < 0)
			break;
		st.delay_ms = 0;
		resync_if_due(inf, &st);
		if (!st.need_list) {
			watch_once(inf, &st);
			continue;
		}
		long long list_start = now_ms();
		if (list_pager_relist(inf, err) < 0) {
			st.delay_ms = backoff_fail(&st.bo);
			if (!quiet(inf))
				log_warn("informer %s: %s: retrying in %lld ms", inf->cfg.name, err,
				         st.delay_ms);
			continue;
		}
		count(inf, &inf->lists);
		if (inf->cfg.relisted != NULL)
			inf->cfg.relisted(inf->cfg.handler_ctx, list_start);
		st.need_list = 0;
		if (st.next_resync == 0 && inf->cfg.resync_s > 0)
			st.next_resync = now_ms() + (long long)inf->cfg.resync_s * 1000;
	}
	return NULL;
}

/* --- Lifecycle --- */

void informer_init(struct informer *inf, struct kube_api *api, const struct informer_config *cfg)
{
	pthread_condattr_t attr;

	memset(inf, 0, sizeof(*inf));
	inf->cfg = *cfg;
	inf->api = api;
	inf->heartbeat_ms = now_ms();
	pthread_mutex_init(&inf->lock, NULL);
	/* pause_ms and informer_wait_synced wait on the monotonic clock. */
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&inf->synced_cond, &attr);
	pthread_condattr_destroy(&attr);
	strmap_init(&inf->cache);
}

int informer_start(struct informer *inf, char *err)
{
	const struct informer_config *c = &inf->cfg;
	int rc;

	if (c->name == NULL || c->version == NULL || c->plural == NULL || c->version[0] == '\0' ||
	    c->plural[0] == '\0')
		return err_set(err, "informer: version and plural are required");
	if (inf->api == NULL || inf->api->ops == NULL || inf->api->ops->stream == NULL)
		return err_set(err, "informer %s: the API client cannot watch", c->name);
	if (inf->started)
		return err_set(err, "informer %s: already started", c->name);
	rc = pthread_create(&inf->thread, NULL, informer_main, inf);
	if (rc != 0)
		return err_set(err, "informer %s: pthread_create: %s", c->name, strerror(rc));
	inf->started = 1;
	return 0;
}

int informer_synced(struct informer *inf)
{
	int synced;

	pthread_mutex_lock(&inf->lock);
	synced = inf->synced;
	pthread_mutex_unlock(&inf->lock);
	return synced;
}

int informer_alive(struct informer *inf)
{
	int timeout_s = inf->cfg.watch_timeout_s > 0 ? inf->cfg.watch_timeout_s : WATCH_TIMEOUT_S;
	long long limit_ms;

	if (timeout_s > WATCH_TIMEOUT_MAX_S)
		timeout_s = WATCH_TIMEOUT_MAX_S;
	limit_ms = ((long long)timeout_s + WATCH_IDLE_MARGIN_S + 60) * 1000;
	return now_ms() - __atomic_load_n(&inf->heartbeat_ms, __ATOMIC_RELAXED) < limit_ms;
}

int informer_wait_synced(struct informer *inf, int timeout_ms)
{
	struct timespec ts;
	int synced;

	if (timeout_ms < 0)
		timeout_ms = 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&inf->lock);
	while (!inf->synced && !inf->stopping) {
		if (pthread_cond_timedwait(&inf->synced_cond, &inf->lock, &ts) == ETIMEDOUT)
			break;
	}
	synced = inf->synced && !inf->stopping;
	pthread_mutex_unlock(&inf->lock);
	return synced;
}

void informer_stop(struct informer *inf)
{
	pthread_mutex_lock(&inf->lock);
	__atomic_store_n(&inf->stopping, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&inf->synced_cond);
	pthread_mutex_unlock(&inf->lock);
	if (inf->started) {
		pthread_join(inf->thread, NULL);
		inf->started = 0;
	}
}

void informer_release(struct informer *inf)
{
	if (inf == NULL)
		return;
	if (inf->started)
		informer_stop(inf);
	list_pager_free_objects(&inf->cache);
	pthread_cond_destroy(&inf->synced_cond);
	pthread_mutex_destroy(&inf->lock);
}

/* --- Reading the cache --- */

static cJSON *copy(const cJSON *obj)
{
	cJSON *c = cJSON_Duplicate(obj, 1);

	if (c == NULL)
		die("out of memory copying a cached object");
	return c;
}

cJSON *informer_get(struct informer *inf, const char *ns, const char *name)
{
	char key[KEY_LEN];
	const cJSON *obj;
	cJSON *out = NULL;
	int n;

	if (name == NULL)
		return NULL;
	if (ns != NULL && ns[0] != '\0')
		n = snprintf(key, sizeof(key), "%s/%s", ns, name);
	else
		n = snprintf(key, sizeof(key), "%s", name);
	if (n < 0 || (size_t)n >= sizeof(key))
		return NULL;
	pthread_mutex_lock(&inf->lock);
	obj = strmap_get(&inf->cache, key);
	if (obj != NULL)
		out = copy(obj);
	pthread_mutex_unlock(&inf->lock);
	return out;
}

/* keep runs under the lock: it must not call back into this informer. */
cJSON *informer_list(struct informer *inf, int (*keep)(const cJSON *obj, void *ctx), void *ctx)
{
	cJSON *arr = cJSON_CreateArray();
	size_t i = 0;
	struct strmap_slot *s;

	if (arr == NULL)
		die("out of memory");
	pthread_mutex_lock(&inf->lock);
	while ((s = strmap_next(&inf->cache, &i)) != NULL) {
		if (keep == NULL || keep(s->value, ctx))
			cJSON_AddItemToArray(arr, copy(s->value));
	}
	pthread_mutex_unlock(&inf->lock);
	return arr;
}

void informer_each(struct informer *inf, void (*fn)(void *ctx, const cJSON *obj), void *ctx)
{
	size_t i = 0;
	struct strmap_slot *s;

	pthread_mutex_lock(&inf->lock);
	while ((s = strmap_next(&inf->cache, &i)) != NULL)
		fn(ctx, s->value);
	pthread_mutex_unlock(&inf->lock);
}

/* Names with a '/' are refused: "a/b" in no namespace would be taken for
 * "b" in namespace "a". */
int informer_key(const cJSON *obj, char *out, size_t n)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const char *name = string_member(meta, "name");
	const char *ns = string_member(meta, "namespace");
	int len;

	if (name == NULL || name[0] == '\0' || strchr(name, '/') != NULL)
		return -1;
	if (ns != NULL && strchr(ns, '/') != NULL)
		return -1;
	if (ns != NULL && ns[0] != '\0')
		len = snprintf(out, n, "%s/%s", ns, name);
	else
		len = snprintf(out, n, "%s", name);
	if (len < 0 || (size_t)len >= n)
		return -1;
	return 0;
}
