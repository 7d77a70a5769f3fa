/* expectations.c - in-flight pod creates and deletes per job, as
 * kubernetes' ControllerExpectations with UIDTrackingControllerExpectations
 * (pkg/controller/controller_utils.go), but tracking each pod by name or
 * uid rather than by count, so that an event seen twice, or for a pod the
 * operator never asked for, cannot satisfy an expectation it does not
 * belong to.
 *
 * A job with nothing in flight has no entry at all: the map holds only
 * the jobs a reconcile is waiting for. */
#include "expectations.h"

#include "err.h"

#include <stdlib.h>
#include <string.h>

enum expect_kind { EXPECT_CREATE, EXPECT_DELETE };

/* One request in flight: when it was asked for, and when the API
 * answered that it was done (-1: not yet). */
struct in_flight {
	long long expected_ms, answered_ms;
};

struct job_expect {
	struct strmap creates; /* pod name -> struct in_flight * */
	struct strmap deletes; /* pod uid -> struct in_flight * */
};

static struct strmap *set_of(struct job_expect *j, enum expect_kind kind)
{
	return kind == EXPECT_CREATE ? &j->creates : &j->deletes;
}

static void job_free(void *p)
{
	struct job_expect *j = p;

	if (j == NULL)
		return;
	strmap_release(&j->creates, free);
	strmap_release(&j->deletes, free);
	free(j);
}

void expectations_init(struct expectations *e, long long ttl_ms)
{
	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->lock, NULL);
	strmap_init(&e->jobs);
	e->ttl_ms = ttl_ms > 0 ? ttl_ms : (long long)EXPECTATIONS_TTL_MS;
}

void expectations_release(struct expectations *e)
{
	if (e == NULL)
		return;
	strmap_release(&e->jobs, job_free);
	pthread_mutex_destroy(&e->lock);
	memset(e, 0, sizeof(*e));
}

static void expect(struct expectations *e, const char *job, enum expect_kind kind, const char *id,
                   long long now_ms)
{
	struct job_expect *j;
	struct in_flight *at = xmalloc(sizeof(*at));

	*at = (struct in_flight){now_ms, -1};
	pthread_mutex_lock(&e->lock);
	j = strmap_get(&e->jobs, job);
	if (j == NULL) {
		j = xcalloc(1, sizeof(*j));
		strmap_put(&e->jobs, job, j);
	}
	/* Asked again: the new request is the one to wait for. */
	free(strmap_put(set_of(j, kind), id, at));
	pthread_mutex_unlock(&e->lock);
}

/* id is no longer in flight: observed, or its request failed. */
static void settle(struct expectations *e, const char *job, enum expect_kind kind, const char *id)
{
	struct job_expect *j;

	pthread_mutex_lock(&e->lock);
	j = strmap_get(&e->jobs, job);
	if (j != NULL) {
		free(strmap_remove(set_of(j, kind), id));
		if (j->creates.len == 0 && j->deletes.len == 0)
			job_free(strmap_remove(&e->jobs, job));
	}
	pthread_mutex_unlock(&e->lock);
}

/* The API answered that id's request was done. */
static void answered(struct expectations *e, const char *job, enum expect_kind kind, const char *id,
                     long long now_ms)
{
	struct job_expect *j;
	struct in_flight *at;

	pthread_mutex_lock(&e->lock);
	j = strmap_get(&e->jobs, job);
	at = j ? strmap_get(set_of(j, kind), id) : NULL;
	if (at != NULL)
		at->answered_ms = now_ms;
	pthread_mutex_unlock(&e->lock);
}

void expectations_expect_create(struct expectations *e, const char *job, const char *pod_name,
                                long long now_ms)
{
	expect(e, job, EXPECT_CREATE, pod_name, now_ms);
}

void expectations_expect_delete(struct expectations *e, const char *job, const char *pod_uid,
                                long long now_ms)
{
	expect(e, job, EXPECT_DELETE, pod_uid, now_ms);
}

void expectations_create_failed(struct expectations *e, const char *job, const char *pod_name)
{
	settle(e, job, EXPECT_CREATE, pod_name);
}

void expectations_delete_failed(struct expectations *e, const char *job, const char *pod_uid)
{
	settle(e, job, EXPECT_DELETE, pod_uid);
}

void expectations_create_answered(struct expectations *e, const char *job, const char *pod_name,
                                  long long now_ms)
{
	answered(e, job, EXPECT_CREATE, pod_name, now_ms);
}

void expectations_delete_answered(struct expectations *e, const char *job, const char *pod_uid,
                                  long long now_ms)
{
	answered(e, job, EXPECT_DELETE, pod_uid, now_ms);
}

void expectations_observe_create(struct expectations *e, const char *job, const char *pod_name)
{
	settle(e, job, EXPECT_CREATE, pod_name);
}

void expectations_observe_delete(struct expectations *e, const char *job, const char *pod_uid)
{
	settle(e, job, EXPECT_DELETE, pod_uid);
}

/* The earliest of oldest and the times in set. */
static long long oldest_in(const struct strmap *set, long long oldest)
{
	size_t i = 0;

	for (struct strmap_slot *s = strmap_next(set, &i); s != NULL; s = strmap_next(set, &i)) {
		const struct in_flight *at = s->value;
		if (at->expected_ms < oldest)
			oldest = at->expected_ms;
	}
	return oldest;
}

int expectations_satisfied(struct expectations *e, const char *job, long long now_ms)
{
	struct job_expect *j;
	long long oldest;
	int ok = 1;

	pthread_mutex_lock(&e->lock);
	j = strmap_get(&e->jobs, job);
	if (j != NULL) {
		oldest = oldest_in(&j->deletes, oldest_in(&j->creates, now_ms));
		/* An event was missed: the cache is the best there is. Everything
		 * the job waited for goes, so that the next requests are waited
		 * for afresh rather than judged expired by an old one. */
		if (now_ms - oldest > e->ttl_ms)
			job_free(strmap_remove(&e->jobs, job));
		else
			ok = 0;
	}
	pthread_mutex_unlock(&e->lock);
	return ok;
}

void expectations_forget(struct expectations *e, const char *job)
{
	pthread_mutex_lock(&e->lock);
	job_free(strmap_remove(&e->jobs, job));
	pthread_mutex_unlock(&e->lock);
}

/* Drops from set what was answered before list_start_ms. Returns how
 * many. */
static size_t drop_answered(struct strmap *set, long long list_start_ms)
{
	size_t i = 0, n = 0;

	for (struct strmap_slot *s = strmap_next(set, &i); s != NULL; s = strmap_next(set, &i)) {
		const struct in_flight *at = s->value;
		if (at->answered_ms >= 0 && at->answered_ms < list_start_ms) {
			free(strmap_remove(set, s->key));
			n++;
		}
	}
	return n;
}

void expectations_observe_list(struct expectations *e, long long list_start_ms,
                               void (*fn)(void *ctx, const char *job), void *ctx)
{
	struct strmap settled;
	size_t i = 0;

	strmap_init(&settled);
	pthread_mutex_lock(&e->lock);
	for (struct strmap_slot *s = strmap_next(&e->jobs, &i); s != NULL;
	     s = strmap_next(&e->jobs, &i)) {
		struct job_expect *j = s->value;
		if (drop_answered(&j->creates, list_start_ms) +
		        drop_answered(&j->deletes, list_start_ms) ==
		    0)
			continue;
		strmap_put(&settled, s->key, NULL);
		if (j->creates.len == 0 && j->deletes.len == 0)
			job_free(strmap_remove(&e->jobs, s->key));
	}
	pthread_mutex_unlock(&e->lock);
	i = 0;
	for (struct strmap_slot *s = strmap_next(&settled, &i); s != NULL;
	     s = strmap_next(&settled, &i))
		fn(ctx, s->key);
	strmap_release(&settled, NULL);
}
