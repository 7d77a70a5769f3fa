/* job.h - a MultiWorkerJob as the operator reads it: the spec with the
 * CRD's defaults (the API server applies them, but an object written by
 * an older CRD may lack one), the status it wrote last, and its identity.
 *
 * The status here is the operator's own bookkeeping as well as what a
 * user reads: which attempt each worker index is on, and which indices
 * the operator is recreating itself (so that a missing pod it deleted on
 * purpose is never taken for a preempted one, even after the operator
 * restarts). It is written before the pods are touched (reconcile.h).
 */
#ifndef MWJ_JOB_H
#define MWJ_JOB_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "err.h"
#include "training.h"

/* The resource, as the CRD (crds/) defines it. */
#define JOB_GROUP       "training.mwj.io"
#define JOB_VERSION     "v1"
#define JOB_API_VERSION JOB_GROUP "/" JOB_VERSION
#define JOB_KIND        "MultiWorkerJob"
#define JOB_PLURAL      "multiworkerjobs"

#define JOB_NAME_LEN       254
#define JOB_UID_LEN        64
#define JOB_TIME_LEN       32 /* "2026-11-25T01:02:03Z" */
#define JOB_REASON_LEN     64
#define JOB_MESSAGE_LEN    1024
#define JOB_CONDITIONS_MAX 8
#define JOB_WORKERS_MAX    4096
#define JOB_PATH_LEN       4096

enum restart_policy { RESTART_EXIT_CODE, RESTART_ON_FAILURE, RESTART_NEVER, RESTART_ALWAYS };
enum restart_scope { SCOPE_POD, SCOPE_ALL };
enum clean_pod_policy { CLEAN_RUNNING, CLEAN_ALL, CLEAN_NONE };
enum job_phase {
	PHASE_NONE, /* never reconciled */
	PHASE_PENDING,
	PHASE_RUNNING,
	PHASE_RESTARTING,
	PHASE_SUCCEEDED,
	PHASE_FAILED,
	PHASE_SUSPENDED,
};

struct job_condition {
	char type[32];  /* Created, Running, Restarting, Succeeded, Failed, Suspended */
	char status[8]; /* "True", "False", "Unknown" */
	char reason[JOB_REASON_LEN];
	char message[JOB_MESSAGE_LEN];
	char last_transition[JOB_TIME_LEN];
};

/* Why the operator recreates an index itself. */
enum restart_cause {
	CAUSE_NONE,
	CAUSE_FAILURE,
	CAUSE_PREEMPTION,
	CAUSE_SCOPE,
	CAUSE_RESUME,
	CAUSE_UNCONFIRMED, /* the first create's pod was never seen: the next attempt */
};

struct job_status {
	enum job_phase phase;
	struct job_condition conditions[JOB_CONDITIONS_MAX];
	int nconditions;
	int active, ready, succeeded, failed; /* pods now */
	long total_restarts, preemptions, failures;
	char start_time[JOB_TIME_LEN]; /* "" when unset */
	char completion_time[JOB_TIME_LEN];
	long long observed_generation;
	/* The last counted failure: pod, exit code and reason ("" pod: none). */
	char last_failure_pod[JOB_NAME_LEN];
	int last_failure_exit_code;
	char last_failure_reason[JOB_REASON_LEN];
	/* Bookkeeping, one entry per worker index (nworkers of them):
	 * the attempt of the index's pod, current or next (-1: no pod of it
	 * seen yet: its first create is tried again until one is), and why
	 * the operator is recreating it (CAUSE_NONE: it is not), and the
	 * newest attempt whose create it has sent (-1: none), written before
	 * the create goes out. */
	int nworkers;
	long *attempts;
	enum restart_cause *restarting;
	long *sent;
	/* The names the API server generated for the job's ring-key Secret
	 * and TF_CONFIG ConfigMap ("" until made), recorded before any pod
	 * refers to them: the operator creates them but never reads them
	 * back (it may not read Secrets). */
	char ring_key_secret[JOB_NAME_LEN];
	char tf_config_map[JOB_NAME_LEN];
	char status_ca_map[JOB_NAME_LEN]; /* the CA the chief's reports trust */
	/* Where training stands, as the chief last reported it (training.h);
	 * the operator keeps it as it is until a newer report comes. */
	struct training_status training;
};

/* How a job's chief reports its training to the operator (the status
 * endpoint, serve/status_server.h): where, with a token for which
 * audience, trusting which CA. The operator's, the same for every job. */
struct job_reporting {
	char url_base[JOB_PATH_LEN]; /* "https://<service>.<namespace>.svc:<port>" */
	char audience[JOB_NAME_LEN];
	const char *ca_pem; /* the CA's certificate, PEM */
};

struct job {
	char ns[JOB_NAME_LEN], name[JOB_NAME_LEN], uid[JOB_UID_LEN];
	/* Set by the caller after job_parse; NULL: the workers report nothing. */
	const struct job_reporting *reporting;
	long long generation;
	int deleting; /* metadata.deletionTimestamp is set */
	/* The spec. workers is the job's number of workers: spec.workers as
	 * the job started (the status' workerAttempts has one entry each);
	 * workers_spec is spec.workers as now written, which differs when
	 * someone edited a running job's count on a server that does not
	 * enforce the CRD's rule that it is immutable. */
	int workers, workers_spec, port;
	int metrics_port; /* where every worker serves /metrics; 0: nowhere */
	enum restart_policy restart_policy;
	enum restart_scope restart_scope;
	enum clean_pod_policy clean_pod_policy;
	int backoff_limit;
	long long active_deadline_s;    /* -1: none */
	long long ttl_after_finished_s; /* -1: none */
	int suspend;
	const cJSON *template;          /* borrowed from the object: spec.template */
	const cJSON *checkpoint_volume; /* borrowed: spec.checkpoint.volume, or NULL */
	char checkpoint_mount[JOB_PATH_LEN];
	/* Why the spec cannot be honoured ("" when it can): a name too long
	 * for its pods, no containers, ... The job then fails with this. */
	char invalid[ERR_LEN];
	struct job_status status;
};

/* --- Reading --- */

/* Fills j from a MultiWorkerJob object (borrowed: j points into it, so
 * obj must outlive j). A spec the operator cannot honour is not an
 * error: j->invalid says why. Returns -1 with a message only when obj is
 * no MultiWorkerJob at all (no metadata.name or uid). */
int job_parse(struct job *j, const cJSON *obj, char *err);

/* Frees what job_parse allocated (the status' arrays). Accepts NULL. */
void job_release(struct job *j);

/* Reads a status object into s (a missing or malformed field keeps its
 * zero value: the status is the operator's own, but a user may edit it).
 * nworkers sizes the per-index arrays. */
void job_status_parse(struct job_status *s, const cJSON *status, int nworkers);

/* A deep copy of src into dst (dst's arrays allocated anew). */
void job_status_copy(struct job_status *dst, const struct job_status *src);
void job_status_release(struct job_status *s);

/* --- Writing --- */

/* The status as JSON, every field the operator owns. The caller deletes it. */
cJSON *job_status_to_json(const struct job_status *s);

/* The merge patch ({"status": {...}}) that turns old into new, or NULL
 * when they are equal, so that an unchanged status is never written. The
 * caller deletes it. */
cJSON *job_status_patch(const struct job_status *old, const struct job_status *new);

/* Sets condition type to status ("True"/"False") with reason and message.
 * lastTransitionTime becomes now only when the status changes, as
 * Kubernetes conditions do. */
void job_status_set_condition(struct job_status *s, const char *type, const char *status,
                              const char *reason, const char *message, const char *now);

/* The condition of that type, or NULL. */
const struct job_condition *job_status_condition(const struct job_status *s, const char *type);

/* "Pending", "Running", ... ("" for PHASE_NONE). */
const char *job_phase_name(enum job_phase p);

/* "namespace/name", the job's work-queue key, into out (n bytes). */
void job_key(const struct job *j, char *out, size_t n);

#endif
