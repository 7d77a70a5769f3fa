/* cli.c - option tables, parsing and validation for mwj-worker. */
#include "cli.h"

#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "err.h"
#include "flags.h"
#include "http_listen.h"
#include "model.h"
#include "parse.h"
#include "version.h"

enum flag_id {
	F_MODEL = 256,
	F_EPOCHS,
	F_STEPS,
	F_BATCH,
	F_LR,
	F_OPTIMIZER,
	F_MOMENTUM,
	F_SEED,
	F_DATA_DIR,
	F_VAL_STEPS,
	F_MODEL_DIR,
	F_THREADS,
	F_LOG_FORMAT,
	F_LOG_LEVEL,
	F_LOG_EVERY,
	F_RENDEZVOUS_TIMEOUT,
	F_COLLECTIVE_TIMEOUT,
	F_BACKUP_DIR,
	F_SAVE_FREQ,
	F_KEEP_BACKUPS,
	F_JOB_SECRET_FILE,
	F_DEVICE,
	F_COLLECTIVE,
	F_GPUS,
	F_DATA,
	F_RESCALE,
	F_LOSS,
	F_FROM_LOGITS,
	F_METRICS,
	F_NESTEROV,
	F_BETA_1,
	F_BETA_2,
	F_EPSILON,
	F_WEIGHT_DECAY,
	F_RHO,
	F_CENTERED,
	F_ACCUMULATOR,
	F_METRICS_ADDR,
	F_HELP,
};

static const struct flag TRAIN_FLAGS[] = {
    {"model", F_MODEL, "NAME|PATH",
     "the model: a Keras model file (model.to_json(), a .keras file or its config.json), or "
     "the name of one shipped in examples/models: cnn or cnn-pool (default: cnn)"},
    {"loss", F_LOSS, "NAME",
     "sparse_categorical_crossentropy, categorical_crossentropy, binary_crossentropy, mse or "
     "mae (default: the model file's compile config)"},
    {"from-logits", F_FROM_LOGITS, NULL,
     "the model outputs logits, for the cross-entropies (default: the file's, or false with "
     "--loss)"},
    {"metrics", F_METRICS, "LIST",
     "comma-separated: accuracy, sparse_categorical_accuracy, categorical_accuracy, "
     "binary_accuracy, mse, mae, or none (default: the model file's)"},
    {"epochs", F_EPOCHS, "N", "epochs to train (default: 1)"},
    {"steps-per-epoch", F_STEPS, "N", "steps per epoch (default: one pass over the data)"},
    {"batch-size", F_BATCH, "N", "examples per step on this worker (default: 64)"},
    {"learning-rate", F_LR, "X", "learning rate (default: the file's, or 0.001)"},
    {"optimizer", F_OPTIMIZER, "NAME",
     "sgd, adam, adamw, adagrad or rmsprop, with Keras 3's rules and defaults (default: the "
     "file's, or sgd)"},
    {"momentum", F_MOMENTUM, "X", "momentum of sgd or rmsprop, in [0, 1) (default: 0)"},
    {"nesterov", F_NESTEROV, NULL, "sgd: Nesterov momentum (default: the file's, or off)"},
    {"beta-1", F_BETA_1, "X", "adam, adamw: beta_1 (default: 0.9)"},
    {"beta-2", F_BETA_2, "X", "adam, adamw: beta_2 (default: 0.999)"},
    {"epsilon", F_EPSILON, "X", "adam, adamw, adagrad, rmsprop: epsilon (default: 1e-7)"},
    {"weight-decay", F_WEIGHT_DECAY, "X",
     "decoupled weight decay, w -= lr * X * w before each step (default: 0.004 for adamw, "
     "else 0)"},
    {"rho", F_RHO, "X", "rmsprop: rho (default: 0.9)"},
    {"centered", F_CENTERED, NULL, "rmsprop: centered (default: the file's, or off)"},
    {"initial-accumulator-value", F_ACCUMULATOR, "X",
     "adagrad: the accumulator's start (default: 0.1)"},
    {"seed", F_SEED, "N", "seed of the initial weights and the data order (default: 42)"},
    {"data-dir", F_DATA_DIR, "DIR",
     "folder of IDX files (default: $MWJ_DATA_DIR or " CLI_DEFAULT_DATA_DIR ")"},
    {"data", F_DATA, "PATH",
     "NumPy data instead: a .npz with x_train, y_train and optionally x_test, y_test, or a "
     "folder of those .npy files (default: $MWJ_DATA)"},
    {"rescale", F_RESCALE, "X",
     "multiply every input by X, as Keras' Rescaling (default: 1/255 by division for IDX "
     "pixels, 1 for NumPy data)"},
    {"validation-steps", F_VAL_STEPS, "N|all",
     "test batches to evaluate after each epoch (default: 0, none)"},
    {"model-dir", F_MODEL_DIR, "DIR",
     "where to write model.mwj at the end (default: $MWJ_MODEL_DIR, or not saved)"},
    {"threads", F_THREADS, "N", "compute threads (default: the CPUs available)"},
    {"log-format", F_LOG_FORMAT, "FMT",
     "text or json, for logs and progress (default: $MWJ_LOG_FORMAT or text)"},
    {"log-level", F_LOG_LEVEL, "LEVEL",
     "debug, info, warn or error (default: $MWJ_LOG_LEVEL or info)"},
    {"log-every", F_LOG_EVERY, "N",
     "also print progress every N steps when not on a terminal (default: 0, per epoch only)"},
    {"rendezvous-timeout", F_RENDEZVOUS_TIMEOUT, "SECONDS",
     "how long to wait for the other workers, at start or after a lost one until a step is "
     "done again, before exiting 75 (default: 300)"},
    {"collective-timeout", F_COLLECTIVE_TIMEOUT, "SECONDS",
     "a collective making no progress this long means a lost peer (default: 60)"},
    {"backup-dir", F_BACKUP_DIR, "DIR",
     "where the chief keeps backups to resume from (default: $MWJ_BACKUP_DIR, or none)"},
    {"save-freq", F_SAVE_FREQ, "epoch|N",
     "write a backup every epoch or every N steps (default: epoch)"},
    {"keep-backups", F_KEEP_BACKUPS, NULL,
     "leave the backups after a successful run (default: they are removed)"},
    {"job-secret-file", F_JOB_SECRET_FILE, "PATH",
     "the job's ring key, at least 32 bytes, that every peer must prove it holds "
     "(default: $MWJ_JOB_SECRET_FILE, or an unauthenticated ring)"},
    {"device", F_DEVICE, "cpu|cuda|auto",
     "where to train; auto: CUDA when this build has it and a GPU is visible (default: auto)"},
    {"collective", F_COLLECTIVE, "auto|ring|nccl",
     "how gradients are summed across workers; auto: nccl on CUDA, the TCP ring on the CPU "
     "(default: auto)"},
    {"gpus", F_GPUS, "N",
     "GPUs this worker trains on, one replica each, sharing its batch (default: every "
     "visible GPU)"},
    {"metrics-addr", F_METRICS_ADDR, "ADDR",
     "serve Prometheus metrics at GET /metrics there: host:port, :port or [v6]:port (port 0: "
     "a free one, logged); 0 or empty for off (default: $MWJ_METRICS_ADDR, or off)"},
    {"help", F_HELP, NULL, "print this help and exit"},
};

static const struct flag EVAL_FLAGS[] = {
    {"model-dir", F_MODEL_DIR, "DIR", "folder holding model.mwj (default: $MWJ_MODEL_DIR)"},
    {"data-dir", F_DATA_DIR, "DIR",
     "folder of IDX files; the t10k split is used (default: $MWJ_DATA_DIR or " CLI_DEFAULT_DATA_DIR
     ")"},
    {"data", F_DATA, "PATH",
     "NumPy data instead: x_test and y_test of a .npz or a folder of .npy files (default: "
     "$MWJ_DATA)"},
    {"rescale", F_RESCALE, "X", "multiply every input by X (default: what training used)"},
    {"batch-size", F_BATCH, "N", "examples per batch (default: 64)"},
    {"threads", F_THREADS, "N", "compute threads (default: the CPUs available)"},
    {"log-format", F_LOG_FORMAT, "FMT", "text or json (default: $MWJ_LOG_FORMAT or text)"},
    {"log-level", F_LOG_LEVEL, "LEVEL", "debug, info, warn or error (default: info)"},
    {"help", F_HELP, NULL, "print this help and exit"},
};

static void print_usage(FILE *out)
{
	fprintf(out, "usage: mwj-worker <command> [flags]\n\n"
	             "Commands:\n"
	             "  train      train a model, like Keras Model.fit\n"
	             "  evaluate   load a trained model and report test loss and accuracy\n\n"
	             "Run 'mwj-worker <command> --help' for the flags of a command.\n");
}

/* The CPUs a cgroup v2 quota ("<quota> <period>" in cpu.max) allows,
 * rounded up, or 0 when there is no quota or it cannot be read. */
static int cgroup_cpu_limit(void)
{
	char line[128], *sp;
	int64_t quota, period;
	char err[ERR_LEN];
	FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");

	if (!f)
		return 0;
	sp = fgets(line, sizeof(line), f);
	fclose(f);
	if (!sp)
		return 0;
	line[strcspn(line, "\n")] = '\0';
	sp = strchr(line, ' ');
	if (!sp)
		return 0;
	*sp++ = '\0';
	if (parse_i64(line, 1, INT64_MAX / 2, &quota, err) < 0 ||
	    parse_i64(sp, 1, INT64_MAX / 2, &period, err) < 0)
		return 0; /* "max": no limit */
	return (int)((quota + period - 1) / period);
}

int cli_default_threads(void)
{
	cpu_set_t set;
	int n = 1, limit = cgroup_cpu_limit();

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	if (limit > 0 && limit < n)
		n = limit;
	return n < 1 ? 1 : n;
}

/* Copies a path given by a flag or variable; the caller names which. */
static int set_path(char *dst, const char *src, char *err)
{
	if (strlen(src) >= TRAIN_PATH_LEN)
		return err_set(err, "path too long (%zu bytes, at most %d)", strlen(src),
		               TRAIN_PATH_LEN - 1);
	if (!src[0])
		return err_set(err, "'' is an empty path");
	strcpy(dst, src);
	return 0;
}

static void defaults(struct cli *c)
{
	struct train_config *t = &c->train;
	const char *env;

	memset(t, 0, sizeof(*t));
	snprintf(t->model, sizeof(t->model), "cnn");
	t->epochs = 1;
	t->batch_size = 64;
	t->learning_rate = 0.001;
	t->optimizer = OPT_SGD;
	t->seed = 42;
	t->threads = cli_default_threads();
	t->rendezvous_timeout = 300;
	t->collective_timeout = 60;
	snprintf(t->data_dir, sizeof(t->data_dir), "%s", CLI_DEFAULT_DATA_DIR);
	env = getenv("MWJ_DATA_DIR");
	if (env && env[0] && strlen(env) < TRAIN_PATH_LEN)
		strcpy(t->data_dir, env);
	env = getenv("MWJ_MODEL_DIR");
	if (env && env[0] && strlen(env) < TRAIN_PATH_LEN)
		strcpy(t->model_dir, env);
	env = getenv("MWJ_DATA");
	if (env && env[0] && strlen(env) < TRAIN_PATH_LEN)
		strcpy(t->data, env);
	t->save_freq = SAVE_FREQ_EPOCH;
	memset(&c->eval, 0, sizeof(c->eval));
	strcpy(c->eval.model_dir, t->model_dir);
	strcpy(c->eval.data_dir, t->data_dir);
	strcpy(c->eval.data, t->data);
	memset(&c->compile, 0, sizeof(c->compile));
	c->km = NULL;
	c->eval.batch_size = 64;
	c->eval.threads = t->threads;
	c->log_level = LOG_INFO;
	c->log_format = LOG_TEXT;
	memset(&c->cluster, 0, sizeof(c->cluster));
	c->metrics_addr[0] = '\0';
}

/* --metrics-addr and MWJ_METRICS_ADDR: "0" and "" are off, stored as "". */
static int set_metrics_addr(struct cli *c, const char *addr, char *err)
{
	if (strlen(addr) >= sizeof(c->metrics_addr))
		return err_set(err, "longer than %zu characters", sizeof(c->metrics_addr) - 1);
	if (addr[0] && http_listen_check_addr(addr, err) < 0)
		return -1;
	snprintf(c->metrics_addr, sizeof(c->metrics_addr), "%s",
	         strcmp(addr, "0") == 0 ? "" : addr);
	return 0;
}

static int apply_env(struct cli *c, char *err)
{
	const char *env = getenv("MWJ_LOG_FORMAT");

	if (env && env[0] && log_parse_format(env, &c->log_format) < 0)
		return err_set(err, "MWJ_LOG_FORMAT: '%s' is not text or json", env);
	env = getenv("MWJ_LOG_LEVEL");
	if (env && env[0] && log_parse_level(env, &c->log_level) < 0)
		return err_set(err, "MWJ_LOG_LEVEL: '%s' is not debug, info, warn or error", env);
	env = getenv("MWJ_JOB_NAME");
	if (env && strlen(env) >= sizeof(c->train.job_name))
		return err_set(err, "MWJ_JOB_NAME: longer than %zu characters",
		               sizeof(c->train.job_name) - 1);
	snprintf(c->train.job_name, sizeof(c->train.job_name), "%s", env ? env : "");
	env = getenv("MWJ_BACKUP_DIR");
	if (env && env[0] && set_path(c->train.backup_dir, env, err) < 0)
		return err_prefix(err, "MWJ_BACKUP_DIR");
	env = getenv("MWJ_JOB_SECRET_FILE");
	if (env && env[0] && set_path(c->train.job_secret_file, env, err) < 0)
		return err_prefix(err, "MWJ_JOB_SECRET_FILE");
	env = getenv("MWJ_METRICS_ADDR");
	if (c->cmd == CLI_TRAIN && env && set_metrics_addr(c, env, err) < 0)
		return err_prefix(err, "MWJ_METRICS_ADDR");
	return 0;
}

/* Sets one flag's value in the config of the current command. */
static int apply_flag(void *ctx, int flag, const char *arg, char *err)
{
	struct cli *c = ctx;
	enum flag_id id = (enum flag_id)flag;
	struct train_config *t = &c->train;
	struct eval_config *e = &c->eval;
	struct compile_flags *k = &c->compile;
	int train = c->cmd == CLI_TRAIN;
	int64_t v;
	double v_double;

	switch (id) {
	case F_MODEL:
		return set_path(t->model, arg, err);
	case F_DATA:
		return set_path(train ? t->data : e->data, arg, err);
	case F_RESCALE:
		if (parse_double(arg, -1e9, 1e9, &v_double, err) < 0)
			return -1;
		if (v_double == 0.0)
			return err_set(err, "'%s': a scale of 0 makes every input 0", arg);
		*(train ? &t->rescale : &e->rescale) = (float)v_double;
		return 0;
	case F_LOSS:
		if (loss_parse(arg, &k->loss) < 0)
			return err_set(err,
			               "'%s' is not sparse_categorical_crossentropy, "
			               "categorical_crossentropy, binary_crossentropy, mse or mae",
			               arg);
		k->loss_set = 1;
		return 0;
	case F_FROM_LOGITS:
		k->from_logits = k->from_logits_set = 1;
		return 0;
	case F_METRICS:
		return compile_parse_metrics(k, arg, err);
	case F_NESTEROV:
		k->opt.nesterov = k->nesterov_set = 1;
		return 0;
	case F_CENTERED:
		k->opt.centered = k->centered_set = 1;
		return 0;
	case F_BETA_1:
		k->beta_1_set = 1;
		return parse_double(arg, 0.0, 1.0, &k->opt.beta_1, err);
	case F_BETA_2:
		k->beta_2_set = 1;
		return parse_double(arg, 0.0, 1.0, &k->opt.beta_2, err);
	case F_EPSILON:
		k->epsilon_set = 1;
		return parse_double(arg, 0.0, 1.0, &k->opt.epsilon, err);
	case F_WEIGHT_DECAY:
		k->weight_decay_set = 1;
		return parse_double(arg, 0.0, 1e3, &k->opt.weight_decay, err);
	case F_RHO:
		k->rho_set = 1;
		return parse_double(arg, 0.0, 1.0, &k->opt.rho, err);
	case F_ACCUMULATOR:
		k->accumulator_set = 1;
		return parse_double(arg, 0.0, 1e9, &k->opt.initial_accumulator_value, err);
	case F_EPOCHS:
		return parse_int(arg, 1, 1000000, &t->epochs, err);
	case F_STEPS:
		if (parse_i64(arg, 1, 1000000000, &v, err) < 0)
			return -1;
		t->steps_per_epoch = (long)v;
		return 0;
	case F_BATCH:
		return parse_int(arg, 1, 65536, train ? &t->batch_size : &e->batch_size, err);
	case F_LR:
		k->lr_set = 1;
		return parse_double(arg, 1e-12, 100.0, &k->opt.learning_rate, err);
	case F_OPTIMIZER:
		if (optimizer_parse(arg, &k->opt.kind) < 0)
			return err_set(err, "'%s' is not sgd, adam, adamw, adagrad or rmsprop",
			               arg);
		k->optimizer_set = 1;
		return 0;
	case F_MOMENTUM:
		if (parse_double(arg, 0.0, 1.0, &k->opt.momentum, err) < 0)
			return -1;
		if (k->opt.momentum >= 1.0)
			return err_set(err, "'%s' is out of range [0, 1)", arg);
		k->momentum_set = 1;
		return 0;
	case F_SEED:
		return parse_u64(arg, 0, UINT64_MAX, &t->seed, err);
	case F_DATA_DIR:
		return set_path(train ? t->data_dir : e->data_dir, arg, err);
	case F_VAL_STEPS:
		if (strcmp(arg, "all") == 0) {
			t->validation_steps = VALIDATION_ALL;
			return 0;
		}
		if (parse_i64(arg, 0, 1000000000, &v, err) < 0)
			return -1;
		t->validation_steps = (long)v;
		return 0;
	case F_MODEL_DIR:
		return set_path(train ? t->model_dir : e->model_dir, arg, err);
	case F_THREADS:
		return parse_int(arg, 1, 256, train ? &t->threads : &e->threads, err);
	case F_LOG_FORMAT:
		if (log_parse_format(arg, &c->log_format) < 0)
			return err_set(err, "'%s' is not text or json", arg);
		return 0;
	case F_LOG_LEVEL:
		if (log_parse_level(arg, &c->log_level) < 0)
			return err_set(err, "'%s' is not debug, info, warn or error", arg);
		return 0;
	case F_LOG_EVERY:
		if (parse_i64(arg, 0, 1000000000, &v, err) < 0)
			return -1;
		t->log_every = (long)v;
		return 0;
	case F_RENDEZVOUS_TIMEOUT:
		return parse_int(arg, 1, 86400, &t->rendezvous_timeout, err);
	case F_COLLECTIVE_TIMEOUT:
		return parse_int(arg, 1, 86400, &t->collective_timeout, err);
	case F_BACKUP_DIR:
		return set_path(t->backup_dir, arg, err);
	case F_SAVE_FREQ:
		if (strcmp(arg, "epoch") == 0) {
			t->save_freq = SAVE_FREQ_EPOCH;
			return 0;
		}
		if (parse_i64(arg, 1, 1000000000, &v, err) < 0)
			return err_set(err, "'%s' is not 'epoch' or a number of steps in [1, 1e9]",
			               arg);
		t->save_freq = (long)v;
		return 0;
	case F_KEEP_BACKUPS:
		t->keep_backups = 1;
		return 0;
	case F_JOB_SECRET_FILE:
		return set_path(t->job_secret_file, arg, err);
	case F_DEVICE:
		if (device_parse(arg, &t->device) < 0)
			return err_set(err, "'%s' is not cpu, cuda or auto", arg);
		return 0;
	case F_COLLECTIVE:
		if (collective_parse(arg, &t->collective) < 0)
			return err_set(err, "'%s' is not auto, ring or nccl", arg);
		return 0;
	case F_GPUS:
		return parse_int(arg, 1, 64, &t->gpus, err);
	case F_METRICS_ADDR:
		return set_metrics_addr(c, arg, err);
	case F_HELP:
		break;
	}
	return 0;
}

/* --model names a built-in model or a file (keras_model_open). */
static int read_model(struct cli *c, char *err)
{
	c->km = xcalloc(1, sizeof(*c->km));
	return keras_model_open(c->km, c->train.model, err);
}

static int validate(struct cli *c, char *err)
{
	if (c->cmd == CLI_EVALUATE) {
		if (!c->eval.model_dir[0])
			return err_set(err, "--model-dir is required (or set MWJ_MODEL_DIR)");
		return 0;
	}
	if (read_model(c, err) < 0)
		return err_prefix(err, "--model");
	if (compile_apply(&c->train, c->km, &c->compile, err) < 0)
		return err_prefix(err, "--model '%s'", c->train.model);
	return 0;
}

int cli_parse(struct cli *c, int argc, char **argv, FILE *out, char *err)
{
	const struct flag *flags;
	size_t n;
	int rc;

	defaults(c);
	if (argc < 2)
		return err_set(err,
		               "no command given (train or evaluate); see 'mwj-worker --help'");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		print_usage(out);
		return 1;
	}
	if (strcmp(argv[1], "--version") == 0) {
		fprintf(out, "mwj-worker %s\n", MWJ_RELEASE);
		return 1;
	}
	if (strcmp(argv[1], "train") == 0) {
		c->cmd = CLI_TRAIN;
		flags = TRAIN_FLAGS, n = FLAGS_COUNT(TRAIN_FLAGS);
	} else if (strcmp(argv[1], "evaluate") == 0) {
		c->cmd = CLI_EVALUATE;
		flags = EVAL_FLAGS, n = FLAGS_COUNT(EVAL_FLAGS);
	} else {
		return err_set(err, "unknown command '%s' (expected train or evaluate)", argv[1]);
	}
	if (apply_env(c, err) < 0)
		return -1;
	rc = flags_parse(flags, n, F_HELP, argc - 1, argv + 1, apply_flag, c, err);
	if (rc == 1) {
		char usage[64];
		snprintf(usage, sizeof(usage), "mwj-worker %s [flags]", argv[1]);
		flags_print_help(out, usage, flags, n);
	}
	if (rc != 0)
		return rc;
	c->train.json = c->eval.json = c->log_format == LOG_JSON;
	if (validate(c, err) < 0)
		return -1;
	if (c->cmd == CLI_TRAIN) {
		if (tf_config_from_env(&c->cluster, err) < 0)
			return -1;
		c->train.cluster = &c->cluster;
		if (c->train.job_secret_file[0] &&
		    job_key_load(&c->key, c->train.job_secret_file, err) < 0)
			return err_prefix(err, "--job-secret-file");
		c->train.job_key = &c->key;
	}
	return 0;
}

void cli_release(struct cli *c)
{
	if (c == NULL)
		return;
	tf_config_release(&c->cluster);
	job_key_release(&c->key);
	if (c->km) {
		keras_model_release(c->km);
		free(c->km);
		c->km = NULL;
	}
}

/* The loss, metrics and optimizer, as resolved from the file and flags. */
static void log_config_compile(const struct train_config *t)
{
	char metrics[256] = "";
	const struct optimizer_config *o = &t->opt;
	size_t n = 0;

	for (int i = 0; i < t->nmetrics && n < sizeof(metrics); i++)
		n += (size_t)snprintf(metrics + n, sizeof(metrics) - n, "%s%s", i ? "," : "",
		                      metric_name(t->metrics[i]));
	log_info("config: loss=%s from_logits=%s metrics=%s rescale=%g optimizer=%s "
	         "learning_rate=%g momentum=%g nesterov=%d beta_1=%g beta_2=%g epsilon=%g "
	         "weight_decay=%g rho=%g centered=%d initial_accumulator_value=%g",
	         loss_name(t->loss.kind), t->loss.from_logits ? "true" : "false",
	         t->nmetrics ? metrics : "none", (double)t->rescale, optimizer_name(o->kind),
	         o->learning_rate, o->momentum, o->nesterov, o->beta_1, o->beta_2, o->epsilon,
	         o->weight_decay, o->rho, o->centered, o->initial_accumulator_value);
}

void cli_log_config(const struct cli *c)
{
	const struct train_config *t = &c->train;
	const struct eval_config *e = &c->eval;
	char steps[32] = "one-pass", val[32] = "all";

	if (c->cmd == CLI_EVALUATE) {
		log_info("config: model_dir='%s' data%s='%s' rescale=%g batch_size=%d threads=%d",
		         e->model_dir, e->data[0] ? "" : "_dir", e->data[0] ? e->data : e->data_dir,
		         (double)e->rescale, e->batch_size, e->threads);
		return;
	}
	if (t->steps_per_epoch)
		snprintf(steps, sizeof(steps), "%ld", t->steps_per_epoch);
	if (t->validation_steps != VALIDATION_ALL)
		snprintf(val, sizeof(val), "%ld", t->validation_steps);
	log_info("config: model='%s' epochs=%d steps_per_epoch=%s batch_size=%d "
	         "learning_rate=%g optimizer=%s momentum=%g seed=%" PRIu64 " data%s='%s' "
	         "validation_steps=%s model_dir='%s' threads=%d log_every=%ld",
	         t->model, t->epochs, steps, t->batch_size, t->learning_rate,
	         optimizer_name(t->optimizer), t->momentum, t->seed, t->data[0] ? "" : "_dir",
	         t->data[0] ? t->data : t->data_dir, val, t->model_dir, t->threads, t->log_every);
	log_config_compile(t);
	if (t->backup_dir[0]) {
		char freq[32] = "epoch";
		if (t->save_freq != SAVE_FREQ_EPOCH)
			snprintf(freq, sizeof(freq), "%ld", t->save_freq);
		log_info("config: backup_dir='%s' save_freq=%s keep_backups=%s", t->backup_dir,
		         freq, t->keep_backups ? "yes" : "no");
	}
	if (t->gpus)
		log_info("config: device=%s collective=%s gpus=%d", device_name(t->device),
		         collective_name(t->collective), t->gpus);
	else
		log_info("config: device=%s collective=%s gpus=all", device_name(t->device),
		         collective_name(t->collective));
	if (c->metrics_addr[0])
		log_info("config: metrics_addr='%s'", c->metrics_addr);
	if (c->cluster.world > 1)
		log_info("config: world=%d rank=%d task=%s:%d job='%s' rendezvous_timeout=%ds "
		         "collective_timeout=%ds job_secret_file='%s'",
		         c->cluster.world, c->cluster.rank, c->cluster.task_type,
		         c->cluster.task_index, t->job_name, t->rendezvous_timeout,
		         t->collective_timeout, t->job_secret_file);
}
