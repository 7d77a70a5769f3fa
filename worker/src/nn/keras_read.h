/* keras_read.h - what the readers of a Keras model file share:
 * keras_model.c (the file, the Sequential, its input), keras_layers.c (each
 * layer's options), keras_init.c (initializers), keras_compile.c (loss,
 * metrics, optimizer), with the helpers of keras_read.c. Not an API for
 * anyone else: keras_model.h is.
 *
 * Every value comes from a file nobody vouches for. A reader takes a config
 * object one member at a time against a table of the keys Keras writes for
 * that object (struct keras_key): a key it does not list is refused, so an
 * option mwj-worker does not implement is never silently ignored; a key it
 * lists but that is absent keeps Keras' default, set before the walk.
 *
 * Messages name where the value is (ctx: "layer 'conv2d' (Conv2D)",
 * "compile_config: optimizer 'SGD'"), the key and the value as the file
 * has it, and why:
 *   layer 'conv2d' (Conv2D): "groups": 2 is not supported (only 1)
 * The helpers below write them, all into err (ERR_LEN), and return -1.
 */
#ifndef MWJ_KERAS_READ_H
#define MWJ_KERAS_READ_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "keras_model.h"

/* The largest size of any axis, unit count, kernel or stride. */
#define KERAS_MAX_DIM (1 << 20)
/* Room for a context such as "layer '<128 bytes>' (<128 bytes>)". */
#define KERAS_CTX_LEN 320

/* --- Keras objects --- */

/* A serialized Keras object: Keras 3 (and tf-keras 2.13+) write
 * {"module", "class_name", "config", "registered_name"}, older Keras 2
 * {"class_name", "config"}. Everything is borrowed from the tree. */
struct keras_obj {
	const char *class_name;
	const cJSON *config; /* NULL when absent or null */
	const cJSON *node;   /* the whole object */
};

/* Reads node, the value of key in ctx, as a Keras built-in object: an
 * object with a string "class_name"; "module", when there, "keras" or
 * "keras.<something>"; "registered_name" null, or, for a serialized
 * function (class_name "function", config its name), that name, which is
 * how serialization_lib.serialize_with_public_fn writes Keras' own
 * functions. Anything else is a custom object and refused. Members other
 * than those and "shared_object_id" are refused unless listed in extra
 * (NULL-terminated, may be NULL): the model's "build_config". Returns 0,
 * or -1 with a message. */
int keras_obj_read(struct keras_obj *o, const cJSON *node, const char *const *extra,
                   const char *ctx, const char *key, char *err);

/* Reads v, the value of key in ctx, as what names a Keras function or
 * class: a string (*name is it), or an object (keras_obj_read into o),
 * whose *name is its function's name for a serialized function (*is_fn
 * 1: class_name "function", config the name) and its class name
 * otherwise. For a string o is zeroed (o->node NULL) and *is_fn 0.
 * Returns 0, or -1 with a message. */
int keras_named(struct keras_obj *o, const char **name, int *is_fn, const cJSON *v, const char *ctx,
                const char *key, char *err);

/* --- Messages --- */

/* "<ctx>: \"<key>\": <value> <why>", the value printed as JSON and cut
 * short if long. why is a printf format ("is not supported (only 1)").
 * Returns -1. */
int keras_refuse(char *err, const char *ctx, const char *key, const cJSON *value, const char *why,
                 ...) __attribute__((format(printf, 5, 6)));

/* The same with the value shown as the caller writes it (a class name, a
 * dtype policy's name). Returns -1. */
int keras_refuse_as(char *err, const char *ctx, const char *key, const char *shown, const char *why,
                    ...) __attribute__((format(printf, 5, 6)));

/* s with control bytes as '?', cut to fit len bytes, into buf; returns
 * buf. For a name from the file shown in a message before (or without)
 * being checked. */
const char *keras_clean(char *buf, size_t len, const char *s);

/* --- Tables of keys --- */

/* A key of a config object and what reads it into out, the caller's
 * struct. read returns 0, or -1 with a message (a keras_refuse). */
struct keras_key {
	const char *name;
	int (*read)(void *out, const cJSON *value, const char *ctx, const char *key, char *err);
	int required; /* Keras' constructor has no default for it */
};

/* Reads every member of config (an object) with the entry of that name in
 * one of tables (each ends with a NULL name; the list with NULL): a member
 * no table names is refused, and so is a required key that is missing.
 * Returns 0, or -1 with the first message. */
int keras_read_keys(void *out, const cJSON *config, const struct keras_key *const *tables,
                    const char *ctx, char *err);

/* --- Values --- */

/* A whole number in [min, max] into *v. */
int keras_int(const cJSON *value, int min, int max, int *v, const char *ctx, const char *key,
              char *err);
/* A finite number in [min, max] into *v. */
int keras_number(const cJSON *value, double min, double max, double *v, const char *ctx,
                 const char *key, char *err);
/* true or false into *v (1 or 0). */
int keras_bool(const cJSON *value, int *v, const char *ctx, const char *key, char *err);
/* A seed: null (*has 0) or a whole number in [0, 2^53] (*has 1). */
int keras_seed(const cJSON *value, int *has, uint64_t *seed, const char *ctx, const char *key,
               char *err);
/* A name: a string of 1 to len - 1 printable bytes, copied into buf. */
int keras_name(const cJSON *value, char *buf, size_t len, const char *ctx, const char *key,
               char *err);

/* Readers for struct keras_key of values that must be what Keras writes
 * by default; out is not used. */
int keras_need_null(void *out, const cJSON *value, const char *ctx, const char *key, char *err);
/* false or null. */
int keras_need_false(void *out, const cJSON *value, const char *ctx, const char *key, char *err);
/* "trainable": true; false is a frozen layer or model. */
int keras_need_trainable(void *out, const cJSON *value, const char *ctx, const char *key,
                         char *err);
/* "dtype": null, "float32", or a float32 dtype policy (Keras 3's
 * DTypePolicy or FloatDTypePolicy, tf-keras' Policy). */
int keras_need_float32(void *out, const cJSON *value, const char *ctx, const char *key, char *err);
/* "data_format": "channels_last" (or null, the default image_data_format). */
int keras_need_channels_last(void *out, const cJSON *value, const char *ctx, const char *key,
                             char *err);
/* Any value: a key Keras writes that changes nothing here (a name of a
 * loss, jit_compile). */
int keras_ignore(void *out, const cJSON *value, const char *ctx, const char *key, char *err);

/* --- Initializers (keras_init.c) --- */

/* Sets ini to kind with parameters a and b and no seed, field by field,
 * so that the padding keeps the zeros of the struct's memset and two reads
 * of one file compare equal byte for byte. */
void keras_init_set(struct keras_init *ini, enum keras_init_kind kind, double a, double b);

/* Reads v, the initializer of key in ctx: a name ("glorot_uniform",
 * "GlorotUniform", or an alias: "zero", "one", "uniform", "normal"), an
 * object of its constructor's arguments (seed, mean and stddev, minval and
 * maxval), or null, which is what Layer.add_weight makes of None:
 * glorot_uniform. Returns 0, or -1 with a message. */
int keras_init_read(struct keras_init *ini, const cJSON *v, const char *ctx, const char *key,
                    char *err);

/* --- Layers (keras_layers.c) --- */

/* Reads the layer o (anything but an InputLayer) into l: its class from
 * the table of layers keras_model.h lists, its options from o->config,
 * Keras' defaults for the rest. in_rank is the rank of the layer's input
 * (0 if the file gives no input shape), for the layers that need images
 * and for BatchNormalization's axis. ctx names the layer in messages.
 * Returns 0, or -1 with a message. */
int keras_layer_read(struct keras_layer *l, const struct keras_obj *o, int in_rank, const char *ctx,
                     char *err);

/* The rank of the output of l for an input of in_rank (0: unknown). */
int keras_layer_out_rank(const struct keras_layer *l, int in_rank);

/* --- The compile config (keras_compile.c) --- */

/* Reads Keras 3's compile_config (Trainer.get_compile_config: the
 * arguments compile() was given, the optimizer resolved to an object) into
 * c. Returns 0, or -1 with a message. */
int keras_compile_read(struct keras_compile *c, const cJSON *config, char *err);

/* --- The models compiled into the binary --- */

/* One file of examples/models/, from the C file the build generates from
 * them (scripts/embed-models.sh). */
struct keras_builtin {
	const char *name; /* the file's name without ".json" */
	const char *text; /* its bytes, NUL-terminated */
	size_t len;       /* bytes of text, the NUL not counted */
};

#endif
