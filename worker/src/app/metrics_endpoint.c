/* metrics_endpoint.c - the worker's /metrics; see metrics_endpoint.h. */
#include "metrics_endpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "gpu.h"
#include "log.h"
#include "prom_text.h"

#define P "mwj_worker_"

static unsigned long long load(const unsigned long long *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

static void histogram_out(FILE *f, const char *name, const char *help, const struct histogram *h)
{
	unsigned long cum[HISTOGRAM_BUCKETS], count;
	double sum;

	prom_family(f, name, "histogram", help);
	histogram_read(h, cum, &count, &sum);
	prom_histogram(f, name, histogram_bounds, cum, HISTOGRAM_BUCKETS, count, sum);
}

static void info_out(FILE *f, const struct worker_metrics_snapshot *s)
{
	char rank[16], world[16];
	const struct worker_metrics_info *in = &s->info;

	if (!s->have_info)
		return;
	snprintf(rank, sizeof(rank), "%d", in->rank);
	snprintf(world, sizeof(world), "%d", in->world);
	struct prom_label l[5] = {{"rank", rank},
	                          {"world", world},
	                          {"job", in->job},
	                          {"backend", in->backend ? in->backend : ""},
	                          {"communicator", in->communicator ? in->communicator : ""}};
	prom_family(f, P "info", "gauge",
	            "This worker: its rank of world, job (MWJ_JOB_NAME), backend and "
	            "communicator, as labels");
	prom_sample(f, P "info", l, 5, 1);
}

/* What this process did: steps, examples, the collectives. */
static void work_out(FILE *f, struct worker_metrics *m, const struct worker_metrics_snapshot *s)
{
	prom_single(f, P "steps_total", "counter", "Training steps this process completed",
	            (double)s->steps_done);
	prom_single(f, P "examples_total", "counter",
	            "Training examples this worker computed (its share of each global batch)",
	            (double)s->examples);
	histogram_out(f, P "step_duration_seconds",
	              "Wall time of one training step: forward, backward, all-reduce, update",
	              &m->step_time);
	prom_single(f, P "allreduce_seconds_total", "counter",
	            "Time spent in host all-reduces across workers (on NCCL the device sums pass "
	            "within the step time)",
	            (double)load(&m->allreduce_us) / 1e6);
	prom_single(f, P "allreduce_bytes_total", "counter",
	            "Bytes of this worker's buffers summed across workers (gradients, metric sums)",
	            (double)load(&m->allreduce_bytes));
	histogram_out(
	    f, P "rendezvous_duration_seconds",
	    "Time to form the ring with the other workers, at start and after a lost peer",
	    &m->rendezvous_time);
	prom_single(f, P "resyncs_total", "counter",
	            "Resynchronizations after a lost peer that ended with the ring formed again",
	            (double)load(&m->resyncs));
	histogram_out(f, P "resync_duration_seconds",
	              "Time from a lost peer to training again, the state handed over",
	              &m->resync_time);
}

/* Where training stands and its figures. */
static void training_out(FILE *f, const struct worker_metrics_snapshot *s)
{
	prom_single(f, P "epoch", "gauge", "The epoch under way, from 1 (0 before training)",
	            s->epoch);
	prom_single(f, P "epochs", "gauge", "Epochs the run trains", s->epochs);
	prom_single(f, P "epoch_step", "gauge", "Steps of the epoch under way done",
	            (double)s->step);
	prom_single(f, P "steps_per_epoch", "gauge", "Steps in each epoch",
	            (double)s->steps_per_epoch);
	prom_single(f, P "global_step", "gauge",
	            "Global steps done since the run began, those restored from a backup included",
	            (double)s->global_step);
	prom_single(f, P "learning_rate", "gauge", "The optimizer's learning rate",
	            s->learning_rate);
	prom_single(f, P "loss", "gauge",
	            "The training loss: the epoch's running mean over every worker, as the "
	            "progress line shows it",
	            s->loss);
	if (s->nmetrics > 0) {
		prom_family(f, P "metric", "gauge",
		            "Each compiled metric: the epoch's running mean over every worker");
		for (int i = 0; i < s->nmetrics; i++) {
			struct prom_label l = {"metric", s->names[i]};
			prom_sample(f, P "metric", &l, 1, s->metrics[i]);
		}
	}
	if (!s->have_validation)
		return;
	prom_single(f, P "validation_loss", "gauge", "The validation loss after the last epoch",
	            s->val_loss);
	if (s->nmetrics > 0) {
		prom_family(f, P "validation_metric", "gauge",
		            "Each compiled metric on the validation data after the last epoch");
		for (int i = 0; i < s->nmetrics; i++) {
			struct prom_label l = {"metric", s->names[i]};
			prom_sample(f, P "validation_metric", &l, 1, s->val_metrics[i]);
		}
	}
}

/* The chief's backups, where it writes them. */
static void backups_out(FILE *f, struct worker_metrics *m, const struct worker_metrics_snapshot *s)
{
	if (!s->have_info || !s->info.writes_backups)
		return;
	histogram_out(f, P "backup_duration_seconds",
	              "Time to write one backup: the file, its fsync and rename", &m->backup_time);
	prom_single(f, P "backup_size_bytes", "gauge", "Size of the last backup file written",
	            (double)load(&m->backup_bytes));
	prom_single(f, P "backup_failures_total", "counter",
	            "Backups that could not be written (training went on, the previous kept)",
	            (double)load(&m->backup_failures));
	if (s->last_backup_step != WORKER_METRICS_NONE)
		prom_single(f, P "last_backup_step", "gauge",
		            "Global step of the last backup written", (double)s->last_backup_step);
}

/* The GPUs trained on; none where the CUDA backend is not active. */
static void gpus_out(FILE *f, const struct worker_metrics_snapshot *s)
{
	int family = 0;

	for (int i = 0; s->have_info && i < s->info.gpus; i++) {
		unsigned long long used;
		char gpu[16];
		if (gpu_memory_used(i, &used) < 0)
			continue;
		if (!family)
			prom_family(
			    f, P "gpu_memory_used_bytes", "gauge",
			    "Memory in use on each GPU this worker trains on (the device's)");
		family = 1;
		snprintf(gpu, sizeof(gpu), "%d", i);
		struct prom_label l = {"gpu", gpu};
		prom_sample(f, P "gpu_memory_used_bytes", &l, 1, (double)used);
	}
}

char *metrics_endpoint_render(struct worker_metrics *m, size_t *len)
{
	struct worker_metrics_snapshot s;
	char *text = NULL;
	FILE *f;

	worker_metrics_snapshot(m, &s, worker_metrics_now_us());
	f = open_memstream(&text, len);
	if (f == NULL)
		return NULL;
	info_out(f, &s);
	work_out(f, m, &s);
	training_out(f, &s);
	backups_out(f, m, &s);
	gpus_out(f, &s);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

static enum MHD_Result on_request(void *ctx, struct MHD_Connection *conn, const char *url)
{
	struct metrics_endpoint *e = ctx;
	size_t len = 0;
	char *body;

	if (strcmp(url, "/metrics") != 0)
		return http_listen_text(conn, MHD_HTTP_NOT_FOUND, "404 page not found\n");
	body = metrics_endpoint_render(e->m, &len);
	if (body == NULL)
		return http_listen_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	return http_listen_reply(conn, MHD_HTTP_OK, PROM_CONTENT_TYPE, body, len, 1);
}

int metrics_endpoint_start(struct metrics_endpoint *e, struct worker_metrics *m, const char *addr,
                           char *err)
{
	unsigned int limit = http_listen_connection_limit(1);

	e->m = m;
	if (http_listen_start(&e->l, addr, limit, on_request, e, err) < 0)
		return -1;
	log_info("serving /metrics on port %d (up to %u connections, idle ones closed after %d s)",
	         e->l.port, limit, HTTP_LISTEN_IDLE_TIMEOUT_S);
	return 0;
}

void metrics_endpoint_stop(struct metrics_endpoint *e)
{
	http_listen_stop(&e->l);
}
