/* test_metrics_endpoint.c - mwj-worker's /metrics: the page parses as the
 * Prometheus text format and says what was counted, labels escaped, the
 * chief's backup families only where backups are written, no GPU memory
 * without the CUDA backend; the endpoint over a real socket on 127.0.0.1
 * (404 elsewhere, 405 for other methods); and a real `mwj-worker train
 * --metrics-addr 127.0.0.1:0` on Fashion-MNIST, scraped while it trains,
 * whose step and example counters match the steps it ran; and off unless
 * asked for.
 *
 * The training run is scraped at steps it has printed, and stopped with
 * SIGTERM: the test waits for what the worker says, never for a time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "metrics_endpoint.h"
#include "prom_scrape.h"
#include "prom_text.h"
#include "testutil.h"
#include "worker_metrics.h"

#define QUICK_SECONDS 60
#define TRAIN_SECONDS 600 /* generous for sanitizers on a busy machine */
#define BATCH         16
#define BATCH_S       "16"

static const char *worker_bin;

struct fixture {
	char dir[TESTUTIL_TMPDIR_LEN]; /* first, for testutil_fixture_setup() */
	struct worker_metrics m;
	struct metrics_endpoint e;
	pid_t pid;
	char *page;
};

static int setup(void **state)
{
	int rc = testutil_fixture_setup(state, sizeof(struct fixture), "metrics");

	if (rc == 0)
		worker_metrics_init(&((struct fixture *)*state)->m);
	return rc;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	metrics_endpoint_stop(&fx->e);
	worker_metrics_release(&fx->m);
	testutil_kill(fx->pid);
	free(fx->page);
	return testutil_fixture_teardown(state);
}

/* Renders fx's metrics into fx->page and checks the format. */
static const char *render(struct fixture *fx)
{
	size_t len = 0;

	free(fx->page);
	fx->page = metrics_endpoint_render(&fx->m, &len);
	assert_non_null(fx->page);
	assert_int_equal(strlen(fx->page), len);
	prom_scrape_check(fx->page);
	return fx->page;
}

/* A chief of 2 workers with backups, 3 steps into a run of 2 x 50. */
static void count_a_run(struct worker_metrics *m, int writes_backups)
{
	struct worker_metrics_info info = {0, 2, "", "cpu", "ring", 0, writes_backups};

	snprintf(info.job, sizeof(info.job), "mnist");
	worker_metrics_set_info(m, &info);
	worker_metrics_set_plan(m, &(struct worker_metrics_plan){2, 50, 0.001, 1, {"accuracy"}});
	worker_metrics_rendezvous(m, 250000);
	for (uint64_t n = 1; n <= 3; n++)
		worker_metrics_step(m,
		                    &(struct worker_metrics_step){
		                        12000, BATCH, 2 * BATCH, 1, (long)n, n, 2.5, {0.125}},
		                    (long long)n * 1000000);
	worker_metrics_allreduce(m, 11082536, 30000);
	worker_metrics_backup(m, 3, 11083000, 40000, 1);
	worker_metrics_validation(m, 2.25, (const double[]){0.5});
}

static void test_the_page_parses_and_says_what_was_counted(void **state)
{
	struct fixture *fx = *state;
	const char *p;

	count_a_run(&fx->m, 1);
	p = render(fx);
	assert_true(prom_scrape_value(
	                p, "mwj_worker_info{rank=\"0\",world=\"2\",job=\"mnist\",backend=\"cpu\","
	                   "communicator=\"ring\"}") == 1);
	assert_true(prom_scrape_value(p, "mwj_worker_steps_total") == 3);
	assert_true(prom_scrape_value(p, "mwj_worker_examples_total") == 3 * BATCH);
	assert_true(prom_scrape_value(p, "mwj_worker_step_duration_seconds_count") == 3);
	assert_true(fabs(prom_scrape_value(p, "mwj_worker_step_duration_seconds_sum") - 0.036) <
	            1e-9);
	assert_true(prom_scrape_value(p, "mwj_worker_step_duration_seconds_bucket{le=\"0.01\"}") ==
	            0);
	assert_true(prom_scrape_value(p, "mwj_worker_step_duration_seconds_bucket{le=\"0.025\"}") ==
	            3);
	assert_true(prom_scrape_value(p, "mwj_worker_allreduce_bytes_total") == 11082536);
	assert_true(fabs(prom_scrape_value(p, "mwj_worker_allreduce_seconds_total") - 0.03) < 1e-9);
	assert_true(prom_scrape_value(p, "mwj_worker_rendezvous_duration_seconds_count") == 1);
	assert_true(prom_scrape_value(p, "mwj_worker_resyncs_total") == 0);
	assert_true(prom_scrape_value(p, "mwj_worker_epoch") == 1);
	assert_true(prom_scrape_value(p, "mwj_worker_epochs") == 2);
	assert_true(prom_scrape_value(p, "mwj_worker_epoch_step") == 3);
	assert_true(prom_scrape_value(p, "mwj_worker_steps_per_epoch") == 50);
	assert_true(prom_scrape_value(p, "mwj_worker_global_step") == 3);
	assert_true(prom_scrape_value(p, "mwj_worker_learning_rate") == 0.001);
	assert_true(prom_scrape_value(p, "mwj_worker_loss") == 2.5);
	assert_true(prom_scrape_value(p, "mwj_worker_metric{metric=\"accuracy\"}") == 0.125);
	assert_true(prom_scrape_value(p, "mwj_worker_validation_loss") == 2.25);
	assert_true(prom_scrape_value(p, "mwj_worker_validation_metric{metric=\"accuracy\"}") ==
	            0.5);
	assert_true(prom_scrape_value(p, "mwj_worker_backup_duration_seconds_count") == 1);
	assert_true(prom_scrape_value(p, "mwj_worker_backup_size_bytes") == 11083000);
	assert_true(prom_scrape_value(p, "mwj_worker_backup_failures_total") == 0);
	assert_true(prom_scrape_value(p, "mwj_worker_last_backup_step") == 3);
}

static void test_backups_are_shown_only_where_this_worker_writes_them(void **state)
{
	struct fixture *fx = *state;
	const char *p;

	count_a_run(&fx->m, 0);
	p = render(fx);
	assert_true(prom_scrape_has(p, "mwj_worker_steps_total"));
	assert_false(prom_scrape_has(p, "mwj_worker_backup_duration_seconds"));
	assert_false(prom_scrape_has(p, "mwj_worker_backup_size_bytes"));
	assert_false(prom_scrape_has(p, "mwj_worker_last_backup_step"));
}

/* A CPU-only build has no GPU to ask: the family is left out rather than
 * said to be 0, even when asked for GPUs. */
static void test_no_gpu_memory_is_reported_without_the_cuda_backend(void **state)
{
	struct fixture *fx = *state;
	struct worker_metrics_info info = {0, 1, "", "cuda", "nccl", 2, 0};

	worker_metrics_set_info(&fx->m, &info);
	assert_false(prom_scrape_has(render(fx), "mwj_worker_gpu_memory_used_bytes"));
}

static void test_before_training_the_page_parses_without_info_or_metrics(void **state)
{
	struct fixture *fx = *state;
	const char *p = render(fx);

	assert_null(strstr(p, "mwj_worker_info"));
	assert_true(prom_scrape_value(p, "mwj_worker_steps_total") == 0);
	assert_true(prom_scrape_value(p, "mwj_worker_epoch") == 0);
	assert_false(prom_scrape_has(p, "mwj_worker_metric"));
	assert_false(prom_scrape_has(p, "mwj_worker_validation_loss"));
}

/* MWJ_JOB_NAME comes from outside: a quote, a backslash or a newline in it
 * must not break the page. */
static void test_a_job_name_with_quotes_and_newlines_is_escaped(void **state)
{
	struct fixture *fx = *state;
	struct worker_metrics_info info = {0, 1, "", "cpu", "local", 0, 0};

	snprintf(info.job, sizeof(info.job), "a\"b\\c\nd");
	worker_metrics_set_info(&fx->m, &info);
	testutil_assert_contains(render(fx), "job=\"a\\\"b\\\\c\\nd\"");
}

static void test_the_endpoint_serves_metrics_and_nothing_else_over_a_socket(void **state)
{
	struct fixture *fx = *state;
	char err[ERR_LEN], ctype[128];
	int status;

	count_a_run(&fx->m, 0);
	assert_int_equal(metrics_endpoint_start(&fx->e, &fx->m, "127.0.0.1:0", err), 0);
	assert_true(fx->e.l.port > 0);
	fx->page = prom_scrape_get(fx->e.l.port, "/metrics", &status, ctype, sizeof(ctype));
	assert_int_equal(status, 200);
	assert_string_equal(ctype, PROM_CONTENT_TYPE);
	assert_true(prom_scrape_check(fx->page) > 20);
	assert_true(prom_scrape_value(fx->page, "mwj_worker_steps_total") == 3);
	free(prom_scrape_get(fx->e.l.port, "/healthz", &status, NULL, 0));
	assert_int_equal(status, 404);
	/* A second listener on the same port cannot start, and says where. */
	struct metrics_endpoint again = {0};
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", fx->e.l.port);
	assert_int_equal(metrics_endpoint_start(&again, &fx->m, addr, err), -1);
	testutil_assert_contains(err, addr);
	testutil_assert_contains(err, "cannot listen");
}

/* --- a real worker --- */

/* Starts mwj-worker train with args (NULL-ended) and extra environment
 * (NULL-ended, or NULL); its stdout and stderr in fx->dir. */
static void spawn(struct fixture *fx, const char *const *env, const char *const *args)
{
	char out[PATH_MAX], err[PATH_MAX];

	snprintf(out, sizeof(out), "%s/out", fx->dir);
	snprintf(err, sizeof(err), "%s/err", fx->dir);
	fx->pid = testutil_spawn(worker_bin, args, env, out, err);
}

static char *stream(const struct fixture *fx, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", fx->dir, name);
	return testutil_read_file(path, NULL);
}

/* Scrapes the worker until its steps counter reaches at least want, and
 * returns the page (the caller frees it) and the count. */
static char *scrape_after(int port, double want, double *steps)
{
	double deadline = testutil_now() + TRAIN_SECONDS;

	for (;;) {
		int status;
		char *page = prom_scrape_get(port, "/metrics", &status, NULL, 0);
		assert_int_equal(status, 200);
		*steps = prom_scrape_value(page, "mwj_worker_steps_total");
		if (*steps >= want)
			return page;
		free(page);
		if (testutil_now() > deadline)
			fail_msg("the worker did not reach step %.0f in %d s", want, TRAIN_SECONDS);
		nanosleep(&(struct timespec){0, 20L * 1000 * 1000}, NULL);
	}
}

/* The counters of one scrape agree with each other and with steps the
 * worker printed (stdout, read after it stopped). */
static void assert_counts_agree(const char *page, double steps, const char *out)
{
	char line[64];

	prom_scrape_check(page);
	assert_true(prom_scrape_value(page, "mwj_worker_examples_total") == steps * BATCH);
	assert_true(prom_scrape_value(page, "mwj_worker_global_step") == steps);
	assert_true(prom_scrape_value(page, "mwj_worker_epoch_step") == steps);
	assert_true(prom_scrape_value(page, "mwj_worker_step_duration_seconds_count") == steps);
	snprintf(line, sizeof(line), "(^|\n) *%.0f/100000 \\[", steps);
	testutil_assert_matches(out, line);
}

static void test_a_training_worker_serves_counters_that_match_the_steps_it_ran(void **state)
{
	struct fixture *fx = *state;
	char err_path[PATH_MAX];
	double first, second;
	char *a, *b;

	spawn(fx, NULL,
	      (const char *const[]){"train", "--threads", "1", "--data-dir", testutil_data_dir(),
	                            "--steps-per-epoch", "100000", "--batch-size", BATCH_S,
	                            "--log-every", "1", "--metrics-addr", "127.0.0.1:0", NULL});
	snprintf(err_path, sizeof(err_path), "%s/err", fx->dir);
	int port = prom_scrape_port(fx->pid, err_path, testutil_now() + TRAIN_SECONDS);
	a = scrape_after(port, 5, &first);
	b = scrape_after(port, first + 5, &second);
	assert_int_equal(kill(fx->pid, SIGTERM), 0);
	int status = testutil_wait(fx->pid, testutil_now() + TRAIN_SECONDS);
	fx->pid = 0;
	char *out = stream(fx, "out"), *log = stream(fx, "err");
	if (status != 128 + SIGTERM)
		fail_msg("exit %d, want %d\n%s", status, 128 + SIGTERM, log);
	assert_counts_agree(a, first, out);
	assert_counts_agree(b, second, out);
	/* Stopped at a step at or after the last one scraped. */
	const char *at = strstr(log, "stopped by signal 15 after step ");
	assert_non_null(at);
	assert_true(strtod(at + strlen("stopped by signal 15 after step "), NULL) >= second);
	/* One worker: nothing all-reduced, and no GPU, no backups, shown. */
	assert_true(prom_scrape_value(b, "mwj_worker_info{rank=\"0\",world=\"1\",job=\"\","
	                                 "backend=\"cpu\",communicator=\"local\"}") == 1);
	assert_true(prom_scrape_value(b, "mwj_worker_allreduce_bytes_total") == 0);
	assert_true(prom_scrape_value(b, "mwj_worker_epoch") == 1);
	assert_true(prom_scrape_value(b, "mwj_worker_steps_per_epoch") == 100000);
	assert_true(prom_scrape_value(b, "mwj_worker_rendezvous_duration_seconds_count") == 1);
	double loss = prom_scrape_value(b, "mwj_worker_loss");
	double acc = prom_scrape_value(b, "mwj_worker_metric{metric=\"accuracy\"}");
	assert_true(isfinite(loss) && loss > 0);
	assert_true(acc >= 0 && acc <= 1);
	assert_false(prom_scrape_has(b, "mwj_worker_gpu_memory_used_bytes"));
	assert_false(prom_scrape_has(b, "mwj_worker_backup_duration_seconds"));
	free(a);
	free(b);
	free(out);
	free(log);
}

/* Off by default, with 0 and with an empty MWJ_METRICS_ADDR; on with the
 * variable alone. */
static void test_metrics_are_served_only_when_asked_for(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		const char *env, *flag; /* NULL: not given */
		int served;
	} cases[] = {
	    {NULL, NULL, 0},
	    {NULL, "0", 0},
	    {"MWJ_METRICS_ADDR=", NULL, 0},
	    {"MWJ_METRICS_ADDR=127.0.0.1:0", "0", 0},
	    {"MWJ_METRICS_ADDR=127.0.0.1:0", NULL, 1},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[16] = {"train",      "--threads",         "1",
		                        "--data-dir", testutil_data_dir(), "--steps-per-epoch",
		                        "1",          "--batch-size",      BATCH_S};
		size_t n = 9;
		if (cases[i].flag) {
			args[n++] = "--metrics-addr";
			args[n++] = cases[i].flag;
		}
		args[n] = NULL;
		spawn(fx, (const char *const[]){cases[i].env, NULL}, args);
		int status = testutil_wait(fx->pid, testutil_now() + TRAIN_SECONDS);
		fx->pid = 0;
		char *log = stream(fx, "err");
		if (status != 0 ||
		    (strstr(log, "serving /metrics on port ") != NULL) != cases[i].served)
			fail_msg(
			    "case %zu (%s, --metrics-addr %s): exit %d, served %d, want %d\n%s", i,
			    cases[i].env ? cases[i].env : "no variable",
			    cases[i].flag ? cases[i].flag : "not given", status,
			    strstr(log, "serving /metrics") != NULL, cases[i].served, log);
		free(log);
	}
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_the_page_parses_and_says_what_was_counted),
	    TEST(test_backups_are_shown_only_where_this_worker_writes_them),
	    TEST(test_no_gpu_memory_is_reported_without_the_cuda_backend),
	    TEST(test_before_training_the_page_parses_without_info_or_metrics),
	    TEST(test_a_job_name_with_quotes_and_newlines_is_escaped),
	    TEST(test_the_endpoint_serves_metrics_and_nothing_else_over_a_socket),
	    TEST(test_a_training_worker_serves_counters_that_match_the_steps_it_ran),
	    TEST(test_metrics_are_served_only_when_asked_for),
	};

	worker_bin = testutil_worker_bin("test_metrics_endpoint");
	if (worker_bin == NULL)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
