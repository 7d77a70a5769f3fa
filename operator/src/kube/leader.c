/* leader.c - leader election over a Lease; see leader.h. */
#include "leader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "json_in.h"
#include "json_out.h"
#include "log.h"
#include "timefmt.h"
#include "timers.h"

#define LEASE_GROUP   "coordination.k8s.io"
#define LEASE_VERSION "v1"
#define LEASE_PLURAL  "leases"

/* client-go waits up to RetryPeriod * 1.2 between tries of a candidate, so
 * that candidates refused together do not come back together. */
#define JITTER_PERCENT 20

/* How often a release reads the Lease again after a 409. */
#define RELEASE_ATTEMPTS 3

static int get_int(const int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void set_int(int *p, int v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static long long get_ll(const long long *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void set_ll(long long *p, long long v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static void count(unsigned long *counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* --- Configuration --- */

int leader_config_check(const struct leader_config *cfg, char *err)
{
	char path[KUBE_PATH_LEN];

	if (cfg->namespace == NULL || cfg->namespace[0] == '\0')
		return err_set(err, "leader election: no namespace for the Lease (set "
		                    "--leader-election-namespace)");
	if (cfg->name == NULL || kube_path(path, LEASE_GROUP, LEASE_VERSION, cfg->namespace,
	                                   LEASE_PLURAL, cfg->name) < 0)
		return err_set(err, "leader election: '%s/%s' is no valid Lease name",
		               cfg->namespace, cfg->name ? cfg->name : "");
	if (cfg->identity == NULL || cfg->identity[0] == '\0')
		return err_set(err, "leader election: no identity");
	if (cfg->retry_ms <= 0 || cfg->renew_ms <= 0 || cfg->lease_ms <= 0)
		return err_set(err, "leader election: durations must be positive");
	if (cfg->lease_ms <= cfg->renew_ms)
		return err_set(err,
		               "leader election: the lease duration (%d ms) must be longer than "
		               "the renew deadline (%d ms)",
		               cfg->lease_ms, cfg->renew_ms);
	if ((long long)cfg->renew_ms * 100 <= (long long)cfg->retry_ms * (100 + JITTER_PERCENT))
		return err_set(err,
		               "leader election: the renew deadline (%d ms) must be longer than "
		               "1.2 times the retry period (%d ms)",
		               cfg->renew_ms, cfg->retry_ms);
	if (cfg->lease_ms % 1000 != 0)
		return err_set(err, "leader election: the lease duration must be whole seconds "
		                    "(the Lease says it in seconds)");
	return 0;
}

void leader_identity(char *out)
{
	unsigned char r[16];
	char host[256] = "";
	size_t n = 0;

	if (gethostname(host, sizeof(host)) < 0 || host[0] == '\0')
		snprintf(host, sizeof(host), "mwj-operator");
	host[sizeof(host) - 1] = '\0';
	while (n < sizeof(r)) {
		ssize_t got = getrandom(r + n, sizeof(r) - n, 0);

		if (got < 0 && errno != EINTR)
			die("getrandom: %s", strerror(errno));
		if (got > 0)
			n += (size_t)got;
	}
	n = (size_t)snprintf(out, LEADER_IDENTITY_LEN, "%.253s_", host);
	for (size_t i = 0; i < sizeof(r); i++)
		n += (size_t)snprintf(out + n, LEADER_IDENTITY_LEN - n, "%02x", r[i]);
}

/* --- Lifecycle --- */

void leader_init(struct leader *l, struct kube_api *api, const struct leader_config *cfg)
{
	pthread_condattr_t attr;

	memset(l, 0, sizeof(*l));
	l->cfg = *cfg;
	l->api = api;
	pthread_mutex_init(&l->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&l->wake, &attr);
	pthread_condattr_destroy(&attr);
	l->heartbeat_ms = timers_now_ms();
}

void leader_destroy(struct leader *l)
{
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->lock);
}

/* --- The Lease --- */

static int lease_path(const struct leader *l, int collection, char *out)
{
	return kube_path(out, LEASE_GROUP, LEASE_VERSION, l->cfg.namespace, LEASE_PLURAL,
	                 collection ? NULL : l->cfg.name);
}

/* The record in a Lease object; absent fields read as "" and 0. */
static void record_parse(const cJSON *lease, struct leader_record *r)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(lease, "metadata");
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(spec, "leaseDurationSeconds");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(spec, "leaseTransitions");

	memset(r, 0, sizeof(*r));
	json_in_copy_cut(r->holder, sizeof(r->holder), json_in_str(spec, "holderIdentity"));
	json_in_copy_cut(r->acquire_time, sizeof(r->acquire_time),
	                 json_in_str(spec, "acquireTime"));
	json_in_copy_cut(r->renew_time, sizeof(r->renew_time), json_in_str(spec, "renewTime"));
	json_in_copy_cut(r->resource_version, sizeof(r->resource_version),
	                 json_in_str(meta, "resourceVersion"));
	if (cJSON_IsNumber(d) && d->valuedouble > 0 && d->valuedouble < 1e6)
		r->duration_s = (int)d->valuedouble;
	if (cJSON_IsNumber(t) && t->valuedouble >= 0 && t->valuedouble < 1e15)
		r->transitions = (long)t->valuedouble;
}

static int record_same(const struct leader_record *a, const struct leader_record *b)
{
	return strcmp(a->holder, b->holder) == 0 && strcmp(a->renew_time, b->renew_time) == 0 &&
	       strcmp(a->acquire_time, b->acquire_time) == 0 && a->transitions == b->transitions &&
	       a->duration_s == b->duration_s;
}

/* Notes the record read or written at now_ms: the lease's clock restarts
 * only when the record changed. */
static void observe(struct leader *l, const struct leader_record *r, long long now_ms)
{
	pthread_mutex_lock(&l->lock);
	if (!l->have_seen || !record_same(&l->seen, r))
		l->seen_at_ms = now_ms;
	l->seen = *r;
	l->have_seen = 1;
	pthread_mutex_unlock(&l->lock);
}

/* A Lease object for record r (rv "" on a create). */
static cJSON *lease_object(const struct leader *l, const struct leader_record *r)
{
	cJSON *obj = json_out_new(), *meta, *spec;

	json_out_str(obj, "apiVersion", LEASE_GROUP "/" LEASE_VERSION);
	json_out_str(obj, "kind", "Lease");
	meta = json_out_obj(obj, "metadata");
	json_out_str(meta, "name", l->cfg.name);
	json_out_str(meta, "namespace", l->cfg.namespace);
	if (r->resource_version[0])
		json_out_str(meta, "resourceVersion", r->resource_version);
	spec = json_out_obj(obj, "spec");
	json_out_str(spec, "holderIdentity", r->holder);
	json_out_num(spec, "leaseDurationSeconds", r->duration_s);
	json_out_str(spec, "acquireTime", r->acquire_time);
	json_out_str(spec, "renewTime", r->renew_time);
	json_out_num(spec, "leaseTransitions", (double)r->transitions);
	return obj;
}

/* Sends the Lease for r: a create when r has no resourceVersion, else an
 * update with it as the precondition. Returns 1 when written (*written
 * filled from the answer), 0 when another write came first (409), -1
 * with a message. */
static int lease_write(struct leader *l, const struct leader_record *r,
                       struct leader_record *written, char *err)
{
	const struct kube_opts opts = {
	    .timeout_ms = l->cfg.renew_ms / 2, .once = 1, .unguarded = 1};
	int create = r->resource_version[0] == '\0';
	char path[KUBE_PATH_LEN];
	struct kube_result res = {0};
	cJSON *obj = lease_object(l, r), *out = NULL;
	int rc;

	if (lease_path(l, create, path) < 0) {
		cJSON_Delete(obj);
		return err_set(err, "lease '%s/%s': bad name", l->cfg.namespace, l->cfg.name);
	}
	rc = kube_send(l->api, create ? "POST" : "PUT", path, obj, &opts, &out, &res, err);
	cJSON_Delete(obj);
	if (rc < 0)
		return res.status == 409 ? 0 : -1;
	record_parse(out, written);
	cJSON_Delete(out);
	return 1;
}

int leader_try(struct leader *l, long long now_ms, char *err)
{
	const struct kube_opts opts = {.timeout_ms = l->cfg.renew_ms / 2, .once = 1};
	struct leader_record cur = {0}, next, written = {0};
	struct kube_result res = {0};
	char path[KUBE_PATH_LEN], now[TIMEFMT_LEN];
	cJSON *obj = NULL;
	long long seen_at;
	int rc, mine, duration_ms;

	if (lease_path(l, 0, path) < 0)
		return err_set(err, "lease '%s/%s': bad name", l->cfg.namespace, l->cfg.name);
	timefmt_now_micro(now);
	memset(&next, 0, sizeof(next));
	snprintf(next.holder, sizeof(next.holder), "%s", l->cfg.identity);
	next.duration_s = l->cfg.lease_ms / 1000;
	snprintf(next.renew_time, sizeof(next.renew_time), "%s", now);
	if (kube_send(l->api, "GET", path, NULL, &opts, &obj, &res, err) < 0) {
		if (res.status != 404)
			return -1;
		/* No Lease yet: the first to create it leads. */
		snprintf(next.acquire_time, sizeof(next.acquire_time), "%s", now);
		rc = lease_write(l, &next, &written, err);
		if (rc == 1) {
			observe(l, &written, now_ms);
			set_ll(&l->renewed_ms, now_ms);
		}
		return rc;
	}
	record_parse(obj, &cur);
	cJSON_Delete(obj);
	observe(l, &cur, now_ms);
	pthread_mutex_lock(&l->lock);
	seen_at = l->seen_at_ms;
	pthread_mutex_unlock(&l->lock);
	mine = strcmp(cur.holder, l->cfg.identity) == 0;
	duration_ms = (cur.duration_s > 0 ? cur.duration_s : l->cfg.lease_ms / 1000) * 1000;
	if (!mine && cur.holder[0] != '\0' && now_ms < seen_at + duration_ms)
		return 0; /* held, and renewed within its duration as seen from here */
	if (mine) {
		snprintf(next.acquire_time, sizeof(next.acquire_time), "%s", cur.acquire_time);
		next.transitions = cur.transitions;
	} else {
		snprintf(next.acquire_time, sizeof(next.acquire_time), "%s", now);
		next.transitions = cur.transitions + 1;
	}
	snprintf(next.resource_version, sizeof(next.resource_version), "%s", cur.resource_version);
	rc = lease_write(l, &next, &written, err);
	if (rc == 1) {
		observe(l, &written, now_ms);
		set_ll(&l->renewed_ms, now_ms);
	}
	return rc;
}

/* --- The loop --- */

int leader_active(void *arg)
{
	struct leader *l = arg;

	return get_int(&l->leading) && !get_int(&l->stopping) &&
	       timers_now_ms() < get_ll(&l->renewed_ms) + l->cfg.renew_ms;
}

static void became_leader(struct leader *l)
{
	set_int(&l->leading, 1);
	count(&l->acquired);
	pthread_mutex_lock(&l->lock);
	log_info("leader election: became the leader (Lease %s/%s, transitions %ld)",
	         l->cfg.namespace, l->cfg.name, l->seen.transitions);
	pthread_mutex_unlock(&l->lock);
	if (l->cfg.on_started)
		l->cfg.on_started(l->cfg.ctx);
}

static void stopped_leading(struct leader *l, const char *why)
{
	set_int(&l->leading, 0);
	count(&l->lost);
	log_warn("leader election: lost the Lease %s/%s (%s): reconciling stopped; a candidate "
	         "again",
	         l->cfg.namespace, l->cfg.name, why);
	if (l->cfg.on_stopped)
		l->cfg.on_stopped(l->cfg.ctx);
}

/* A candidate's wait: the retry period plus up to 20% (see JITTER_PERCENT). */
static long long candidate_wait_ms(const struct leader *l)
{
	unsigned int r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (unsigned int)timers_now_ms();
	return l->cfg.retry_ms +
	       (long long)(r % ((unsigned)l->cfg.retry_ms * JITTER_PERCENT / 100 + 1));
}

/* Waits ms on the monotonic clock. Returns -1 when stopped. */
static int pause_ms(struct leader *l, long long ms)
{
	long long until = timers_now_ms() + ms;
	struct timespec ts = {.tv_sec = (time_t)(until / 1000),
	                      .tv_nsec = (long)(until % 1000) * 1000000};
	int stopping;

	pthread_mutex_lock(&l->lock);
	while (!l->stopping && timers_now_ms() < until) {
		if (pthread_cond_timedwait(&l->wake, &l->lock, &ts) == ETIMEDOUT)
			break;
	}
	stopping = l->stopping;
	pthread_mutex_unlock(&l->lock);
	return stopping ? -1 : 0;
}

static void *leader_main(void *arg)
{
	struct leader *l = arg;
	char err[ERR_LEN];
	int warned = 0;

	log_info("leader election: candidate %s for the Lease %s/%s", l->cfg.identity,
	         l->cfg.namespace, l->cfg.name);
	for (;;) {
		long long now = timers_now_ms();
		int leading = get_int(&l->leading);
		int rc = leader_try(l, now, err);

		set_ll(&l->heartbeat_ms, now);
		if (rc == 1 && !leading) {
			warned = 0;
			became_leader(l);
		} else if (rc == 0 && leading) {
			stopped_leading(l, "another replica holds it");
		} else if (rc < 0 && leading) {
			count(&l->renew_failures);
			if (timers_now_ms() >= get_ll(&l->renewed_ms) + l->cfg.renew_ms)
				stopped_leading(l, "not renewed within the renew deadline");
			else
				log_warn("leader election: renewing failed: %s; retrying", err);
		} else if (rc < 0 && !warned) {
			/* A candidate retries quietly after the first warning. */
			log_warn("leader election: %s; retrying every %d ms", err, l->cfg.retry_ms);
			warned = 1;
		}
		if (pause_ms(l, get_int(&l->leading) ? l->cfg.retry_ms : candidate_wait_ms(l)) < 0)
			break;
	}
	return NULL;
}

int leader_start(struct leader *l, char *err)
{
	int rc = pthread_create(&l->thread, NULL, leader_main, l);

	if (rc != 0)
		return err_set(err, "leader election: pthread_create: %s", strerror(rc));
	l->started = 1;
	return 0;
}

void leader_stop(struct leader *l)
{
	pthread_mutex_lock(&l->lock);
	set_int(&l->stopping, 1); /* no write from here on: leader_active is 0 */
	pthread_cond_broadcast(&l->wake);
	pthread_mutex_unlock(&l->lock);
	if (l->started)
		pthread_join(l->thread, NULL);
	l->started = 0;
}

/* Reads the Lease into r. Returns 0, or -1 with a message. */
static int lease_read(struct leader *l, struct leader_record *r, char *err)
{
	const struct kube_opts opts = {.timeout_ms = l->cfg.renew_ms / 2, .once = 1};
	char path[KUBE_PATH_LEN];
	cJSON *obj = NULL;

	if (lease_path(l, 0, path) < 0)
		return err_set(err, "lease '%s/%s': bad name", l->cfg.namespace, l->cfg.name);
	if (kube_send(l->api, "GET", path, NULL, &opts, &obj, NULL, err) < 0)
		return -1;
	record_parse(obj, r);
	cJSON_Delete(obj);
	return 0;
}

int leader_release(struct leader *l, char *err)
{
	struct leader_record r, written = {0};
	int rc = 0;

	if (!get_int(&l->leading))
		return 0;
	set_int(&l->leading, 0);
	pthread_mutex_lock(&l->lock);
	r = l->seen;
	pthread_mutex_unlock(&l->lock);
	/* A renewal cut short by the stop may still have reached the server,
	 * so the version known here can be stale: on 409, read and try again
	 * while this replica still holds the Lease. */
	for (int attempt = 0; attempt < RELEASE_ATTEMPTS; attempt++) {
		if (attempt > 0 && lease_read(l, &r, err) < 0)
			return err_prefix(err, "releasing the Lease");
		if (strcmp(r.holder, l->cfg.identity) != 0)
			return 0; /* not (or no longer) ours */
		/* As client-go releases: no holder, a one-second duration,
		 * the transitions kept. */
		r.holder[0] = '\0';
		r.duration_s = 1;
		timefmt_now_micro(r.renew_time);
		snprintf(r.acquire_time, sizeof(r.acquire_time), "%s", r.renew_time);
		rc = lease_write(l, &r, &written, err);
		if (rc < 0)
			return err_prefix(err, "releasing the Lease");
		if (rc == 1) {
			log_info("leader election: released the Lease %s/%s", l->cfg.namespace,
			         l->cfg.name);
			return 0;
		}
	}
	return err_set(err, "releasing the Lease %s/%s: it kept changing", l->cfg.namespace,
	               l->cfg.name);
}
