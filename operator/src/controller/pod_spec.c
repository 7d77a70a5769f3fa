/* pod_spec.c - the names a job gives its objects, and its worker pods.
 * The Service, Secret and NetworkPolicy are pod_objects.c; reading pods
 * back is pod_view.c. */
#include "pod_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "json_out.h"
#include "tf_config.h"

#define LABEL_MAX     63  /* an RFC 1123 / DNS-1035 label */
#define SUBDOMAIN_MAX 253 /* an RFC 1123 subdomain */
/* What the API server keeps of a generateName (63 less its 5 characters). */
#define GENERATE_NAME_MAX 58
#define POD_INFIX         "-worker-"

/* The operator's own volumes; a user's of the same name gives way. */
#define VOLUME_CHECKPOINT "mwj-checkpoint"
#define VOLUME_RING_KEY   "mwj-ring-key"
#define VOLUME_TF_CONFIG  "mwj-tf-config"
#define VOLUME_STATUS     "mwj-status"

/* A TF_CONFIG address: "<pod>.<job>.<ns>.svc:<port>". */
#define ADDRESS_LEN (3 * JOB_NAME_LEN + 16)

/* --- Names --- */

static int is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* Whether the len bytes at s are an RFC 1123 label (DNS-1035 when
 * letter_first: a Service name must start with a letter) of at most max
 * characters. */
static int is_label_max(const char *s, size_t len, int letter_first, size_t max)
{
	if (len == 0 || len > max || !is_lower_alnum(s[0]) || !is_lower_alnum(s[len - 1]))
		return 0;
	if (letter_first && !(s[0] >= 'a' && s[0] <= 'z'))
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return 0;
	}
	return 1;
}

static int is_label(const char *s, size_t len, int letter_first)
{
	return is_label_max(s, len, letter_first, LABEL_MAX);
}

/* Whether s is an RFC 1123 subdomain as Kubernetes checks one
 * (IsDNS1123Subdomain): labels joined by dots, 253 characters at most in
 * all (a label itself is not held to 63). */
static int is_subdomain(const char *s)
{
	size_t len = strlen(s);
	const char *label = s;

	if (len == 0 || len > SUBDOMAIN_MAX)
		return 0;
	for (const char *p = s;; p++) {
		if (*p == '.' || *p == '\0') {
			if (!is_label_max(label, (size_t)(p - label), 0, SUBDOMAIN_MAX))
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
	for (int k = 0; k < JOB_OBJECTS; k++) {
		pod_spec_object_name(j, (enum job_object)k, name);
		/* The API server cuts a generateName to 58 characters and ends
		 * it with five of its own, such as these (SimpleNameGenerator). */
		if (k == OBJ_SECRET || k == OBJ_CONFIG_MAP || k == OBJ_STATUS_CA) {
			name[strnlen(name, GENERATE_NAME_MAX)] = '\0';
			strcat(name, "x7k2q");
		}
		if (!is_subdomain(name))
			return err_set(why, "%s name '%s' is not a valid name",
			               pod_spec_object_kind((enum job_object)k), name);
	}
	return 0;
}

void pod_spec_object_name(const struct job *j, enum job_object what, char *out)
{
	static const char *const suffixes[] = {"-ring-key-", "-tf-config-", "", "-ring",
	                                       "-status-ca-"};
	char name[JOB_NAME_LEN + 32];

	snprintf(name, sizeof(name), "%s%s", j->name,
	         (unsigned)what < JOB_OBJECTS ? suffixes[what] : "");
	snprintf(out, JOB_NAME_LEN, "%.*s", JOB_NAME_LEN - 1, name);
}

const char *pod_spec_object_kind(enum job_object what)
{
	static const char *const kinds[] = {"Secret", "ConfigMap", "Service", "NetworkPolicy",
	                                    "ConfigMap"};

	return (unsigned)what < JOB_OBJECTS ? kinds[what] : "?";
}

/* Whether path is dir or lies inside it ("/a/b" in "/a"; "/ab" is not
 * in "/a"); trailing slashes do not count. */
static int path_within(const char *path, const char *dir)
{
	size_t plen = strlen(path), dlen = strlen(dir);

	while (plen > 1 && path[plen - 1] == '/')
		plen--;
	while (dlen > 1 && dir[dlen - 1] == '/')
		dlen--;
	if (dlen == 1)
		return 1; /* everything lies inside "/" */
	return plen >= dlen && strncmp(path, dir, dlen) == 0 && (plen == dlen || path[dlen] == '/');
}

int pod_spec_check_mounts(const struct job *j, char *why)
{
	static const char *const own[][2] = {{SECRET_MOUNT_DIR, "the ring key"},
	                                     {TF_CONFIG_MOUNT_DIR, "the TF_CONFIG file"},
	                                     {STATUS_MOUNT_DIR, "the status reports' token"}};
	const char *mount = j->checkpoint_mount;

	if (j->checkpoint_volume == NULL)
		return 0;
	for (size_t k = 0; k < sizeof(own) / sizeof(own[0]); k++) {
		if (path_within(mount, own[k][0]) || path_within(own[k][0], mount))
			return err_set(
			    why,
			    "'spec.checkpoint.mountPath' '%.256s' collides with %s, which "
			    "the operator mounts at %s in every worker: choose another "
			    "folder, such as /mwj/checkpoint",
			    mount, own[k][1], own[k][0]);
	}
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

	if (name != NULL)
		json_out_str(meta, "name", name);
	json_out_str(meta, "namespace", j->ns);
	labels = json_out_obj(meta, "labels");
	json_out_str(labels, LABEL_JOB_NAME, j->name);
	json_out_str(labels, LABEL_MANAGED_BY, MANAGED_BY);
	owner = json_out_item(json_out_arr(meta, "ownerReferences"), NULL, json_out_new());
	json_out_str(owner, "apiVersion", JOB_API_VERSION);
	json_out_str(owner, "kind", JOB_KIND);
	json_out_str(owner, "name", j->name);
	json_out_str(owner, "uid", j->uid);
	json_out_bool(owner, "controller", 1);
	json_out_bool(owner, "blockOwnerDeletion", 1);
	return meta;
}

/* A string member of obj, or NULL. */
static const char *str_member(const cJSON *obj, const char *name)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsString(s) ? s->valuestring : NULL;
}

int pod_spec_owned(const cJSON *obj, const struct job *j)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const char *ns = str_member(meta, "namespace");
	const cJSON *ref;

	if (ns == NULL || strcmp(ns, j->ns) != 0)
		return 0;
	cJSON_ArrayForEach(ref, cJSON_GetObjectItemCaseSensitive(meta, "ownerReferences"))
	{
		const char *kind = str_member(ref, "kind"), *api = str_member(ref, "apiVersion");
		const char *uid = str_member(ref, "uid");

		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ref, "controller")))
			return kind && strcmp(kind, JOB_KIND) == 0 && api &&
			       strncmp(api, JOB_GROUP "/", strlen(JOB_GROUP "/")) == 0 && uid &&
			       strcmp(uid, j->uid) == 0;
	}
	return 0;
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
	if (j->metrics_port > 0) {
		/* The scrape annotations most Prometheus setups follow; a
		 * template's own win. */
		cJSON *scrape = json_out_new();

		snprintf(num, sizeof(num), "%d", j->metrics_port);
		json_out_str(scrape, "prometheus.io/scrape", "true");
		json_out_str(scrape, "prometheus.io/port", num);
		json_out_str(scrape, "prometheus.io/path", "/metrics");
		merge_missing(annotations, scrape);
		cJSON_Delete(scrape);
	}
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

/* Every worker's address, "<pod>.<job>.<ns>.svc:<port>": an array of
 * j->workers strings in one allocation, which the caller frees. */
static char **addresses(const struct job *j)
{
	size_t n = (size_t)j->workers;
	char **list = xcalloc(n + 1, sizeof(*list) + ADDRESS_LEN);
	char *text = (char *)(list + n + 1);
	char pod[JOB_NAME_LEN];

	for (size_t i = 0; i < n; i++) {
		pod_spec_pod_name(j, (int)i, pod);
		list[i] = text + i * ADDRESS_LEN;
		snprintf(list[i], ADDRESS_LEN, "%s.%s.%s.svc:%d", pod, j->name, j->ns, j->port);
	}
	return list;
}

/* TF_CONFIG for worker index. A new string the caller frees, or NULL. */
static char *tf_config_text(const struct job *j, int index, char *err)
{
	char **list = addresses(j);
	char *text = tf_config_format((const char *const *)list, j->workers, index, err);

	free(list);
	return text;
}

int pod_spec_tf_config_in_file(const struct job *j)
{
	/* The length of "TF_CONFIG=" and the JSON tf_config_format writes
	 * (unformatted, and nothing in an address needs escaping) for the
	 * last index, the longest, with the string's NUL. */
	size_t len = strlen("TF_CONFIG=") +
	             strlen("{\"cluster\":{\"worker\":[]},\"task\":{"
	                    "\"type\":\"worker\",\"index\":}}") +
	             (size_t)digit_count(j->workers - 1) + 1;
	char pod[JOB_NAME_LEN], port[16];

	snprintf(port, sizeof(port), "%d", j->port);
	for (int i = 0; i < j->workers; i++) {
		pod_spec_pod_name(j, i, pod);
		/* "<pod>.<job>.<ns>.svc:<port>", quoted, and a comma after all
		 * but the last */
		len += strlen(pod) + 1 + strlen(j->name) + 1 + strlen(j->ns) + strlen(".svc:") +
		       strlen(port) + 2 + (i > 0);
	}
	return len > POD_SPEC_ENV_STRING_MAX;
}

cJSON *pod_spec_tf_config_map(const struct job *j, char *err)
{
	char **list = addresses(j);
	char *check = tf_config_format((const char *const *)list, j->workers, 0, err);
	char prefix[JOB_NAME_LEN];
	cJSON *cluster = json_out_new(), *cm, *meta;
	char *text;

	/* The cluster passes the workers' own parser (tf_config_format checks
	 * what it makes), before it goes to them. */
	free(check);
	if (check == NULL) {
		free(list);
		cJSON_Delete(cluster);
		return NULL;
	}
	json_out_item(json_out_obj(cluster, "cluster"), "worker",
	              cJSON_CreateStringArray((const char *const *)list, j->workers));
	free(list);
	text = json_print(cluster);
	cJSON_Delete(cluster);
	if (text == NULL)
		die("out of memory printing the cluster of job '%s/%s'", j->ns, j->name);
	pod_spec_object_name(j, OBJ_CONFIG_MAP, prefix);
	cm = json_out_new();
	json_out_str(cm, "apiVersion", "v1");
	json_out_str(cm, "kind", "ConfigMap");
	meta = json_out_item(cm, "metadata", pod_spec_metadata(j, NULL));
	json_out_str(meta, "generateName", prefix);
	json_out_str(json_out_obj(cm, "data"), TF_CONFIG_FILE_KEY, text);
	free(text);
	return cm;
}

cJSON *pod_spec_status_ca_map(const struct job *j)
{
	char prefix[JOB_NAME_LEN];
	cJSON *cm = json_out_new(), *meta;

	pod_spec_object_name(j, OBJ_STATUS_CA, prefix);
	json_out_str(cm, "apiVersion", "v1");
	json_out_str(cm, "kind", "ConfigMap");
	meta = json_out_item(cm, "metadata", pod_spec_metadata(j, NULL));
	json_out_str(meta, "generateName", prefix);
	json_out_str(json_out_obj(cm, "data"), STATUS_CA_KEY,
	             j->reporting != NULL && j->reporting->ca_pem != NULL ? j->reporting->ca_pem
	                                                                  : "");
	return cm;
}

/* Whether worker index reports the job's training: the chief, when the
 * operator takes reports. */
static int reports(const struct job *j, int index)
{
	return index == 0 && j->reporting != NULL;
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
	cJSON *env, *it;

	env = json_out_new_array();
	if (pod_spec_tf_config_in_file(j)) {
		add_env(env, "MWJ_TF_CONFIG_FILE", TF_CONFIG_MOUNT_DIR "/" TF_CONFIG_FILE_KEY);
	} else {
		char *tf = tf_config_text(j, index, err);
		if (tf == NULL) {
			cJSON_Delete(env);
			return -1;
		}
		add_env(env, "TF_CONFIG", tf);
		free(tf);
	}
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
	if (j->metrics_port > 0) {
		snprintf(num, sizeof(num), ":%d", j->metrics_port);
		add_env(env, "MWJ_METRICS_ADDR", num);
	}
	if (reports(j, index)) {
		char url[JOB_PATH_LEN + 3 * JOB_NAME_LEN];

		snprintf(url, sizeof(url), "%s/apis/%s/%s/namespaces/%s/%s/%s/status",
		         j->reporting->url_base, JOB_GROUP, JOB_VERSION, j->ns, JOB_PLURAL,
		         j->name);
		add_env(env, "MWJ_STATUS_URL", url);
		add_env(env, "MWJ_STATUS_CA_FILE", STATUS_MOUNT_DIR "/" STATUS_CA_KEY);
		add_env(env, "MWJ_STATUS_TOKEN_FILE", STATUS_MOUNT_DIR "/" STATUS_TOKEN_PATH);
	}
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

/* The chief's token for the operator's audience, bound to its pod and
 * rotated by the kubelet, beside the CA that the operator's serving
 * certificate chains to: one projected volume, as Kubeflow Trainer's
 * KEP-2779 mounts its own. */
static cJSON *status_source(const struct job *j)
{
	cJSON *source = json_out_new(), *projected = json_out_obj(source, "projected");
	cJSON *sources = json_out_arr(projected, "sources");
	cJSON *token =
	    json_out_obj(json_out_item(sources, NULL, json_out_new()), "serviceAccountToken");
	cJSON *cm = json_out_obj(json_out_item(sources, NULL, json_out_new()), "configMap");
	cJSON *item = json_out_item(json_out_arr(cm, "items"), NULL, json_out_new());

	json_out_str(token, "audience", j->reporting->audience);
	json_out_num(token, "expirationSeconds", STATUS_TOKEN_SECONDS);
	json_out_str(token, "path", STATUS_TOKEN_PATH);
	json_out_str(cm, "name", j->status.status_ca_map);
	json_out_str(item, "key", STATUS_CA_KEY);
	json_out_str(item, "path", STATUS_CA_KEY);
	return source;
}

/* The ring key, mode 0400, and the TF_CONFIG file, in the worker
 * container only; the chief's reporting token and CA; the checkpoint
 * volume. */
static void worker_volumes(cJSON *spec, cJSON *container, const struct job *j, int index)
{
	cJSON *volumes = array_member(spec, "volumes");
	cJSON *mounts = array_member(container, "volumeMounts");
	cJSON *source = json_out_new(), *secret = json_out_obj(source, "secret");

	json_out_str(secret, "secretName", j->status.ring_key_secret);
	json_out_num(secret, "defaultMode", 0400);
	add_volume(volumes, mounts, VOLUME_RING_KEY, source, SECRET_MOUNT_DIR, 1);
	cJSON_Delete(source);
	if (pod_spec_tf_config_in_file(j)) {
		source = json_out_new();
		json_out_str(json_out_obj(source, "configMap"), "name", j->status.tf_config_map);
		add_volume(volumes, mounts, VOLUME_TF_CONFIG, source, TF_CONFIG_MOUNT_DIR, 1);
		cJSON_Delete(source);
	}
	if (reports(j, index)) {
		source = status_source(j);
		add_volume(volumes, mounts, VOLUME_STATUS, source, STATUS_MOUNT_DIR, 1);
		cJSON_Delete(source);
	}
	if (j->checkpoint_volume != NULL)
		add_volume(volumes, mounts, VOLUME_CHECKPOINT, j->checkpoint_volume,
		           j->checkpoint_mount, 0);
}

/* securityContext.<name> of obj as a number, or -1. */
static double security_number(const cJSON *obj, const char *name)
{
	const cJSON *sc = cJSON_GetObjectItemCaseSensitive(obj, "securityContext");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(sc, name);

	return cJSON_IsNumber(v) && v->valuedouble >= 0 ? v->valuedouble : -1;
}

/* The key's file is 0400 and root's: the kubelet gives it, and every
 * process of the pod, the pod's fsGroup (adding group read), so that a
 * worker that does not run as root reads it. A template that names no
 * fsGroup gets the worker's group as the template says it (runAsGroup,
 * else runAsUser, the container's over the pod's), else that of mwj's
 * worker image; a worker that runs as root needs none. OnRootMismatch:
 * the kubelet walks a checkpoint volume only when its top differs. */
static void worker_fs_group(cJSON *spec, const cJSON *container)
{
	const char *order[] = {"runAsGroup", "runAsUser"};
	cJSON *sc = cJSON_GetObjectItemCaseSensitive(spec, "securityContext");
	double group = -1;

	if (security_number(spec, "fsGroup") >= 0)
		return;
	for (int k = 0; k < 2 && group < 0; k++) {
		group = security_number(container, order[k]);
		if (group < 0)
			group = security_number(spec, order[k]);
	}
	if (group < 0)
		group = POD_SPEC_DEFAULT_FS_GROUP;
	if (group == 0)
		return;
	if (!cJSON_IsObject(sc))
		sc = json_out_set(spec, "securityContext", json_out_new());
	json_out_num(sc, "fsGroup", group);
	if (cJSON_GetObjectItemCaseSensitive(sc, "fsGroupChangePolicy") == NULL)
		json_out_str(sc, "fsGroupChangePolicy", "OnRootMismatch");
}

/* A port the worker listens on (the ring's, the metrics'): a user's
 * declaration of it (same number, TCP) is kept; else it is added, named
 * name unless the user gave that name away. */
static void worker_port(cJSON *container, int port, const char *port_name)
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
		named |= cJSON_IsString(name) && strcmp(name->valuestring, port_name) == 0;
	}
	p = json_out_item(ports, NULL, json_out_new());
	if (!named)
		json_out_str(p, "name", port_name);
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
	if (j->status.ring_key_secret[0] == '\0' ||
	    (pod_spec_tf_config_in_file(j) && j->status.tf_config_map[0] == '\0') ||
	    (reports(j, index) && j->status.status_ca_map[0] == '\0')) {
		err_set(err, "job '%s/%s': its %s is not made yet", j->ns, j->name,
		        j->status.ring_key_secret[0] == '\0' ? "ring-key Secret"
		        : j->status.status_ca_map[0] == '\0' && reports(j, index)
		            ? "status CA ConfigMap"
		            : "TF_CONFIG ConfigMap");
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
	/* The worker needs no API token; a template that says otherwise
	 * (true or false) is kept. */
	if (cJSON_GetObjectItemCaseSensitive(spec, "automountServiceAccountToken") == NULL)
		json_out_bool(spec, "automountServiceAccountToken", 0);
	container = pod_spec_worker_container(cJSON_GetObjectItemCaseSensitive(spec, "containers"));
	if (worker_env(container, j, index, attempt, err) < 0) {
		err_prefix(err, "job '%s/%s'", j->ns, j->name);
		cJSON_Delete(pod);
		return NULL;
	}
	worker_volumes(spec, container, j, index);
	worker_fs_group(spec, container);
	worker_port(container, j->port, "ring");
	if (j->metrics_port > 0)
		worker_port(container, j->metrics_port, "metrics");
	return pod;
}
