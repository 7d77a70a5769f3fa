/* event_recorder.h - Events on a job, written as client-go's event
 * recorder writes them (tools/record/events_cache.go): an Event seen
 * again (the same job, type, reason and message) is not written anew but
 * counted on the first one, a merge patch of its count and
 * lastTimestamp, as the EventCorrelator's eventLogger does, with an LRU of
 * the last EVENT_RECORDER_MAX Events. One whose Event has gone meanwhile
 * (expired after the server's event TTL, deleted) is created again. So a
 * condition that repeats costs one Event a user reads as "x3", never a
 * list of copies.
 *
 * Thread-safe; the API calls are made outside the lock.
 */
#ifndef MWJ_EVENT_RECORDER_H
#define MWJ_EVENT_RECORDER_H

#include <cjson/cJSON.h>
#include <pthread.h>

#include "job.h"
#include "kube_api.h"
#include "strmap.h"

#define EVENT_RECORDER_MAX 4096

struct event_recorder {
	pthread_mutex_t lock;
	struct strmap seen; /* the Event's key -> struct seen_event * */
	unsigned long tick; /* for the LRU */
	const char *instance;
	/* Counters, for logs and tests: Events created, and repeats counted
	 * on an existing one. */
	unsigned long created, counted;
};

/* Sets r up; instance (the reporting instance, the host name) must
 * outlive r. */
void event_recorder_init(struct event_recorder *r, const char *instance);

/* Frees what r holds. Accepts NULL. */
void event_recorder_release(struct event_recorder *r);

/* An Event of type (EVENT_NORMAL, EVENT_WARNING), reason and message on
 * job j (job_obj: the object j was parsed from): created, or counted on
 * the same Event written before. Returns 0, or -1 with a message. */
int event_recorder_emit(struct event_recorder *r, struct kube_api *api, const struct job *j,
                        const cJSON *job_obj, const char *type, const char *reason,
                        const char *message, char *err);

/* Forgets the Events of the job with uid (deleted). */
void event_recorder_forget(struct event_recorder *r, const char *uid);

#endif
