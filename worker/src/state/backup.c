/* backup.c - the asynchronous backup writer and the restore at start. */
#include "backup.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "err.h"
#include "log.h"
#include "tensor_mem.h"
#include "worker_metrics.h"

#define DIR_LEN 4096

struct backup {
	char dir[DIR_LEN];
	size_t nparams, nstate;
	int nslots;
	struct checkpoint job; /* the copy being written; its buffers are owned */
	uint64_t last_step;
	struct worker_metrics *metrics; /* NULL: not counted */
	int busy, stop, failed;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work, idle;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void write_job(struct backup *b)
{
	char err[ERR_LEN], path[DIR_LEN + 64];
	double t0 = now_s();
	size_t bytes = (b->nparams * (size_t)(1 + b->nslots) + b->nstate) * sizeof(float);
	int rc = checkpoint_save(b->dir, &b->job, err);
	double took = now_s() - t0;
	struct stat st;

	checkpoint_path(b->dir, b->job.pos.global_step, path, sizeof(path));
	/* The metrics say what is on disk: the file, header included. */
	worker_metrics_backup(b->metrics, b->job.pos.global_step,
	                      rc == 0 && stat(path, &st) == 0 ? (unsigned long long)st.st_size
	                                                      : (unsigned long long)bytes,
	                      (long long)(took * 1e6), rc == 0);
	if (rc < 0)
		log_warn("backup at step %llu failed: %s; training goes on, the previous backup "
		         "is kept",
		         (unsigned long long)b->job.pos.global_step, err);
	else
		log_info("backup at step %llu written to '%s' (%.1f MB in %.0f ms)",
		         (unsigned long long)b->job.pos.global_step, path, (double)bytes / 1e6,
		         took * 1e3);
	pthread_mutex_lock(&b->mu);
	b->failed = rc < 0;
	b->busy = 0;
	pthread_cond_broadcast(&b->idle);
	pthread_mutex_unlock(&b->mu);
}

static void *writer(void *arg)
{
	struct backup *b = arg;
	struct sched_param idle = {0};

	/* Writing a backup is never urgent while training runs: the writer
	 * takes only CPU time the compute threads leave, and whoever must wait
	 * for it (backup_wait) leaves all of it. Failing to lower the priority
	 * changes nothing else. */
	(void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);

	pthread_mutex_lock(&b->mu);
	for (;;) {
		while (!b->busy && !b->stop)
			pthread_cond_wait(&b->work, &b->mu);
		if (!b->busy)
			break;
		pthread_mutex_unlock(&b->mu);
		write_job(b);
		pthread_mutex_lock(&b->mu);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

struct backup *backup_new(const char *dir, size_t nparams, size_t nstate, int nslots)
{
	struct backup *b = xcalloc(1, sizeof(*b));

	snprintf(b->dir, sizeof(b->dir), "%s", dir);
	b->nparams = nparams;
	b->nstate = nstate;
	b->nslots = nslots;
	b->last_step = BACKUP_NONE;
	b->job.params = tensor_alloc(nparams);
	if (nstate)
		b->job.model_state = tensor_alloc(nstate);
	if (nslots)
		b->job.opt_state = tensor_alloc((size_t)nslots * nparams);
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->work, NULL);
	pthread_cond_init(&b->idle, NULL);
	if (pthread_create(&b->thread, NULL, writer, b) != 0)
		die("cannot start the backup thread");
	return b;
}

void backup_free(struct backup *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->mu);
	b->stop = 1;
	pthread_cond_signal(&b->work);
	pthread_mutex_unlock(&b->mu);
	pthread_join(b->thread, NULL);
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->work);
	pthread_cond_destroy(&b->idle);
	tensor_free(b->job.params);
	tensor_free(b->job.model_state);
	tensor_free(b->job.opt_state);
	free(b);
}

int backup_wait(struct backup *b)
{
	int failed;

	pthread_mutex_lock(&b->mu);
	while (b->busy)
		pthread_cond_wait(&b->idle, &b->mu);
	failed = b->failed;
	pthread_mutex_unlock(&b->mu);
	return failed ? -1 : 0;
}

void backup_set_metrics(struct backup *b, struct worker_metrics *m)
{
	b->metrics = m;
}

void backup_start(struct backup *b, const struct checkpoint *c)
{
	float *params = b->job.params, *state = b->job.opt_state, *model = b->job.model_state;

	backup_wait(b);
	/* The writer is idle: the copy is this thread's until busy is set. */
	b->job = *c;
	b->job.params = params;
	b->job.model_state = model;
	b->job.opt_state = state;
	memcpy(params, c->params, b->nparams * sizeof(float));
	if (b->nstate)
		memcpy(model, c->model_state, b->nstate * sizeof(float));
	if (b->nslots)
		memcpy(state, c->opt_state, (size_t)b->nslots * b->nparams * sizeof(float));
	b->last_step = c->pos.global_step;
	pthread_mutex_lock(&b->mu);
	b->busy = 1;
	pthread_cond_signal(&b->work);
	pthread_mutex_unlock(&b->mu);
}

uint64_t backup_last_step(const struct backup *b)
{
	return b->last_step;
}

int backup_restore(const char *dir, struct checkpoint *c, const struct checkpoint_run *run,
                   char *err)
{
	uint64_t steps[CHECKPOINT_MAX_FILES];
	char path[DIR_LEN + 64], why[ERR_LEN];
	int n = checkpoint_list(dir, steps, CHECKPOINT_MAX_FILES, err);

	if (n <= 0)
		return n;
	for (int i = 0; i < n; i++) {
		if (checkpoint_path(dir, steps[i], path, sizeof(path)) < 0)
			return err_set(err, "backup directory '%s': path too long", dir);
		int rc = checkpoint_load(path, c, why);
		if (rc == 0 && checkpoint_check_position(&c->pos, run, why) < 0)
			return err_set(
			    err,
			    "backup '%s' cannot be resumed: %s; it is left as it is (move it "
			    "away to start over)",
			    path, why);
		if (rc == 0)
			return 1;
		if (rc == CHECKPOINT_INCOMPATIBLE)
			return err_set(err, "%s", why);
		log_warn("backup %s is damaged, passing over it: %s", path, why);
	}
	return err_set(err,
	               "backup directory '%s' holds %d backup(s) and none is sound; move them "
	               "away to start training over",
	               dir, n);
}
