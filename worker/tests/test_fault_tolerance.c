/* test_fault_tolerance.c - nothing is lost when workers die: mwj-worker
 * processes on 127.0.0.1 are killed (SIGKILL) or told to stop (SIGTERM) in
 * the middle of a run, and a small supervisor, playing the operator,
 * restarts each with the same TF_CONFIG and flags at once. The run must
 * finish with the final weights of an uninterrupted run, bit for bit, as
 * the SHA-256 that every worker logs shows. Also: what a worker does with
 * backups that are damaged, of another model, or of another world size.
 *
 * Where the kills land is random (seeded from the clock; the seed is
 * printed, and MWJ_TEST_SEED replays it), at steps read from the chief's
 * JSON progress lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "digest.h"
#include "err.h"
#include "model.h"
#include "optimizer.h"
#include "parse.h"
#include "strangers.h"
#include "testutil.h"

#define MAX_WORKERS 3
#define RUN_SECONDS 600 /* a whole supervised run, generous for sanitizers */
#define MAX_ARGS    40
#define ENV_LEN     512
#define DIGEST_TAG  "final weights sha256 "
#define BACKUPS     "backups"

static const char *worker_bin;
static unsigned seed;

struct worker {
	pid_t pid;  /* > 0 while running */
	int status; /* exit status of its last run; 128 + signal if killed */
	int runs;   /* how many times it was started */
	char env[ENV_LEN];
};

struct fixture {
	char dir[TESTUTIL_TMPDIR_LEN]; /* first, for testutil_fixture_setup() */
	int ports[MAX_WORKERS];
	struct worker w[MAX_WORKERS];
	int n;                      /* workers in the run */
	const char *args[MAX_ARGS]; /* mwj-worker's arguments, NULL-ended */
	char backup_dir[PATH_MAX];
};

static int setup(void **state)
{
	int rc = testutil_fixture_setup(state, sizeof(struct fixture), "fault");
	struct fixture *fx = rc == 0 ? *state : NULL;

	if (fx)
		snprintf(fx->backup_dir, sizeof(fx->backup_dir), "%s/" BACKUPS, fx->dir);
	return rc;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	for (int i = 0; i < MAX_WORKERS; i++)
		testutil_kill(fx->w[i].pid);
	return testutil_fixture_teardown(state);
}

/* Sets up a run of n workers (1: no TF_CONFIG) of "train" with the common
 * flags and then extra (NULL-ended). */
static void configure(struct fixture *fx, int n, const char *const *extra)
{
	static const char *const common[] = {"train",    "--threads",    "1",    "--model",
	                                     "cnn-pool", "--seed",       "7",    "--batch-size",
	                                     "16",       "--log-format", "json", "--log-every",
	                                     "1",        "--log-level",  "info", NULL};
	size_t k = 0;

	/* cmocka's setup made fx; clang-analyzer cannot see that. */
	if (fx == NULL)
		abort();
	fx->n = n;
	for (size_t i = 0; common[i]; i++)
		fx->args[k++] = common[i];
	fx->args[k++] = "--data-dir";
	fx->args[k++] = testutil_data_dir();
	for (size_t i = 0; extra[i]; i++) {
		assert_true(k + 1 < MAX_ARGS);
		fx->args[k++] = extra[i];
	}
	fx->args[k] = NULL;
	if (n > 1)
		testutil_free_ports(fx->ports, n);
	for (int i = 0; i < n; i++) {
		fx->w[i].runs = 0;
		fx->w[i].env[0] = '\0';
		if (n > 1)
			testutil_tf_config(fx->w[i].env, ENV_LEN, fx->ports, 0, n, "worker", i);
	}
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void path_of(const struct fixture *fx, int i, const char *stream, char *out)
{
	snprintf(out, PATH_MAX, "%s/w%d.%s", fx->dir, i, stream);
}

/* What worker i wrote on stream ("out" or "err") in its current or last
 * run; the caller frees it. */
static char *output(const struct fixture *fx, int i, const char *stream)
{
	char path[PATH_MAX];

	path_of(fx, i, stream, path);
	return testutil_read_file(path, NULL);
}

/* Starts worker i. Each run's stderr goes to a file of its own, kept for
 * the checks at the end ("w<i>.err.<run>"); "w<i>.err" is the newest. */
static void start(struct fixture *fx, int i)
{
	char out[PATH_MAX], err[PATH_MAX], link[PATH_MAX];
	struct worker *w = &fx->w[i];
	const char *env[] = {w->env[0] ? w->env : NULL, NULL};

	path_of(fx, i, "out", out);
	snprintf(err, sizeof(err), "%s/w%d.err.%d", fx->dir, i, w->runs);
	path_of(fx, i, "err", link);
	unlink(link);
	assert_int_equal(symlink(err, link), 0);
	w->pid = testutil_spawn(worker_bin, fx->args + 0, env, out, err);
	w->runs++;
}

/* Every run's stderr of worker i, concatenated; the caller frees it. */
static char *all_logs(const struct fixture *fx, int i)
{
	size_t len = 0, cap = 1;
	char *all = calloc(1, 1);

	assert_non_null(all);
	for (int r = 0; r < fx->w[i].runs; r++) {
		char path[PATH_MAX];
		size_t n;
		snprintf(path, sizeof(path), "%s/w%d.err.%d", fx->dir, i, r);
		char *text = testutil_read_file(path, &n);
		cap = len + n + 1;
		all = realloc(all, cap);
		assert_non_null(all);
		memcpy(all + len, text, n + 1);
		len += n;
		free(text);
	}
	return all;
}

/* The largest "global_step" in the chief's progress lines so far, or 0. */
static long chief_step(const struct fixture *fx)
{
	char *out = output(fx, 0, "out");
	long best = 0;

	for (const char *p = strstr(out, "\"global_step\":"); p;
	     p = strstr(p + 1, "\"global_step\":")) {
		long v = strtol(p + strlen("\"global_step\":"), NULL, 10);
		if (v > best)
			best = v;
	}
	free(out);
	return best;
}

/* Reaps every worker that has exited; fails the test, showing its log, if
 * one failed (not by the supervisor's own hand). Returns how many still run. */
static int reap(struct fixture *fx)
{
	int running = 0;

	for (int i = 0; i < fx->n; i++) {
		struct worker *w = &fx->w[i];
		if (w->pid <= 0)
			continue;
		int st = testutil_wait(w->pid, 0);
		if (st < 0) {
			running++;
			continue;
		}
		w->pid = 0;
		w->status = st;
		if (st != 0) {
			char *log = output(fx, i, "err");
			fail_msg("worker %d exited %d on its own\nstderr:\n%s", i, st, log);
		}
	}
	return running;
}

/* The supervisor: starts the run, and each time the chief has printed
 * global step at[k], sends sig to worker who[k] (-1: a random one), waits
 * for it to go (it must exit want_status), and starts it again at once.
 * Returns once every worker has exited 0. */
static void supervise(struct fixture *fx, const long *at, const int *who, int nkills, int sig,
                      int want_status)
{
	double deadline = testutil_now() + RUN_SECONDS;
	int k = 0;

	for (int i = 0; i < fx->n; i++)
		start(fx, i);
	while (reap(fx) > 0) {
		if (testutil_now() > deadline)
			fail_msg("the run did not finish in %d s", RUN_SECONDS);
		if (k < nkills && chief_step(fx) >= at[k]) {
			int v = who[k] >= 0 ? who[k] : rand() % fx->n;
			struct worker *w = &fx->w[v];
			print_message("step %ld: signal %d to worker %d\n", chief_step(fx), sig, v);
			k++;
			if (w->pid <= 0)
				continue; /* it finished already */
			kill(w->pid, sig);
			int st = testutil_wait(w->pid, testutil_now() + RUN_SECONDS);
			w->pid = 0;
			if (st != 0) {
				if (st != want_status) {
					char *log = output(fx, v, "err");
					fail_msg("worker %d exited %d after signal %d, want %d\n%s",
					         v, st, sig, want_status, log);
				}
				start(fx, v);
			}
		}
		nanosleep(&(struct timespec){0, 20L * 1000 * 1000}, NULL);
	}
	assert_int_equal(k, nkills);
}

/* The final weights worker i logged in its last run. */
static void final_digest(const struct fixture *fx, int i, char hex[DIGEST_HEX_LEN])
{
	char *log = output(fx, i, "err");
	const char *p = strstr(log, DIGEST_TAG);

	if (p == NULL)
		fail_msg("worker %d logged no '%s':\n%s", i, DIGEST_TAG, log);
	snprintf(hex, DIGEST_HEX_LEN, "%s", p + strlen(DIGEST_TAG));
	free(log);
	testutil_assert_matches(hex, "^[0-9a-f]{64}$");
}

/* Runs the configured job without interruption and returns its weights. */
static void reference(struct fixture *fx, char hex[DIGEST_HEX_LEN])
{
	supervise(fx, NULL, NULL, 0, 0, 0);
	final_digest(fx, 0, hex);
}

/* Every worker's last run logged the weights want. */
static void assert_all_end_with(const struct fixture *fx, const char *want)
{
	char hex[DIGEST_HEX_LEN];

	for (int i = 0; i < fx->n; i++) {
		final_digest(fx, i, hex);
		if (strcmp(hex, want) != 0) {
			char *log = all_logs(fx, i);
			print_error("worker %d ended with weights %s, the uninterrupted run with "
			            "%s\n%s",
			            i, hex, want, log);
			free(log);
			fail();
		}
	}
}

/* nkills increasing steps in [lo, hi), at least gap apart. */
static void random_steps(long *at, int nkills, long lo, long hi, long gap)
{
	long span = (hi - lo - gap * (nkills - 1)) / nkills;

	assert_true(span > 0);
	for (int k = 0; k < nkills; k++)
		at[k] = lo + k * (span + gap) + rand() % span;
}

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	const struct dirent *e;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* A run of n workers and total steps, killed (SIGKILL) at nkills random
 * steps, ends with the weights of the same run uninterrupted. */
static void killed_run_matches(struct fixture *fx, int n, const char *const *flags, long total,
                               const int *who, int nkills)
{
	char want[DIGEST_HEX_LEN];
	long at[4];

	configure(fx, n, flags);
	reference(fx, want);
	assert_int_equal(count_files(fx->backup_dir), 0); /* removed after success */
	/* Well before the end: a worker killed after the run is over has
	 * nothing to come back to. */
	random_steps(at, nkills, 10, total - total / 4, 10);
	configure(fx, n, flags);
	supervise(fx, at, who, nkills, SIGKILL, 128 + SIGKILL);
	assert_all_end_with(fx, want);
	assert_int_equal(count_files(fx->backup_dir), 0);
	/* Every kill was survived without a restart: the survivors waited. */
	int resyncs = 0;
	for (int i = 0; i < n; i++) {
		char *log = all_logs(fx, i);
		for (const char *p = strstr(log, "resynchronized in "); p;
		     p = strstr(p + 1, "resynchronized in "))
			resyncs++;
		free(log);
	}
	assert_true(resyncs >= nkills);
}

static void test_workers_killed_at_random_steps_end_with_the_uninterrupted_weights(void **state)
{
	struct fixture *fx = *state;
	const int who[3] = {-1, -1, -1};

	killed_run_matches(fx, 2,
	                   ARGS("--epochs", "2", "--steps-per-epoch", "100", "--save-freq", "10",
	                        "--momentum", "0.9", "--backup-dir", fx->backup_dir),
	                   200, who, 3);
}

/* Backups once an epoch: a killed worker's replacement starts from the
 * epoch's backup, but the survivors hold the newest state and hand it on. */
static void test_with_epoch_backups_killed_workers_end_with_the_uninterrupted_weights(void **state)
{
	struct fixture *fx = *state;
	const int who[2] = {1, 1};

	killed_run_matches(fx, 2,
	                   ARGS("--epochs", "3", "--steps-per-epoch", "60", "--save-freq", "epoch",
	                        "--backup-dir", fx->backup_dir),
	                   180, who, 2);
}

/* The chief, killed twice in a ring of three, comes back from its backup
 * and takes the newer state of the survivors. */
static void test_a_killed_chief_comes_back_and_the_run_ends_as_if_uninterrupted(void **state)
{
	struct fixture *fx = *state;
	const int who[2] = {0, 0};

	killed_run_matches(fx, 3,
	                   ARGS("--epochs", "1", "--steps-per-epoch", "150", "--save-freq", "10",
	                        "--optimizer", "adam", "--backup-dir", fx->backup_dir),
	                   150, who, 2);
	char *log = all_logs(fx, 0);
	testutil_assert_matches(log, "restored the backup of step [0-9]+ ");
	free(log);
}

/* How soon the ring must form again once a killed worker's replacement
 * has come, whatever strangers are at the ports (see test_rendezvous.c). */
#define RING_FORMS_S 1.5

/* Every run of worker i after its first (a replacement) met the ring within
 * RING_FORMS_S of its own arrival: its first "ring of 2 formed in S s". */
static void assert_replacements_met_the_ring_at_once(const struct fixture *fx, int i)
{
	for (int r = 1; r < fx->w[i].runs; r++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/w%d.err.%d", fx->dir, i, r);
		char *log = testutil_read_file(path, NULL);
		const char *p = strstr(log, "formed in ");
		double took = p ? strtod(p + strlen("formed in "), NULL) : -1;
		if (p == NULL)
			fail_msg("run %d of worker %d never met the ring:\n%s", r, i, log);
		if (took > RING_FORMS_S)
			fail_msg("run %d of worker %d met the ring after %.2f s, not within %.1f s",
			         r, i, took, RING_FORMS_S);
		free(log);
	}
}

/* Strangers at both workers' ports all along (idle connections, garbage,
 * coming back when dropped), the job's key on every worker, and workers
 * killed twice: the replacements meet the ring at once, and the run ends
 * with the weights of an undisturbed one. */
static void test_strangers_at_the_ports_neither_stall_nor_change_a_keyed_killed_run(void **state)
{
	struct fixture *fx = *state;
	char key[PATH_MAX], want[DIGEST_HEX_LEN];
	const int who[2] = {1, 0};
	long at[2];
	struct strangers *st;

	snprintf(key, sizeof(key), "%s/job-key", fx->dir);
	testutil_write_file(key, "0123456789abcdef0123456789abcdef", 32);
	const char *const *flags =
	    ARGS("--epochs", "2", "--steps-per-epoch", "60", "--save-freq", "10", "--backup-dir",
	         fx->backup_dir, "--job-secret-file", key);
	configure(fx, 2, flags);
	reference(fx, want);
	random_steps(at, 2, 10, 90, 10);
	configure(fx, 2, flags);
	st = strangers_start(fx->ports, 2, 100, 100);
	assert_non_null(st);
	supervise(fx, at, who, 2, SIGKILL, 128 + SIGKILL);
	long made = strangers_stop(st);
	assert_true(made >= 400);
	assert_all_end_with(fx, want);
	for (int i = 0; i < 2; i++) {
		assert_replacements_met_the_ring_at_once(fx, i);
		char *log = all_logs(fx, i);
		testutil_assert_contains(log, "both proved the job key");
		testutil_assert_contains(log, "dropped connection from");
		free(log);
	}
}

/* The global step at which log says the chief wrote the preemption backup. */
static long preemption_step(const char *log)
{
	const char *p = strstr(log, "backup at step ");
	char *end;

	for (; p; p = strstr(p + 1, "backup at step ")) {
		long v = strtol(p + strlen("backup at step "), &end, 10);
		if (strncmp(end, " written by the chief", 21) == 0)
			return v;
	}
	fail_msg("no preemption backup in:\n%s", log);
	return -1;
}

/* SIGTERM to one worker: every worker stops at the same step, the chief
 * writes a backup there, the signalled worker exits 143, and once it is
 * back the run ends as if nothing happened. */
static void test_sigterm_stops_every_worker_at_one_step_with_a_backup_there(void **state)
{
	struct fixture *fx = *state;
	const char *const *flags = ARGS("--epochs", "1", "--steps-per-epoch", "100", "--save-freq",
	                                "epoch", "--backup-dir", fx->backup_dir);
	char want[DIGEST_HEX_LEN];
	const long at[1] = {20};
	const int who[1] = {1};

	configure(fx, 3, flags);
	reference(fx, want);
	configure(fx, 3, flags);
	supervise(fx, at, who, 1, SIGTERM, 128 + SIGTERM);
	assert_all_end_with(fx, want);
	long step = -1;
	for (int i = 0; i < 3; i++) {
		char *log = all_logs(fx, i);
		testutil_assert_contains(log, "preemption notice from 1 of 3 worker(s)");
		long s = preemption_step(log);
		free(log);
		if (step >= 0 && s != step)
			fail_msg("worker %d saw the backup at step %ld, worker 0 at %ld", i, s,
			         step);
		step = s;
	}
}

/* SIGTERM to every worker at once, as when a job is deleted or all its
 * nodes drain: all stop at one step with a backup, and a new set of
 * workers started from nothing but that backup ends the run exactly. */
static void test_sigterm_to_all_workers_leaves_a_backup_a_new_run_ends_exactly(void **state)
{
	struct fixture *fx = *state;
	const char *const *flags =
	    ARGS("--epochs", "2", "--steps-per-epoch", "100", "--save-freq", "epoch", "--optimizer",
	         "adam", "--backup-dir", fx->backup_dir);
	char want[DIGEST_HEX_LEN];
	double deadline;

	configure(fx, 2, flags);
	reference(fx, want);
	configure(fx, 2, flags);
	for (int i = 0; i < 2; i++)
		start(fx, i);
	deadline = testutil_now() + RUN_SECONDS;
	while (chief_step(fx) < 120) {
		assert_true(testutil_now() < deadline);
		assert_int_equal(reap(fx), 2);
		nanosleep(&(struct timespec){0, 10L * 1000 * 1000}, NULL);
	}
	for (int i = 0; i < 2; i++)
		kill(fx->w[i].pid, SIGTERM);
	for (int i = 0; i < 2; i++) {
		int st = testutil_wait(fx->w[i].pid, testutil_now() + RUN_SECONDS);
		fx->w[i].pid = 0;
		if (st != 128 + SIGTERM) {
			char *log = output(fx, i, "err");
			fail_msg("worker %d exited %d after SIGTERM, want 143\n%s", i, st, log);
		}
	}
	assert_int_equal(count_files(fx->backup_dir), 2); /* the epoch's and the notice's */
	supervise(fx, NULL, NULL, 0, 0, 0);
	assert_all_end_with(fx, want);
	char *log = output(fx, 0, "err");
	testutil_assert_matches(log, "restored the backup of step 1[2-9][0-9] ");
	free(log);
}

/* Flips one byte in the middle of the backup of step. */
static void damage(const struct fixture *fx, uint64_t step)
{
	char path[PATH_MAX];
	size_t len;

	assert_int_equal(checkpoint_path(fx->backup_dir, step, path, sizeof(path)), 0);
	unsigned char *b = testutil_read_file(path, &len);
	b[len / 2] ^= 0x40;
	testutil_write_file(path, b, len);
	free(b);
}

/* One worker, backups every 5 steps kept after a 20-step run: the newest
 * (20) is damaged, so a longer run passes over it to the one of step 15,
 * and still ends with the weights of an uninterrupted longer run. */
static void test_a_damaged_newest_backup_is_passed_over_for_the_one_before(void **state)
{
	struct fixture *fx = *state;
	char want[DIGEST_HEX_LEN];

	configure(fx, 1, ARGS("--epochs", "2", "--steps-per-epoch", "20", "--optimizer", "adam"));
	reference(fx, want);
	configure(fx, 1,
	          ARGS("--epochs", "1", "--steps-per-epoch", "20", "--save-freq", "5",
	               "--optimizer", "adam", "--backup-dir", fx->backup_dir, "--keep-backups"));
	supervise(fx, NULL, NULL, 0, 0, 0);
	assert_int_equal(count_files(fx->backup_dir), 2);
	damage(fx, 20);
	configure(fx, 1,
	          ARGS("--epochs", "2", "--steps-per-epoch", "20", "--save-freq", "5",
	               "--optimizer", "adam", "--backup-dir", fx->backup_dir));
	supervise(fx, NULL, NULL, 0, 0, 0);
	assert_all_end_with(fx, want);
	char *log = output(fx, 0, "err");
	testutil_assert_matches(log, "backup .*backup-000000000020\\.mwjb is damaged, passing over "
	                             "it: .*checksum mismatch");
	testutil_assert_contains(log, "restored the backup of step 15 ");
	free(log);
}

/* Runs worker 0 alone and returns its log; fails unless it exits 1. */
static char *run_to_exit_1(struct fixture *fx)
{
	start(fx, 0);
	int st = testutil_wait(fx->w[0].pid, testutil_now() + RUN_SECONDS);
	fx->w[0].pid = 0;
	char *log = output(fx, 0, "err");
	if (st != 1)
		fail_msg("exit %d, want 1\n%s", st, log);
	return log;
}

/* Backups that are all damaged are not silently replaced by a fresh start,
 * which would throw their progress away: the worker stops and says why. */
static void test_a_directory_of_only_damaged_backups_exits_1(void **state)
{
	struct fixture *fx = *state;

	configure(fx, 1,
	          ARGS("--steps-per-epoch", "10", "--save-freq", "5", "--backup-dir",
	               fx->backup_dir, "--keep-backups"));
	supervise(fx, NULL, NULL, 0, 0, 0);
	damage(fx, 5);
	damage(fx, 10);
	char *log = run_to_exit_1(fx);
	testutil_assert_contains(log, "holds 2 backup(s) and none is sound");
	free(log);
	assert_int_equal(count_files(fx->backup_dir), 2);
}

/* A worker waiting for its peers when the notice comes has nothing to save
 * and must not hold the pod until the kill: it exits 143 at once. */
static void test_sigterm_while_waiting_for_peers_exits_143_at_once(void **state)
{
	struct fixture *fx = *state;

	configure(fx, 2, ARGS("--steps-per-epoch", "10", "--rendezvous-timeout", "600"));
	start(fx, 0);
	double deadline = testutil_now() + RUN_SECONDS;
	for (;;) {
		char *log = output(fx, 0, "err");
		int listening = strstr(log, "listening on port") != NULL;
		free(log);
		if (listening)
			break;
		assert_true(testutil_now() < deadline);
		assert_int_equal(reap(fx), 1);
		nanosleep(&(struct timespec){0, 10L * 1000 * 1000}, NULL);
	}
	double t0 = testutil_now();
	kill(fx->w[0].pid, SIGTERM);
	int st = testutil_wait(fx->w[0].pid, t0 + 30);
	fx->w[0].pid = 0;
	char *log = output(fx, 0, "err");
	if (st != 128 + SIGTERM)
		fail_msg("exit %d, want 143\n%s", st, log);
	testutil_assert_contains(log, "rendezvous: stopped by signal 15");
	free(log);
}

/* A worker that finds another model's backup stops with exit 1 and says so:
 * training over it would destroy it, and no restart can help. */
static void test_a_backup_of_another_model_exits_1_saying_so(void **state)
{
	struct fixture *fx = *state;

	configure(fx, 1,
	          ARGS("--steps-per-epoch", "3", "--backup-dir", fx->backup_dir, "--keep-backups"));
	supervise(fx, NULL, NULL, 0, 0, 0);
	configure(fx, 1,
	          ARGS("--steps-per-epoch", "3", "--backup-dir", fx->backup_dir, "--model", "cnn"));
	char *log = run_to_exit_1(fx);
	/* Both built-ins are named "sequential", as Keras names them: the
	 * architecture tells them apart. */
	testutil_assert_matches(log, "\"level\":\"error\".*backup-000000000003\\.mwjb.*backup is "
	                             "of model 'sequential' \\(architecture [0-9a-f]{16}, "
	                             "347146 parameters[^)]*\\), this run trains 'sequential' "
	                             "\\(architecture [0-9a-f]{16}, 2770634 parameters");
	free(log);
	assert_int_equal(count_files(fx->backup_dir), 1);
}

/* Rewrites the backup of step from (of the runs configure() sets up: cnn-pool,
 * SGD) as one of the position pos, as an edited file or a buggy writer
 * would leave it, with a sound checksum. */
static void rewrite_position(struct fixture *fx, uint64_t from, const struct train_position *pos)
{
	char path[PATH_MAX], err[ERR_LEN];
	struct checkpoint c = {.model = "sequential", .optimizer = OPT_SGD};
	struct keras_model km;
	struct model_size size;

	testutil_keras(&km, "cnn-pool", 28, 10);
	if (model_plan(&km, 16, 0, &size, err) < 0)
		fail_msg("%s", err);
	keras_model_release(&km);
	c.nparams = size.nparams;
	c.nstate = size.nstate;
	c.arch_hash = size.arch_hash;
	c.params = calloc(c.nparams, sizeof(float));
	assert_non_null(c.params);
	assert_int_equal(checkpoint_path(fx->backup_dir, from, path, sizeof(path)), 0);
	if (checkpoint_load(path, &c, err) != 0)
		fail_msg("%s", err);
	c.pos = *pos;
	if (checkpoint_save(fx->backup_dir, &c, err) != 0)
		fail_msg("%s", err);
	free(c.params);
}

/* A backup at a step far past its 20-step epochs, with a sound checksum,
 * is refused: exit 1 (no restart makes it fit), saying what is wrong,
 * before anything is trained, and every backup is left where it was.
 * Restored, it used to report a loss of 0 and its backups were deleted. */
static void test_a_backup_past_the_end_of_its_epochs_exits_1_and_stays(void **state)
{
	struct fixture *fx = *state;
	const struct train_position far = {
	    .epoch = 0,
	    .step = 100000,
	    .global_step = 100000,
	    .examples = 1600000,
	    .world = 1,
	    .batch_size = 16,
	    .sums = {.loss_sum = 230000.0, .count = 1600000.0, .sums = {1200000.0}}};

	configure(fx, 1,
	          ARGS("--steps-per-epoch", "20", "--save-freq", "5", "--backup-dir",
	               fx->backup_dir, "--keep-backups"));
	supervise(fx, NULL, NULL, 0, 0, 0);
	rewrite_position(fx, 20, &far);
	assert_int_equal(count_files(fx->backup_dir), 2);
	configure(fx, 1,
	          ARGS("--epochs", "2", "--steps-per-epoch", "20", "--save-freq", "5",
	               "--backup-dir", fx->backup_dir));
	char *log = run_to_exit_1(fx);
	testutil_assert_matches(log, "backup-000000100000\\.mwjb' cannot be resumed: it is at "
	                             "step 100000 of epoch 1, past the 20 steps of an epoch "
	                             "\\(--steps-per-epoch 20\\); it is left as it is");
	free(log);
	char *out = output(fx, 0, "out");
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(count_files(fx->backup_dir), 2);
	char path[PATH_MAX];
	assert_int_equal(checkpoint_path(fx->backup_dir, 100000, path, sizeof(path)), 0);
	assert_int_equal(access(path, F_OK), 0);
}

/* A backup written by two workers, resumed by one: the run goes on from the
 * step with the data re-sharded, and says that it is no exact replay. */
static void test_a_backup_from_another_world_size_resumes_and_says_so(void **state)
{
	struct fixture *fx = *state;

	configure(
	    fx, 2,
	    ARGS("--steps-per-epoch", "10", "--backup-dir", fx->backup_dir, "--keep-backups"));
	supervise(fx, NULL, NULL, 0, 0, 0);
	configure(fx, 1,
	          ARGS("--epochs", "2", "--steps-per-epoch", "10", "--backup-dir", fx->backup_dir));
	supervise(fx, NULL, NULL, 0, 0, 0);
	char *log = output(fx, 0, "err");
	testutil_assert_contains(log, "restored the backup of step 10 ");
	testutil_assert_contains(log, "comes from 2 worker(s) at batch 16; this run has 1 at batch "
	                              "16: the data are re-sharded from example 320 on");
	free(log);
	char *out = output(fx, 0, "out");
	testutil_assert_contains(out, "\"epoch\":2");
	free(out);
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_workers_killed_at_random_steps_end_with_the_uninterrupted_weights),
	    TEST(test_with_epoch_backups_killed_workers_end_with_the_uninterrupted_weights),
	    TEST(test_a_killed_chief_comes_back_and_the_run_ends_as_if_uninterrupted),
	    TEST(test_strangers_at_the_ports_neither_stall_nor_change_a_keyed_killed_run),
	    TEST(test_sigterm_stops_every_worker_at_one_step_with_a_backup_there),
	    TEST(test_sigterm_to_all_workers_leaves_a_backup_a_new_run_ends_exactly),
	    TEST(test_a_damaged_newest_backup_is_passed_over_for_the_one_before),
	    TEST(test_a_directory_of_only_damaged_backups_exits_1),
	    TEST(test_sigterm_while_waiting_for_peers_exits_143_at_once),
	    TEST(test_a_backup_of_another_model_exits_1_saying_so),
	    TEST(test_a_backup_past_the_end_of_its_epochs_exits_1_and_stays),
	    TEST(test_a_backup_from_another_world_size_resumes_and_says_so),
	};
	const char *env = getenv("MWJ_TEST_SEED");
	char err[ERR_LEN];
	uint64_t s;

	worker_bin = testutil_worker_bin("test_fault_tolerance");
	if (worker_bin == NULL)
		return 1;
	seed = (unsigned)time(NULL);
	if (env && env[0] && parse_u64(env, 0, UINT32_MAX, &s, err) == 0)
		seed = (unsigned)s;
	printf("random kill steps from MWJ_TEST_SEED=%u\n", seed);
	srand(seed);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
