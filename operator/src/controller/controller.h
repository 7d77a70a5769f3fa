/* controller.h - the operator's loop, as DESIGN.md draws it:
 *
 *   API watch streams -> informer caches -> work queue of job keys ->
 *   reconcile (pure) -> actions -> API writes
 *
 * and the watch then shows the writes, which closes the loop.
 *
 * Informers follow the MultiWorkerJobs, and the Pods, Services and
 * NetworkPolicies labelled app.kubernetes.io/managed-by: mwj-operator.
 * Secrets are never read: the operator creates each job's ring key under
 * a name the API server generates and records in the job's status.
 *
 * What queues a job's key: a change of its spec or metadata (a new
 * metadata.generation, a deletion; an update of its status alone, the
 * operator's own status writes above all, does not, as
 * controller-runtime's GenerationChangedPredicate has it), any change to
 * one of its pods, Service or NetworkPolicy, a resync, a timer, and a
 * failed pass's back-off. Worker threads take keys (never two on one
 * key), read the job and its objects from the caches, reconcile, and run
 * the actions (actions.h): the job's objects, the status (only when it
 * changed), creates and deletes of pods (remembered as expectations until
 * the watch shows them, so that a quick second pass never creates a pod
 * twice), Events, and a finished job's deletion when its time to live is
 * over. A pass that failed, a create the API server refused among them,
 * comes back after the key's back-off (capped at a minute), so a refusal
 * that lasts costs a few requests a minute; a pass that asks to look
 * again at a time (a deadline, a time to live) gets a timer. A create
 * refused because the job's namespace is being deleted stops every pass
 * over the jobs of that namespace for a while: the namespace controller
 * is deleting them.
 *
 * A pod's replacement under the same name waits for the old pod's DELETED
 * event: creating it before is 409 AlreadyExists on a real server (the old
 * pod keeps its name until its node has stopped it), which is not an
 * error here but a reason to wait for the watch, never to spin.
 */
#ifndef MWJ_CONTROLLER_H
#define MWJ_CONTROLLER_H

#include "actions.h"
#include "create_outcomes.h"
#include "event_recorder.h"
#include "expectations.h"
#include "histogram.h"
#include "informer.h"
#include "kube_api.h"
#include "reports.h"
#include "workqueue.h"

#define CONTROLLER_WORKERS_MAX 64

struct controller_config {
	const char *namespace; /* NULL or "": every namespace */
	int workers;           /* reconcile threads */
	const char *instance;  /* the reporting instance of Events (host name) */
	int resync_s;          /* the informers' periodic resync */
	/* Whether this replica may reconcile now (leader election's
	 * leader_active); NULL: always. A pass taken while it says no is
	 * dropped; controller_lead brings every job back. */
	int (*active)(void *ctx);
	void *active_ctx;
	/* A job's status shows a new training report at most this often
	 * (ms); 0: REPORTS_WRITE_INTERVAL_MS. */
	long long status_write_ms;
	/* Where the chiefs report their training (job.h); NULL: nowhere. */
	const struct job_reporting *reporting;
};

/* A reconcile held longer than this is stuck, for /healthz: every API
 * call in it has a time-out and a retry deadline far shorter. */
#define CONTROLLER_STUCK_MS (5LL * 60 * 1000)

struct controller {
	struct controller_config cfg;
	struct kube_api *api;
	struct informer jobs, pods, services, policies;
	struct workqueue queue;
	struct expectations expect;
	struct create_outcomes outcomes;
	struct event_recorder events;
	/* Namespaces being deleted, as refusals said: namespace -> until when
	 * (long long *, monotonic ms) their jobs are left alone. */
	pthread_mutex_t terminating_lock;
	struct strmap terminating;
	pthread_t threads[CONTROLLER_WORKERS_MAX];
	int nthreads;
	/* The job as the operator's last status write returned it, per job
	 * key (struct written *), until the job cache shows that write. */
	pthread_mutex_t written_lock;
	struct strmap written;
	/* The chiefs' training reports, until their jobs' statuses show them. */
	struct reports reports;
	/* Counters, for logs and metrics. */
	unsigned long reconciles, reconcile_errors, passes_dropped;
	unsigned long status_only_updates; /* job updates dropped: nothing to do */
	unsigned long resyncs_backing_off; /* resyncs of jobs left to their back-off */
	struct actions_counters counts;
	struct histogram reconcile_time;
};

#define CONTROLLER_INFORMERS 4

/* How long the jobs of a namespace being deleted are left alone before a
 * pass looks again. */
#define CONTROLLER_TERMINATING_MS (60LL * 1000)

/* Sets c up: nothing runs yet, but metrics and health may read it from
 * here on. api must outlive c. Returns 0, or -1 with a message. */
int controller_init(struct controller *c, struct kube_api *api, const struct controller_config *cfg,
                    char *err);

/* Starts the informers, waits for their first lists (up to sync_ms), then
 * the worker threads. Returns 0, or -1 with a message (a cache that never
 * synced: the API unreachable or forbidden); call controller_stop then. */
int controller_start(struct controller *c, int sync_ms, char *err);

/* Queues every cached job, and forgets what became of its own creates
 * (another leader may have sent some since): this replica has just
 * become the leader. */
void controller_lead(struct controller *c);

/* Informer k (0 .. CONTROLLER_INFORMERS - 1), for metrics. */
struct informer *controller_informer(struct controller *c, int k);

/* /readyz: every cache has its first list. */
int controller_ready(struct controller *c);

/* /healthz: every informer turns, and no reconcile is stuck. Returns 1,
 * or 0 with what is wrong in why (ERR_LEN). */
int controller_alive(struct controller *c, char *why);

/* Stops taking work, lets reconciles in progress finish, stops the
 * informers and frees everything. The API client should be stopped first
 * (kube_api_stop) so that watches end at once. */
void controller_stop(struct controller *c);

/* A chief's training report t for the job (key "namespace/name", uid),
 * already authenticated: kept as the job's newest, and the job queued
 * for when its status may show it (reports.h). */
void controller_report(struct controller *c, const char *key, const char *uid,
                       const struct training_status *t);

/* One pass for the job "namespace/name" (what a worker thread does with a
 * key; exposed for tests). Returns 0, or -1 with a message when it must be
 * retried after back-off. */
int controller_sync(struct controller *c, const char *key, char *err);

#endif
