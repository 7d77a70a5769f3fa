/* create_outcomes.h - what became of the creates this replica sent, per
 * job: for each worker index the attempt of its last pod create, and for
 * each of the job's other objects (the ring-key Secret, the TF_CONFIG
 * ConfigMap, the Service, the NetworkPolicy) its last create; each with
 * whether the API server created it (201), refused it with an answer that
 * says nothing was created (a 4xx: a quota, Pod Security, a namespace
 * being deleted, a ServiceAccount not yet made, an admission webhook), or
 * found the name taken by an object the job does not own; and the API's
 * own words. A create with no answer, or a 5xx, leaves nothing known: the
 * object may or may not exist.
 *
 * reconcile reads it:
 * - when a worker's pod is missing although its create was sent
 *   (status.sentAttempts): a pod created and gone before the watch showed
 *   it is a preemption and the next attempt is created; a create refused
 *   is sent again with the same attempt; and with nothing known the
 *   attempt is passed over, so that no attempt is ever created twice;
 * - for the job's Created condition, which names the refusal, and its
 *   events;
 * - a name taken by an object the job does not own fails the job: the
 *   operator never uses what it did not make.
 *
 * Memory only, so a new leader knows nothing, and it is emptied whenever
 * this replica becomes leader: another leader may have sent creates
 * meanwhile. Thread-safe.
 */
#ifndef MWJ_CREATE_OUTCOMES_H
#define MWJ_CREATE_OUTCOMES_H

#include <pthread.h>

#include "reconcile.h"
#include "strmap.h"

struct create_outcomes {
	pthread_mutex_t lock;
	struct strmap jobs; /* job key -> struct job_outcomes * */
};

void create_outcomes_init(struct create_outcomes *o);
void create_outcomes_release(struct create_outcomes *o);

/* The create of job's worker index at attempt was answered so; message
 * (may be NULL) is copied, cut to CREATE_MESSAGE_LEN. */
void create_outcomes_record(struct create_outcomes *o, const char *job, int index, long attempt,
                            enum create_result result, const char *message);

/* The create of one of job's objects was answered so. */
void create_outcomes_record_object(struct create_outcomes *o, const char *job, enum job_object what,
                                   enum create_result result, const char *message);

/* Fills out[0..n) with what is known of the job's worker indices, and
 * objects[0..JOB_OBJECTS) (when not NULL) with what is known of its
 * objects (attempt -1, CREATE_UNKNOWN where nothing is). */
void create_outcomes_get(struct create_outcomes *o, const char *job, int n,
                         struct create_outcome *out, struct create_outcome *objects);

/* Forgets the job (deleted), or every job (job NULL: leadership begins). */
void create_outcomes_forget(struct create_outcomes *o, const char *job);

#endif
