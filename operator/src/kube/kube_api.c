/* kube_api.c - the API client's behaviour over any backend: retries with
 * back-off, Status bodies, typed verbs and paths (kube_api.h). */
#include "kube_api.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "json.h"

#define CT_JSON        "application/json"
#define CT_MERGE_PATCH "application/merge-patch+json"
#define CT_JSON_PATCH  "application/json-patch+json"

/* A Retry-After beyond this is no hint but a refusal; the deadline ends
 * the call long before anyway. */
#define RETRY_AFTER_MAX_S 3600
/* How much of a body that is no Status goes into a message. */
#define EXCERPT_LEN 200

/* --- Time, and sleeping until stopped --- */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One condition for every client: kube_api_stop() wakes all sleepers and
 * each looks at its own flag. Stops are rare, so the shared wake-up costs
 * nothing, and struct kube_api needs no lock of its own. */
static pthread_once_t sleep_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sleep_cond;

static void sleep_init(void)
{
	pthread_condattr_t attr;

	/* The monotonic clock, so that a wall-clock step does not stretch a
	 * back-off. */
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&sleep_cond, &attr);
	pthread_condattr_destroy(&attr);
}

static int is_stopping(const struct kube_api *api)
{
	return __atomic_load_n(&api->stopping, __ATOMIC_ACQUIRE) != 0;
}

/* Sleeps ms milliseconds; returns -1 at once if the client is stopped
 * before or during the sleep. */
static int sleep_unless_stopped(const struct kube_api *api, long long ms)
{
	struct timespec until;
	int rc = 0;

	pthread_once(&sleep_once, sleep_init);
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)(ms / 1000);
	until.tv_nsec += (long)(ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&sleep_lock);
	while (!is_stopping(api)) {
		if (pthread_cond_timedwait(&sleep_cond, &sleep_lock, &until) == ETIMEDOUT)
			break;
	}
	if (is_stopping(api))
		rc = -1;
	pthread_mutex_unlock(&sleep_lock);
	return rc;
}

/* --- Lifecycle --- */

void kube_resp_release(struct kube_resp *r)
{
	if (r == NULL)
		return;
	free(r->body);
	memset(r, 0, sizeof(*r));
	r->retry_after_s = -1;
}

void kube_api_stop(struct kube_api *api)
{
	if (api == NULL)
		return;
	pthread_once(&sleep_once, sleep_init);
	pthread_mutex_lock(&sleep_lock);
	__atomic_store_n(&api->stopping, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&sleep_cond);
	pthread_mutex_unlock(&sleep_lock);
	if (api->ops != NULL && api->ops->stop != NULL)
		api->ops->stop(api);
}

void kube_api_resume(struct kube_api *api)
{
	if (api == NULL)
		return;
	if (api->ops != NULL && api->ops->resume != NULL)
		api->ops->resume(api);
	__atomic_store_n(&api->stopping, 0, __ATOMIC_RELEASE);
}

void kube_api_release(struct kube_api *api)
{
	if (api == NULL)
		return;
	if (api->ops != NULL && api->ops->release != NULL)
		api->ops->release(api);
	api->ops = NULL;
	api->impl = NULL;
}

/* --- Status bodies --- */

/* Copies at most n - 1 bytes of src, of which there are len, into out as one
 * printable line: control characters (a newline in a server's message
 * would forge a log line) become spaces, and a cut never splits a UTF-8
 * character. */
static void copy_line(char *out, size_t n, const char *src, size_t len)
{
	size_t i;

	if (len > n - 1) {
		len = n - 1;
		/* Back off continuation bytes (10xxxxxx) and the lead byte
		 * they belong to. */
		while (len > 0 && ((unsigned char)src[len] & 0xC0) == 0x80)
			len--;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)src[i];

		out[i] = c < 0x20 || c == 0x7F ? ' ' : (char)c;
	}
	out[len] = '\0';
}

/* obj.name, when a string, into out (n bytes) as one printable line. */
static void copy_member(char *out, size_t n, const cJSON *obj, const char *name)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (cJSON_IsString(s))
		copy_line(out, n, s->valuestring, strlen(s->valuestring));
}

void kube_resp_parse_status(struct kube_resp *resp)
{
	const cJSON *kind, *details, *retry;
	cJSON *root;

	resp->reason[0] = '\0';
	resp->message[0] = '\0';
	resp->cause[0] = '\0';
	resp->name[0] = '\0';
	if (resp->body == NULL || resp->body_len == 0)
		return;
	root = json_parse(resp->body, resp->body_len, NULL);
	kind = cJSON_GetObjectItemCaseSensitive(root, "kind");
	if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "Status") != 0) {
		copy_line(resp->message, EXCERPT_LEN + 1, resp->body, resp->body_len);
		cJSON_Delete(root);
		return;
	}
	copy_member(resp->reason, sizeof(resp->reason), root, "reason");
	copy_member(resp->message, sizeof(resp->message), root, "message");
	details = cJSON_GetObjectItemCaseSensitive(root, "details");
	copy_member(resp->cause, sizeof(resp->cause),
	            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(details, "causes"), 0),
	            "reason");
	copy_member(resp->name, sizeof(resp->name), details, "name");
	retry = cJSON_GetObjectItemCaseSensitive(details, "retryAfterSeconds");
	if (resp->retry_after_s < 0 && cJSON_IsNumber(retry) && retry->valuedouble >= 0)
		resp->retry_after_s = retry->valuedouble > RETRY_AFTER_MAX_S
		                          ? RETRY_AFTER_MAX_S
		                          : (int)retry->valuedouble;
	cJSON_Delete(root);
}

/* --- Requests with retries --- */

static int is_2xx(long status)
{
	return status >= 200 && status <= 299;
}

static int is_retryable(int rc, long status)
{
	return rc < 0 || status == 429 || (status >= 500 && status <= 599);
}

static void count(unsigned long *counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* A thread's own generator (xorshift64*), seeded from the clock and the
 * stack address: jitter needs spread across clients, not quality. */
static uint64_t jitter_random(void)
{
	static _Thread_local uint64_t state;

	if (state == 0) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		state = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^
		        (uint64_t)(uintptr_t)&ts;
		state |= 1;
	}
	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return state * 0x2545F4914F6CDD1Dull;
}

/* The wait before retry number attempt + 1: "full jitter" (a uniform wait
 * up to the capped exponential step), so that clients refused together do
 * not come back together; never less than the server's Retry-After. */
static long long backoff_ms(const struct kube_api *api, int attempt, int retry_after_s)
{
	long long first = api->backoff_first_ms > 0 ? api->backoff_first_ms : KUBE_BACKOFF_FIRST_MS;
	long long max = api->backoff_max_ms > 0 ? api->backoff_max_ms : KUBE_BACKOFF_MAX_MS;
	long long step = first;
	long long wait;

	for (int i = 0; i < attempt && step < max; i++)
		step *= 2;
	if (step > max)
		step = max;
	wait = (long long)(jitter_random() % (uint64_t)(step + 1));
	if (retry_after_s >= 0 && (long long)retry_after_s * 1000 > wait)
		wait = (long long)retry_after_s * 1000;
	return wait;
}

static const char *const method_names[KUBE_METHODS] = {"GET",    "POST",  "PUT",  "PATCH",
                                                       "DELETE", "WATCH", "OTHER"};

const char *kube_method_name(enum kube_method m)
{
	return m >= 0 && m < KUBE_METHODS ? method_names[m] : "OTHER";
}

static enum kube_method method_of(const char *method)
{
	for (int m = 0; m < KUBE_WATCH; m++) {
		if (strcmp(method, method_names[m]) == 0)
			return (enum kube_method)m;
	}
	return KUBE_OTHER;
}

/* One request's answer in stats.by_code (status 0: none came). */
static void count_code(struct kube_api *api, enum kube_method m, long status)
{
	count(&api->stats.by_code[m][status >= 0 && status < KUBE_CODES ? status : 0]);
}

/* One round trip, its counters, and the Status of a failure. */
static int attempt_once(struct kube_api *api, const struct kube_req *req, struct kube_resp *resp,
                        char *why)
{
	int rc;

	kube_resp_release(resp);
	why[0] = '\0';
	count(&api->stats.requests);
	rc = api->ops->round_trip(api, req, resp, why);
	count_code(api, method_of(req->method), rc < 0 ? 0 : resp->status);
	if (rc < 0) {
		count(&api->stats.transport_errors);
		kube_resp_release(resp);
		if (why[0] == '\0')
			err_set(why, "no response");
		return -1;
	}
	if (resp->status >= 400 && resp->status <= 499)
		count(&api->stats.errors_4xx);
	else if (resp->status >= 500 && resp->status <= 599)
		count(&api->stats.errors_5xx);
	if (!is_2xx(resp->status))
		kube_resp_parse_status(resp);
	return 0;
}

/* Whether the write guard decides on req (see kube_write_guard_fn). */
static int guarded(const struct kube_api *api, const struct kube_req *req)
{
	return api->write_guard != NULL && !req->unguarded && strcmp(req->method, "GET") != 0;
}

/* kube_api_request without the method and path in the message, which the
 * callers add each in their own words. */
static int request(struct kube_api *api, const struct kube_req *req, struct kube_resp *resp,
                   char *err)
{
	long long deadline_ms =
	    api->retry_deadline_ms > 0 ? api->retry_deadline_ms : KUBE_RETRY_DEADLINE_MS;
	long long start = now_ms();
	struct kube_req r = *req;
	char why[ERR_LEN] = "";
	int attempt, unsure = 0;

	memset(resp, 0, sizeof(*resp));
	resp->retry_after_s = -1;
	if (api->ops == NULL || api->ops->round_trip == NULL)
		return err_set(err, "no API backend");
	if (r.timeout_ms <= 0)
		r.timeout_ms = KUBE_DEFAULT_TIMEOUT_MS;
	for (attempt = 0;; attempt++) {
		long long wait;
		int rc;

		if (is_stopping(api))
			break;
		if (guarded(api, &r) && !api->write_guard(api->write_guard_ctx)) {
			count(&api->stats.refused_by_guard);
			kube_resp_release(resp);
			return err_set(err, "not sent: this replica is not the leader");
		}
		rc = attempt_once(api, &r, resp, why);
		resp->maybe_applied = unsure;
		if (!is_retryable(rc, resp->status))
			return 0;
		unsure |= rc < 0 || resp->status >= 500;
		if (r.once) {
			if (rc == 0)
				return 0;
			return err_set(err, "%s", why);
		}
		if (rc == 0)
			err_set(why, "%ld%s%s", resp->status, resp->reason[0] ? " " : "",
			        resp->reason);
		wait = backoff_ms(api, attempt, rc < 0 ? -1 : resp->retry_after_s);
		/* The last answer stands when waiting would pass the deadline:
		 * the caller reports the 503 rather than a time-out. */
		if (now_ms() + wait >= start + deadline_ms) {
			if (rc == 0)
				return 0;
			return err_set(err, "%s (gave up after %d attempt%s in %lld ms)", why,
			               attempt + 1, attempt > 0 ? "s" : "", now_ms() - start);
		}
		if (sleep_unless_stopped(api, wait) < 0)
			break;
		count(&api->stats.retries);
	}
	kube_resp_release(resp);
	if (why[0] != '\0')
		return err_set(err, "client stopping (last attempt: %s)", why);
	return err_set(err, "client stopping");
}

int kube_api_request(struct kube_api *api, const struct kube_req *req, struct kube_resp *resp,
                     char *err)
{
	if (request(api, req, resp, err) < 0)
		return err_prefix(err, "%s %s", req->method, req->path);
	return 0;
}

int kube_api_watch(struct kube_api *api, const char *path, int idle_ms, kube_stream_fn fn,
                   void *ctx, long *status, char **resp_body, char *err)
{
	int rc;

	*status = 0;
	if (api->ops == NULL || api->ops->stream == NULL)
		return err_set(err, "the API client cannot watch");
	count(&api->stats.requests);
	rc = api->ops->stream(api, path, idle_ms, fn, ctx, status, resp_body, err);
	count_code(api, KUBE_WATCH, *status);
	if (*status == 0)
		count(&api->stats.transport_errors);
	return rc;
}

/* --- Typed verbs --- */

/* Writes what a path names, for messages: "pods 'ns/x'", "multiworkerjobs/
 * status 'ns/j'", "pods in 'ns'" (a collection), "nodes 'n1'" (cluster-
 * scoped); name, when not NULL, stands in for the path's own (a create).
 * A path of another shape is quoted whole. */
static void describe(char *out, size_t n, const char *path, const char *name)
{
	char copy[KUBE_PATH_LEN];
	char *seg[12];
	char *save = NULL, *tok;
	int nseg = 0, i;
	const char *ns = NULL, *plural, *obj = NULL, *sub = NULL;

	snprintf(copy, sizeof(copy), "%s", path);
	copy[strcspn(copy, "?")] = '\0';
	for (tok = strtok_r(copy, "/", &save); tok != NULL && nseg < 12;
	     tok = strtok_r(NULL, "/", &save))
		seg[nseg++] = tok;
	if (nseg >= 3 && strcmp(seg[0], "api") == 0)
		i = 2;
	else if (nseg >= 4 && strcmp(seg[0], "apis") == 0)
		i = 3;
	else
		i = -1;
	if (i < 0 || tok != NULL) {
		snprintf(out, n, "'%.200s'", path);
		return;
	}
	/* "namespaces/<ns>/<plural>...": a namespaced resource; "namespaces"
	 * or "namespaces/<ns>" alone: the namespaces themselves. */
	if (nseg - i >= 3 && strcmp(seg[i], "namespaces") == 0) {
		ns = seg[i + 1];
		i += 2;
	}
	plural = seg[i];
	if (i + 1 < nseg)
		obj = seg[i + 1];
	if (i + 2 < nseg)
		sub = seg[i + 2];
	if (name != NULL)
		obj = name;
	if (obj == NULL && ns != NULL)
		snprintf(out, n, "%.64s in '%.64s'", plural, ns);
	else if (obj == NULL)
		snprintf(out, n, "%.64s", plural);
	else
		snprintf(out, n, "%.64s%s%.32s '%.64s%s%.256s'", plural, sub ? "/" : "",
		         sub ? sub : "", ns ? ns : "", ns ? "/" : "", obj);
}

struct verb {
	const char *name; /* in messages: "create" */
	const char *method;
	const char *path;
	const char *obj_name; /* see describe(); NULL: from the path */
	const char *content_type;
	const cJSON *body;
	int missing_ok;               /* a 404 is success */
	const struct kube_opts *opts; /* NULL: the defaults */
};

static void set_result(struct kube_result *res, const struct kube_resp *resp)
{
	if (res == NULL)
		return;
	res->status = resp->status;
	res->maybe_applied = resp->maybe_applied;
	snprintf(res->reason, sizeof(res->reason), "%s", resp->reason);
	snprintf(res->message, sizeof(res->message), "%s", resp->message);
	snprintf(res->cause, sizeof(res->cause), "%s", resp->cause);
	snprintf(res->name, sizeof(res->name), "%s", resp->name);
}

/* Sends v, and on a 2xx parses the reply into *out (when out is not NULL). */
static int do_verb(struct kube_api *api, const struct verb *v, cJSON **out, struct kube_result *res,
                   char *err)
{
	struct kube_req req = {
	    .method = v->method, .path = v->path, .content_type = v->content_type};
	struct kube_resp resp = {0};
	char what[400];
	char *text = NULL;
	int rc = -1;

	if (out != NULL)
		*out = NULL;
	if (res != NULL) {
		res->status = 0;
		res->maybe_applied = 0;
		res->reason[0] = '\0';
		res->message[0] = '\0';
		res->cause[0] = '\0';
		res->name[0] = '\0';
	}
	describe(what, sizeof(what), v->path, v->obj_name);
	if (v->body != NULL) {
		text = json_print(v->body);
		if (text == NULL)
			return err_set(err, "%s %s: cannot serialize the body", v->name, what);
		req.body = text;
		req.body_len = strlen(text);
	}
	if (v->opts != NULL) {
		req.timeout_ms = v->opts->timeout_ms;
		req.once = v->opts->once;
		req.unguarded = v->opts->unguarded;
	}
	if (request(api, &req, &resp, err) < 0) {
		err_prefix(err, "%s %s", v->name, what);
		goto out;
	}
	set_result(res, &resp);
	if (!is_2xx(resp.status) && !(v->missing_ok && resp.status == 404)) {
		err_set(err, "%s %s: %ld%s%s%s%s", v->name, what, resp.status,
		        resp.reason[0] ? " " : "", resp.reason, resp.message[0] ? ": " : "",
		        resp.message);
		goto out;
	}
	if (out != NULL && is_2xx(resp.status)) {
		*out = json_parse(resp.body ? resp.body : "", resp.body_len, err);
		if (*out == NULL) {
			err_prefix(err, "%s %s: response", v->name, what);
			goto out;
		}
		if (!cJSON_IsObject(*out)) {
			cJSON_Delete(*out);
			*out = NULL;
			err_set(err, "%s %s: response is no JSON object", v->name, what);
			goto out;
		}
	}
	rc = 0;
out:
	free(text);
	kube_resp_release(&resp);
	return rc;
}

/* A collection path ends with the plural: "/api/v1/namespaces/ns/pods". */
static int is_collection(const char *path)
{
	char what[400];

	describe(what, sizeof(what), path, NULL);
	return strchr(what, '\'') == NULL || strstr(what, " in '") != NULL;
}

int kube_get(struct kube_api *api, const char *path, cJSON **out, struct kube_result *res,
             char *err)
{
	struct verb v = {
	    is_collection(path) ? "list" : "get", "GET", path, NULL, NULL, NULL, 0, NULL};

	return do_verb(api, &v, out, res, err);
}

int kube_create(struct kube_api *api, const char *collection_path, const cJSON *obj, cJSON **out,
                struct kube_result *res, char *err)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(meta, "name");
	struct verb v = {"create", "POST", collection_path, NULL, CT_JSON, obj, 0, NULL};

	if (!cJSON_IsObject(obj))
		return err_set(err, "create: the object must be a JSON object");
	if (!cJSON_IsString(name))
		name = cJSON_GetObjectItemCaseSensitive(meta, "generateName");
	if (cJSON_IsString(name))
		v.obj_name = name->valuestring;
	return do_verb(api, &v, out, res, err);
}

int kube_update(struct kube_api *api, const char *path, const cJSON *obj, cJSON **out,
                struct kube_result *res, char *err)
{
	struct verb v = {"update", "PUT", path, NULL, CT_JSON, obj, 0, NULL};

	if (!cJSON_IsObject(obj))
		return err_set(err, "update: the object must be a JSON object");
	return do_verb(api, &v, out, res, err);
}

int kube_send(struct kube_api *api, const char *method, const char *path, const cJSON *obj,
              const struct kube_opts *opts, cJSON **out, struct kube_result *res, char *err)
{
	struct verb v = {"request", method, path, NULL, obj ? CT_JSON : NULL, obj, 0, opts};

	if (strcmp(method, "GET") == 0)
		v.name = "get";
	else if (strcmp(method, "POST") == 0)
		v.name = "create";
	else if (strcmp(method, "PUT") == 0)
		v.name = "update";
	if (obj != NULL && !cJSON_IsObject(obj))
		return err_set(err, "%s: the object must be a JSON object", v.name);
	return do_verb(api, &v, out, res, err);
}

int kube_merge_patch(struct kube_api *api, const char *path, const cJSON *patch, cJSON **out,
                     struct kube_result *res, char *err)
{
	struct verb v = {"patch", "PATCH", path, NULL, CT_MERGE_PATCH, patch, 0, NULL};

	if (!cJSON_IsObject(patch))
		return err_set(err, "merge patch: the patch must be a JSON object");
	return do_verb(api, &v, out, res, err);
}

int kube_json_patch(struct kube_api *api, const char *path, const cJSON *patch, cJSON **out,
                    struct kube_result *res, char *err)
{
	struct verb v = {"patch", "PATCH", path, NULL, CT_JSON_PATCH, patch, 0, NULL};

	if (!cJSON_IsArray(patch))
		return err_set(err, "json patch: the patch must be an array of operations");
	return do_verb(api, &v, out, res, err);
}

int kube_delete(struct kube_api *api, const char *path, const char *uid, const char *propagation,
                int grace_s, int missing_ok, struct kube_result *res, char *err)
{
	struct verb v = {"delete", "DELETE", path, NULL, CT_JSON, NULL, missing_ok, NULL};
	cJSON *opts = cJSON_CreateObject();
	int rc;

	if (opts == NULL)
		die("out of memory");
	cJSON_AddStringToObject(opts, "kind", "DeleteOptions");
	cJSON_AddStringToObject(opts, "apiVersion", "v1");
	if (uid != NULL)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(opts, "preconditions"), "uid", uid);
	if (propagation != NULL)
		cJSON_AddStringToObject(opts, "propagationPolicy", propagation);
	if (grace_s >= 0)
		cJSON_AddNumberToObject(opts, "gracePeriodSeconds", grace_s);
	v.body = opts;
	rc = do_verb(api, &v, NULL, res, err);
	cJSON_Delete(opts);
	return rc;
}

/* --- Paths --- */

/* A path segment that cannot change the path's shape: not empty, not "."
 * or "..", no '/', '?', '#', '%', space or control character. */
static int is_segment(const char *s)
{
	if (s == NULL || s[0] == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return 0;
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p <= 0x20 || *p == 0x7F || *p == '/' || *p == '?' || *p == '#' || *p == '%')
			return 0;
	}
	return 1;
}

int kube_path(char *out, const char *group, const char *version, const char *ns, const char *plural,
              const char *name)
{
	int core = group == NULL || group[0] == '\0';
	int namespaced = ns != NULL && ns[0] != '\0';
	int len;

	out[0] = '\0';
	if ((!core && !is_segment(group)) || !is_segment(version) || !is_segment(plural) ||
	    (namespaced && !is_segment(ns)) || (name != NULL && !is_segment(name)))
		return -1;
	len = snprintf(out, KUBE_PATH_LEN, "%s%s/%s%s%s/%s%s%s", core ? "/api" : "/apis/",
	               core ? "" : group, version, namespaced ? "/namespaces/" : "",
	               namespaced ? ns : "", plural, name ? "/" : "", name ? name : "");
	if (len < 0 || len >= KUBE_PATH_LEN) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}
