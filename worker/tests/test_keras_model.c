/* test_keras_model.c - reading Keras Sequential files (keras_model.h): the
 * built-in models, a file of every layer and option, the tf-keras and
 * Keras 2 shapes, .keras zips, and the exact message of every refusal.
 *
 * The fixtures are in worker/tests/data/keras/, found from this file's own
 * path (make runs the tests from the top of the tree), each mirroring what
 * a version of Keras writes:
 *   examples/models/cnn.json, cnn-pool.json   Keras 3.13's model.to_json()
 *       of the TensorFlow multi-worker tutorial's model and its pooled
 *       variant, compiled as the tutorial compiles; what dates them:
 *       layer dtypes as DTypePolicy objects, InputLayer's "ragged" (3.9)
 *       and "optional", Dense's "quantization_config" (keras-team/keras
 *       #21928, in 3.13), Sequential's "build_input_shape"
 *   keras3-every-layer.json      the same Keras, to_json(indent=2): every
 *       layer and option keras_model.h lists, compiled with Adam
 *   tf-keras-2.15-tutorial.json  tf-keras 2.15 (TensorFlow 2.15): the
 *       tutorial model with an InputLayer's batch_input_shape, no
 *       compile_config
 *   keras-2.11-mlp.json          Keras 2.11: objects without "module", the
 *       input shape on the first layer, BatchNormalization's axis [1]
 *   cnn.keras                    Keras 3's model.save(): a zip of
 *       metadata.json, config.json (cnn.json, deflated) and the weights,
 *       from make-cnn-keras.py beside it
 *   refused/                     files of Keras 3 (and one of tf-keras 2.15)
 *       that must be refused, each with its message below
 * Other variations are one substring of cnn.json or keras3-every-layer.json
 * replaced, each in a table with what it must give.
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
#include <unistd.h>

#include <zip.h>

#include "err.h"
#include "keras_model.h"
#include "testutil.h"

struct fixture {
	char dir[TESTUTIL_TMPDIR_LEN]; /* first, for testutil_fixture_setup() */
	char err[ERR_LEN];
	struct keras_model km, other;
};

static int setup(void **state)
{
	return testutil_fixture_setup(state, sizeof(struct fixture), "keras-model");
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	if (fx != NULL) {
		keras_model_release(&fx->km);
		keras_model_release(&fx->other);
	}
	return testutil_fixture_teardown(state);
}

/* --- Files of the tree --- */

/* path, relative to the top of the tree, from this file's own path. */
static const char *tree_path(const char *path)
{
	static char buf[2 * PATH_MAX];
	const char *slash = strrchr(__FILE__, '/');
	int dir = slash != NULL ? (int)(slash - __FILE__) : 0;

	/* __FILE__ is worker/tests/test_keras_model.c, or absolute. */
	snprintf(buf, sizeof(buf), "%.*s%s../../%s", dir, __FILE__, dir ? "/" : "", path);
	return buf;
}

static const char *fixture_path(const char *name)
{
	char rel[PATH_MAX];

	snprintf(rel, sizeof(rel), "worker/tests/data/keras/%.200s", name);
	return tree_path(rel);
}

static char *read_text(const char *path)
{
	return testutil_read_file(path, NULL);
}

/* text with its one occurrence of from replaced by to; the caller frees. */
static char *replaced(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	size_t n = strlen(text) - strlen(from) + strlen(to);
	char *out;

	if (at == NULL || strstr(at + 1, from) != NULL)
		fail_msg("'%s' is not in the fixture exactly once", from);
	out = malloc(n + 1);
	assert_non_null(out);
	snprintf(out, n + 1, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	return out;
}

static void parse_ok(struct keras_model *km, const char *text, char *err)
{
	if (keras_model_parse(km, text, strlen(text), "test", err) < 0)
		fail_msg("parse: %s", err);
}

static void parse_refused(struct keras_model *km, const char *text, const char *want, char *err)
{
	if (keras_model_parse(km, text, strlen(text), "test", err) == 0)
		fail_msg("accepted, but should give: %s", want);
	assert_string_equal(err, want);
	assert_null(km->json);
	assert_int_equal(km->nlayers, 0);
}

/* --- Checks on what was read --- */

static void assert_init(const struct keras_init *ini, enum keras_init_kind kind, double a, double b,
                        int has_seed, uint64_t seed)
{
	assert_int_equal(ini->kind, kind);
	assert_true(ini->a == a);
	assert_true(ini->b == b);
	assert_int_equal(ini->has_seed, has_seed);
	assert_int_equal(ini->seed, seed);
}

static void assert_glorot_zeros(const struct keras_layer *l)
{
	assert_init(&l->kernel_init, KERAS_INIT_GLOROT_UNIFORM, 0, 0, 0, 0);
	assert_init(&l->bias_init, KERAS_INIT_ZEROS, 0, 0, 0, 0);
}

static void assert_layer(const struct keras_layer *l, enum keras_layer_kind kind, const char *name,
                         const char *class_name)
{
	assert_int_equal(l->kind, kind);
	assert_string_equal(l->name, name);
	assert_string_equal(l->class_name, class_name);
}

static void assert_conv(const struct keras_layer *l, const char *name, int filters, int kh, int kw,
                        int sh, int sw, int same, enum keras_activation act, int use_bias)
{
	assert_layer(l, KERAS_CONV2D, name, "Conv2D");
	assert_int_equal(l->units, filters);
	assert_int_equal(l->kernel[0], kh);
	assert_int_equal(l->kernel[1], kw);
	assert_int_equal(l->strides[0], sh);
	assert_int_equal(l->strides[1], sw);
	assert_int_equal(l->same, same);
	assert_int_equal(l->act.kind, act);
	assert_int_equal(l->use_bias, use_bias);
}

static void assert_dense(const struct keras_layer *l, const char *name, int units,
                         enum keras_activation act)
{
	assert_layer(l, KERAS_DENSE, name, "Dense");
	assert_int_equal(l->units, units);
	assert_int_equal(l->act.kind, act);
	assert_int_equal(l->use_bias, 1);
}

static void assert_pool(const struct keras_layer *l, enum keras_layer_kind kind, const char *name,
                        const char *class_name, int k, int s, int same)
{
	assert_layer(l, kind, name, class_name);
	assert_int_equal(l->kernel[0], k);
	assert_int_equal(l->kernel[1], k);
	assert_int_equal(l->strides[0], s);
	assert_int_equal(l->strides[1], s);
	assert_int_equal(l->same, same);
}

/* The tutorial's compile(): SparseCategoricalCrossentropy(from_logits=True),
 * SGD(learning_rate=0.001), metrics=["accuracy"]. Keras writes the rate as
 * the float32 it keeps, 0.0010000000474974513. */
static void assert_tutorial_compile(const struct keras_compile *c)
{
	assert_int_equal(c->has_loss, 1);
	assert_int_equal(c->loss.kind, LOSS_SPARSE_CATEGORICAL_CROSSENTROPY);
	assert_int_equal(c->loss.from_logits, 1);
	assert_int_equal(c->nmetrics, 1);
	assert_int_equal(c->metrics[0], METRIC_ACCURACY);
	assert_int_equal(c->has_optimizer, 1);
	assert_int_equal(c->optimizer.kind, OPT_SGD);
	assert_true(c->optimizer.learning_rate == 0.0010000000474974513);
	assert_true((float)c->optimizer.learning_rate == 0.001f);
	assert_true(c->optimizer.momentum == 0.0);
	assert_int_equal(c->optimizer.nesterov, 0);
	assert_true(c->optimizer.weight_decay == 0.0);
}

/* The tutorial's layers after its InputLayer: Reshape (28, 28, 1),
 * Conv2D(32, 3, relu), Flatten, Dense(128, relu), Dense(10). */
static void assert_tutorial_layers(const struct keras_model *km)
{
	const struct keras_layer *l = km->layers;

	assert_int_equal(km->in_rank, 2);
	assert_int_equal(km->in_shape[0], 28);
	assert_int_equal(km->in_shape[1], 28);
	assert_int_equal(km->nlayers, 5);
	assert_layer(&l[0], KERAS_RESHAPE, "reshape", "Reshape");
	assert_int_equal(l[0].target_rank, 3);
	assert_int_equal(l[0].target[0], 28);
	assert_int_equal(l[0].target[1], 28);
	assert_int_equal(l[0].target[2], 1);
	assert_conv(&l[1], "conv2d", 32, 3, 3, 1, 1, 0, KERAS_ACT_RELU, 1);
	assert_glorot_zeros(&l[1]);
	assert_layer(&l[2], KERAS_FLATTEN, "flatten", "Flatten");
	assert_dense(&l[3], "dense", 128, KERAS_ACT_RELU);
	assert_glorot_zeros(&l[3]);
	assert_dense(&l[4], "dense_1", 10, KERAS_ACT_LINEAR);
	assert_glorot_zeros(&l[4]);
}

/* --- The built-in models --- */

/* examples/models/cnn.json: Keras 3.13's to_json() of the tutorial model. */
static void test_builtin_cnn_is_the_tutorial_model_as_keras_3_writes_it(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	char *file = testutil_read_file(tree_path("examples/models/cnn.json"), &len);

	if (keras_model_builtin(&fx->km, "cnn", fx->err) < 0)
		fail_msg("%s", fx->err);
	assert_string_equal(fx->km.name, "sequential");
	assert_int_equal(fx->km.keras_version, 3);
	assert_tutorial_layers(&fx->km);
	assert_tutorial_compile(&fx->km.compile);
	/* The binary holds the file byte for byte. */
	assert_int_equal(fx->km.json_len, len);
	assert_memory_equal(fx->km.json, file, len);
	assert_int_equal(fx->km.json[len], '\0');
	free(file);
}

static void test_builtin_cnn_pool_pools_by_two_before_a_dense_of_64(void **state)
{
	struct fixture *fx = *state;
	const struct keras_layer *l = fx->km.layers;

	if (keras_model_builtin(&fx->km, "cnn-pool", fx->err) < 0)
		fail_msg("%s", fx->err);
	assert_int_equal(fx->km.in_rank, 2);
	assert_int_equal(fx->km.nlayers, 6);
	assert_layer(&l[0], KERAS_RESHAPE, "reshape", "Reshape");
	assert_conv(&l[1], "conv2d", 32, 3, 3, 1, 1, 0, KERAS_ACT_RELU, 1);
	assert_pool(&l[2], KERAS_MAX_POOLING2D, "max_pooling2d", "MaxPooling2D", 2, 2, 0);
	assert_layer(&l[3], KERAS_FLATTEN, "flatten", "Flatten");
	assert_dense(&l[4], "dense", 64, KERAS_ACT_RELU);
	assert_dense(&l[5], "dense_1", 10, KERAS_ACT_LINEAR);
	assert_tutorial_compile(&fx->km.compile);
}

static void test_builtin_names_are_listed_and_others_refused(void **state)
{
	struct fixture *fx = *state;

	assert_string_equal(keras_model_builtin_names(), "cnn, cnn-pool");
	assert_int_equal(keras_model_builtin(&fx->km, "resnet", fx->err), -1);
	assert_string_equal(fx->err,
	                    "unknown model 'resnet' (built in: cnn, cnn-pool; or the path of "
	                    "a Keras model file)");
	assert_null(fx->km.json);
	assert_int_equal(keras_model_builtin(&fx->km, NULL, fx->err), -1);
}

static void test_builtin_and_the_file_it_was_made_from_read_the_same(void **state)
{
	struct fixture *fx = *state;

	if (keras_model_builtin(&fx->km, "cnn-pool", fx->err) < 0 ||
	    keras_model_load(&fx->other, tree_path("examples/models/cnn-pool.json"), fx->err) < 0)
		fail_msg("%s", fx->err);
	assert_memory_equal(fx->km.layers, fx->other.layers, sizeof(fx->km.layers));
	assert_memory_equal(&fx->km.compile, &fx->other.compile, sizeof(fx->km.compile));
	assert_int_equal(fx->km.json_len, fx->other.json_len);
	assert_memory_equal(fx->km.json, fx->other.json, fx->km.json_len);
}

/* --- Every layer and option, Keras 3 --- */

static void assert_every_layer_compile(const struct keras_compile *c)
{
	assert_int_equal(c->has_loss, 1);
	assert_int_equal(c->loss.kind, LOSS_CATEGORICAL_CROSSENTROPY);
	assert_int_equal(c->loss.from_logits, 0);
	assert_int_equal(c->nmetrics, 3);
	assert_int_equal(c->metrics[0], METRIC_ACCURACY);
	assert_int_equal(c->metrics[1], METRIC_CATEGORICAL_ACCURACY);
	assert_int_equal(c->metrics[2], METRIC_MEAN_SQUARED_ERROR);
	assert_int_equal(c->has_optimizer, 1);
	assert_int_equal(c->optimizer.kind, OPT_ADAM);
	assert_true(c->optimizer.learning_rate == 0.0005000000237487257);
	assert_true(c->optimizer.beta_1 == 0.85);
	assert_true(c->optimizer.beta_2 == 0.995);
	assert_true(c->optimizer.epsilon == 1e-8);
	assert_true(c->optimizer.weight_decay == 0.0);
}

/* keras3-every-layer.json: Keras 3.13, to_json(indent=2). */
static void test_keras3_file_of_every_layer_reads_every_option(void **state)
{
	struct fixture *fx = *state;
	const struct keras_layer *l = fx->km.layers;

	if (keras_model_load(&fx->km, fixture_path("keras3-every-layer.json"), fx->err) < 0)
		fail_msg("%s", fx->err);
	assert_string_equal(fx->km.name, "every_layer");
	assert_int_equal(fx->km.keras_version, 3);
	assert_int_equal(fx->km.in_rank, 3);
	assert_int_equal(fx->km.in_shape[0], 32);
	assert_int_equal(fx->km.in_shape[1], 32);
	assert_int_equal(fx->km.in_shape[2], 3);
	assert_int_equal(fx->km.nlayers, 14);

	assert_conv(&l[0], "conv2d", 16, 5, 3, 2, 1, 1, KERAS_ACT_RELU, 1);
	assert_init(&l[0].kernel_init, KERAS_INIT_HE_NORMAL, 0, 0, 1, 7);
	assert_init(&l[0].bias_init, KERAS_INIT_RANDOM_NORMAL, 0.1, 0.02, 1, 3);

	assert_layer(&l[1], KERAS_BATCH_NORMALIZATION, "batch_normalization", "BatchNormalization");
	assert_true(l[1].momentum == 0.9);
	assert_true(l[1].epsilon == 0.0001);
	assert_int_equal(l[1].center, 1);
	assert_int_equal(l[1].scale, 0);
	assert_int_equal(l[1].synchronized, 0);
	assert_init(&l[1].beta_init, KERAS_INIT_ZEROS, 0, 0, 0, 0);
	assert_init(&l[1].gamma_init, KERAS_INIT_ONES, 0, 0, 0, 0);
	assert_init(&l[1].moving_mean_init, KERAS_INIT_ZEROS, 0, 0, 0, 0);
	assert_init(&l[1].moving_variance_init, KERAS_INIT_ONES, 0, 0, 0, 0);

	assert_layer(&l[2], KERAS_ACTIVATION, "activation", "Activation");
	assert_int_equal(l[2].act.kind, KERAS_ACT_LEAKY_RELU);
	assert_true(l[2].act.negative_slope == 0.2f); /* leaky_relu(x, negative_slope=0.2) */

	assert_pool(&l[3], KERAS_MAX_POOLING2D, "max_pooling2d", "MaxPooling2D", 3, 2, 1);

	assert_conv(&l[4], "conv2d_1", 8, 3, 3, 1, 1, 0, KERAS_ACT_GELU, 0);
	assert_int_equal(l[4].act.approximate, 0); /* gelu(x, approximate=False) */
	assert_init(&l[4].kernel_init, KERAS_INIT_LECUN_UNIFORM, 0, 0, 0, 0);

	assert_pool(&l[5], KERAS_AVERAGE_POOLING2D, "average_pooling2d", "AveragePooling2D", 2, 1,
	            0);
	assert_layer(&l[6], KERAS_GLOBAL_AVERAGE_POOLING2D, "global_average_pooling2d",
	             "GlobalAveragePooling2D");
	assert_int_equal(l[6].keepdims, 1);
	assert_layer(&l[7], KERAS_FLATTEN, "flatten", "Flatten");

	assert_layer(&l[8], KERAS_DROPOUT, "dropout", "Dropout");
	assert_true(l[8].rate == 0.25);
	assert_int_equal(l[8].has_seed, 1);
	assert_int_equal(l[8].seed, 42);

	assert_dense(&l[9], "dense", 64, KERAS_ACT_TANH);
	assert_init(&l[9].kernel_init, KERAS_INIT_TRUNCATED_NORMAL, 0.0, 0.1, 1, 11);
	assert_init(&l[9].bias_init, KERAS_INIT_ONES, 0, 0, 0, 0);

	assert_layer(&l[10], KERAS_RESHAPE, "reshape", "Reshape");
	assert_int_equal(l[10].target_rank, 2);
	assert_int_equal(l[10].target[0], -1);
	assert_int_equal(l[10].target[1], 8);

	assert_dense(&l[11], "dense_1", 4, KERAS_ACT_SIGMOID);
	assert_init(&l[11].kernel_init, KERAS_INIT_LECUN_NORMAL, 0, 0, 0, 0); /* "lecun_normal" */
	assert_init(&l[11].bias_init, KERAS_INIT_RANDOM_UNIFORM, -0.1, 0.2, 0, 0);

	assert_layer(&l[12], KERAS_FLATTEN, "flatten_1", "Flatten");
	assert_dense(&l[13], "dense_2", 10, KERAS_ACT_SOFTMAX); /* a serialized function */
	assert_init(&l[13].kernel_init, KERAS_INIT_GLOROT_NORMAL, 0, 0, 1, 1);
	assert_init(&l[13].bias_init, KERAS_INIT_HE_UNIFORM, 0, 0, 1, 2);

	assert_every_layer_compile(&fx->km.compile);
}

/* --- Keras 2 --- */

/* tf-keras-2.15-tutorial.json: tf-keras 2.15 (TensorFlow 2.15) to_json(). */
static void test_tf_keras_tutorial_takes_its_input_layers_batch_input_shape(void **state)
{
	struct fixture *fx = *state;

	if (keras_model_load(&fx->km, fixture_path("tf-keras-2.15-tutorial.json"), fx->err) < 0)
		fail_msg("%s", fx->err);
	assert_int_equal(fx->km.keras_version, 2);
	assert_string_equal(fx->km.name, "sequential");
	assert_tutorial_layers(&fx->km);
	/* model.to_json() in Keras 2 says nothing of compile(). */
	assert_int_equal(fx->km.compile.has_loss, 0);
	assert_int_equal(fx->km.compile.has_optimizer, 0);
	assert_int_equal(fx->km.compile.nmetrics, 0);
}

/* keras-2.11-mlp.json: Keras 2.11 to_json(), no InputLayer. */
static void test_keras2_file_takes_the_input_shape_from_its_first_layer(void **state)
{
	struct fixture *fx = *state;
	const struct keras_layer *l = fx->km.layers;

	if (keras_model_load(&fx->km, fixture_path("keras-2.11-mlp.json"), fx->err) < 0)
		fail_msg("%s", fx->err);
	assert_int_equal(fx->km.keras_version, 2);
	assert_string_equal(fx->km.name, "sequential_1");
	assert_int_equal(fx->km.in_rank, 1);
	assert_int_equal(fx->km.in_shape[0], 784);
	assert_int_equal(fx->km.nlayers, 4);
	assert_dense(&l[0], "dense_3", 256, KERAS_ACT_RELU);
	assert_glorot_zeros(&l[0]);
	/* axis [1]: the last axis of (batch, 256), as tf-keras writes it once built. */
	assert_layer(&l[1], KERAS_BATCH_NORMALIZATION, "batch_normalization", "BatchNormalization");
	assert_true(l[1].momentum == 0.99);
	assert_true(l[1].epsilon == 0.001);
	assert_int_equal(l[1].center, 1);
	assert_int_equal(l[1].scale, 1);
	assert_layer(&l[2], KERAS_DROPOUT, "dropout", "Dropout");
	assert_true(l[2].rate == 0.5);
	assert_int_equal(l[2].has_seed, 0);
	assert_dense(&l[3], "dense_4", 10, KERAS_ACT_SOFTMAX);
	assert_int_equal(fx->km.compile.has_loss, 0);
}

/* --- .keras files --- */

/* Writes a zip at path of one member, deflated, through minizip. */
static void write_zip(const char *path, const char *member, const char *data, size_t len)
{
	zipFile zf = zipOpen64(path, APPEND_STATUS_CREATE);

	assert_non_null(zf);
	assert_int_equal(zipOpenNewFileInZip64(zf, member, NULL, NULL, 0, NULL, 0, NULL, Z_DEFLATED,
	                                       Z_DEFAULT_COMPRESSION, len > 0xffffffffu),
	                 ZIP_OK);
	assert_int_equal(zipWriteInFileInZip(zf, data, (unsigned)len), ZIP_OK);
	assert_int_equal(zipCloseFileInZip(zf), ZIP_OK);
	assert_int_equal(zipClose(zf, NULL), ZIP_OK);
}

/* cnn.keras: Keras 3.13's model.save() layout (make-cnn-keras.py). */
static void test_keras_file_is_read_through_its_config_json(void **state)
{
	struct fixture *fx = *state;
	char copy[PATH_MAX + 16];
	size_t len;
	void *zip = testutil_read_file(fixture_path("cnn.keras"), &len);

	if (keras_model_load(&fx->km, fixture_path("cnn.keras"), fx->err) < 0)
		fail_msg("%s", fx->err);
	assert_tutorial_layers(&fx->km);
	assert_tutorial_compile(&fx->km.compile);
	if (keras_model_builtin(&fx->other, "cnn", fx->err) < 0)
		fail_msg("%s", fx->err);
	assert_int_equal(fx->km.json_len, fx->other.json_len);
	assert_memory_equal(fx->km.json, fx->other.json, fx->km.json_len);
	/* Told by its content, not its name. */
	snprintf(copy, sizeof(copy), "%s/model.json", fx->dir);
	testutil_write_file(copy, zip, len);
	keras_model_release(&fx->km);
	if (keras_model_load(&fx->km, copy, fx->err) < 0)
		fail_msg("%s", fx->err);
	assert_tutorial_layers(&fx->km);
	free(zip);
}

static void test_keras_file_without_config_json_is_refused(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX], want[PATH_MAX + ERR_LEN];

	snprintf(path, sizeof(path), "%s/weights.keras", fx->dir);
	write_zip(path, "metadata.json", "{}", 2);
	assert_int_equal(keras_model_load(&fx->km, path, fx->err), -1);
	snprintf(want, sizeof(want), "'%s': no member 'config.json' in the archive", path);
	assert_string_equal(fx->err, want);
}

static void test_damaged_keras_file_is_refused(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX], want[PATH_MAX + ERR_LEN];
	size_t len;
	unsigned char *zip = testutil_read_file(fixture_path("cnn.keras"), &len);
	unsigned char *local = memmem(zip + 4, len - 4, "PK\3\4", 4); /* config.json's header */
	size_t name_len, extra_len;

	assert_non_null(local);
	assert_memory_equal(local + 30, "config.json", 11);
	name_len = local[26] | local[27] << 8;
	extra_len = local[28] | local[29] << 8;
	local[30 + name_len + extra_len + 200] ^= 0x55;
	snprintf(path, sizeof(path), "%s/cnn.keras", fx->dir);
	testutil_write_file(path, zip, len);
	assert_int_equal(keras_model_load(&fx->km, path, fx->err), -1);
	snprintf(want, sizeof(want), "'%s': member 'config.json': damaged (", path);
	testutil_assert_contains(fx->err, want);
	free(zip);
}

/* A member whose header says more than a model may hold is refused before
 * it is inflated: 17 MiB of spaces deflate to a few kilobytes. */
static void test_keras_file_with_a_huge_config_json_is_refused_unread(void **state)
{
	struct fixture *fx = *state;
	size_t n = (size_t)17 << 20;
	char path[PATH_MAX], want[PATH_MAX + ERR_LEN];
	char *spaces = malloc(n);

	assert_non_null(spaces);
	memset(spaces, ' ', n);
	snprintf(path, sizeof(path), "%s/bomb.keras", fx->dir);
	write_zip(path, "config.json", spaces, n);
	free(spaces);
	assert_int_equal(keras_model_load(&fx->km, path, fx->err), -1);
	snprintf(want, sizeof(want),
	         "'%s': member 'config.json': 17825792 bytes, more than the 16777216 a model may "
	         "hold",
	         path);
	assert_string_equal(fx->err, want);
}

/* --- Files that are not model files --- */

static void test_load_refuses_devices_directories_and_oversized_files(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX], want[PATH_MAX + ERR_LEN];
	int fd;

	assert_int_equal(keras_model_load(&fx->km, "/dev/zero", fx->err), -1);
	testutil_assert_contains(fx->err, "'/dev/zero'");
	assert_int_equal(keras_model_load(&fx->km, fx->dir, fx->err), -1);
	testutil_assert_contains(fx->err, fx->dir);
	snprintf(path, sizeof(path), "%s/missing.json", fx->dir);
	assert_int_equal(keras_model_load(&fx->km, path, fx->err), -1);
	testutil_assert_contains(fx->err, path);

	snprintf(path, sizeof(path), "%s/big.json", fx->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)KERAS_MAX_FILE_BYTES + 1), 0);
	close(fd);
	assert_int_equal(keras_model_load(&fx->km, path, fx->err), -1);
	snprintf(want, sizeof(want), "'%s': 16777217 bytes, not a model file (1 byte to 16777216)",
	         path);
	assert_string_equal(fx->err, want);

	snprintf(path, sizeof(path), "%s/empty.json", fx->dir);
	testutil_write_file(path, "", 0);
	assert_int_equal(keras_model_load(&fx->km, path, fx->err), -1);
	snprintf(want, sizeof(want), "'%s': 0 bytes, not a model file (1 byte to 16777216)", path);
	assert_string_equal(fx->err, want);
}

static void test_invalid_json_says_where_and_keeps_nothing(void **state)
{
	struct fixture *fx = *state;
	const char text[] = "{\"class_name\": \"Sequential\", \"config\": {\"layers\": [}";

	assert_int_equal(keras_model_parse(&fx->km, text, sizeof(text) - 1, "test", fx->err), -1);
	assert_string_equal(fx->err, "test: invalid JSON near byte 51");
	assert_null(fx->km.json);
	assert_int_equal(keras_model_parse(&fx->km, "[1]", 3, "test", fx->err), -1);
	assert_string_equal(fx->err, "test: file: \"model\": [1] must be a Keras object");
}

/* --- Refusals --- */

/* refused/: Keras 3.13 files, but frozen-tf-keras.json (tf-keras 2.15). */
static const struct refused_file {
	const char *name, *want;
} REFUSED_FILES[] = {
    {"functional.json", "a Functional model is not supported (only Sequential)"},
    {"custom-layer.json",
     "model 'sequential': \"layers[2]\": {\"module\":\"my_layers\",\"class_name\":\"Scale\","
     "\"config\":{\"name\":\"scale\",\"tra... is not supported (a custom object: its "
     "\"module\" is not Keras')"},
    {"lstm.json", "layer 'lstm' (LSTM): layer class 'LSTM' is not supported (only InputLayer, "
                  "Conv2D, MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, Flatten, "
                  "Reshape, Dense, Dropout, Activation, BatchNormalization)"},
    {"mixed-precision.json",
     "layer 'dense' (Dense): \"dtype\": \"mixed_float16\" is not supported (only float32)"},
    {"lr-schedule.json", "compile_config: optimizer 'SGD': \"learning_rate\": ExponentialDecay is "
                         "not supported yet (learning-rate schedules)"},
    {"frozen-tf-keras.json", "layer 'conv2d' (Conv2D): \"trainable\": false is not supported "
                             "yet (frozen layers: every layer trains)"},
    {"custom-loss.json",
     "compile_config: \"loss\": {\"module\":null,\"class_name\":\"function\",\"config\":"
     "\"focal_loss\",\"registered... is not supported (a custom object: \"registered_name\" "
     "is not a Keras built-in)"},
};

static void test_refused_files_say_where_what_and_why(void **state)
{
	struct fixture *fx = *state;

	for (size_t i = 0; i < sizeof(REFUSED_FILES) / sizeof(REFUSED_FILES[0]); i++) {
		char rel[PATH_MAX], want[2 * PATH_MAX + ERR_LEN];
		const char *path;

		snprintf(rel, sizeof(rel), "refused/%s", REFUSED_FILES[i].name);
		path = fixture_path(rel);
		snprintf(want, sizeof(want), "'%s': %s", path, REFUSED_FILES[i].want);
		if (keras_model_load(&fx->km, path, fx->err) == 0)
			fail_msg("%s: accepted", REFUSED_FILES[i].name);
		assert_string_equal(fx->err, want);
		assert_null(fx->km.json);
	}
}

/* One substring of a fixture replaced, and the message it must give. */
struct edit {
	const char *from, *to, *want;
};

#define CONV   "test: layer 'conv2d' (Conv2D): "
#define DENSE1 "test: layer 'dense_1' (Dense): "
#define SGD    "test: compile_config: optimizer 'SGD': "
#define SCCE   "test: compile_config: loss 'SparseCategoricalCrossentropy': "

static const struct edit CNN_REFUSALS[] = {
    {"\"data_format\": \"channels_last\", \"dilation_rate\"",
     "\"data_format\": \"channels_first\", \"dilation_rate\"",
     CONV "\"data_format\": \"channels_first\" is not supported (only channels_last)"},
    {"\"dilation_rate\": [1, 1]", "\"dilation_rate\": [2, 2]",
     CONV "\"dilation_rate\": [2,2] is not supported (only 1)"},
    {"\"groups\": 1", "\"groups\": 2", CONV "\"groups\": 2 is not supported (only 1)"},
    {"\"padding\": \"valid\"", "\"padding\": \"causal\"",
     CONV "\"padding\": \"causal\" is not supported (only \"valid\" or \"same\")"},
    {"\"strides\": [1, 1]", "\"strides\": [0, 1]",
     CONV "\"strides\": [0,1] must be a whole number in [1, 1048576] or a list of two"},
    {"\"kernel_size\": [3, 3]", "\"kernel_size\": [3, 3, 3]",
     CONV "\"kernel_size\": [3,3,3] must be a whole number in [1, 1048576] or a list of two"},
    {"\"groups\": 1", "\"groups\": 1, \"mystery\": true",
     CONV "\"mystery\": true is not supported (an option mwj-worker does not know)"},
    {"\"activity_regularizer\": null",
     "\"activity_regularizer\": {\"module\": \"keras.regularizers\", \"class_name\": \"L2\", "
     "\"config\": {\"l2\": 0.01}, \"registered_name\": null}",
     CONV "\"activity_regularizer\": {\"module\":\"keras.regularizers\",\"class_name\":\"L2\","
          "\"config\":{\"l2\":0.01},\"r... is not supported (only null)"},
    {"\"groups\": 1, \"activation\": \"relu\", \"use_bias\": true, \"kernel_initializer\": "
     "{\"module\": \"keras.initializers\", \"class_name\": \"GlorotUniform\", \"config\": "
     "{\"seed\": "
     "null}, \"registered_name\": null}, \"bias_initializer\": {\"module\": "
     "\"keras.initializers\", "
     "\"class_name\": \"Zeros\", \"config\": {}, \"registered_name\": null}, "
     "\"kernel_regularizer\": "
     "null, \"bias_regularizer\": null, \"activity_regularizer\": null, \"kernel_constraint\": "
     "null",
     "\"groups\": 1, \"activation\": \"relu\", \"use_bias\": true, \"kernel_initializer\": "
     "{\"module\": \"keras.initializers\", \"class_name\": \"GlorotUniform\", \"config\": "
     "{\"seed\": "
     "null}, \"registered_name\": null}, \"bias_initializer\": {\"module\": "
     "\"keras.initializers\", "
     "\"class_name\": \"Zeros\", \"config\": {}, \"registered_name\": null}, "
     "\"kernel_regularizer\": "
     "null, \"bias_regularizer\": null, \"activity_regularizer\": null, \"kernel_constraint\": "
     "{\"module\": \"keras.constraints\", \"class_name\": \"NonNeg\", \"config\": {}, "
     "\"registered_name\": null}",
     CONV "\"kernel_constraint\": {\"module\":\"keras.constraints\",\"class_name\":\"NonNeg\","
          "\"config\":{},\"registe... is not supported (only null)"},
    {"\"name\": \"conv2d\", \"trainable\": true, \"dtype\": {\"module\": \"keras\", "
     "\"class_name\": "
     "\"DTypePolicy\", \"config\": {\"name\": \"float32\"}",
     "\"name\": \"conv2d\", \"trainable\": true, \"dtype\": {\"module\": \"keras\", "
     "\"class_name\": "
     "\"DTypePolicy\", \"config\": {\"name\": \"mixed_bfloat16\"}",
     CONV "\"dtype\": \"mixed_bfloat16\" is not supported (only float32)"},
    {"\"module\": \"keras.layers\", \"class_name\": \"Conv2D\"",
     "\"module\": \"keras.layers\", \"class_name\": \"Conv3D\"",
     "test: layer 'conv2d' (Conv3D): layer class 'Conv3D' is not supported (only InputLayer, "
     "Conv2D, MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, Flatten, Reshape, Dense, "
     "Dropout, Activation, BatchNormalization)"},
    {"\"name\": \"dense\", \"trainable\": true", "\"name\": \"dense\", \"trainable\": false",
     "test: layer 'dense' (Dense): \"trainable\": false is not supported yet (frozen layers: "
     "every layer trains)"},
    {"\"name\": \"sequential\", \"trainable\": true",
     "\"name\": \"sequential\", \"trainable\": false",
     "test: model 'sequential': \"trainable\": false is not supported yet (frozen layers: every "
     "layer trains)"},
    {"\"units\": 128, \"activation\": \"relu\"", "\"units\": 128, \"activation\": \"swish\"",
     "test: layer 'dense' (Dense): \"activation\": \"swish\" is not supported (only linear, relu, "
     "sigmoid, tanh, softmax, gelu, leaky_relu)"},
    {"\"units\": 10, \"activation\": \"linear\", \"use_bias\": true, \"kernel_initializer\": "
     "{\"module\": \"keras.initializers\", \"class_name\": \"GlorotUniform\"",
     "\"units\": 10, \"activation\": \"linear\", \"use_bias\": true, \"kernel_initializer\": "
     "{\"module\": \"keras.initializers\", \"class_name\": \"Orthogonal\"",
     DENSE1 "\"kernel_initializer\": {\"module\":\"keras.initializers\",\"class_name\":"
            "\"Orthogonal\",\"config\":{\"seed... is not supported (only Zeros, Ones, "
            "GlorotUniform, GlorotNormal, HeUniform, HeNormal, LecunUniform, LecunNormal, "
            "RandomNormal, RandomUniform, TruncatedNormal)"},
    {"\"units\": 10, \"activation\": \"linear\", \"use_bias\": true, \"kernel_initializer\": "
     "{\"module\": \"keras.initializers\", \"class_name\": \"GlorotUniform\", \"config\": "
     "{\"seed\": "
     "null}",
     "\"units\": 10, \"activation\": \"linear\", \"use_bias\": true, \"kernel_initializer\": "
     "{\"module\": \"keras.initializers\", \"class_name\": \"GlorotUniform\", \"config\": "
     "{\"seed\": "
     "{\"module\": \"keras.random\", \"class_name\": \"SeedGenerator\", \"config\": {\"seed\": "
     "1}}}",
     DENSE1 "kernel_initializer: \"seed\": {\"module\":\"keras.random\",\"class_name\":"
            "\"SeedGenerator\",\"config\":{\"seed\":1... is not supported (a seed is null or a "
            "whole number in [0, 2^53])"},
    {"\"bias_constraint\": null, \"quantization_config\": null}, \"registered_name\": null, "
     "\"build_config\": {\"input_shape\": [null, 128]}",
     "\"bias_constraint\": null, \"quantization_config\": null, \"lora_rank\": 4, "
     "\"lora_alpha\": 4}, \"registered_name\": null, \"build_config\": {\"input_shape\": [null, "
     "128]}",
     DENSE1 "\"lora_rank\": 4 is not supported (only null)"},
    {"\"units\": 10, ", "", DENSE1 "\"units\" is missing"},
    {"\"units\": 10, ", "\"units\": 0, ",
     DENSE1 "\"units\": 0 must be a whole number in [1, 1048576]"},
    {"\"name\": \"dense_1\"", "\"name\": \"dense\"",
     "test: layer 'dense' (Dense): the name of an earlier layer too (Keras requires unique "
     "names)"},
    {"\"target_shape\": [28, 28, 1]", "\"target_shape\": [784]",
     CONV "needs an input of rank 3 (height, width, channels), not 1"},
    {"\"target_shape\": [28, 28, 1]", "\"target_shape\": [-1, -1, 1]",
     "test: layer 'reshape' (Reshape): \"target_shape\": [-1,-1,1] must not hold more than one "
     "-1"},
    {"\"batch_shape\": [null, 28, 28]", "\"batch_shape\": [null, null, 28]",
     "test: layer 'input_layer' (InputLayer): \"batch_shape\": [null,null,28] is not supported "
     "(every axis of an example needs a size in [1, 1048576])"},
    {"\"batch_shape\": [null, 28, 28]", "\"batch_shape\": [null, 28, 28, 1, 1]",
     "test: layer 'input_layer' (InputLayer): \"batch_shape\": [null,28,28,1,1] is not supported "
     "(a batch axis and 1 to 3 axes of examples)"},
    {"\"dtype\": \"float32\", \"sparse\": false", "\"dtype\": \"uint8\", \"sparse\": false",
     "test: layer 'input_layer' (InputLayer): \"dtype\": \"uint8\" is not supported (only "
     "float32)"},
    {"\"sparse\": false", "\"sparse\": true",
     "test: layer 'input_layer' (InputLayer): \"sparse\": true is not supported (only false)"},
    {"\"registered_name\": null, \"build_config\": {\"input_shape\": [null, 28, 28]}, "
     "\"compile_config\"",
     "\"registered_name\": null, \"build_config\": {\"input_shape\": [null, 32, 32]}, "
     "\"compile_config\"",
     "test: model 'sequential': \"build_input_shape\": input shape (28, 28) does not match (32, "
     "32) of model 'sequential': build_config \"input_shape\""},
    {"\"clipnorm\": null", "\"clipnorm\": 1.0", SGD "\"clipnorm\": 1 is not supported (only null)"},
    {"\"clipvalue\": null", "\"clipvalue\": 0.5",
     SGD "\"clipvalue\": 0.5 is not supported (only null)"},
    {"\"global_clipnorm\": null", "\"global_clipnorm\": 1.0",
     SGD "\"global_clipnorm\": 1 is not supported (only null)"},
    {"\"use_ema\": false", "\"use_ema\": true",
     SGD "\"use_ema\": true is not supported (only false)"},
    {"\"gradient_accumulation_steps\": null", "\"gradient_accumulation_steps\": 4",
     SGD "\"gradient_accumulation_steps\": 4 is not supported (only null)"},
    {"\"loss_scale_factor\": null", "\"loss_scale_factor\": 128.0",
     SGD "\"loss_scale_factor\": 128 is not supported (only null)"},
    {"\"momentum\": 0.0", "\"momentum\": 1.5", SGD "\"momentum\": 1.5 must be a number in [0, 1]"},
    {"\"class_name\": \"SGD\"", "\"class_name\": \"Nadam\"",
     "test: compile_config: \"optimizer\": {\"module\":\"keras.optimizers\",\"class_name\":"
     "\"Nadam\",\"config\":{\"name\":\"SGD\"... is not supported (only SGD, Adam, AdamW, "
     "Adagrad, RMSprop)"},
    {"\"reduction\": \"sum_over_batch_size\"", "\"reduction\": \"sum\"",
     SCCE "\"reduction\": \"sum\" is not supported (only \"sum_over_batch_size\", or its "
          "synonyms \"mean\" and tf-keras' \"auto\")"},
    {"\"ignore_class\": null", "\"ignore_class\": 0",
     SCCE "\"ignore_class\": 0 is not supported (only null)"},
    {"\"metrics\": [\"accuracy\"]", "\"metrics\": [\"auc\"]",
     "test: compile_config: \"metrics[0]\": \"auc\" is not supported (only accuracy, "
     "sparse_categorical_accuracy, categorical_accuracy, binary_accuracy, mean_squared_error, "
     "mean_absolute_error)"},
    {"\"metrics\": [\"accuracy\"]", "\"metrics\": {\"dense_1\": [\"accuracy\"]}",
     "test: compile_config: \"metrics\": {\"dense_1\":[\"accuracy\"]} is not supported (a list of "
     "metrics: the model has one output)"},
    {"\"metrics\": [\"accuracy\"]",
     "\"metrics\": [{\"module\": \"keras.metrics\", \"class_name\": \"Accuracy\", \"config\": "
     "{\"name\": \"accuracy\", \"dtype\": \"float32\"}, \"registered_name\": null}]",
     "test: compile_config: \"metrics[0]\": {\"module\":\"keras.metrics\",\"class_name\":"
     "\"Accuracy\",\"config\":{\"name\":\"accu... is not supported (keras.metrics.Accuracy "
     "counts outputs equal to their targets; \"accuracy\" is what fits the loss)"},
    {"\"metrics\": [\"accuracy\"]", "\"metrics\": [\"acc\", \"acc\", \"mse\", \"mae\", \"acc\"]",
     "test: compile_config: \"metrics\": [\"acc\",\"acc\",\"mse\",\"mae\",\"acc\"] is not "
     "supported (at most 4 metrics)"},
    {"\"loss_weights\": null", "\"loss_weights\": [1.0]",
     "test: compile_config: \"loss_weights\": [1] is not supported (only null)"},
    {"\"weighted_metrics\": null", "\"weighted_metrics\": [\"accuracy\"]",
     "test: compile_config: \"weighted_metrics\": [\"accuracy\"] is not supported (only null)"},
    {"\"module\": \"keras.layers\", \"class_name\": \"Conv2D\"",
     "\"module\": \"my_layers\", \"class_name\": \"Conv2D\"",
     "test: model 'sequential': \"layers[2]\": {\"module\":\"my_layers\",\"class_name\":"
     "\"Conv2D\",\"config\":{\"name\":\"conv2d\",\"t... is not supported (a custom object: its "
     "\"module\" is not Keras')"},
    {"\"module\": \"keras.layers\", \"class_name\": \"Reshape\", \"config\": {\"name\": "
     "\"reshape\", \"trainable\": true, \"dtype\": {\"module\": \"keras\", \"class_name\": "
     "\"DTypePolicy\", \"config\": {\"name\": \"float32\"}, \"registered_name\": null}, "
     "\"target_shape\": [28, 28, 1]}, \"registered_name\": null",
     "\"module\": \"keras.layers\", \"class_name\": \"Reshape\", \"config\": {\"name\": "
     "\"reshape\", \"trainable\": true, \"dtype\": {\"module\": \"keras\", \"class_name\": "
     "\"DTypePolicy\", \"config\": {\"name\": \"float32\"}, \"registered_name\": null}, "
     "\"target_shape\": [28, 28, 1]}, \"registered_name\": \"Custom>Reshape\"",
     "test: model 'sequential': \"layers[1]\": {\"module\":\"keras.layers\",\"class_name\":"
     "\"Reshape\",\"config\":{\"name\":\"reshap... is not supported (a custom object: "
     "\"registered_name\" is not a Keras built-in)"},
};

static const struct edit EVERY_LAYER_REFUSALS[] = {
    {"\"noise_shape\": null", "\"noise_shape\": [null, 1]",
     "test: layer 'dropout' (Dropout): \"noise_shape\": [null,1] is not supported (only null)"},
    {"\"rate\": 0.25", "\"rate\": 1.0",
     "test: layer 'dropout' (Dropout): \"rate\": 1 must be a number in [0, 1)"},
    {"\"amsgrad\": false", "\"amsgrad\": true",
     "test: compile_config: optimizer 'Adam': \"amsgrad\": true is not supported (only false)"},
    {"\"label_smoothing\": 0.0", "\"label_smoothing\": 0.1",
     "test: compile_config: loss 'CategoricalCrossentropy': \"label_smoothing\": 0.1 is not "
     "supported (only 0)"},
    {"\"axis\": -1,\n", "\"axis\": 1,\n",
     "test: layer 'batch_normalization' (BatchNormalization): \"axis\": 1 is not supported (only "
     "the last axis: -1 or 3)"},
    {"\"synchronized\": false", "\"synchronized\": false, \"renorm\": true",
     "test: layer 'batch_normalization' (BatchNormalization): \"renorm\": true is not supported "
     "(only false)"},
    {"\"beta_1\": 0.85", "\"beta_1\": 1.0",
     "test: compile_config: optimizer 'Adam': \"beta_1\": 1 must be a number in [0, 1)"},
    {"\"keepdims\": true", "\"keepdims\": 1",
     "test: layer 'global_average_pooling2d' (GlobalAveragePooling2D): \"keepdims\": 1 must be "
     "true or false"},
    {"\"minval\": -0.1", "\"minval\": 0.5",
     "test: layer 'dense_1' (Dense): bias_initializer: \"minval\": 0.5 is not supported (more "
     "than maxval 0.2)"},
    {"\"stddev\": 0.02", "\"stddev\": -0.02",
     "test: layer 'conv2d' (Conv2D): bias_initializer: \"stddev\": -0.02 must be a number in [0, "
     "1e+06]"},
    {"\"seed\": 42", "\"seed\": -1",
     "test: layer 'dropout' (Dropout): \"seed\": -1 is not supported (a seed is null or a whole "
     "number in [0, 2^53])"},
    {"\"name\": \"flatten_1\"", "\"name\": \"flat\\ten\"",
     "test: layer 'flat?en' (Flatten): \"name\": \"flat\\ten\" must not hold control characters"},
};

static void run_edits(struct fixture *fx, const char *fixture, const struct edit *edits, size_t n)
{
	char *text = read_text(fixture);

	for (size_t i = 0; i < n; i++) {
		char *edited = replaced(text, edits[i].from, edits[i].to);

		parse_refused(&fx->km, edited, edits[i].want, fx->err);
		free(edited);
	}
	free(text);
}

static void test_refused_options_say_the_layer_the_key_and_the_value(void **state)
{
	struct fixture *fx = *state;

	run_edits(fx, tree_path("examples/models/cnn.json"), CNN_REFUSALS,
	          sizeof(CNN_REFUSALS) / sizeof(CNN_REFUSALS[0]));
	run_edits(fx, fixture_path("keras3-every-layer.json"), EVERY_LAYER_REFUSALS,
	          sizeof(EVERY_LAYER_REFUSALS) / sizeof(EVERY_LAYER_REFUSALS[0]));
}

static void test_model_shapes_that_are_not_a_stack_of_layers_are_refused(void **state)
{
	struct fixture *fx = *state;
	char text[64 * 1024];
	int n;

	parse_refused(
	    &fx->km,
	    "{\"class_name\": \"Sequential\", \"config\": {\"name\": \"s\", \"layers\": "
	    "[{\"class_name\": \"InputLayer\", \"config\": {\"batch_input_shape\": [null, "
	    "4]}}]}}",
	    "test: model 's': has no layers", fx->err);
	parse_refused(
	    &fx->km,
	    "{\"class_name\": \"Sequential\", \"config\": {\"name\": \"s\", \"layers\": "
	    "[{\"class_name\": \"Dense\", \"config\": {\"name\": \"d\", \"units\": 2}}, "
	    "{\"class_name\": \"InputLayer\", \"config\": {\"batch_shape\": [null, 4]}}]}}",
	    "test: layers[1] (InputLayer): an InputLayer is only the first layer", fx->err);
	parse_refused(&fx->km,
	              "{\"class_name\": \"Sequential\", \"config\": {\"name\": \"s\", \"layers\": "
	              "[{\"class_name\": \"Dense\", \"config\": {\"name\": \"d\", \"units\": 2}}, "
	              "{\"class_name\": \"Dense\", \"config\": {\"name\": \"e\", \"units\": 2, "
	              "\"batch_input_shape\": [null, 2]}}]}}",
	              "test: layer 'e' (Dense): \"batch_input_shape\": [null,2] is not supported "
	              "(only the first layer says the model's input)",
	              fx->err);
	parse_refused(&fx->km,
	              "{\"module\": \"keras\", \"class_name\": \"MyModel\", \"config\": {}, "
	              "\"registered_name\": null}",
	              "test: model class 'MyModel' is not supported (only Sequential)", fx->err);
	parse_refused(&fx->km, "{\"class_name\": \"Sequential\", \"config\": {\"name\": \"s\"}}",
	              "test: model 's': \"layers\" is missing", fx->err);

	/* One layer more than a plan holds. */
	n = snprintf(
	    text, sizeof(text),
	    "{\"class_name\": \"Sequential\", \"config\": {\"name\": \"s\", \"layers\": [");
	for (int i = 0; i <= KERAS_MAX_LAYERS; i++)
		n += snprintf(
		    text + n, sizeof(text) - n,
		    "%s{\"class_name\": \"Dense\", \"config\": {\"name\": \"d%d\", \"units\": "
		    "2}}",
		    i ? ", " : "", i);
	snprintf(text + n, sizeof(text) - n, "]}}");
	parse_refused(&fx->km, text, "test: model 's': more than 128 layers", fx->err);
}

/* --- What Keras also writes, and means the same --- */

static void test_defaults_keras_writes_other_ways_are_accepted(void **state)
{
	struct fixture *fx = *state;
	char *cnn = read_text(tree_path("examples/models/cnn.json"));
	char *pool = read_text(tree_path("examples/models/cnn-pool.json"));
	char *every = read_text(fixture_path("keras3-every-layer.json"));
	char *t;

	/* An int kernel_size, padding in capitals, a dtype by name. */
	t = replaced(cnn, "\"kernel_size\": [3, 3], \"strides\": [1, 1], \"padding\": \"valid\"",
	             "\"kernel_size\": 3, \"strides\": 2, \"padding\": \"SAME\"");
	parse_ok(&fx->km, t, fx->err);
	assert_conv(&fx->km.layers[1], "conv2d", 32, 3, 3, 2, 2, 1, KERAS_ACT_RELU, 1);
	keras_model_release(&fx->km);
	free(t);
	t = replaced(
	    cnn,
	    "\"name\": \"flatten\", \"trainable\": true, \"dtype\": {\"module\": \"keras\", "
	    "\"class_name\": \"DTypePolicy\", \"config\": {\"name\": \"float32\"}, "
	    "\"registered_name\": null}",
	    "\"name\": \"flatten\", \"trainable\": true, \"dtype\": \"float32\"");
	parse_ok(&fx->km, t, fx->err);
	keras_model_release(&fx->km);
	free(t);

	/* A fixed batch size in the input's shape. */
	t = replaced(cnn, "\"batch_shape\": [null, 28, 28]", "\"batch_shape\": [32, 28, 28]");
	parse_ok(&fx->km, t, fx->err);
	assert_int_equal(fx->km.in_rank, 2);
	keras_model_release(&fx->km);
	free(t);

	/* Pools: strides null are the pool size (BasePooling). */
	t = replaced(pool, "\"pool_size\": [2, 2], \"padding\": \"valid\", \"strides\": [2, 2]",
	             "\"pool_size\": 3, \"padding\": \"valid\", \"strides\": null");
	parse_ok(&fx->km, t, fx->err);
	assert_pool(&fx->km.layers[2], KERAS_MAX_POOLING2D, "max_pooling2d", "MaxPooling2D", 3, 3,
	            0);
	keras_model_release(&fx->km);
	free(t);

	/* BatchNormalization's last axis as tf-keras writes it, and as an int. */
	t = replaced(every, "\"axis\": -1,\n", "\"axis\": [\n3\n],\n");
	parse_ok(&fx->km, t, fx->err);
	keras_model_release(&fx->km);
	free(t);
	t = replaced(every, "\"axis\": -1,\n", "\"axis\": 3,\n");
	parse_ok(&fx->km, t, fx->err);
	keras_model_release(&fx->km);
	free(t);
	free(cnn);
	free(pool);
	free(every);
}

/* A layer's options in a minimal Keras 2 file: an InputLayer of (4,) and
 * one Dense(2, ...) whose extra options are opts. */
static void parse_dense(struct fixture *fx, const char *opts)
{
	char text[4096];

	snprintf(text, sizeof(text),
	         "{\"class_name\": \"Sequential\", \"config\": {\"name\": \"s\", \"layers\": "
	         "[{\"class_name\": \"InputLayer\", \"config\": {\"batch_shape\": [null, 4]}}, "
	         "{\"class_name\": \"Dense\", \"config\": {\"name\": \"d\", \"units\": 2%s%s}}]}}",
	         *opts ? ", " : "", opts);
	keras_model_release(&fx->km);
	parse_ok(&fx->km, text, fx->err);
	assert_int_equal(fx->km.nlayers, 1);
}

static void test_initializers_and_activations_by_name_take_keras_defaults(void **state)
{
	struct fixture *fx = *state;
	const struct keras_layer *l = &fx->km.layers[0];
	static const struct {
		const char *name;
		enum keras_init_kind kind;
		double a, b;
	} NAMES[] = {
	    {"zeros", KERAS_INIT_ZEROS, 0, 0},
	    {"zero", KERAS_INIT_ZEROS, 0, 0},
	    {"one", KERAS_INIT_ONES, 0, 0},
	    {"he_uniform", KERAS_INIT_HE_UNIFORM, 0, 0},
	    {"HeNormal", KERAS_INIT_HE_NORMAL, 0, 0},
	    {"glorot_normal", KERAS_INIT_GLOROT_NORMAL, 0, 0},
	    {"uniform", KERAS_INIT_RANDOM_UNIFORM, -0.05, 0.05},
	    {"normal", KERAS_INIT_RANDOM_NORMAL, 0.0, 0.05},
	    {"truncated_normal", KERAS_INIT_TRUNCATED_NORMAL, 0.0, 0.05},
	};
	char opts[256];

	/* Nothing said: Dense's defaults. */
	parse_dense(fx, "");
	assert_dense(l, "d", 2, KERAS_ACT_LINEAR);
	assert_glorot_zeros(l);
	for (size_t i = 0; i < sizeof(NAMES) / sizeof(NAMES[0]); i++) {
		snprintf(opts, sizeof(opts), "\"kernel_initializer\": \"%s\"", NAMES[i].name);
		parse_dense(fx, opts);
		assert_init(&l->kernel_init, NAMES[i].kind, NAMES[i].a, NAMES[i].b, 0, 0);
	}
	/* An object without config, as Keras 2 wrote some, and a shared one. */
	parse_dense(fx, "\"kernel_initializer\": {\"class_name\": \"RandomNormal\"}, "
	                "\"bias_initializer\": {\"class_name\": \"Ones\", \"config\": {}, "
	                "\"shared_object_id\": 1234}");
	assert_init(&l->kernel_init, KERAS_INIT_RANDOM_NORMAL, 0.0, 0.05, 0, 0);
	assert_init(&l->bias_init, KERAS_INIT_ONES, 0, 0, 0, 0);
	/* null: Layer.add_weight's glorot_uniform, for the bias too. */
	parse_dense(fx, "\"kernel_initializer\": null, \"bias_initializer\": null, \"activation\": "
	                "null, \"use_bias\": false");
	assert_init(&l->kernel_init, KERAS_INIT_GLOROT_UNIFORM, 0, 0, 0, 0);
	assert_init(&l->bias_init, KERAS_INIT_GLOROT_UNIFORM, 0, 0, 0, 0);
	assert_int_equal(l->act.kind, KERAS_ACT_LINEAR);
	assert_int_equal(l->use_bias, 0);
	parse_dense(fx, "\"activation\": {\"module\": \"keras.activations\", \"class_name\": "
	                "\"function\", \"config\": \"leaky_relu\", \"registered_name\": "
	                "\"leaky_relu\"}");
	assert_int_equal(l->act.kind, KERAS_ACT_LEAKY_RELU);
	assert_true(l->act.negative_slope == 0.2f);
	assert_string_equal(keras_activation_name(KERAS_ACT_LEAKY_RELU), "leaky_relu");
	assert_string_equal(keras_layer_kind_name(KERAS_GLOBAL_AVERAGE_POOLING2D),
	                    "GlobalAveragePooling2D");
}

/* --- The compile config --- */

/* A minimal model compiled as compile says (the compile_config's JSON). */
static void parse_compiled(struct fixture *fx, const char *compile)
{
	char text[8192];

	snprintf(
	    text, sizeof(text),
	    "{\"module\": \"keras\", \"class_name\": \"Sequential\", \"config\": {\"name\": "
	    "\"s\", \"layers\": [{\"class_name\": \"InputLayer\", \"config\": {\"batch_shape\": "
	    "[null, 4]}}, {\"class_name\": \"Dense\", \"config\": {\"name\": \"d\", \"units\": "
	    "2}}]}, \"registered_name\": null, \"compile_config\": %s}",
	    compile);
	keras_model_release(&fx->km);
	parse_ok(&fx->km, text, fx->err);
}

static const struct loss_case {
	const char *loss;
	enum loss_kind kind;
	int from_logits;
} LOSS_CASES[] = {
    {"\"sparse_categorical_crossentropy\"", LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0},
    {"\"categorical_crossentropy\"", LOSS_CATEGORICAL_CROSSENTROPY, 0},
    {"\"binary_crossentropy\"", LOSS_BINARY_CROSSENTROPY, 0},
    {"\"mse\"", LOSS_MEAN_SQUARED_ERROR, 0},
    {"\"mean_squared_error\"", LOSS_MEAN_SQUARED_ERROR, 0},
    {"\"mae\"", LOSS_MEAN_ABSOLUTE_ERROR, 0},
    {"\"mean_absolute_error\"", LOSS_MEAN_ABSOLUTE_ERROR, 0},
    {"{\"module\": \"keras.losses\", \"class_name\": \"function\", \"config\": "
     "\"binary_crossentropy\", \"registered_name\": \"binary_crossentropy\"}",
     LOSS_BINARY_CROSSENTROPY, 0},
    {"{\"module\": \"keras.losses\", \"class_name\": \"BinaryCrossentropy\", \"config\": "
     "{\"name\": \"binary_crossentropy\", \"reduction\": \"mean\", \"from_logits\": true, "
     "\"label_smoothing\": 0.0, \"axis\": -1}, \"registered_name\": null}",
     LOSS_BINARY_CROSSENTROPY, 1},
    {"{\"class_name\": \"SparseCategoricalCrossentropy\", \"config\": {\"reduction\": \"auto\", "
     "\"name\": \"sparse_categorical_crossentropy\", \"from_logits\": true}}",
     LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1},
    {"{\"module\": \"keras.losses\", \"class_name\": \"MeanAbsoluteError\", \"config\": {\"name\": "
     "\"mean_absolute_error\", \"reduction\": \"sum_over_batch_size\"}, \"registered_name\": "
     "null}",
     LOSS_MEAN_ABSOLUTE_ERROR, 0},
};

static void test_losses_map_from_names_functions_and_objects(void **state)
{
	struct fixture *fx = *state;
	char compile[2048];

	for (size_t i = 0; i < sizeof(LOSS_CASES) / sizeof(LOSS_CASES[0]); i++) {
		snprintf(compile, sizeof(compile), "{\"loss\": %s}", LOSS_CASES[i].loss);
		parse_compiled(fx, compile);
		assert_int_equal(fx->km.compile.has_loss, 1);
		assert_int_equal(fx->km.compile.loss.kind, LOSS_CASES[i].kind);
		assert_int_equal(fx->km.compile.loss.from_logits, LOSS_CASES[i].from_logits);
		assert_int_equal(fx->km.compile.has_optimizer, 0);
	}
	parse_compiled(fx, "{\"loss\": null, \"optimizer\": null, \"metrics\": null}");
	assert_int_equal(fx->km.compile.has_loss, 0);
	assert_int_equal(fx->km.compile.has_optimizer, 0);
	assert_int_equal(fx->km.compile.nmetrics, 0);
}

static void test_metrics_map_from_names_functions_and_objects(void **state)
{
	struct fixture *fx = *state;
	const enum metric_kind *m = fx->km.compile.metrics;

	parse_compiled(fx, "{\"metrics\": [\"accuracy\", \"acc\", \"sparse_categorical_accuracy\", "
	                   "\"categorical_accuracy\"]}");
	assert_int_equal(fx->km.compile.nmetrics, 4);
	assert_int_equal(m[0], METRIC_ACCURACY);
	assert_int_equal(m[1], METRIC_ACCURACY);
	assert_int_equal(m[2], METRIC_SPARSE_CATEGORICAL_ACCURACY);
	assert_int_equal(m[3], METRIC_CATEGORICAL_ACCURACY);
	parse_compiled(fx, "{\"metrics\": [\"binary_accuracy\", \"mse\", \"mean_absolute_error\", "
	                   "\"mean_squared_error\"]}");
	assert_int_equal(m[0], METRIC_BINARY_ACCURACY);
	assert_int_equal(m[1], METRIC_MEAN_SQUARED_ERROR);
	assert_int_equal(m[2], METRIC_MEAN_ABSOLUTE_ERROR);
	assert_int_equal(m[3], METRIC_MEAN_SQUARED_ERROR);
	parse_compiled(
	    fx,
	    "{\"metrics\": [{\"module\": \"keras.metrics\", \"class_name\": \"BinaryAccuracy\", "
	    "\"config\": {\"name\": \"binary_accuracy\", \"dtype\": \"float32\", \"threshold\": "
	    "0.5}, \"registered_name\": null}, {\"module\": \"keras.metrics\", \"class_name\": "
	    "\"SparseCategoricalAccuracy\", \"config\": {\"name\": "
	    "\"sparse_categorical_accuracy\", "
	    "\"dtype\": \"float32\"}, \"registered_name\": null}, {\"module\": \"keras.metrics\", "
	    "\"class_name\": \"function\", \"config\": \"mae\", \"registered_name\": \"mae\"}], "
	    "\"weighted_metrics\": []}");
	assert_int_equal(fx->km.compile.nmetrics, 3);
	assert_int_equal(m[0], METRIC_BINARY_ACCURACY);
	assert_int_equal(m[1], METRIC_SPARSE_CATEGORICAL_ACCURACY);
	assert_int_equal(m[2], METRIC_MEAN_ABSOLUTE_ERROR);
}

static void test_optimizers_by_name_take_keras_3_defaults(void **state)
{
	struct fixture *fx = *state;
	const struct optimizer_config *o = &fx->km.compile.optimizer;

	parse_compiled(fx, "{\"optimizer\": \"adam\"}");
	assert_int_equal(fx->km.compile.has_optimizer, 1);
	assert_int_equal(o->kind, OPT_ADAM);
	assert_true(o->learning_rate == 0.001);
	assert_true(o->beta_1 == 0.9);
	assert_true(o->beta_2 == 0.999);
	assert_true(o->epsilon == 1e-7);
	parse_compiled(fx, "{\"optimizer\": \"SGD\"}");
	assert_int_equal(o->kind, OPT_SGD);
	assert_true(o->learning_rate == 0.01); /* Keras' own, not mwj's --learning-rate */
	assert_true(o->momentum == 0.0);
	parse_compiled(fx, "{\"optimizer\": \"adamw\"}");
	assert_int_equal(o->kind, OPT_ADAMW);
	assert_true(o->weight_decay == 0.004);
	parse_compiled(fx, "{\"optimizer\": \"Adagrad\"}");
	assert_int_equal(o->kind, OPT_ADAGRAD);
	assert_true(o->initial_accumulator_value == 0.1);
	parse_compiled(fx, "{\"optimizer\": \"rmsprop\"}");
	assert_int_equal(o->kind, OPT_RMSPROP);
	assert_true(o->rho == 0.9);
	assert_int_equal(o->centered, 0);
}

static void test_optimizer_objects_carry_every_hyper_parameter(void **state)
{
	struct fixture *fx = *state;
	const struct optimizer_config *o = &fx->km.compile.optimizer;

	parse_compiled(fx, "{\"optimizer\": {\"module\": \"keras.optimizers\", \"class_name\": "
	                   "\"SGD\", \"config\": {\"name\": \"SGD\", \"learning_rate\": 0.05, "
	                   "\"weight_decay\": 0.0001, \"momentum\": 0.9, \"nesterov\": true}, "
	                   "\"registered_name\": null}}");
	assert_int_equal(o->kind, OPT_SGD);
	assert_true(o->learning_rate == 0.05);
	assert_true(o->weight_decay == 0.0001);
	assert_true(o->momentum == 0.9);
	assert_int_equal(o->nesterov, 1);
	parse_compiled(
	    fx, "{\"optimizer\": {\"class_name\": \"AdamW\", \"config\": {\"learning_rate\": "
	        "0.002, \"weight_decay\": 0.01, \"beta_1\": 0.8, \"beta_2\": 0.9, "
	        "\"epsilon\": 1e-06, \"amsgrad\": false, \"jit_compile\": true, "
	        "\"is_legacy_optimizer\": false}}}");
	assert_int_equal(o->kind, OPT_ADAMW);
	assert_true(o->learning_rate == 0.002);
	assert_true(o->weight_decay == 0.01);
	assert_true(o->beta_1 == 0.8);
	assert_true(o->beta_2 == 0.9);
	assert_true(o->epsilon == 1e-6);
	parse_compiled(fx,
	               "{\"optimizer\": {\"class_name\": \"Adagrad\", \"config\": "
	               "{\"learning_rate\": 0.1, \"initial_accumulator_value\": 0.5, \"epsilon\": "
	               "1e-05}}}");
	assert_int_equal(o->kind, OPT_ADAGRAD);
	assert_true(o->initial_accumulator_value == 0.5);
	assert_true(o->epsilon == 1e-5);
	parse_compiled(fx,
	               "{\"optimizer\": {\"class_name\": \"RMSprop\", \"config\": {\"rho\": 0.8, "
	               "\"momentum\": 0.5, \"epsilon\": 1e-07, \"centered\": true}}}");
	assert_int_equal(o->kind, OPT_RMSPROP);
	assert_true(o->learning_rate == 0.001);
	assert_true(o->rho == 0.8);
	assert_true(o->momentum == 0.5);
	assert_int_equal(o->centered, 1);
}

static void test_parse_keeps_the_json_it_was_given(void **state)
{
	struct fixture *fx = *state;
	/* Not NUL-terminated where it ends: the length says. */
	const char text[] = "{\"class_name\": \"Sequential\", \"config\": {\"layers\": "
	                    "[{\"class_name\": \"Flatten\", \"config\": {\"name\": \"f\"}}]}}  xyz";
	size_t len = sizeof(text) - 1 - 3;

	if (keras_model_parse(&fx->km, text, len, "test", fx->err) < 0)
		fail_msg("%s", fx->err);
	assert_int_equal(fx->km.json_len, len);
	assert_memory_equal(fx->km.json, text, len);
	assert_int_equal(fx->km.json[len], '\0');
	assert_int_equal(fx->km.in_rank, 0);
	assert_string_equal(fx->km.name, "sequential");
	keras_model_release(&fx->km);
	keras_model_release(&fx->km);
	assert_null(fx->km.json);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        test_builtin_cnn_is_the_tutorial_model_as_keras_3_writes_it, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_builtin_cnn_pool_pools_by_two_before_a_dense_of_64,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_builtin_names_are_listed_and_others_refused, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(
	        test_builtin_and_the_file_it_was_made_from_read_the_same, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_keras3_file_of_every_layer_reads_every_option,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_tf_keras_tutorial_takes_its_input_layers_batch_input_shape, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_keras2_file_takes_the_input_shape_from_its_first_layer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_keras_file_is_read_through_its_config_json, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_keras_file_without_config_json_is_refused, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_damaged_keras_file_is_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_keras_file_with_a_huge_config_json_is_refused_unread, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_load_refuses_devices_directories_and_oversized_files, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_invalid_json_says_where_and_keeps_nothing, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_refused_files_say_where_what_and_why, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(
	        test_refused_options_say_the_layer_the_key_and_the_value, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_model_shapes_that_are_not_a_stack_of_layers_are_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_defaults_keras_writes_other_ways_are_accepted,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_initializers_and_activations_by_name_take_keras_defaults, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_losses_map_from_names_functions_and_objects, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_metrics_map_from_names_functions_and_objects,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_optimizers_by_name_take_keras_3_defaults, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_optimizer_objects_carry_every_hyper_parameter,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_parse_keeps_the_json_it_was_given, setup,
	                                    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
