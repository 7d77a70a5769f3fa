/* fuzz_worker_cli.c - a libFuzzer target for cli_parse (worker/src/cli.h):
 * the mwj-worker command line, which comes from a pod spec that any user
 * who can create a MultiWorkerJob writes.
 *
 * Input: the arguments after "mwj-worker", separated by NUL bytes (at most
 * FUZZ_ARGS_MAX of them). Help goes to /dev/null. The environment the
 * parser reads (TF_CONFIG and MWJ_*) is cleared once, so that only the
 * input decides.
 * Checked beyond "no crash": a refusal says why; help and version exit 0;
 * an accepted command line holds values inside the ranges the flags allow,
 * and paths that fit their buffers. Each input is parsed twice, and must
 * give the same answer both times (fuzz_cli_parse_twice): nothing of the
 * command line before may leak into the next one.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "err.h"
#include "fuzz/harness.h"

/* Besides MWJ_*, which the harness clears. */
static const char *const ENV[] = {"TF_CONFIG"};

static int terminated(const char *s, size_t n)
{
	return memchr(s, '\0', n) != NULL;
}

static void check_accepted(const struct cli *c)
{
	const struct train_config *t = &c->train;
	const struct eval_config *e = &c->eval;

	if (c->cmd == CLI_EVALUATE) {
		FUZZ_CHECK(e->model_dir[0] != '\0' &&
		           terminated(e->model_dir, sizeof(e->model_dir)));
		FUZZ_CHECK(terminated(e->data_dir, sizeof(e->data_dir)));
		FUZZ_CHECK(e->batch_size >= 1 && e->batch_size <= 65536);
		FUZZ_CHECK(e->threads >= 1 && e->threads <= 256);
		return;
	}
	FUZZ_CHECK(c->cmd == CLI_TRAIN);
	FUZZ_CHECK(terminated(t->model, sizeof(t->model)));
	FUZZ_CHECK(terminated(t->data_dir, sizeof(t->data_dir)));
	FUZZ_CHECK(terminated(t->model_dir, sizeof(t->model_dir)));
	FUZZ_CHECK(terminated(t->backup_dir, sizeof(t->backup_dir)));
	FUZZ_CHECK(t->epochs >= 1 && t->epochs <= 1000000);
	FUZZ_CHECK(t->batch_size >= 1 && t->batch_size <= 65536);
	FUZZ_CHECK(t->learning_rate >= 1e-12 && t->learning_rate <= 100.0);
	FUZZ_CHECK(t->momentum >= 0.0 && t->momentum < 1.0);
	FUZZ_CHECK(t->momentum == 0.0 || t->optimizer == OPT_SGD);
	FUZZ_CHECK(t->threads >= 1 && t->threads <= 256);
	FUZZ_CHECK(t->rendezvous_timeout >= 1 && t->collective_timeout >= 1);
	/* TF_CONFIG is unset: a single worker, the chief. */
	FUZZ_CHECK(c->cluster.world == 1 && c->cluster.rank == 0);
	FUZZ_CHECK(t->cluster == &c->cluster && t->job_key == &c->key);
}

/* Whether two parses of one command line agree. */
static int same(const struct cli *a, const struct cli *b)
{
	const struct train_config *s = &a->train, *t = &b->train;

	return a->cmd == b->cmd && a->log_level == b->log_level && a->log_format == b->log_format &&
	       memcmp(&a->eval, &b->eval, sizeof(a->eval)) == 0 &&
	       strcmp(s->model, t->model) == 0 && s->epochs == t->epochs &&
	       s->steps_per_epoch == t->steps_per_epoch && s->batch_size == t->batch_size &&
	       s->learning_rate == t->learning_rate && s->optimizer == t->optimizer &&
	       s->momentum == t->momentum && s->seed == t->seed &&
	       strcmp(s->data_dir, t->data_dir) == 0 && strcmp(s->model_dir, t->model_dir) == 0 &&
	       s->validation_steps == t->validation_steps && s->threads == t->threads &&
	       s->log_every == t->log_every && strcmp(s->backup_dir, t->backup_dir) == 0 &&
	       s->save_freq == t->save_freq && s->keep_backups == t->keep_backups &&
	       strcmp(s->job_secret_file, t->job_secret_file) == 0;
}

static int parse(void *out, int argc, char **argv, FILE *help, char *err)
{
	return cli_parse(out, argc, argv, help, err);
}

static const struct fuzz_cli CLI = {"mwj-worker", ENV, sizeof(ENV) / sizeof(ENV[0]), parse};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[ERR_LEN];
	struct cli c, again;
	int rc = fuzz_cli_parse_twice(&CLI, data, size, &c, &again, err);

	if (rc < 0) {
		FUZZ_CHECK(err[0] != '\0' && terminated(err, sizeof(err)));
	} else if (rc == 0) {
		FUZZ_CHECK(same(&c, &again));
		check_accepted(&c);
	} else {
		FUZZ_CHECK(rc == 1); /* help or the version, printed */
	}
	cli_release(&c);
	cli_release(&again);
	return 0;
}
