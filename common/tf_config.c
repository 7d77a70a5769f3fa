/* tf_config.c - TensorFlow's TF_CONFIG cluster description.
 *
 * Internal helpers write messages without the "TF_CONFIG: " prefix;
 * tf_config_parse() adds it once on the way out.
 */
#include "tf_config.h"

#include "atomic_file.h"
#include "err.h"
#include "json.h"
#include "parse.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* An untrusted string quoted in a message is cut after this many bytes: a
 * 253-character host plus its port still shows whole. */
#define TF_CONFIG_SHOWN 260

/* The longest entry name, "cluster.worker[4095]", with room to spare. */
#define ENTRY_NAME_LEN 32

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Copies s for quoting in a message: at most TF_CONFIG_SHOWN bytes, then
 * "...", with '?' for bytes that are not printable ASCII, so that a hostile
 * value can neither flood the message nor put control characters in a log. */
static const char *shown(const char *s, char buf[TF_CONFIG_SHOWN + 4])
{
	size_t i;

	for (i = 0; s[i] != '\0' && i < TF_CONFIG_SHOWN; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	if (s[i] != '\0') {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

/* Task types TensorFlow knows; why those after the first two are refused. */
static const char *const task_types[][2] = {
    {"chief", NULL},
    {"worker", NULL},
    {"ps", "mwj trains synchronously like MultiWorkerMirroredStrategy, without parameter servers"},
    {"evaluator", "run evaluation with 'mwj-worker evaluate'"},
};

#define HOST_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._"
#define IPV6_CHARS "0123456789abcdefABCDEF:."

/* Names a byte for a message: 'x' if printable, else 0xNN. */
static const char *byte_name(unsigned char ch, char buf[8])
{
	if (ch >= 0x20 && ch < 0x7f)
		snprintf(buf, 8, "'%c'", ch);
	else
		snprintf(buf, 8, "0x%02x", ch);
	return buf;
}

/* Checks the host (len bytes at host) of address s. what names the entry. */
static int host_check(const char *host, size_t len, int ipv6, const char *s, const char *what,
                      char *err)
{
	char show[TF_CONFIG_SHOWN + 4];
	char byte[8];
	size_t ok;

	if (len == 0)
		return err_set(err, "'%s': empty host in '%s'", what, shown(s, show));
	if (len > TF_CONFIG_HOST_LEN - 1)
		return err_set(err, "'%s': host in '%s' is longer than %d characters", what,
		               shown(s, show), TF_CONFIG_HOST_LEN - 1);
	/* s is NUL-terminated and the host ends at ':' or ']', which its set lacks
	 * (':' only ends a host without brackets), so strspn stops by len. */
	ok = strspn(host, ipv6 ? IPV6_CHARS : HOST_CHARS);
	if (ok < len)
		return err_set(err, "'%s': bad character %s in host of '%s': %s", what,
		               byte_name((unsigned char)host[ok], byte), shown(s, show),
		               ipv6 ? "an IPv6 host has hex digits, ':' and '.'"
		                    : "a host has letters, digits, '-', '.' and '_'");
	if (ipv6 && memchr(host, ':', len) == NULL)
		return err_set(err, "'%s': '%s' is not an IPv6 address in brackets", what,
		               shown(s, show));
	return 0;
}

/* Splits "host:port" or "[ipv6]:port" into a. what names the entry. */
static int address_parse(struct tf_address *a, const char *s, const char *what, char *err)
{
	char show[TF_CONFIG_SHOWN + 4];
	char port_show[TF_CONFIG_SHOWN + 4];
	char perr[ERR_LEN];
	int ipv6 = s[0] == '[';
	const char *host = s + ipv6;
	const char *colon;
	size_t len;
	int port = 0;

	if (ipv6) {
		const char *close = strchr(host, ']');

		if (close == NULL)
			return err_set(err, "'%s': missing ']' in '%s'", what, shown(s, show));
		colon = close + 1;
		len = (size_t)(close - host);
	} else {
		colon = strchr(s, ':');
		len = colon ? (size_t)(colon - s) : 0;
		if (colon != NULL && strchr(colon + 1, ':') != NULL)
			return err_set(err,
			               "'%s': '%s' has more than one ':' (an IPv6 host goes in "
			               "brackets: '[::1]:2222')",
			               what, shown(s, show));
	}
	if (colon == NULL || *colon != ':')
		return err_set(err, "'%s': '%s' has no port (expected '%s')", what, shown(s, show),
		               ipv6 ? "[host]:port" : "host:port");
	if (host_check(host, len, ipv6, s, what, err) < 0)
		return -1;
	/* parse_int would take a sign or spaces; a port is digits only. */
	if (colon[1] == '\0' || strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return err_set(err, "'%s': bad port in '%s': '%s' is not a whole number", what,
		               shown(s, show), shown(colon + 1, port_show));
	if (parse_int(colon + 1, 1, 65535, &port, perr) < 0)
		return err_set(err, "'%s': bad port in '%s': %s", what, shown(s, show), perr);
	memcpy(a->host, host, len);
	a->host[len] = '\0';
	a->port = port;
	return 0;
}

/* The entry that holds rank r, for messages. */
static void entry_name(const struct tf_config *c, int r, char *buf)
{
	if (c->has_chief_task && r == 0)
		snprintf(buf, ENTRY_NAME_LEN, "cluster.chief[0]");
	else
		snprintf(buf, ENTRY_NAME_LEN, "cluster.worker[%d]", r - c->has_chief_task);
}

/* Looks up cluster.<name>: absent gives list NULL and count 0. */
static int list_get(const cJSON *cluster, const char *name, const cJSON **list, int *count,
                    char *err)
{
	*list = cJSON_GetObjectItemCaseSensitive(cluster, name);
	*count = 0;
	if (*list == NULL)
		return 0;
	if (!cJSON_IsArray(*list))
		return err_set(err, "'cluster.%s' must be an array of 'host:port' strings", name);
	*count = cJSON_GetArraySize(*list);
	return 0;
}

/* Parses the addresses of list (cluster.<name>) into addrs[first...]. */
static int list_parse(struct tf_config *c, const cJSON *list, const char *name, int first,
                      char *err)
{
	char what[ENTRY_NAME_LEN];
	const cJSON *it;
	int i = 0;

	cJSON_ArrayForEach(it, list)
	{
		snprintf(what, sizeof(what), "cluster.%s[%d]", name, i);
		if (!cJSON_IsString(it) || it->valuestring == NULL)
			return err_set(err, "'%s' must be a 'host:port' string", what);
		if (address_parse(&c->addrs[first + i], it->valuestring, what, err) < 0)
			return -1;
		i++;
	}
	return 0;
}

/* Refuses unknown and repeated task types, and non-empty "ps" and
 * "evaluator" lists. */
static int cluster_check_types(const cJSON *cluster, char *err)
{
	char show[TF_CONFIG_SHOWN + 4];
	int seen[ARRAY_LEN(task_types)] = {0};
	const cJSON *list = NULL;
	const cJSON *it;
	int n = 0;

	cJSON_ArrayForEach(it, cluster)
	{
		size_t k = 0;

		while (k < ARRAY_LEN(task_types) && strcmp(it->string, task_types[k][0]) != 0)
			k++;
		if (k == ARRAY_LEN(task_types))
			return err_set(err,
			               "'cluster' has an unknown task type '%s' (expected "
			               "'chief', 'worker', 'ps' or 'evaluator')",
			               shown(it->string, show));
		if (seen[k]++)
			return err_set(err, "'cluster.%s' appears twice", task_types[k][0]);
	}
	for (size_t k = 2; k < ARRAY_LEN(task_types); k++) {
		if (list_get(cluster, task_types[k][0], &list, &n, err) < 0)
			return -1;
		if (n > 0)
			return err_set(
			    err, "'cluster.%s' is not empty: '%s' tasks are not supported: %s",
			    task_types[k][0], task_types[k][0], task_types[k][1]);
	}
	return 0;
}

/* Sets world, has_chief_task and addrs from cluster. */
static int cluster_parse(struct tf_config *c, const cJSON *cluster, char *err)
{
	const cJSON *chief = NULL;
	const cJSON *workers = NULL;
	int n_chief = 0;
	int n_workers = 0;

	if (cluster_check_types(cluster, err) < 0 ||
	    list_get(cluster, "chief", &chief, &n_chief, err) < 0 ||
	    list_get(cluster, "worker", &workers, &n_workers, err) < 0)
		return -1;
	if (n_chief > 1)
		return err_set(err, "'cluster.chief' has %d entries: there can be only one chief",
		               n_chief);
	if (n_workers > TF_CONFIG_MAX_WORKERS - n_chief)
		return err_set(err,
		               "'cluster' has %d chief and %d worker tasks, more than the "
		               "limit of %d",
		               n_chief, n_workers, TF_CONFIG_MAX_WORKERS);
	if (n_chief + n_workers == 0)
		return err_set(err, "'cluster' has no 'chief' or 'worker' tasks");
	c->has_chief_task = n_chief;
	c->world = n_chief + n_workers;
	c->addrs = xcalloc((size_t)c->world, sizeof(*c->addrs));
	if (list_parse(c, chief, "chief", 0, err) < 0 ||
	    list_parse(c, workers, "worker", n_chief, err) < 0)
		return -1;
	return 0;
}

/* Refuses obj.name given more than once: cJSON keeps both and would quietly
 * use the first. */
static int member_once(const cJSON *obj, const char *path, const char *name, char *err)
{
	const cJSON *it;
	int n = 0;

	cJSON_ArrayForEach(it, obj)
	{
		if (it->string != NULL && strcmp(it->string, name) == 0)
			n++;
	}
	if (n > 1)
		return err_set(err, "'%s%s%s' appears twice", path, path[0] ? "." : "", name);
	return 0;
}

/* Sets task_type, task_index and rank for the task of type number index,
 * after cluster_parse(). */
static int task_set(struct tf_config *c, const char *type, int64_t index, char *err)
{
	int chief = strcmp(type, "chief") == 0;
	int n = chief ? c->has_chief_task : c->world - c->has_chief_task;

	if (n == 0)
		return err_set(err, "'task.type' is '%s' but 'cluster.%s' lists no tasks", type,
		               type);
	if (index < 0 || index >= n)
		return err_set(err,
		               "'task.index' is %" PRId64 ", out of range [0, %d] for the %d "
		               "'%s' task%s in 'cluster.%s'",
		               index, n - 1, n, type, n == 1 ? "" : "s", type);
	snprintf(c->task_type, sizeof(c->task_type), "%s", type);
	c->task_index = (int)index;
	c->rank = chief ? 0 : c->has_chief_task + (int)index;
	return 0;
}

/* Sets task_type, task_index and rank from task, after cluster_parse(). */
static int task_parse(struct tf_config *c, const cJSON *task, char *err)
{
	char show[TF_CONFIG_SHOWN + 4];
	const char *type = NULL;
	int64_t index = 0;

	if (json_get_string(task, "task", "type", &type, err) < 0 ||
	    member_once(task, "task", "type", err) < 0)
		return -1;
	for (size_t k = 2; k < ARRAY_LEN(task_types); k++) {
		if (strcmp(type, task_types[k][0]) == 0)
			return err_set(err, "'task.type' is '%s': '%s' tasks are not supported: %s",
			               type, type, task_types[k][1]);
	}
	if (strcmp(type, "chief") != 0 && strcmp(type, "worker") != 0)
		return err_set(err, "'task.type' is '%s': expected 'chief' or 'worker'",
		               shown(type, show));
	if (json_get_i64(task, "task", "index", INT64_MIN, INT64_MAX, &index, err) < 0 ||
	    member_once(task, "task", "index", err) < 0)
		return -1;
	return task_set(c, type, index, err);
}

/* An address with the rank that lists it, for sorting. */
struct ranked {
	const struct tf_address *addr;
	int rank;
};

static int ranked_cmp(const void *pa, const void *pb)
{
	const struct ranked *a = pa;
	const struct ranked *b = pb;
	int d;

	if (a->addr->port != b->addr->port)
		return a->addr->port < b->addr->port ? -1 : 1;
	d = strcasecmp(a->addr->host, b->addr->host);
	if (d != 0)
		return d;
	/* Ties go in rank order, so the report below is deterministic. */
	return a->rank - b->rank;
}

/* Refuses an address listed twice. Sorting keeps 4096 workers that all share
 * port 2222 fast. Of all repeats, the one with the lowest rank is named, with
 * the first entry it repeats. */
static int duplicates_check(const struct tf_config *c, char *err)
{
	struct ranked *sorted = xcalloc((size_t)c->world, sizeof(*sorted));
	char first[ENTRY_NAME_LEN], second[ENTRY_NAME_LEN];
	char a[TF_CONFIG_HOST_LEN + 16], b[TF_CONFIG_HOST_LEN + 16];
	int best = -1;

	for (int r = 0; r < c->world; r++)
		sorted[r] = (struct ranked){&c->addrs[r], r};
	qsort(sorted, (size_t)c->world, sizeof(*sorted), ranked_cmp);
	for (int i = 1; i < c->world; i++) {
		if (sorted[i].addr->port == sorted[i - 1].addr->port &&
		    strcasecmp(sorted[i].addr->host, sorted[i - 1].addr->host) == 0 &&
		    (best < 0 || sorted[i].rank < sorted[best].rank))
			best = i;
	}
	if (best >= 0) {
		entry_name(c, sorted[best - 1].rank, first);
		entry_name(c, sorted[best].rank, second);
		tf_address_format(sorted[best - 1].addr, a, sizeof(a));
		tf_address_format(sorted[best].addr, b, sizeof(b));
		err_set(err, "'%s' ('%s') and '%s' ('%s') are the same address", first, a, second,
		        b);
	}
	free(sorted);
	return best >= 0 ? -1 : 0;
}

/* cJSON decodes "\u0000" into a NUL that silently ends the C string, so
 * "w0:2222\u0000x" would read as "w0:2222". Runs on text cJSON accepted,
 * where a backslash always starts an escape. Returns 1 with the offset in
 * *at if there is one. */
static int nul_escape_find(const char *text, size_t len, size_t *at)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (text[i] != '\\')
			continue;
		if (len - i >= 6 && memcmp(text + i + 1, "u0000", 5) == 0) {
			*at = i;
			return 1;
		}
		i++; /* the escaped character: in "\\u0000" the u is no escape */
	}
	return 0;
}

/* What a document without a "task" stands for: worker number index, or,
 * for a negative index, nothing (the document must name its task). */
enum { TASK_REQUIRED = -1, TASK_INDEX_UNSET = -2 };

/* tf_config_parse() without the prefix, taking the task of a document
 * without one from default_index (or TASK_REQUIRED / TASK_INDEX_UNSET). */
static int parse_doc(struct tf_config *c, const char *text, size_t len, int default_index,
                     char *err)
{
	const cJSON *cluster = NULL;
	const cJSON *task = NULL;
	cJSON *root = NULL;
	size_t at = 0;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	root = json_parse(text, len, err);
	if (root == NULL)
		goto out;
	if (nul_escape_find(text, len, &at)) {
		err_set(err, "'\\u0000' near byte %zu: strings must not contain NUL", at);
		goto out;
	}
	task = cJSON_GetObjectItemCaseSensitive(root, "task");
	if (json_get_object(root, "", "cluster", &cluster, err) < 0 ||
	    member_once(root, "", "cluster", err) < 0)
		goto out;
	if (task != NULL || default_index == TASK_REQUIRED) {
		if (json_get_object(root, "", "task", &task, err) < 0 ||
		    member_once(root, "", "task", err) < 0)
			goto out;
	} else if (default_index == TASK_INDEX_UNSET) {
		err_set(err, "'task' is missing, and so is MWJ_WORKER_INDEX, which stands for it");
		goto out;
	}
	if (cluster_parse(c, cluster, err) < 0)
		goto out;
	if (task ? task_parse(c, task, err) < 0 : task_set(c, "worker", default_index, err) < 0)
		goto out;
	if (duplicates_check(c, err) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0)
		tf_config_release(c);
	cJSON_Delete(root);
	return rc;
}

int tf_config_parse(struct tf_config *c, const char *text, size_t len, char *err)
{
	if (parse_doc(c, text, len, TASK_REQUIRED, err) < 0)
		return err_prefix(err, "TF_CONFIG");
	return 0;
}

/* MWJ_WORKER_INDEX: digits only, a worker index the schema allows; unset
 * or empty gives TASK_INDEX_UNSET. */
static int worker_index_from_env(int *index, char *err)
{
	const char *s = getenv("MWJ_WORKER_INDEX");
	char show[TF_CONFIG_SHOWN + 4], perr[ERR_LEN];

	*index = TASK_INDEX_UNSET;
	if (s == NULL || s[0] == '\0')
		return 0;
	if (strspn(s, "0123456789") != strlen(s))
		return err_set(err, "MWJ_WORKER_INDEX: '%s' is not a whole number", shown(s, show));
	if (parse_int(s, 0, TF_CONFIG_MAX_WORKERS - 1, index, perr) < 0)
		return err_set(err, "MWJ_WORKER_INDEX: %s", perr);
	return 0;
}

/* Parses the file at path, the task coming from MWJ_WORKER_INDEX when the
 * file has none. */
static int parse_file(struct tf_config *c, const char *path, char *err)
{
	unsigned char *text = NULL;
	size_t len = 0;
	int index, rc;

	memset(c, 0, sizeof(*c));
	if (worker_index_from_env(&index, err) < 0)
		return -1;
	if (file_read_all(path, TF_CONFIG_FILE_MAX_BYTES, &text, &len, err) < 0)
		return err_prefix(err, "MWJ_TF_CONFIG_FILE '%s'", path);
	rc = parse_doc(c, (const char *)text, len, index, err);
	free(text);
	if (rc < 0)
		return err_prefix(err, "MWJ_TF_CONFIG_FILE '%s'", path);
	return 0;
}

/* Writes the first way a (from TF_CONFIG) and b (from the file, with
 * MWJ_WORKER_INDEX) differ into why (ERR_LEN); returns 0 when they
 * describe the same cluster and task. */
static int differ(const struct tf_config *a, const struct tf_config *b, char *why)
{
	char name[ENTRY_NAME_LEN], x[TF_CONFIG_HOST_LEN + 16], y[TF_CONFIG_HOST_LEN + 16];

	if (a->world != b->world || a->has_chief_task != b->has_chief_task)
		return err_set(why, "TF_CONFIG has %d tasks (%d chief), the file %d (%d chief)",
		               a->world, a->has_chief_task, b->world, b->has_chief_task);
	for (int r = 0; r < a->world; r++) {
		if (strcmp(a->addrs[r].host, b->addrs[r].host) == 0 &&
		    a->addrs[r].port == b->addrs[r].port)
			continue;
		entry_name(a, r, name);
		tf_address_format(&a->addrs[r], x, sizeof(x));
		tf_address_format(&b->addrs[r], y, sizeof(y));
		return err_set(why, "'%s' is '%s' in TF_CONFIG, '%s' in the file", name, x, y);
	}
	if (strcmp(a->task_type, b->task_type) != 0 || a->task_index != b->task_index)
		return err_set(why, "the task is %s %d in TF_CONFIG, %s %d by the file",
		               a->task_type, a->task_index, b->task_type, b->task_index);
	return 0;
}

int tf_config_from_env(struct tf_config *c, char *err)
{
	const char *s = getenv("TF_CONFIG");
	const char *path = getenv("MWJ_TF_CONFIG_FILE");
	struct tf_config other = {0};
	char why[ERR_LEN];
	int rc;

	if (path != NULL && path[0] != '\0') {
		if (s == NULL || s[0] == '\0')
			return parse_file(c, path, err);
		if (parse_file(&other, path, err) < 0) {
			memset(c, 0, sizeof(*c));
			return -1;
		}
	}
	if (s != NULL && s[0] != '\0') {
		rc = tf_config_parse(c, s, strlen(s), err);
		if (rc == 0 && other.addrs != NULL && differ(c, &other, why) < 0) {
			rc = err_set(err,
			             "TF_CONFIG and MWJ_TF_CONFIG_FILE '%s' disagree: %s; they "
			             "must describe one cluster and task",
			             path, why);
			tf_config_release(c);
		}
		tf_config_release(&other);
		return rc;
	}
	memset(c, 0, sizeof(*c));
	c->world = 1;
	snprintf(c->task_type, sizeof(c->task_type), "worker");
	c->addrs = xcalloc(1, sizeof(*c->addrs));
	snprintf(c->addrs[0].host, sizeof(c->addrs[0].host), "localhost");
	return 0;
}

void tf_config_release(struct tf_config *c)
{
	if (c == NULL)
		return;
	free(c->addrs);
	memset(c, 0, sizeof(*c));
}

void tf_address_format(const struct tf_address *a, char *out, size_t n)
{
	if (n == 0)
		return;
	if (strchr(a->host, ':') != NULL)
		snprintf(out, n, "[%s]:%d", a->host, a->port);
	else
		snprintf(out, n, "%s:%d", a->host, a->port);
}

char *tf_config_format(const char *const *workers, int n, int index, char *err)
{
	struct tf_config check = {0};
	cJSON *root = NULL;
	cJSON *list = NULL;
	cJSON *task = NULL;
	char *text = NULL;

	/* Counts and the index are checked by tf_config_parse() below. */
	if (n < 0 || (n > 0 && workers == NULL)) {
		err_set(err, "TF_CONFIG: no list of %d workers", n);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		if (workers[i] == NULL) {
			err_set(err, "TF_CONFIG: 'cluster.worker[%d]' is missing", i);
			return NULL;
		}
	}
	root = cJSON_CreateObject();
	list = cJSON_CreateStringArray(workers, n);
	if (!cJSON_AddItemToObject(cJSON_AddObjectToObject(root, "cluster"), "worker", list)) {
		cJSON_Delete(list);
		list = NULL;
	}
	task = cJSON_AddObjectToObject(root, "task");
	if (list == NULL || cJSON_AddStringToObject(task, "type", "worker") == NULL ||
	    cJSON_AddNumberToObject(task, "index", index) == NULL)
		die("out of memory building TF_CONFIG");
	text = json_print(root);
	cJSON_Delete(root);
	if (text == NULL)
		die("out of memory printing TF_CONFIG");
	/* A worker exits on a TF_CONFIG it refuses: refuse it here instead. */
	if (tf_config_parse(&check, text, strlen(text), err) < 0) {
		free(text);
		text = NULL;
	}
	tf_config_release(&check);
	return text;
}

int tf_config_loopback(struct tf_config *c, const int *ports, int n, int index, char *err)
{
	char(*addrs)[32] = xcalloc(n > 0 ? (size_t)n : 1, sizeof(*addrs));
	const char **list = xcalloc(n > 0 ? (size_t)n : 1, sizeof(*list));
	char *json;
	int rc = -1;

	for (int i = 0; i < n; i++) {
		snprintf(addrs[i], sizeof(addrs[i]), "127.0.0.1:%d", ports[i]);
		list[i] = addrs[i];
	}
	json = tf_config_format(list, n, index, err);
	if (json)
		rc = tf_config_parse(c, json, strlen(json), err);
	free(json);
	free(list);
	free(addrs);
	return rc;
}
