/* actions.h - carrying out what reconcile decided, against the API, in
 * an order that keeps the status true:
 *
 * 1. the job's objects (the ring-key Secret and TF_CONFIG ConfigMap under
 *    names the API server generates, the Service, the NetworkPolicy);
 * 2. the status (a merge patch of /status, only when it changed), which
 *    records the generated names, and the attempt of every pod create
 *    about to be sent, before it is sent. A pod create that will not be
 *    sent (an object it needs is missing) is recorded as not sent;
 * 3. every pod create and delete, each whatever the others got, with the
 *    expectations around them; then the Events.
 *
 * What a real API server answers is part of the plan:
 * - a create refused with a 4xx (a quota, Pod Security, a namespace being
 *   deleted, a ServiceAccount not yet made, an admission webhook) created
 *   nothing: recorded with the API's words (create_outcomes.h), counted,
 *   and the pass fails so that the job comes back after its back-off;
 * - 409 AlreadyExists means the name is taken: by the job's own object
 *   (the caches lag; a pod's namesake still terminating: wait for the
 *   watch), or by one the job does not own, which is never used (the job
 *   then fails, reconcile.h). The object is read by name to tell which;
 * - a delete of a pod already gone is done; a delete carries the pod's uid
 *   as a precondition, so that a newer pod of the same name is never
 *   deleted by a stale decision.
 * Every create, delete and status change is logged, naming the job.
 */
#ifndef MWJ_ACTIONS_H
#define MWJ_ACTIONS_H

#include <cjson/cJSON.h>

#include "create_outcomes.h"
#include "event_recorder.h"
#include "expectations.h"
#include "kube_api.h"
#include "reconcile.h"

/* What the operator did, counted as it happened (for logs and metrics):
 * pods created and deleted; jobs admitted (their first status), and
 * ended Succeeded or Failed; the restarts it counted, by cause
 * (reconcile.h: preemptions, and failures it recreated); and the creates
 * the API server refused, by what they would have made (the job's
 * objects, then pods). Updated atomically. */
struct actions_counters {
	unsigned long pods_created, pods_deleted;
	unsigned long jobs_created, jobs_succeeded, jobs_failed;
	unsigned long preemptions, failures;
	unsigned long refused[JOB_OBJECTS + 1];
};

struct actions_ctx {
	struct kube_api *api;
	struct expectations *expect;
	struct create_outcomes *outcomes;  /* what each create's answer said */
	struct event_recorder *events;     /* Events, deduplicated */
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
	/* Set (when not NULL) when a create was refused because the job's
	 * namespace is being deleted: nothing more is to be done there. */
	int *namespace_terminating;
};

/* Runs out's actions for job j (job_obj: the object j was parsed from),
 * in the order above; the status write carries the job's
 * resourceVersion as a precondition (a decision made from a stale copy is
 * refused with 409, never written over a newer status). Returns 0, or -1
 * with the first failure's message when a later pass must retry (the
 * status write; a create refused or failed; a delete), or when no retry
 * can fix it (ctx->refused). Events that cannot be written are logged and
 * do not fail the pass. */
int actions_run(const struct actions_ctx *ctx, const struct job *j, const cJSON *job_obj,
                const struct reconcile_output *out, char *err);

#endif
