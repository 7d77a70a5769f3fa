/* event_recorder.c - Events, counted instead of repeated; see
 * event_recorder.h. */
#include "event_recorder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "json_out.h"
#include "timefmt.h"

struct seen_event {
	char name[JOB_NAME_LEN]; /* the Event written first */
	char uid[JOB_UID_LEN];   /* its job's */
	long count;
	unsigned long used; /* the recorder's tick when last seen */
};

void event_recorder_init(struct event_recorder *r, const char *instance)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	strmap_init(&r->seen);
	r->instance = instance;
}

void event_recorder_release(struct event_recorder *r)
{
	if (r == NULL)
		return;
	strmap_release(&r->seen, free);
	pthread_mutex_destroy(&r->lock);
}

/* What makes two Events the same (getEventKey: the source is always this
 * operator): the job, the type, the reason and the message. */
static char *event_key(const struct job *j, const char *type, const char *reason,
                       const char *message)
{
	size_t n = strlen(j->ns) + strlen(j->name) + strlen(j->uid) + strlen(type) +
	           strlen(reason) + strlen(message) + 8;
	char *key = xmalloc(n);

	snprintf(key, n, "%s\n%s\n%s\n%s\n%s\n%s", j->ns, j->name, j->uid, type, reason, message);
	return key;
}

/* Makes room for one more: the Event seen longest ago goes. Called with
 * the lock held. */
static void evict(struct event_recorder *r)
{
	struct strmap_slot *slot, *oldest = NULL;
	size_t i = 0;

	if (r->seen.len < EVENT_RECORDER_MAX)
		return;
	while ((slot = strmap_next(&r->seen, &i)) != NULL) {
		const struct seen_event *e = slot->value;
		if (oldest == NULL || e->used < ((const struct seen_event *)oldest->value)->used)
			oldest = slot;
	}
	if (oldest != NULL)
		free(strmap_remove(&r->seen, oldest->key));
}

/* Whether key was written before: then *out holds its record, with the
 * count it has now (the caller patches it), and 1 is returned. */
static int seen_before(struct event_recorder *r, const char *key, struct seen_event *out)
{
	struct seen_event *e;
	int found = 0;

	pthread_mutex_lock(&r->lock);
	e = strmap_get(&r->seen, key);
	if (e != NULL) {
		e->count++;
		e->used = ++r->tick;
		*out = *e;
		found = 1;
	}
	pthread_mutex_unlock(&r->lock);
	return found;
}

static void remember(struct event_recorder *r, const char *key, const struct job *j,
                     const char *name)
{
	struct seen_event *e = xcalloc(1, sizeof(*e));

	snprintf(e->name, sizeof(e->name), "%s", name);
	snprintf(e->uid, sizeof(e->uid), "%s", j->uid);
	e->count = 1;
	pthread_mutex_lock(&r->lock);
	evict(r);
	e->used = ++r->tick;
	free(strmap_put(&r->seen, key, e));
	pthread_mutex_unlock(&r->lock);
}

/* Counts a repeat on the Event written before. Returns 0, 1 when that
 * Event is gone (create it again), -1 with err. */
static int count_repeat(struct kube_api *api, const struct job *j, const struct seen_event *e,
                        char *err)
{
	char path[KUBE_PATH_LEN], now[TIMEFMT_LEN];
	struct kube_result res = {0};
	cJSON *patch = json_out_new();
	int rc;

	if (kube_path(path, "", "v1", j->ns, "events", e->name) < 0) {
		cJSON_Delete(patch);
		return err_set(err, "event '%s': path too long", e->name);
	}
	timefmt_now(now);
	json_out_num(patch, "count", (double)e->count);
	json_out_str(patch, "lastTimestamp", now);
	rc = kube_merge_patch(api, path, patch, NULL, &res, err);
	cJSON_Delete(patch);
	if (rc == 0)
		return 0;
	return res.status == 404 ? 1 : -1;
}

int event_recorder_emit(struct event_recorder *r, struct kube_api *api, const struct job *j,
                        const cJSON *job_obj, const char *type, const char *reason,
                        const char *message, char *err)
{
	char *key = event_key(j, type, reason, message);
	char path[KUBE_PATH_LEN], now[TIMEFMT_LEN];
	struct kube_result res = {0};
	struct seen_event e;
	const cJSON *name;
	cJSON *ev = NULL;
	int rc = -1;

	if (seen_before(r, key, &e)) {
		rc = count_repeat(api, j, &e, err);
		if (rc <= 0) {
			__atomic_fetch_add(&r->counted, rc == 0, __ATOMIC_RELAXED);
			goto out;
		}
	}
	if (kube_path(path, "", "v1", j->ns, "events", NULL) < 0) {
		rc = err_set(err, "events in '%s': path too long", j->ns);
		goto out;
	}
	timefmt_now(now);
	ev = events_build(j, job_obj, type, reason, message, now, r->instance);
	rc = kube_create(api, path, ev, NULL, &res, err);
	if (rc == 0) {
		name = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(ev, "metadata"), "name");
		remember(r, key, j, name->valuestring);
		__atomic_fetch_add(&r->created, 1, __ATOMIC_RELAXED);
	}
out:
	cJSON_Delete(ev);
	free(key);
	return rc;
}

void event_recorder_forget(struct event_recorder *r, const char *uid)
{
	struct strmap_slot *slot;
	size_t i = 0;

	pthread_mutex_lock(&r->lock);
	while ((slot = strmap_next(&r->seen, &i)) != NULL) {
		struct seen_event *e = slot->value;
		if (strcmp(e->uid, uid) == 0)
			free(strmap_remove(&r->seen, slot->key));
	}
	pthread_mutex_unlock(&r->lock);
}
