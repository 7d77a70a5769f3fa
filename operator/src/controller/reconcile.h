/* reconcile.h - what the operator decides for one job: a pure function from
 * what it sees (the job, its pods, whether its Service, Secret and
 * NetworkPolicy exist, the time) to what it does (a new status and a list
 * of actions), tested as a table without any server.
 *
 * Level-based and idempotent: the same input gives the same output, and
 * running the output's actions and reconciling again converges. The
 * status carries the operator's bookkeeping (job.h: the attempt of each
 * worker index and which indices it is recreating itself), and the
 * caller writes the new status *before* it runs the actions, so that an
 * operator killed between the two never counts a restart twice nor takes
 * a pod it deleted itself for a preempted one.
 *
 * The rules (cause x policy -> action), as the README's table says them:
 * - a worker pod created and gone before the operator saw it: a
 *   preemption when this replica knows the create succeeded; sent again at
 *   the same attempt when the API refused it; otherwise (a new leader, an
 *   answer lost) its attempt is passed over and the next one created, so
 *   that no (index, attempt) is ever created twice;
 * - a worker pod deleted by someone else, evicted, preempted, or failed
 *   under DisruptionTarget: a preemption; recreated under the same name as
 *   soon as the old object is gone, with the attempt raised; never counted
 *   against backoffLimit. A pod still running under DisruptionTarget is
 *   left alone until the disruption comes (the condition can be lifted);
 * - a worker whose container failed: restartPolicy ExitCode recreates on
 *   75 and 128-255 and fails the job on 1-127; OnFailure and Always
 *   recreate; Never fails the job. Recreations are counted; when the
 *   count exceeds backoffLimit the job fails (BackoffLimitExceeded);
 * - restartScope All: any restart deletes every worker, waits until every
 *   pod from before the restart is gone (terminating ones too), and
 *   creates them all again with the next attempt;
 * - the chief (worker 0) exiting 0 ends the job Succeeded; a finished
 *   job's pods are never created again; cleanPodPolicy and
 *   ttlSecondsAfterFinished apply after the end;
 * - activeDeadlineSeconds from startTime fails the job (DeadlineExceeded);
 * - suspend deletes the pods and keeps the backups; resuming creates them
 *   again (not counted);
 * - a pod stuck in ErrImagePull, ImagePullBackOff or
 *   CreateContainerConfigError longer than RECONCILE_STUCK_S is reported in
 *   the Running condition and an event;
 * - a spec the operator cannot honour fails the job with a condition that
 *   says why.
 *
 * Events: one per happening, and never again from a later pass over the
 * same state (the status says it was told). A failure the operator
 * recreates gives WorkerFailed and Restarting; a failure that ends the
 * job gives only the end's event (WorkerFailed, BackoffLimitExceeded),
 * which names the failure.
 */
#ifndef MWJ_RECONCILE_H
#define MWJ_RECONCILE_H

#include "job.h"
#include "pod_spec.h"

/* How long a pod may wait on its image or config before a user is told. */
#define RECONCILE_STUCK_S 60

/* What the API server answered to a create the operator sent: created
 * (201); refused with an answer that says nothing was created (a 4xx: a
 * quota, Pod Security, a ServiceAccount not yet made, an admission
 * webhook); a pod's name still held by the job's own earlier pod, which
 * is terminating (409: nothing was created, and the watch will show it
 * gone); its name taken by an object the job does not own; or nothing
 * known (no create, no answer, a 5xx). */
enum create_result {
	CREATE_UNKNOWN,
	CREATE_DONE,
	CREATE_REFUSED,
	CREATE_NAME_BUSY,
	CREATE_NOT_OWNED
};

#define CREATE_MESSAGE_LEN 1024

struct create_outcome {
	long attempt; /* a pod's attempt (0 for an object); -1: no create known */
	enum create_result result;
	/* REFUSED: the API's answer ("403 Forbidden: exceeded quota: ...");
	 * NOT_OWNED: what holds the name; else "". */
	char message[CREATE_MESSAGE_LEN];
};

enum action_kind {
	ACT_CREATE_OBJECT, /* object: the Secret, ConfigMap, Service or NetworkPolicy */
	ACT_CREATE_POD,    /* index, attempt */
	ACT_DELETE_POD,    /* name, uid (a precondition) */
	ACT_EVENT,         /* event_type, reason, message */
	ACT_DELETE_JOB,    /* its time to live is over */
};

struct action {
	enum action_kind kind;
	enum job_object object;
	int index;
	long attempt;
	char name[JOB_NAME_LEN];
	char uid[JOB_UID_LEN];
	char event_type[8]; /* EVENT_NORMAL or EVENT_WARNING */
	char reason[JOB_REASON_LEN];
	char message[JOB_MESSAGE_LEN];
};

struct reconcile_input {
	const struct job *job;
	const struct pod_view *pods; /* the job's pods (owned by it), any order */
	int npods;
	/* The job's own Service and NetworkPolicy are in the caches (the
	 * Secret and ConfigMap are known by the names in the status). */
	int have_service, have_network_policy;
	long long now_s; /* wall clock, Unix seconds */
	const char *now; /* the same as RFC 3339 */
	/* What became of this replica's creates, per worker index (as many
	 * as job->workers) and per object (JOB_OBJECTS), or NULL: nothing
	 * known. */
	const struct create_outcome *outcomes;
	const struct create_outcome *object_outcomes;
	/* The chief's newest training report, when it is time to write it
	 * into the status (controller/reports.h), or NULL: status.training
	 * stays as it is. A report whose step is behind the status' is a
	 * job resumed from a backup, and says so in an Event. */
	const struct training_status *report;
};

struct reconcile_output {
	struct job_status status; /* the new status */
	struct action *actions;
	int nactions, cap;
	long long requeue_at_s; /* when to look again (deadline, TTL, a stuck pod); -1: no need */
};

/* Decides. out is filled anew (release it afterwards). */
void reconcile(const struct reconcile_input *in, struct reconcile_output *out);

void reconcile_output_release(struct reconcile_output *out);

/* "CreatePod", "DeletePod", ... for logs and tests. */
const char *reconcile_action_name(enum action_kind k);

#endif
