/* pod_view.c - what reconcile needs of a worker pod, read from the pod
 * object (pod_spec.h). Everything here comes from the API and, through
 * labels and annotations, from whoever can edit the pod: every field is
 * type- and length-checked, and a wrong one reads as unknown. */
#include "pod_spec.h"

#include <string.h>

#include "json_in.h"
#include "parse.h"
#include "timefmt.h"

/* Whether obj.name is present and not null (deletionTimestamp). */
static int is_set(const cJSON *obj, const char *name)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

	return it != NULL && !cJSON_IsNull(it);
}

/* status.<name> when it is an array, else NULL (which iterates as empty). */
static const cJSON *array_or_null(const cJSON *status, const char *name)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(status, name);

	return cJSON_IsArray(it) ? it : NULL;
}

/* Whether the pod has condition type with status "True". */
static int condition_true(const cJSON *status, const char *type)
{
	const cJSON *list = array_or_null(status, "conditions");
	const cJSON *it;

	cJSON_ArrayForEach(it, list)
	{
		const char *t = json_in_str(it, "type");
		const char *s = json_in_str(it, "status");

		if (t != NULL && s != NULL && strcmp(t, type) == 0)
			return strcmp(s, "True") == 0;
	}
	return 0;
}

static enum pod_phase phase_parse(const char *s)
{
	static const char *const names[] = {"Pending", "Running", "Succeeded", "Failed", "Unknown"};

	/* A pod just created has no status yet: it is pending. */
	if (s == NULL)
		return POD_PENDING;
	for (int i = 0; i <= POD_UNKNOWN; i++) {
		if (strcmp(s, names[i]) == 0)
			return (enum pod_phase)i;
	}
	return POD_UNKNOWN;
}

/* The name of the pod's worker container: the one named "worker", else
 * the first, of the pod's own spec (the template may have changed since). */
static const char *worker_name(const cJSON *pod, const struct job *j)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
	const cJSON *containers = cJSON_GetObjectItemCaseSensitive(spec, "containers");

	if (!cJSON_IsArray(containers) && j != NULL) {
		spec = cJSON_GetObjectItemCaseSensitive(j->template, "spec");
		containers = cJSON_GetObjectItemCaseSensitive(spec, "containers");
	}
	return json_in_str(pod_spec_worker_container(containers), "name");
}

/* The worker container's state: terminated exit code and reason, or its
 * waiting reason and message. Returns whether it has terminated. */
static int container_parse(struct pod_view *p, const cJSON *status, const char *worker)
{
	const cJSON *list = array_or_null(status, "containerStatuses");
	const cJSON *it;

	cJSON_ArrayForEach(it, list)
	{
		const char *name = json_in_str(it, "name");
		const cJSON *state = cJSON_GetObjectItemCaseSensitive(it, "state");
		const cJSON *term = cJSON_GetObjectItemCaseSensitive(state, "terminated");
		const cJSON *wait = cJSON_GetObjectItemCaseSensitive(state, "waiting");
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(term, "exitCode");

		if (name == NULL || worker == NULL || strcmp(name, worker) != 0)
			continue;
		/* An int32 in the API; -1 is kept for "not terminated". */
		if (cJSON_IsNumber(code) && code->valuedouble >= 0 &&
		    code->valuedouble <= 2147483647.0 &&
		    code->valuedouble == (int)code->valuedouble)
			p->exit_code = (int)code->valuedouble;
		if (cJSON_IsObject(term))
			json_in_copy_cut(p->reason, sizeof(p->reason), json_in_str(term, "reason"));
		if (cJSON_IsObject(wait)) {
			json_in_copy_cut(p->waiting_reason, sizeof(p->waiting_reason),
			                 json_in_str(wait, "reason"));
			json_in_copy_cut(p->waiting_message, sizeof(p->waiting_message),
			                 json_in_str(wait, "message"));
		}
		return cJSON_IsObject(term);
	}
	return 0;
}

/* The index label and attempt annotation: -1 when missing or malformed. */
static void identity_parse(struct pod_view *p, const cJSON *meta)
{
	const char *index =
	    json_in_str(cJSON_GetObjectItemCaseSensitive(meta, "labels"), LABEL_INDEX);
	const char *attempt =
	    json_in_str(cJSON_GetObjectItemCaseSensitive(meta, "annotations"), ANNOTATION_ATTEMPT);
	char ignored[ERR_LEN];
	int64_t a = -1;
	int i = -1;

	/* parse_* would take a sign or blanks; the operator writes digits. */
	if (index == NULL || index[0] < '0' || index[0] > '9' ||
	    parse_int(index, 0, JOB_WORKERS_MAX - 1, &i, ignored) < 0)
		i = -1;
	if (attempt == NULL || attempt[0] < '0' || attempt[0] > '9' ||
	    parse_i64(attempt, 0, 1000000000000000LL, &a, ignored) < 0)
		a = -1;
	p->index = i;
	p->attempt = (long)a;
}

int pod_view_parse(struct pod_view *p, const struct job *j, const cJSON *pod, char *err)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(pod, "status");
	const char *name = json_in_str(meta, "name");
	long long created = 0;

	memset(p, 0, sizeof(*p));
	p->index = -1;
	p->attempt = -1;
	p->exit_code = -1;
	if (name == NULL || name[0] == '\0')
		return err_set(err, "pod without a name");
	if (strlen(name) >= sizeof(p->name))
		return err_set(err, "pod name '%.64s...' is longer than %zu characters", name,
		               sizeof(p->name) - 1);
	json_in_copy_cut(p->name, sizeof(p->name), name);
	if (json_in_str(meta, "uid") != NULL && strlen(json_in_str(meta, "uid")) < sizeof(p->uid))
		json_in_copy_cut(p->uid, sizeof(p->uid), json_in_str(meta, "uid"));
	identity_parse(p, meta);
	p->deleting = is_set(meta, "deletionTimestamp");
	if (timefmt_parse(json_in_str(meta, "creationTimestamp"), &created) == 0)
		p->created_s = created;
	p->phase = phase_parse(json_in_str(status, "phase"));
	p->ready = condition_true(status, "Ready");
	json_in_copy_cut(p->status_reason, sizeof(p->status_reason), json_in_str(status, "reason"));
	p->disrupted = condition_true(status, "DisruptionTarget") ||
	               strcmp(p->status_reason, "Evicted") == 0 ||
	               strcmp(p->status_reason, "Preempted") == 0;
	if (container_parse(p, status, worker_name(pod, j)) &&
	    (p->phase == POD_PENDING || p->phase == POD_RUNNING)) {
		/* Ended beside a container that still runs. An exit code that
		 * is not known reads as a failure, as for any pod. */
		p->phase = p->exit_code == 0 ? POD_SUCCEEDED : POD_FAILED;
		p->held = 1;
		p->ready = 0;
	}
	return 0;
}
