/* keras_layers.c - the layers of a Keras Sequential file, one table of the
 * keys Keras writes per layer class (each layer's get_config in
 * keras/src/layers/, and tf-keras' where it writes more), with Keras'
 * defaults for what a file leaves out. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "keras_model.h"
#include "keras_read.h"

/* What the readers of one layer's keys share. */
struct layer_read {
	struct keras_layer *l;
	int in_rank;     /* of the layer's input; 0 if the file gives no input shape */
	int strides_set; /* pools: "strides" was given and not null */
};

/* --- Activations (keras/src/activations/) --- */

static const struct {
	const char *name;
	enum keras_activation kind;
} ACTIVATIONS[] = {
    {"linear", KERAS_ACT_LINEAR},         {"relu", KERAS_ACT_RELU},
    {"sigmoid", KERAS_ACT_SIGMOID},       {"tanh", KERAS_ACT_TANH},
    {"softmax", KERAS_ACT_SOFTMAX},       {"gelu", KERAS_ACT_GELU},
    {"leaky_relu", KERAS_ACT_LEAKY_RELU},
};
#define NACTIVATIONS (sizeof(ACTIVATIONS) / sizeof(ACTIVATIONS[0]))

const char *keras_activation_name(enum keras_activation kind)
{
	for (size_t i = 0; i < NACTIVATIONS; i++)
		if (ACTIVATIONS[i].kind == kind)
			return ACTIVATIONS[i].name;
	return "unknown";
}

/* activations.serialize writes Keras' own functions by name; a function
 * object ({"class_name": "function", "config": "relu"}) means the same, and
 * null is activations.get(None), linear. The functions' own defaults
 * apply: leaky_relu(x, negative_slope=0.2), gelu(x, approximate=False). */
static int read_act(struct keras_act *a, const cJSON *v, const char *ctx, const char *key,
                    char *err)
{
	const char *name;
	struct keras_obj o;
	int fn;

	a->negative_slope = 0.2f;
	a->approximate = 0;
	if (cJSON_IsNull(v)) {
		a->kind = KERAS_ACT_LINEAR;
		return 0;
	}
	if (keras_named(&o, &name, &fn, v, ctx, key, err) < 0)
		return -1;
	if (o.node != NULL && !fn)
		return keras_refuse(err, ctx, key, v,
		                    "is not supported (an activation is the name of a Keras "
		                    "function)");
	for (size_t i = 0; i < NACTIVATIONS; i++) {
		if (strcmp(name, ACTIVATIONS[i].name) == 0) {
			a->kind = ACTIVATIONS[i].kind;
			return 0;
		}
	}
	return keras_refuse(err, ctx, key, v,
	                    "is not supported (only linear, relu, sigmoid, tanh, softmax, gelu, "
	                    "leaky_relu)");
}

/* --- Option readers --- */

static int read_name(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct layer_read *r = out;

	return keras_name(v, r->l->name, sizeof(r->l->name), ctx, key, err);
}

static int read_units(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct layer_read *r = out;

	return keras_int(v, 1, KERAS_MAX_DIM, &r->l->units, ctx, key, err);
}

static int refuse_pair(const cJSON *v, const char *ctx, const char *key, char *err)
{
	return keras_refuse(err, ctx, key, v, "must be a whole number in [1, %d] or a list of two",
	                    KERAS_MAX_DIM);
}

/* An int or a list of two (standardize_tuple), each in [1, KERAS_MAX_DIM]. */
static int read_pair(int pair[2], const cJSON *v, const char *ctx, const char *key, char *err)
{
	if (cJSON_IsNumber(v)) {
		if (keras_int(v, 1, KERAS_MAX_DIM, &pair[0], ctx, key, err) < 0)
			return -1;
		pair[1] = pair[0];
		return 0;
	}
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2)
		return refuse_pair(v, ctx, key, err);
	for (int i = 0; i < 2; i++)
		if (keras_int(cJSON_GetArrayItem(v, i), 1, KERAS_MAX_DIM, &pair[i], ctx, key, err) <
		    0)
			return refuse_pair(v, ctx, key, err);
	return 0;
}

static int read_kernel(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct layer_read *r = out;

	return read_pair(r->l->kernel, v, ctx, key, err);
}

/* Pools: null is pool_size (BasePooling: strides = pool_size if None). */
static int read_strides(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct layer_read *r = out;

	if (cJSON_IsNull(v) && r->l->kind != KERAS_CONV2D) {
		r->strides_set = 0;
		return 0;
	}
	r->strides_set = 1;
	return read_pair(r->l->strides, v, ctx, key, err);
}

static int need_ones(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	int pair[2] = {0, 0};

	(void)out;
	if (read_pair(pair, v, ctx, key, err) < 0 || pair[0] != 1 || pair[1] != 1)
		return keras_refuse(err, ctx, key, v, "is not supported (only 1)");
	return 0;
}

static int need_one(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	(void)out;
	if (!cJSON_IsNumber(v) || v->valuedouble != 1)
		return keras_refuse(err, ctx, key, v, "is not supported (only 1)");
	return 0;
}

/* "valid" or "same", in any case: Keras lowercases it (standardize_padding). */
static int read_padding(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct layer_read *r = out;
	const char *s = cJSON_IsString(v) ? v->valuestring : "";

	if (strcasecmp(s, "valid") == 0 || strcasecmp(s, "same") == 0) {
		r->l->same = strcasecmp(s, "same") == 0;
		return 0;
	}
	return keras_refuse(err, ctx, key, v, "is not supported (only \"valid\" or \"same\")");
}

static int read_activation(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct layer_read *r = out;

	return read_act(&r->l->act, v, ctx, key, err);
}

static int read_use_bias(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct layer_read *r = out;

	return keras_bool(v, &r->l->use_bias, ctx, key, err);
}

/* The initializer key names the field it fills. */
static int read_layer_init(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct keras_layer *l = ((struct layer_read *)out)->l;
	struct keras_init *ini = strcmp(key, "kernel_initializer") == 0  ? &l->kernel_init
	                         : strcmp(key, "bias_initializer") == 0  ? &l->bias_init
	                         : strcmp(key, "beta_initializer") == 0  ? &l->beta_init
	                         : strcmp(key, "gamma_initializer") == 0 ? &l->gamma_init
	                         : strcmp(key, "moving_mean_initializer") == 0
	                             ? &l->moving_mean_init
	                             : &l->moving_variance_init;

	return keras_init_read(ini, v, ctx, key, err);
}

static int read_target_shape(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct keras_layer *l = ((struct layer_read *)out)->l;
	int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0, unknown = 0;

	if (n < 1 || n > KERAS_MAX_RANK)
		return keras_refuse(err, ctx, key, v, "must be a list of 1 to %d sizes",
		                    KERAS_MAX_RANK);
	for (int i = 0; i < n; i++) {
		const cJSON *d = cJSON_GetArrayItem(v, i);

		if (cJSON_IsNumber(d) && d->valuedouble == -1) {
			l->target[i] = -1;
			unknown++;
		} else if (keras_int(d, 1, KERAS_MAX_DIM, &l->target[i], ctx, key, err) < 0) {
			return keras_refuse(err, ctx, key, v,
			                    "must hold sizes in [1, %d] or one -1", KERAS_MAX_DIM);
		}
	}
	if (unknown > 1)
		return keras_refuse(err, ctx, key, v, "must not hold more than one -1");
	l->target_rank = n;
	return 0;
}

static int read_keepdims(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct layer_read *r = out;

	return keras_bool(v, &r->l->keepdims, ctx, key, err);
}

/* Dropout(rate): Keras takes 0 <= rate <= 1; a rate of 1 would scale the
 * kept units by 1 / 0. */
static int read_rate(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct layer_read *r = out;

	if (keras_number(v, 0, 1, &r->l->rate, ctx, key, err) < 0 || r->l->rate >= 1)
		return keras_refuse(err, ctx, key, v, "must be a number in [0, 1)");
	return 0;
}

static int read_seed(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct layer_read *r = out;

	return keras_seed(v, &r->l->has_seed, &r->l->seed, ctx, key, err);
}

/* Keras 3 writes the int it was given (-1); tf-keras, once built, the list
 * of axes ([3] for images). Either way only the last axis is done here. */
static int read_axis(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct layer_read *r = out;
	const cJSON *a = cJSON_IsArray(v) && cJSON_GetArraySize(v) == 1 ? v->child : v;

	if (cJSON_IsNumber(a) && a->valuedouble == -1)
		return 0;
	if (r->in_rank == 0)
		return keras_refuse(err, ctx, key, v,
		                    "is not supported (only -1 in a file without an input shape)");
	if (cJSON_IsNumber(a) && a->valuedouble == r->in_rank)
		return 0;
	return keras_refuse(err, ctx, key, v, "is not supported (only the last axis: -1 or %d)",
	                    r->in_rank);
}

static int read_momentum(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct layer_read *r = out;

	return keras_number(v, 0, 1, &r->l->momentum, ctx, key, err);
}

static int read_epsilon(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct layer_read *r = out;

	if (keras_number(v, 0, 1, &r->l->epsilon, ctx, key, err) < 0 || r->l->epsilon <= 0)
		return keras_refuse(err, ctx, key, v, "must be a number in (0, 1]");
	return 0;
}

static int read_bn_flag(void *out, const cJSON *v, const char *ctx, const char *key, char *err)
{
	struct keras_layer *l = ((struct layer_read *)out)->l;
	int *flag = strcmp(key, "center") == 0  ? &l->center
	            : strcmp(key, "scale") == 0 ? &l->scale
	                                        : &l->synchronized;

	return keras_bool(v, flag, ctx, key, err);
}

/* --- The tables --- */

#define END                                                                                        \
	{                                                                                          \
		NULL, NULL, 0                                                                      \
	}

/* Layer.get_config: name, trainable, dtype, and activity_regularizer when
 * set; tf-keras' batch_input_shape on the first layer, which keras_model.c
 * reads as the model's input. */
static const struct keras_key COMMON_KEYS[] = {
    {"name", read_name, 1},
    {"trainable", keras_need_trainable, 0},
    {"dtype", keras_need_float32, 0},
    {"activity_regularizer", keras_need_null, 0},
    {"batch_input_shape", keras_ignore, 0},
    END,
};

/* The regularizers, constraints and LoRA/DoRA ranks of BaseConv and Dense. */
static const struct keras_key WEIGHT_KEYS[] = {
    {"use_bias", read_use_bias, 0},
    {"kernel_initializer", read_layer_init, 0},
    {"bias_initializer", read_layer_init, 0},
    {"kernel_regularizer", keras_need_null, 0},
    {"bias_regularizer", keras_need_null, 0},
    {"kernel_constraint", keras_need_null, 0},
    {"bias_constraint", keras_need_null, 0},
    {"lora_rank", keras_need_null, 0},
    {"lora_alpha", keras_need_null, 0},
    {"activation", read_activation, 0},
    END,
};

static const struct keras_key CONV2D_KEYS[] = {
    {"filters", read_units, 1},
    {"kernel_size", read_kernel, 1},
    {"strides", read_strides, 0},
    {"padding", read_padding, 0},
    {"data_format", keras_need_channels_last, 0},
    {"dilation_rate", need_ones, 0},
    {"groups", need_one, 0},
    {"dora_rank", keras_need_null, 0},
    {"dora_alpha", keras_need_null, 0},
    END,
};

static const struct keras_key POOL_KEYS[] = {
    {"pool_size", read_kernel, 0},
    {"strides", read_strides, 0},
    {"padding", read_padding, 0},
    {"data_format", keras_need_channels_last, 0},
    END,
};

static const struct keras_key GLOBAL_POOL_KEYS[] = {
    {"data_format", keras_need_channels_last, 0},
    {"keepdims", read_keepdims, 0},
    END,
};

static const struct keras_key FLATTEN_KEYS[] = {
    {"data_format", keras_need_channels_last, 0},
    END,
};

static const struct keras_key RESHAPE_KEYS[] = {
    {"target_shape", read_target_shape, 1},
    {"data_format", keras_need_channels_last, 0},
    END,
};

static const struct keras_key DENSE_KEYS[] = {
    {"units", read_units, 1},
    {"quantization_config", keras_need_null, 0},
    END,
};

static const struct keras_key DROPOUT_KEYS[] = {
    {"rate", read_rate, 1},
    {"seed", read_seed, 0},
    {"noise_shape", keras_need_null, 0},
    END,
};

static const struct keras_key ACTIVATION_KEYS[] = {
    {"activation", read_activation, 1},
    END,
};

/* Keras 3's BatchNormalization, and tf-keras' renorm and virtual batches
 * (written only when used). */
static const struct keras_key BATCH_NORM_KEYS[] = {
    {"axis", read_axis, 0},
    {"momentum", read_momentum, 0},
    {"epsilon", read_epsilon, 0},
    {"center", read_bn_flag, 0},
    {"scale", read_bn_flag, 0},
    {"synchronized", read_bn_flag, 0},
    {"beta_initializer", read_layer_init, 0},
    {"gamma_initializer", read_layer_init, 0},
    {"moving_mean_initializer", read_layer_init, 0},
    {"moving_variance_initializer", read_layer_init, 0},
    {"beta_regularizer", keras_need_null, 0},
    {"gamma_regularizer", keras_need_null, 0},
    {"beta_constraint", keras_need_null, 0},
    {"gamma_constraint", keras_need_null, 0},
    {"renorm", keras_need_false, 0},
    {"virtual_batch_size", keras_need_null, 0},
    END,
};

/* Class names as get_config's callers write them (the exported name), and
 * the aliases Keras also exports. need_rank: the rank the layer's input
 * must have (3: height, width, channels), 0 for any. */
static const struct layer_spec {
	const char *class_name;
	const struct keras_key *keys, *keys2;
	enum keras_layer_kind kind;
	int need_rank;
} SPECS[] = {
    {"Conv2D", CONV2D_KEYS, WEIGHT_KEYS, KERAS_CONV2D, 3},
    {"Convolution2D", CONV2D_KEYS, WEIGHT_KEYS, KERAS_CONV2D, 3},
    {"MaxPooling2D", POOL_KEYS, NULL, KERAS_MAX_POOLING2D, 3},
    {"MaxPool2D", POOL_KEYS, NULL, KERAS_MAX_POOLING2D, 3},
    {"AveragePooling2D", POOL_KEYS, NULL, KERAS_AVERAGE_POOLING2D, 3},
    {"AvgPool2D", POOL_KEYS, NULL, KERAS_AVERAGE_POOLING2D, 3},
    {"GlobalAveragePooling2D", GLOBAL_POOL_KEYS, NULL, KERAS_GLOBAL_AVERAGE_POOLING2D, 3},
    {"GlobalAvgPool2D", GLOBAL_POOL_KEYS, NULL, KERAS_GLOBAL_AVERAGE_POOLING2D, 3},
    {"Flatten", FLATTEN_KEYS, NULL, KERAS_FLATTEN, 0},
    {"Reshape", RESHAPE_KEYS, NULL, KERAS_RESHAPE, 0},
    {"Dense", DENSE_KEYS, WEIGHT_KEYS, KERAS_DENSE, 0},
    {"Dropout", DROPOUT_KEYS, NULL, KERAS_DROPOUT, 0},
    {"Activation", ACTIVATION_KEYS, NULL, KERAS_ACTIVATION, 0},
    {"BatchNormalization", BATCH_NORM_KEYS, NULL, KERAS_BATCH_NORMALIZATION, 0},
};
#define NSPECS (sizeof(SPECS) / sizeof(SPECS[0]))

const char *keras_layer_kind_name(enum keras_layer_kind kind)
{
	for (size_t i = 0; i < NSPECS; i++)
		if (SPECS[i].kind == kind)
			return SPECS[i].class_name;
	return "unknown";
}

/* The constructors' defaults (Conv2D(strides=1, padding="valid",
 * use_bias=True, kernel_initializer="glorot_uniform",
 * bias_initializer="zeros"), MaxPooling2D(pool_size=(2, 2)),
 * BatchNormalization(momentum=0.99, epsilon=1e-3, center=True, scale=True,
 * beta "zeros", gamma "ones", moving_mean "zeros", moving_variance "ones")). */
static void set_defaults(struct keras_layer *l, enum keras_layer_kind kind)
{
	memset(l, 0, sizeof(*l));
	l->kind = kind;
	l->act.kind = KERAS_ACT_LINEAR;
	l->act.negative_slope = 0.2f;
	l->strides[0] = l->strides[1] = 1;
	l->use_bias = 1;
	keras_init_set(&l->kernel_init, KERAS_INIT_GLOROT_UNIFORM, 0, 0);
	keras_init_set(&l->bias_init, KERAS_INIT_ZEROS, 0, 0);
	if (kind == KERAS_MAX_POOLING2D || kind == KERAS_AVERAGE_POOLING2D)
		l->kernel[0] = l->kernel[1] = 2;
	if (kind == KERAS_BATCH_NORMALIZATION) {
		l->momentum = 0.99;
		l->epsilon = 1e-3;
		l->center = l->scale = 1;
		keras_init_set(&l->beta_init, KERAS_INIT_ZEROS, 0, 0);
		keras_init_set(&l->gamma_init, KERAS_INIT_ONES, 0, 0);
		keras_init_set(&l->moving_mean_init, KERAS_INIT_ZEROS, 0, 0);
		keras_init_set(&l->moving_variance_init, KERAS_INIT_ONES, 0, 0);
	}
}

int keras_layer_read(struct keras_layer *l, const struct keras_obj *o, int in_rank, const char *ctx,
                     char *err)
{
	const struct layer_spec *spec = NULL;
	struct layer_read r = {l, in_rank, 0};

	for (size_t i = 0; i < NSPECS && spec == NULL; i++)
		if (strcmp(o->class_name, SPECS[i].class_name) == 0)
			spec = &SPECS[i];
	if (spec == NULL)
		return err_set(err,
		               "%s: layer class '%s' is not supported (only InputLayer, Conv2D, "
		               "MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, Flatten, "
		               "Reshape, Dense, Dropout, Activation, BatchNormalization)",
		               ctx, o->class_name);
	set_defaults(l, spec->kind);
	snprintf(l->class_name, sizeof(l->class_name), "%s", o->class_name);
	if (spec->need_rank != 0 && in_rank != 0 && in_rank != spec->need_rank)
		return err_set(err,
		               "%s: needs an input of rank %d (height, width, channels), not %d",
		               ctx, spec->need_rank, in_rank);
	{
		const struct keras_key *tables[] = {COMMON_KEYS, spec->keys, spec->keys2, NULL};

		if (o->config == NULL)
			return err_set(err, "%s: \"config\" is missing", ctx);
		if (keras_read_keys(&r, o->config, tables, ctx, err) < 0)
			return -1;
	}
	if ((spec->kind == KERAS_MAX_POOLING2D || spec->kind == KERAS_AVERAGE_POOLING2D) &&
	    !r.strides_set) {
		l->strides[0] = l->kernel[0];
		l->strides[1] = l->kernel[1];
	}
	return 0;
}

int keras_layer_out_rank(const struct keras_layer *l, int in_rank)
{
	switch (l->kind) {
	case KERAS_CONV2D:
	case KERAS_MAX_POOLING2D:
	case KERAS_AVERAGE_POOLING2D:
		return 3;
	case KERAS_GLOBAL_AVERAGE_POOLING2D:
		return l->keepdims ? 3 : 1;
	case KERAS_FLATTEN:
		return 1;
	case KERAS_RESHAPE:
		return l->target_rank;
	default:
		return in_rank;
	}
}
