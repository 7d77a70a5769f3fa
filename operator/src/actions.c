/* actions.c - carrying out what reconcile decided; see actions.h. */
#include "actions.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "events.h"
#include "json_out.h"
#include "log.h"
#include "pod_spec.h"
#include "timefmt.h"
#include "timers.h"

#define MWJ_GROUP   "training.mwj.io"
#define MWJ_VERSION "v1"
#define MWJ_PLURAL  "multiworkerjobs"

static void add(unsigned long *counter, unsigned long n)
{
	atomic_fetch_add_explicit((_Atomic unsigned long *)counter, n, memory_order_relaxed);
}

/* Counts what a status write that went through says happened. */
static void count_status(struct actions_counters *k, const struct job_status *old,
                         const struct job_status *st)
{
	if (k == NULL)
		return;
	if (old->phase == PHASE_NONE && st->phase != PHASE_NONE)
		add(&k->jobs_created, 1);
	if (old->phase != st->phase && st->phase == PHASE_SUCCEEDED)
		add(&k->jobs_succeeded, 1);
	if (old->phase != st->phase && st->phase == PHASE_FAILED)
		add(&k->jobs_failed, 1);
	if (st->preemptions > old->preemptions)
		add(&k->preemptions, (unsigned long)(st->preemptions - old->preemptions));
	if (st->failures > old->failures)
		add(&k->failures, (unsigned long)(st->failures - old->failures));
}

/* --- the status --- */

static int write_status(const struct actions_ctx *ctx, const struct job *j, const cJSON *job_obj,
                        const struct job_status *st, char *err)
{
	cJSON *patch = job_status_patch(&j->status, st), *meta, *written = NULL;
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(job_obj, "metadata"), "resourceVersion");
	char path[KUBE_PATH_LEN];
	struct kube_result res = {0};
	int rc = 0;

	if (patch == NULL)
		return 0;
	if (kube_path(path, MWJ_GROUP, MWJ_VERSION, j->ns, MWJ_PLURAL, j->name) < 0 ||
	    strlen(path) + sizeof("/status") > sizeof(path)) {
		cJSON_Delete(patch);
		return err_set(err, "job '%s/%s': path too long", j->ns, j->name);
	}
	strcat(path, "/status");
	if (cJSON_IsString(rv)) {
		meta = json_out_obj(patch, "metadata");
		json_out_str(meta, "resourceVersion", rv->valuestring);
	}
	if (kube_merge_patch(ctx->api, path, patch, &written, &res, err) < 0) {
		/* A job deleted meanwhile has no status to write. */
		rc = res.status == 404 ? 0 : -1;
	} else {
		count_status(ctx->counters, &j->status, st);
	}
	if (rc == 0 && written && j->status.phase != st->phase) {
		log_info("job %s/%s: phase %s -> %s (restarts %ld: %ld preemptions, %ld failures)",
		         j->ns, j->name, job_phase_name(j->status.phase), job_phase_name(st->phase),
		         st->total_restarts, st->preemptions, st->failures);
	}
	if (ctx->status_result)
		*ctx->status_result = res;
	if (ctx->written && written)
		*ctx->written = written;
	else
		cJSON_Delete(written);
	cJSON_Delete(patch);
	return rc;
}

/* --- objects --- */

/* Creates obj in collection; AlreadyExists is success (created before, or
 * for a pod: its namesake is still terminating, and the watch will show
 * when it is gone). Returns 0, 1 for AlreadyExists, -1 with err (and the
 * answer in *res when res is not NULL). */
static int create(const struct actions_ctx *ctx, const char *group, const char *version,
                  const char *ns, const char *plural, const cJSON *obj, struct kube_result *res,
                  char *err)
{
	char path[KUBE_PATH_LEN];
	struct kube_result own = {0};

	if (res == NULL)
		res = &own;
	if (kube_path(path, group, version, ns, plural, NULL) < 0)
		return err_set(err, "create %s in '%s': path too long", plural, ns);
	if (kube_create(ctx->api, path, obj, NULL, res, err) == 0)
		return 0;
	return res->status == 409 && strcmp(res->reason, "AlreadyExists") == 0 ? 1 : -1;
}

static int create_secret(const struct actions_ctx *ctx, const struct job *j, char *err)
{
	unsigned char key[RING_KEY_BYTES];
	cJSON *secret;
	int rc;

	if (RAND_bytes(key, sizeof(key)) != 1)
		return err_set(err, "job %s/%s: RAND_bytes: no random ring key", j->ns, j->name);
	secret = pod_spec_secret(j, key, sizeof(key));
	OPENSSL_cleanse(key, sizeof(key));
	rc = create(ctx, "", "v1", j->ns, "secrets", secret, NULL, err);
	cJSON_Delete(secret);
	if (rc == 0)
		log_info("job %s/%s: created secret %s-ring-key", j->ns, j->name, j->name);
	return rc < 0 ? -1 : 0;
}

static int create_object(const struct actions_ctx *ctx, const struct job *j, enum action_kind kind,
                         char *err)
{
	cJSON *obj;
	int rc;

	if (kind == ACT_CREATE_SECRET)
		return create_secret(ctx, j, err);
	if (kind == ACT_CREATE_SERVICE) {
		obj = pod_spec_service(j);
		rc = create(ctx, "", "v1", j->ns, "services", obj, NULL, err);
	} else {
		obj = pod_spec_network_policy(j);
		rc = create(ctx, "networking.k8s.io", "v1", j->ns, "networkpolicies", obj, NULL,
		            err);
	}
	cJSON_Delete(obj);
	if (rc == 0)
		log_info("job %s/%s: created %s", j->ns, j->name,
		         kind == ACT_CREATE_SERVICE ? "its headless service"
		                                    : "its network policy");
	return rc < 0 ? -1 : 0;
}

/* An Event on the job; one that cannot be written is logged, and the
 * pass goes on. */
static void emit(const struct actions_ctx *ctx, const struct job *j, const cJSON *job_obj,
                 const char *type, const char *reason, const char *message)
{
	char now[TIMEFMT_LEN], err[ERR_LEN];
	cJSON *ev;

	timefmt_now(now);
	ev = events_build(j, job_obj, type, reason, message, now, ctx->instance);
	if (create(ctx, "", "v1", j->ns, "events", ev, NULL, err) < 0)
		log_warn("job %s/%s: event %s: %s", j->ns, j->name, reason, err);
	cJSON_Delete(ev);
}

/* --- pods --- */

/* What a create's answer says of the pod: created, surely not created (a
 * 4xx: the request was refused as a whole), or unknown (no answer, a
 * 5xx: the server may have stored it before it failed; or a 4xx after
 * such a try, which may have been the one that created it). */
static enum create_result create_result_of(int rc, const struct kube_result *res)
{
	if (rc == 0)
		return CREATE_DONE;
	return res->status >= 400 && res->status < 500 && !res->maybe_applied ? CREATE_REFUSED
	                                                                      : CREATE_UNKNOWN;
}

static int create_pod(const struct actions_ctx *ctx, const struct job *j, const cJSON *job_obj,
                      const struct action *a, const char *key, char *err)
{
	cJSON *pod = pod_spec_pod(j, a->index, a->attempt, err);
	struct kube_result res = {0};
	int rc;

	if (pod == NULL)
		return -1;
	expectations_expect_create(ctx->expect, key, a->name, timers_now_ms());
	rc = create(ctx, "", "v1", j->ns, "pods", pod, &res, err);
	cJSON_Delete(pod);
	if (ctx->outcomes)
		create_outcomes_record(ctx->outcomes, key, a->index, a->attempt,
		                       create_result_of(rc, &res));
	if (rc != 0) {
		expectations_create_failed(ctx->expect, key, a->name);
		if (rc < 0 && (res.status == 422 || res.status == 400) && ctx->refused) {
			snprintf(ctx->refused, ERR_LEN,
			         "the API server refused worker pod %.63s: %.400s", a->name,
			         res.message[0] ? res.message : err);
			return -1;
		}
		if (rc > 0) {
			/* Its namesake is still terminating: the DELETED event
			 * brings the job back. */
			log_info("job %s/%s: pod %s still terminating; waiting for it to go", j->ns,
			         j->name, a->name);
			return 0;
		}
		return -1;
	}
	expectations_create_answered(ctx->expect, key, a->name, timers_now_ms());
	if (ctx->counters)
		add(&ctx->counters->pods_created, 1);
	log_info("job %s/%s: created pod %s (attempt %ld)", j->ns, j->name, a->name, a->attempt);
	char msg[JOB_MESSAGE_LEN];
	snprintf(msg, sizeof(msg), "created pod %s (worker %d, attempt %ld)", a->name, a->index,
	         a->attempt);
	emit(ctx, j, job_obj, EVENT_NORMAL, "CreatedPod", msg);
	return 0;
}

static int delete_pod(const struct actions_ctx *ctx, const struct job *j, const struct action *a,
                      const char *key, char *err)
{
	char path[KUBE_PATH_LEN];
	struct kube_result res = {0};

	if (kube_path(path, "", "v1", j->ns, "pods", a->name) < 0)
		return err_set(err, "delete pod '%s': path too long", a->name);
	expectations_expect_delete(ctx->expect, key, a->uid, timers_now_ms());
	if (kube_delete(ctx->api, path, a->uid, NULL, -1, 1, &res, err) < 0) {
		expectations_delete_failed(ctx->expect, key, a->uid);
		/* A newer pod of that name: the stale decision is dropped. */
		return res.status == 409 ? 0 : -1;
	}
	expectations_delete_answered(ctx->expect, key, a->uid, timers_now_ms());
	if (ctx->counters)
		add(&ctx->counters->pods_deleted, 1);
	log_info("job %s/%s: deleted pod %s", j->ns, j->name, a->name);
	return 0;
}

/* --- events and the job --- */

static void write_event(const struct actions_ctx *ctx, const struct job *j, const cJSON *job_obj,
                        const struct action *a)
{
	emit(ctx, j, job_obj, a->event_type, a->reason, a->message);
	if (strcmp(a->event_type, EVENT_WARNING) == 0)
		log_warn("job %s/%s: %s: %s", j->ns, j->name, a->reason, a->message);
	else
		log_info("job %s/%s: %s: %s", j->ns, j->name, a->reason, a->message);
}

static int delete_job(const struct actions_ctx *ctx, const struct job *j, char *err)
{
	char path[KUBE_PATH_LEN];
	struct kube_result res = {0};

	if (kube_path(path, MWJ_GROUP, MWJ_VERSION, j->ns, MWJ_PLURAL, j->name) < 0)
		return err_set(err, "delete job '%s/%s': path too long", j->ns, j->name);
	if (kube_delete(ctx->api, path, j->uid, "Background", -1, 1, &res, err) < 0)
		return res.status == 409 ? 0 : -1;
	log_info("job %s/%s: deleted: its ttlSecondsAfterFinished is over", j->ns, j->name);
	return 0;
}

int actions_run(const struct actions_ctx *ctx, const struct job *j, const cJSON *job_obj,
                const struct reconcile_output *out, char *err)
{
	char key[2 * JOB_NAME_LEN];

	job_key(j, key, sizeof(key));
	if (write_status(ctx, j, job_obj, &out->status, err) < 0)
		return err_prefix(err, "job %s: status", key);
	for (int k = 0; k < out->nactions; k++) {
		const struct action *a = &out->actions[k];
		int rc = 0;
		switch (a->kind) {
		case ACT_CREATE_SERVICE:
		case ACT_CREATE_SECRET:
		case ACT_CREATE_NETWORK_POLICY:
			rc = create_object(ctx, j, a->kind, err);
			break;
		case ACT_CREATE_POD:
			rc = create_pod(ctx, j, job_obj, a, key, err);
			break;
		case ACT_DELETE_POD:
			rc = delete_pod(ctx, j, a, key, err);
			break;
		case ACT_EVENT:
			write_event(ctx, j, job_obj, a);
			break;
		case ACT_DELETE_JOB:
			rc = delete_job(ctx, j, err);
			break;
		}
		if (rc < 0)
			return err_prefix(err, "job %s: %s", key, reconcile_action_name(a->kind));
	}
	return 0;
}
