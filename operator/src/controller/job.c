/* job.c - a MultiWorkerJob read into struct job: identity, the spec with
 * the CRD's defaults, and why the operator cannot honour it. The status is
 * job_status.c. */
#include "job.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "pod_spec.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The CRD's defaults (crds/training.mwj.io_multiworkerjobs.yaml). */
#define DEFAULT_PORT          2222
#define DEFAULT_METRICS_PORT  9100
#define DEFAULT_BACKOFF_LIMIT 6
#define DEFAULT_MOUNT_PATH    "/mwj/checkpoint"
#define BACKOFF_LIMIT_MAX     1000000
#define INT32_LIMIT           2147483647LL
#define EXACT_MAX             9007199254740992LL /* 2^53: what a JSON number holds */

static const char *const restart_policies[] = {"ExitCode", "OnFailure", "Never", "Always"};
static const char *const restart_scopes[] = {"Pod", "All"};
static const char *const clean_pod_policies[] = {"Running", "All", "None"};

/* Records why the spec cannot be honoured; the first reason found wins,
 * as it is the one a user fixes first. */
__attribute__((format(printf, 2, 3))) static void set_invalid(struct job *j, const char *fmt, ...)
{
	va_list ap;

	if (j->invalid[0] != '\0')
		return;
	va_start(ap, fmt);
	/* clang-tidy misreads ap when checking several files at once (llvm#40656).
	 * NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	if (vsnprintf(j->invalid, sizeof(j->invalid), fmt, ap) < 0)
		j->invalid[0] = '\0';
	va_end(ap);
}

/* Copies metadata.<name> into out (n bytes). required: missing is an
 * error; a value too long for out always is (the API never sends one). */
static int meta_string(const cJSON *meta, const char *name, int required, char *out, size_t n,
                       char *err)
{
	const char *s = NULL;

	if ((required ? json_get_string(meta, "metadata", name, &s, err)
	              : json_opt_string(meta, "metadata", name, &s, err)) < 0)
		return -1;
	if (s == NULL)
		return 0;
	if (required && s[0] == '\0')
		return err_set(err, "'metadata.%s' is empty", name);
	if (strlen(s) >= n)
		return err_set(err, "'metadata.%s' is longer than %zu characters", name, n - 1);
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

static int metadata_parse(struct job *j, const cJSON *obj, char *err)
{
	const cJSON *meta = NULL;
	int64_t generation = 0;

	if (json_get_object(obj, "", "metadata", &meta, err) < 0 ||
	    meta_string(meta, "name", 1, j->name, sizeof(j->name), err) < 0 ||
	    meta_string(meta, "uid", 1, j->uid, sizeof(j->uid), err) < 0 ||
	    meta_string(meta, "namespace", 0, j->ns, sizeof(j->ns), err) < 0)
		return -1;
	/* Every object the API returns has a namespace; a test's may not. */
	if (j->ns[0] == '\0')
		snprintf(j->ns, sizeof(j->ns), "default");
	if (json_opt_i64(meta, "metadata", "generation", 0, EXACT_MAX, &generation, err) < 0)
		return -1;
	j->generation = generation;
	j->deleting = cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp") != NULL &&
	              !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp"));
	return 0;
}

/* spec.<name> as an integer in [min, max] into *out, which keeps its
 * default when the field is absent or wrong. */
static void spec_int(struct job *j, const cJSON *spec, const char *name, int64_t min, int64_t max,
                     long long *out)
{
	char err[ERR_LEN];
	int64_t v = *out;

	if (json_opt_i64(spec, "spec", name, min, max, &v, err) < 0) {
		set_invalid(j, "%s", err);
		return;
	}
	*out = v;
}

/* spec.<name> as one of names into *out (an index), which keeps its
 * default when the field is absent or wrong. */
static void spec_enum(struct job *j, const cJSON *spec, const char *name, const char *const *names,
                      size_t n, int *out)
{
	char err[ERR_LEN], expected[128] = "";
	const char *s = NULL;
	size_t len = 0;

	if (json_opt_string(spec, "spec", name, &s, err) < 0) {
		set_invalid(j, "%s", err);
		return;
	}
	if (s == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (int)i;
			return;
		}
		len += (size_t)snprintf(expected + len, sizeof(expected) - len, "%s'%s'",
		                        i == 0       ? ""
		                        : i + 1 == n ? " or "
		                                     : ", ",
		                        names[i]);
	}
	set_invalid(j, "'spec.%s' is '%.64s': expected %s", name, s, expected);
}

/* spec.template: an object whose spec has at least one container, each an
 * object with a name. */
static void template_parse(struct job *j, const cJSON *spec)
{
	const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(spec, "template");
	const cJSON *pod = cJSON_GetObjectItemCaseSensitive(tmpl, "spec");
	const cJSON *containers = cJSON_GetObjectItemCaseSensitive(pod, "containers");
	const cJSON *c;
	int i = 0;

	if (!cJSON_IsObject(tmpl)) {
		set_invalid(j, "'spec.template' %s", tmpl ? "must be an object" : "is missing");
		return;
	}
	j->template = tmpl;
	if (!cJSON_IsObject(pod)) {
		set_invalid(j, "'spec.template.spec' %s", pod ? "must be an object" : "is missing");
		return;
	}
	if (!cJSON_IsArray(containers) || cJSON_GetArraySize(containers) == 0) {
		set_invalid(j, "'spec.template.spec.containers' %s: a worker needs a container",
		            containers == NULL           ? "is missing"
		            : !cJSON_IsArray(containers) ? "must be an array"
		                                         : "is empty");
		return;
	}
	cJSON_ArrayForEach(c, containers)
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");

		if (!cJSON_IsString(name) || name->valuestring[0] == '\0') {
			set_invalid(j, "'spec.template.spec.containers[%d]' has no name", i);
			return;
		}
		i++;
	}
}

/* spec.checkpoint: a volume source with exactly one member, and where to
 * mount it. */
static void checkpoint_parse(struct job *j, const cJSON *spec)
{
	const cJSON *cp = cJSON_GetObjectItemCaseSensitive(spec, "checkpoint");
	const cJSON *vol = cJSON_GetObjectItemCaseSensitive(cp, "volume");
	const cJSON *mount = cJSON_GetObjectItemCaseSensitive(cp, "mountPath");

	if (cp == NULL || cJSON_IsNull(cp))
		return;
	if (!cJSON_IsObject(cp)) {
		set_invalid(j, "'spec.checkpoint' must be an object");
		return;
	}
	if (!cJSON_IsObject(vol) || cJSON_GetArraySize(vol) != 1) {
		set_invalid(j, "'spec.checkpoint.volume' must be a volume source with exactly one "
		               "member (persistentVolumeClaim, nfs, hostPath, ...)");
		return;
	}
	j->checkpoint_volume = vol;
	if (mount == NULL || cJSON_IsNull(mount))
		return;
	if (!cJSON_IsString(mount) || mount->valuestring[0] != '/') {
		set_invalid(j, "'spec.checkpoint.mountPath' must be an absolute path");
		return;
	}
	if (strlen(mount->valuestring) >= sizeof(j->checkpoint_mount)) {
		set_invalid(j, "'spec.checkpoint.mountPath' is longer than %zu characters",
		            sizeof(j->checkpoint_mount) - 1);
		return;
	}
	snprintf(j->checkpoint_mount, sizeof(j->checkpoint_mount), "%s", mount->valuestring);
}

static void spec_parse(struct job *j, const cJSON *spec)
{
	long long workers = 1, port = DEFAULT_PORT, backoff = DEFAULT_BACKOFF_LIMIT;
	long long metrics_port = DEFAULT_METRICS_PORT;
	int policy = RESTART_EXIT_CODE, scope = SCOPE_POD, clean = CLEAN_RUNNING;
	const cJSON *suspend_item = cJSON_GetObjectItemCaseSensitive(spec, "suspend");
	int suspend = 0;

	if (!cJSON_IsObject(spec)) {
		set_invalid(j, "'spec' %s", spec ? "must be an object" : "is missing");
		return;
	}
	if (cJSON_GetObjectItemCaseSensitive(spec, "workers") == NULL)
		set_invalid(j, "'spec.workers' is missing");
	spec_int(j, spec, "workers", 1, JOB_WORKERS_MAX, &workers);
	spec_int(j, spec, "port", 1, 65535, &port);
	spec_int(j, spec, "metricsPort", 0, 65535, &metrics_port);
	if (metrics_port == port)
		set_invalid(
		    j,
		    "'spec.metricsPort' %lld is the ring's 'spec.port': give one of them another "
		    "port (metricsPort 0 serves no metrics)",
		    metrics_port);
	spec_enum(j, spec, "restartPolicy", restart_policies, ARRAY_LEN(restart_policies), &policy);
	spec_enum(j, spec, "restartScope", restart_scopes, ARRAY_LEN(restart_scopes), &scope);
	spec_int(j, spec, "backoffLimit", 0, BACKOFF_LIMIT_MAX, &backoff);
	spec_int(j, spec, "activeDeadlineSeconds", 1, EXACT_MAX, &j->active_deadline_s);
	spec_int(j, spec, "ttlSecondsAfterFinished", 0, INT32_LIMIT, &j->ttl_after_finished_s);
	spec_enum(j, spec, "cleanPodPolicy", clean_pod_policies, ARRAY_LEN(clean_pod_policies),
	          &clean);
	if (cJSON_IsBool(suspend_item))
		suspend = cJSON_IsTrue(suspend_item);
	else if (suspend_item != NULL && !cJSON_IsNull(suspend_item))
		set_invalid(j, "'spec.suspend' must be a boolean");
	j->workers = (int)workers;
	j->port = (int)port;
	j->metrics_port = (int)metrics_port;
	j->restart_policy = (enum restart_policy)policy;
	j->restart_scope = (enum restart_scope)scope;
	j->clean_pod_policy = (enum clean_pod_policy)clean;
	j->backoff_limit = (int)backoff;
	j->suspend = suspend;
	template_parse(j, spec);
	checkpoint_parse(j, spec);
}

/* A job that has started keeps its number of workers: the status has an
 * attempt for each (workerAttempts), and every pod's TF_CONFIG names that
 * many. spec.workers is immutable (the CRD's rule); on a server too old
 * to enforce it, an edited count is reported (reconcile) and not used. */
static void workers_started(struct job *j, const cJSON *status)
{
	const cJSON *attempts = cJSON_GetObjectItemCaseSensitive(status, "workerAttempts");
	int n = cJSON_IsArray(attempts) ? cJSON_GetArraySize(attempts) : 0;

	if (n >= 1 && n <= JOB_WORKERS_MAX && n != j->workers)
		j->workers = n;
}

/* Operators of release 0.1 named the ring key "<job>-ring-key" and did not
 * record it: a job they started, whose status has attempts but no
 * Secret, goes on with that key, or its new pods could not join the ring
 * of its running ones. */
static void legacy_ring_key(struct job *j)
{
	struct job_status *st = &j->status;
	int started = 0;

	for (int i = 0; i < st->nworkers; i++)
		started |= st->attempts[i] >= 0 || st->sent[i] >= 0;
	if (started && st->ring_key_secret[0] == '\0')
		snprintf(st->ring_key_secret, sizeof(st->ring_key_secret), "%.*s-ring-key",
		         (int)sizeof(st->ring_key_secret) - 10, j->name);
}

int job_parse(struct job *j, const cJSON *obj, char *err)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");

	memset(j, 0, sizeof(*j));
	j->workers = 1;
	j->port = DEFAULT_PORT;
	j->metrics_port = DEFAULT_METRICS_PORT;
	j->backoff_limit = DEFAULT_BACKOFF_LIMIT;
	j->active_deadline_s = -1;
	j->ttl_after_finished_s = -1;
	snprintf(j->checkpoint_mount, sizeof(j->checkpoint_mount), "%s", DEFAULT_MOUNT_PATH);
	if (!cJSON_IsObject(obj) || metadata_parse(j, obj, err) < 0) {
		if (!cJSON_IsObject(obj))
			err_set(err, "a MultiWorkerJob must be an object");
		err_prefix(err, "MultiWorkerJob");
		memset(j, 0, sizeof(*j));
		return -1;
	}
	spec_parse(j, spec);
	j->workers_spec = j->workers;
	workers_started(j, cJSON_GetObjectItemCaseSensitive(obj, "status"));
	/* Names and mounts are checked only for a spec otherwise good: the
	 * worker count they depend on may be the wrong one. */
	if (j->invalid[0] == '\0')
		pod_spec_check_names(j, j->invalid);
	if (j->invalid[0] == '\0')
		pod_spec_check_mounts(j, j->invalid);
	job_status_parse(&j->status, cJSON_GetObjectItemCaseSensitive(obj, "status"), j->workers);
	legacy_ring_key(j);
	return 0;
}

void job_release(struct job *j)
{
	if (j == NULL)
		return;
	job_status_release(&j->status);
}

const char *job_phase_name(enum job_phase p)
{
	static const char *const names[] = {"",          "Pending", "Running",  "Restarting",
	                                    "Succeeded", "Failed",  "Suspended"};

	if ((size_t)p >= ARRAY_LEN(names))
		return "";
	return names[p];
}

void job_key(const struct job *j, char *out, size_t n)
{
	if (n == 0)
		return;
	snprintf(out, n, "%s/%s", j->ns, j->name);
}
