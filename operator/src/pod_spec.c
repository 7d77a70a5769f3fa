/* pod_spec.c - the names a job gives its objects, and its worker pods.
 * The Service, Secret and NetworkPolicy are pod_objects.c; reading pods
 * back is pod_view.c. */
#include "pod_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "tf_config.h"

#define LABEL_MAX     63  /* an RFC 1123 / DNS-1035 label */
#define SUBDOMAIN_MAX 253 /* an RFC 1123 subdomain */
#define POD_INFIX     "-worker-"

/* The operator's own volumes; a user's of the same name gives way. */
#define VOLUME_CHECKPOINT "mwj-checkpoint"
#define VOLUME_RING_KEY   "mwj-ring-key"

/* A TF_CONFIG address: "<pod>.<job>.<ns>.svc:<port>". */
#define ADDRESS_LEN (3 * JOB_NAME_LEN + 16)

/* --- Names --- */

static int is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* Whether the len bytes at s are an RFC 1123 label (DNS-1035 when
 * letter_first: a Service name must start with a letter). */
static int is_label(const char *s, size_t len, int letter_first)
{
	if (len == 0 || len > LABEL_MAX || !is_lower_alnum(s[0]) || !is_lower_alnum(s[len - 1]))
		return 0;
	if (letter_first && !(s[0] >= 'a' && s[0] <= 'z'))
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return 0;
	}
	return 1;
}

/* Whether s is an RFC 1123 subdomain: labels joined by dots, 253 at most. */
static int is_subdomain(const char *s)
{
	size_t len = strlen(s);
	const char *label = s;

	if (len == 0 || len > SUBDOMAIN_MAX)
		return 0;
	for (const char *p = s;; p++) {
		if (*p == '.' || *p == '\0') {
			if (!is_label(label, (size_t)(p - label), 0))
				return 0;
			if (*p == '\0')
				return 1;
			label = p + 1;
		}
	}
}

/* Decimal digits of n >= 0. */
static int digit_count(int n)
{
	int d = 1;

	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

int pod_spec_check_names(const struct job *j, char *why)
{
	int workers = j->workers > 0 ? j->workers : 1;
	size_t len = strlen(j->name);
	/* The longest pod name, "<job>-worker-<workers - 1>", is the pod's
	 * hostname too, so it must be a label, not only a subdomain. */
	size_t max = LABEL_MAX - strlen(POD_INFIX) - (size_t)digit_count(workers - 1);
	char name[JOB_NAME_LEN + 32];

	if (len == 0)
		return err_set(why, "job name is empty");
	if (len > max)
		return err_set(why,
		               "job name '%s' is too long (%zu characters): a worker's pod name "
		               "'<job>" POD_INFIX "<index>' is its hostname, which can have at "
		               "most %d characters, so with %d worker%s the job name can have at "
		               "most %zu",
		               j->name, len, LABEL_MAX, workers, workers == 1 ? "" : "s", max);
	if (!is_label(j->name, len, 1))
		return err_set(why,
		               "job name '%s' cannot name the job's Service: it must consist of "
		               "lower-case letters, digits and '-', start with a letter and end "
		               "with a letter or digit (a DNS-1035 label)",
		               j->name);
	/* What follows holds for any name that passed the above; it is
	 * checked all the same, the day a limit or a suffix changes. */
	snprintf(name, sizeof(name), "%s" POD_INFIX "%d", j->name, workers - 1);
	if (!is_subdomain(name) || !is_label(name, strlen(name), 0))
		return err_set(why, "pod name '%s' is not a valid hostname", name);
	snprintf(name, sizeof(name), "%s-ring-key", j->name);
	if (!is_subdomain(name))
		return err_set(why, "Secret name '%s' is not a valid name", name);
	snprintf(name, sizeof(name), "%s-ring", j->name);
	if (!is_subdomain(name))
		return err_set(why, "NetworkPolicy name '%s' is not a valid name", name);
	return 0;
}

void pod_spec_pod_name(const struct job *j, int index, char *out)
{
	char name[JOB_NAME_LEN + 32];

	/* Through a buffer big enough for any name: a name too long for out
	 * (which pod_spec_check_names refuses) is cut, never overflowed. */
	snprintf(name, sizeof(name), "%s" POD_INFIX "%d", j->name, index);
	snprintf(out, JOB_NAME_LEN, "%.*s", JOB_NAME_LEN - 1, name);
}

/* --- Pieces every object shares --- */

cJSON *pod_spec_metadata(const struct job *j, const char *name)
{
	cJSON *meta = json_out_new();
	cJSON *labels, *owner;

	json_out_str(meta, "name", name);
	json_out_str(meta, "namespace", j->ns);
	labels = json_out_obj(meta, "labels");
	json_out_str(labels, LABEL_JOB_NAME, j->name);
	json_out_str(labels, LABEL_MANAGED_BY, MANAGED_BY);
	owner = json_out_item(json_out_arr(meta, "ownerReferences"), NULL, json_out_new());
	json_out_str(owner, "apiVersion", "training.mwj.io/v1");
	json_out_str(owner, "kind", "MultiWorkerJob");
	json_out_str(owner, "name", j->name);
	json_out_str(owner, "uid", j->uid);
	json_out_bool(owner, "controller", 1);
	json_out_bool(owner, "blockOwnerDeletion", 1);
	return meta;
}

/* --- The worker pod --- */

const char *pod_spec_restart_policy_overridden(const struct job *j)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(j->template, "spec");
	const cJSON *policy = cJSON_GetObjectItemCaseSensitive(spec, "restartPolicy");

	if (!cJSON_IsString(policy) || strcmp(policy->valuestring, "Never") == 0)
		return NULL;
	return policy->valuestring;
}

cJSON *pod_spec_worker_container(const cJSON *containers)
{
	cJSON *c;

	if (!cJSON_IsArray(containers))
		return NULL;
	cJSON_ArrayForEach(c, containers)
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");

		if (cJSON_IsString(name) && strcmp(name->valuestring, "worker") == 0)
			return c;
	}
	return containers->child;
}

/* Copies the members of src (an object, or anything else for none) into
 * dst, except those dst has already: the operator's own win. */
static void merge_missing(cJSON *dst, const cJSON *src)
{
	const cJSON *it;

	if (!cJSON_IsObject(src))
		return;
	cJSON_ArrayForEach(it, src)
	{
		if (cJSON_GetObjectItemCaseSensitive(dst, it->string) == NULL)
			json_out_copy(dst, it->string, it);
	}
}

static cJSON *pod_metadata(const struct job *j, const char *name, int index, long attempt)
{
	const cJSON *tmeta = cJSON_GetObjectItemCaseSensitive(j->template, "metadata");
	cJSON *meta = pod_spec_metadata(j, name);
	cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
	cJSON *annotations;
	char num[24];

	snprintf(num, sizeof(num), "%d", index);
	json_out_str(labels, LABEL_INDEX, num);
	merge_missing(labels, cJSON_GetObjectItemCaseSensitive(tmeta, "labels"));
	annotations = json_out_obj(meta, "annotations");
	snprintf(num, sizeof(num), "%ld", attempt);
	json_out_str(annotations, ANNOTATION_ATTEMPT, num);
	merge_missing(annotations, cJSON_GetObjectItemCaseSensitive(tmeta, "annotations"));
	return meta;
}

/* obj.key as an array: the existing one, or a new empty one (replacing
 * anything else there, which the API would refuse anyway). */
static cJSON *array_member(cJSON *obj, const char *key)
{
	cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsArray(a))
		return a;
	return json_out_set(obj, key, json_out_new_array());
}

/* Removes from the array list every object whose member key is the string
 * value: a user's entry the operator's replaces. */
static void remove_named(cJSON *list, const char *key, const char *value)
{
	cJSON *it = list != NULL ? list->child : NULL;

	while (it != NULL) {
		cJSON *next = it->next;
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, key);

		if (cJSON_IsString(v) && strcmp(v->valuestring, value) == 0)
			cJSON_Delete(cJSON_DetachItemViaPointer(list, it));
		it = next;
	}
}

static void add_env(cJSON *env, const char *name, const char *value)
{
	cJSON *e = json_out_item(env, NULL, json_out_new());

	json_out_str(e, "name", name);
	json_out_str(e, "value", value);
}

/* TF_CONFIG for worker index. A new string the caller frees, or NULL. */
static char *tf_config_text(const struct job *j, int index, char *err)
{
	char(*addrs)[ADDRESS_LEN] = xcalloc((size_t)j->workers, sizeof(*addrs));
	const char **list = xcalloc((size_t)j->workers, sizeof(*list));
	char pod[JOB_NAME_LEN];
	char *text;

	for (int i = 0; i < j->workers; i++) {
		pod_spec_pod_name(j, i, pod);
		snprintf(addrs[i], ADDRESS_LEN, "%s.%s.%s.svc:%d", pod, j->name, j->ns, j->port);
		list[i] = addrs[i];
	}
	text = tf_config_format(list, j->workers, index, err);
	free(list);
	free(addrs);
	return text;
}

/* MWJ_BACKUP_DIR: <mountPath>/<namespace>/<job>, so that jobs sharing a
 * volume never share backups. */
static void backup_dir(const struct job *j, char *out, size_t n)
{
	size_t len = strlen(j->checkpoint_mount);

	while (len > 1 && j->checkpoint_mount[len - 1] == '/')
		len--;
	if (len == 1)
		len = 0; /* mountPath "/" */
	snprintf(out, n, "%.*s/%s/%s", (int)len, j->checkpoint_mount, j->ns, j->name);
}

/* The operator's env first, so that the user's own entries can refer to
 * them as $(MWJ_WORKER_INDEX); a user's entry of the same name is dropped. */
static int worker_env(cJSON *container, const struct job *j, int index, long attempt, char *err)
{
	char dir[JOB_PATH_LEN + 2 * JOB_NAME_LEN + 4], num[24];
	cJSON *user = cJSON_GetObjectItemCaseSensitive(container, "env");
	char *tf = tf_config_text(j, index, err);
	cJSON *env, *it;

	if (tf == NULL)
		return -1;
	env = json_out_new_array();
	add_env(env, "TF_CONFIG", tf);
	free(tf);
	add_env(env, "MWJ_JOB_NAME", j->name);
	snprintf(num, sizeof(num), "%d", j->workers);
	add_env(env, "MWJ_NUM_WORKERS", num);
	snprintf(num, sizeof(num), "%d", index);
	add_env(env, "MWJ_WORKER_INDEX", num);
	snprintf(num, sizeof(num), "%ld", attempt);
	add_env(env, "MWJ_RESTART_ATTEMPT", num);
	if (j->checkpoint_volume != NULL) {
		backup_dir(j, dir, sizeof(dir));
		add_env(env, "MWJ_BACKUP_DIR", dir);
	}
	add_env(env, "MWJ_JOB_SECRET_FILE", SECRET_MOUNT_DIR "/key");
	if (cJSON_IsArray(user)) {
		cJSON_ArrayForEach(it, env)
		{
			remove_named(user, "name",
			             cJSON_GetObjectItemCaseSensitive(it, "name")->valuestring);
		}
		while (user->child != NULL)
			json_out_item(env, NULL, cJSON_DetachItemViaPointer(user, user->child));
	}
	json_out_set(container, "env", env);
	return 0;
}

/* Adds volume name (with the members of source, a volume source) and its
 * mount at path in the worker container, replacing a user's volume or
 * mount of that name and a user's mount at that path. */
static void add_volume(cJSON *volumes, cJSON *mounts, const char *name, const cJSON *source,
                       const char *path, int read_only)
{
	cJSON *v, *m;
	const cJSON *it;

	remove_named(volumes, "name", name);
	remove_named(mounts, "name", name);
	remove_named(mounts, "mountPath", path);
	v = json_out_item(volumes, NULL, json_out_new());
	json_out_str(v, "name", name);
	cJSON_ArrayForEach(it, source)
	{
		json_out_copy(v, it->string, it);
	}
	m = json_out_item(mounts, NULL, json_out_new());
	json_out_str(m, "name", name);
	json_out_str(m, "mountPath", path);
	if (read_only)
		json_out_bool(m, "readOnly", 1);
}

static void worker_volumes(cJSON *spec, cJSON *container, const struct job *j)
{
	cJSON *volumes = array_member(spec, "volumes");
	cJSON *mounts = array_member(container, "volumeMounts");
	char secret[JOB_NAME_LEN + 16];
	cJSON *source = json_out_new();

	snprintf(secret, sizeof(secret), "%s-ring-key", j->name);
	json_out_str(json_out_obj(source, "secret"), "secretName", secret);
	add_volume(volumes, mounts, VOLUME_RING_KEY, source, SECRET_MOUNT_DIR, 1);
	cJSON_Delete(source);
	if (j->checkpoint_volume != NULL)
		add_volume(volumes, mounts, VOLUME_CHECKPOINT, j->checkpoint_volume,
		           j->checkpoint_mount, 0);
}

/* The ring port: a user's declaration of it (same number, TCP) is kept;
 * else it is added, named "ring" unless the user gave that name away. */
static void worker_port(cJSON *container, int port)
{
	cJSON *ports = array_member(container, "ports");
	const cJSON *it;
	cJSON *p;
	int named = 0;

	cJSON_ArrayForEach(it, ports)
	{
		const cJSON *number = cJSON_GetObjectItemCaseSensitive(it, "containerPort");
		const cJSON *protocol = cJSON_GetObjectItemCaseSensitive(it, "protocol");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");

		if (cJSON_IsNumber(number) && number->valuedouble == port &&
		    (protocol == NULL ||
		     (cJSON_IsString(protocol) && strcmp(protocol->valuestring, "TCP") == 0)))
			return;
		named |= cJSON_IsString(name) && strcmp(name->valuestring, "ring") == 0;
	}
	p = json_out_item(ports, NULL, json_out_new());
	if (!named)
		json_out_str(p, "name", "ring");
	json_out_num(p, "containerPort", port);
	json_out_str(p, "protocol", "TCP");
}

cJSON *pod_spec_pod(const struct job *j, int index, long attempt, char *err)
{
	const cJSON *tspec = cJSON_GetObjectItemCaseSensitive(j->template, "spec");
	const cJSON *first =
	    pod_spec_worker_container(cJSON_GetObjectItemCaseSensitive(tspec, "containers"));
	char name[JOB_NAME_LEN];
	cJSON *pod, *spec, *container;

	if (!cJSON_IsObject(first)) {
		err_set(err, "job '%s/%s': the pod template has no containers", j->ns, j->name);
		return NULL;
	}
	if (index < 0 || index >= j->workers) {
		err_set(err, "job '%s/%s': worker index %d is out of range [0, %d]", j->ns, j->name,
		        index, j->workers - 1);
		return NULL;
	}
	pod_spec_pod_name(j, index, name);
	pod = json_out_new();
	json_out_str(pod, "apiVersion", "v1");
	json_out_str(pod, "kind", "Pod");
	json_out_item(pod, "metadata", pod_metadata(j, name, index, attempt));
	spec = json_out_copy(pod, "spec", tspec);
	json_out_set(spec, "restartPolicy", cJSON_CreateString("Never"));
	json_out_set(spec, "hostname", cJSON_CreateString(name));
	json_out_set(spec, "subdomain", cJSON_CreateString(j->name));
	container = pod_spec_worker_container(cJSON_GetObjectItemCaseSensitive(spec, "containers"));
	if (worker_env(container, j, index, attempt, err) < 0) {
		err_prefix(err, "job '%s/%s'", j->ns, j->name);
		cJSON_Delete(pod);
		return NULL;
	}
	worker_volumes(spec, container, j);
	worker_port(container, j->port);
	return pod;
}
