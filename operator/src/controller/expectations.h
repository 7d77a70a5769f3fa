/* expectations.h - what the operator has asked the API to do for each job
 * and not yet seen in its informers, as client-go's controller
 * expectations: a pod created or deleted is "in flight" until the watch
 * shows it, and a reconcile of that job must not act on the pods it sees
 * until then, or a quick second pass would create a pod a second time.
 *
 * Per job key: the names of pods whose creation was asked for and not yet
 * observed, and the uids of pods whose deletion was asked for and not yet
 * observed. A create that failed is forgotten at once (nothing will be
 * observed). A request the API answered as done before a relist of the
 * pods began is settled by that list, which is a consistent read from
 * after it: the pod is in it, or it went before it (a pod created and
 * deleted while the watch was down), and no event will ever show more.
 * Expectations that are never observed expire after a time-out
 * (a missed event must not freeze a job): EXPECTATIONS_TTL_MS, as
 * client-go's five minutes.
 *
 * Thread-safe.
 */
#ifndef MWJ_EXPECTATIONS_H
#define MWJ_EXPECTATIONS_H

#include <pthread.h>

#include "strmap.h"

#define EXPECTATIONS_TTL_MS (5LL * 60 * 1000)

struct expectations {
	pthread_mutex_t lock;
	struct strmap jobs; /* job key -> struct job_expect * */
	long long ttl_ms;
};

/* ttl_ms: 0 for EXPECTATIONS_TTL_MS. */
void expectations_init(struct expectations *e, long long ttl_ms);
void expectations_release(struct expectations *e);

/* Before asking: the pod name about to be created, or the uid about to be
 * deleted, for job key. now_ms on timers_now_ms's clock. */
void expectations_expect_create(struct expectations *e, const char *job, const char *pod_name,
                                long long now_ms);
void expectations_expect_delete(struct expectations *e, const char *job, const char *pod_uid,
                                long long now_ms);

/* The API answered that the request was done, at now_ms. */
void expectations_create_answered(struct expectations *e, const char *job, const char *pod_name,
                                  long long now_ms);
void expectations_delete_answered(struct expectations *e, const char *job, const char *pod_uid,
                                  long long now_ms);

/* The request failed: nothing will be observed. */
void expectations_create_failed(struct expectations *e, const char *job, const char *pod_name);
void expectations_delete_failed(struct expectations *e, const char *job, const char *pod_uid);

/* The informer saw it (an ADDED pod of that name; a DELETED pod of that
 * uid, or one now marked for deletion). */
void expectations_observe_create(struct expectations *e, const char *job, const char *pod_name);
void expectations_observe_delete(struct expectations *e, const char *job, const char *pod_uid);

/* The pods were listed again, by a list that began at list_start_ms,
 * and the cache holds the result: every request answered before then is
 * settled, and fn is called (without the lock) with the key of each job
 * that had one, to be looked at again. */
void expectations_observe_list(struct expectations *e, long long list_start_ms,
                               void (*fn)(void *ctx, const char *job), void *ctx);

/* Whether the job's pods in the cache can be trusted: nothing in flight,
 * or what is in flight has expired. */
int expectations_satisfied(struct expectations *e, const char *job, long long now_ms);

/* Forgets the job (deleted). */
void expectations_forget(struct expectations *e, const char *job);

#endif
