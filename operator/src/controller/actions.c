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
#include "timers.h"

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
	if (kube_path(path, JOB_GROUP, JOB_VERSION, j->ns, JOB_PLURAL, j->name) < 0 ||
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

/* --- creates --- */

/* What an answer says became of a create: created, surely not created (a
 * 4xx: the request was refused as a whole), or unknown (no answer, a
 * 5xx: the server may have stored it before it failed; or a 4xx after
 * such a try, which may have been the one that created it). */
static enum create_result answer_of(int rc, const struct kube_result *res)
{
	if (rc == 0)
		return CREATE_DONE;
	return res->status >= 400 && res->status < 500 && !res->maybe_applied ? CREATE_REFUSED
	                                                                      : CREATE_UNKNOWN;
}

/* A refusal: counted, and a namespace being deleted said (nothing more is
 * to be done there). what: JOB_OBJECTS for a pod. */
static void refused(const struct actions_ctx *ctx, const struct job *j, int what,
                    const struct kube_result *res)
{
	if (ctx->counters)
		add(&ctx->counters->refused[what], 1);
	if (strcmp(res->cause, "NamespaceTerminating") == 0 && ctx->namespace_terminating) {
		if (!*ctx->namespace_terminating)
			log_info("job %s/%s: namespace %s is being deleted; nothing more is done "
			         "for its jobs",
			         j->ns, j->name, j->ns);
		*ctx->namespace_terminating = 1;
	}
}

/* Creates obj in collection, *out the object made (when out is not
 * NULL). Returns 0, 1 for 409 AlreadyExists (the name is taken), -1 with
 * err and the answer in *res. */
static int create(const struct actions_ctx *ctx, const char *group, const char *ns,
                  const char *plural, const cJSON *obj, cJSON **out, struct kube_result *res,
                  char *err)
{
	char path[KUBE_PATH_LEN];

	if (kube_path(path, group, "v1", ns, plural, NULL) < 0)
		return err_set(err, "create %s in '%s': path too long", plural, ns);
	if (kube_create(ctx->api, path, obj, out, res, err) == 0)
		return 0;
	return res->status == 409 && strcmp(res->reason, "AlreadyExists") == 0 ? 1 : -1;
}

/* Whose is the name a create found taken: 1 the job's own (the caches
 * lag, or a pod's namesake is still terminating), 0 another's (described
 * in msg, CREATE_MESSAGE_LEN), -1 with err when it cannot be read (the
 * create is then unknown). */
static int name_is_ours(const struct actions_ctx *ctx, const struct job *j, const char *group,
                        const char *plural, const char *kind, const char *name, char *msg,
                        char *err)
{
	char path[KUBE_PATH_LEN];
	struct kube_result res = {0};
	cJSON *obj = NULL;
	int ours;

	if (kube_path(path, group, "v1", j->ns, plural, name) < 0)
		return err_set(err, "get %s '%s': path too long", plural, name);
	if (kube_get(ctx->api, path, &obj, &res, err) < 0)
		return -1; /* a 404: it went meanwhile; the next pass creates it */
	ours = pod_spec_owned(obj, j);
	cJSON_Delete(obj);
	if (!ours)
		snprintf(
		    msg, CREATE_MESSAGE_LEN,
		    "a %s named \"%s\" already exists in namespace %s and is not owned by this "
		    "job; the operator never uses what it did not make: delete that %s, or "
		    "give the job another name",
		    kind, name, j->ns, kind);
	return ours;
}

/* create() of the job's object what, in its collection. */
static int create_in(const struct actions_ctx *ctx, const struct job *j, enum job_object what,
                     const cJSON *obj, cJSON **made, struct kube_result *res, char *err)
{
	switch (what) {
	case OBJ_SECRET:
		return create(ctx, "", j->ns, "secrets", obj, made, res, err);
	case OBJ_CONFIG_MAP:
	case OBJ_STATUS_CA:
		return create(ctx, "", j->ns, "configmaps", obj, made, res, err);
	case OBJ_SERVICE:
		return create(ctx, "", j->ns, "services", obj, made, res, err);
	case OBJ_NETWORK_POLICY:
	case JOB_OBJECTS:
		break;
	}
	return create(ctx, "networking.k8s.io", j->ns, "networkpolicies", obj, made, res, err);
}

/* name_is_ours() for the objects with names of their own (the Secret and
 * ConfigMap have generated ones, which no one can take). */
static int object_is_ours(const struct actions_ctx *ctx, const struct job *j, enum job_object what,
                          const char *name, char *msg, char *err)
{
	if (what == OBJ_SERVICE)
		return name_is_ours(ctx, j, "", "services", "Service", name, msg, err);
	return name_is_ours(ctx, j, "networking.k8s.io", "networkpolicies", "NetworkPolicy", name,
	                    msg, err);
}

static cJSON *object_build(const struct job *j, enum job_object what, char *err)
{
	unsigned char key[RING_KEY_BYTES];
	cJSON *obj;

	switch (what) {
	case OBJ_SECRET:
		if (RAND_bytes(key, sizeof(key)) != 1) {
			err_set(err, "RAND_bytes: no random ring key");
			return NULL;
		}
		obj = pod_spec_secret(j, key, sizeof(key));
		OPENSSL_cleanse(key, sizeof(key));
		return obj;
	case OBJ_CONFIG_MAP:
		return pod_spec_tf_config_map(j, err);
	case OBJ_STATUS_CA:
		return pod_spec_status_ca_map(j);
	case OBJ_SERVICE:
		return pod_spec_service(j);
	case OBJ_NETWORK_POLICY:
	case JOB_OBJECTS:
		break;
	}
	return pod_spec_network_policy(j);
}

/* The API's words of a refused create of a generated name, said with the
 * name's prefix instead of the name the server made up (a new one each
 * try): the same refusal reads the same, and is told once. Into out
 * (CREATE_MESSAGE_LEN). */
static void stable_message(char *out, const struct kube_result *res, const char *prefix)
{
	const char *at = res->name[0] ? strstr(res->message, res->name) : NULL;

	if (at == NULL || strncmp(res->name, prefix, strlen(prefix)) != 0) {
		/* Cut to fit, as a condition's message is. */
		snprintf(out, CREATE_MESSAGE_LEN, "%.*s", CREATE_MESSAGE_LEN - 1, res->message);
		return;
	}
	snprintf(out, CREATE_MESSAGE_LEN, "%.*s%s%s", (int)(at - res->message), res->message,
	         prefix, at + strlen(res->name));
}

/* Creates the job's object what; a generated name goes into st. Returns
 * 0 when the object is there, -1 with err when it is not (refused,
 * failed, or its name taken by another's). */
static int create_object(const struct actions_ctx *ctx, const struct job *j, enum job_object what,
                         struct job_status *st, const char *key, char *err)
{
	const char *kind = pod_spec_object_kind(what);
	char name[JOB_NAME_LEN], taken[CREATE_MESSAGE_LEN] = "";
	struct kube_result res = {0};
	enum create_result result;
	cJSON *obj = object_build(j, what, err), *made = NULL;
	int rc;

	if (obj == NULL)
		return err_prefix(err, "job %s: %s", key, kind);
	pod_spec_object_name(j, what, name);
	rc = create_in(ctx, j, what, obj, &made, &res, err);
	cJSON_Delete(obj);
	result = answer_of(rc, &res);
	if (rc == 1) {
		/* Only the Service and NetworkPolicy have names of their own. */
		int ours = object_is_ours(ctx, j, what, name, taken, err);
		result = ours > 0 ? CREATE_DONE : ours == 0 ? CREATE_NOT_OWNED : CREATE_UNKNOWN;
		rc = ours > 0 ? 0 : -1;
		if (ours == 0)
			err_set(err, "%s", taken);
	}
	if (rc == 0 && made != NULL &&
	    (what == OBJ_SECRET || what == OBJ_CONFIG_MAP || what == OBJ_STATUS_CA)) {
		const cJSON *meta = cJSON_GetObjectItemCaseSensitive(made, "metadata");
		const cJSON *given = cJSON_GetObjectItemCaseSensitive(meta, "name");
		char *to = what == OBJ_SECRET       ? st->ring_key_secret
		           : what == OBJ_CONFIG_MAP ? st->tf_config_map
		                                    : st->status_ca_map;
		if (cJSON_IsString(given) && strlen(given->valuestring) < JOB_NAME_LEN) {
			snprintf(to, JOB_NAME_LEN, "%s", given->valuestring);
			snprintf(name, sizeof(name), "%s", given->valuestring);
		} else {
			rc = err_set(err, "the API server gave the %s no name", kind);
			result = CREATE_UNKNOWN;
		}
	}
	cJSON_Delete(made);
	if (result == CREATE_REFUSED) {
		refused(ctx, j, what, &res);
		stable_message(taken, &res, name);
	}
	create_outcomes_record_object(
	    ctx->outcomes, key, what, result,
	    result == CREATE_NOT_OWNED || result == CREATE_REFUSED ? taken : NULL);
	if (rc < 0)
		return err_prefix(err, "job %s: create %s", key, kind);
	log_info("job %s: created %s %s", key, kind, name);
	return 0;
}

/* --- pods --- */

static int create_pod(const struct actions_ctx *ctx, const struct job *j, const cJSON *job_obj,
                      const struct action *a, const char *key, char *err)
{
	cJSON *pod = pod_spec_pod(j, a->index, a->attempt, err);
	char taken[CREATE_MESSAGE_LEN] = "", msg[JOB_MESSAGE_LEN];
	struct kube_result res = {0};
	enum create_result result;
	int rc;

	if (pod == NULL)
		return -1;
	expectations_expect_create(ctx->expect, key, a->name, timers_now_ms());
	rc = create(ctx, "", j->ns, "pods", pod, NULL, &res, err);
	cJSON_Delete(pod);
	result = answer_of(rc, &res);
	if (rc == 1) {
		int ours = name_is_ours(ctx, j, "", "pods", "Pod", a->name, taken, err);
		/* Its own namesake still terminating: the DELETED event brings
		 * the job back, and nothing was created. */
		result = ours > 0    ? CREATE_NAME_BUSY
		         : ours == 0 ? CREATE_NOT_OWNED
		                     : CREATE_UNKNOWN;
		if (ours == 0)
			err_set(err, "%s", taken);
	}
	if (result == CREATE_REFUSED)
		refused(ctx, j, JOB_OBJECTS, &res);
	create_outcomes_record(ctx->outcomes, key, a->index, a->attempt, result,
	                       result == CREATE_NOT_OWNED ? taken
	                       : result == CREATE_REFUSED ? res.message
	                                                  : NULL);
	if (rc != 0) {
		expectations_create_failed(ctx->expect, key, a->name);
		if (rc < 0 && (res.status == 422 || res.status == 400) && ctx->refused) {
			snprintf(ctx->refused, ERR_LEN,
			         "the API server refused worker pod %.63s: %.400s", a->name,
			         res.message[0] ? res.message : err);
			return -1;
		}
		if (result == CREATE_NAME_BUSY) {
			log_info("job %s: pod %s still terminating; waiting for it to go", key,
			         a->name);
			return 0;
		}
		return err_prefix(err, "job %s: create pod %s", key, a->name);
	}
	expectations_create_answered(ctx->expect, key, a->name, timers_now_ms());
	if (ctx->counters)
		add(&ctx->counters->pods_created, 1);
	log_info("job %s: created pod %s (attempt %ld)", key, a->name, a->attempt);
	snprintf(msg, sizeof(msg), "created pod %s (worker %d, attempt %ld)", a->name, a->index,
	         a->attempt);
	if (event_recorder_emit(ctx->events, ctx->api, j, job_obj, EVENT_NORMAL, "CreatedPod", msg,
	                        err) < 0)
		log_warn("job %s: event CreatedPod: %s", key, err);
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
		return res.status == 409 ? 0 : err_prefix(err, "job %s: delete pod", key);
	}
	expectations_delete_answered(ctx->expect, key, a->uid, timers_now_ms());
	if (ctx->counters)
		add(&ctx->counters->pods_deleted, 1);
	log_info("job %s: deleted pod %s", key, a->name);
	return 0;
}

/* --- events and the job --- */

static void write_event(const struct actions_ctx *ctx, const struct job *j, const cJSON *job_obj,
                        const struct action *a, const char *key)
{
	char err[ERR_LEN];

	if (event_recorder_emit(ctx->events, ctx->api, j, job_obj, a->event_type, a->reason,
	                        a->message, err) < 0)
		log_warn("job %s: event %s: %s", key, a->reason, err);
	if (strcmp(a->event_type, EVENT_WARNING) == 0)
		log_warn("job %s: %s: %s", key, a->reason, a->message);
	else
		log_info("job %s: %s: %s", key, a->reason, a->message);
}

static int delete_job(const struct actions_ctx *ctx, const struct job *j, char *err)
{
	char path[KUBE_PATH_LEN];
	struct kube_result res = {0};

	if (kube_path(path, JOB_GROUP, JOB_VERSION, j->ns, JOB_PLURAL, j->name) < 0)
		return err_set(err, "delete job '%s/%s': path too long", j->ns, j->name);
	if (kube_delete(ctx->api, path, j->uid, "Background", -1, 1, &res, err) < 0)
		return res.status == 409 ? 0 : -1;
	log_info("job %s/%s: deleted: its ttlSecondsAfterFinished is over", j->ns, j->name);
	return 0;
}

/* --- the order --- */

/* Keeps the first failure's message in first (ERR_LEN) and says the pass
 * failed. */
static void failed(int *rc, char *first, const char *err)
{
	if (*rc == 0)
		snprintf(first, ERR_LEN, "%s", err);
	*rc = -1;
}

/* Step 1: the objects. Returns whether every one is there now. */
static int make_objects(const struct actions_ctx *ctx, const struct job *j,
                        const struct reconcile_output *out, struct job_status *st, const char *key,
                        int *rc, char *first)
{
	char err[ERR_LEN];
	int all = 1;

	for (int k = 0; k < out->nactions; k++) {
		const struct action *a = &out->actions[k];
		if (a->kind == ACT_CREATE_OBJECT &&
		    create_object(ctx, j, a->object, st, key, err) < 0) {
			failed(rc, first, err);
			all = 0;
		}
	}
	return all;
}

/* Step 3: pods, then the Events and the job's end. Pod creates are made
 * from j with the status just written (the names of its objects). */
static void touch_pods(const struct actions_ctx *ctx, const struct job *j, const cJSON *job_obj,
                       const struct reconcile_output *out, const struct job_status *st, int creates,
                       const char *key, int *rc, char *first)
{
	struct job jw = *j;
	char err[ERR_LEN];

	jw.status = *st; /* borrowed: never released through jw */
	for (int k = 0; k < out->nactions; k++) {
		const struct action *a = &out->actions[k];
		int r = 0;
		if (a->kind == ACT_CREATE_POD && creates)
			r = create_pod(ctx, &jw, job_obj, a, key, err);
		else if (a->kind == ACT_DELETE_POD)
			r = delete_pod(ctx, j, a, key, err);
		if (r < 0)
			failed(rc, first, err);
	}
	for (int k = 0; k < out->nactions; k++) {
		const struct action *a = &out->actions[k];
		if (a->kind == ACT_EVENT)
			write_event(ctx, j, job_obj, a, key);
		else if (a->kind == ACT_DELETE_JOB && delete_job(ctx, j, err) < 0)
			failed(rc, first, err);
	}
}

int actions_run(const struct actions_ctx *ctx, const struct job *j, const cJSON *job_obj,
                const struct reconcile_output *out, char *err)
{
	char key[2 * JOB_NAME_LEN], first[ERR_LEN] = "";
	struct job_status st;
	int rc = 0, objects;

	job_key(j, key, sizeof(key));
	job_status_copy(&st, &out->status);
	objects = make_objects(ctx, j, out, &st, key, &rc, first);
	if (!objects) {
		/* No pod is created without the objects it relies on: those
		 * creates are not sent, and the status must not say they were. */
		for (int k = 0; k < out->nactions; k++) {
			int i = out->actions[k].index;
			if (out->actions[k].kind == ACT_CREATE_POD && i >= 0 && i < st.nworkers &&
			    i < j->status.nworkers)
				st.sent[i] = j->status.sent[i];
		}
	}
	if (write_status(ctx, j, job_obj, &st, err) < 0) {
		job_status_release(&st);
		return err_prefix(err, "job %s: status", key);
	}
	touch_pods(ctx, j, job_obj, out, &st, objects, key, &rc, first);
	job_status_release(&st);
	if (rc < 0)
		snprintf(err, ERR_LEN, "%s", first);
	return rc;
}
