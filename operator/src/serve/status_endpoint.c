/* status_endpoint.c - a chief's report: found, paced, authenticated,
 * authorized, read, kept; see status_endpoint.h. */
#include "status_endpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json_out.h"
#include "log.h"
#include "ratelimit.h"
#include "timefmt.h"
#include "timers.h"

#define PATH_PREFIX       "/apis/" JOB_GROUP "/" JOB_VERSION "/namespaces/"
#define BEARER            "Bearer "
#define REVIEW_TIMEOUT_MS 10000

static cJSON *controller_job(void *ctx, const char *ns, const char *name)
{
	return informer_get(&((struct controller *)ctx)->jobs, ns, name);
}

static cJSON *controller_pod(void *ctx, const char *ns, const char *name)
{
	return informer_get(&((struct controller *)ctx)->pods, ns, name);
}

static void to_controller(void *ctx, const char *key, const char *uid,
                          const struct training_status *t)
{
	controller_report(ctx, key, uid, t);
}

void status_endpoint_init(struct status_endpoint *e, struct controller *c, struct kube_api *api,
                          const char *audience)
{
	const struct status_sources src = {.job = controller_job,
	                                   .pod = controller_pod,
	                                   .report = to_controller,
	                                   .reports = &c->reports,
	                                   .ctx = c};

	status_endpoint_init_sources(e, &src, api, audience);
}

void status_endpoint_init_sources(struct status_endpoint *e, const struct status_sources *src,
                                  struct kube_api *api, const char *audience)
{
	memset(e, 0, sizeof(*e));
	e->src = *src;
	e->api = api;
	e->audience = audience != NULL && audience[0] ? audience : REPORT_AUDIENCE;
	report_reviews_init(&e->reviews);
	pthread_mutex_init(&e->review_lock, NULL);
	ratelimit_init(&e->review_rate, STATUS_REVIEW_BURST, STATUS_REVIEW_REFILL_MS);
}

void status_endpoint_release(struct status_endpoint *e)
{
	if (e == NULL)
		return;
	report_reviews_release(&e->reviews);
	if (e->review_rate.burst > 0)
		pthread_mutex_destroy(&e->review_lock);
}

/* --- The path --- */

/* Whether s[0..n) is a name the API server allows (an RFC 1123 subdomain:
 * lower-case letters, digits, '-' and '.'), and fits max. */
static int dns_name(const char *s, size_t n, size_t max)
{
	if (n == 0 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '.'))
			return 0;
	return 1;
}

int status_endpoint_path(const char *url, char *ns, char *name)
{
	static const char mid[] = "/" JOB_PLURAL "/", tail[] = "/status";
	const char *p = url, *slash;
	size_t n;

	if (strncmp(p, PATH_PREFIX, sizeof(PATH_PREFIX) - 1) != 0)
		return -1;
	p += sizeof(PATH_PREFIX) - 1;
	slash = strchr(p, '/');
	if (slash == NULL || !dns_name(p, (size_t)(slash - p), 63))
		return -1;
	memcpy(ns, p, (size_t)(slash - p));
	ns[slash - p] = '\0';
	if (strncmp(slash, mid, sizeof(mid) - 1) != 0)
		return -1;
	p = slash + sizeof(mid) - 1;
	slash = strchr(p, '/');
	if (slash == NULL || strcmp(slash, tail) != 0)
		return -1;
	n = (size_t)(slash - p);
	if (!dns_name(p, n, JOB_NAME_LEN - 1))
		return -1;
	memcpy(name, p, n);
	name[n] = '\0';
	return 0;
}

/* --- Answers --- */

/* A Status, as the API server's responsewriters write one. */
static void reply(struct status_reply *out, unsigned int code, const char *reason,
                  const char *message, const char *name, int retry_after_s)
{
	cJSON *o = json_out_new(), *details;

	json_out_str(o, "kind", "Status");
	json_out_str(o, "apiVersion", "v1");
	json_out_obj(o, "metadata");
	json_out_str(o, "status", code < 300 ? "Success" : "Failure");
	if (message != NULL)
		json_out_str(o, "message", message);
	if (reason != NULL)
		json_out_str(o, "reason", reason);
	if (name != NULL || retry_after_s > 0) {
		details = json_out_obj(o, "details");
		if (name != NULL) {
			json_out_str(details, "name", name);
			json_out_str(details, "group", JOB_GROUP);
			json_out_str(details, "kind", JOB_PLURAL);
		}
		if (retry_after_s > 0)
			json_out_num(details, "retryAfterSeconds", retry_after_s);
	}
	json_out_num(o, "code", code);
	out->status = code;
	out->retry_after_s = retry_after_s;
	out->body = cJSON_PrintUnformatted(o);
	if (out->body == NULL)
		die("out of memory writing a Status");
	cJSON_Delete(o);
}

/* --- The token --- */

static long long wall_s(void)
{
	return (long long)time(NULL);
}

/* The review of token: cached, or asked of the API server. Returns 0, or
 * -1 with a message when no review could be made. */
static int reviewed(struct status_endpoint *e, const char *token, struct token_review *r, char *err)
{
	static const struct kube_opts opts = {
	    .timeout_ms = REVIEW_TIMEOUT_MS, .once = 1, .unguarded = 1};
	struct kube_result res = {0};
	char path[KUBE_PATH_LEN];
	cJSON *req, *answer = NULL;
	long long suppressed;
	int rc, allowed;

	if (report_reviews_get(&e->reviews, token, wall_s(), r))
		return 0;
	pthread_mutex_lock(&e->review_lock);
	allowed = ratelimit_allow(&e->review_rate, timers_now_ms(), &suppressed);
	pthread_mutex_unlock(&e->review_lock);
	if (!allowed)
		return 1;
	if (kube_path(path, "authentication.k8s.io", "v1", "", "tokenreviews", NULL) < 0)
		return err_set(err, "tokenreviews: path too long");
	req = report_review_request(token, e->audience);
	/* Not a write of state: past the leader's write guard. */
	rc = kube_send(e->api, "POST", path, req, &opts, &answer, &res, err);
	cJSON_Delete(req);
	if (rc == 0)
		rc = report_review_parse(r, answer, e->audience, err);
	cJSON_Delete(answer);
	if (rc == 0)
		report_reviews_put(&e->reviews, token, wall_s(), r);
	return rc;
}

/* --- One request --- */

static void count(unsigned long *n)
{
	__atomic_fetch_add(n, 1, __ATOMIC_RELAXED);
}

/* Whether the token's bearer may report for the job: replies and returns
 * -1 when not. */
static int authorize(struct status_endpoint *e, const char *authorization, const struct job *j,
                     char *chief, struct status_reply *out)
{
	struct token_review r;
	char err[ERR_LEN], why[ERR_LEN];
	enum report_verdict v;
	cJSON *pod;
	int rc;

	if (authorization == NULL || strncmp(authorization, BEARER, sizeof(BEARER) - 1) != 0 ||
	    authorization[sizeof(BEARER) - 1] == '\0') {
		count(&e->unauthorized);
		reply(out, 401, "Unauthorized", "Unauthorized", NULL, 0);
		return -1;
	}
	rc = reviewed(e, authorization + sizeof(BEARER) - 1, &r, err);
	if (rc < 0) {
		count(&e->unavailable);
		log_warn("job %s/%s: a report's token could not be reviewed: %s", j->ns, j->name,
		         err);
		reply(out, 503, "ServiceUnavailable", "the token could not be reviewed", NULL, 1);
		return -1;
	}
	if (rc == 1) {
		count(&e->limited);
		reply(out, 429, "TooManyRequests", "too many new tokens; try again in 1 s", NULL,
		      1);
		return -1;
	}
	pod = r.pod_name[0] ? e->src.pod(e->src.ctx, j->ns, r.pod_name) : NULL;
	v = report_decide(&r, j, pod, why);
	cJSON_Delete(pod);
	if (v == REPORT_ALLOW) {
		snprintf(chief, TRAINING_UID_LEN, "%s", r.pod_uid);
		return 0;
	}
	/* The API server says only "Unauthorized" to a bad token; the reason
	 * goes to the operator's log, where the job's owner can ask. */
	log_debug("job %s/%s: a report refused: %s", j->ns, j->name, why);
	if (v == REPORT_UNAUTHORIZED) {
		count(&e->unauthorized);
		reply(out, 401, "Unauthorized", "Unauthorized", NULL, 0);
	} else {
		char msg[ERR_LEN + JOB_NAME_LEN + 64];

		count(&e->forbidden);
		snprintf(msg, sizeof(msg), "%s: may not report the training of job '%s'", why,
		         j->name);
		reply(out, 403, "Forbidden", msg, j->name, 0);
	}
	return -1;
}

/* The job named, from the cache, into j (its object into *obj, which the
 * caller deletes). Replies and returns -1 when there is none. */
static int find_job(struct status_endpoint *e, const char *ns, const char *name, struct job *j,
                    cJSON **obj, struct status_reply *out)
{
	char err[ERR_LEN], msg[JOB_NAME_LEN + 64];

	*obj = e->src.job(e->src.ctx, ns, name);
	if (*obj != NULL && job_parse(j, *obj, err) == 0)
		return 0;
	cJSON_Delete(*obj);
	*obj = NULL;
	snprintf(msg, sizeof(msg), JOB_PLURAL "." JOB_GROUP " \"%s\" not found", name);
	reply(out, 404, "NotFound", msg, name, 0);
	return -1;
}

static void take(struct status_endpoint *e, const struct job *j, const char *chief,
                 const char *body, size_t len, struct status_reply *out)
{
	struct training_status t;
	char now[TIMEFMT_LEN], err[ERR_LEN], key[WORKQUEUE_KEY_LEN];

	timefmt_now(now);
	if (training_report_parse(&t, body, len, now, err) < 0) {
		count(&e->bad);
		if (len > TRAINING_REPORT_MAX)
			reply(out, 413, "RequestEntityTooLarge", err, NULL, 0);
		else
			reply(out, 400, "BadRequest", err, NULL, 0);
		return;
	}
	snprintf(t.chief, sizeof(t.chief), "%s", chief);
	job_key(j, key, sizeof(key));
	e->src.report(e->src.ctx, key, j->uid, &t);
	count(&e->accepted);
	reply(out, 200, NULL, NULL, NULL, 0);
}

void status_endpoint_handle(struct status_endpoint *e, const char *method, const char *url,
                            const char *authorization, const char *body, size_t len,
                            struct status_reply *out)
{
	char ns[JOB_NAME_LEN], name[JOB_NAME_LEN], key[WORKQUEUE_KEY_LEN], msg[128];
	char chief[TRAINING_UID_LEN] = "";
	cJSON *obj = NULL;
	long long wait;
	struct job j;

	memset(out, 0, sizeof(*out));
	if (status_endpoint_path(url, ns, name) < 0) {
		reply(out, 404, "NotFound", "the server could not find the requested resource",
		      NULL, 0);
		return;
	}
	if (strcmp(method, "POST") != 0) {
		reply(out, 405, "MethodNotAllowed",
		      "the server does not allow this method on the requested resource", NULL, 0);
		return;
	}
	if (e->active != NULL && !e->active(e->active_ctx)) {
		count(&e->unavailable);
		reply(out, 503, "ServiceUnavailable",
		      "this replica of the operator is not the leader", NULL, 1);
		return;
	}
	if (find_job(e, ns, name, &j, &obj, out) < 0)
		return;
	job_key(&j, key, sizeof(key));
	if (authorize(e, authorization, &j, chief, out) < 0)
		goto out;
	/* The job's rate counts its chief's reports only: nobody else's
	 * requests can use up its budget. */
	wait = reports_admit(e->src.reports, key, timers_now_ms());
	if (wait > 0) {
		int s = (int)((wait + 999) / 1000);

		count(&e->limited);
		snprintf(msg, sizeof(msg), "too many reports; try again in %d s", s);
		reply(out, 429, "TooManyRequests", msg, NULL, s);
		goto out;
	}
	take(e, &j, chief, body, len, out);
out:
	job_release(&j);
	cJSON_Delete(obj);
}
