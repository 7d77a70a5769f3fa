/* bench_backup.c - what backups cost.
 *
 *   backup_io        save and restore time of one backup of the cnn model
 *                    (SGD: weights only; Adam: weights and two moments),
 *                    written as the chief writes it (temp file, fsync,
 *                    rename, fsync of the directory) into --dir, and the
 *                    time the training thread itself spends per backup
 *                    (copying the state for the writer thread).
 *   backup_overhead  training throughput of one worker with --save-freq 100
 *                    against no backups, at 1 and 2 threads: runs with and
 *                    without alternate, and the overhead is the median of
 *                    the adjacent pairs' differences (every pair is listed:
 *                    on this shared machine they spread by several percent
 *                    either way). Next to it, a bound that noise cannot
 *                    blur: the CPU time one backup takes (the training
 *                    thread's copy plus the writing) over the time of the
 *                    100 steps between backups.
 *
 * usage: bench_backup [--dir DIR] [--reps N] [--steps N] [--threads 1|2]
 * --threads limits the overhead measurement to that thread count.
 * DIR defaults to a new directory under $TMPDIR (or /tmp), removed at the
 * end; give one on the disk that will hold the backups to measure that disk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backup.h"
#include "bench_stats.h"
#include "blas_cpu.h"
#include "checkpoint.h"
#include "compile_config.h"
#include "err.h"
#include "keras_model.h"
#include "log.h"
#include "model.h"
#include "optimizer.h"
#include "parse.h"
#include "progress.h"
#include "trainer.h"

#define MAX_REPS 50

/* CPU time of the calling thread, in ms. */
static double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* What one backup costs the CPUs: the training thread's copy, and the CPU
 * time of writing it (what the writer thread spends), in ms. */
struct backup_cost {
	double copy_ms, write_cpu_ms;
};

static struct backup_cost bench_io(const char *dir, enum optimizer_kind kind, int reps)
{
	char err[ERR_LEN], path[4200];
	struct keras_model km = {0};
	struct model *m = NULL;
	struct optimizer o;
	double save[MAX_REPS], load[MAX_REPS], snap[MAX_REPS], cpu[MAX_REPS];
	struct stat st = {0};

	if (keras_model_builtin(&km, "cnn", err) < 0)
		die("%s", err);
	m = model_new(&km, 64, 0, err);
	if (!m)
		die("%s", err);
	model_init_params(m, &km, 42);
	optimizer_init(&o, kind, 0.001f, 0.0f, m->nparams);
	for (size_t i = 0; i < (size_t)o.nslots * m->nparams; i++)
		o.state[i] = (float)(i % 1000) * 1e-4f;
	struct checkpoint c = {.pos = {.world = 1, .batch_size = 64},
	                       .seed = 42,
	                       .arch_hash = m->arch_hash,
	                       .nparams = m->nparams,
	                       .nstate = m->nstate,
	                       .optimizer = kind,
	                       .nslots = o.nslots,
	                       .learning_rate = 0.001,
	                       .params = m->params,
	                       .model_state = m->nstate ? m->state : NULL,
	                       .opt_state = o.state};
	snprintf(c.model, sizeof(c.model), "%s", m->name);
	/* The asynchronous writer gets a directory of its own: two writers in
	 * one directory would prune each other's temporary files. */
	char async_dir[4200];
	snprintf(async_dir, sizeof(async_dir), "%s/async", dir);
	struct backup *b = backup_new(async_dir, m->nparams, m->nstate, o.nslots);
	log_set_level(LOG_ERROR);
	/* The steady state of a long run: the first saves also fill the page
	 * cache, which later saves reuse as pruning frees the older files. */
	for (int r = 0; r < 3; r++) {
		c.pos.global_step = 1000 + (uint64_t)r;
		if (checkpoint_save(dir, &c, err) < 0)
			die("%s", err);
	}
	for (int r = 0; r < reps; r++) {
		c.pos.global_step = 2000 + (uint64_t)r;
		double t0 = progress_now(), c0 = thread_cpu_ms();
		if (checkpoint_save(dir, &c, err) < 0)
			die("%s", err);
		save[r] = (progress_now() - t0) * 1e3;
		cpu[r] = thread_cpu_ms() - c0;
		if (checkpoint_path(dir, c.pos.global_step, path, sizeof(path)) < 0)
			die("path too long");
		if (stat(path, &st) < 0)
			die("stat '%s' failed", path);
		t0 = progress_now();
		if (checkpoint_load(path, &c, err) < 0)
			die("%s", err);
		load[r] = (progress_now() - t0) * 1e3;
		/* The trainer's share: backup_start with the writer idle. */
		backup_wait(b);
		t0 = progress_now();
		backup_start(b, &c);
		snap[r] = (progress_now() - t0) * 1e3;
	}
	backup_free(b);
	checkpoint_remove_all(dir, err);
	checkpoint_remove_all(async_dir, err);
	rmdir(async_dir);
	printf("{\"bench\":\"backup_io\",\"model\":\"cnn\",\"optimizer\":\"%s\",\"bytes\":%zu,"
	       "\"reps\":%d,\"save_ms_median\":%.2f,\"save_cpu_ms_median\":%.2f,"
	       "\"restore_ms_median\":%.2f,\"training_thread_ms_per_backup\":%.2f}\n",
	       optimizer_name(kind), (size_t)st.st_size, reps, bench_median(save, reps),
	       bench_median(cpu, reps), bench_median(load, reps), bench_median(snap, reps));
	fflush(stdout);
	optimizer_release(&o);
	model_free(m);
	keras_model_release(&km);
	return (struct backup_cost){bench_median(snap, reps), bench_median(cpu, reps)};
}

/* Samples/s of the timed (second) epoch of one training run of the
 * built-in cnn, compiled as its file says but for the optimizer: SGD at
 * 0.001, whatever the file holds, so that backups are the weights alone. */
static double train_once(const char *dir, int threads, long steps, long save_freq)
{
	const char *data = getenv("MWJ_TEST_DATA");
	struct compile_flags flags = {.optimizer_set = 1, .lr_set = 1};
	struct keras_model km = {0};
	struct train_config c;
	struct train_result r;
	char err[ERR_LEN];
	FILE *devnull = fopen("/dev/null", "w");

	memset(&c, 0, sizeof(c));
	flags.opt.kind = OPT_SGD;
	flags.opt.learning_rate = 0.001;
	if (keras_model_builtin(&km, "cnn", err) < 0 || compile_apply(&c, &km, &flags, err) < 0)
		die("bench_backup: %s", err);
	snprintf(c.model, sizeof(c.model), "cnn");
	c.epochs = 2; /* the first warms caches and thread pools */
	c.steps_per_epoch = steps;
	c.batch_size = 64;
	c.seed = 42;
	c.threads = threads;
	c.json = 1;
	c.rendezvous_timeout = 60;
	c.collective_timeout = 60;
	snprintf(c.data_dir, sizeof(c.data_dir), "%s",
	         data && data[0] ? data : "/usr/share/datasets/fashion-mnist");
	if (save_freq > 0) {
		snprintf(c.backup_dir, sizeof(c.backup_dir), "%s", dir);
		c.save_freq = save_freq;
	}
	if (trainer_fit(&c, devnull, &r, err) < 0)
		die("bench_backup: %s", err);
	fclose(devnull);
	keras_model_release(&km);
	return 64.0 * (double)steps / r.seconds;
}

/* Runs with and without backups alternate, and the overhead is the median
 * of each adjacent pair's difference: a slow stretch of this shared machine
 * then hits both sides of a pair instead of one side of the comparison. */
static void bench_overhead(const char *dir, int threads, long steps, int reps,
                           struct backup_cost cost)
{
	double off[MAX_REPS], on[MAX_REPS], pct[MAX_REPS];

	for (int r = 0; r < reps; r++) {
		off[r] = r % 2 ? train_once(dir, threads, steps, 0) : 0;
		on[r] = train_once(dir, threads, steps, 100);
		if (r % 2 == 0)
			off[r] = train_once(dir, threads, steps, 0);
		pct[r] = (off[r] - on[r]) / off[r] * 100.0;
	}
	char pairs[MAX_REPS * 12] = "";
	for (int r = 0, n = 0; r < reps; r++)
		n += snprintf(pairs + n, sizeof(pairs) - (size_t)n, "%s%.2f", r ? "," : "", pct[r]);
	double p = bench_median(pct, reps);
	double a = bench_median(off, reps), b = bench_median(on, reps);
	/* With every core busy, one backup takes at most the training
	 * thread's copy plus the writer's CPU time away from 100 steps. */
	double bound = (cost.copy_ms + cost.write_cpu_ms) / (100.0 * 64.0 / a * 1e3) * 100.0;
	printf("{\"bench\":\"backup_overhead\",\"model\":\"cnn\",\"threads\":%d,\"batch\":64,"
	       "\"steps\":%ld,\"save_freq\":100,\"dir\":\"%s\",\"reps\":%d,"
	       "\"samples_per_s_no_backups\":%.1f,\"samples_per_s_save_freq_100\":%.1f,"
	       "\"overhead_pct_median_of_pairs\":%.2f,\"overhead_pct_pairs\":[%s],"
	       "\"overhead_pct_cpu_bound\":%.2f}\n",
	       threads, steps, dir, reps, a, b, p, pairs, bound);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char tmpl[4096], err[ERR_LEN];
	const char *dir = NULL;
	int reps = 11, made = 0, only_threads = 0;
	long steps = 200;
	int64_t v;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
			dir = argv[++i];
		} else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1, MAX_REPS, &reps, err) < 0)
				die("bench_backup: --reps: %s", err);
		} else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1, 2, &only_threads, err) < 0)
				die("bench_backup: --threads: %s", err);
		} else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
			if (parse_i64(argv[++i], 100, 100000, &v, err) < 0)
				die("bench_backup: --steps: %s", err);
			steps = (long)v;
		} else {
			fprintf(stderr, "usage: bench_backup [--dir DIR] [--reps N] [--steps N] "
			                "[--threads 1|2]\n");
			return 1;
		}
	}
	if (!dir) {
		const char *t = getenv("TMPDIR");
		snprintf(tmpl, sizeof(tmpl), "%s/mwj-bench-backup-XXXXXX", t && t[0] ? t : "/tmp");
		if (!mkdtemp(tmpl))
			die("bench_backup: mkdtemp '%s' failed", tmpl);
		dir = tmpl;
		made = 1;
	}
	blas_cpu_check(argv); /* train with the kernels mwj-worker uses */
	log_set_level(LOG_ERROR);
	struct backup_cost sgd = bench_io(dir, OPT_SGD, reps);
	bench_io(dir, OPT_ADAM, reps);
	for (int threads = 1; threads <= 2; threads++)
		if (!only_threads || only_threads == threads)
			bench_overhead(dir, threads, steps, reps, sgd);
	checkpoint_remove_all(dir, err);
	if (made)
		rmdir(dir);
	return 0;
}
