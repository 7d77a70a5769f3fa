/* compile_config.c - the model file's compile config under the flags. */
#include "compile_config.h"

#include <string.h>

#include "err.h"
#include "trainer.h"

int compile_parse_metrics(struct compile_flags *f, const char *list, char *err)
{
	char name[64];
	const char *p = list;

	f->metrics_set = 1;
	f->nmetrics = 0;
	if (strcmp(list, "none") == 0 || list[0] == '\0')
		return 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		if (n == 0 || n >= sizeof(name))
			return err_set(err, "'%s' is not a comma-separated list of metrics", list);
		memcpy(name, p, n);
		name[n] = '\0';
		if (f->nmetrics == LOSS_MAX_METRICS)
			return err_set(err, "'%s': at most %d metrics", list, LOSS_MAX_METRICS);
		if (metric_parse(name, &f->metrics[f->nmetrics]) < 0)
			return err_set(err,
			               "'%s' is not a metric mwj computes (accuracy, "
			               "sparse_categorical_accuracy, categorical_accuracy, "
			               "binary_accuracy, mse, mae)",
			               name);
		f->nmetrics++;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static int resolve_loss(struct compiled *out, const struct keras_model *km,
                        const struct compile_flags *f, char *err)
{
	if (f->loss_set) {
		out->loss.kind = f->loss;
		out->loss.from_logits = 0; /* Keras' default */
	} else if (km->compile.has_loss) {
		out->loss = km->compile.loss;
	} else {
		return err_set(err,
		               "the model file names no loss (it has no compile config): give "
		               "--loss, e.g. --loss sparse_categorical_crossentropy --from-logits");
	}
	if (f->from_logits_set)
		out->loss.from_logits = f->from_logits;
	if (f->metrics_set) {
		out->nmetrics = f->nmetrics;
		memcpy(out->metrics, f->metrics, sizeof(out->metrics));
	} else if (km->compile.has_loss) {
		out->nmetrics = km->compile.nmetrics;
		memcpy(out->metrics, km->compile.metrics, sizeof(out->metrics));
	}
	return 0;
}

static int resolve_optimizer(struct compiled *out, const struct keras_model *km,
                             const struct compile_flags *f, char *err)
{
	struct optimizer_config *o = &out->opt;
	const struct optimizer_config *g = &f->opt;

	if (km->compile.has_optimizer &&
	    (!f->optimizer_set || g->kind == km->compile.optimizer.kind)) {
		*o = km->compile.optimizer;
	} else {
		optimizer_config_defaults(o, f->optimizer_set ? g->kind : OPT_SGD);
		o->learning_rate = COMPILE_DEFAULT_LEARNING_RATE;
	}
	if (f->momentum_set && g->momentum > 0 && o->kind != OPT_SGD && o->kind != OPT_RMSPROP)
		return err_set(
		    err, "--momentum %g applies to --optimizer sgd and rmsprop only, not '%s'",
		    g->momentum, optimizer_name(o->kind));
#define TAKE(set, field)                                                                           \
	do {                                                                                       \
		if (f->set)                                                                        \
			o->field = g->field;                                                       \
	} while (0)
	TAKE(lr_set, learning_rate);
	TAKE(momentum_set, momentum);
	TAKE(nesterov_set, nesterov);
	TAKE(beta_1_set, beta_1);
	TAKE(beta_2_set, beta_2);
	TAKE(epsilon_set, epsilon);
	TAKE(weight_decay_set, weight_decay);
	TAKE(rho_set, rho);
	TAKE(centered_set, centered);
	TAKE(accumulator_set, initial_accumulator_value);
#undef TAKE
	return optimizer_config_check(o, err);
}

int compile_resolve(struct compiled *out, const struct keras_model *km,
                    const struct compile_flags *f, char *err)
{
	memset(out, 0, sizeof(*out));
	if (resolve_loss(out, km, f, err) < 0)
		return -1;
	return resolve_optimizer(out, km, f, err);
}

int compile_apply(struct train_config *t, const struct keras_model *km,
                  const struct compile_flags *f, char *err)
{
	struct compiled k;

	if (compile_resolve(&k, km, f, err) < 0)
		return -1;
	t->km = km;
	t->loss = k.loss;
	t->nmetrics = k.nmetrics;
	memcpy(t->metrics, k.metrics, sizeof(t->metrics));
	t->opt = k.opt;
	t->optimizer = k.opt.kind;
	t->learning_rate = k.opt.learning_rate;
	t->momentum = k.opt.momentum;
	return 0;
}
