/* training.c - a chief's training report, read strictly; status.training,
 * read tolerantly and written; the ETA as kubectl writes a duration. */
#include "training.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "json_in.h"
#include "json_out.h"

/* Loss, metrics and rates are kept to this many significant digits: a
 * column of `kubectl get` reads 0.41235, not 0.41234567891234. */
#define TRAINING_DIGITS 6

static double rounded(double v)
{
	char buf[40];

	snprintf(buf, sizeof(buf), "%.*g", TRAINING_DIGITS, v);
	return strtod(buf, NULL);
}

/* --- The ETA --- */

/* k8s.io/apimachinery/pkg/util/duration HumanDuration, which `kubectl
 * get` uses for AGE: about two or three significant figures. */
void training_format_eta(long long s, char *out)
{
	const size_t n = TRAINING_ETA_LEN;
	long long m = s / 60, h = s / 3600, d = h / 24;

	if (s < 0)
		out[0] = '\0';
	else if (s < 120)
		snprintf(out, n, "%llds", s);
	else if (m < 10)
		snprintf(out, n, s % 60 ? "%lldm%llds" : "%lldm", m, s % 60);
	else if (m < 180)
		snprintf(out, n, "%lldm", m);
	else if (h < 8)
		snprintf(out, n, m % 60 ? "%lldh%lldm" : "%lldh", h, m % 60);
	else if (h < 48)
		snprintf(out, n, "%lldh", h);
	else if (h < 24LL * 8)
		snprintf(out, n, h % 24 ? "%lldd%lldh" : "%lldd", d, h % 24);
	else if (h < 24LL * 365 * 2)
		snprintf(out, n, "%lldd", d);
	else if (h < 24LL * 365 * 8)
		snprintf(out, n, d % 365 ? "%lldy%lldd" : "%lldy", d / 365, d % 365);
	else
		snprintf(out, n, "%lldy", d / 365);
}

/* percent and eta, from what was reported. */
static void derive(struct training_status *t)
{
	t->percent = -1;
	if (t->total_steps > 0 && t->global_step >= 0) {
		long long done = t->global_step > t->total_steps ? t->total_steps : t->global_step;

		t->percent = (int)(done * 100 / t->total_steps);
	}
	training_format_eta(t->eta_seconds, t->eta);
}

static void unknown(struct training_status *t)
{
	memset(t, 0, sizeof(*t));
	t->epoch = t->epochs = t->step = t->steps_per_epoch = -1;
	t->global_step = t->total_steps = -1;
	t->eta_seconds = t->last_backup_step = -1;
	t->percent = -1;
	training_forget_resume(t);
}

/* --- Reading a report --- */

static int name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= TRAINING_NAME_LEN)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == ':' || c == '-'))
			return 0;
	}
	return 1;
}

/* A map of metric names to numbers, e.g. training.metrics. A null value
 * (a NaN the worker could not write as JSON) is left out. */
static int metrics_parse(struct training_metric *out, int *n, const cJSON *map, const char *path,
                         char *err)
{
	const cJSON *it;

	*n = 0;
	if (map == NULL || cJSON_IsNull(map))
		return 0;
	if (!cJSON_IsObject(map))
		return err_set(err, "'%s' must be an object of names to numbers", path);
	cJSON_ArrayForEach(it, map)
	{
		if (!name_ok(it->string))
			return err_set(err,
			               "'%s': a metric name must be 1 to %d of [A-Za-z0-9_.:-]",
			               path, TRAINING_NAME_LEN - 1);
		if (cJSON_IsNull(it))
			continue;
		if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
			return err_set(err, "'%s.%s' must be a number", path, it->string);
		if (*n == TRAINING_METRICS_MAX)
			return err_set(err, "'%s' holds more than %d metrics", path,
			               TRAINING_METRICS_MAX);
		for (int i = 0; i < *n; i++)
			if (strcmp(out[i].name, it->string) == 0)
				return err_set(err, "'%s.%s' appears twice", path, it->string);
		strcpy(out[*n].name, it->string);
		out[*n].value = rounded(it->valuedouble);
		(*n)++;
	}
	return 0;
}

/* An optional count in [0, TRAINING_COUNT_MAX] (min 1 when positive). */
static int count_parse(const cJSON *o, const char *name, long long min, long long *out, char *err)
{
	int64_t v = -1;

	if (json_opt_i64(o, "training", name, min, TRAINING_COUNT_MAX, &v, err) < 0)
		return -1;
	*out = v;
	return 0;
}

/* An optional finite number, at least min (-INFINITY: any); *has says
 * whether it was there. A loss may be negative (Keras' cosine
 * similarity), a rate may not. */
static int number_parse(const cJSON *o, const char *name, double min, double *out, int *has,
                        char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	*has = 0;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return err_set(err, "'training.%s' must be a number", name);
	if (v->valuedouble < min)
		return err_set(err, "'training.%s' must be %g or more", name, min);
	*out = rounded(v->valuedouble);
	*has = 1;
	return 0;
}

static int counts_parse(struct training_status *t, const cJSON *o, char *err)
{
	int64_t global = 0;

	if (json_get_i64(o, "training", "globalStep", 0, TRAINING_COUNT_MAX, &global, err) < 0)
		return -1;
	t->global_step = global;
	if (count_parse(o, "epoch", 1, &t->epoch, err) < 0 ||
	    count_parse(o, "epochs", 1, &t->epochs, err) < 0 ||
	    count_parse(o, "step", 0, &t->step, err) < 0 ||
	    count_parse(o, "stepsPerEpoch", 1, &t->steps_per_epoch, err) < 0 ||
	    count_parse(o, "totalSteps", 1, &t->total_steps, err) < 0 ||
	    count_parse(o, "estimatedSecondsLeft", 0, &t->eta_seconds, err) < 0 ||
	    count_parse(o, "lastBackupStep", 0, &t->last_backup_step, err) < 0)
		return -1;
	if (t->total_steps >= 0 && t->global_step > t->total_steps)
		return err_set(err,
		               "'training.globalStep' %lld is beyond 'training.totalSteps' %lld",
		               t->global_step, t->total_steps);
	if (t->epochs >= 0 && t->epoch > t->epochs)
		return err_set(err, "'training.epoch' %lld is beyond 'training.epochs' %lld",
		               t->epoch, t->epochs);
	if (t->steps_per_epoch >= 0 && t->step > t->steps_per_epoch)
		return err_set(err, "'training.step' %lld is beyond 'training.stepsPerEpoch' %lld",
		               t->step, t->steps_per_epoch);
	if (t->last_backup_step > t->global_step)
		return err_set(
		    err, "'training.lastBackupStep' %lld is beyond 'training.globalStep' %lld",
		    t->last_backup_step, t->global_step);
	return 0;
}

static int report_fields(struct training_status *t, const cJSON *o, char *err)
{
	if (counts_parse(t, o, err) < 0)
		return -1;
	if (number_parse(o, "loss", -INFINITY, &t->loss, &t->has_loss, err) < 0 ||
	    number_parse(o, "samplesPerSecond", 0, &t->samples_per_second, &t->has_rate, err) < 0 ||
	    number_parse(o, "learningRate", 0, &t->learning_rate, &t->has_learning_rate, err) < 0)
		return -1;
	if (metrics_parse(t->metrics, &t->nmetrics, cJSON_GetObjectItemCaseSensitive(o, "metrics"),
	                  "training.metrics", err) < 0 ||
	    metrics_parse(t->validation, &t->nvalidation,
	                  cJSON_GetObjectItemCaseSensitive(o, "validation"), "training.validation",
	                  err) < 0)
		return -1;
	return 0;
}

int training_report_parse(struct training_status *t, const char *body, size_t len, const char *now,
                          char *err)
{
	cJSON *doc = NULL;
	const cJSON *o = NULL;
	int rc = -1;

	unknown(t);
	if (len > TRAINING_REPORT_MAX) {
		err_set(err, "a report of %zu bytes is over the %d-byte limit", len,
		        TRAINING_REPORT_MAX);
		goto out;
	}
	doc = json_parse(body, len, err);
	if (doc == NULL)
		goto out;
	if (!cJSON_IsObject(doc)) {
		err_set(err, "a report must be a JSON object");
		goto out;
	}
	if (json_get_object(doc, "", "training", &o, err) < 0 || report_fields(t, o, err) < 0)
		goto out;
	t->present = 1;
	json_in_copy_cut(t->reported, sizeof(t->reported), now);
	derive(t);
	rc = 0;
out:
	cJSON_Delete(doc);
	if (rc < 0)
		unknown(t);
	return rc;
}

/* --- Reading the status back --- */

static long long count_or_unknown(const cJSON *o, const char *name)
{
	char ignored[ERR_LEN];
	int64_t v = -1;

	if (json_opt_i64(o, "", name, 0, TRAINING_COUNT_MAX, &v, ignored) < 0)
		return -1;
	return v;
}

static void number_or_unknown(const cJSON *o, const char *name, double *out, int *has)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	*has = cJSON_IsNumber(v) && isfinite(v->valuedouble);
	if (*has)
		*out = v->valuedouble;
}

static void metrics_read(struct training_metric *out, int *n, const cJSON *map)
{
	const cJSON *it;

	*n = 0;
	if (!cJSON_IsObject(map))
		return;
	cJSON_ArrayForEach(it, map)
	{
		if (*n == TRAINING_METRICS_MAX)
			return;
		if (!name_ok(it->string) || !cJSON_IsNumber(it) || !isfinite(it->valuedouble))
			continue;
		strcpy(out[*n].name, it->string);
		out[*n].value = it->valuedouble;
		(*n)++;
	}
}

void training_status_parse(struct training_status *t, const cJSON *o)
{
	const char *reported = json_in_str(o, "reportTime");

	unknown(t);
	if (!cJSON_IsObject(o))
		return;
	t->present = 1;
	t->epoch = count_or_unknown(o, "epoch");
	t->epochs = count_or_unknown(o, "epochs");
	t->step = count_or_unknown(o, "step");
	t->steps_per_epoch = count_or_unknown(o, "stepsPerEpoch");
	t->global_step = count_or_unknown(o, "globalStep");
	t->total_steps = count_or_unknown(o, "totalSteps");
	t->eta_seconds = count_or_unknown(o, "estimatedSecondsLeft");
	t->last_backup_step = count_or_unknown(o, "lastBackupStep");
	number_or_unknown(o, "loss", &t->loss, &t->has_loss);
	number_or_unknown(o, "samplesPerSecond", &t->samples_per_second, &t->has_rate);
	number_or_unknown(o, "learningRate", &t->learning_rate, &t->has_learning_rate);
	metrics_read(t->metrics, &t->nmetrics, cJSON_GetObjectItemCaseSensitive(o, "metrics"));
	metrics_read(t->validation, &t->nvalidation,
	             cJSON_GetObjectItemCaseSensitive(o, "validation"));
	json_in_copy_cut(t->reported, sizeof(t->reported), reported);
	derive(t);
}

/* --- Writing --- */

static void put_count(cJSON *o, const char *name, long long v)
{
	if (v >= 0)
		json_out_num(o, name, (double)v);
}

static void put_metrics(cJSON *o, const char *name, const struct training_metric *m, int n)
{
	cJSON *map;

	if (n <= 0)
		return;
	map = json_out_obj(o, name);
	for (int i = 0; i < n; i++)
		json_out_num(map, m[i].name, m[i].value);
}

cJSON *training_status_to_json(const struct training_status *t)
{
	cJSON *o;

	if (!t->present)
		return NULL;
	o = json_out_new();
	put_count(o, "epoch", t->epoch);
	put_count(o, "epochs", t->epochs);
	put_count(o, "step", t->step);
	put_count(o, "stepsPerEpoch", t->steps_per_epoch);
	put_count(o, "globalStep", t->global_step);
	put_count(o, "totalSteps", t->total_steps);
	put_count(o, "percent", t->percent);
	if (t->percent >= 0) {
		char progress[16];

		snprintf(progress, sizeof(progress), "%d%%", t->percent);
		json_out_str(o, "progress", progress);
	}
	if (t->has_loss)
		json_out_num(o, "loss", t->loss);
	put_metrics(o, "metrics", t->metrics, t->nmetrics);
	put_metrics(o, "validation", t->validation, t->nvalidation);
	if (t->has_rate)
		json_out_num(o, "samplesPerSecond", t->samples_per_second);
	put_count(o, "estimatedSecondsLeft", t->eta_seconds);
	if (t->eta[0] != '\0')
		json_out_str(o, "eta", t->eta);
	put_count(o, "lastBackupStep", t->last_backup_step);
	if (t->has_learning_rate)
		json_out_num(o, "learningRate", t->learning_rate);
	if (t->reported[0] != '\0')
		json_out_str(o, "reportTime", t->reported);
	return o;
}

void training_forget_resume(struct training_status *t)
{
	t->resumed_from = t->resumed_backup = -1;
	t->new_chief = 0;
}
