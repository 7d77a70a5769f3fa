/* job_status.c - the MultiWorkerJob's status: read back (tolerantly: a user
 * may edit it), written as JSON, diffed into a merge patch, and its
 * conditions set as Kubernetes sets them. */
#include "job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "json_in.h"
#include "json_out.h"
#include "timefmt.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define EXACT_MAX   9007199254740992LL /* 2^53: what a JSON number holds */
#define INT_MAX_LL  2147483647LL
#define ATTEMPT_MAX 1000000000000000LL

static const char *const cause_names[] = {"",      "Failure", "Preemption",
                                          "Scope", "Resume",  "Unconfirmed"};

/* --- Reading --- */

/* obj.name as an integer in [min, max], or dflt when absent or wrong. */
static long long num_or(const cJSON *obj, const char *name, long long min, long long max,
                        long long dflt)
{
	char ignored[ERR_LEN];
	int64_t v = dflt;

	if (!cJSON_IsObject(obj) || json_opt_i64(obj, "", name, min, max, &v, ignored) < 0)
		return dflt;
	return v;
}

/* Copies s into out (n bytes) when it fits whole, else leaves out "": a
 * name or a word cut short would be a different one. */
static void copy_whole(char *out, size_t n, const char *s)
{
	out[0] = '\0';
	if (s != NULL && strlen(s) < n)
		memcpy(out, s, strlen(s) + 1);
}

/* A time that timefmt_parse() reads, else "". */
static void copy_time(char *out, size_t n, const char *s)
{
	long long t;

	copy_whole(out, n, s);
	if (out[0] != '\0' && timefmt_parse(out, &t) < 0)
		out[0] = '\0';
}

static void conditions_parse(struct job_status *s, const cJSON *list)
{
	const cJSON *it;

	if (!cJSON_IsArray(list))
		return;
	cJSON_ArrayForEach(it, list)
	{
		struct job_condition *c = &s->conditions[s->nconditions];

		if (s->nconditions == JOB_CONDITIONS_MAX)
			break;
		copy_whole(c->type, sizeof(c->type), json_in_str(it, "type"));
		copy_whole(c->status, sizeof(c->status), json_in_str(it, "status"));
		/* One entry per type, as the CRD's list-map has them. */
		if (c->type[0] == '\0' || c->status[0] == '\0' ||
		    job_status_condition(s, c->type) != NULL) {
			memset(c, 0, sizeof(*c));
			continue;
		}
		json_in_copy_cut(c->reason, sizeof(c->reason), json_in_str(it, "reason"));
		json_in_copy_cut(c->message, sizeof(c->message), json_in_str(it, "message"));
		copy_time(c->last_transition, sizeof(c->last_transition),
		          json_in_str(it, "lastTransitionTime"));
		s->nconditions++;
	}
}

static enum restart_cause cause_parse(const char *name)
{
	for (size_t i = 1; name != NULL && i < ARRAY_LEN(cause_names); i++) {
		if (strcmp(name, cause_names[i]) == 0)
			return (enum restart_cause)i;
	}
	return CAUSE_NONE;
}

/* An array of attempts (-1 or more) into to[0..nworkers); an entry
 * missing or unreadable stays as it is (-1). */
static void attempts_parse(long *to, int nworkers, const cJSON *list)
{
	const cJSON *it;
	int i = 0;

	if (!cJSON_IsArray(list))
		return;
	cJSON_ArrayForEach(it, list)
	{
		if (i == nworkers)
			break;
		if (cJSON_IsNumber(it) && it->valuedouble >= -1 && it->valuedouble <= ATTEMPT_MAX &&
		    it->valuedouble == (double)(long)it->valuedouble)
			to[i] = (long)it->valuedouble;
		i++;
	}
}

static void bookkeeping_parse(struct job_status *s, const cJSON *status)
{
	const cJSON *restarting = cJSON_GetObjectItemCaseSensitive(status, "restartingWorkers");
	const cJSON *it;

	attempts_parse(s->attempts, s->nworkers,
	               cJSON_GetObjectItemCaseSensitive(status, "workerAttempts"));
	attempts_parse(s->sent, s->nworkers,
	               cJSON_GetObjectItemCaseSensitive(status, "sentAttempts"));
	if (!cJSON_IsArray(restarting))
		restarting = NULL;
	cJSON_ArrayForEach(it, restarting)
	{
		long long index = num_or(it, "index", 0, (long long)s->nworkers - 1, -1);

		if (index >= 0)
			s->restarting[index] = cause_parse(json_in_str(it, "cause"));
	}
}

static enum job_phase phase_parse(const char *name)
{
	for (int p = PHASE_PENDING; name != NULL && p <= PHASE_SUSPENDED; p++) {
		if (strcmp(name, job_phase_name((enum job_phase)p)) == 0)
			return (enum job_phase)p;
	}
	return PHASE_NONE;
}

void job_status_parse(struct job_status *s, const cJSON *status, int nworkers)
{
	const cJSON *workers = cJSON_GetObjectItemCaseSensitive(status, "workers");
	const cJSON *restarts = cJSON_GetObjectItemCaseSensitive(status, "restarts");
	const cJSON *failure = cJSON_GetObjectItemCaseSensitive(status, "lastFailure");

	memset(s, 0, sizeof(*s));
	s->nworkers = nworkers < 0 ? 0 : nworkers > JOB_WORKERS_MAX ? JOB_WORKERS_MAX : nworkers;
	if (s->nworkers > 0) {
		s->attempts = xcalloc((size_t)s->nworkers, sizeof(*s->attempts));
		s->restarting = xcalloc((size_t)s->nworkers, sizeof(*s->restarting));
		s->sent = xcalloc((size_t)s->nworkers, sizeof(*s->sent));
	}
	for (int i = 0; i < s->nworkers; i++)
		s->attempts[i] = s->sent[i] = -1;
	if (!cJSON_IsObject(status))
		return;
	s->phase = phase_parse(json_in_str(status, "phase"));
	conditions_parse(s, cJSON_GetObjectItemCaseSensitive(status, "conditions"));
	s->active = (int)num_or(workers, "active", 0, INT_MAX_LL, 0);
	s->ready = (int)num_or(workers, "ready", 0, INT_MAX_LL, 0);
	s->succeeded = (int)num_or(workers, "succeeded", 0, INT_MAX_LL, 0);
	s->failed = (int)num_or(workers, "failed", 0, INT_MAX_LL, 0);
	s->total_restarts = (long)num_or(restarts, "total", 0, EXACT_MAX, 0);
	s->preemptions = (long)num_or(restarts, "preemptions", 0, EXACT_MAX, 0);
	s->failures = (long)num_or(restarts, "failures", 0, EXACT_MAX, 0);
	copy_time(s->start_time, sizeof(s->start_time), json_in_str(status, "startTime"));
	copy_time(s->completion_time, sizeof(s->completion_time),
	          json_in_str(status, "completionTime"));
	s->observed_generation = num_or(status, "observedGeneration", 0, EXACT_MAX, 0);
	copy_whole(s->last_failure_pod, sizeof(s->last_failure_pod), json_in_str(failure, "pod"));
	if (s->last_failure_pod[0] != '\0') {
		s->last_failure_exit_code =
		    (int)num_or(failure, "exitCode", -INT_MAX_LL - 1, INT_MAX_LL, 0);
		json_in_copy_cut(s->last_failure_reason, sizeof(s->last_failure_reason),
		                 json_in_str(failure, "reason"));
	}
	bookkeeping_parse(s, status);
	copy_whole(s->ring_key_secret, sizeof(s->ring_key_secret),
	           json_in_str(status, "ringKeySecret"));
	copy_whole(s->tf_config_map, sizeof(s->tf_config_map), json_in_str(status, "tfConfigMap"));
	copy_whole(s->status_ca_map, sizeof(s->status_ca_map),
	           json_in_str(status, "statusCAConfigMap"));
	training_status_parse(&s->training, cJSON_GetObjectItemCaseSensitive(status, "training"));
}

void job_status_copy(struct job_status *dst, const struct job_status *src)
{
	size_t n = src->nworkers > 0 ? (size_t)src->nworkers : 0;

	*dst = *src;
	dst->attempts = NULL;
	dst->restarting = NULL;
	dst->sent = NULL;
	if (n == 0 || src->attempts == NULL || src->restarting == NULL || src->sent == NULL) {
		dst->nworkers = 0;
		return;
	}
	dst->attempts = xcalloc(n, sizeof(*dst->attempts));
	dst->restarting = xcalloc(n, sizeof(*dst->restarting));
	dst->sent = xcalloc(n, sizeof(*dst->sent));
	memcpy(dst->attempts, src->attempts, n * sizeof(*dst->attempts));
	memcpy(dst->restarting, src->restarting, n * sizeof(*dst->restarting));
	memcpy(dst->sent, src->sent, n * sizeof(*dst->sent));
}

void job_status_release(struct job_status *s)
{
	if (s == NULL)
		return;
	free(s->attempts);
	free(s->restarting);
	free(s->sent);
	s->attempts = NULL;
	s->restarting = NULL;
	s->sent = NULL;
	s->nworkers = 0;
}

/* --- Writing --- */

/* obj.key = value, unless value is "" (Kubernetes omits empty strings). */
static void put_nonempty(cJSON *obj, const char *key, const char *value)
{
	if (value[0] != '\0')
		json_out_str(obj, key, value);
}

static void conditions_to_json(cJSON *status, const struct job_status *s)
{
	cJSON *list;

	if (s->nconditions <= 0)
		return;
	list = json_out_arr(status, "conditions");
	for (int i = 0; i < s->nconditions && i < JOB_CONDITIONS_MAX; i++) {
		const struct job_condition *c = &s->conditions[i];
		cJSON *o = json_out_item(list, NULL, json_out_new());

		json_out_str(o, "type", c->type);
		json_out_str(o, "status", c->status);
		put_nonempty(o, "reason", c->reason);
		put_nonempty(o, "message", c->message);
		put_nonempty(o, "lastTransitionTime", c->last_transition);
	}
}

static void bookkeeping_to_json(cJSON *status, const struct job_status *s)
{
	cJSON *list = NULL;

	if (s->nworkers <= 0 || s->attempts == NULL || s->restarting == NULL || s->sent == NULL)
		return;
	list = json_out_arr(status, "workerAttempts");
	for (int i = 0; i < s->nworkers; i++)
		json_out_num(list, NULL, (double)s->attempts[i]);
	/* Left out until a create is sent, as a job from before it was kept. */
	list = NULL;
	for (int i = 0; i < s->nworkers && list == NULL; i++)
		if (s->sent[i] >= 0)
			list = json_out_arr(status, "sentAttempts");
	for (int i = 0; list != NULL && i < s->nworkers; i++)
		json_out_num(list, NULL, (double)s->sent[i]);
	list = NULL;
	for (int i = 0; i < s->nworkers; i++) {
		cJSON *o;

		if (s->restarting[i] == CAUSE_NONE ||
		    (size_t)s->restarting[i] >= ARRAY_LEN(cause_names))
			continue;
		if (list == NULL)
			list = json_out_arr(status, "restartingWorkers");
		o = json_out_item(list, NULL, json_out_new());
		json_out_num(o, "index", i);
		json_out_str(o, "cause", cause_names[s->restarting[i]]);
	}
}

cJSON *job_status_to_json(const struct job_status *s)
{
	cJSON *o = json_out_new();
	cJSON *sub;

	put_nonempty(o, "phase", job_phase_name(s->phase));
	conditions_to_json(o, s);
	sub = json_out_obj(o, "workers");
	json_out_num(sub, "active", s->active);
	json_out_num(sub, "ready", s->ready);
	json_out_num(sub, "succeeded", s->succeeded);
	json_out_num(sub, "failed", s->failed);
	sub = json_out_obj(o, "restarts");
	json_out_num(sub, "total", (double)s->total_restarts);
	json_out_num(sub, "preemptions", (double)s->preemptions);
	json_out_num(sub, "failures", (double)s->failures);
	put_nonempty(o, "startTime", s->start_time);
	put_nonempty(o, "completionTime", s->completion_time);
	json_out_num(o, "observedGeneration", (double)s->observed_generation);
	if (s->last_failure_pod[0] != '\0') {
		sub = json_out_obj(o, "lastFailure");
		json_out_str(sub, "pod", s->last_failure_pod);
		json_out_num(sub, "exitCode", s->last_failure_exit_code);
		put_nonempty(sub, "reason", s->last_failure_reason);
	}
	bookkeeping_to_json(o, s);
	put_nonempty(o, "ringKeySecret", s->ring_key_secret);
	put_nonempty(o, "tfConfigMap", s->tf_config_map);
	put_nonempty(o, "statusCAConfigMap", s->status_ca_map);
	sub = training_status_to_json(&s->training);
	if (sub != NULL)
		json_out_item(o, "training", sub);
	return o;
}

/* Adds to patch a null for every member of old that patch lacks, at every
 * depth of objects both have: in a merge patch (RFC 7386) a member left
 * out is kept, only null removes it. Arrays are replaced whole. */
static void null_removed(cJSON *patch, const cJSON *old)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, old)
	{
		cJSON *now = cJSON_GetObjectItemCaseSensitive(patch, it->string);

		if (now == NULL)
			json_out_null(patch, it->string);
		else if (cJSON_IsObject(now) && cJSON_IsObject(it))
			null_removed(now, it);
	}
}

cJSON *job_status_patch(const struct job_status *old, const struct job_status *new)
{
	cJSON *before = old != NULL ? job_status_to_json(old) : json_out_new();
	cJSON *after = job_status_to_json(new);
	cJSON *patch = NULL;

	if (!cJSON_Compare(before, after, 1)) {
		null_removed(after, before);
		patch = json_out_new();
		json_out_item(patch, "status", after);
		after = NULL;
	}
	cJSON_Delete(before);
	cJSON_Delete(after);
	return patch;
}

/* --- Conditions --- */

const struct job_condition *job_status_condition(const struct job_status *s, const char *type)
{
	for (int i = 0; i < s->nconditions && i < JOB_CONDITIONS_MAX; i++) {
		if (strcmp(s->conditions[i].type, type) == 0)
			return &s->conditions[i];
	}
	return NULL;
}

void job_status_set_condition(struct job_status *s, const char *type, const char *status,
                              const char *reason, const char *message, const char *now)
{
	struct job_condition *c = (struct job_condition *)job_status_condition(s, type);

	if (c == NULL) {
		/* The operator sets six types; a full list holds a user's own, and
		 * the last of them gives way. */
		if (s->nconditions < JOB_CONDITIONS_MAX)
			s->nconditions++;
		c = &s->conditions[s->nconditions - 1];
		memset(c, 0, sizeof(*c));
		copy_whole(c->type, sizeof(c->type), type);
	}
	if (strcmp(c->status, status) != 0) {
		copy_whole(c->status, sizeof(c->status), status);
		copy_time(c->last_transition, sizeof(c->last_transition), now);
	}
	json_in_copy_cut(c->reason, sizeof(c->reason), reason != NULL ? reason : "");
	json_in_copy_cut(c->message, sizeof(c->message), message != NULL ? message : "");
}
