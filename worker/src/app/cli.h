/* cli.h - the mwj-worker command line: subcommand, flags, environment.
 *
 * Precedence: defaults, then the environment (MWJ_DATA_DIR, MWJ_MODEL_DIR,
 * MWJ_LOG_FORMAT, MWJ_LOG_LEVEL, MWJ_JOB_NAME, MWJ_BACKUP_DIR,
 * MWJ_JOB_SECRET_FILE, MWJ_METRICS_ADDR), then flags; one validation pass at the end. train
 * also reads the cluster from TF_CONFIG or MWJ_TF_CONFIG_FILE (with
 * MWJ_WORKER_INDEX; tf_config_from_env) and the job's ring key from its
 * file.
 * Every flag lives in one table per command that also prints --help.
 */
#ifndef MWJ_CLI_H
#define MWJ_CLI_H

#include <stdio.h>

#include "compile_config.h"
#include "keras_model.h"
#include "log.h"
#include "trainer.h"

#define CLI_DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"
#define CLI_ADDR_LEN         300 /* --metrics-addr, NUL included */

enum cli_command { CLI_TRAIN, CLI_EVALUATE };

struct eval_config {
	char model_dir[TRAIN_PATH_LEN];
	char data_dir[TRAIN_PATH_LEN];
	char data[TRAIN_PATH_LEN]; /* NumPy, instead of data_dir */
	float rescale;             /* 0: what the model file says */
	int batch_size;
	int threads;
	int json;
};

struct cli {
	enum cli_command cmd;
	struct train_config train;
	struct eval_config eval;
	enum log_level log_level;
	enum log_format log_format;
	struct tf_config cluster;        /* train: from TF_CONFIG; world 1 without it */
	struct job_key key;              /* train: from --job-secret-file; empty without it */
	struct compile_flags compile;    /* train: the flags that override the file's */
	struct keras_model *km;          /* train: --model's plan, owned */
	char metrics_addr[CLI_ADDR_LEN]; /* train: where /metrics is served; "" when off */
};

/* Parses argv into c. Returns 0 when there is a command to run; 1 when help
 * or the version was printed on out and the process should exit 0; -1 with a
 * message in err on bad usage, a bad TF_CONFIG (or MWJ_TF_CONFIG_FILE, or
 * the two disagreeing) or a job key file that is
 * missing, unreadable or too short (exit 1). c->train.cluster and
 * c->train.job_key point into c. cli_release frees what c holds and wipes
 * the key. */
int cli_parse(struct cli *c, int argc, char **argv, FILE *out, char *err);
void cli_release(struct cli *c);

/* Logs the effective configuration, once, at start. */
void cli_log_config(const struct cli *c);

/* The default thread count: the CPUs this process may run on, capped by a
 * cgroup v2 CPU quota when there is one. */
int cli_default_threads(void);

#endif
