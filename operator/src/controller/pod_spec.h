/* pod_spec.h - the objects a job needs, built from its spec, and what the
 * operator reads back from its pods.
 *
 * Building (pure: the same job, index and attempt give the same object):
 * - worker pod i: "<job>-worker-<i>", hostname the pod's name, subdomain the
 *   job's name, the template's labels and annotations plus the job's own
 *   (training.mwj.io/job-name, training.mwj.io/replica-index,
 *   app.kubernetes.io/managed-by: mwj-operator) and the attempt
 *   (annotation training.mwj.io/restart-attempt), an ownerReference to the
 *   job (controller and blockOwnerDeletion), restartPolicy Never (the
 *   operator restarts), no ServiceAccount token unless the template asks
 *   for one (automountServiceAccountToken), and in the worker container
 *   (the one named "worker", else the first): TF_CONFIG (or, when it is
 *   too big for one environment variable, MWJ_TF_CONFIG_FILE, the cluster
 *   in a file from the job's ConfigMap), MWJ_JOB_NAME, MWJ_NUM_WORKERS,
 *   MWJ_WORKER_INDEX, MWJ_RESTART_ATTEMPT, MWJ_BACKUP_DIR (a folder of the
 *   job's own on the checkpoint volume: <mountPath>/<namespace>/<job>),
 *   MWJ_JOB_SECRET_FILE (the ring key, mounted read-only with mode 0400
 *   from the job's Secret, in the worker container only; the pod's fsGroup
 *   lets a non-root worker read it), the checkpoint volume mounted at its
 *   mountPath, and the ring port as a named container port. A user's own
 *   env, volumes, resources, nodeSelector, tolerations and the rest are
 *   kept; where the user set one of the operator's own env names, the
 *   operator's value wins.
 * - the headless Service "<job>": clusterIP None, publishNotReadyAddresses,
 *   selecting the job's pods, the ring port named "ring";
 * - the Secret "<job>-ring-key-<generated>": 32 random bytes under the key
 *   "key"; its name, which the API server makes up, is recorded in the
 *   job's status before any pod refers to it (the operator never reads
 *   Secrets, so it could not tell its own from one planted under a name
 *   it chose);
 * - the ConfigMap "<job>-tf-config-<generated>", only for a job whose
 *   TF_CONFIG does not fit an environment variable: the cluster as
 *   {"cluster":{"worker":[...]}} under the key tf_config.json;
 * - the NetworkPolicy "<job>-ring": traffic to the ring port of the job's
 *   pods only from the job's own pods; every other port stays open.
 *
 * TF_CONFIG names every worker "<job>-worker-<i>.<job>.<namespace>.svc:<port>",
 * which resolves through the pod's DNS search path on any cluster (no
 * cluster domain is hard-coded), and before the pods are Ready, because
 * the Service publishes not-ready addresses.
 */
#ifndef MWJ_POD_SPEC_H
#define MWJ_POD_SPEC_H

#include <cjson/cJSON.h>

#include "job.h"

#define LABEL_JOB_NAME      "training.mwj.io/job-name"
#define LABEL_INDEX         "training.mwj.io/replica-index"
#define LABEL_MANAGED_BY    "app.kubernetes.io/managed-by"
#define MANAGED_BY          "mwj-operator"
#define ANNOTATION_ATTEMPT  "training.mwj.io/restart-attempt"
#define RING_KEY_BYTES      32
#define SECRET_MOUNT_DIR    "/var/run/secrets/mwj"
#define TF_CONFIG_MOUNT_DIR "/var/run/mwj/tf-config"
#define TF_CONFIG_FILE_KEY  "tf_config.json"
/* Linux refuses to start a program with any one environment string
 * ("NAME=value" and its NUL) longer than MAX_ARG_STRLEN, 32 pages. */
#define POD_SPEC_ENV_STRING_MAX 131072
/* The group a worker that runs as no user the template names gets for
 * its volumes: the user and group of mwj's worker image. */
#define POD_SPEC_DEFAULT_FS_GROUP 65532

/* The job's objects other than its pods, in the order they are made;
 * every one must exist before a pod is created. */
enum job_object {
	OBJ_SECRET,
	OBJ_CONFIG_MAP,
	OBJ_SERVICE,
	OBJ_NETWORK_POLICY,
	OBJ_STATUS_CA, /* a ConfigMap: the CA the chief's reports trust */
	JOB_OBJECTS
};

/* Where the chief finds what it reports with (job.h's job_reporting). */
#define STATUS_MOUNT_DIR     "/var/run/mwj/status"
#define STATUS_CA_KEY        "ca.crt"
#define STATUS_TOKEN_PATH    "token"
#define STATUS_TOKEN_SECONDS 3600

/* --- Names --- */

/* Checks that the job's name gives valid names for everything the operator
 * makes: pod names (RFC 1123 subdomain, 253 characters, and "<job>-worker-
 * <i>" must also be a valid hostname label of 63), the Service (a DNS-1035
 * label of 63), the Secret and the NetworkPolicy. Returns 0, or -1 with a
 * message a user can act on ("job name 'x...' is too long: ..."). */
int pod_spec_check_names(const struct job *j, char *why);

/* "<job>-worker-<i>" into out (JOB_NAME_LEN). */
void pod_spec_pod_name(const struct job *j, int index, char *out);

/* The name of object what into out (JOB_NAME_LEN): "<job>" for the
 * Service, "<job>-ring" for the NetworkPolicy; for the Secret and the
 * ConfigMap, whose names the API server makes up, the generateName
 * prefix ("<job>-ring-key-", "<job>-tf-config-"). */
void pod_spec_object_name(const struct job *j, enum job_object what, char *out);

/* "Secret", "ConfigMap", "Service", "NetworkPolicy". */
const char *pod_spec_object_kind(enum job_object what);

/* Checks that spec.checkpoint.mountPath neither is nor holds nor lies
 * inside a folder the operator mounts itself (the ring key's, the
 * TF_CONFIG file's), which it would hide or which would hide it. Returns
 * 0, or -1 with a message a user can act on. */
int pod_spec_check_mounts(const struct job *j, char *why);

/* --- Building --- */

/* Whether the job's TF_CONFIG is too big for an environment variable
 * (POD_SPEC_ENV_STRING_MAX), so that it reaches the workers as a file
 * from the job's ConfigMap, MWJ_TF_CONFIG_FILE, instead. */
int pod_spec_tf_config_in_file(const struct job *j);

/* Worker pod index at attempt, referring to the Secret and ConfigMap
 * named in j's status. Returns a new tree the caller deletes, or NULL with
 * a message when it cannot be built (no containers, no Secret or
 * ConfigMap made yet). */
cJSON *pod_spec_pod(const struct job *j, int index, long attempt, char *err);

/* The template's own spec.restartPolicy when it is set to something other
 * than Never, which every pod gets instead (the operator does the
 * restarts): the caller warns the user with an Event. NULL when there is
 * nothing to warn about. Borrowed from the job's object. */
const char *pod_spec_restart_policy_overridden(const struct job *j);

/* The job's headless Service, Secret (key: RING_KEY_BYTES bytes, given),
 * NetworkPolicy and TF_CONFIG ConfigMap (NULL with a message when the
 * cluster cannot be written). New trees the caller deletes. */
cJSON *pod_spec_service(const struct job *j);
cJSON *pod_spec_secret(const struct job *j, const unsigned char *key, size_t key_len);
cJSON *pod_spec_network_policy(const struct job *j);
cJSON *pod_spec_tf_config_map(const struct job *j, char *err);
/* The ConfigMap of the CA the chief's reports trust (j->reporting). */
cJSON *pod_spec_status_ca_map(const struct job *j);

/* --- Pieces (shared by the builders above and by pod_view_parse) --- */

/* Metadata of an object the job owns: name, the job's namespace, the
 * labels LABEL_JOB_NAME and LABEL_MANAGED_BY, and an ownerReference to
 * the job (apiVersion training.mwj.io/v1, kind MultiWorkerJob, controller
 * and blockOwnerDeletion true). A new tree the caller deletes. */
cJSON *pod_spec_metadata(const struct job *j, const char *name);

/* Whether obj (any object) is owned by job j: its controller
 * ownerReference names a MultiWorkerJob of group training.mwj.io with j's
 * uid, and it lives in j's namespace. Only such an object is the job's:
 * anything else under the same name is never used. */
int pod_spec_owned(const cJSON *obj, const struct job *j);

/* The worker container of a containers array: the one named "worker",
 * else the first. Borrowed from containers; NULL when there is none. */
cJSON *pod_spec_worker_container(const cJSON *containers);

/* --- Reading back --- */

enum pod_phase { POD_PENDING, POD_RUNNING, POD_SUCCEEDED, POD_FAILED, POD_UNKNOWN };

/* What reconcile needs of one of the job's pods. Its phase is the worker
 * container's: the worker decides the pod's outcome, whatever other
 * containers do (DESIGN.md). */
struct pod_view {
	char name[JOB_NAME_LEN], uid[JOB_UID_LEN];
	int index;    /* from its label; -1 when missing or malformed */
	long attempt; /* from its annotation; -1 when missing */
	enum pod_phase phase;
	int ready;    /* condition Ready True */
	int deleting; /* deletionTimestamp set */
	/* Disrupted: condition DisruptionTarget True, or status.reason
	 * Evicted or Preempted (the kubelet's and the scheduler's marks). */
	int disrupted;
	char status_reason[JOB_REASON_LEN]; /* status.reason ("Evicted"), or "" */
	/* The worker container: exit code once terminated (-1 before), its
	 * terminated reason ("Error", "OOMKilled", "Completed"), and its waiting
	 * reason ("ErrImagePull", "CreateContainerConfigError", ...). */
	int exit_code;
	/* The worker container has ended while the pod still runs: another
	 * container (a sidecar: a log shipper, a mesh proxy) holds it. The
	 * worker decides, so phase is then Succeeded or Failed by its exit
	 * code, and the pod must be deleted for the sidecars to stop. */
	int held;
	char reason[JOB_REASON_LEN];
	char waiting_reason[JOB_REASON_LEN];
	char waiting_message[JOB_MESSAGE_LEN];
	long long created_s; /* creationTimestamp, Unix seconds; 0 unknown */
};

/* Reads a pod object of job j into p. Returns 0, or -1 with a message when
 * it has no name. */
int pod_view_parse(struct pod_view *p, const struct job *j, const cJSON *pod, char *err);

#endif
