/* keras_compile.c - what compile() was given, as Keras 3 writes it in a
 * model's compile_config (trainers/trainer.py: the loss and metrics as the
 * user passed them, names or objects; the optimizer resolved to an object
 * by optimizers.get), read into losses, metrics and an optimizer's
 * hyper-parameters. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "keras_model.h"
#include "keras_read.h"

#define END                                                                                        \
	{                                                                                          \
		NULL, NULL, 0                                                                      \
	}

/* --- Losses (keras/src/losses/losses.py) --- */

struct loss_read {
	struct loss_config *c;
};

/* Loss.get_config: name and reduction. "mean" is the same reduction
 * (reduce_values divides the sum by the number of elements for both), and
 * tf-keras' "auto" is sum_over_batch_size wherever compile() is used. */
static int read_reduction(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	const char *s = cJSON_IsString(v) ? v->valuestring : "";

	(void)out;
	if (strcmp(s, "sum_over_batch_size") == 0 || strcmp(s, "mean") == 0 ||
	    strcmp(s, "auto") == 0)
		return 0;
	return keras_refuse(err, ctx, key, v,
	                    "is not supported (only \"sum_over_batch_size\", or its synonyms "
	                    "\"mean\" and tf-keras' \"auto\")");
}

static int read_from_logits(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct loss_read *r = out;

	return keras_bool(v, &r->c->from_logits, ctx, key, err);
}

static int need_no_smoothing(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	(void)out;
	if (!cJSON_IsNumber(v) || v->valuedouble != 0)
		return keras_refuse(err, ctx, key, v, "is not supported (only 0)");
	return 0;
}

static int need_last_axis(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	(void)out;
	if (!cJSON_IsNumber(v) || v->valuedouble != -1)
		return keras_refuse(err, ctx, key, v, "is not supported (only -1)");
	return 0;
}

static const struct keras_key LOSS_KEYS[] = {
    {"name", keras_ignore, 0},
    {"reduction", read_reduction, 0},
    {"dtype", keras_need_float32, 0},
    END,
};
static const struct keras_key SPARSE_XENT_KEYS[] = {
    {"from_logits", read_from_logits, 0},
    {"ignore_class", keras_need_null, 0},
    END,
};
static const struct keras_key XENT_KEYS[] = {
    {"from_logits", read_from_logits, 0},
    {"label_smoothing", need_no_smoothing, 0},
    {"axis", need_last_axis, 0},
    END,
};
static const struct keras_key NO_KEYS[] = {END};

/* The losses, by class, by function name (what compile(loss="...") and a
 * serialized function take) and by alias. */
static const struct loss_row {
	const char *class_name, *fn, *alias;
	enum loss_kind kind;
	const struct keras_key *keys; /* besides LOSS_KEYS */
} LOSSES[] = {
    {"SparseCategoricalCrossentropy", "sparse_categorical_crossentropy", NULL,
     LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, SPARSE_XENT_KEYS},
    {"CategoricalCrossentropy", "categorical_crossentropy", NULL, LOSS_CATEGORICAL_CROSSENTROPY,
     XENT_KEYS},
    {"BinaryCrossentropy", "binary_crossentropy", NULL, LOSS_BINARY_CROSSENTROPY, XENT_KEYS},
    {"MeanSquaredError", "mean_squared_error", "mse", LOSS_MEAN_SQUARED_ERROR, NO_KEYS},
    {"MeanAbsoluteError", "mean_absolute_error", "mae", LOSS_MEAN_ABSOLUTE_ERROR, NO_KEYS},
};
#define NLOSSES (sizeof(LOSSES) / sizeof(LOSSES[0]))

static const struct loss_row *find_loss(const char *name)
{
	for (size_t i = 0; i < NLOSSES; i++) {
		const struct loss_row *l = &LOSSES[i];

		if (strcmp(name, l->class_name) == 0 || strcmp(name, l->fn) == 0 ||
		    (l->alias != NULL && strcmp(name, l->alias) == 0))
			return l;
	}
	return NULL;
}

/* A name or a function object is the function with its defaults
 * (from_logits=False); a class object carries its constructor's
 * arguments. */
static int read_loss(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct keras_compile *c = out;
	struct loss_read r = {&c->loss};
	const struct loss_row *spec;
	struct keras_obj o;
	const char *name;
	int fn;
	char inner[KERAS_CTX_LEN];

	if (cJSON_IsNull(v))
		return 0;
	if (cJSON_IsArray(v) || (cJSON_IsObject(v) && !cJSON_HasObjectItem(v, "class_name")))
		return keras_refuse(err, ctx, key, v,
		                    "is not supported (one loss: the model has one output)");
	if (keras_named(&o, &name, &fn, v, ctx, key, err) < 0)
		return -1;
	spec = find_loss(name);
	if (spec == NULL)
		return keras_refuse(err, ctx, key, v,
		                    "is not supported (only sparse_categorical_crossentropy, "
		                    "categorical_crossentropy, binary_crossentropy, "
		                    "mean_squared_error, mean_absolute_error)");
	c->has_loss = 1;
	c->loss.kind = spec->kind;
	c->loss.from_logits = 0;
	if (o.node == NULL || fn || o.config == NULL)
		return 0;
	{
		const struct keras_key *tables[] = {LOSS_KEYS, spec->keys, NULL};

		snprintf(inner, sizeof(inner), "%s: loss '%s'", ctx, spec->class_name);
		return keras_read_keys(&r, o.config, tables, inner, err);
	}
}

/* --- Metrics (keras/src/metrics/) --- */

static const struct metric_spec {
	const char *class_name, *fn, *alias;
	enum metric_kind kind;
} METRICS[] = {
    /* compile_utils' "accuracy" and "acc", resolved from the loss;
     * keras.metrics.Accuracy is another metric (below). */
    {NULL, "accuracy", "acc", METRIC_ACCURACY},
    {"SparseCategoricalAccuracy", "sparse_categorical_accuracy", NULL,
     METRIC_SPARSE_CATEGORICAL_ACCURACY},
    {"CategoricalAccuracy", "categorical_accuracy", NULL, METRIC_CATEGORICAL_ACCURACY},
    {"BinaryAccuracy", "binary_accuracy", NULL, METRIC_BINARY_ACCURACY},
    {"MeanSquaredError", "mean_squared_error", "mse", METRIC_MEAN_SQUARED_ERROR},
    {"MeanAbsoluteError", "mean_absolute_error", "mae", METRIC_MEAN_ABSOLUTE_ERROR},
};
#define NMETRICS (sizeof(METRICS) / sizeof(METRICS[0]))

static const struct metric_spec *find_metric(const char *name, int is_class)
{
	for (size_t i = 0; i < NMETRICS; i++) {
		const struct metric_spec *m = &METRICS[i];

		if ((m->class_name != NULL && strcmp(name, m->class_name) == 0) ||
		    (!is_class && strcmp(name, m->fn) == 0) ||
		    (!is_class && m->alias != NULL && strcmp(name, m->alias) == 0))
			return m;
	}
	return NULL;
}

/* BinaryAccuracy(threshold=0.5). */
static int need_half(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	(void)out;
	if (!cJSON_IsNumber(v) || v->valuedouble != 0.5)
		return keras_refuse(err, ctx, key, v, "is not supported (only 0.5)");
	return 0;
}

/* Metric.get_config: name and dtype; BinaryAccuracy's threshold. */
static const struct keras_key METRIC_KEYS[] = {
    {"name", keras_ignore, 0},
    {"dtype", keras_need_float32, 0},
    {"threshold", need_half, 0},
    END,
};

static int read_metric(enum metric_kind *kind, const cJSON *v, const char *ctx, const char *key,
                       char *err)
{
	const struct keras_key *tables[] = {METRIC_KEYS, NULL};
	const struct metric_spec *spec;
	struct keras_obj o;
	const char *name;
	int fn;
	char inner[KERAS_CTX_LEN];

	if (keras_named(&o, &name, &fn, v, ctx, key, err) < 0)
		return -1;
	/* A class object is looked up by class, anything else by name. */
	spec = find_metric(name, o.node != NULL && !fn);
	if (spec == NULL && o.node != NULL && !fn && strcmp(name, "Accuracy") == 0)
		return keras_refuse(err, ctx, key, v,
		                    "is not supported (keras.metrics.Accuracy counts outputs equal "
		                    "to their targets; \"accuracy\" is what fits the loss)");
	if (spec == NULL)
		return keras_refuse(err, ctx, key, v,
		                    "is not supported (only accuracy, sparse_categorical_accuracy, "
		                    "categorical_accuracy, binary_accuracy, mean_squared_error, "
		                    "mean_absolute_error)");
	*kind = spec->kind;
	if (o.node == NULL || fn || o.config == NULL)
		return 0;
	snprintf(inner, sizeof(inner), "%s: %s '%s'", ctx, key, spec->class_name);
	if (spec->kind != METRIC_BINARY_ACCURACY && cJSON_HasObjectItem(o.config, "threshold"))
		return keras_refuse(err, inner, "threshold",
		                    cJSON_GetObjectItem(o.config, "threshold"),
		                    "is not supported (an option mwj-worker does not know)");
	return keras_read_keys(NULL, o.config, tables, inner, err);
}

static int read_metrics(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct keras_compile *c = out;
	const cJSON *it;
	char at[64];

	c->nmetrics = 0;
	if (cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return keras_refuse(err, ctx, key, v,
		                    "is not supported (a list of metrics: the model has one "
		                    "output)");
	if (cJSON_GetArraySize(v) > LOSS_MAX_METRICS)
		return keras_refuse(err, ctx, key, v, "is not supported (at most %d metrics)",
		                    LOSS_MAX_METRICS);
	cJSON_ArrayForEach(it, v)
	{
		snprintf(at, sizeof(at), "metrics[%d]", c->nmetrics);
		if (read_metric(&c->metrics[c->nmetrics], it, ctx, at, err) < 0)
			return -1;
		c->nmetrics++;
	}
	return 0;
}

/* Metrics weighted by sample weights: there are none to weigh by. */
static int need_no_metrics(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	(void)out;
	if (cJSON_IsNull(v) || (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0))
		return 0;
	return keras_refuse(err, ctx, key, v, "is not supported (only null)");
}

/* --- Optimizers (keras/src/optimizers/) --- */

static int read_lr(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct optimizer_config *c = out;
	const cJSON *cls = cJSON_GetObjectItemCaseSensitive(v, "class_name");
	char shown[72];

	if (cJSON_IsObject(v)) {
		keras_clean(shown, sizeof(shown),
		            cJSON_IsString(cls) ? cls->valuestring : "an object");
		return keras_refuse_as(err, ctx, key, shown,
		                       "is not supported yet (learning-rate schedules)");
	}
	return keras_number(v, 0, 1e6, &c->learning_rate, ctx, key, err);
}

/* BaseOptimizer(weight_decay=None) is no decay; AdamW refuses None. */
static int read_weight_decay(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct optimizer_config *c = out;

	if (cJSON_IsNull(v) && c->kind != OPT_ADAMW) {
		c->weight_decay = 0;
		return 0;
	}
	return keras_number(v, 0, 1e6, &c->weight_decay, ctx, key, err);
}

/* The legacy "decay" argument, which Keras 3 drops with a warning. */
static int need_no_decay(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	(void)out;
	if (cJSON_IsNull(v) || (cJSON_IsNumber(v) && v->valuedouble == 0))
		return 0;
	return keras_refuse(err, ctx, key, v, "is not supported (only 0)");
}

/* The hyper-parameters of the kinds, each a field of struct
 * optimizer_config named as Keras names it: momentum in [0, 1] (SGD checks
 * it), betas and rho in [0, 1), epsilon and Adagrad's initial accumulator
 * from 0. */
static int read_hyper(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct optimizer_config *c = out;
	double *field = strcmp(key, "momentum") == 0  ? &c->momentum
	                : strcmp(key, "beta_1") == 0  ? &c->beta_1
	                : strcmp(key, "beta_2") == 0  ? &c->beta_2
	                : strcmp(key, "rho") == 0     ? &c->rho
	                : strcmp(key, "epsilon") == 0 ? &c->epsilon
	                                              : &c->initial_accumulator_value;
	int below_one = field == &c->beta_1 || field == &c->beta_2 || field == &c->rho;
	double max = field == &c->initial_accumulator_value || field == &c->epsilon ? 1e6 : 1;

	if (keras_number(v, 0, max, field, ctx, key, err) < 0)
		return -1;
	if (below_one && *field >= 1)
		return keras_refuse(err, ctx, key, v, "must be a number in [0, 1)");
	return 0;
}

static int read_flag(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct optimizer_config *c = out;

	return keras_bool(v, strcmp(key, "nesterov") == 0 ? &c->nesterov : &c->centered, ctx, key,
	                  err);
}

/* BaseOptimizer.get_config, and what tf-keras' optimizers add. */
static const struct keras_key OPTIMIZER_KEYS[] = {
    {"name", keras_ignore, 0},
    {"learning_rate", read_lr, 0},
    {"weight_decay", read_weight_decay, 0},
    {"clipnorm", keras_need_null, 0},
    {"clipvalue", keras_need_null, 0},
    {"global_clipnorm", keras_need_null, 0},
    {"use_ema", keras_need_false, 0},
    {"ema_momentum", keras_ignore, 0}, /* only with use_ema */
    {"ema_overwrite_frequency", keras_ignore, 0},
    {"loss_scale_factor", keras_need_null, 0},
    {"gradient_accumulation_steps", keras_need_null, 0},
    {"jit_compile", keras_ignore, 0},
    {"is_legacy_optimizer", keras_need_false, 0},
    {"decay", need_no_decay, 0},
    END,
};
static const struct keras_key SGD_KEYS[] = {
    {"momentum", read_hyper, 0},
    {"nesterov", read_flag, 0},
    END,
};
static const struct keras_key ADAM_KEYS[] = {
    {"beta_1", read_hyper, 0},
    {"beta_2", read_hyper, 0},
    {"epsilon", read_hyper, 0},
    {"amsgrad", keras_need_false, 0},
    END,
};
static const struct keras_key ADAGRAD_KEYS[] = {
    {"initial_accumulator_value", read_hyper, 0},
    {"epsilon", read_hyper, 0},
    END,
};
static const struct keras_key RMSPROP_KEYS[] = {
    {"rho", read_hyper, 0},
    {"momentum", read_hyper, 0},
    {"epsilon", read_hyper, 0},
    {"centered", read_flag, 0},
    END,
};

static const struct {
	const char *class_name;
	enum optimizer_kind kind;
	const struct keras_key *keys;
} OPTIMIZERS[] = {
    {"SGD", OPT_SGD, SGD_KEYS},
    {"Adam", OPT_ADAM, ADAM_KEYS},
    {"AdamW", OPT_ADAMW, ADAM_KEYS},
    {"Adagrad", OPT_ADAGRAD, ADAGRAD_KEYS},
    {"RMSprop", OPT_RMSPROP, RMSPROP_KEYS},
};
#define NOPTIMIZERS (sizeof(OPTIMIZERS) / sizeof(OPTIMIZERS[0]))

/* optimizers.get takes a name or a class name in any case (deserialize
 * lowercases what it finds in ALL_OBJECTS_DICT); each starts from its
 * constructor's defaults. */
static int read_optimizer(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct keras_compile *c = out;
	struct optimizer_config *oc = &c->optimizer;
	struct keras_obj o;
	const char *name;
	size_t i;
	int fn;
	char inner[KERAS_CTX_LEN];

	if (cJSON_IsNull(v))
		return 0;
	if (keras_named(&o, &name, &fn, v, ctx, key, err) < 0)
		return -1;
	if (fn)
		name = "";
	for (i = 0; i < NOPTIMIZERS; i++)
		if (strcasecmp(name, OPTIMIZERS[i].class_name) == 0)
			break;
	if (i == NOPTIMIZERS)
		return keras_refuse(err, ctx, key, v,
		                    "is not supported (only SGD, Adam, AdamW, Adagrad, RMSprop)");
	optimizer_config_defaults(oc, OPTIMIZERS[i].kind);
	c->has_optimizer = 1;
	snprintf(inner, sizeof(inner), "%s: optimizer '%s'", ctx, OPTIMIZERS[i].class_name);
	if (o.config != NULL) {
		const struct keras_key *tables[] = {OPTIMIZER_KEYS, OPTIMIZERS[i].keys, NULL};

		if (keras_read_keys(oc, o.config, tables, inner, err) < 0)
			return -1;
	}
	/* What optim/ itself refuses, in its words. */
	if (optimizer_config_check(oc, err) < 0)
		return err_prefix(err, "%s", inner);
	return 0;
}

/* --- The compile config --- */

static const struct keras_key COMPILE_KEYS[] = {
    {"optimizer", read_optimizer, 0},
    {"loss", read_loss, 0},
    {"loss_weights", keras_need_null, 0},
    {"metrics", read_metrics, 0},
    {"weighted_metrics", need_no_metrics, 0},
    /* How the steps run, not what they compute. */
    {"run_eagerly", keras_ignore, 0},
    {"steps_per_execution", keras_ignore, 0},
    {"jit_compile", keras_ignore, 0},
    {"pss_evaluation_shards", keras_ignore, 0}, /* tf-keras */
    END,
};

int keras_compile_read(struct keras_compile *c, const cJSON *config, char *err)
{
	const struct keras_key *tables[] = {COMPILE_KEYS, NULL};

	memset(c, 0, sizeof(*c));
	if (!cJSON_IsObject(config))
		return keras_refuse(err, "model", "compile_config", config, "must be an object");
	return keras_read_keys(c, config, tables, "compile_config", err);
}
