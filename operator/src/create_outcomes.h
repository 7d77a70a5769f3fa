/* create_outcomes.h - what became of the worker pod creates this replica
 * sent, per job and worker index: the attempt of the last one, and whether
 * the API server created it (201) or refused it with an answer that says
 * nothing was created (a 4xx: a quota, a 409 for a namesake still there,
 * a 429). A create with no answer, or a 5xx, leaves nothing known: the
 * pod may or may not exist.
 *
 * reconcile reads it when a worker's pod is missing although its create
 * was sent (status.sentAttempts): a pod created and gone before the watch
 * showed it is a preemption and the next attempt is created; a create
 * refused is sent again with the same attempt; and with nothing known
 * the attempt is passed over, so that no attempt is ever created twice.
 *
 * Memory only, so a new leader knows nothing, and it is emptied whenever
 * this replica becomes leader: another leader may have sent creates
 * meanwhile. Thread-safe.
 */
#ifndef MWJ_CREATE_OUTCOMES_H
#define MWJ_CREATE_OUTCOMES_H

#include <pthread.h>

#include "strmap.h"

enum create_result { CREATE_UNKNOWN, CREATE_DONE, CREATE_REFUSED };

struct create_outcome {
	long attempt; /* -1: no create known */
	enum create_result result;
};

struct create_outcomes {
	pthread_mutex_t lock;
	struct strmap jobs; /* job key -> struct job_outcomes * */
};

void create_outcomes_init(struct create_outcomes *o);
void create_outcomes_release(struct create_outcomes *o);

/* The create of job's worker index at attempt was answered so. */
void create_outcomes_record(struct create_outcomes *o, const char *job, int index, long attempt,
                            enum create_result result);

/* Fills out[0..n) with what is known of the job's worker indices
 * (attempt -1, CREATE_UNKNOWN where nothing is). */
void create_outcomes_get(struct create_outcomes *o, const char *job, int n,
                         struct create_outcome *out);

/* Forgets the job (deleted), or every job (job NULL: leadership begins). */
void create_outcomes_forget(struct create_outcomes *o, const char *job);

#endif
