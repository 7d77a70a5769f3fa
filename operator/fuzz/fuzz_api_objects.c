/* fuzz_api_objects.c - a libFuzzer target for the decoders of what the API
 * server sends back: job_parse and job_status_parse (job.h), which read a
 * MultiWorkerJob that any user with edit rights writes, pod_view_parse
 * (pod_spec.h), which reads a worker pod, and kube_resp_parse_status
 * (kube_api.h), which reads an error body.
 *
 * Input: one body. It is parsed with cJSON once and the tree handed to
 * each decoder in turn: as a MultiWorkerJob, as a job's status, as a pod of
 * that job; the raw bytes go to kube_resp_parse_status as an error body.
 * Checked beyond "no crash": a job's spec and status lie in the CRD's
 * ranges; a status written as JSON and read back is the same status (no
 * merge patch between the two); a pod's fields lie in range; reason and
 * message taken from an error body are printable lines.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "fuzz/harness.h"
#include "job.h"
#include "json.h"
#include "kube_api.h"
#include "pod_spec.h"

#define STATUS_WORKERS 4 /* worker indices of a status read on its own */

static int terminated(const char *s, size_t n)
{
	return memchr(s, '\0', n) != NULL;
}

static int is_line(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	}
	return 1;
}

/* A status's fields, and its round trip through JSON. */
static void check_status(const struct job_status *s, int nworkers)
{
	struct job_status back;
	cJSON *json, *again, *patch;

	FUZZ_CHECK(s->nworkers == nworkers);
	FUZZ_CHECK(s->phase >= PHASE_NONE && s->phase <= PHASE_SUSPENDED);
	FUZZ_CHECK(s->nconditions >= 0 && s->nconditions <= JOB_CONDITIONS_MAX);
	for (int i = 0; i < s->nconditions; i++) {
		const struct job_condition *c = &s->conditions[i];

		FUZZ_CHECK(c->type[0] != '\0' && terminated(c->type, sizeof(c->type)));
		FUZZ_CHECK(c->status[0] != '\0' && terminated(c->status, sizeof(c->status)));
		FUZZ_CHECK(terminated(c->reason, sizeof(c->reason)));
		FUZZ_CHECK(terminated(c->message, sizeof(c->message)));
		FUZZ_CHECK(job_status_condition(s, c->type) == c);
	}
	FUZZ_CHECK(s->active >= 0 && s->ready >= 0 && s->succeeded >= 0 && s->failed >= 0);
	FUZZ_CHECK(s->total_restarts >= 0 && s->preemptions >= 0 && s->failures >= 0);
	for (int i = 0; i < s->nworkers; i++) {
		FUZZ_CHECK(s->attempts[i] >= -1 && s->sent[i] >= -1);
		FUZZ_CHECK(s->restarting[i] >= CAUSE_NONE && s->restarting[i] <= CAUSE_UNCONFIRMED);
	}
	json = job_status_to_json(s);
	job_status_parse(&back, json, nworkers);
	again = job_status_to_json(&back);
	FUZZ_CHECK(cJSON_Compare(json, again, 1));
	patch = job_status_patch(s, &back);
	FUZZ_CHECK(patch == NULL);
	cJSON_Delete(json);
	cJSON_Delete(again);
	job_status_release(&back);
}

static void check_job(const struct job *j)
{
	FUZZ_CHECK(j->name[0] != '\0' && terminated(j->name, sizeof(j->name)));
	FUZZ_CHECK(j->uid[0] != '\0' && terminated(j->uid, sizeof(j->uid)));
	FUZZ_CHECK(j->ns[0] != '\0' && terminated(j->ns, sizeof(j->ns)));
	FUZZ_CHECK(j->generation >= 0);
	FUZZ_CHECK(j->workers >= 1 && j->workers <= JOB_WORKERS_MAX);
	FUZZ_CHECK(j->port >= 1 && j->port <= 65535);
	FUZZ_CHECK(j->backoff_limit >= 0);
	FUZZ_CHECK(j->active_deadline_s == -1 || j->active_deadline_s >= 1);
	FUZZ_CHECK(j->ttl_after_finished_s >= -1);
	FUZZ_CHECK(j->restart_policy >= RESTART_EXIT_CODE && j->restart_policy <= RESTART_ALWAYS);
	FUZZ_CHECK(j->restart_scope == SCOPE_POD || j->restart_scope == SCOPE_ALL);
	FUZZ_CHECK(j->clean_pod_policy >= CLEAN_RUNNING && j->clean_pod_policy <= CLEAN_NONE);
	FUZZ_CHECK(j->checkpoint_mount[0] == '/');
	FUZZ_CHECK(terminated(j->checkpoint_mount, sizeof(j->checkpoint_mount)));
	FUZZ_CHECK(terminated(j->invalid, sizeof(j->invalid)));
	/* A spec the operator honours has the pod template it builds from. */
	FUZZ_CHECK(j->invalid[0] != '\0' || j->template != NULL);
	check_status(&j->status, j->workers);
}

static void check_pod(const struct pod_view *p)
{
	FUZZ_CHECK(p->name[0] != '\0' && terminated(p->name, sizeof(p->name)));
	FUZZ_CHECK(terminated(p->uid, sizeof(p->uid)));
	FUZZ_CHECK(p->index >= -1 && p->index < JOB_WORKERS_MAX);
	FUZZ_CHECK(p->attempt >= -1 && p->exit_code >= -1);
	FUZZ_CHECK(p->phase >= POD_PENDING && p->phase <= POD_UNKNOWN);
	FUZZ_CHECK(terminated(p->status_reason, sizeof(p->status_reason)));
	FUZZ_CHECK(terminated(p->reason, sizeof(p->reason)));
	FUZZ_CHECK(terminated(p->waiting_reason, sizeof(p->waiting_reason)));
	FUZZ_CHECK(terminated(p->waiting_message, sizeof(p->waiting_message)));
}

/* The raw bytes as an error body, malloc'd and NUL-terminated as a
 * response's body is. */
static void check_error_body(const uint8_t *data, size_t size)
{
	struct kube_resp resp = {.status = 500, .retry_after_s = -1};

	resp.body = xmalloc(size + 1);
	if (size > 0)
		memcpy(resp.body, data, size);
	resp.body[size] = '\0';
	resp.body_len = size;
	kube_resp_parse_status(&resp);
	FUZZ_CHECK(terminated(resp.reason, sizeof(resp.reason)) && is_line(resp.reason));
	FUZZ_CHECK(terminated(resp.message, sizeof(resp.message)) && is_line(resp.message));
	FUZZ_CHECK(resp.retry_after_s >= -1 && resp.retry_after_s <= 3600);
	kube_resp_release(&resp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[ERR_LEN] = "";
	struct job_status status;
	struct pod_view pod;
	struct job job;
	int have_job;
	cJSON *root;

	check_error_body(data, size);
	root = json_parse((const char *)data, size, err);
	if (root == NULL)
		return 0;
	have_job = job_parse(&job, root, err) == 0;
	if (have_job)
		check_job(&job);
	else
		FUZZ_CHECK(strncmp(err, "MultiWorkerJob: ", 16) == 0 &&
		           job.status.attempts == NULL);
	job_status_parse(&status, root, STATUS_WORKERS);
	check_status(&status, STATUS_WORKERS);
	job_status_release(&status);
	if (pod_view_parse(&pod, have_job ? &job : NULL, root, err) == 0)
		check_pod(&pod);
	else
		FUZZ_CHECK(err[0] != '\0');
	if (have_job)
		job_release(&job);
	cJSON_Delete(root);
	return 0;
}
