/* operator_metrics.c - the operator's /metrics; see operator_metrics.h. */
#include "operator_metrics.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "job.h"
#include "pod_spec.h"
#include "prom_text.h"

#define P "mwj_operator_"

static unsigned long load(const unsigned long *counter)
{
	return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

/* --- jobs by phase, from the cache --- */

#define PHASES 7 /* job_phase_name's, "" shown as "New" */

/* n[PHASES] counts the jobs whose creates are being refused. */
static void count_refused(unsigned long *n, const cJSON *status)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(status, "conditions"))
	{
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "type");
		const cJSON *reason = cJSON_GetObjectItemCaseSensitive(c, "reason");
		if (cJSON_IsString(type) && strcmp(type->valuestring, "Created") == 0 &&
		    cJSON_IsString(reason) && strcmp(reason->valuestring, "CreateRefused") == 0)
			n[PHASES]++;
	}
}

static void count_phase(void *ctx, const cJSON *obj)
{
	unsigned long *n = ctx;
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(obj, "status");
	const cJSON *phase = cJSON_GetObjectItemCaseSensitive(status, "phase");
	int p = 0;

	if (cJSON_IsString(phase)) {
		for (p = PHASES - 1; p > 0; p--)
			if (strcmp(phase->valuestring, job_phase_name((enum job_phase)p)) == 0)
				break;
	}
	n[p]++;
	count_refused(n, status);
}

static void jobs_by_phase(FILE *f, struct controller *c)
{
	unsigned long n[PHASES + 1] = {0};

	informer_each(&c->jobs, count_phase, n);
	prom_family(f, P "jobs", "gauge",
	            "MultiWorkerJobs in the cache by status.phase (New: not reconciled yet)");
	for (int p = 0; p < PHASES; p++) {
		struct prom_label l = {"phase", p ? job_phase_name((enum job_phase)p) : "New"};
		prom_sample(f, P "jobs", &l, 1, (double)n[p]);
	}
	prom_single(f, P "jobs_create_refused", "gauge",
	            "Jobs whose creates the API server refuses now (condition Created, reason "
	            "CreateRefused)",
	            (double)n[PHASES]);
}

/* --- the parts' counters --- */

static void counter(FILE *f, const char *name, const char *help, const unsigned long *v)
{
	prom_single(f, name, "counter", help, (double)load(v));
}

static void controller_metrics(FILE *f, struct controller *c)
{
	const struct actions_counters *k = &c->counts;
	unsigned long cum[HISTOGRAM_BUCKETS], count;
	double sum;

	counter(f, P "jobs_created_total", "Jobs the operator admitted (gave a first status)",
	        &k->jobs_created);
	counter(f, P "jobs_succeeded_total", "Jobs the operator ended Succeeded",
	        &k->jobs_succeeded);
	counter(f, P "jobs_failed_total", "Jobs the operator ended Failed", &k->jobs_failed);
	counter(f, P "pods_created_total", "Worker pods created", &k->pods_created);
	counter(f, P "pods_deleted_total", "Worker pods deleted", &k->pods_deleted);
	counter(f, P "preemptions_handled_total",
	        "Worker pods preempted, evicted or deleted by others, and recreated",
	        &k->preemptions);
	counter(f, P "failures_handled_total", "Failed workers recreated under restartPolicy",
	        &k->failures);
	counter(f, P "reconcile_total", "Reconcile passes", &c->reconciles);
	counter(f, P "reconcile_errors_total", "Reconcile passes that failed and were retried",
	        &c->reconcile_errors);
	prom_family(f, P "create_refusals_total", "counter",
	            "Creates the API server refused with a 4xx (a quota, Pod Security, a namespace "
	            "being deleted, a ServiceAccount not yet made, an admission webhook), by kind");
	for (int i = 0; i <= JOB_OBJECTS; i++) {
		struct prom_label l = {
		    "kind", i < JOB_OBJECTS ? pod_spec_object_kind((enum job_object)i) : "Pod"};
		prom_sample(f, P "create_refusals_total", &l, 1, (double)load(&k->refused[i]));
	}
	counter(f, P "job_status_updates_ignored_total",
	        "Job updates that changed only the status (the operator's own writes among them), "
	        "which start no reconcile",
	        &c->status_only_updates);
	counter(f, P "job_resyncs_backing_off_total",
	        "Periodic resyncs of jobs whose retry after a failure was pending, which start "
	        "no reconcile: the retry comes at the end of its back-off",
	        &c->resyncs_backing_off);
	counter(f, P "events_created_total", "Events created on jobs", &c->events.created);
	counter(f, P "events_counted_total",
	        "Events that repeated one already written, counted on it instead",
	        &c->events.counted);
	prom_family(f, P "reconcile_duration_seconds", "histogram",
	            "Time of one reconcile pass, API calls included");
	histogram_read(&c->reconcile_time, cum, &count, &sum);
	prom_histogram(f, P "reconcile_duration_seconds", histogram_bounds, cum, HISTOGRAM_BUCKETS,
	               count, sum);
}

static void informer_metrics(FILE *f, struct controller *c)
{
	static const struct {
		const char *name, *help;
		size_t offset;
	} counters[] = {
	    {P "watches_total", "Watches started (each resume and restart counts)",
	     offsetof(struct informer, watches)},
	    {P "watch_errors_total", "Watches that ended in an error",
	     offsetof(struct informer, watch_errors)},
	    {P "lists_total", "Full lists (the first, and each relist)",
	     offsetof(struct informer, lists)},
	    {P "relists_after_gone_total",
	     "Relists because a watch's version was too old (410 Gone)",
	     offsetof(struct informer, relists_after_gone)},
	};

	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		prom_family(f, counters[i].name, "counter", counters[i].help);
		for (int k = 0; k < CONTROLLER_INFORMERS; k++) {
			struct informer *inf = controller_informer(c, k);
			struct prom_label l = {"resource", inf->cfg.name};
			prom_sample(f, counters[i].name, &l, 1,
			            (double)load((const unsigned long *)((const char *)inf +
			                                                 counters[i].offset)));
		}
	}
	prom_family(f, P "cached_objects", "gauge", "Objects in each informer's cache");
	for (int k = 0; k < CONTROLLER_INFORMERS; k++) {
		struct informer *inf = controller_informer(c, k);
		struct prom_label l = {"resource", inf->cfg.name};
		size_t n;

		pthread_mutex_lock(&inf->lock);
		n = inf->cache.len;
		pthread_mutex_unlock(&inf->lock);
		prom_sample(f, P "cached_objects", &l, 1, (double)n);
	}
}

static void queue_metrics(FILE *f, struct controller *c)
{
	long long wait_ms, held_ms;

	workqueue_ages(&c->queue, &wait_ms, &held_ms);
	prom_single(f, P "workqueue_depth", "gauge", "Job keys waiting for a worker",
	            (double)workqueue_len(&c->queue));
	prom_single(f, P "workqueue_oldest_wait_seconds", "gauge",
	            "How long the key at the head of the queue has waited", (double)wait_ms / 1e3);
	prom_single(f, P "workqueue_longest_running_seconds", "gauge",
	            "How long the longest reconcile in progress has run", (double)held_ms / 1e3);
	counter(f, P "workqueue_adds_total", "Keys queued", &c->queue.adds);
	counter(f, P "workqueue_retries_total", "Keys queued again after a failure",
	        &c->queue.retries);
}

static void api_metrics(FILE *f, struct kube_api *api)
{
	char code[8];

	prom_family(f, P "api_requests_total", "counter",
	            "API requests by method and HTTP status (code 0: no answer); every attempt "
	            "counts");
	for (int m = 0; m < KUBE_METHODS; m++)
		for (int s = 0; s < KUBE_CODES; s++) {
			unsigned long n = load(&api->stats.by_code[m][s]);
			if (n == 0)
				continue;
			snprintf(code, sizeof(code), "%d", s);
			struct prom_label l[2] = {{"method", kube_method_name((enum kube_method)m)},
			                          {"code", code}};
			prom_sample(f, P "api_requests_total", l, 2, (double)n);
		}
	counter(f, P "api_retries_total", "API requests retried after a 429, 5xx or no answer",
	        &api->stats.retries);
	counter(f, P "api_writes_fenced_total",
	        "Writes not sent because this replica was not (or no longer) the leader",
	        &api->stats.refused_by_guard);
}

static void leader_metrics(FILE *f, struct leader *l)
{
	struct prom_label acquired = {"event", "acquired"}, lost = {"event", "lost"};

	prom_single(f, P "leader", "gauge",
	            "1 while this replica is the leader (always 1 without leader election)",
	            l == NULL || leader_active(l) ? 1 : 0);
	prom_family(f, P "leader_transitions_total", "counter",
	            "Times this replica became the leader, and lost the Lease");
	prom_sample(f, P "leader_transitions_total", &acquired, 1,
	            l ? (double)load(&l->acquired) : 0);
	prom_sample(f, P "leader_transitions_total", &lost, 1, l ? (double)load(&l->lost) : 0);
}

/* --- the process --- */

/* Field k (0: the total size, 1: the resident set) of /proc/self/statm,
 * in bytes; 0 if it cannot be read. */
static long long statm_bytes(int k)
{
	char line[256], *p = line, *end;
	FILE *f = fopen("/proc/self/statm", "r");
	long long pages = 0;

	if (f == NULL)
		return 0;
	if (fgets(line, sizeof(line), f) != NULL) {
		for (int i = 0; i <= k; i++, p = end) {
			pages = strtoll(p, &end, 10);
			if (end == p) {
				pages = 0;
				break;
			}
		}
	}
	fclose(f);
	return pages * sysconf(_SC_PAGESIZE);
}

long long operator_metrics_rss_bytes(void)
{
	return statm_bytes(1);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

static void process_metrics(FILE *f, const struct operator_metrics *m)
{
	struct rusage ru;
	struct rlimit rl;
	double cpu = 0;

	if (getrusage(RUSAGE_SELF, &ru) == 0)
		cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	prom_single(f, "process_cpu_seconds_total", "counter",
	            "Total user and system CPU time spent in seconds.", cpu);
	prom_single(f, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
	            (double)operator_metrics_rss_bytes());
	prom_single(f, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
	            (double)statm_bytes(0));
	prom_single(f, "process_start_time_seconds", "gauge",
	            "Start time of the process since unix epoch in seconds.", m->start_time_s);
	prom_single(f, "process_open_fds", "gauge", "Number of open file descriptors.",
	            (double)open_fds());
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		prom_single(f, "process_max_fds", "gauge",
		            "Maximum number of open file descriptors.", (double)rl.rlim_cur);
}

/* --- The chiefs' reports --- */

enum training_gauge { G_PROGRESS, G_RATE, G_STEP, G_LOSS, G_ETA, TRAINING_GAUGES };

struct gauge_pass {
	FILE *f;
	enum training_gauge which;
	const char *name;
};

static void training_sample(void *ctx, const char *key, const struct training_status *t)
{
	const struct gauge_pass *g = ctx;
	const char *slash = strchr(key, '/');
	char ns[JOB_NAME_LEN];
	struct prom_label labels[2] = {{"namespace", ns}, {"job", slash ? slash + 1 : key}};
	double v;

	snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - key) : 0, key);
	switch (g->which) {
	case G_PROGRESS:
		if (t->total_steps <= 0)
			return;
		v = (double)t->global_step / (double)t->total_steps;
		break;
	case G_RATE:
		if (!t->has_rate)
			return;
		v = t->samples_per_second;
		break;
	case G_STEP:
		v = (double)t->global_step;
		break;
	case G_LOSS:
		if (!t->has_loss)
			return;
		v = t->loss;
		break;
	case G_ETA:
	default:
		if (t->eta_seconds < 0)
			return;
		v = (double)t->eta_seconds;
		break;
	}
	prom_sample(g->f, g->name, labels, 2, v);
}

static void training_metrics(FILE *f, struct controller *c, const struct status_endpoint *e)
{
	static const struct {
		const char *name, *help;
	} gauges[TRAINING_GAUGES] = {
	    {P "job_training_progress_ratio",
	     "Steps done over the run's steps, as the chief reported"},
	    {P "job_training_samples_per_second", "Examples trained a second over the last minute"},
	    {P "job_training_global_step", "The last step the chief reported"},
	    {P "job_training_loss", "The last training loss the chief reported"},
	    {P "job_training_eta_seconds", "Seconds of training left, as the chief estimated"},
	};
	static const char *const results[] = {"accepted", "unauthorized", "forbidden",
	                                      "limited",  "bad",          "unavailable"};

	for (int k = 0; k < TRAINING_GAUGES; k++) {
		struct gauge_pass g = {f, (enum training_gauge)k, gauges[k].name};

		prom_family(f, gauges[k].name, "gauge", gauges[k].help);
		reports_each(&c->reports, training_sample, &g);
	}
	if (e == NULL)
		return;
	const unsigned long *counts[] = {&e->accepted, &e->unauthorized, &e->forbidden,
	                                 &e->limited,  &e->bad,          &e->unavailable};
	prom_family(f, P "status_reports_total", "counter",
	            "Training reports the status endpoint answered, by result");
	for (size_t k = 0; k < sizeof(results) / sizeof(results[0]); k++) {
		struct prom_label l = {"result", results[k]};

		prom_sample(f, P "status_reports_total", &l, 1, (double)load(counts[k]));
	}
}

char *operator_metrics_render(const struct operator_metrics *m, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	struct prom_label v = {"version", m->version};

	if (f == NULL)
		return NULL;
	prom_family(f, P "build_info", "gauge", "The operator's version, as a label");
	prom_sample(f, P "build_info", &v, 1, 1);
	jobs_by_phase(f, m->controller);
	controller_metrics(f, m->controller);
	informer_metrics(f, m->controller);
	queue_metrics(f, m->controller);
	api_metrics(f, m->api);
	leader_metrics(f, m->leader);
	training_metrics(f, m->controller, m->status);
	process_metrics(f, m);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
