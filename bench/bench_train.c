/* bench_train.c - training throughput of mwj-worker's real training loop.
 *
 * For each model and thread count it runs trainer_fit on Fashion-MNIST for a
 * warm-up epoch and a timed epoch, and prints one JSON line with samples/s,
 * ms/step and the achieved GFLOP/s of the step's matrix products, counted
 * as the code computes them (model_step_gemm_flops: a Winograd layer's
 * transformed products, not im2col's 2.25x more), next to the cblas_sgemm
 * rate on a 2048x2048 square product measured in the same process at the
 * same thread count.
 *
 * With --workers N (N > 1) it trains data-parallel instead: N processes on
 * 127.0.0.1, each with its own TF_CONFIG and --threads threads, at batch 64
 * per worker, as N mwj-worker pods would; the line gives the global
 * samples/s (all workers' examples).
 *
 * With --independent as well, the N processes start together but each
 * trains alone (a world of one, no communication at all): the most that N
 * workers sharing this machine could reach if the all-reduce cost nothing.
 * Each reports its timed epoch through a pipe, and the slowest one counts,
 * as the slowest worker decides a synchronous step; the line has
 * "config":"independent".
 *
 * --model takes what mwj-worker's --model takes: the name of a built-in
 * model ("cnn", "cnn-pool") or the path of a Keras model file, told apart
 * by mwj-worker's rule (a name has no slash and no dot); each run is
 * compiled as the model's compile config says (its optimizer, loss and
 * metrics), and the line's "model" is the argument as given.
 *
 * Without --model and --workers it also tests the claim that a model read
 * from a file trains as fast as the same model built in: the file
 * examples/models/cnn.json against the built-in cnn, which the build embeds
 * from that file, at one thread (or --threads), --reps runs of each
 * (default 5), interleaved, in one line "train_model_file" with both
 * medians and their ratio. The file is found under --repo, the repository
 * root, which is by default two folders above this binary's (build/bin/);
 * bench/run.sh passes it, so that it holds for binaries built elsewhere
 * too.
 *
 * Like mwj-worker, it first makes sure OpenBLAS runs kernels this CPU can
 * run at full width (blas_cpu.h); each line names the kernel set.
 *
 * usage: bench_train [--steps N] [--model NAME|PATH] [--threads N]
 *                    [--workers N] [--independent] [--reps N] [--repo DIR]
 */
#include <arpa/inet.h>
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blas_cpu.h"
#include "compile_config.h"
#include "err.h"
#include "json.h"
#include "log.h"
#include "parse.h"
#include "progress.h"
#include "tf_config.h"
#include "trainer.h"

#define MAX_WORKERS 8
#define MAX_REPS    31

/* The model file of the file-against-built-in claim, under --repo, and the
 * built-in model the build embeds from it (KERAS_MODELS in the Makefile). */
#define FILE_MODEL_PATH    "examples/models/cnn.json"
#define FILE_MODEL_BUILTIN "cnn"

#define SQUARE 2048

static double sgemm_gflops(int threads)
{
	size_t n = SQUARE;
	float *a = xmalloc(n * n * sizeof(float)), *b = xmalloc(n * n * sizeof(float));
	float *c = xmalloc(n * n * sizeof(float));
	double best = 0.0;

	openblas_set_num_threads(threads);
	for (size_t i = 0; i < n * n; i++) {
		a[i] = (float)(i % 7) * 0.1f;
		b[i] = (float)(i % 5) * 0.1f;
	}
	/* Best of five after one warm-up: the machine's attainable rate. */
	for (int r = 0; r < 6; r++) {
		double t0 = progress_now();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, SQUARE, SQUARE, SQUARE, 1.0f,
		            a, SQUARE, b, SQUARE, 0.0f, c, SQUARE);
		double g = 2.0 * n * n * n / (progress_now() - t0) / 1e9;
		if (r > 0 && g > best)
			best = g;
	}
	free(a);
	free(b);
	free(c);
	return best;
}

/* --model's model into km, as mwj-worker reads it (keras_model_open). The
 * caller releases km. */
static void model_read(struct keras_model *km, const char *model)
{
	char err[ERR_LEN];

	if (keras_model_open(km, model, err) < 0)
		die("%s", err);
}

/* s as a JSON string, quotes included: --model may be a path, and a path
 * may hold a quote or a backslash. The caller frees it. */
static char *json_quote(const char *s)
{
	cJSON *node = cJSON_CreateString(s);
	char *out = node != NULL ? json_print(node) : NULL;

	cJSON_Delete(node);
	if (out == NULL)
		die("out of memory");
	return out;
}

/* A run of the model, compiled as its file says (cnn and cnn-pool: SGD,
 * learning rate 0.001, the sparse cross-entropy from logits and accuracy;
 * cnn-deep.json: Adam); km receives the plan, which the caller releases
 * after the run. */
static void fill_config(struct train_config *c, struct keras_model *km, const char *model,
                        int threads, long steps, int batch)
{
	const char *data = getenv("MWJ_TEST_DATA");
	struct compile_flags none = {0};
	char err[ERR_LEN];

	memset(c, 0, sizeof(*c));
	model_read(km, model);
	if (compile_apply(c, km, &none, err) < 0)
		die("%s", err);
	snprintf(c->model, sizeof(c->model), "%s", model);
	c->epochs = 2; /* the first warms caches, page tables and thread pools */
	c->steps_per_epoch = steps;
	c->batch_size = batch;
	c->seed = 42;
	c->threads = threads;
	c->json = 1;
	c->rendezvous_timeout = 60;
	c->collective_timeout = 60;
	snprintf(c->data_dir, sizeof(c->data_dir), "%s",
	         data && data[0] ? data : "/usr/share/datasets/fashion-mnist");
}

/* Prints one result line. With workers > 1 it is the global rate of a run
 * of several processes; independent marks --independent's runs. */
static void print_result(const char *model, int threads, int workers, int independent, long steps,
                         int batch, const struct train_result *r)
{
	char err[ERR_LEN];
	struct keras_model km;
	struct compiled k;
	struct compile_flags none = {0};
	struct model *m = NULL;

	model_read(&km, model);
	m = model_new(&km, batch, 0, err);
	if (m == NULL || compile_resolve(&k, &km, &none, err) < 0)
		die("%s", err);
	double flops = model_step_gemm_flops(m, batch);
	double ms = r->seconds * 1e3 / (double)steps;
	const char *opt = optimizer_name(k.opt.kind);
	char *quoted = json_quote(model);

	model_free(m);
	keras_model_release(&km);
	if (workers > 1) {
		printf("{\"bench\":\"train\",\"impl\":\"mwj\",\"model\":%s,\"workers\":%d,%s"
		       "\"batch_per_worker\":%d,\"threads_per_worker\":%d,\"optimizer\":\"%s\","
		       "\"steps\":%ld,\"global_samples_per_s\":%.1f,\"ms_per_step\":%.3f,"
		       "\"blas_core\":\"%s\"}\n",
		       quoted, workers, independent ? "\"config\":\"independent\"," : "", batch,
		       threads, opt, steps, (double)batch * workers * steps / r->seconds, ms,
		       openblas_get_corename());
	} else {
		printf("{\"bench\":\"train\",\"impl\":\"mwj\",\"model\":%s,\"batch\":%d,"
		       "\"threads\":%d,\"optimizer\":\"%s\",\"steps\":%ld,\"samples_per_s\":%.1f,"
		       "\"ms_per_step\":%.3f,\"gemm_gflop_per_step\":%.4f,\"achieved_gflops\":%.1f,"
		       "\"sgemm_square_gflops\":%.1f,\"blas_core\":\"%s\"}\n",
		       quoted, batch, threads, opt, steps, batch * steps / r->seconds, ms,
		       flops / 1e9, flops / (ms * 1e-3) / 1e9, sgemm_gflops(threads),
		       openblas_get_corename());
	}
	fflush(stdout);
	free(quoted);
}

/* One run in this process: a warm-up epoch, then the timed one into r. */
static int train_once(const char *model, int threads, long steps, int batch, struct train_result *r)
{
	struct train_config c;
	struct keras_model km;
	char err[ERR_LEN];
	FILE *devnull = fopen("/dev/null", "w");

	if (devnull == NULL)
		die("open /dev/null failed");
	fill_config(&c, &km, model, threads, steps, batch);
	int rc = trainer_fit(&c, devnull, r, err);
	fclose(devnull);
	keras_model_release(&km);
	if (rc < 0) {
		fprintf(stderr, "bench_train: %s\n", err);
		return -1;
	}
	return 0;
}

static int bench_one(const char *model, int threads, long steps, int batch)
{
	struct train_result r;

	if (train_once(model, threads, steps, batch, &r) < 0)
		return -1;
	print_result(model, threads, 1, 0, steps, batch, &r);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* The path of FILE_MODEL_PATH under repo, or, where repo is "", under
 * the repository root two folders above this binary's (build/bin/).
 * Returns 0, or -1 with a message in err. */
static int model_file_path(char *out, size_t n, const char *repo, char *err)
{
	char exe[TRAIN_PATH_LEN];

	if (!repo[0]) {
		ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (len < 0 || (size_t)len >= sizeof(exe) - 1)
			return err_set(err, "readlink '/proc/self/exe' failed; pass --repo DIR");
		exe[len] = '\0';
		/* The binary's name, then bin/, then build/; "" (the root) if it
		 * runs out. */
		for (int i = 0; i < 3; i++) {
			char *slash = strrchr(exe, '/');
			*(slash != NULL ? slash : exe) = '\0';
		}
		repo = exe; /* "" for "/": the path below starts with the slash */
	}
	if (snprintf(out, n, "%s/%s", repo, FILE_MODEL_PATH) >= (int)n)
		return err_set(err, "--repo '%s': path too long", repo);
	if (access(out, R_OK) < 0)
		return err_set(err, "'%s': cannot read it; --repo names the repository root", out);
	return 0;
}

/* A model read from a file against the same model built in: reps runs of
 * each, interleaved, the first of each pair swapped every rep so that
 * neither always meets the machine warmer, and the medians compared.
 * "same_json" says whether the file still holds the built-in's text (the
 * build embeds it from there): where it does not, the two are not the
 * same model and the ratio proves nothing. */
static int bench_model_file(const char *path, int threads, long steps, int reps, int batch)
{
	double builtin_ms[MAX_REPS], file_ms[MAX_REPS];
	struct keras_model a, b;

	model_read(&a, FILE_MODEL_BUILTIN);
	model_read(&b, path);
	int same = a.json_len == b.json_len && memcmp(a.json, b.json, a.json_len) == 0;
	keras_model_release(&a);
	keras_model_release(&b);
	for (int i = 0; i < reps; i++) {
		for (int j = 0; j < 2; j++) {
			int file = (i + j) % 2;
			struct train_result r;
			if (train_once(file ? path : FILE_MODEL_BUILTIN, threads, steps, batch,
			               &r) < 0)
				return -1;
			(file ? file_ms : builtin_ms)[i] = r.seconds * 1e3 / (double)steps;
		}
	}
	double bm = median(builtin_ms, reps), fm = median(file_ms, reps);
	printf("{\"bench\":\"train_model_file\",\"model\":\"%s\",\"file\":\"%s\","
	       "\"same_json\":%s,\"batch\":%d,\"threads\":%d,\"steps\":%ld,"
	       "\"builtin_ms_per_step\":%.3f,\"file_ms_per_step\":%.3f,\"ratio\":%.3f,"
	       "\"reps\":%d,\"blas_core\":\"%s\"}\n",
	       FILE_MODEL_BUILTIN, FILE_MODEL_PATH, same ? "true" : "false", batch, threads, steps,
	       bm, fm, fm / bm, reps, openblas_get_corename());
	fflush(stdout);
	return 0;
}

/* Free loopback ports, all bound at once so that they differ. */
static void free_ports(int *ports, int n)
{
	int fds[MAX_WORKERS];

	for (int i = 0; i < n; i++) {
		struct sockaddr_in a = {0};
		socklen_t len = sizeof(a);
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    getsockname(fds[i], (struct sockaddr *)&a, &len) < 0)
			die("cannot find a free port");
		ports[i] = ntohs(a.sin_port);
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* A run of several processes: data-parallel workers over loopback (ports
 * set), or workers that each train alone (ports NULL) and write the seconds
 * of their timed epoch to fd. */
struct spawn {
	const char *model;
	int threads, workers, batch;
	long steps;
	const int *ports;
	int fd;
};

static int child_main(const struct spawn *s, int rank)
{
	char err[ERR_LEN];
	struct tf_config tc = {0};
	struct train_config c;
	struct train_result r;
	struct keras_model km;
	FILE *devnull = fopen("/dev/null", "w");

	fill_config(&c, &km, s->model, s->threads, s->steps, s->batch);
	if (s->ports) {
		if (tf_config_loopback(&tc, s->ports, s->workers, rank, err) < 0)
			die("%s", err);
		c.cluster = &tc;
	}
	if (trainer_fit(&c, devnull, &r, err) < 0) {
		fprintf(stderr, "bench_train: worker %d: %s\n", rank, err);
		return 1;
	}
	fclose(devnull);
	tf_config_release(&tc);
	keras_model_release(&km);
	if (!s->ports)
		return write(s->fd, &r.seconds, sizeof(r.seconds)) == (ssize_t)sizeof(r.seconds)
		           ? 0
		           : 1;
	if (rank == 0)
		print_result(s->model, s->threads, s->workers, 0, s->steps, s->batch, &r);
	return 0;
}

/* Forks the run's processes and waits for them all; -1 if any failed. */
static int spawn_run(const struct spawn *s)
{
	pid_t pids[MAX_WORKERS];
	int failed = 0;

	fflush(stdout);
	for (int i = 0; i < s->workers; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork failed");
		if (pids[i] == 0)
			_exit(child_main(s, i));
	}
	if (s->fd >= 0)
		close(s->fd); /* the parent's copy of the write end: EOF once all are done */
	for (int i = 0; i < s->workers; i++) {
		int status;
		if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			failed = 1;
	}
	return failed ? -1 : 0;
}

static int bench_workers(const char *model, int threads, int workers, long steps, int batch)
{
	int ports[MAX_WORKERS];
	struct spawn s = {model, threads, workers, batch, steps, ports, -1};

	free_ports(ports, workers);
	return spawn_run(&s);
}

static int bench_independent(const char *model, int threads, int workers, long steps, int batch)
{
	int fds[2];
	double slowest = 0.0, seconds;

	if (pipe(fds) < 0)
		die("pipe failed");
	struct spawn s = {model, threads, workers, batch, steps, NULL, fds[1]};
	int rc = spawn_run(&s);
	/* Each child wrote one double, far below PIPE_BUF: reads never split. */
	for (int i = 0; rc == 0 && i < workers; i++) {
		if (read(fds[0], &seconds, sizeof(seconds)) != (ssize_t)sizeof(seconds))
			rc = -1;
		else if (seconds > slowest)
			slowest = seconds;
	}
	close(fds[0]);
	if (rc < 0 || slowest <= 0.0)
		return -1;
	struct train_result r = {.seconds = slowest};
	print_result(model, threads, workers, 1, steps, batch, &r);
	return 0;
}

int main(int argc, char **argv)
{
	long steps = 300;
	char err[ERR_LEN], repo[TRAIN_PATH_LEN] = "", file[TRAIN_PATH_LEN];
	int64_t v;
	const char *models[] = {"cnn", "cnn-pool"}, *only_model = NULL;
	int threads[] = {1, 2}, only_threads = 0, workers = 1, independent = 0, reps = 5;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
			if (parse_i64(argv[++i], 10, 100000, &v, err) < 0) {
				fprintf(stderr, "bench_train: --steps: %s\n", err);
				return 1;
			}
			steps = (long)v;
		} else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
			only_model = argv[++i];
			if (!only_model[0] || strlen(only_model) >= TRAIN_PATH_LEN) {
				fprintf(stderr,
				        "bench_train: --model: empty or longer than %d bytes\n",
				        TRAIN_PATH_LEN - 1);
				return 1;
			}
		} else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1, 64, &only_threads, err) < 0) {
				fprintf(stderr, "bench_train: --threads: %s\n", err);
				return 1;
			}
		} else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1, MAX_WORKERS, &workers, err) < 0) {
				fprintf(stderr, "bench_train: --workers: %s\n", err);
				return 1;
			}
		} else if (strcmp(argv[i], "--independent") == 0) {
			independent = 1;
		} else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1, MAX_REPS, &reps, err) < 0) {
				fprintf(stderr, "bench_train: --reps: %s\n", err);
				return 1;
			}
		} else if (strcmp(argv[i], "--repo") == 0 && i + 1 < argc) {
			if (snprintf(repo, sizeof(repo), "%s", argv[++i]) >= (int)sizeof(repo)) {
				fprintf(stderr, "bench_train: --repo: path too long\n");
				return 1;
			}
		} else {
			fprintf(stderr,
			        "usage: bench_train [--steps N] [--model NAME|PATH] [--threads N] "
			        "[--workers N] [--independent] [--reps N] [--repo DIR]\n");
			return 1;
		}
	}
	if (independent && workers < 2) {
		fprintf(stderr, "bench_train: --independent needs --workers 2 or more\n");
		return 1;
	}
	/* The file-against-built-in claim runs last; its file is looked for
	 * first, so that a wrong --repo fails before minutes of training. */
	int file_claim = !only_model && workers == 1;
	if (file_claim && model_file_path(file, sizeof(file), repo, err) < 0) {
		fprintf(stderr, "bench_train: %s\n", err);
		return 1;
	}
	/* The kernels mwj-worker would run with (blas_cpu.h). */
	blas_cpu_check(argv);
	log_set_level(LOG_ERROR); /* the benchmark saves no model: no warning about it */
	/* A --model of its own, or one of the two built-ins. */
	size_t nmodels = only_model ? 1 : 2;
	for (size_t mi = 0; mi < nmodels; mi++) {
		const char *model = only_model ? only_model : models[mi];
		for (size_t ti = 0; ti < 2; ti++) {
			if (only_threads && only_threads != threads[ti])
				continue;
			int rc;
			if (independent)
				rc = bench_independent(model, threads[ti], workers, steps, 64);
			else if (workers > 1)
				rc = bench_workers(model, threads[ti], workers, steps, 64);
			else
				rc = bench_one(model, threads[ti], steps, 64);
			if (rc < 0)
				return 1;
		}
	}
	if (file_claim)
		return bench_model_file(file, only_threads ? only_threads : 1, steps, reps, 64) < 0;
	return 0;
}
