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
 * paths that fit their buffers, the model's plan and a compile config
 * (loss, metrics, optimizer) that the optimizer accepts and that the
 * fields the handshake and backups compare repeat. Each input is parsed twice, and must
 * give the same answer both times (fuzz_cli_parse_twice): nothing of the
 * command line before may leak into the next one.
 */
#include <math.h>
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
	char err[ERR_LEN];

	if (c->cmd == CLI_EVALUATE) {
		FUZZ_CHECK(e->model_dir[0] != '\0' &&
		           terminated(e->model_dir, sizeof(e->model_dir)));
		FUZZ_CHECK(terminated(e->data_dir, sizeof(e->data_dir)));
		FUZZ_CHECK(terminated(e->data, sizeof(e->data)));
		FUZZ_CHECK(isfinite(e->rescale));
		FUZZ_CHECK(e->batch_size >= 1 && e->batch_size <= 65536);
		FUZZ_CHECK(e->threads >= 1 && e->threads <= 256);
		return;
	}
	FUZZ_CHECK(c->cmd == CLI_TRAIN);
	FUZZ_CHECK(terminated(t->model, sizeof(t->model)));
	FUZZ_CHECK(terminated(t->data_dir, sizeof(t->data_dir)));
	FUZZ_CHECK(terminated(t->data, sizeof(t->data)));
	FUZZ_CHECK(terminated(t->model_dir, sizeof(t->model_dir)));
	FUZZ_CHECK(terminated(t->backup_dir, sizeof(t->backup_dir)));
	FUZZ_CHECK(t->epochs >= 1 && t->epochs <= 1000000);
	FUZZ_CHECK(t->batch_size >= 1 && t->batch_size <= 65536);
	FUZZ_CHECK(t->learning_rate >= 1e-12 && t->learning_rate <= 100.0);
	FUZZ_CHECK(t->momentum >= 0.0 && t->momentum < 1.0);
	FUZZ_CHECK(t->momentum == 0.0 || t->optimizer == OPT_SGD || t->optimizer == OPT_RMSPROP);
	/* The model was read, and what it is compiled with is one config. */
	FUZZ_CHECK(t->km != NULL && t->km == c->km && t->km->nlayers > 0);
	FUZZ_CHECK(t->opt.kind == t->optimizer && t->opt.learning_rate == t->learning_rate &&
	           t->opt.momentum == t->momentum);
	FUZZ_CHECK(optimizer_config_check(&t->opt, err) == 0);
	FUZZ_CHECK(t->nmetrics >= 0 && t->nmetrics <= LOSS_MAX_METRICS);
	FUZZ_CHECK(t->rescale == DATASET_RESCALE_NONE || (isfinite(t->rescale) && t->rescale != 0));
	FUZZ_CHECK(t->threads >= 1 && t->threads <= 256);
	FUZZ_CHECK(t->rendezvous_timeout >= 1 && t->collective_timeout >= 1);
	/* TF_CONFIG is unset: a single worker, the chief. */
	FUZZ_CHECK(c->cluster.world == 1 && c->cluster.rank == 0);
	FUZZ_CHECK(t->cluster == &c->cluster && t->job_key == &c->key);
}

/* Whether two compile configs agree, field by field (the structs have
 * padding). */
static int same_compile(const struct train_config *s, const struct train_config *t)
{
	const struct optimizer_config *o = &s->opt, *p = &t->opt;

	return s->loss.kind == t->loss.kind && s->loss.from_logits == t->loss.from_logits &&
	       s->nmetrics == t->nmetrics &&
	       memcmp(s->metrics, t->metrics, sizeof(s->metrics[0]) * (size_t)s->nmetrics) == 0 &&
	       o->kind == p->kind && o->learning_rate == p->learning_rate &&
	       o->momentum == p->momentum && o->nesterov == p->nesterov && o->beta_1 == p->beta_1 &&
	       o->beta_2 == p->beta_2 && o->epsilon == p->epsilon &&
	       o->weight_decay == p->weight_decay &&
	       o->initial_accumulator_value == p->initial_accumulator_value && o->rho == p->rho &&
	       o->centered == p->centered;
}

/* Whether two evaluate configs agree, member by member (a float has no
 * unique object representation to memcmp). */
static int same_eval(const struct eval_config *e, const struct eval_config *f)
{
	return strcmp(e->model_dir, f->model_dir) == 0 && strcmp(e->data_dir, f->data_dir) == 0 &&
	       strcmp(e->data, f->data) == 0 && e->rescale == f->rescale &&
	       e->batch_size == f->batch_size && e->threads == f->threads && e->json == f->json;
}

/* Whether two parses of one command line agree. */
static int same(const struct cli *a, const struct cli *b)
{
	const struct train_config *s = &a->train, *t = &b->train;

	if (a->cmd == CLI_TRAIN &&
	    (!same_compile(s, t) || strcmp(s->data, t->data) != 0 || s->rescale != t->rescale ||
	     strcmp(s->km->json, t->km->json) != 0))
		return 0;

	return a->cmd == b->cmd && a->log_level == b->log_level && a->log_format == b->log_format &&
	       same_eval(&a->eval, &b->eval) && strcmp(s->model, t->model) == 0 &&
	       s->epochs == t->epochs && s->steps_per_epoch == t->steps_per_epoch &&
	       s->batch_size == t->batch_size && s->learning_rate == t->learning_rate &&
	       s->optimizer == t->optimizer && s->momentum == t->momentum && s->seed == t->seed &&
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
