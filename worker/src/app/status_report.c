/* status_report.c - the chief's reports to the operator, over libcurl,
 * from a thread of their own; see status_report.h. */
#include "status_report.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atomic_file.h"
#include "err.h"
#include "json.h"
#include "json_out.h"
#include "log.h"
#include "net.h"
#include "version.h"

struct status_report {
	struct worker_metrics *m;
	char *url, *ca_file, *token_file;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* CLOCK_MONOTONIC */
	int stopping, kicked;
	long long last_ms;  /* the last send began; -1: none yet */
	long long until_ms; /* a 429's Retry-After: nothing before */
	CURL *curl;
	unsigned long failures; /* in a row */
	unsigned long sent;
};

/* --- The body --- */

static void put_metrics(cJSON *o, const char *name, const struct worker_metrics_snapshot *s,
                        const double *values, const double *loss)
{
	cJSON *map = json_out_obj(o, name);

	if (loss != NULL && isfinite(*loss))
		json_out_num(map, "loss", *loss);
	for (int i = 0; i < s->nmetrics && i < WORKER_METRICS_MAX; i++)
		if (isfinite(values[i]))
			json_out_num(map, s->names[i], values[i]);
}

cJSON *status_report_body(const struct worker_metrics_snapshot *s)
{
	cJSON *body = json_out_new(), *t = json_out_obj(body, "training");

	if (s->epochs > 0) {
		json_out_num(t, "epochs", s->epochs);
		if (s->epoch >= 1 && s->epoch <= s->epochs)
			json_out_num(t, "epoch", s->epoch);
	}
	if (s->steps_per_epoch > 0) {
		json_out_num(t, "stepsPerEpoch", (double)s->steps_per_epoch);
		if (s->step >= 0 && s->step <= s->steps_per_epoch)
			json_out_num(t, "step", (double)s->step);
	}
	json_out_num(t, "globalStep", (double)s->global_step);
	if (s->total_steps > 0 && s->global_step <= s->total_steps)
		json_out_num(t, "totalSteps", (double)s->total_steps);
	/* A NaN loss (diverged) is left out: JSON has no NaN. */
	if (s->steps_done > 0 && isfinite(s->loss)) {
		json_out_num(t, "loss", s->loss);
		put_metrics(t, "metrics", s, s->metrics, NULL);
	}
	if (s->have_validation)
		put_metrics(t, "validation", s, s->val_metrics, &s->val_loss);
	if (s->steps_done > 0)
		json_out_num(t, "samplesPerSecond", s->samples_per_second);
	if (s->seconds_left >= 0)
		json_out_num(t, "estimatedSecondsLeft", floor(s->seconds_left + 0.5));
	if (s->last_backup_step >= 0 && (uint64_t)s->last_backup_step <= s->global_step)
		json_out_num(t, "lastBackupStep", (double)s->last_backup_step);
	if (s->learning_rate >= 0 && isfinite(s->learning_rate))
		json_out_num(t, "learningRate", s->learning_rate);
	return body;
}

/* --- One request --- */

/* The token, read again each time (the kubelet rotates it), trimmed. */
static char *read_token(const char *path, char *err)
{
	unsigned char *data = NULL;
	size_t n = 0;
	char *tok;

	if (file_read_all(path, STATUS_REPORT_TOKEN_MAX, &data, &n, err) < 0)
		return NULL;
	while (n > 0 && (data[n - 1] == '\n' || data[n - 1] == '\r' || data[n - 1] == ' '))
		n--;
	if (n == 0) {
		free(data);
		err_set(err, "token file '%s' is empty", path);
		return NULL;
	}
	tok = xcalloc(n + 1, 1);
	memcpy(tok, data, n);
	free(data);
	return tok;
}

struct reply {
	char text[1024];
	size_t len;
};

static size_t keep_reply(char *p, size_t size, size_t n, void *ctx)
{
	struct reply *r = ctx;
	size_t k = size * n, room = sizeof(r->text) - 1 - r->len;

	memcpy(r->text + r->len, p, k < room ? k : room);
	r->len += k < room ? k : room;
	r->text[r->len] = '\0';
	return size * n;
}

/* The message of a Status answer, or the HTTP code. */
static void why_refused(char *err, long code, const struct reply *r)
{
	cJSON *status = json_parse(r->text, r->len, NULL);
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(status, "message");

	if (cJSON_IsString(msg))
		err_set(err, "HTTP %ld: %s", code, msg->valuestring);
	else
		err_set(err, "HTTP %ld", code);
	cJSON_Delete(status);
}

/* POSTs body. Returns the HTTP status (0: none came, err says why);
 * *retry_s: a 429's Retry-After. */
static long post(struct status_report *r, const char *body, long *retry_s, char *err)
{
	struct curl_slist *headers = NULL;
	struct reply reply = {.len = 0};
	char *token = read_token(r->token_file, err), *auth;
	long code = 0;
	CURLcode rc;

	*retry_s = 0;
	if (token == NULL)
		return 0;
	auth = xcalloc(strlen(token) + 32, 1);
	sprintf(auth, "Authorization: Bearer %s", token);
	free(token);
	headers = curl_slist_append(headers, auth);
	headers = curl_slist_append(headers, "Content-Type: application/json");
	free(auth);
	curl_easy_setopt(r->curl, CURLOPT_URL, r->url);
	curl_easy_setopt(r->curl, CURLOPT_CAINFO, r->ca_file);
	curl_easy_setopt(r->curl, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(r->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(r->curl, CURLOPT_USERAGENT, "mwj-worker/" MWJ_RELEASE);
	curl_easy_setopt(r->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)STATUS_REPORT_TIMEOUT_MS / 2);
	curl_easy_setopt(r->curl, CURLOPT_TIMEOUT_MS, (long)STATUS_REPORT_TIMEOUT_MS);
	curl_easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, keep_reply);
	curl_easy_setopt(r->curl, CURLOPT_WRITEDATA, &reply);
	rc = curl_easy_perform(r->curl);
	curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(headers);
	if (rc != CURLE_OK) {
		err_set(err, "%s", curl_easy_strerror(rc));
		return 0;
	}
	curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code == 429) {
		curl_off_t after = 0;

		curl_easy_getinfo(r->curl, CURLINFO_RETRY_AFTER, &after);
		*retry_s = after > 0 && after < 3600 ? (long)after : 1;
	}
	if (code != 200)
		why_refused(err, code, &reply);
	return code;
}

/* One report of the newest snapshot, with a 503's one retry. Returns 0
 * when there is nothing to report yet (where training stands is not
 * known: a backup or a peer's state still to load), 1 otherwise. */
static int report_once(struct status_report *r)
{
	struct worker_metrics_snapshot s;
	char err[ERR_LEN] = "", *text;
	long code, retry_s = 0;
	cJSON *body;

	worker_metrics_snapshot(r->m, &s, worker_metrics_now_us());
	if (s.epoch == 0)
		return 0;
	body = status_report_body(&s);
	text = json_print(body);
	cJSON_Delete(body);
	if (text == NULL)
		die("out of memory printing a report");
	code = post(r, text, &retry_s, err);
	if (code == 503)
		code =
		    post(r, text, &retry_s, err); /* a standby: the Service may pick the leader */
	free(text);
	if (code == 429) {
		pthread_mutex_lock(&r->lock);
		r->until_ms = net_now_ms() + retry_s * 1000;
		pthread_mutex_unlock(&r->lock);
	}
	if (code == 200) {
		if (r->failures > 0)
			log_info("status: reports reach the operator again, after %lu that did not",
			         r->failures);
		r->failures = 0;
		r->sent++;
		return 1;
	}
	if (r->failures++ == 0)
		log_warn("status: a report to the operator failed (%s); training goes on, the next "
		         "reports are tried as usual and their failures logged at debug level",
		         err);
	else
		log_debug("status: a report failed: %s", err);
	return 1;
}

/* --- The thread --- */

static void *reporter_main(void *arg)
{
	struct status_report *r = arg;

	pthread_mutex_lock(&r->lock);
	while (!r->stopping) {
		long long now = net_now_ms(), due;
		struct timespec until;

		due = r->last_ms < 0 ? now
		      : r->kicked    ? r->last_ms + STATUS_REPORT_MIN_GAP_MS
		                     : r->last_ms + STATUS_REPORT_INTERVAL_MS;
		if (due < r->until_ms)
			due = r->until_ms;
		if (now < due) {
			until.tv_sec = (time_t)(due / 1000);
			until.tv_nsec = (long)(due % 1000) * 1000000;
			pthread_cond_timedwait(&r->wake, &r->lock, &until);
			continue;
		}
		r->kicked = 0;
		r->last_ms = now;
		pthread_mutex_unlock(&r->lock);
		int sent = report_once(r);
		pthread_mutex_lock(&r->lock);
		if (!sent) /* look again soon; the trainer kicks once it knows */
			r->last_ms = now - STATUS_REPORT_INTERVAL_MS + STATUS_REPORT_POLL_MS;
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

static char *env_copy(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && v[0] ? strdup(v) : NULL;
}

struct status_report *status_report_start(struct worker_metrics *m)
{
	struct status_report *r = xcalloc(1, sizeof(*r));
	pthread_condattr_t attr;

	r->m = m;
	r->url = env_copy("MWJ_STATUS_URL");
	r->ca_file = env_copy("MWJ_STATUS_CA_FILE");
	r->token_file = env_copy("MWJ_STATUS_TOKEN_FILE");
	r->last_ms = -1;
	if (r->url == NULL || r->ca_file == NULL || r->token_file == NULL) {
		if (r->url || r->ca_file || r->token_file)
			log_warn(
			    "status: MWJ_STATUS_URL, MWJ_STATUS_CA_FILE and MWJ_STATUS_TOKEN_FILE "
			    "go together, and only some are set: no reports");
		goto none;
	}
	if (strncmp(r->url, "https://", 8) != 0) {
		log_warn("status: MWJ_STATUS_URL '%s' is not https://: no reports", r->url);
		goto none;
	}
	r->curl = curl_easy_init();
	if (r->curl == NULL) {
		log_warn("status: curl_easy_init failed: no reports");
		goto none;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&r->wake, &attr);
	pthread_condattr_destroy(&attr);
	if (pthread_create(&r->thread, NULL, reporter_main, r) != 0)
		die("pthread_create: the status reporter");
	log_info("status: reporting training to %s", r->url);
	return r;
none:
	free(r->url);
	free(r->ca_file);
	free(r->token_file);
	free(r);
	return NULL;
}

void status_report_kick(struct status_report *r)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&r->lock);
	r->kicked = 1;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
}

void status_report_stop(struct status_report *r, int last)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&r->lock);
	r->stopping = 1;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	if (last)
		(void)report_once(r);
	curl_easy_cleanup(r->curl);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->wake);
	free(r->url);
	free(r->ca_file);
	free(r->token_file);
	free(r);
}
