/* keras_model.h - a Keras Sequential model as its file describes it.
 *
 * mwj-worker trains the models users write with Keras' Sequential API. They
 * reach it as the JSON that model.to_json() writes, in either of the two
 * shapes in use:
 *   Keras 3   every object is {"module", "class_name", "config",
 *             "registered_name"}; the model has "build_config" and, when it
 *             was compiled, "compile_config" (loss, metrics, optimizer);
 *   Keras 2   tf-keras: {"class_name": "Sequential", "config": {"name",
 *             "layers": [...]}}, an InputLayer with "batch_input_shape"
 *             (or a first layer carrying it), no compile config;
 * or as a .keras file (a zip whose config.json member is that JSON), or
 * that config.json on its own. keras-team/keras is the reference:
 * keras/src/saving/serialization_lib.py, keras/src/models/sequential.py,
 * and each layer's get_config.
 *
 * Nothing is allocated for the model here: this is the plan that model.h
 * builds. Every option the file asks for is either done as Keras does it
 * or refused: a Functional model, a layer or an option that is not listed
 * below, channels_first, a dilation or a group count other than 1, a
 * regularizer or constraint, a dtype other than float32, a custom object;
 * the message names the layer, the key and the value, e.g.
 *   layer 'conv2d_1' (Conv2D): "data_format": "channels_first" is not supported
 * An option that is not there takes Keras' default for the layer.
 *
 * Layers (enum keras_layer_kind), with the options read:
 *   InputLayer              shape (batch_shape / batch_input_shape): not a
 *                           layer of the plan, it sets in_shape
 *   Conv2D                  filters, kernel_size, strides, padding, activation,
 *                           use_bias, kernel_initializer, bias_initializer
 *   MaxPooling2D,
 *   AveragePooling2D        pool_size, strides (null: pool_size), padding
 *   GlobalAveragePooling2D  keepdims
 *   Flatten, Reshape        target_shape (one -1 allowed)
 *   Dense                   units, activation, use_bias, initializers
 *   Dropout                 rate, seed (noise_shape must be null)
 *   Activation              activation
 *   BatchNormalization      axis (-1, or the last axis), momentum, epsilon,
 *                           center, scale, synchronized, the four
 *                           initializers
 * Activations: linear, relu, sigmoid, tanh, softmax, gelu (approximate
 * false or true), leaky_relu (negative_slope, Keras 3's default 0.2), as
 * names or as serialized functions.
 * Initializers: GlorotUniform, GlorotNormal, HeUniform, HeNormal,
 * LecunNormal, LecunUniform, Zeros, Ones, RandomNormal (mean, stddev),
 * RandomUniform (minval, maxval), TruncatedNormal (mean, stddev), with
 * their seed, as objects or as names ("glorot_uniform").
 */
#ifndef MWJ_KERAS_MODEL_H
#define MWJ_KERAS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "loss.h"
#include "optimizer.h"

#define KERAS_MAX_LAYERS 128
#define KERAS_NAME_LEN   128
/* Per-example shapes have one to three axes: (features), (H, W) or
 * (H, W, C); the batch axis is not counted. */
#define KERAS_MAX_RANK 3
/* A model file larger than this is refused before it is read whole. */
#define KERAS_MAX_FILE_BYTES ((size_t)16 << 20)

enum keras_layer_kind {
	KERAS_CONV2D,
	KERAS_MAX_POOLING2D,
	KERAS_AVERAGE_POOLING2D,
	KERAS_GLOBAL_AVERAGE_POOLING2D,
	KERAS_FLATTEN,
	KERAS_RESHAPE,
	KERAS_DENSE,
	KERAS_DROPOUT,
	KERAS_ACTIVATION,
	KERAS_BATCH_NORMALIZATION,
};

enum keras_activation {
	KERAS_ACT_LINEAR,
	KERAS_ACT_RELU,
	KERAS_ACT_SIGMOID,
	KERAS_ACT_TANH,
	KERAS_ACT_SOFTMAX, /* over the last axis */
	KERAS_ACT_GELU,
	KERAS_ACT_LEAKY_RELU,
};

struct keras_act {
	enum keras_activation kind;
	float negative_slope; /* leaky_relu: Keras 3's activation default 0.2 */
	int approximate;      /* gelu: the tanh approximation */
};

enum keras_init_kind {
	KERAS_INIT_ZEROS,
	KERAS_INIT_ONES,
	KERAS_INIT_GLOROT_UNIFORM,
	KERAS_INIT_GLOROT_NORMAL,
	KERAS_INIT_HE_UNIFORM,
	KERAS_INIT_HE_NORMAL,
	KERAS_INIT_LECUN_UNIFORM,
	KERAS_INIT_LECUN_NORMAL,
	KERAS_INIT_RANDOM_NORMAL,    /* a = mean, b = stddev */
	KERAS_INIT_RANDOM_UNIFORM,   /* a = minval, b = maxval */
	KERAS_INIT_TRUNCATED_NORMAL, /* a = mean, b = stddev */
};

struct keras_init {
	enum keras_init_kind kind;
	double a, b;
	int has_seed; /* "seed" was an integer; null otherwise */
	uint64_t seed;
};

/* One layer of the plan. Only the fields of its kind are meaningful. */
struct keras_layer {
	enum keras_layer_kind kind;
	char name[KERAS_NAME_LEN];       /* "name" in its config */
	char class_name[KERAS_NAME_LEN]; /* as the file spells it, for messages */
	struct keras_act act;            /* Conv2D, Dense, Activation */
	int units;                       /* Dense units, Conv2D filters */
	int kernel[2], strides[2]; /* Conv2D kernel_size and strides; pools: pool_size, strides */
	int same;                  /* Conv2D and pools: padding "same" (1) or "valid" (0) */
	int use_bias;              /* Conv2D, Dense */
	struct keras_init kernel_init, bias_init;
	int target_rank;            /* Reshape */
	int target[KERAS_MAX_RANK]; /* Reshape; at most one -1 */
	int keepdims;               /* GlobalAveragePooling2D */
	double rate;                /* Dropout */
	int has_seed;               /* Dropout: "seed" was an integer */
	uint64_t seed;
	double momentum, epsilon;        /* BatchNormalization: Keras' 0.99, 0.001 */
	int center, scale, synchronized; /* BatchNormalization */
	struct keras_init beta_init, gamma_init, moving_mean_init, moving_variance_init;
};

/* What compile() was given, when the file says (Keras 3's compile_config).
 * The caller's flags override it. */
struct keras_compile {
	int has_loss, has_optimizer;
	struct loss_config loss;
	int nmetrics;
	enum metric_kind metrics[LOSS_MAX_METRICS];
	struct optimizer_config optimizer;
};

struct keras_model {
	char name[KERAS_NAME_LEN];
	int keras_version; /* 3 or 2: the shape of the file */
	int in_rank;       /* of in_shape; 0 when the file gives no input shape */
	int in_shape[KERAS_MAX_RANK];
	int nlayers;
	struct keras_layer layers[KERAS_MAX_LAYERS];
	struct keras_compile compile;
	char *json;      /* the model's JSON as read, NUL-terminated, owned */
	size_t json_len; /* bytes of json */
};

/* Reading one
 * keras_model_parse: the JSON text of len bytes (not NUL-terminated
 * necessarily); what names it at the head of messages, as given ("'path'",
 * "--model cnn"): "<what>: layer 'conv2d' (Conv2D): ...".
 * keras_model_load: the file at path, which is model JSON, a .keras
 * file's config.json, or a .keras file (a zip, told by its content, not
 * its name), no larger than KERAS_MAX_FILE_BYTES and only a regular file.
 * keras_model_builtin: the model shipped under that name in
 * examples/models/ ("cnn", "cnn-pool"), compiled into the binary (the
 * build embeds the files: scripts/embed-models.sh).
 * Each returns 0 with km filled (release it with keras_model_release), or
 * -1 with a message in err naming the file, the layer, the key and the
 * value, and km released. */
int keras_model_parse(struct keras_model *km, const char *text, size_t len, const char *what,
                      char *err);
int keras_model_load(struct keras_model *km, const char *path, char *err);
int keras_model_builtin(struct keras_model *km, const char *name, char *err);
/* What --model names: a name without a slash or a dot is a built-in's,
 * anything else a file's path; returns as the two above. */
int keras_model_open(struct keras_model *km, const char *name_or_path, char *err);

/* The built-in names, for --help and messages: "cnn, cnn-pool". */
const char *keras_model_builtin_names(void);

/* Frees json; accepts a zeroed struct. */
void keras_model_release(struct keras_model *km);

/* Names for messages and logs: "Conv2D", "relu", "GlorotUniform". */
const char *keras_layer_kind_name(enum keras_layer_kind kind);
const char *keras_activation_name(enum keras_activation kind);

#endif
