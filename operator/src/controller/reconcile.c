/* reconcile.c - the operator's decisions for one job; see reconcile.h. */
#include "reconcile.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "events.h"
#include "timefmt.h"

/* One pass's view of the job, built from the input. */
struct pass {
	const struct reconcile_input *in;
	const struct job *job;
	struct reconcile_output *out;
	struct job_status *st;
	const struct pod_view **by_index; /* the pod of each index, or NULL */
	char *deleted;                    /* per input pod: a DeletePod for it was decided */
	int restart_all;                  /* restartScope All: a restart of every worker is due */
	int finished;                     /* the job ended in this pass or before */
};

/* --- output --- */

static struct action *add_action(struct pass *p, enum action_kind kind)
{
	struct reconcile_output *o = p->out;

	if (o->nactions == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 16;
		struct action *grown = xmalloc((size_t)o->cap * sizeof(*grown));
		if (o->nactions)
			memcpy(grown, o->actions, (size_t)o->nactions * sizeof(*grown));
		free(o->actions);
		o->actions = grown;
	}
	struct action *a = &o->actions[o->nactions++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->index = -1;
	a->attempt = -1;
	return a;
}

/* A message for a condition or an event into out (JOB_MESSAGE_LEN); one
 * too long is cut, as a condition would cut it anyway. */
static void say(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(char *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	/* clang-tidy misreads ap when checking several files at once (llvm#40656).
	 * NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	vsnprintf(out, JOB_MESSAGE_LEN, fmt, ap);
	va_end(ap);
}

static void event(struct pass *p, const char *type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void event(struct pass *p, const char *type, const char *reason, const char *fmt, ...)
{
	struct action *a = add_action(p, ACT_EVENT);
	va_list ap;

	snprintf(a->event_type, sizeof(a->event_type), "%s", type);
	snprintf(a->reason, sizeof(a->reason), "%s", reason);
	va_start(ap, fmt);
	/* As in say(): llvm#40656.
	 * NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	vsnprintf(a->message, sizeof(a->message), fmt, ap);
	va_end(ap);
}

/* Deletes pod, once a pass however many rules want it gone (a failure and
 * a restart of every worker, say): a second delete of the same uid would
 * only fail. */
static void delete_pod(struct pass *p, const struct pod_view *pod)
{
	struct action *a;
	size_t k = (size_t)(pod - p->in->pods);

	if (pod->deleting || p->deleted[k])
		return;
	p->deleted[k] = 1;
	a = add_action(p, ACT_DELETE_POD);
	a->index = pod->index;
	snprintf(a->name, sizeof(a->name), "%s", pod->name);
	snprintf(a->uid, sizeof(a->uid), "%s", pod->uid);
}

/* The attempt the index's pod is created at: 0 for an index never seen,
 * whose attempt stays -1 until its pod is (pod_present). */
static long attempt_to_create(const struct pass *p, int index)
{
	return p->st->attempts[index] < 0 ? 0 : p->st->attempts[index];
}

/* Creates the index's pod at its attempt, and says so in the status,
 * which is written before the create goes out: a pass that then finds
 * no pod knows that one may have been made and gone (pod_gone). */
static void create_pod(struct pass *p, int index)
{
	struct action *a = add_action(p, ACT_CREATE_POD);

	a->index = index;
	a->attempt = attempt_to_create(p, index);
	p->st->sent[index] = a->attempt;
	pod_spec_pod_name(p->job, index, a->name);
}

static void requeue_at(struct pass *p, long long at_s)
{
	if (p->out->requeue_at_s < 0 || at_s < p->out->requeue_at_s)
		p->out->requeue_at_s = at_s;
}

/* --- the end --- */

static void finish(struct pass *p, int succeeded, const char *reason, const char *message)
{
	struct job_status *st = p->st;

	st->phase = succeeded ? PHASE_SUCCEEDED : PHASE_FAILED;
	snprintf(st->completion_time, sizeof(st->completion_time), "%s", p->in->now);
	job_status_set_condition(st, succeeded ? "Succeeded" : "Failed", "True", reason, message,
	                         p->in->now);
	job_status_set_condition(st, "Running", "False", reason, message, p->in->now);
	job_status_set_condition(st, "Restarting", "False", reason, message, p->in->now);
	event(p, succeeded ? EVENT_NORMAL : EVENT_WARNING, succeeded ? "Succeeded" : reason, "%s",
	      message);
	p->finished = 1;
}

static int finished_phase(enum job_phase ph)
{
	return ph == PHASE_SUCCEEDED || ph == PHASE_FAILED;
}

/* What a finished job still does: clean its pods, and go when its time to
 * live is over. Its pods are never created again. */
static void after_the_end(struct pass *p)
{
	const struct job *j = p->job;

	for (int k = 0; k < p->in->npods; k++) {
		const struct pod_view *pod = &p->in->pods[k];
		int running = pod->phase == POD_PENDING || pod->phase == POD_RUNNING ||
		              pod->phase == POD_UNKNOWN;
		/* A pod whose worker has ended but a sidecar holds goes
		 * whatever the policy says: nothing else would stop it. */
		if (pod->held || j->clean_pod_policy == CLEAN_ALL ||
		    (j->clean_pod_policy == CLEAN_RUNNING && running))
			delete_pod(p, pod);
	}
	if (j->ttl_after_finished_s < 0)
		return;
	long long done = 0;
	if (timefmt_parse(p->st->completion_time, &done) < 0) {
		/* A status edited by hand lost it: the time to live counts from
		 * now, written down, else every pass would start it again. */
		snprintf(p->st->completion_time, sizeof(p->st->completion_time), "%s", p->in->now);
		done = p->in->now_s;
	}
	if (p->in->now_s >= done + j->ttl_after_finished_s)
		add_action(p, ACT_DELETE_JOB);
	else
		requeue_at(p, done + j->ttl_after_finished_s);
}

/* --- restarts --- */

static long max_attempt(const struct job_status *st)
{
	long m = -1;

	for (int i = 0; i < st->nworkers; i++)
		m = st->attempts[i] > m ? st->attempts[i] : m;
	return m;
}

/* Index i must be recreated for cause: its attempt goes up, and under
 * restartScope All every index goes to the next attempt together. */
static void schedule_restart(struct pass *p, int i, long from_attempt, enum restart_cause cause)
{
	struct job_status *st = p->st;

	if (p->job->restart_scope == SCOPE_ALL) {
		long next = (max_attempt(st) > from_attempt ? max_attempt(st) : from_attempt) + 1;
		for (int k = 0; k < st->nworkers; k++) {
			st->attempts[k] = next;
			if (st->restarting[k] == CAUSE_NONE)
				st->restarting[k] = k == i ? cause : CAUSE_SCOPE;
		}
		p->restart_all = 1;
		return;
	}
	/* Never back to an attempt already used: a pod without its
	 * annotation reads as attempt -1. */
	st->attempts[i] = (st->attempts[i] > from_attempt ? st->attempts[i] : from_attempt) + 1;
	st->restarting[i] = cause;
}

static void count_preemption(struct pass *p, int i, long attempt, const char *what)
{
	p->st->preemptions++;
	p->st->total_restarts++;
	schedule_restart(p, i, attempt, CAUSE_PREEMPTION);
	event(p, EVENT_NORMAL, "WorkerPreempted",
	      "worker %d (pod %s-worker-%d) %s; recreating it (attempt %ld), not counted against "
	      "backoffLimit",
	      i, p->job->name, i, what, p->st->attempts[i]);
}

static const char *policy_name(enum restart_policy r)
{
	static const char *const names[] = {"ExitCode", "OnFailure", "Never", "Always"};
	return names[r];
}

/* Whether a failed worker is recreated under the job's restartPolicy. An
 * exit code that is not known (the container never ran) is retryable. */
static int retryable(enum restart_policy policy, int code)
{
	switch (policy) {
	case RESTART_EXIT_CODE:
		return code < 0 || code == 75 || (code >= 128 && code <= 255);
	case RESTART_ON_FAILURE:
	case RESTART_ALWAYS:
		return 1;
	case RESTART_NEVER:
		return 0;
	}
	return 0;
}

static void record_failure(struct job_status *st, const struct pod_view *pod)
{
	snprintf(st->last_failure_pod, sizeof(st->last_failure_pod), "%s", pod->name);
	st->last_failure_exit_code = pod->exit_code;
	snprintf(st->last_failure_reason, sizeof(st->last_failure_reason), "%s",
	         pod->reason[0] ? pod->reason : pod->status_reason);
}

/* A worker's container failed: recreate it (counted) or fail the job.
 * One event says so: WorkerFailed, then Restarting, when the worker is
 * recreated; when the failure ends the job, the end's own event, which
 * names the failure (a second WorkerFailed would tell it twice). */
static void worker_failed(struct pass *p, const struct pod_view *pod)
{
	const struct job *j = p->job;
	struct job_status *st = p->st;
	int i = pod->index;
	char msg[JOB_MESSAGE_LEN], why[JOB_MESSAGE_LEN];

	record_failure(st, pod);
	say(msg, "worker %d (pod %s) failed with exit code %d (%s)", i, pod->name, pod->exit_code,
	    pod->reason[0] ? pod->reason : "no reason given");
	st->failures++;
	if (!retryable(j->restart_policy, pod->exit_code)) {
		say(why, "%s: a permanent failure under restartPolicy %s", msg,
		    policy_name(j->restart_policy));
		finish(p, 0, "WorkerFailed", why);
		return;
	}
	if (st->failures > j->backoff_limit) {
		say(why, "%ld failures exceed backoffLimit %d; the last: %s", st->failures,
		    j->backoff_limit, msg);
		finish(p, 0, "BackoffLimitExceeded", why);
		return;
	}
	st->total_restarts++;
	event(p, EVENT_WARNING, "WorkerFailed", "%s", msg);
	schedule_restart(p, i, pod->attempt, CAUSE_FAILURE);
	event(p, EVENT_NORMAL, "Restarting",
	      "recreating worker %d (attempt %ld): failure %ld of backoffLimit %d", i,
	      st->attempts[i], st->failures, j->backoff_limit);
}

/* --- one index --- */

/* What this replica knows of the create of index i at attempt. */
static enum create_result create_result_of(const struct pass *p, int i, long attempt)
{
	const struct create_outcome *o = p->in->outcomes ? &p->in->outcomes[i] : NULL;

	return o && o->attempt == attempt ? o->result : CREATE_UNKNOWN;
}

/* Index i's create was sent at an attempt whose pod was never seen, and
 * no pod is there: it was created and went before the watch showed it
 * (a preemption), or the API refused it (sent again, the same attempt),
 * or its fate is unknown (a new leader, a 5xx, a lost answer): that
 * attempt is passed over, and a pod of it that shows up late is deleted
 * as an old attempt, so that no attempt is ever created twice. */
static void create_unseen(struct pass *p, int i, long attempt)
{
	struct job_status *st = p->st;

	switch (create_result_of(p, i, attempt)) {
	case CREATE_REFUSED:
	case CREATE_NAME_BUSY:
	case CREATE_NOT_OWNED: /* the job fails (name_conflict) */
		return;
	case CREATE_DONE:
		count_preemption(p, i, attempt, "was deleted before the operator saw it");
		return;
	case CREATE_UNKNOWN:
		st->attempts[i] = attempt + 1;
		if (st->restarting[i] == CAUSE_NONE)
			st->restarting[i] = CAUSE_UNCONFIRMED;
		event(p, EVENT_NORMAL, "CreateUnconfirmed",
		      "worker %d (pod %s-worker-%d): attempt %ld was asked for and its pod never "
		      "seen; creating attempt %ld instead",
		      i, p->job->name, i, attempt, st->attempts[i]);
		return;
	}
}

/* The index's pod is gone. If a pod of its attempt was seen, someone
 * else deleted it; if its create was sent and the pod never seen, see
 * create_unseen; else it is about to be created. */
static void pod_gone(struct pass *p, int i)
{
	struct job_status *st = p->st;
	long attempt = attempt_to_create(p, i);

	if (st->restarting[i] == CAUSE_NONE && st->attempts[i] >= 0)
		count_preemption(p, i, st->attempts[i], "was deleted by someone else");
	else if (st->sent[i] >= attempt)
		create_unseen(p, i, attempt);
}

/* Whether the missing pod of index i may be created now. Under
 * restartScope All a restart creates nothing while a pod from before it
 * remains (terminating ones too), so that two pods of one index never run
 * at once; the new attempt's pods already there do not hold it back. */
static int may_create(const struct pass *p, int i)
{
	const struct job_status *st = p->st;

	if (p->job->restart_scope != SCOPE_ALL || st->restarting[i] == CAUSE_NONE)
		return 1;
	for (int k = 0; k < p->in->npods; k++) {
		const struct pod_view *pod = &p->in->pods[k];
		int stray = pod->index < 0 || pod->index >= p->job->workers ||
		            p->by_index[pod->index] != pod;
		if (stray || pod->deleting || pod->attempt < st->attempts[pod->index])
			return 0;
	}
	return 1;
}

/* The index's pod exists. */
static void pod_present(struct pass *p, const struct pod_view *pod)
{
	struct job_status *st = p->st;
	int i = pod->index;

	if (st->restarting[i] != CAUSE_NONE && pod->attempt >= st->attempts[i] && !pod->deleting)
		st->restarting[i] = CAUSE_NONE; /* the recreated pod is here */
	if (st->attempts[i] < pod->attempt)
		st->attempts[i] = pod->attempt; /* a status edited by hand lags behind */
	if (pod->deleting) {
		/* Marked for deletion: by the operator (it waits), or by someone
		 * else, a preemption on its way. */
		if (st->restarting[i] == CAUSE_NONE && pod->attempt >= st->attempts[i])
			count_preemption(p, i, pod->attempt, "is being deleted by someone else");
		return;
	}
	if (st->restarting[i] != CAUSE_NONE && pod->attempt < st->attempts[i]) {
		delete_pod(p, pod); /* an old attempt the operator is replacing */
		return;
	}
	switch (pod->phase) {
	case POD_SUCCEEDED:
		if (i == 0)
			finish(p, 1, "ChiefSucceeded", "worker 0, the chief, exited 0");
		return;
	case POD_FAILED:
		if (pod->disrupted) {
			char what[JOB_MESSAGE_LEN];
			snprintf(what, sizeof(what), "was disrupted (%s)",
			         pod->status_reason[0] ? pod->status_reason : "DisruptionTarget");
			count_preemption(p, i, pod->attempt, what);
		} else {
			worker_failed(p, pod);
		}
		if (!p->finished)
			delete_pod(p, pod);
		return;
	default:
		return;
	}
}

/* --- the pass --- */

static void index_pods(struct pass *p)
{
	for (int k = 0; k < p->in->npods; k++) {
		const struct pod_view *pod = &p->in->pods[k];
		char want[JOB_NAME_LEN];
		if (pod->index < 0 || pod->index >= p->job->workers)
			continue;
		pod_spec_pod_name(p->job, pod->index, want);
		if (strcmp(pod->name, want) == 0)
			p->by_index[pod->index] = pod;
	}
}

/* Pods that belong to no index of the job now (fewer workers, a bad
 * label): deleted. */
static void delete_strays(struct pass *p)
{
	for (int k = 0; k < p->in->npods; k++) {
		const struct pod_view *pod = &p->in->pods[k];
		if (pod->index < 0 || pod->index >= p->job->workers ||
		    p->by_index[pod->index] != pod)
			delete_pod(p, pod);
	}
}

/* Whether the job's object what exists, as far as this pass knows: the
 * Secret and ConfigMap by the names the status records (a create whose
 * name was not recorded is made again); the Service and NetworkPolicy in
 * the caches, or created by this replica a moment ago. */
static int have_object(const struct pass *p, enum job_object what)
{
	const struct create_outcome *o =
	    p->in->object_outcomes ? &p->in->object_outcomes[what] : NULL;
	int created = o && o->result == CREATE_DONE;

	switch (what) {
	case OBJ_SECRET:
		return p->st->ring_key_secret[0] != '\0';
	case OBJ_CONFIG_MAP:
		return p->st->tf_config_map[0] != '\0' || !pod_spec_tf_config_in_file(p->job);
	case OBJ_SERVICE:
		return p->in->have_service || created;
	case OBJ_NETWORK_POLICY:
		return p->in->have_network_policy || created;
	case OBJ_STATUS_CA:
		return p->job->reporting == NULL || p->st->status_ca_map[0] != '\0';
	case JOB_OBJECTS:
		break;
	}
	return 1;
}

/* Creates what the pods rely on; the pods' creates wait for them
 * (actions.c). */
static void ensure_objects(struct pass *p)
{
	for (int k = 0; k < JOB_OBJECTS; k++)
		if (!have_object(p, (enum job_object)k))
			add_action(p, ACT_CREATE_OBJECT)->object = (enum job_object)k;
}

/* Under restartScope All, a restart deletes every pod of the job. */
static void restart_everything(struct pass *p)
{
	for (int k = 0; k < p->in->npods; k++)
		delete_pod(p, &p->in->pods[k]);
}

static void check_deadline(struct pass *p)
{
	long long start;
	const struct job *j = p->job;

	if (j->active_deadline_s < 0 || timefmt_parse(p->st->start_time, &start) < 0)
		return;
	if (p->in->now_s >= start + j->active_deadline_s) {
		char why[JOB_MESSAGE_LEN];
		snprintf(why, sizeof(why), "the job ran longer than activeDeadlineSeconds %lld",
		         j->active_deadline_s);
		finish(p, 0, "DeadlineExceeded", why);
	} else {
		requeue_at(p, start + j->active_deadline_s);
	}
}

/* A pod waiting on its image or its config for too long is told, once,
 * in the Running condition and an event. */
static int stuck_reason(const char *reason)
{
	static const char *const reasons[] = {"ErrImagePull", "ImagePullBackOff",
	                                      "CreateContainerConfigError", "InvalidImageName",
	                                      "CreateContainerError"};

	for (size_t k = 0; k < sizeof(reasons) / sizeof(reasons[0]); k++)
		if (strcmp(reason, reasons[k]) == 0)
			return 1;
	return 0;
}

static int stuck(const struct pod_view *pod)
{
	return pod->phase == POD_PENDING && !pod->deleting && stuck_reason(pod->waiting_reason);
}

/* Whether condition c already tells that the worker whose message
 * begins with told is stuck: the reason may have changed since, as the
 * kubelet goes from ErrImagePull to ImagePullBackOff and back. */
static int tells_stuck(const struct job_condition *c, const char *told)
{
	return c && strcmp(c->status, "False") == 0 && stuck_reason(c->reason) &&
	       strncmp(c->message, told, strlen(told)) == 0;
}

static void report_stuck(struct pass *p)
{
	for (int i = 0; i < p->job->workers; i++) {
		const struct pod_view *pod = p->by_index[i];
		if (!pod || !stuck(pod))
			continue;
		long long since = pod->created_s ? pod->created_s : p->in->now_s;
		if (p->in->now_s < since + RECONCILE_STUCK_S) {
			requeue_at(p, since + RECONCILE_STUCK_S);
			continue;
		}
		char told[JOB_MESSAGE_LEN], msg[JOB_MESSAGE_LEN];
		say(told, "worker %d (pod %s) cannot start: ", i, pod->name);
		say(msg, "%s%s: %s", told, pod->waiting_reason, pod->waiting_message);
		/* Told once: the status as it was says whether it was. */
		if (!tells_stuck(job_status_condition(&p->job->status, "Running"), told))
			event(p, EVENT_WARNING, "WorkerNotStarting", "%s", msg);
		job_status_set_condition(p->st, "Running", "False", pod->waiting_reason, msg,
		                         p->in->now);
		return;
	}
}

/* --- what the API server said --- */

/* What this replica knows of index i's create at the attempt it is on,
 * while its pod is missing; NULL when nothing is known. */
static const struct create_outcome *pod_outcome(const struct pass *p, int i)
{
	const struct create_outcome *o = p->in->outcomes ? &p->in->outcomes[i] : NULL;

	if (o == NULL || p->by_index[i] != NULL || o->attempt != attempt_to_create(p, i))
		return NULL;
	return o;
}

/* The first of the job's missing objects, then of its missing pods, whose
 * create got result: a description into msg (JOB_MESSAGE_LEN). Returns
 * whether there is one. */
static int first_answer(const struct pass *p, enum create_result result, char *msg)
{
	char name[JOB_NAME_LEN];

	for (int k = 0; p->in->object_outcomes && k < JOB_OBJECTS; k++) {
		const struct create_outcome *o = &p->in->object_outcomes[k];
		if (o->result == result && !have_object(p, (enum job_object)k)) {
			say(msg, "cannot create the %s of the job: %s",
			    pod_spec_object_kind((enum job_object)k), o->message);
			return 1;
		}
	}
	for (int i = 0; i < p->job->workers; i++) {
		const struct create_outcome *o = pod_outcome(p, i);
		if (o && o->result == result) {
			pod_spec_pod_name(p->job, i, name);
			say(msg, "cannot create pod %s (worker %d): %s", name, i, o->message);
			return 1;
		}
	}
	return 0;
}

/* A name the job needs is taken by an object it does not own, which the
 * operator never uses: the job fails, saying which. Returns 1 then. */
static int name_conflict(struct pass *p)
{
	char msg[JOB_MESSAGE_LEN];

	if (!first_answer(p, CREATE_NOT_OWNED, msg))
		return 0;
	job_status_set_condition(p->st, "Created", "False", "NameConflict", msg, p->in->now);
	finish(p, 0, "NameConflict", msg);
	return 1;
}

/* Whether every object and worker pod of the job was created: seen, or
 * answered 201 to this replica. */
static int all_created(const struct pass *p)
{
	for (int k = 0; k < JOB_OBJECTS; k++)
		if (!have_object(p, (enum job_object)k))
			return 0;
	for (int i = 0; i < p->job->workers; i++) {
		const struct create_outcome *o = pod_outcome(p, i);
		if (p->by_index[i] == NULL && !(o && o->result == CREATE_DONE))
			return 0;
	}
	return 1;
}

/* Created: True once the job's objects and every worker's pod were
 * created (and so it stays while workers are recreated); False with the
 * API's own words while a create is refused, told once by an event per
 * refusal; False while the first creates are on their way. */
static void created_condition(struct pass *p)
{
	const struct job_condition *was = job_status_condition(&p->job->status, "Created");
	char msg[JOB_MESSAGE_LEN];

	if (first_answer(p, CREATE_REFUSED, msg)) {
		if (!(was && strcmp(was->reason, "CreateRefused") == 0 &&
		      strcmp(was->message, msg) == 0))
			event(p, EVENT_WARNING, "CreateRefused", "%s", msg);
		job_status_set_condition(p->st, "Created", "False", "CreateRefused", msg,
		                         p->in->now);
	} else if ((was && strcmp(was->status, "True") == 0) || all_created(p)) {
		job_status_set_condition(p->st, "Created", "True", "PodsCreated",
		                         "the objects and every worker pod of the job were created",
		                         p->in->now);
	} else {
		say(msg, "creating the objects and the %d worker pod%s of the job", p->job->workers,
		    p->job->workers == 1 ? "" : "s");
		job_status_set_condition(p->st, "Created", "False", "Creating", msg, p->in->now);
	}
}

/* The worker counts: the pods as they are now. */
static void count_workers(struct pass *p)
{
	struct job_status *st = p->st;

	st->active = st->ready = st->succeeded = st->failed = 0;
	for (int k = 0; k < p->in->npods; k++) {
		const struct pod_view *pod = &p->in->pods[k];
		int live =
		    !pod->deleting && (pod->phase == POD_PENDING || pod->phase == POD_RUNNING);
		st->succeeded += pod->phase == POD_SUCCEEDED;
		st->failed += pod->phase == POD_FAILED;
		st->active += live;
		st->ready += live && pod->phase == POD_RUNNING && pod->ready;
	}
}

/* The phase and conditions of a job that goes on. By now every index
 * has its pod, or its create is decided in this pass, or it waits on a
 * restart of every worker: the job's objects are all asked for. */
static void summarize(struct pass *p)
{
	struct job_status *st = p->st;
	int restarting = 0, running = 0;

	for (int i = 0; i < p->job->workers; i++) {
		const struct pod_view *pod = p->by_index[i];
		/* Resuming recreates every worker, and is no restart; nor is
		 * a first create passed over. */
		restarting += st->restarting[i] != CAUSE_NONE &&
		              st->restarting[i] != CAUSE_RESUME &&
		              st->restarting[i] != CAUSE_UNCONFIRMED;
		/* A worker that finished its share (exit 0) while the chief
		 * still runs is no reason to call the job Pending again. */
		running += pod && !pod->deleting &&
		           (pod->phase == POD_RUNNING || pod->phase == POD_SUCCEEDED);
	}
	created_condition(p);
	if (restarting) {
		st->phase = PHASE_RESTARTING;
		job_status_set_condition(st, "Restarting", "True", "WorkersRestarting",
		                         "recreating workers", p->in->now);
	} else {
		job_status_set_condition(st, "Restarting", "False", "AllWorkersPresent",
		                         "no worker is being recreated", p->in->now);
		st->phase = running == p->job->workers ? PHASE_RUNNING : PHASE_PENDING;
	}
	/* Set whole each pass: a stuck worker's reason (report_stuck) must
	 * not outlive the stuck pod. */
	if (st->phase == PHASE_RUNNING)
		job_status_set_condition(st, "Running", "True", "AllWorkersRunning",
		                         "every worker is running or has finished", p->in->now);
	else
		job_status_set_condition(st, "Running", "False", "WorkersNotRunning",
		                         "not every worker is running", p->in->now);
}

/* suspend: true deletes the pods and keeps the backups; false again
 * resumes (not counted as a restart). Returns 1 when the job is
 * suspended. */
static int suspension(struct pass *p)
{
	struct job_status *st = p->st;
	int was = st->phase == PHASE_SUSPENDED;

	if (p->job->suspend) {
		for (int k = 0; k < p->in->npods; k++)
			delete_pod(p, &p->in->pods[k]);
		if (!was) {
			const char *why = "spec.suspend is true: the workers are stopped, the "
			                  "backups kept";
			st->phase = PHASE_SUSPENDED;
			st->start_time[0] = '\0';
			job_status_set_condition(st, "Suspended", "True", "JobSuspended", why,
			                         p->in->now);
			/* Nothing runs nor restarts while suspended. */
			job_status_set_condition(st, "Running", "False", "JobSuspended", why,
			                         p->in->now);
			job_status_set_condition(st, "Restarting", "False", "JobSuspended", why,
			                         p->in->now);
			event(p, EVENT_NORMAL, "Suspended", "the job is suspended");
		}
		return 1;
	}
	if (was) {
		for (int i = 0; i < st->nworkers; i++)
			if (st->attempts[i] >= 0) {
				st->attempts[i]++;
				st->restarting[i] = CAUSE_RESUME;
			}
		st->phase = PHASE_PENDING;
		job_status_set_condition(
		    st, "Suspended", "False", "JobResumed",
		    "spec.suspend is false: the workers resume from their backups", p->in->now);
		event(p, EVENT_NORMAL, "Resumed", "the job resumes");
	}
	return 0;
}

/* spec.workers edited on a running job, on a server that did not refuse
 * it (the CRD's rule needs Kubernetes 1.25): told once per edit (a new
 * generation), and not acted on. */
static void workers_edited(struct pass *p)
{
	const struct job *j = p->job;

	if (j->workers_spec != j->workers && j->generation != j->status.observed_generation)
		event(p, EVENT_WARNING, "WorkersImmutable",
		      "spec.workers was changed to %d; the job keeps its %d workers, whose "
		      "TF_CONFIG names them all: delete the job and create it again to change "
		      "the number",
		      j->workers_spec, j->workers);
}

/* What is told once, the first time the operator sees the job. */
static void first_sight(struct pass *p)
{
	const char *policy = pod_spec_restart_policy_overridden(p->job);

	if (policy)
		event(p, EVENT_WARNING, "RestartPolicyOverridden",
		      "the template's restartPolicy %.64s is replaced by Never: the operator "
		      "restarts workers itself, under spec.restartPolicy",
		      policy);
}

/* A job that goes on: its objects, then each worker index. */
static void run_job(struct pass *p)
{
	struct job_status *st = p->st;

	if (name_conflict(p))
		return;
	ensure_objects(p);
	if (!st->start_time[0])
		snprintf(st->start_time, sizeof(st->start_time), "%s", p->in->now);
	check_deadline(p);
	if (p->finished)
		return;
	delete_strays(p);
	for (int i = 0; i < p->job->workers && !p->finished; i++)
		if (p->by_index[i])
			pod_present(p, p->by_index[i]);
	if (p->finished)
		return;
	for (int i = 0; i < p->job->workers; i++)
		if (!p->by_index[i])
			pod_gone(p, i);
	if (p->restart_all)
		restart_everything(p);
	for (int i = 0; i < p->job->workers; i++)
		if (!p->by_index[i] && may_create(p, i))
			create_pod(p, i);
	summarize(p);
	report_stuck(p);
}

/* The chief's report into status.training. A step behind the one shown
 * is no regression to hide: the workers went back to their last backup
 * after a preemption or a failure, and an Event says from where; so does
 * a new chief that starts where the last one left off. */
static void take_report(struct pass *p, const struct training_status *r)
{
	const struct training_status *was = &p->st->training;
	/* The operator saw the step go back or the chief change (reports.c),
	 * or the status shows a later step (reports from before this replica
	 * started). */
	long long from = r->resumed_from;
	/* The backup it went back to, not a newer one written since. */
	long long backup = r->resumed_backup >= 0 ? r->resumed_backup : r->last_backup_step;

	if (was->present && was->global_step > from)
		from = was->global_step;
	if (from >= 0 && (from > r->global_step || r->new_chief)) {
		if (backup >= 0)
			event(p, EVENT_NORMAL, "TrainingResumed",
			      "training resumed from the backup of step %lld (now at step %lld); "
			      "step %lld had been reported before",
			      backup, r->global_step, from);
		else
			event(p, EVENT_NORMAL, "TrainingResumed",
			      "training resumed at step %lld; step %lld had been reported before",
			      r->global_step, from);
	}
	p->st->training = *r;
	training_forget_resume(&p->st->training);
}

void reconcile(const struct reconcile_input *in, struct reconcile_output *out)
{
	const struct job *j = in->job;
	struct pass p = {.in = in, .job = j, .out = out};

	memset(out, 0, sizeof(*out));
	out->requeue_at_s = -1;
	job_status_copy(&out->status, &j->status);
	p.st = &out->status;
	p.st->observed_generation = j->generation;
	if (j->deleting)
		return; /* garbage collection takes its pods */
	if (in->report != NULL)
		take_report(&p, in->report);
	p.deleted = xcalloc((size_t)in->npods + 1, sizeof(*p.deleted));
	if (finished_phase(p.st->phase)) {
		p.finished = 1;
	} else if (j->invalid[0]) {
		/* Its pods (a spec edited into one the operator cannot honour)
		 * go as for any end, in this pass. */
		finish(&p, 0, "InvalidSpec", j->invalid);
	} else {
		if (p.st->phase == PHASE_NONE)
			first_sight(&p);
		workers_edited(&p);
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
		p.by_index = xcalloc((size_t)j->workers, sizeof(*p.by_index));
		index_pods(&p);
		if (!suspension(&p))
			run_job(&p);
	}
	if (p.finished)
		after_the_end(&p);
	count_workers(&p);
	free(p.by_index);
	free(p.deleted);
}

void reconcile_output_release(struct reconcile_output *out)
{
	if (out == NULL)
		return;
	free(out->actions);
	job_status_release(&out->status);
	memset(out, 0, sizeof(*out));
}

const char *reconcile_action_name(enum action_kind k)
{
	static const char *const names[] = {"CreateObject", "CreatePod", "DeletePod", "Event",
	                                    "DeleteJob"};
	return (size_t)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}
