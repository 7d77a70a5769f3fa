/* controller.c - informers, the work queue and the reconcile threads; see
 * controller.h. */
#include "controller.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "actions.h"
#include "cache_keep.h"
#include "err.h"
#include "job.h"
#include "log.h"
#include "pod_spec.h"
#include "reconcile.h"
#include "sent_pods.h"
#include "timefmt.h"
#include "timers.h"

#define SELECTOR LABEL_MANAGED_BY "=" MANAGED_BY

/* How many times one pass reads the job again after a 409 Conflict. */
#define CONFLICT_RETRIES 3

/* The job as the operator's own last status write returned it, kept until
 * the informer's copy moves past the version that write started from: a
 * pass that runs before the watch shows the write must not decide from
 * the status before it (it would count a restart twice, or recreate a
 * finished job's pods). */
struct written {
	char from_rv[64]; /* the resourceVersion the write was based on */
	cJSON *obj;       /* what the write returned */
};

static void written_free(void *v)
{
	struct written *w = v;

	if (w) {
		cJSON_Delete(w->obj);
		free(w);
	}
}

static const char *resource_version(const cJSON *obj)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion");

	return cJSON_IsString(rv) ? rv->valuestring : "";
}

/* Remembers what a status write of the job key returned. */
static void written_put(struct controller *c, const char *key, const char *from_rv, cJSON *obj)
{
	struct written *w = xcalloc(1, sizeof(*w));

	snprintf(w->from_rv, sizeof(w->from_rv), "%s", from_rv);
	w->obj = obj;
	pthread_mutex_lock(&c->written_lock);
	written_free(strmap_put(&c->written, key, w));
	pthread_mutex_unlock(&c->written_lock);
}

/* The freshest copy of the job: cached (owned by the caller), or the last
 * write's result when the cache still shows the version that write
 * started from. Returns a tree the caller deletes. */
static cJSON *freshest(struct controller *c, const char *key, cJSON *cached)
{
	struct written *w;
	cJSON *out = cached;

	pthread_mutex_lock(&c->written_lock);
	w = strmap_get(&c->written, key);
	if (w && strcmp(w->from_rv, resource_version(cached)) == 0) {
		out = cJSON_Duplicate(w->obj, 1);
		if (out == NULL)
			die("out of memory copying a job");
		cJSON_Delete(cached);
	} else if (w) {
		written_free(strmap_remove(&c->written, key)); /* the cache caught up */
	}
	pthread_mutex_unlock(&c->written_lock);
	return out;
}

static void written_forget(struct controller *c, const char *key)
{
	pthread_mutex_lock(&c->written_lock);
	written_free(strmap_remove(&c->written, key));
	pthread_mutex_unlock(&c->written_lock);
}

/* --- who owns what --- */

static const char *str_member(const cJSON *obj, const char *name)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsString(s) ? s->valuestring : NULL;
}

/* The controller ownerReference of obj when it is a MultiWorkerJob:
 * its name and uid (borrowed), or NULL. */
static const cJSON *job_owner(const cJSON *obj)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *refs = cJSON_GetObjectItemCaseSensitive(meta, "ownerReferences");
	const cJSON *ref;

	cJSON_ArrayForEach(ref, refs)
	{
		const char *kind = str_member(ref, "kind"), *api = str_member(ref, "apiVersion");
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ref, "controller")) && kind &&
		    strcmp(kind, JOB_KIND) == 0 && api &&
		    strncmp(api, JOB_GROUP "/", sizeof(JOB_GROUP)) == 0 &&
		    str_member(ref, "name") && str_member(ref, "uid"))
			return ref;
	}
	return NULL;
}

/* "ns/owner" of an object owned by a job into out. Returns -1 if it is not. */
static int owner_key(const cJSON *obj, char *out, size_t n)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *ref = job_owner(obj);
	const char *ns = str_member(meta, "namespace");

	if (ref == NULL || ns == NULL)
		return -1;
	return (size_t)snprintf(out, n, "%s/%s", ns, str_member(ref, "name")) < n ? 0 : -1;
}

/* --- handlers: what changed -> which job to look at --- */

static int marked_for_deletion(const cJSON *obj)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");

	return cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp") != NULL;
}

static double generation(const cJSON *obj)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(meta, "generation");

	return cJSON_IsNumber(g) ? g->valuedouble : -1;
}

/* Whether an update changed the job's status alone: the same generation
 * (the API server raises it for every change of the spec) and the same
 * deletion state. Such an update, which the operator's own status write
 * makes, gives no reason to look at the job again. */
static int status_only(const cJSON *old, const cJSON *obj)
{
	return old != NULL && generation(old) == generation(obj) &&
	       marked_for_deletion(old) == marked_for_deletion(obj);
}

static void on_job(void *ctx, enum informer_op op, const cJSON *old, const cJSON *obj)
{
	struct controller *c = ctx;
	char key[WORKQUEUE_KEY_LEN];

	if (informer_key(obj, key, sizeof(key)) < 0)
		return;
	if (op == INFORMER_DELETE) {
		const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
		const char *uid = str_member(meta, "uid");
		expectations_forget(&c->expect, key);
		create_outcomes_forget(&c->outcomes, key);
		written_forget(c, key);
		reports_forget(&c->reports, key);
		if (uid != NULL)
			event_recorder_forget(&c->events, uid);
		return;
	}
	if (op == INFORMER_UPDATE && status_only(old, obj)) {
		__atomic_fetch_add(&c->status_only_updates, 1, __ATOMIC_RELAXED);
		return;
	}
	if (op == INFORMER_RESYNC) {
		/* Every job, every --resync-seconds; one whose creates are
		 * refused keeps to its back-off. */
		if (!workqueue_resync(&c->queue, key))
			__atomic_fetch_add(&c->resyncs_backing_off, 1, __ATOMIC_RELAXED);
		return;
	}
	workqueue_add(&c->queue, key);
}

static void on_pod(void *ctx, enum informer_op op, const cJSON *old, const cJSON *obj)
{
	struct controller *c = ctx;
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const char *name = str_member(meta, "name"), *uid = str_member(meta, "uid");
	char key[WORKQUEUE_KEY_LEN];

	if (owner_key(obj, key, sizeof(key)) < 0 || name == NULL)
		return;
	if (op == INFORMER_ADD)
		expectations_observe_create(&c->expect, key, name);
	if (op == INFORMER_DELETE)
		log_info("job %s: pod %s is gone", key, name);
	if (uid && (op == INFORMER_DELETE ||
	            (marked_for_deletion(obj) && (old == NULL || !marked_for_deletion(old)))))
		expectations_observe_delete(&c->expect, key, uid);
	workqueue_add(&c->queue, key);
}

static void settled_by_list(void *ctx, const char *key)
{
	struct controller *c = ctx;

	log_info("job %s: the pods' relist settles the creates and deletes it waited for", key);
	workqueue_add(&c->queue, key);
}

/* A relist replaced the pod cache: a pod created and deleted while the
 * watch was down shows in no event, and the list settles its create. */
static void on_pods_listed(void *ctx, long long list_start_ms)
{
	struct controller *c = ctx;

	expectations_observe_list(&c->expect, list_start_ms, settled_by_list, c);
}

static void on_owned(void *ctx, enum informer_op op, const cJSON *old, const cJSON *obj)
{
	struct controller *c = ctx;
	char key[WORKQUEUE_KEY_LEN];

	(void)op;
	(void)old;
	if (owner_key(obj, key, sizeof(key)) == 0)
		workqueue_add(&c->queue, key);
}

/* --- one pass --- */

static int keep_owned(const cJSON *obj, void *ctx)
{
	return pod_spec_owned(obj, ctx);
}

/* Whether the cache holds the job's object what, owned by the job. */
static int have_owned(struct informer *inf, const struct job *j, enum job_object what)
{
	char name[JOB_NAME_LEN];
	cJSON *obj;
	int have;

	pod_spec_object_name(j, what, name);
	obj = informer_get(inf, j->ns, name);
	have = obj && pod_spec_owned(obj, j);
	cJSON_Delete(obj);
	return have;
}

/* --- namespaces being deleted --- */

static void terminating_set(struct controller *c, const char *ns)
{
	long long *until = xmalloc(sizeof(*until));

	*until = timers_now_ms() + CONTROLLER_TERMINATING_MS;
	pthread_mutex_lock(&c->terminating_lock);
	free(strmap_put(&c->terminating, ns, until));
	pthread_mutex_unlock(&c->terminating_lock);
}

/* Whether ns was found being deleted a short while ago. */
static int terminating(struct controller *c, const char *ns)
{
	long long *until;
	int yes = 0;

	pthread_mutex_lock(&c->terminating_lock);
	until = strmap_get(&c->terminating, ns);
	if (until != NULL && *until <= timers_now_ms())
		free(strmap_remove(&c->terminating, ns));
	else
		yes = until != NULL;
	pthread_mutex_unlock(&c->terminating_lock);
	return yes;
}

static long long wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A worker pod the API refused as invalid: no retry can fix that, so the
 * job fails with the API's own words, decided as for any spec the
 * operator cannot honour, from the job as the pass's status write left
 * it (*written, when there was one). Returns as pass does. */
static int fail_refused(const struct reconcile_input *pass_in, const struct actions_ctx *pass_ctx,
                        const cJSON *obj, const char *refused, cJSON **written, char *err)
{
	const cJSON *base = *written ? *written : obj;
	struct reconcile_input in = *pass_in;
	struct actions_ctx actx = *pass_ctx;
	struct reconcile_output out;
	struct kube_result res = {0};
	cJSON *again = NULL;
	struct job j;
	int rc = 0;

	if (job_parse(&j, base, err) < 0)
		return -1;
	j.reporting = pass_in->job->reporting;
	log_warn("job %s/%s: %s", j.ns, j.name, refused);
	snprintf(j.invalid, sizeof(j.invalid), "%s", refused);
	in.job = &j;
	reconcile(&in, &out);
	actx.written = &again;
	actx.status_result = &res;
	actx.refused = NULL;
	if (actions_run(&actx, &j, base, &out, err) < 0)
		rc = res.status == 409 ? 1 : -1;
	if (again) {
		cJSON_Delete(*written);
		*written = again;
	}
	reconcile_output_release(&out);
	job_release(&j);
	return rc;
}

/* The job's pods from the cache, read into views (a new array of *n,
 * with room for the job's workers more, which the caller frees). */
static struct pod_view *cached_pods(struct controller *c, const struct job *j, const char *key,
                                    int *n)
{
	cJSON *list = informer_list(&c->pods, keep_owned, (void *)j), *pod;
	struct pod_view *pods =
	    xcalloc((size_t)cJSON_GetArraySize(list) + (size_t)j->workers + 1, sizeof(*pods));

	*n = 0;
	cJSON_ArrayForEach(pod, list)
	{
		char perr[ERR_LEN];
		if (pod_view_parse(&pods[*n], j, pod, perr) == 0)
			(*n)++;
		else
			log_warn("job %s: a pod it owns is unreadable: %s", key, perr);
	}
	cJSON_Delete(list);
	return pods;
}

/* Reconciles the job parsed from obj once. Returns 0, 1 when the status
 * write met a 409 Conflict (read again and recompute), -1 with err. */
static int pass(struct controller *c, const char *key, const cJSON *obj, char *err)
{
	struct job j;
	struct reconcile_input in = {0};
	struct reconcile_output out;
	struct pod_view *pods = NULL;
	struct create_outcome *outcomes, objects[JOB_OBJECTS];
	cJSON *written = NULL;
	char now[TIMEFMT_LEN];
	struct kube_result res = {0};
	char refused[ERR_LEN] = "";
	int rc = 0, n = 0, ns_terminating = 0, report_due;
	long long now_ms, report_wait;
	struct training_status report;

	if (job_parse(&j, obj, err) < 0) {
		log_warn("job %s: not a MultiWorkerJob the operator can read: %s", key, err);
		return 0;
	}
	j.reporting = c->cfg.reporting;
	pods = cached_pods(c, &j, key, &n);
	outcomes = xcalloc((size_t)j.workers + 1, sizeof(*outcomes));
	create_outcomes_get(&c->outcomes, key, j.workers, outcomes, objects);
	if (!j.deleting && sent_pods_read(c->api, &j, outcomes, pods, &n, err) < 0) {
		free(outcomes);
		free(pods);
		job_release(&j);
		return -1;
	}
	now_ms = wall_ms();
	timefmt_rfc3339((time_t)(now_ms / 1000), now);
	in.job = &j;
	in.pods = pods;
	in.npods = n;
	in.have_service = have_owned(&c->services, &j, OBJ_SERVICE);
	in.have_network_policy = have_owned(&c->policies, &j, OBJ_NETWORK_POLICY);
	in.now_s = now_ms / 1000;
	in.now = now;
	in.outcomes = outcomes;
	in.object_outcomes = objects;
	report_due = reports_due(&c->reports, key, j.uid, &report, timers_now_ms(), &report_wait);
	in.report = report_due ? &report : NULL;
	reconcile(&in, &out);
	if (!report_due &&
	    (out.status.phase == PHASE_SUCCEEDED || out.status.phase == PHASE_FAILED) &&
	    reports_due_now(&c->reports, key, j.uid, &report)) {
		/* The job ended: the chief's last report goes with the end. */
		report_due = 1;
		out.status.training = report;
		training_forget_resume(&out.status.training);
	}

	struct actions_ctx actx = {
	    .api = c->api,
	    .expect = &c->expect,
	    .outcomes = &c->outcomes,
	    .events = &c->events,
	    .counters = &c->counts,
	    .written = &written,
	    .status_result = &res,
	    .refused = refused,
	    .namespace_terminating = &ns_terminating,
	};
	if (actions_run(&actx, &j, obj, &out, err) < 0)
		rc = res.status == 409 ? 1 : -1;
	if (refused[0] != '\0' && !j.invalid[0])
		rc = fail_refused(&in, &actx, obj, refused, &written, err);
	if (ns_terminating) {
		/* Nothing can be made there any more; the namespace controller
		 * deletes the job. No retry, no back-off to grow. */
		terminating_set(c, j.ns);
		rc = rc < 0 ? 0 : rc;
	}
	if (written)
		written_put(c, key, resource_version(obj), written);
	/* The report is in the status once the status write went (or the
	 * pass found nothing to write); a failed write leaves it due. */
	if (report_due && (written || rc == 0))
		reports_written(&c->reports, key, j.uid, timers_now_ms());
	if (!report_due && report_wait > 0)
		workqueue_add_after(&c->queue, key, report_wait);
	if (rc == 0 && out.requeue_at_s >= 0) {
		/* A deadline or a time to live: a timer, not the next event. */
		workqueue_add_after(&c->queue, key, out.requeue_at_s * 1000 - now_ms);
	}
	reconcile_output_release(&out);
	free(outcomes);
	free(pods);
	job_release(&j);
	return rc;
}

void controller_report(struct controller *c, const char *key, const char *uid,
                       const struct training_status *t)
{
	long long wait = reports_put(&c->reports, key, uid, t, timers_now_ms());

	if (wait > 0)
		workqueue_add_after(&c->queue, key, wait);
	else
		workqueue_add(&c->queue, key);
}

int controller_sync(struct controller *c, const char *key, char *err)
{
	char ns[WORKQUEUE_KEY_LEN], path[KUBE_PATH_LEN];
	const char *slash = strchr(key, '/');
	cJSON *obj;
	long long now = timers_now_ms();

	if (c->cfg.active != NULL && !c->cfg.active(c->cfg.active_ctx)) {
		/* A standby, or a leader past its renew deadline: not ours to
		 * act on. controller_lead brings every job back. */
		__atomic_fetch_add(&c->passes_dropped, 1, __ATOMIC_RELAXED);
		return 0;
	}
	if (slash == NULL || (size_t)(slash - key) >= sizeof(ns))
		return err_set(err, "job key '%s' is not namespace/name", key);
	memcpy(ns, key, (size_t)(slash - key));
	ns[slash - key] = '\0';
	if (terminating(c, ns)) {
		log_debug("job %s: its namespace is being deleted; left alone", key);
		return 0;
	}
	obj = informer_get(&c->jobs, ns, slash + 1);
	if (obj == NULL) {
		expectations_forget(&c->expect, key);
		create_outcomes_forget(&c->outcomes, key);
		written_forget(c, key);
		reports_forget(&c->reports, key);
		return 0; /* deleted: its objects go by garbage collection */
	}
	if (!expectations_satisfied(&c->expect, key, now)) {
		/* The watch will show what is in flight, and bring the job back;
		 * if it never does, the expectations expire. */
		log_debug("job %s: waiting for the watch to show its pods' creates and deletes",
		          key);
		workqueue_add_after(&c->queue, key, c->expect.ttl_ms);
		cJSON_Delete(obj);
		return 0;
	}
	obj = freshest(c, key, obj);
	for (int attempt = 0;; attempt++) {
		int rc = pass(c, key, obj, err);
		cJSON_Delete(obj);
		if (rc <= 0)
			return rc;
		if (attempt == CONFLICT_RETRIES)
			return err_prefix(err, "job %s: still conflicting after %d reads", key,
			                  attempt + 1);
		/* 409: someone changed the job since the cache's copy. Read it
		 * from the server and decide again; never overwrite. */
		log_info("job %s: changed meanwhile (409 Conflict); reading it again", key);
		if (kube_path(path, JOB_GROUP, JOB_VERSION, ns, JOB_PLURAL, slash + 1) < 0)
			return err_set(err, "job %s: path too long", key);
		struct kube_result res = {0};
		if (kube_get(c->api, path, &obj, &res, err) < 0)
			return res.status == 404 ? 0 : -1;
	}
}

/* --- threads --- */

static void *worker_main(void *arg)
{
	struct controller *c = arg;
	char key[WORKQUEUE_KEY_LEN], err[ERR_LEN];
	struct workqueue_taken t;

	while (workqueue_get_taken(&c->queue, key, &t)) {
		long long start = timers_now_ms();
		int rc;

		if (t.backoff_left_ms > 0)
			log_info("job %s: retry %lu comes %lld ms before its back-off ends: %s",
			         key, t.failures, t.backoff_left_ms,
			         t.why == WORKQUEUE_ADDED ? "the job or one of its objects changed"
			                                  : "a deadline or time to live is due");
		rc = controller_sync(c, key, err);

		histogram_observe_us(&c->reconcile_time, (timers_now_ms() - start) * 1000);
		__atomic_fetch_add(&c->reconciles, 1, __ATOMIC_RELAXED);
		if (rc < 0) {
			__atomic_fetch_add(&c->reconcile_errors, 1, __ATOMIC_RELAXED);
			long long delay = workqueue_add_rate_limited(&c->queue, key);
			log_warn("%s; retrying in %lld ms", err, delay);
		} else {
			workqueue_forget(&c->queue, key);
		}
		workqueue_done(&c->queue, key);
	}
	return NULL;
}

static void informer_setup(struct controller *c, struct informer *inf, const char *name,
                           const char *group, const char *plural, const char *selector,
                           informer_fn handler, void (*transform)(cJSON *obj))
{
	struct informer_config ic = {
	    .name = name,
	    .group = group,
	    .version = "v1",
	    .plural = plural,
	    .namespace = c->cfg.namespace,
	    .label_selector = selector,
	    /* The jobs' resync alone: it brings back every job, and a job
	     * waiting out its back-off keeps to it (on_job); a resync of the
	     * pods, Services and NetworkPolicies would only bring the same
	     * jobs back around that rule. */
	    .resync_s = inf == &c->jobs ? c->cfg.resync_s : 0,
	    .handler = handler,
	    .handler_ctx = c,
	    .transform = transform,
	};

	informer_init(inf, c->api, &ic);
}

static struct informer *informers(struct controller *c, int k)
{
	struct informer *all[] = {&c->jobs, &c->pods, &c->services, &c->policies};

	return all[k];
}

#define NINFORMERS CONTROLLER_INFORMERS

struct informer *controller_informer(struct controller *c, int k)
{
	return informers(c, k);
}

int controller_init(struct controller *c, struct kube_api *api, const struct controller_config *cfg,
                    char *err)
{
	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	c->api = api;
	if (c->cfg.workers < 1 || c->cfg.workers > CONTROLLER_WORKERS_MAX)
		return err_set(err, "workers: %d is out of range [1, %d]", c->cfg.workers,
		               CONTROLLER_WORKERS_MAX);
	if (workqueue_init(&c->queue, 0, 0, err) < 0)
		return -1;
	expectations_init(&c->expect, 0);
	create_outcomes_init(&c->outcomes);
	event_recorder_init(&c->events, c->cfg.instance);
	pthread_mutex_init(&c->terminating_lock, NULL);
	strmap_init(&c->terminating);
	pthread_mutex_init(&c->written_lock, NULL);
	strmap_init(&c->written);
	reports_init(&c->reports, c->cfg.status_write_ms > 0 ? c->cfg.status_write_ms
	                                                     : REPORTS_WRITE_INTERVAL_MS);
	informer_setup(c, &c->jobs, JOB_PLURAL, JOB_GROUP, JOB_PLURAL, NULL, on_job,
	               cache_keep_job);
	informer_setup(c, &c->pods, "pods", "", "pods", SELECTOR, on_pod, cache_keep_pod);
	c->pods.cfg.relisted = on_pods_listed;
	informer_setup(c, &c->services, "services", "", "services", SELECTOR, on_owned,
	               cache_keep_metadata);
	informer_setup(c, &c->policies, "networkpolicies", "networking.k8s.io", "networkpolicies",
	               SELECTOR, on_owned, cache_keep_metadata);
	return 0;
}

int controller_start(struct controller *c, int sync_ms, char *err)
{
	for (int k = 0; k < NINFORMERS; k++)
		if (informer_start(informers(c, k), err) < 0)
			return -1;
	for (int k = 0; k < NINFORMERS; k++)
		if (!informer_wait_synced(informers(c, k), sync_ms)) {
			err_set(
			    err,
			    "the %s cache did not fill within %d ms: is the API server reachable, "
			    "and may the operator list and watch %s?",
			    informers(c, k)->cfg.name, sync_ms, informers(c, k)->cfg.name);
			return -1;
		}
	log_info("caches filled: watching multiworkerjobs, pods, services and networkpolicies in "
	         "%s",
	         c->cfg.namespace && c->cfg.namespace[0] ? c->cfg.namespace : "every namespace");
	for (int k = 0; k < c->cfg.workers; k++) {
		int rc = pthread_create(&c->threads[k], NULL, worker_main, c);
		if (rc != 0)
			return err_set(err, "pthread_create: %s", strerror(rc));
		c->nthreads++;
	}
	return 0;
}

static void queue_job(void *ctx, const cJSON *obj)
{
	struct controller *c = ctx;
	char key[WORKQUEUE_KEY_LEN];

	if (informer_key(obj, key, sizeof(key)) == 0)
		workqueue_add(&c->queue, key);
}

void controller_lead(struct controller *c)
{
	create_outcomes_forget(&c->outcomes, NULL);
	informer_each(&c->jobs, queue_job, c);
}

int controller_ready(struct controller *c)
{
	for (int k = 0; k < NINFORMERS; k++)
		if (!informer_synced(informers(c, k)))
			return 0;
	return 1;
}

int controller_alive(struct controller *c, char *why)
{
	long long wait_ms, held_ms;

	for (int k = 0; k < NINFORMERS; k++)
		if (!informer_alive(informers(c, k))) {
			err_set(why,
			        "informer %s: its thread has not turned within its watch's "
			        "deadline",
			        informers(c, k)->cfg.name);
			return 0;
		}
	workqueue_ages(&c->queue, &wait_ms, &held_ms);
	if (held_ms > CONTROLLER_STUCK_MS) {
		err_set(why, "a reconcile has run for %lld s", held_ms / 1000);
		return 0;
	}
	return 1;
}

void controller_stop(struct controller *c)
{
	workqueue_shutdown(&c->queue);
	for (int k = 0; k < c->nthreads; k++)
		pthread_join(c->threads[k], NULL);
	c->nthreads = 0;
	for (int k = 0; k < NINFORMERS; k++)
		informer_stop(informers(c, k));
	for (int k = 0; k < NINFORMERS; k++)
		informer_release(informers(c, k));
	workqueue_release(&c->queue);
	expectations_release(&c->expect);
	create_outcomes_release(&c->outcomes);
	reports_release(&c->reports);
	event_recorder_release(&c->events);
	strmap_release(&c->terminating, free);
	pthread_mutex_destroy(&c->terminating_lock);
	strmap_release(&c->written, written_free);
	pthread_mutex_destroy(&c->written_lock);
}
