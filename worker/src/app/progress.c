/* progress.c - Keras-style progress bar and its JSON twin. */
#include "progress.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BAR_WIDTH      30
#define REDRAW_SECONDS 0.05
#define LINE_LEN       512

double progress_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_init(struct progress *p, FILE *out, int json, long every, long batch,
                   const struct loss_spec *spec)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	p->every = every;
	p->batch = batch;
	if (spec) {
		p->nmetrics = spec->nmetrics < METRICS_MAX ? spec->nmetrics : METRICS_MAX;
		for (int i = 0; i < p->nmetrics; i++)
			p->names[i] = spec->names[i];
	}
	if (json)
		p->mode = PROGRESS_JSON;
	else if (isatty(fileno(out)))
		p->mode = PROGRESS_BAR;
	else
		p->mode = PROGRESS_LINES;
	p->start = p->last = progress_now();
}

/* Keras' number format: 4 decimals, or scientific for tiny values. */
static int fmt_value(char *buf, size_t len, double v)
{
	return snprintf(buf, len, fabs(v) > 1e-3 ? "%.4f" : "%.4e", v);
}

/* " 12ms/step" as Keras' Progbar._format_time prints it. */
static int fmt_per_step(char *buf, size_t len, double seconds)
{
	if (seconds >= 1.0 || seconds == 0.0)
		return snprintf(buf, len, " %.0fs/step", seconds);
	if (seconds >= 1e-3)
		return snprintf(buf, len, " %.0fms/step", seconds * 1e3);
	return snprintf(buf, len, " %.0fus/step", seconds * 1e6);
}

static int fmt_metrics(char *buf, size_t len, const struct progress *p, const char *prefix,
                       const struct metrics *m)
{
	char v[32];
	int n;

	fmt_value(v, sizeof(v), metrics_loss(m));
	n = snprintf(buf, len, " - %sloss: %s", prefix, v);
	for (int i = 0; i < p->nmetrics && n > 0 && (size_t)n < len; i++) {
		fmt_value(v, sizeof(v), metrics_mean(m, i));
		n += snprintf(buf + n, len - n, " - %s%s: %s", prefix, p->names[i], v);
	}
	return n;
}

/* "  7/70 [==>...........................]" */
static int fmt_bar(char *buf, size_t len, long current, long target)
{
	int digits = (int)floor(log10((double)target)) + 1;
	int width = (int)(BAR_WIDTH * (double)current / (double)target);
	int n = snprintf(buf, len, "%*ld/%ld [", digits, current, target);

	for (int i = 0; i < BAR_WIDTH && n + 2 < (int)len; i++) {
		char c = '.';
		if (i < width - 1)
			c = '=';
		else if (i == width - 1)
			c = current < target ? '>' : '=';
		buf[n++] = c;
	}
	return n + snprintf(buf + n, len - n, "]");
}

static void fmt_eta(char *buf, size_t len, double eta)
{
	long s = (long)eta;

	if (s > 3600)
		snprintf(buf, len, " - ETA: %ld:%02ld:%02ld", s / 3600, (s % 3600) / 60, s % 60);
	else if (s > 60)
		snprintf(buf, len, " - ETA: %ld:%02ld", s / 60, s % 60);
	else
		snprintf(buf, len, " - ETA: %lds", s);
}

/* One text line: bar, time, metrics. final selects elapsed time over ETA. */
static void print_text(struct progress *p, long current, const struct metrics *run,
                       const struct metrics *val, int final)
{
	char line[LINE_LEN];
	double elapsed = progress_now() - p->start;
	int n = fmt_bar(line, sizeof(line), current, p->target);

	if (final) {
		n += snprintf(line + n, sizeof(line) - n, " - %.0fs", elapsed);
		n += fmt_per_step(line + n, sizeof(line) - n,
		                  current > p->done ? elapsed / (double)(current - p->done) : 0.0);
	} else {
		double per_step = current > p->done ? elapsed / (double)(current - p->done) : 0.0;
		fmt_eta(line + n, sizeof(line) - n, per_step * (double)(p->target - current));
		n += (int)strlen(line + n);
	}
	n += fmt_metrics(line + n, sizeof(line) - n, p, "", run);
	if (val && (size_t)n < sizeof(line))
		fmt_metrics(line + n, sizeof(line) - n, p, "val_", val);
	if (p->mode == PROGRESS_BAR)
		fprintf(p->out, "\r%s\033[K%s", line, final ? "\n" : "");
	else
		fprintf(p->out, "%s\n", line);
	fflush(p->out);
}

static void print_json(struct progress *p, const char *event, long current, long global_step,
                       const struct metrics *run, const struct metrics *val)
{
	cJSON *o = cJSON_CreateObject();
	double elapsed = progress_now() - p->start;
	char *text;

	cJSON_AddStringToObject(o, "event", event);
	if (strcmp(event, "evaluate") != 0) {
		cJSON_AddNumberToObject(o, "epoch", p->epoch);
		cJSON_AddNumberToObject(o, "epochs", p->epochs);
		cJSON_AddNumberToObject(o, "step", (double)current);
		cJSON_AddNumberToObject(o, "steps", (double)p->target);
		cJSON_AddNumberToObject(o, "global_step", (double)global_step);
	} else {
		cJSON_AddNumberToObject(o, "steps", (double)current);
	}
	cJSON_AddNumberToObject(o, "loss", metrics_loss(run));
	for (int i = 0; i < p->nmetrics; i++)
		cJSON_AddNumberToObject(o, p->names[i], metrics_mean(run, i));
	if (val) {
		char key[80];
		cJSON_AddNumberToObject(o, "val_loss", metrics_loss(val));
		for (int i = 0; i < p->nmetrics; i++) {
			snprintf(key, sizeof(key), "val_%s", p->names[i]);
			cJSON_AddNumberToObject(o, key, metrics_mean(val, i));
		}
	}
	cJSON_AddNumberToObject(o, "examples", run->count);
	cJSON_AddNumberToObject(o, "seconds", elapsed);
	cJSON_AddNumberToObject(o, "ms_per_step",
	                        current > p->done ? elapsed * 1e3 / (double)(current - p->done)
	                                          : 0.0);
	cJSON_AddNumberToObject(o, "samples_per_sec",
	                        elapsed > 0 ? (double)(current - p->done) * p->batch / elapsed
	                                    : 0.0);
	text = cJSON_PrintUnformatted(o);
	if (text) {
		fprintf(p->out, "%s\n", text);
		fflush(p->out);
	}
	free(text);
	cJSON_Delete(o);
}

void progress_epoch_begin(struct progress *p, int epoch, int epochs, long steps, long done)
{
	p->epoch = epoch;
	p->epochs = epochs;
	p->target = steps;
	p->done = done;
	p->start = p->last = progress_now();
	if (p->mode == PROGRESS_BAR || p->mode == PROGRESS_LINES) {
		fprintf(p->out, "Epoch %d/%d\n", epoch, epochs);
		fflush(p->out);
	}
}

void progress_step(struct progress *p, long step, long global_step, const struct metrics *run)
{
	int periodic = p->every > 0 && step % p->every == 0 && step < p->target;

	switch (p->mode) {
	case PROGRESS_BAR:
		if (step < p->target && progress_now() - p->last >= REDRAW_SECONDS) {
			print_text(p, step, run, NULL, 0);
			p->last = progress_now();
		}
		break;
	case PROGRESS_LINES:
		if (periodic)
			print_text(p, step, run, NULL, 0);
		break;
	case PROGRESS_JSON:
		if (periodic)
			print_json(p, "step", step, global_step, run, NULL);
		break;
	case PROGRESS_QUIET:
		break;
	}
}

void progress_epoch_end(struct progress *p, long global_step, const struct metrics *train,
                        const struct metrics *val)
{
	if (p->mode == PROGRESS_JSON)
		print_json(p, "epoch", p->target, global_step, train, val);
	else if (p->mode != PROGRESS_QUIET)
		print_text(p, p->target, train, val, 1);
}

void progress_evaluate_end(struct progress *p, long steps, const struct metrics *test)
{
	p->target = steps;
	if (p->mode == PROGRESS_JSON)
		print_json(p, "evaluate", steps, 0, test, NULL);
	else if (p->mode != PROGRESS_QUIET)
		print_text(p, steps, test, NULL, 1);
}
