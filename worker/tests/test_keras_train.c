/* test_keras_train.c - mwj-worker trains the models and the data users
 * bring, as a user runs it: a Keras 3 model file (written here) on
 * Fashion-MNIST, alone, resumed bit for bit after a kill, on two workers
 * (with batch statistics of each worker's batch, or synchronized over the
 * global batch), and evaluated again from the model it saved; NumPy data (a .npz and a
 * folder of .npy files, written here byte by byte: no numpy in CI) for a
 * regression and a classification; and the files it refuses, naming the
 * file and the problem.
 *
 * Every run is of the real binary (MWJ_WORKER_BIN) on the real data
 * (MWJ_TEST_DATA), as in test_cli.c: stdin from /dev/null, stdout and
 * stderr in files of the test's mkdtemp directory, the environment without
 * TF_CONFIG and MWJ_*, and a deadline; the teardown kills what still runs.
 * Progress is read as JSON lines (--log-format json), whose numbers are
 * doubles printed exactly, so that two runs can be compared bit for bit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zip.h>

#include <cjson/cJSON.h>

#include "checkpoint.h"
#include "digest.h"
#include "err.h"
#include "model_file.h"
#include "testutil.h"

#define RUN_SECONDS 600 /* any one run, generous for sanitizers */
#define DIGEST_TAG  "final weights sha256 "
#define MAX_ARGS    48

static const char *worker_bin;

struct fixture {
	char dir[TESTUTIL_TMPDIR_LEN]; /* first, for testutil_fixture_setup() */
	char path[PATH_MAX];
	pid_t pids[2]; /* workers started and not yet reaped, for the teardown */
	int status;    /* exit status of the last run; 128 + signal if killed */
	char *out;     /* its stdout and stderr, NUL-terminated */
	char *err;
};

static int setup(void **state)
{
	return testutil_fixture_setup(state, sizeof(struct fixture), "keras-train");
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	for (int i = 0; i < 2; i++)
		testutil_kill(fx->pids[i]);
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

/* A file of the source tree, from the repository root the tests run in:
 * __FILE__ is worker/tests/test_keras_train.c, or absolute. */
static const char *tree_path(const char *path)
{
	static char buf[2 * PATH_MAX];
	const char *slash = strrchr(__FILE__, '/');
	int dir = slash != NULL ? (int)(slash - __FILE__) : 0;

	snprintf(buf, sizeof(buf), "%.*s%s../../%s", dir, __FILE__, dir ? "/" : "", path);
	return buf;
}

/* --- Runs of the binary --- */

/* Runs "mwj-worker args..." (NULL-ended) to its end, with stdout and
 * stderr kept in fx. */
static void run(struct fixture *fx, const char *const *args)
{
	char out_path[PATH_MAX], err_path[PATH_MAX];

	/* cmocka's setup made fx; clang-analyzer cannot see that. */
	if (fx == NULL)
		abort();
	snprintf(out_path, sizeof(out_path), "%s/.stdout", fx->dir);
	snprintf(err_path, sizeof(err_path), "%s/.stderr", fx->dir);
	fx->pids[0] = testutil_spawn(worker_bin, args, NULL, out_path, err_path);
	fx->status = testutil_wait(fx->pids[0], testutil_now() + RUN_SECONDS);
	if (fx->status < 0)
		fail_msg("'mwj-worker %s' did not finish in %d s", args[0], RUN_SECONDS);
	fx->pids[0] = 0;
	free(fx->out);
	free(fx->err);
	fx->out = testutil_read_file(out_path, NULL);
	fx->err = testutil_read_file(err_path, NULL);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void assert_status(const struct fixture *fx, int want)
{
	if (fx->status != want)
		fail_msg("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", fx->status, want,
		         fx->out, fx->err);
}

/* The 64 hex digits logged after DIGEST_TAG in err. */
static void logged_digest(const char *err, char hex[DIGEST_HEX_LEN])
{
	const char *p = strstr(err, DIGEST_TAG);

	if (p == NULL)
		fail_msg("no '%s' in:\n%s", DIGEST_TAG, err);
	snprintf(hex, DIGEST_HEX_LEN, "%s", p + strlen(DIGEST_TAG));
	testutil_assert_matches(hex, "^[0-9a-f]{64}$");
}

/* The number name of each JSON progress line of out whose "event" is
 * event, in order, into v (max entries: once they are full, the last one
 * takes each line after, so that it holds the last line's); returns how
 * many lines there are. */
static int event_numbers(const char *out, const char *event, const char *name, double *v, int max)
{
	char want[64];
	int n = 0;

	snprintf(want, sizeof(want), "\"event\":\"%s\"", event);
	for (const char *line = out; *line;) {
		size_t len = strcspn(line, "\n");
		char *text = strndup(line, len);
		assert_non_null(text);
		if (strstr(text, want)) {
			cJSON *o = testutil_json_object(text);
			v[n < max ? n : max - 1] = testutil_json_number(o, name);
			n++;
			cJSON_Delete(o);
		}
		free(text);
		line += len + (line[len] == '\n');
	}
	return n;
}

/* The number name of the last such line; fails the test if there is none. */
static double event_number(const char *out, const char *event, const char *name)
{
	double v = NAN;

	if (event_numbers(out, event, name, &v, 1) == 0)
		fail_msg("no %s event in:\n%s", event, out);
	return v;
}

/* --- Keras model files, written as Keras 3's model.to_json() writes them --- */

/* Writes text to path with every ' turned into ", so that the JSON below
 * reads without a backslash before every quote (no name in it has an
 * apostrophe). */
static void write_json(const char *path, const char *text)
{
	char *s = strdup(text);

	assert_non_null(s);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	testutil_write_file(path, s, strlen(s));
	free(s);
}

/* One layer as Keras 3 serializes it: its class and the text of its
 * config. */
struct k3_layer {
	const char *cls;
	const char *config;
};

#define K3_TEXT_LEN 16384 /* room for every model here */

static void append(char *text, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends to text, of *len bytes and at most K3_TEXT_LEN. */
static void append(char *text, size_t *len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	/* clang-analyzer loses va_start across the attribute (model_plan.c too).
	 * NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	int n = vsnprintf(text + *len, K3_TEXT_LEN - *len, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < K3_TEXT_LEN - *len);
	*len += (size_t)n;
}

/* Writes a Sequential model called name of the n layers to path, with
 * compile (the text of a compile config, or NULL for none, as tf-keras
 * writes), as Keras 3's model.to_json() writes it. */
static void write_k3_model(const char *path, const char *name, const struct k3_layer *layers, int n,
                           const char *compile)
{
	char text[K3_TEXT_LEN];
	size_t len = 0;

	append(text, &len,
	       "{'module':'keras','class_name':'Sequential','config':{'name':'%s',"
	       "'trainable':true,'layers':[",
	       name);
	for (int i = 0; i < n; i++)
		append(text, &len,
		       "%s{'module':'keras.layers','class_name':'%s','config':{%s},"
		       "'registered_name':null}",
		       i ? "," : "", layers[i].cls, layers[i].config);
	append(text, &len, "]},'registered_name':null%s%s}", compile ? ",'compile_config':" : "",
	       compile ? compile : "");
	write_json(path, text);
}

/* The text of a compile config into buf (len bytes): loss, a class of
 * keras.losses on probabilities (from_logits false), the metric
 * 'accuracy', and optimizer, a class of keras.optimizers, with the text
 * of its config. */
static const char *k3_compile(char *buf, size_t len, const char *loss, const char *optimizer,
                              const char *optimizer_config)
{
	int n =
	    snprintf(buf, len,
	             "{'optimizer':{'module':'keras.optimizers','class_name':'%s','config':{%s},"
	             "'registered_name':null},'loss':{'module':'keras.losses','class_name':'%s',"
	             "'config':{'reduction':'sum_over_batch_size','from_logits':false},"
	             "'registered_name':null},'loss_weights':null,'metrics':['accuracy'],"
	             "'weighted_metrics':null,'run_eagerly':false,'steps_per_execution':1,"
	             "'jit_compile':true}",
	             optimizer, optimizer_config, loss);

	assert_true(n > 0 && (size_t)n < len);
	return buf;
}

#define GLOROT_UNIFORM                                                                             \
	"{'module':'keras.initializers','class_name':'GlorotUniform','config':{'seed':null},"      \
	"'registered_name':null}"

/* A small CNN for Fashion-MNIST with every layer a Keras user reaches for
 * first: a strided, unbiased 'same' convolution, batch normalisation, a
 * ReLU layer, max pooling, dropout (seed null: drawn from --seed), average
 * pooling, Flatten and a softmax Dense, compiled with the sparse
 * cross-entropy on probabilities (from_logits false) and Adam at 0.005.
 * The convolution's data_format is format ('channels_last', or another to
 * be refused). */
static void write_bn_cnn_as(const char *path, const char *format, int synchronized)
{
	char conv[512], bn[256], compile[2048];
	const struct k3_layer layers[] = {
	    {"InputLayer", "'name':'input_layer','batch_shape':[null,28,28,1],'dtype':'float32',"
	                   "'sparse':false"},
	    {"Conv2D", conv},
	    {"BatchNormalization", bn},
	    {"Activation", "'name':'activation','activation':'relu'"},
	    {"MaxPooling2D", "'name':'max_pooling2d','pool_size':[2,2],'strides':[2,2],"
	                     "'padding':'valid','data_format':'channels_last'"},
	    {"Dropout", "'name':'dropout','rate':0.25,'seed':null,'noise_shape':null"},
	    {"AveragePooling2D", "'name':'average_pooling2d','pool_size':[2,2],'strides':[2,2],"
	                         "'padding':'valid','data_format':'channels_last'"},
	    {"Flatten", "'name':'flatten','data_format':'channels_last'"},
	    {"Dense", "'name':'dense','units':10,'activation':'softmax','use_bias':true,"
	              "'kernel_initializer':" GLOROT_UNIFORM},
	};

	snprintf(conv, sizeof(conv),
	         "'name':'conv2d','filters':16,'kernel_size':[3,3],'strides':[2,2],"
	         "'padding':'same','data_format':'%s','dilation_rate':[1,1],'groups':1,"
	         "'activation':'linear','use_bias':false,'kernel_initializer':" GLOROT_UNIFORM,
	         format);
	snprintf(bn, sizeof(bn),
	         "'name':'batch_normalization','axis':-1,'momentum':0.99,'epsilon':0.001,"
	         "'center':true,'scale':true,'synchronized':%s",
	         synchronized ? "true" : "false");
	write_k3_model(path, "bn_cnn", layers, sizeof(layers) / sizeof(layers[0]),
	               k3_compile(compile, sizeof(compile), "SparseCategoricalCrossentropy", "Adam",
	                          "'name':'adam','learning_rate':0.005,'beta_1':0.9,"
	                          "'beta_2':0.999,'epsilon':1e-07,'amsgrad':false"));
}

static void write_bn_cnn(const char *path, const char *format)
{
	write_bn_cnn_as(path, format, 0);
}

/* A Dense model of inputs features to units outputs with activation act,
 * compiled as compile says (NULL: no compile config). */
static void write_dense(const char *path, int inputs, int units, const char *act,
                        const char *compile)
{
	char in[128], dense[128];
	const struct k3_layer layers[] = {{"InputLayer", in}, {"Dense", dense}};

	snprintf(in, sizeof(in), "'name':'input_layer','batch_shape':[null,%d]", inputs);
	snprintf(dense, sizeof(dense), "'name':'dense','units':%d,'activation':'%s'", units, act);
	write_k3_model(path, "dense_model", layers, 2, compile);
}

/* --- NumPy files, byte by byte --- */

/* A version 1.0 .npy of dtype descr ('<f4', '|u1', '<i8') and shape (the
 * tuple's text, "(N, 8)" or "(N,)") holding len bytes of data: the header
 * padded with spaces and a newline to a multiple of 64 bytes, as numpy
 * pads it. Returns a buffer of *out_len bytes that the caller frees. */
static unsigned char *npy_bytes(const char *descr, const char *shape, const void *data, size_t len,
                                size_t *out_len)
{
	char dict[256];
	int n = snprintf(dict, sizeof(dict),
	                 "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
	size_t hlen = (size_t)n + 1;
	unsigned char *buf;

	assert_true(n > 0 && (size_t)n < sizeof(dict));
	hlen += (64 - (10 + hlen) % 64) % 64;
	*out_len = 10 + hlen + len;
	buf = malloc(*out_len);
	assert_non_null(buf);
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (unsigned char)(hlen & 0xff);
	buf[9] = (unsigned char)(hlen >> 8);
	memset(buf + 10, ' ', hlen);
	memcpy(buf + 10, dict, (size_t)n);
	buf[10 + hlen - 1] = '\n';
	memcpy(buf + 10 + hlen, data, len);
	return buf;
}

/* One array of a set: its name (x_train ...), dtype, shape and data. */
struct array {
	const char *name;
	const char *descr;
	char shape[32];
	const void *data;
	size_t len;
};

/* Writes the arrays as a folder of "<name>.npy" files, as np.save of each
 * does. */
static void write_npy_dir(const char *dir, const struct array *a, int n)
{
	char path[PATH_MAX + 80];

	assert_int_equal(mkdir(dir, 0700), 0);
	for (int i = 0; i < n; i++) {
		size_t len;
		unsigned char *b = npy_bytes(a[i].descr, a[i].shape, a[i].data, a[i].len, &len);
		snprintf(path, sizeof(path), "%s/%s.npy", dir, a[i].name);
		testutil_write_file(path, b, len);
		free(b);
	}
}

/* Writes the arrays as a .npz of stored members "<name>.npy", as np.savez
 * does. */
static void write_npz(const char *path, const struct array *a, int n)
{
	zipFile zf = zipOpen64(path, APPEND_STATUS_CREATE);

	assert_non_null(zf);
	for (int i = 0; i < n; i++) {
		char name[64];
		zip_fileinfo zi = {0};
		size_t len;
		unsigned char *b = npy_bytes(a[i].descr, a[i].shape, a[i].data, a[i].len, &len);
		snprintf(name, sizeof(name), "%s.npy", a[i].name);
		assert_int_equal(
		    zipOpenNewFileInZip64(zf, name, &zi, NULL, 0, NULL, 0, NULL, 0, 0, 0), ZIP_OK);
		assert_int_equal(zipWriteInFileInZip(zf, b, (unsigned)len), ZIP_OK);
		assert_int_equal(zipCloseFileInZip(zf), ZIP_OK);
		free(b);
	}
	assert_int_equal(zipClose(zf, NULL), ZIP_OK);
}

/* A uniform draw in [0, 1) from a 32-bit LCG: the data are the same on
 * every machine. */
static double uniform(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return (double)(*s >> 8) / 16777216.0;
}

/* --- The shipped model file and the built-in --- */

/* The built-in "cnn" is examples/models/cnn.json compiled in: trained from
 * either, the weights are the same bit for bit. */
static void test_the_builtin_cnn_and_its_shipped_file_train_to_the_same_weights(void **state)
{
	struct fixture *fx = *state;
	char builtin[DIGEST_HEX_LEN], file[DIGEST_HEX_LEN];
	const char *path = tree_path("examples/models/cnn.json");

	run(fx, ARGS("train", "--model", "cnn", "--steps-per-epoch", "3", "--threads", "1",
	             "--data-dir", testutil_data_dir(), "--log-level", "info"));
	assert_status(fx, 0);
	logged_digest(fx->err, builtin);
	run(fx, ARGS("train", "--model", path, "--steps-per-epoch", "3", "--threads", "1",
	             "--data-dir", testutil_data_dir(), "--log-level", "info"));
	assert_status(fx, 0);
	logged_digest(fx->err, file);
	assert_string_equal(file, builtin);
}

/* --- A Keras model file with batch normalisation and dropout --- */

/* What every run of the file's model takes: one thread, batch 32, three
 * epochs of 30 steps, JSON progress at every step. */
#define BN_RUN(model, ...)                                                                         \
	ARGS("train", "--model", model, "--data-dir", testutil_data_dir(), "--threads", "1",       \
	     "--batch-size", "32", "--epochs", "3", "--steps-per-epoch", "30", "--log-format",     \
	     "json", "--log-every", "1", "--log-level", "info", __VA_ARGS__)

/* 90 Adam steps (at the file's learning rate, 0.005) of batch 32 see 2880
 * examples. The loss starts near ln(10) = 2.30, a uniform guess over 10
 * balanced classes. With seed 42 the three epochs' mean losses were 1.74,
 * 1.11 and 0.92 when this test was written: below 1.2 in the last epoch
 * means the 1626 parameters learned most of what they can, with room for
 * another BLAS kernel to round differently. */
#define BN_CNN_LAST_EPOCH_LOSS 1.2

static void test_a_keras_file_with_batch_norm_and_dropout_learns_fashion_mnist(void **state)
{
	struct fixture *fx = *state;
	char model[PATH_MAX];
	double loss[3];

	snprintf(model, sizeof(model), "%s", tmp_path(fx, "bn_cnn.json"));
	write_bn_cnn(model, "channels_last");
	run(fx, BN_RUN(model, "--seed", "42"));
	assert_status(fx, 0);
	/* The file's own plan, as the log states it. */
	testutil_assert_contains(fx->err, "conv2d 3x3x1->16 s2x2 same nobias; batchnorm 16");
	testutil_assert_contains(fx->err, "dropout 0.25; avgpool 2x2 s2x2; dense 144->10 softmax");
	testutil_assert_contains(fx->err, "loss=sparse_categorical_crossentropy from_logits=false "
	                                  "metrics=accuracy");
	testutil_assert_contains(fx->err, "optimizer=adam learning_rate=0.005");
	assert_int_equal(event_numbers(fx->out, "epoch", "loss", loss, 3), 3);
	print_message("epoch losses %.4f %.4f %.4f\n", loss[0], loss[1], loss[2]);
	assert_true(loss[0] < log(10.0) + 0.1);
	assert_true(loss[1] < loss[0]);
	assert_true(loss[2] < loss[1]);
	assert_true(loss[2] < BN_CNN_LAST_EPOCH_LOSS);
}

/* Whether dir holds a backup yet. */
static int has_backup(const char *dir)
{
	uint64_t steps[4];
	char err[ERR_LEN];

	return checkpoint_list(dir, steps, 4, err) > 0;
}

/* Starts the run args with stdout into a pipe of one page that nothing
 * reads, so that the worker stops in a write of its progress after a
 * dozen steps, long before its end, and waits until the chief has a
 * backup in backup_dir; then kills it (SIGKILL). The kill so lands in the
 * middle of the run whatever the machine's speed. */
static void start_and_kill_after_a_backup(struct fixture *fx, const char *const *args,
                                          const char *backup_dir)
{
	char fifo[PATH_MAX], err_path[PATH_MAX];
	double deadline = testutil_now() + RUN_SECONDS;

	snprintf(fifo, sizeof(fifo), "%s/stdout.fifo", fx->dir);
	snprintf(err_path, sizeof(err_path), "%s/killed.err", fx->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* The reader first, so that the child's open for writing does not wait. */
	int rfd = open(fifo, O_RDONLY | O_NONBLOCK);
	assert_true(rfd >= 0);
	assert_true(fcntl(rfd, F_SETPIPE_SZ, 4096) >= 4096);
	fx->pids[0] = testutil_spawn(worker_bin, args, NULL, fifo, err_path);
	while (!has_backup(backup_dir)) {
		int st = testutil_wait(fx->pids[0], 0);
		if (st >= 0) {
			char *log = testutil_read_file(err_path, NULL);
			fail_msg("the run exited %d before its first backup\n%s", st, log);
		}
		if (testutil_now() > deadline)
			fail_msg("no backup in '%s' after %d s", backup_dir, RUN_SECONDS);
		nanosleep(&(struct timespec){0, 10L * 1000 * 1000}, NULL);
	}
	/* Still running: blocked on its stdout, it cannot have finished. */
	assert_int_equal(testutil_wait(fx->pids[0], 0), -1);
	testutil_kill(fx->pids[0]);
	fx->pids[0] = 0;
	close(rfd);
}

/* Killed in its first epoch with a backup on disk, the run started again
 * goes on from the backup and ends exactly where the uninterrupted run
 * ends: the same weights and the same model file, whose batch
 * normalisation statistics the weights' digest does not cover. Dropout's
 * masks and the moving statistics come back with the position. */
static void test_a_keras_model_killed_mid_run_resumes_to_the_uninterrupted_weights(void **state)
{
	struct fixture *fx = *state;
	char model[PATH_MAX], backups[PATH_MAX], ref_dir[PATH_MAX], dir[PATH_MAX];
	char want[DIGEST_HEX_LEN], got[DIGEST_HEX_LEN], path[PATH_MAX + 16];
	size_t want_len, got_len;

	snprintf(model, sizeof(model), "%s", tmp_path(fx, "bn_cnn.json"));
	snprintf(backups, sizeof(backups), "%s", tmp_path(fx, "backups"));
	snprintf(ref_dir, sizeof(ref_dir), "%s", tmp_path(fx, "reference"));
	snprintf(dir, sizeof(dir), "%s", tmp_path(fx, "resumed"));
	write_bn_cnn(model, "channels_last");

	run(fx, BN_RUN(model, "--save-freq", "5", "--backup-dir", backups, "--model-dir", ref_dir));
	assert_status(fx, 0);
	logged_digest(fx->err, want);
	assert_false(has_backup(backups)); /* removed after success: the next run starts afresh */

	start_and_kill_after_a_backup(
	    fx, BN_RUN(model, "--save-freq", "5", "--backup-dir", backups, "--model-dir", dir),
	    backups);
	run(fx, BN_RUN(model, "--save-freq", "5", "--backup-dir", backups, "--model-dir", dir));
	assert_status(fx, 0);
	testutil_assert_matches(fx->err, "restored the backup of step [1-9][0-9]* ");
	logged_digest(fx->err, got);
	assert_string_equal(got, want);

	snprintf(path, sizeof(path), "%s/" MODEL_FILE_NAME, ref_dir);
	unsigned char *a = testutil_read_file(path, &want_len);
	snprintf(path, sizeof(path), "%s/" MODEL_FILE_NAME, dir);
	unsigned char *b = testutil_read_file(path, &got_len);
	assert_int_equal(got_len, want_len);
	assert_memory_equal(b, a, want_len);
	free(a);
	free(b);
}

/* Trains model on two workers (TF_CONFIG on 127.0.0.1) at batch (each
 * worker's) for one epoch, worker i saving into dirs[i] under the
 * fixture's directory named tag; both must exit 0, and hex[i] is the digest
 * worker i logged. */
static void train_on_two_workers(struct fixture *fx, const char *model, const char *batch,
                                 const char *tag, char dirs[2][PATH_MAX],
                                 char hex[2][DIGEST_HEX_LEN])
{
	char env[2][512], out[PATH_MAX], err[PATH_MAX];
	int ports[2];
	double deadline = testutil_now() + RUN_SECONDS;

	testutil_free_ports(ports, 2);
	for (int i = 0; i < 2; i++) {
		const char *const extra[] = {env[i], NULL};
		snprintf(dirs[i], PATH_MAX, "%s/%s%d", fx->dir, tag, i);
		snprintf(out, sizeof(out), "%s/%s%d.out", fx->dir, tag, i);
		snprintf(err, sizeof(err), "%s/%s%d.err", fx->dir, tag, i);
		testutil_tf_config(env[i], sizeof(env[i]), ports, 0, 2, "worker", i);
		fx->pids[i] = testutil_spawn(
		    worker_bin,
		    BN_RUN(model, "--model-dir", dirs[i], "--epochs", "1", "--batch-size", batch),
		    extra, out, err);
	}
	for (int i = 0; i < 2; i++) {
		int st = testutil_wait(fx->pids[i], deadline);
		snprintf(err, sizeof(err), "%s/%s%d.err", fx->dir, tag, i);
		char *log = testutil_read_file(err, NULL);
		if (st != 0)
			fail_msg("worker %d: exit %d\n%s", i, st, log);
		fx->pids[i] = 0;
		testutil_assert_contains(log, "training as rank ");
		logged_digest(log, hex[i]);
		free(log);
	}
}

/* The same file on two workers: each trains on its half of every global
 * batch, with its own batch statistics and dropout masks, and both end
 * with the same weights, which the chief saves. */
static void test_a_keras_model_on_two_workers_ends_with_the_same_weights(void **state)
{
	struct fixture *fx = *state;
	char model[PATH_MAX], dirs[2][PATH_MAX];
	char hex[2][DIGEST_HEX_LEN], saved[DIGEST_HEX_LEN], why[ERR_LEN];
	struct model_file f;

	snprintf(model, sizeof(model), "%s", tmp_path(fx, "bn_cnn.json"));
	write_bn_cnn(model, "channels_last");
	train_on_two_workers(fx, model, "32", "model", dirs, hex);
	assert_string_equal(hex[1], hex[0]);
	if (model_file_load(dirs[0], 32, &f, why) < 0)
		fail_msg("%s", why);
	digest_sha256_hex(f.model->params, f.model->nparams * sizeof(float), saved);
	assert_int_equal(f.model->nstate, 32); /* the moving mean and variance of 16 channels */
	model_file_release(&f);
	assert_string_equal(saved, hex[0]);
}

/* The largest difference between the parameters, and between the moving
 * statistics, of the models saved in dirs a and b. */
static void model_differences(const char *a, const char *b, double *params, double *stats)
{
	struct model_file fa, fb;
	char why[ERR_LEN];

	if (model_file_load(a, 32, &fa, why) < 0)
		fail_msg("%s", why);
	if (model_file_load(b, 32, &fb, why) < 0)
		fail_msg("%s", why);
	assert_int_equal(fa.model->nparams, fb.model->nparams);
	assert_int_equal(fa.model->nstate, fb.model->nstate);
	*params = *stats = 0.0;
	for (size_t i = 0; i < fa.model->nparams; i++)
		*params = fmax(*params, fabs((double)fa.model->params[i] - fb.model->params[i]));
	for (size_t i = 0; i < fa.model->nstate; i++)
		*stats = fmax(*stats, fabs((double)fa.model->state[i] - fb.model->state[i]));
	model_file_release(&fa);
	model_file_release(&fb);
}

/* BatchNormalization(synchronized=True) on two workers at batch 32 takes
 * its statistics over the global batch of 64, in the forward pass and in
 * the gradient, as Keras does: the run is one worker's at batch 64 on the
 * same examples, with the same dropout masks, but for the order of float
 * sums. Each worker's own statistics (synchronized false) are another
 * model: its weights end measurably further away. */
static void
test_synchronized_batch_norm_on_two_workers_trains_as_one_worker_on_the_global_batch(void **state)
{
	struct fixture *fx = *state;
	char synced[PATH_MAX], plain[PATH_MAX], one[PATH_MAX];
	char dirs[2][PATH_MAX], plain_dirs[2][PATH_MAX], hex[2][DIGEST_HEX_LEN];
	double dp, ds, plain_dp, plain_ds;

	snprintf(synced, sizeof(synced), "%s", tmp_path(fx, "synced.json"));
	snprintf(plain, sizeof(plain), "%s", tmp_path(fx, "plain.json"));
	snprintf(one, sizeof(one), "%s", tmp_path(fx, "one"));
	write_bn_cnn_as(synced, "channels_last", 1);
	write_bn_cnn_as(plain, "channels_last", 0);

	run(fx, BN_RUN(synced, "--model-dir", one, "--epochs", "1", "--batch-size", "64"));
	assert_status(fx, 0);
	testutil_assert_contains(fx->err, "batchnorm 16 eps=0.001 momentum=0.99 synchronized");
	train_on_two_workers(fx, synced, "32", "synced", dirs, hex);
	assert_string_equal(hex[1], hex[0]);
	train_on_two_workers(fx, plain, "32", "plain", plain_dirs, hex);
	assert_string_equal(hex[1], hex[0]);

	model_differences(one, dirs[0], &dp, &ds);
	model_differences(one, plain_dirs[0], &plain_dp, &plain_ds);
	print_message("against one worker at batch 64: synchronized %.3g (parameters), %.3g "
	              "(moving statistics); each worker's own statistics %.3g, %.3g\n",
	              dp, ds, plain_dp, plain_ds);
	/* 30 Adam steps at 0.005 move the weights by about 0.1. Measured when
	 * this test was written: 6e-8 and 6e-9 apart synchronized (float sums
	 * in another order), 0.015 and 8e-4 with each worker's own statistics. */
	assert_true(dp < 1e-5);
	assert_true(ds < 1e-5);
	assert_true(plain_dp > 100 * dp);
	assert_true(plain_ds > 100 * ds);
}

/* evaluate --model-dir rebuilds the model from the Keras JSON the model
 * file holds, with its trained moving statistics, and gives the numbers
 * of the training's last validation over the whole test split, exactly:
 * the same batches, in the same order, through the same inference pass. */
static void test_evaluate_gives_the_last_validation_of_a_batch_norm_model_exactly(void **state)
{
	struct fixture *fx = *state;
	char model[PATH_MAX], dir[PATH_MAX];

	snprintf(model, sizeof(model), "%s", tmp_path(fx, "bn_cnn.json"));
	snprintf(dir, sizeof(dir), "%s", tmp_path(fx, "model"));
	write_bn_cnn(model, "channels_last");
	run(fx, BN_RUN(model, "--epochs", "1", "--batch-size", "64", "--validation-steps", "all",
	               "--model-dir", dir));
	assert_status(fx, 0);
	double val_loss = event_number(fx->out, "epoch", "val_loss");
	double val_acc = event_number(fx->out, "epoch", "val_accuracy");

	run(fx, ARGS("evaluate", "--model-dir", dir, "--data-dir", testutil_data_dir(), "--threads",
	             "1", "--batch-size", "64", "--log-format", "json"));
	assert_status(fx, 0);
	print_message("validation loss %.6f accuracy %.4f\n", val_loss, val_acc);
	assert_true(event_number(fx->out, "evaluate", "examples") == 10000);
	assert_true(event_number(fx->out, "evaluate", "loss") == val_loss);
	assert_true(event_number(fx->out, "evaluate", "accuracy") == val_acc);
	/* Not the untrained model's chance level. */
	assert_true(val_acc > 0.3);
}

/* --- NumPy data --- */

#define REG_TRAIN    256
#define REG_TEST     64
#define REG_FEATURES 8

/* y = w . x + 0.5 + noise, x uniform in [-1, 1), noise uniform in
 * [-0.01, 0.01): a mean squared error of 3.3e-5 is the floor, and 0 the
 * loss of the line itself. */
static void regression_data(float *x, float *y, int n, uint32_t seed)
{
	static const float w[REG_FEATURES] = {0.5f, -1.0f, 0.25f, 2.0f, -0.75f, 1.0f, 0.0f, -0.5f};
	uint32_t s = seed;

	for (int i = 0; i < n; i++) {
		double t = 0.5;
		for (int j = 0; j < REG_FEATURES; j++) {
			x[i * REG_FEATURES + j] = (float)(2.0 * uniform(&s) - 1.0);
			t += (double)w[j] * x[i * REG_FEATURES + j];
		}
		y[i] = (float)(t + 0.02 * (uniform(&s) - 0.5));
	}
}

/* The regression set's four arrays, float32, y of shape (N,). */
static void regression_arrays(struct array a[4], float *x, float *y, float *xt, float *yt)
{
	regression_data(x, y, REG_TRAIN, 1);
	regression_data(xt, yt, REG_TEST, 2);
	a[0] = (struct array){"x_train", "<f4", "", x, sizeof(float) * REG_TRAIN * REG_FEATURES};
	a[1] = (struct array){"y_train", "<f4", "", y, sizeof(float) * REG_TRAIN};
	a[2] = (struct array){"x_test", "<f4", "", xt, sizeof(float) * REG_TEST * REG_FEATURES};
	a[3] = (struct array){"y_test", "<f4", "", yt, sizeof(float) * REG_TEST};
	snprintf(a[0].shape, sizeof(a[0].shape), "(%d, %d)", REG_TRAIN, REG_FEATURES);
	snprintf(a[1].shape, sizeof(a[1].shape), "(%d,)", REG_TRAIN);
	snprintf(a[2].shape, sizeof(a[2].shape), "(%d, %d)", REG_TEST, REG_FEATURES);
	snprintf(a[3].shape, sizeof(a[3].shape), "(%d,)", REG_TEST);
}

/* A linear Dense model fitted with --loss mse --metrics mae --optimizer
 * adagrad at --learning-rate 0.3, 160 steps of batch 32. The targets'
 * variance is about 2.4 (2.6 around the untrained model's 0), so a model
 * that learned only their mean would stay near 2.4; the noise's floor is
 * 3.3e-5. With seed 42 the last epoch's mean loss was REG_MEASURED when
 * this test was written, the validation loss 4e-5: under REG_THRESHOLD,
 * 30 times above that, the fit has found the line. The same arrays as a
 * .npz and as a folder of .npy train to the same weights, bit for bit. */
#define REG_MEASURED  "3e-5"
#define REG_THRESHOLD 1e-3

static void test_numpy_regression_with_mse_and_adagrad_fits_the_line(void **state)
{
	struct fixture *fx = *state;
	static float x[REG_TRAIN * REG_FEATURES], y[REG_TRAIN];
	static float xt[REG_TEST * REG_FEATURES], yt[REG_TEST];
	struct array a[4];
	char model[PATH_MAX], npz[PATH_MAX], dir[PATH_MAX];
	char from_npz[DIGEST_HEX_LEN], from_dir[DIGEST_HEX_LEN];

	regression_arrays(a, x, y, xt, yt);
	snprintf(model, sizeof(model), "%s", tmp_path(fx, "dense.json"));
	snprintf(npz, sizeof(npz), "%s", tmp_path(fx, "line.npz"));
	snprintf(dir, sizeof(dir), "%s", tmp_path(fx, "line"));
	write_dense(model, REG_FEATURES, 1, "linear", NULL);
	write_npz(npz, a, 4);
	write_npy_dir(dir, a, 4);
#define REG_RUN(data)                                                                              \
	ARGS("train", "--model", model, "--data", data, "--loss", "mse", "--metrics", "mae",       \
	     "--optimizer", "adagrad", "--learning-rate", "0.3", "--batch-size", "32", "--epochs", \
	     "20", "--validation-steps", "all", "--threads", "1", "--log-format", "json",          \
	     "--log-level", "info")
	run(fx, REG_RUN(npz));
	assert_status(fx, 0);
	logged_digest(fx->err, from_npz);
	double loss = event_number(fx->out, "epoch", "loss");
	double val_loss = event_number(fx->out, "epoch", "val_loss");
	double mae = event_number(fx->out, "epoch", "mean_absolute_error");
	print_message("mse %.5f (measured " REG_MEASURED "), val mse %.5f, mae %.4f\n", loss,
	              val_loss, mae);
	assert_true(event_number(fx->out, "epoch", "global_step") == 160);
	assert_true(loss < REG_THRESHOLD);
	assert_true(val_loss < REG_THRESHOLD);
	/* The mean absolute error is of the same fit: at most the root of the mse. */
	assert_true(mae > 0 && mae <= sqrt(loss) + 1e-9);

	run(fx, REG_RUN(dir));
	assert_status(fx, 0);
	logged_digest(fx->err, from_dir);
	assert_string_equal(from_dir, from_npz);
#undef REG_RUN
}

#define CLS_TRAIN   300
#define CLS_TEST    60
#define CLS_SIDE    4
#define CLS_CLASSES 3

/* Images of 4x4 bytes, noise in [0, 64), the row of the class lit up by
 * 150 more; labels int64, as np.array(labels) makes them. */
static void class_data(uint8_t *x, int64_t *y, int n, uint32_t seed)
{
	uint32_t s = seed;

	for (int i = 0; i < n; i++) {
		y[i] = i % CLS_CLASSES;
		for (int p = 0; p < CLS_SIDE * CLS_SIDE; p++)
			x[i * CLS_SIDE * CLS_SIDE + p] =
			    (uint8_t)(64.0 * uniform(&s) + (p / CLS_SIDE == y[i] ? 150 : 0));
	}
}

/* A classifier of bytes scaled by --rescale 1/255 (as Keras' Rescaling
 * layer would), int64 labels, from a .npz: it separates the three classes
 * (accuracy 1.0 with seed 42 when this test was written; 0.9 leaves room),
 * and evaluate --data on the same file scales the test images as training
 * did, from the model file, and reproduces the last validation exactly. */
static void test_numpy_classification_with_int64_labels_and_rescale_trains(void **state)
{
	struct fixture *fx = *state;
	static uint8_t x[CLS_TRAIN * CLS_SIDE * CLS_SIDE], xt[CLS_TEST * CLS_SIDE * CLS_SIDE];
	static int64_t y[CLS_TRAIN], yt[CLS_TEST];
	char model[PATH_MAX], npz[PATH_MAX], dir[PATH_MAX], compile[2048];
	static const struct k3_layer layers[] = {
	    {"InputLayer", "'name':'input_layer','batch_shape':[null,4,4]"},
	    {"Flatten", "'name':'flatten'"},
	    {"Dense", "'name':'dense','units':3,'activation':'softmax'"},
	};
	struct array a[4] = {
	    {"x_train", "|u1", "", x, sizeof(x)},
	    {"y_train", "<i8", "", y, sizeof(y)},
	    {"x_test", "|u1", "", xt, sizeof(xt)},
	    {"y_test", "<i8", "", yt, sizeof(yt)},
	};

	class_data(x, y, CLS_TRAIN, 3);
	class_data(xt, yt, CLS_TEST, 4);
	snprintf(a[0].shape, sizeof(a[0].shape), "(%d, %d, %d)", CLS_TRAIN, CLS_SIDE, CLS_SIDE);
	snprintf(a[1].shape, sizeof(a[1].shape), "(%d,)", CLS_TRAIN);
	snprintf(a[2].shape, sizeof(a[2].shape), "(%d, %d, %d)", CLS_TEST, CLS_SIDE, CLS_SIDE);
	snprintf(a[3].shape, sizeof(a[3].shape), "(%d,)", CLS_TEST);
	snprintf(model, sizeof(model), "%s", tmp_path(fx, "classes.json"));
	snprintf(npz, sizeof(npz), "%s", tmp_path(fx, "classes.npz"));
	snprintf(dir, sizeof(dir), "%s", tmp_path(fx, "model"));
	write_k3_model(model, "classes", layers, 3,
	               k3_compile(compile, sizeof(compile), "SparseCategoricalCrossentropy", "Adam",
	                          "'name':'adam','learning_rate':0.05"));
	write_npz(npz, a, 4);

	run(fx,
	    ARGS("train", "--model", model, "--data", npz, "--rescale", "0.00392156862745098",
	         "--batch-size", "30", "--epochs", "5", "--validation-steps", "all", "--threads",
	         "1", "--model-dir", dir, "--log-format", "json", "--log-level", "info"));
	assert_status(fx, 0);
	testutil_assert_contains(fx->err, "rescale=0.00392157");
	double val_loss = event_number(fx->out, "epoch", "val_loss");
	double val_acc = event_number(fx->out, "epoch", "val_accuracy");
	print_message("validation loss %.4f accuracy %.4f\n", val_loss, val_acc);
	assert_true(event_number(fx->out, "epoch", "accuracy") >= 0.9);
	assert_true(val_acc >= 0.9);

	run(fx, ARGS("evaluate", "--model-dir", dir, "--data", npz, "--batch-size", "30",
	             "--threads", "1", "--log-format", "json"));
	assert_status(fx, 0);
	assert_true(event_number(fx->out, "evaluate", "examples") == CLS_TEST);
	assert_true(event_number(fx->out, "evaluate", "loss") == val_loss);
	assert_true(event_number(fx->out, "evaluate", "accuracy") == val_acc);
}

/* --- What is refused --- */

/* Each case writes its files into the fixture's directory and runs train,
 * which must exit 1 before a step, naming the file (the npz, the .npy or
 * the model) and saying what is wrong with it. */
enum refusal {
	REFUSE_LABEL_OUT_OF_RANGE,
	REFUSE_NAN_INPUT,
	REFUSE_LENGTHS_DIFFER,
	REFUSE_INPUT_SHAPE,
	REFUSE_CHANNELS_FIRST,
	REFUSE_NO_LOSS,
};

static const struct {
	enum refusal what;
	const char *file;  /* what the message must name, in the fixture's directory */
	const char *says;  /* and what it must say */
	const char *says2; /* more, or NULL */
} REFUSALS[] = {
    {REFUSE_LABEL_OUT_OF_RANGE, "labels.npz", "y_train", "example 3: label 12 is not a class 0..9"},
    {REFUSE_NAN_INPUT, "nan", "x_train in '", "example 2 holds nan, not a finite number"},
    {REFUSE_LENGTHS_DIFFER, "short.npz", "y_train holds 9 entries but x_train 10 examples", NULL},
    {REFUSE_INPUT_SHAPE, "five.npz", "holds examples of shape (5,), but the model takes (8,)",
     NULL},
    {REFUSE_CHANNELS_FIRST, "channels_first.json",
     "layer 'conv2d' (Conv2D): \"data_format\": \"channels_first\" is not supported", NULL},
    {REFUSE_NO_LOSS, "no_compile.json", "names no loss (it has no compile config): give --loss",
     NULL},
};

/* Writes the data and model of case what into fx's directory and returns
 * the arguments after "train --threads 1" that run it, in args. */
static void write_refusal(struct fixture *fx, enum refusal what, char paths[2][PATH_MAX],
                          const char **args)
{
	static float x[10 * REG_FEATURES], x5[10 * 5];
	static float yf[10];
	static int64_t labels[10] = {0, 1, 2, 12, 4, 5, 6, 7, 8, 9};
	char compile[2048];
	struct array a[2] = {{"x_train", "<f4", "(10, 8)", x, sizeof(x)},
	                     {"y_train", "<f4", "(10,)", yf, sizeof(yf)}};
	int n = 0;

	for (int i = 0; i < 10 * REG_FEATURES; i++)
		x[i] = (float)i / 80.0f;
	for (int i = 0; i < 10; i++)
		yf[i] = (float)(i % 10);
	snprintf(paths[0], PATH_MAX, "%s", tmp_path(fx, "model.json"));
	write_dense(paths[0], REG_FEATURES, 10, "softmax",
	            k3_compile(compile, sizeof(compile), "SparseCategoricalCrossentropy", "SGD",
	                       "'name':'sgd','learning_rate':0.01"));
	snprintf(paths[1], PATH_MAX, "%s", tmp_path(fx, REFUSALS[what].file));
	switch (what) {
	case REFUSE_LABEL_OUT_OF_RANGE:
		a[1] = (struct array){"y_train", "<i8", "(10,)", labels, sizeof(labels)};
		write_npz(paths[1], a, 2);
		break;
	case REFUSE_NAN_INPUT:
		x[2 * REG_FEATURES + 5] = NAN;
		write_npy_dir(paths[1], a, 2);
		break;
	case REFUSE_LENGTHS_DIFFER:
		snprintf(a[1].shape, sizeof(a[1].shape), "(9,)");
		a[1].len = 9 * sizeof(float);
		write_npz(paths[1], a, 2);
		break;
	case REFUSE_INPUT_SHAPE:
		a[0] = (struct array){"x_train", "<f4", "(10, 5)", x5, sizeof(x5)};
		write_npz(paths[1], a, 2);
		break;
	case REFUSE_CHANNELS_FIRST:
		write_bn_cnn(paths[1], "channels_first");
		snprintf(paths[0], PATH_MAX, "%s", paths[1]);
		break;
	case REFUSE_NO_LOSS:
		write_dense(paths[1], REG_FEATURES, 10, "softmax", NULL);
		snprintf(paths[0], PATH_MAX, "%s", paths[1]);
		break;
	}
	args[n++] = "--model";
	args[n++] = paths[0];
	if (what != REFUSE_CHANNELS_FIRST && what != REFUSE_NO_LOSS) {
		args[n++] = "--data";
		args[n++] = paths[1];
	}
	args[n] = NULL;
}

/* The last line of text (without its newline), in a static buffer. */
static const char *last_line(const char *text)
{
	static char line[ERR_LEN + 256];
	size_t n = strlen(text);

	while (n > 0 && text[n - 1] == '\n')
		n--;
	size_t start = n;
	while (start > 0 && text[start - 1] != '\n')
		start--;
	snprintf(line, sizeof(line), "%.*s", (int)(n - start), text + start);
	return line;
}

static void test_bad_data_and_model_files_exit_1_naming_the_file_and_the_problem(void **state)
{
	struct fixture *fx = *state;
	int bad = 0;

	for (size_t i = 0; i < sizeof(REFUSALS) / sizeof(REFUSALS[0]); i++) {
		char paths[2][PATH_MAX], named[PATH_MAX];
		const char *extra[8],
		    *args[MAX_ARGS] = {"train", "--threads", "1", "--steps-per-epoch", "2"};
		size_t n = 5;

		write_refusal(fx, REFUSALS[i].what, paths, extra);
		for (size_t k = 0; extra[k]; k++)
			args[n++] = extra[k];
		args[n] = NULL;
		run(fx, args);
		snprintf(named, sizeof(named), "%s", tmp_path(fx, REFUSALS[i].file));
		if (fx->status != 1 || fx->out[0] != '\0' || !strstr(fx->err, named) ||
		    !strstr(fx->err, REFUSALS[i].says) ||
		    (REFUSALS[i].says2 && !strstr(fx->err, REFUSALS[i].says2))) {
			print_error(
			    "case %zu (%s): exit %d, stdout '%s', last line of stderr: %s\n", i,
			    REFUSALS[i].file, fx->status, fx->out, last_line(fx->err));
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_the_builtin_cnn_and_its_shipped_file_train_to_the_same_weights),
	    TEST(test_a_keras_file_with_batch_norm_and_dropout_learns_fashion_mnist),
	    TEST(test_a_keras_model_killed_mid_run_resumes_to_the_uninterrupted_weights),
	    TEST(test_a_keras_model_on_two_workers_ends_with_the_same_weights),
	    TEST(
	        test_synchronized_batch_norm_on_two_workers_trains_as_one_worker_on_the_global_batch),
	    TEST(test_evaluate_gives_the_last_validation_of_a_batch_norm_model_exactly),
	    TEST(test_numpy_regression_with_mse_and_adagrad_fits_the_line),
	    TEST(test_numpy_classification_with_int64_labels_and_rescale_trains),
	    TEST(test_bad_data_and_model_files_exit_1_naming_the_file_and_the_problem),
	};

	worker_bin = testutil_worker_bin("test_keras_train");
	if (worker_bin == NULL)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
