/* actions.h - carrying out what reconcile decided, against the API: the
 * status first (a merge patch of /status, only when it changed), then
 * each action in order, with the expectations around every pod create and
 * delete.
 *
 * What a real API server answers is part of the plan: a create of a pod
 * whose old namesake is still terminating is 409 AlreadyExists, which
 * means "wait for the watch to show it gone", not an error; a delete of a
 * pod already gone is done; a delete carries the pod's uid as a
 * precondition, so that a newer pod of the same name is never deleted by
 * a stale decision. Every create, delete and status change is logged,
 * naming the job.
 */
#ifndef MWJ_ACTIONS_H
#define MWJ_ACTIONS_H

#include <cjson/cJSON.h>

#include "expectations.h"
#include "kube_api.h"
#include "reconcile.h"

/* What the operator did, counted as it happened (for logs and metrics):
 * pods created and deleted; jobs admitted (their first status), and
 * ended Succeeded or Failed; and the restarts it counted, by cause
 * (reconcile.h: preemptions, and failures it recreated). Updated
 * atomically. */
struct actions_counters {
	unsigned long pods_created, pods_deleted;
	unsigned long jobs_created, jobs_succeeded, jobs_failed;
	unsigned long preemptions, failures;
};

struct actions_ctx {
	struct kube_api *api;
	struct expectations *expect;
	struct create_outcomes *outcomes;  /* what each pod create's answer said (may be NULL) */
	const char *instance;              /* the Events' reporting instance */
	struct actions_counters *counters; /* the caller's (may be NULL) */
	/* When not NULL: the job as the status write returned it (NULL when
	 * the status was unchanged), for the caller to delete; and the status
	 * write's HTTP status and reason (a 409 Conflict: read the job again
	 * and decide again). */
	cJSON **written;
	struct kube_result *status_result;
	/* When not NULL (ERR_LEN bytes): where a refusal no retry can fix is
	 * said, when the API refuses a worker pod as invalid (422 Invalid, or
	 * 400 BadRequest): "the API server refused worker pod x: <its
	 * message>". The pass then fails, and the caller fails the job with
	 * this. */
	char *refused;
};

/* Writes out's status if it differs from the job's, with the job's
 * resourceVersion as a precondition (a decision made from a stale copy is
 * refused with 409, never written over a newer status), then runs out's
 * actions for job j (job_obj: the object j was parsed from). Returns 0,
 * or -1 with a message when something failed that a later pass must
 * retry (the status write, a create or delete other than the answers
 * above), or that no retry can fix (ctx->refused). Events that cannot be written are logged and do
 * not fail the pass. */
int actions_run(const struct actions_ctx *ctx, const struct job *j, const cJSON *job_obj,
                const struct reconcile_output *out, char *err);

#endif
