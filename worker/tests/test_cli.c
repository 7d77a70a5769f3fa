/* test_cli.c - the mwj-worker binary as a user runs it: help, usage errors,
 * bad flags and environment, bad data, and short real runs of train and
 * evaluate in text and JSON.
 *
 * The binary is found through MWJ_WORKER_BIN and the data through
 * MWJ_TEST_DATA (both set by 'make test'). Each run gets stdin from
 * /dev/null, stdout and stderr in files (so never a terminal), the inherited
 * environment minus TF_CONFIG and every MWJ_* variable, and a time limit
 * (testutil_spawn). Each test gets its own mkdtemp directory, removed by the
 * teardown even when the test fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cblas.h>
#include <cjson/cJSON.h>

#include "blas_cpu.h"
#include "err.h"
#include "model.h"
#include "model_file.h"
#include "testutil.h"

#define QUICK_SECONDS 60  /* runs that stop at parsing or loading */
#define TRAIN_SECONDS 600 /* runs that train or evaluate, generous for sanitizers */

/* Keras' numbers: "%.4f", or "%.4e" when |v| <= 1e-3. */
#define NUM "([0-9]+\\.[0-9]{4}|[0-9]\\.[0-9]{4}e[-+][0-9]{2})"
/* " - 1s 12ms/step" at the end of an epoch (Progbar._format_time). */
#define FINAL_TIME " - [0-9]+s [0-9]+(s|ms|us)/step"

static const char *worker_bin;

struct fixture {
	char dir[TESTUTIL_TMPDIR_LEN]; /* first, for testutil_fixture_setup() */
	char path[PATH_MAX];
	int status;         /* exit status of the last run; 128 + signal if killed */
	long long peak_rss; /* its peak resident memory, in bytes */
	char *out;          /* its stdout and stderr, NUL-terminated */
	char *err;
};

static int setup(void **state)
{
	return testutil_fixture_setup(state, sizeof(struct fixture), "cli");
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	free(fx->out);
	free(fx->err);
	return testutil_fixture_teardown(state);
}

/* The path of name in the fixture's directory (valid until the next call). */
static const char *tmp_path(struct fixture *fx, const char *name)
{
	snprintf(fx->path, sizeof(fx->path), "%s/%s", fx->dir, name);
	return fx->path;
}

/* Runs mwj-worker with args (NULL-ended) and extra environment, waits at
 * most timeout seconds, and keeps its exit status and output in fx. */
static void run_env(struct fixture *fx, const char *const *extra_env, int timeout,
                    const char *const *args)
{
	char out_path[PATH_MAX], err_path[PATH_MAX];
	pid_t pid;

	/* cmocka's setup made fx; this tells clang-analyzer, which cannot see
	 * that, and does not know that a failed assertion leaves the test. */
	if (fx == NULL)
		abort();
	snprintf(out_path, sizeof(out_path), "%s/.stdout", fx->dir);
	snprintf(err_path, sizeof(err_path), "%s/.stderr", fx->dir);
	pid = testutil_spawn(worker_bin, args, extra_env, out_path, err_path);
	fx->status = testutil_wait_peak(pid, testutil_now() + timeout, &fx->peak_rss);
	if (fx->status < 0) {
		testutil_kill(pid);
		fail_msg("'%s %s' did not finish in %d s", worker_bin, args[0] ? args[0] : "",
		         timeout);
	}
	free(fx->out);
	free(fx->err);
	fx->out = testutil_read_file(out_path, NULL);
	fx->err = testutil_read_file(err_path, NULL);
}

#define RUN(fx, timeout, ...) run_env(fx, NULL, timeout, (const char *const[]){__VA_ARGS__, NULL})
#define RUN_ENV(fx, env, timeout, ...)                                                             \
	run_env(fx, (const char *const[]){env, NULL}, timeout,                                     \
	        (const char *const[]){__VA_ARGS__, NULL})

static void assert_status(const struct fixture *fx, int want)
{
	if (fx->status != want)
		fail_msg("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", fx->status, want,
		         fx->out, fx->err);
}

/* A usage error: exit 1, nothing on stdout, and stderr naming each part. */
static void assert_usage_error(const struct fixture *fx, const char *part1, const char *part2)
{
	assert_status(fx, 1);
	assert_string_equal(fx->out, "");
	testutil_assert_contains(fx->err, part1);
	if (part2)
		testutil_assert_contains(fx->err, part2);
}

/* Splits text in place into lines (without '\n'); returns how many. */
static int split_lines(char *text, char **lines, int max)
{
	int n = 0;
	char *line;

	while ((line = strsep(&text, "\n")) != NULL) {
		if (line[0] == '\0' && text == NULL)
			break;
		assert_true(n < max);
		lines[n++] = line;
	}
	return n;
}

/* The line of help that documents flag ("  --flag ..."), or NULL. */
static const char *help_line(const char *help, const char *flag)
{
	char want[64];
	const char *p = help;

	snprintf(want, sizeof(want), "\n  %s ", flag);
	p = strstr(p, want);
	return p ? p + 1 : NULL;
}

static void assert_flags_documented(const char *help, const char *const *flags, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *line = help_line(help, flags[i]);
		if (line == NULL)
			fail_msg("--help does not list %s:\n%s", flags[i], help);
		const char *end = strchr(line, '\n');
		const char *def = strstr(line, "default");
		if (def == NULL || (end && def > end))
			fail_msg("--help gives no default for %s: '%.*s'", flags[i],
			         end ? (int)(end - line) : (int)strlen(line), line);
	}
}

static void test_train_help_lists_every_flag_with_its_default(void **state)
{
	struct fixture *fx = *state;
	/* The run's flags, then those of what compile() and the data take. */
	static const char *const flags[] = {
	    "--model",
	    "--epochs",
	    "--steps-per-epoch",
	    "--batch-size",
	    "--learning-rate",
	    "--optimizer",
	    "--momentum",
	    "--seed",
	    "--data-dir",
	    "--validation-steps",
	    "--model-dir",
	    "--threads",
	    "--log-format",
	    "--log-level",
	    "--log-every",
	    "--loss",
	    "--from-logits",
	    "--metrics",
	    "--nesterov",
	    "--beta-1",
	    "--beta-2",
	    "--epsilon",
	    "--weight-decay",
	    "--rho",
	    "--centered",
	    "--initial-accumulator-value",
	    "--data",
	    "--rescale",
	    "--metrics-addr",
	};

	RUN(fx, QUICK_SECONDS, "train", "--help");
	assert_status(fx, 0);
	assert_string_equal(fx->err, "");
	testutil_assert_contains(fx->out, "usage: mwj-worker train");
	assert_flags_documented(fx->out, flags, sizeof(flags) / sizeof(flags[0]));
	assert_non_null(help_line(fx->out, "--help"));
}

static void test_evaluate_help_lists_its_own_flags_with_defaults(void **state)
{
	struct fixture *fx = *state;
	static const char *const flags[] = {
	    "--model-dir",  "--data-dir", "--data",       "--rescale",
	    "--batch-size", "--threads",  "--log-format", "--log-level",
	};

	RUN(fx, QUICK_SECONDS, "evaluate", "--help");
	assert_status(fx, 0);
	assert_string_equal(fx->err, "");
	testutil_assert_contains(fx->out, "usage: mwj-worker evaluate");
	assert_flags_documented(fx->out, flags, sizeof(flags) / sizeof(flags[0]));
	/* Training flags would be refused by evaluate, so they are not offered. */
	assert_null(help_line(fx->out, "--epochs"));
	assert_null(help_line(fx->out, "--learning-rate"));
}

static void test_top_level_help_names_both_commands(void **state)
{
	struct fixture *fx = *state;
	static const char *const spellings[] = {"--help", "-h", "help"};

	for (size_t i = 0; i < sizeof(spellings) / sizeof(spellings[0]); i++) {
		RUN(fx, QUICK_SECONDS, spellings[i]);
		assert_status(fx, 0);
		assert_string_equal(fx->err, "");
		testutil_assert_contains(fx->out, "usage: mwj-worker <command>");
		testutil_assert_matches(fx->out, "\n  train +[a-z]");
		testutil_assert_matches(fx->out, "\n  evaluate +[a-z]");
	}
}

static void test_version_prints_one_line_with_the_version(void **state)
{
	struct fixture *fx = *state;

	RUN(fx, QUICK_SECONDS, "--version");
	assert_status(fx, 0);
	assert_string_equal(fx->err, "");
	testutil_assert_matches(fx->out, "^mwj-worker [0-9]+\\.[0-9]+\\.[0-9]+\n$");
}

static void test_no_command_is_a_usage_error(void **state)
{
	struct fixture *fx = *state;

	run_env(fx, NULL, QUICK_SECONDS, (const char *const[]){NULL});
	assert_usage_error(fx, "no command given", "--help");
}

static void test_an_unknown_command_is_named(void **state)
{
	struct fixture *fx = *state;

	RUN(fx, QUICK_SECONDS, "frobnicate", "--epochs", "2");
	assert_usage_error(fx, "unknown command 'frobnicate'", NULL);
}

static void test_an_unknown_flag_is_named(void **state)
{
	struct fixture *fx = *state;

	RUN(fx, QUICK_SECONDS, "train", "--epochs", "2", "--bogus");
	assert_usage_error(fx, "unknown flag '--bogus'", NULL);
	/* A short flag inside a word is named itself, not the word before. */
	RUN(fx, QUICK_SECONDS, "train", "-xy");
	assert_usage_error(fx, "unknown flag '-x'", NULL);
	/* Training flags are not evaluate flags. */
	RUN(fx, QUICK_SECONDS, "evaluate", "--model-dir", fx->dir, "--epochs", "3");
	assert_usage_error(fx, "unknown flag '--epochs'", NULL);
}

static void test_a_flag_without_its_value_is_named(void **state)
{
	struct fixture *fx = *state;

	RUN(fx, QUICK_SECONDS, "train", "--batch-size");
	assert_usage_error(fx, "'--batch-size' needs a value", NULL);
	RUN(fx, QUICK_SECONDS, "evaluate", "--model-dir");
	assert_usage_error(fx, "'--model-dir' needs a value", NULL);
}

static void test_a_stray_argument_is_named(void **state)
{
	struct fixture *fx = *state;

	RUN(fx, QUICK_SECONDS, "train", "--epochs", "2", "fashion");
	assert_usage_error(fx, "unexpected argument 'fashion'", NULL);
}

/* Every bad value must be refused before any work, naming the flag and the
 * value the user typed. */
static void test_bad_flag_values_are_refused_naming_flag_and_value(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		const char *cmd, *flag, *value;
		const char *says;      /* more the message must say */
		const char *shown;     /* how the value appears, if not "'value'" */
		const char *before[3]; /* arguments the case needs first, NULL-ended */
	} cases[] = {
	    {"train", "--epochs", "0", "out of range", NULL, {NULL}},
	    {"train", "--epochs", "-1", "out of range", NULL, {NULL}},
	    {"train", "--epochs", "", "not a whole number", NULL, {NULL}},
	    {"train", "--batch-size", "0", "out of range", NULL, {NULL}},
	    {"train", "--batch-size", "70000", "out of range", NULL, {NULL}},
	    {"train", "--batch-size", "64x", "not a whole number", NULL, {NULL}},
	    {"train", "--learning-rate", "0", "out of range", NULL, {NULL}},
	    {"train", "--learning-rate", "-1", "out of range", NULL, {NULL}},
	    {"train", "--learning-rate", "nan", "not a finite number", NULL, {NULL}},
	    {"train", "--learning-rate", "inf", "not a finite number", NULL, {NULL}},
	    {"train", "--learning-rate", "abc", "not a number", NULL, {NULL}},
	    {"train", "--momentum", "1.0", "out of range", NULL, {NULL}},
	    {"train", "--momentum", "-0.5", "out of range", NULL, {NULL}},
	    {"train", "--threads", "0", "out of range", NULL, {NULL}},
	    {"train", "--threads", "999", "out of range", NULL, {NULL}},
	    {"train", "--seed", "-1", "out of range", NULL, {NULL}},
	    {"train", "--seed", "18446744073709551616", "out of range", NULL, {NULL}},
	    {"train", "--steps-per-epoch", "1.5", "not a whole number", NULL, {NULL}},
	    {"train", "--steps-per-epoch", "0", "out of range", NULL, {NULL}},
	    {"train", "--validation-steps", "-3", "out of range", NULL, {NULL}},
	    {"train", "--log-every", "-1", "out of range", NULL, {NULL}},
	    {"train", "--model", "resnet50", "unknown model 'resnet50'", NULL, {NULL}},
	    {"train", "--model", "no/such.json", "No such file or directory", NULL, {NULL}},
	    {"train", "--loss", "hinge", "not sparse_categorical_crossentropy", NULL, {NULL}},
	    {"train", "--metrics", "auc", "not a metric mwj computes", "'auc'", {NULL}},
	    {"train", "--rescale", "0", "a scale of 0", NULL, {NULL}},
	    {"train", "--rescale", "nan", "not a finite number", NULL, {NULL}},
	    {"train", "--beta-1", "1.5", "out of range", NULL, {NULL}},
	    {"train", "--epsilon", "-1", "out of range", NULL, {NULL}},
	    {"train", "--optimizer", "lamb", "sgd, adam, adamw, adagrad or rmsprop", NULL, {NULL}},
	    {"train", "--log-format", "xml", "text or json", NULL, {NULL}},
	    {"train", "--log-level", "loud", "debug, info, warn or error", NULL, {NULL}},
	    {"train", "--save-freq", "0", "not 'epoch' or a number of steps", NULL, {NULL}},
	    {"train", "--save-freq", "epochs", "not 'epoch' or a number of steps", NULL, {NULL}},
	    {"train", "--backup-dir", "", "empty path", NULL, {NULL}},
	    {"train", "--metrics-addr", "8080", "expected host:port, :port or 0", NULL, {NULL}},
	    {"train", "--metrics-addr", ":65536", "the port must be a number", NULL, {NULL}},
	    {"train", "--metrics-addr", "::1:80", "as [address]:port", NULL, {NULL}},
	    {"train",
	     "--momentum",
	     "0.9",
	     "not 'adam'",
	     "--momentum 0.9",
	     {"--optimizer", "adam", NULL}},
	    {"evaluate", "--batch-size", "0", "out of range", NULL, {"--model-dir", "/tmp", NULL}},
	    {"evaluate", "--threads", "999", "out of range", NULL, {"--model-dir", "/tmp", NULL}},
	    {"evaluate",
	     "--log-format",
	     "xml",
	     "text or json",
	     NULL,
	     {"--model-dir", "/tmp", NULL}},
	};
	char quoted[128];
	int bad = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[8];
		size_t n = 0;

		args[n++] = cases[i].cmd;
		for (size_t j = 0; cases[i].before[j]; j++)
			args[n++] = cases[i].before[j];
		args[n++] = cases[i].flag;
		args[n++] = cases[i].value;
		args[n] = NULL;
		run_env(fx, NULL, QUICK_SECONDS, args);
		snprintf(quoted, sizeof(quoted), "'%s'", cases[i].value);
		if (fx->status != 1 || fx->out[0] != '\0' || !strstr(fx->err, cases[i].flag) ||
		    !strstr(fx->err, cases[i].shown ? cases[i].shown : quoted) ||
		    !strstr(fx->err, cases[i].says)) {
			print_error("%s %s '%s': exit %d, stderr: %s", cases[i].cmd, cases[i].flag,
			            cases[i].value, fx->status, fx->err);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void test_bad_environment_is_refused_naming_the_variable(void **state)
{
	struct fixture *fx = *state;

	RUN_ENV(fx, "MWJ_LOG_FORMAT=xml", QUICK_SECONDS, "train", "--epochs", "1");
	assert_usage_error(fx, "MWJ_LOG_FORMAT", "'xml'");
	RUN_ENV(fx, "MWJ_LOG_LEVEL=loud", QUICK_SECONDS, "evaluate", "--model-dir", fx->dir);
	assert_usage_error(fx, "MWJ_LOG_LEVEL", "'loud'");
	RUN_ENV(fx, "MWJ_METRICS_ADDR=metrics", QUICK_SECONDS, "train", "--epochs", "1");
	assert_usage_error(fx, "MWJ_METRICS_ADDR", "'metrics'");
}

/* A --metrics-addr that cannot be listened on (a sidecar holds the port
 * the operator set) costs one warning naming the address and why; the
 * training goes on and ends as usual. */
static void test_a_metrics_address_in_use_is_a_warning_and_training_goes_on(void **state)
{
	struct fixture *fx = *state;
	char addr[32], want[96];
	int port;

	testutil_free_ports(&port, 1);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 1), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	RUN(fx, QUICK_SECONDS, "train", "--steps-per-epoch", "3", "--threads", "1",
	    "--metrics-addr", addr);
	close(fd);
	assert_status(fx, 0);
	snprintf(want, sizeof(want), "warn  metrics: cannot serve /metrics on '%s' (", addr);
	testutil_assert_contains(fx->err, want);
	testutil_assert_contains(
	    fx->err, "cannot listen (in use, or not permitted)); training goes on without them");
	testutil_assert_contains(fx->out, "3/3 [");
}

/* A job key file that cannot be the key stops the worker at start, naming
 * the file, whether the flag or the operator's variable gave it. */
static void test_a_bad_job_key_file_exits_1_naming_it(void **state)
{
	struct fixture *fx = *state;
	char missing[PATH_MAX], env[PATH_MAX + 32];

	snprintf(missing, sizeof(missing), "%s/no-such-key", fx->dir);
	RUN(fx, QUICK_SECONDS, "train", "--job-secret-file", missing, "--threads", "1");
	assert_usage_error(fx, missing, "No such file or directory");

	testutil_write_file(tmp_path(fx, "short-key"), "0123456789", 10);
	snprintf(env, sizeof(env), "MWJ_JOB_SECRET_FILE=%s", fx->path);
	RUN_ENV(fx, env, QUICK_SECONDS, "train", "--threads", "1");
	assert_usage_error(fx, fx->path, "10 bytes, a job key needs at least 32");
	assert_null(strstr(fx->err, "0123456789"));
}

/* A folder the chief cannot write is found at start, not after the last
 * step: exit 1 at once, naming the flag, the folder and why, with no
 * progress printed (nothing was trained that would be lost). */
static void test_an_output_folder_that_cannot_be_written_exits_1_before_training(void **state)
{
	struct fixture *fx = *state;
	char bad[PATH_MAX + 8], want[PATH_MAX + 80], env[PATH_MAX + 40];
	static const char *const flags[] = {"--model-dir", "--backup-dir"};

	/* Under a regular file, as "--model-dir /etc/passwd/sub" is. */
	testutil_write_file(tmp_path(fx, "file"), "x", 1);
	snprintf(bad, sizeof(bad), "%s/sub", fx->path);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		RUN(fx, QUICK_SECONDS, "train", flags[i], bad, "--steps-per-epoch", "2",
		    "--threads", "1", "--data-dir", testutil_data_dir());
		assert_status(fx, 1);
		snprintf(want, sizeof(want), "%s '%s' cannot be written", flags[i], bad);
		testutil_assert_contains(fx->err, want);
		testutil_assert_contains(fx->err, "Not a directory");
		assert_string_equal(fx->out, "");
	}
	/* The operator's variable is checked the same way. */
	snprintf(env, sizeof(env), "MWJ_MODEL_DIR=%s", bad);
	RUN_ENV(fx, env, QUICK_SECONDS, "train", "--steps-per-epoch", "2", "--threads", "1",
	        "--data-dir", testutil_data_dir());
	assert_status(fx, 1);
	snprintf(want, sizeof(want), "--model-dir '%s' cannot be written", bad);
	testutil_assert_contains(fx->err, want);
	assert_string_equal(fx->out, "");
}

/* A cluster file (MWJ_TF_CONFIG_FILE) that TF_CONFIG contradicts stops the
 * worker at start, naming both; one too large to be a ConfigMap's too. */
static void test_a_cluster_file_that_disagrees_with_tf_config_exits_1_naming_both(void **state)
{
	struct fixture *fx = *state;
	static const char cluster[] =
	    "{\"cluster\":{\"worker\":[\"127.0.0.1:1\",\"127.0.0.1:2\"]}}";
	char file_env[PATH_MAX + 32], want[PATH_MAX + 64];
	static char big[(4u << 20) + 1];

	testutil_write_file(tmp_path(fx, "tf-config.json"), cluster, strlen(cluster));
	snprintf(file_env, sizeof(file_env), "MWJ_TF_CONFIG_FILE=%s", fx->path);
	snprintf(want, sizeof(want), "TF_CONFIG and MWJ_TF_CONFIG_FILE '%s' disagree", fx->path);
	run_env(fx,
	        (const char *const[]){file_env, "MWJ_WORKER_INDEX=1",
	                              "TF_CONFIG={\"cluster\":{\"worker\":[\"127.0.0.1:1\","
	                              "\"127.0.0.1:3\"]},\"task\":{\"type\":\"worker\","
	                              "\"index\":1}}",
	                              NULL},
	        QUICK_SECONDS, (const char *const[]){"train", "--threads", "1", NULL});
	assert_usage_error(fx, want, "'cluster.worker[1]' is '127.0.0.1:3' in TF_CONFIG");

	memset(big, ' ', sizeof(big));
	memcpy(big, cluster, sizeof(cluster) - 1); /* without its NUL: blanks follow */
	testutil_write_file(tmp_path(fx, "big.json"), big, sizeof(big));
	snprintf(file_env, sizeof(file_env), "MWJ_TF_CONFIG_FILE=%s", fx->path);
	run_env(fx, (const char *const[]){file_env, "MWJ_WORKER_INDEX=0", NULL}, QUICK_SECONDS,
	        (const char *const[]){"train", "--threads", "1", NULL});
	assert_usage_error(fx, "MWJ_TF_CONFIG_FILE '", "more than the limit of 4194304");
}

static void test_a_missing_data_dir_names_the_missing_file(void **state)
{
	struct fixture *fx = *state;
	char missing[PATH_MAX], want[PATH_MAX + 64];

	snprintf(missing, sizeof(missing), "%s/no-such-dir", fx->dir);
	RUN(fx, QUICK_SECONDS, "train", "--data-dir", missing, "--threads", "1");
	assert_status(fx, 1);
	snprintf(want, sizeof(want), "%s/train-images-idx3-ubyte", missing);
	testutil_assert_contains(fx->err, want);
	testutil_assert_contains(fx->err, "No such file or directory");
	/* No progress was printed for a run that never started. */
	assert_string_equal(fx->out, "");
}

static void test_a_truncated_data_file_is_named(void **state)
{
	struct fixture *fx = *state;
	/* Claims 60000 images of 28x28 in its 16-byte header, then holds only
	 * 500 bytes of pixels. */
	const unsigned char file[16 + 500] = {0, 0, 8, 3,  0, 0, 0xea, 0x60,
	                                      0, 0, 0, 28, 0, 0, 0,    28};
	char want[PATH_MAX];

	static unsigned char labels[8 + 60000] = {0, 0, 8, 1, 0, 0, 0xea, 0x60};

	/* The labels agree with the images' header: only the pixels are short. */
	testutil_write_file(tmp_path(fx, "train-labels-idx1-ubyte"), labels, sizeof(labels));
	testutil_write_file(tmp_path(fx, "train-images-idx3-ubyte"), file, sizeof(file));
	snprintf(want, sizeof(want), "%s", fx->path);

	RUN(fx, QUICK_SECONDS, "train", "--data-dir", fx->dir, "--threads", "1");
	assert_status(fx, 1);
	testutil_assert_contains(fx->err, want);
	testutil_assert_contains(fx->err, "truncated");
	assert_string_equal(fx->out, "");
}

/* Writes an untrained model.mwj of the seed model name (Fashion-MNIST's
 * shapes) into dir, in-process, recording the loss and metric the
 * built-in models are compiled with, which evaluate uses again. */
static void save_model(const char *dir, const char *name)
{
	static const struct loss_config loss = {LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
	static const enum metric_kind metrics[] = {METRIC_ACCURACY};
	const struct model_file_info info = {"sgd", 0.001, 64, 1, 1, 0, 42, &loss, 1, metrics, 0};
	char err[ERR_LEN];
	struct keras_model km;
	struct model *m;

	testutil_keras(&km, name, 28, 10);
	m = model_new(&km, 1, 0, err);
	if (m == NULL)
		fail_msg("%s", err);
	model_init_params(m, &km, 42);
	if (model_file_save(dir, m, &km, &info, err) < 0)
		fail_msg("%s", err);
	model_free(m);
	keras_model_release(&km);
}

/* The parameters of the seed model name on Fashion-MNIST. */
static size_t seed_model_params(const char *name)
{
	struct keras_model km;
	struct model_size size;
	char err[ERR_LEN];

	testutil_keras(&km, name, 28, 10);
	if (model_plan(&km, 1, 0, &size, err) < 0)
		fail_msg("%s", err);
	keras_model_release(&km);
	return size.nparams;
}

/* What the headers of the data say is checked before the data are read:
 * test images of 64x64 for a model of 28x28, or more training images than
 * labels, stop the worker with exit 1 while it holds little memory, not
 * after it has inflated the 800 MiB the files would take. */
static void test_data_of_the_wrong_shape_or_count_is_refused_before_it_is_inflated(void **state)
{
	struct fixture *fx = *state;
	char model_dir[PATH_MAX], data_dir[PATH_MAX];
	const long long limit = 256ll << 20;

	snprintf(model_dir, sizeof(model_dir), "%s/model", fx->dir);
	snprintf(data_dir, sizeof(data_dir), "%s/data", fx->dir);
	save_model(model_dir, "cnn");
	assert_int_equal(mkdir(data_dir, 0700), 0);
	testutil_write_big_split(data_dir, "t10k", 200000, 64, 200000);
	RUN(fx, QUICK_SECONDS, "evaluate", "--model-dir", model_dir, "--data-dir", data_dir,
	    "--threads", "1");
	assert_status(fx, 1);
	if (fx->peak_rss > limit)
		fail_msg("evaluate took %lld MB to refuse the test images", fx->peak_rss >> 20);
	testutil_assert_contains(fx->err, "t10k-images-idx3-ubyte' holds 64x64 images, but the "
	                                  "model takes 28x28");
	assert_string_equal(fx->out, "");

	testutil_write_big_split(data_dir, "train", 200000, 64, 60000);
	RUN(fx, QUICK_SECONDS, "train", "--data-dir", data_dir, "--threads", "1");
	assert_status(fx, 1);
	if (fx->peak_rss > limit)
		fail_msg("train took %lld MB to refuse the training images", fx->peak_rss >> 20);
	testutil_assert_contains(fx->err, "train-images-idx3-ubyte' holds 200000 images but");
	testutil_assert_contains(fx->err, "holds 60000 labels");
}

/* "3/3 [====...] - 0s 12ms/step - loss: ... - val_accuracy: ...", whole. */
#define EPOCH_LINE_3                                                                               \
	"^3/3 \\[={30}\\]" FINAL_TIME " - loss: " NUM " - accuracy: " NUM " - val_loss: " NUM      \
	" - val_accuracy: " NUM "$"
#define EVALUATE_LINE "^157/157 \\[={30}\\]" FINAL_TIME " - loss: " NUM " - accuracy: " NUM "$"

static void test_train_prints_keras_progress_and_saves_a_model_that_evaluates(void **state)
{
	struct fixture *fx = *state;
	char model_dir[PATH_MAX], saved[PATH_MAX + 32];
	char *lines[16] = {0};
	struct stat st;
	double loss = 0, acc = -1;

	snprintf(model_dir, sizeof(model_dir), "%s/model", fx->dir);
	RUN(fx, TRAIN_SECONDS, "train", "--steps-per-epoch", "3", "--epochs", "2", "--model",
	    "cnn-pool", "--validation-steps", "2", "--model-dir", model_dir, "--threads", "1",
	    "--data-dir", testutil_data_dir());
	assert_status(fx, 0);
	/* stdout is a file: plain lines, no carriage returns or escapes. */
	assert_int_equal(split_lines(fx->out, lines, 16), 4);
	assert_string_equal(lines[0], "Epoch 1/2");
	testutil_assert_matches(lines[1], EPOCH_LINE_3);
	assert_string_equal(lines[2], "Epoch 2/2");
	testutil_assert_matches(lines[3], EPOCH_LINE_3);
	/* Logs went to stderr, as text, and say where the model went. */
	testutil_assert_matches(fx->err, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z info +config: "
	                                 "model='cnn-pool' epochs=2 steps_per_epoch=3 ");
	snprintf(saved, sizeof(saved), "model saved to '%s/model.mwj'", model_dir);
	testutil_assert_contains(fx->err, saved);
	snprintf(saved, sizeof(saved), "%s/model.mwj", model_dir);
	assert_int_equal(stat(saved, &st), 0);

	RUN(fx, TRAIN_SECONDS, "evaluate", "--model-dir", model_dir, "--threads", "1", "--data-dir",
	    testutil_data_dir());
	assert_status(fx, 0);
	assert_int_equal(split_lines(fx->out, lines, 16), 1);
	testutil_assert_matches(lines[0], EVALUATE_LINE);
	loss = strtod(strstr(lines[0], " - loss: ") + 9, NULL);
	acc = strtod(strstr(lines[0], " - accuracy: ") + 13, NULL);
	assert_true(isfinite(loss) && loss > 0);
	assert_true(acc >= 0 && acc <= 1);
	/* The model is named as its Keras file names it (the built-ins'
	 * "sequential"), and told apart by its size. */
	snprintf(saved, sizeof(saved), "evaluating model sequential (%zu parameters)",
	         seed_model_params("cnn-pool"));
	testutil_assert_contains(fx->err, saved);
}

/* Every line of stderr is a JSON log event. */
static void assert_json_logs(char *err)
{
	char *lines[64] = {0};
	int n = split_lines(err, lines, 64);

	assert_true(n >= 1);
	for (int i = 0; i < n; i++) {
		cJSON *o = testutil_json_object(lines[i]);
		testutil_json_string(o, "ts");
		testutil_json_string(o, "level");
		testutil_json_string(o, "msg");
		cJSON_Delete(o);
	}
}

static void test_json_log_format_prints_only_json_objects(void **state)
{
	struct fixture *fx = *state;
	char model_dir[PATH_MAX];
	char *lines[16] = {0};
	int n, steps = 0, epochs = 0;

	snprintf(model_dir, sizeof(model_dir), "%s/model", fx->dir);
	RUN(fx, TRAIN_SECONDS, "train", "--steps-per-epoch", "3", "--epochs", "2", "--model",
	    "cnn-pool", "--validation-steps", "2", "--model-dir", model_dir, "--threads", "1",
	    "--data-dir", testutil_data_dir(), "--log-format", "json", "--log-every", "1");
	assert_status(fx, 0);
	n = split_lines(fx->out, lines, 16);
	/* Steps 1 and 2 of each epoch, then the epoch itself. */
	assert_int_equal(n, 6);
	for (int i = 0; i < n; i++) {
		cJSON *o = testutil_json_object(lines[i]);
		const char *event = testutil_json_string(o, "event");
		if (strcmp(event, "step") == 0) {
			steps++;
			assert_true(testutil_json_number(o, "step") == i % 3 + 1);
		} else if (strcmp(event, "epoch") == 0) {
			epochs++;
			assert_true(testutil_json_number(o, "epoch") == epochs);
			assert_true(testutil_json_number(o, "epochs") == 2);
			assert_true(testutil_json_number(o, "steps") == 3);
			assert_true(testutil_json_number(o, "global_step") == 3 * epochs);
			assert_true(testutil_json_number(o, "loss") > 0);
			assert_true(testutil_json_number(o, "accuracy") >= 0);
			assert_true(testutil_json_number(o, "accuracy") <= 1);
			assert_true(testutil_json_number(o, "val_loss") > 0);
			assert_true(testutil_json_number(o, "val_accuracy") >= 0);
			assert_true(testutil_json_number(o, "val_accuracy") <= 1);
		} else {
			fail_msg("unexpected event '%s'", event);
		}
		cJSON_Delete(o);
	}
	assert_int_equal(steps, 4);
	assert_int_equal(epochs, 2);
	assert_json_logs(fx->err);

	RUN(fx, TRAIN_SECONDS, "evaluate", "--model-dir", model_dir, "--threads", "1", "--data-dir",
	    testutil_data_dir(), "--log-format", "json");
	assert_status(fx, 0);
	assert_int_equal(split_lines(fx->out, lines, 16), 1);
	cJSON *o = testutil_json_object(lines[0]);
	assert_string_equal(testutil_json_string(o, "event"), "evaluate");
	assert_true(testutil_json_number(o, "steps") == 157);
	assert_true(testutil_json_number(o, "examples") == 10000);
	assert_true(testutil_json_number(o, "loss") > 0);
	assert_true(testutil_json_number(o, "accuracy") >= 0 &&
	            testutil_json_number(o, "accuracy") <= 1);
	cJSON_Delete(o);
	assert_json_logs(fx->err);
}

static void test_log_format_comes_from_the_environment_unless_a_flag_overrides_it(void **state)
{
	struct fixture *fx = *state;
	char env_dir[PATH_MAX + 16];
	char *lines[4] = {0};

	save_model(fx->dir, "cnn-pool");
	/* The model dir from MWJ_MODEL_DIR, the format from MWJ_LOG_FORMAT. */
	snprintf(env_dir, sizeof(env_dir), "MWJ_MODEL_DIR=%s", fx->dir);
	run_env(fx, (const char *const[]){env_dir, "MWJ_LOG_FORMAT=json", NULL}, TRAIN_SECONDS,
	        (const char *const[]){"evaluate", "--threads", "1", "--data-dir",
	                              testutil_data_dir(), NULL});
	assert_status(fx, 0);
	assert_int_equal(split_lines(fx->out, lines, 4), 1);
	cJSON *o = testutil_json_object(lines[0]);
	assert_string_equal(testutil_json_string(o, "event"), "evaluate");
	cJSON_Delete(o);

	run_env(fx, (const char *const[]){env_dir, "MWJ_LOG_FORMAT=json", NULL}, TRAIN_SECONDS,
	        (const char *const[]){"evaluate", "--threads", "1", "--data-dir",
	                              testutil_data_dir(), "--log-format", "text", NULL});
	assert_status(fx, 0);
	assert_int_equal(split_lines(fx->out, lines, 4), 1);
	testutil_assert_matches(lines[0], EVALUATE_LINE);
}

static void test_the_openblas_kernels_are_logged_and_a_fallback_corrected(void **state)
{
	struct fixture *fx = *state;
	char env_dir[PATH_MAX + 16], want[160];
	/* This test loads the same OpenBLAS as the worker: what it picked here
	 * is what the worker's library picks before the correction. */
	const char *picked = openblas_get_corename();
	const char *better =
	    getenv("OPENBLAS_CORETYPE") ? NULL : blas_cpu_better_core(picked, blas_cpu_features());

	save_model(fx->dir, "cnn-pool");
	snprintf(env_dir, sizeof(env_dir), "MWJ_MODEL_DIR=%s", fx->dir);
	run_env(fx, (const char *const[]){env_dir, NULL}, TRAIN_SECONDS,
	        (const char *const[]){"evaluate", "--threads", "1", "--data-dir",
	                              testutil_data_dir(), NULL});
	assert_status(fx, 0);
	if (better)
		snprintf(want, sizeof(want),
		         "OpenBLAS kernels: %s (OpenBLAS picked %s for this CPU", better, picked);
	else
		snprintf(want, sizeof(want), "OpenBLAS kernels: %s", picked);
	testutil_assert_contains(fx->err, want);

	/* A kernel set the user names is kept, however slow. */
	run_env(fx, (const char *const[]){env_dir, "OPENBLAS_CORETYPE=Prescott", NULL},
	        TRAIN_SECONDS,
	        (const char *const[]){"evaluate", "--threads", "1", "--data-dir",
	                              testutil_data_dir(), NULL});
	assert_status(fx, 0);
	testutil_assert_contains(fx->err, "OpenBLAS kernels: Prescott (OPENBLAS_CORETYPE)");
}

static void test_evaluate_without_a_model_dir_is_a_usage_error(void **state)
{
	struct fixture *fx = *state;

	RUN(fx, QUICK_SECONDS, "evaluate", "--threads", "1");
	assert_usage_error(fx, "--model-dir is required", NULL);
}

static void test_evaluate_names_a_missing_model_file(void **state)
{
	struct fixture *fx = *state;
	char want[PATH_MAX];

	snprintf(want, sizeof(want), "%s/model.mwj", fx->dir);
	RUN(fx, QUICK_SECONDS, "evaluate", "--model-dir", fx->dir, "--threads", "1");
	assert_status(fx, 1);
	testutil_assert_contains(fx->err, want);
	testutil_assert_contains(fx->err, "No such file or directory");
	assert_string_equal(fx->out, "");
}

static void test_evaluate_refuses_a_corrupt_model_file(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX];
	struct stat st;
	int fd;
	unsigned char byte;

	save_model(fx->dir, "cnn-pool");
	snprintf(path, sizeof(path), "%s/model.mwj", fx->dir);
	assert_int_equal(stat(path, &st), 0);
	/* Flip one byte in the middle: somewhere in the parameters. */
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &byte, 1, st.st_size / 2), 1);
	byte ^= 0xff;
	assert_int_equal(pwrite(fd, &byte, 1, st.st_size / 2), 1);
	assert_int_equal(close(fd), 0);

	RUN(fx, QUICK_SECONDS, "evaluate", "--model-dir", fx->dir, "--threads", "1", "--data-dir",
	    testutil_data_dir());
	assert_status(fx, 1);
	testutil_assert_contains(fx->err, path);
	testutil_assert_contains(fx->err, "checksum");
	assert_string_equal(fx->out, "");
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_train_help_lists_every_flag_with_its_default),
	    TEST(test_evaluate_help_lists_its_own_flags_with_defaults),
	    TEST(test_top_level_help_names_both_commands),
	    TEST(test_version_prints_one_line_with_the_version),
	    TEST(test_no_command_is_a_usage_error),
	    TEST(test_an_unknown_command_is_named),
	    TEST(test_an_unknown_flag_is_named),
	    TEST(test_a_flag_without_its_value_is_named),
	    TEST(test_a_stray_argument_is_named),
	    TEST(test_bad_flag_values_are_refused_naming_flag_and_value),
	    TEST(test_bad_environment_is_refused_naming_the_variable),
	    TEST(test_a_metrics_address_in_use_is_a_warning_and_training_goes_on),
	    TEST(test_a_bad_job_key_file_exits_1_naming_it),
	    TEST(test_an_output_folder_that_cannot_be_written_exits_1_before_training),
	    TEST(test_a_cluster_file_that_disagrees_with_tf_config_exits_1_naming_both),
	    TEST(test_a_missing_data_dir_names_the_missing_file),
	    TEST(test_a_truncated_data_file_is_named),
	    TEST(test_data_of_the_wrong_shape_or_count_is_refused_before_it_is_inflated),
	    TEST(test_train_prints_keras_progress_and_saves_a_model_that_evaluates),
	    TEST(test_json_log_format_prints_only_json_objects),
	    TEST(test_log_format_comes_from_the_environment_unless_a_flag_overrides_it),
	    TEST(test_the_openblas_kernels_are_logged_and_a_fallback_corrected),
	    TEST(test_evaluate_without_a_model_dir_is_a_usage_error),
	    TEST(test_evaluate_names_a_missing_model_file),
	    TEST(test_evaluate_refuses_a_corrupt_model_file),
	};

	worker_bin = testutil_worker_bin("test_cli");
	if (worker_bin == NULL)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
