/* test_model_file.c - model.mwj: the bitwise round trip of parameters and
 * state, the header a tool can read without this code, what "trained"
 * gives back, the version-1 files of mwj 0.1, and every way a file can be
 * refused.
 *
 * Files are taken apart and put back together here from the format in
 * model_file.h, not through model_file.c, so that a damaged field reaches the
 * check meant for it: the CRC is fixed up after each edit, except where the
 * CRC is what is being tested. Each test gets its own mkdtemp directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bytes.h"
#include "crc32c.h"
#include "err.h"
#include "keras_model.h"
#include "loss.h"
#include "model.h"
#include "model_file.h"
#include "testutil.h"

#define PREFIX_LEN 16 /* magic, version, header length */
#define SIDE       12 /* input side of the small models the refusal tests use */
#define CLASSES    10

static const unsigned char MAGIC[8] = {'M', 'W', 'J', 'M', 'O', 'D', 'E', 'L'};

struct fixture {
	char dir[TESTUTIL_TMPDIR_LEN]; /* first, for testutil_fixture_setup() */
	char path[PATH_MAX];           /* dir/model.mwj */
	char err[ERR_LEN];
	struct keras_model km; /* what m was built from */
	struct model *m;
};

static const struct loss_config SPARSE_FROM_LOGITS = {LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
static const enum metric_kind ACCURACY[] = {METRIC_ACCURACY};

static const struct model_file_info INFO = {
    .optimizer = "sgd",
    .learning_rate = 0.001,
    .batch_size = 64,
    .workers = 1,
    .epochs = 2,
    .global_step = 1876,
    .seed = 42,
    .loss = &SPARSE_FROM_LOGITS,
    .nmetrics = 1,
    .metrics = ACCURACY,
};

/* A Keras 3 model with a batch normalisation layer, whose moving mean and
 * variance (4 channels each) are the model's state. */
static const char BN_KERAS[] =
    "{\"module\":\"keras\",\"class_name\":\"Sequential\",\"config\":{\"name\":\"bn\","
    "\"layers\":["
    "{\"module\":\"keras.layers\",\"class_name\":\"InputLayer\",\"config\":{"
    "\"batch_shape\":[null,6,6,2],\"name\":\"input_layer\"}},"
    "{\"module\":\"keras.layers\",\"class_name\":\"Conv2D\",\"config\":{"
    "\"name\":\"conv2d\",\"filters\":4,\"kernel_size\":[3,3]}},"
    "{\"module\":\"keras.layers\",\"class_name\":\"BatchNormalization\",\"config\":{"
    "\"name\":\"batch_normalization\",\"axis\":-1,\"momentum\":0.9,\"epsilon\":0.001}},"
    "{\"module\":\"keras.layers\",\"class_name\":\"Flatten\",\"config\":{\"name\":\"flatten\"}},"
    "{\"module\":\"keras.layers\",\"class_name\":\"Dense\",\"config\":{"
    "\"name\":\"dense\",\"units\":3,\"activation\":\"softmax\"}}]}}";

/* A model of no parameters, only state: a batch normalisation without
 * center and scale, over 2 channels. */
static const char NORMALIZER_KERAS[] =
    "{\"module\":\"keras\",\"class_name\":\"Sequential\",\"config\":{\"name\":\"norm\","
    "\"layers\":["
    "{\"module\":\"keras.layers\",\"class_name\":\"InputLayer\",\"config\":{"
    "\"batch_shape\":[null,3,3,2],\"name\":\"input_layer\"}},"
    "{\"module\":\"keras.layers\",\"class_name\":\"BatchNormalization\",\"config\":{"
    "\"name\":\"batch_normalization\",\"center\":false,\"scale\":false}}]}}";

static int setup(void **state)
{
	struct fixture *fx;

	if (testutil_fixture_setup(state, sizeof(*fx), "model-file") < 0)
		return -1;
	fx = *state;
	snprintf(fx->path, sizeof(fx->path), "%s/%s", fx->dir, MODEL_FILE_NAME);
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	model_free(fx->m);
	keras_model_release(&fx->km);
	return testutil_fixture_teardown(state);
}

/* Builds km for 2 examples a step, its parameters drawn from seed. */
static struct model *build(const struct keras_model *km, uint64_t seed)
{
	char err[ERR_LEN];
	struct model *m = model_new(km, 2, 0, err);

	if (m == NULL) {
		fail_msg("model_new '%s': %s", km->name, err);
		abort(); /* not reached; for clang-analyzer, which cannot tell */
	}
	model_init_params(m, km, seed);
	return m;
}

/* Makes the fixture's model anew: seed model name (testutil_keras) on
 * side x side inputs. */
static void new_model(struct fixture *fx, const char *name, int side, uint64_t seed)
{
	model_free(fx->m);
	keras_model_release(&fx->km);
	testutil_keras(&fx->km, name, side, CLASSES);
	fx->m = build(&fx->km, seed);
}

static void save(const struct fixture *fx, const char *dir, const struct model_file_info *info)
{
	char err[ERR_LEN];

	if (model_file_save(dir, fx->m, &fx->km, info, err) < 0)
		fail_msg("%s", err);
}

/* Saves a small cnn-pool model into the fixture's directory, replacing the
 * fixture's model if an earlier call made one. */
static void save_small(struct fixture *fx)
{
	new_model(fx, "cnn-pool", SIDE, 7);
	save(fx, fx->dir, &INFO);
}

/* save_small(), then the bytes of the file it wrote; the caller frees them. */
static unsigned char *save_small_and_read(struct fixture *fx, size_t *len)
{
	save_small(fx);
	return testutil_read_file(fx->path, len);
}

/* Recomputes the trailing CRC-32C over everything before it. */
static void fix_crc(unsigned char *buf, size_t len)
{
	bytes_put_le32(buf + len - 4, crc32c(buf, len - 4));
}

/* The JSON header of a file's bytes, parsed; the caller deletes it. */
static cJSON *parse_header(const unsigned char *buf, size_t len)
{
	uint32_t h = bytes_get_le32(buf + 12);
	cJSON *json;

	assert_true(PREFIX_LEN + (size_t)h + 4 <= len);
	json = cJSON_ParseWithLength((const char *)buf + PREFIX_LEN, h);
	assert_non_null(json);
	assert_true(cJSON_IsObject(json));
	return json;
}

/* Writes fx->path anew with header json and the body bytes (parameters and
 * state) of the old file, the last drop_floats left out, and a correct CRC. */
static void rewrite_with_header(struct fixture *fx, const cJSON *json, size_t drop_floats)
{
	size_t len, out_len, body_len;
	unsigned char *old = testutil_read_file(fx->path, &len), *out;
	char *text = cJSON_PrintUnformatted(json);
	uint32_t h = bytes_get_le32(old + 12);
	size_t tlen;

	assert_non_null(text);
	tlen = strlen(text);
	body_len = len - PREFIX_LEN - h - 4 - drop_floats * sizeof(float);
	out_len = PREFIX_LEN + tlen + body_len + 4;
	out = malloc(out_len);
	assert_non_null(out);
	memcpy(out, old, PREFIX_LEN);
	bytes_put_le32(out + 12, (uint32_t)tlen);
	memcpy(out + PREFIX_LEN, text, tlen);
	memcpy(out + PREFIX_LEN + tlen, old + PREFIX_LEN + h, body_len);
	fix_crc(out, out_len);
	testutil_write_file(fx->path, out, out_len);
	free(out);
	free(text);
	free(old);
}

/* Replaces one member of the saved file's header and fixes up the file. */
static void replace_header_member(struct fixture *fx, const char *name, cJSON *value)
{
	size_t len;
	unsigned char *buf = testutil_read_file(fx->path, &len);
	cJSON *json = parse_header(buf, len);

	assert_true(cJSON_ReplaceItemInObjectCaseSensitive(json, name, value));
	rewrite_with_header(fx, json, 0);
	cJSON_Delete(json);
	free(buf);
}

/* Loading must fail, name the file, say why and leave nothing behind. */
static void assert_load_refused(struct fixture *fx, const char *why)
{
	struct model_file f;

	fx->err[0] = '\0';
	if (model_file_load(fx->dir, 4, &f, fx->err) == 0) {
		model_file_release(&f);
		fail_msg("model_file_load accepted a file that should fail with '%s'", why);
	}
	assert_null(f.model);
	assert_null(f.km);
	testutil_assert_contains(fx->err, fx->path);
	testutil_assert_contains(fx->err, why);
}

/* Loads the model in dir into f, failing the test with the loader's
 * message if it refuses. */
static void load_ok(const char *dir, int max_batch, struct model_file *f)
{
	char err[ERR_LEN] = "";

	if (model_file_load(dir, max_batch, f, err) < 0)
		fail_msg("load '%s': %s", dir, err);
	assert_non_null(f->model);
	assert_non_null(f->km);
}

static void assert_same_model(const struct model *a, const struct model *b)
{
	assert_string_equal(a->name, b->name);
	assert_string_equal(a->desc, b->desc);
	assert_true(a->arch_hash == b->arch_hash);
	assert_int_equal(a->in_rank, b->in_rank);
	assert_memory_equal(a->in_shape, b->in_shape, sizeof(a->in_shape));
	assert_int_equal(a->in_len, b->in_len);
	assert_int_equal(a->out_len, b->out_len);
	assert_int_equal(a->nparams, b->nparams);
	assert_int_equal(a->nstate, b->nstate);
	assert_memory_equal(a->params, b->params, a->nparams * sizeof(float));
	if (a->nstate)
		assert_memory_equal(a->state, b->state, a->nstate * sizeof(float));
}

/* Both models predict the same outputs, bit for bit, for the same two
 * examples. */
static void assert_same_predictions(struct model *a, struct model *b)
{
	size_t n = 2 * a->in_len;
	float *x = malloc(n * sizeof(float));

	assert_non_null(x);
	for (size_t j = 0; j < n; j++)
		x[j] = (float)(j % 251) / 250.0f;
	model_forward(a, x, 2, NULL);
	model_forward(b, x, 2, NULL);
	assert_memory_equal(model_outputs(a), model_outputs(b), sizeof(float) * 2 * a->out_len);
	free(x);
}

static void test_save_then_load_restores_every_parameter_bitwise(void **state)
{
	struct fixture *fx = *state;
	static const char *const names[] = {"cnn", "cnn-pool"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct model_file back;

		new_model(fx, names[i], 28, 100 + i);
		save(fx, fx->dir, &INFO);
		load_ok(fx->dir, 3, &back);
		assert_same_model(fx->m, back.model);
		assert_int_equal(back.model->max_batch, 3);
		/* The architecture is the Keras JSON it was built from. */
		assert_string_equal(back.km->json, fx->km.json);
		assert_same_predictions(fx->m, back.model);
		model_file_release(&back);
	}
}

/* Values a text format or a float conversion would not carry through. */
static void test_round_trip_keeps_special_float_bit_patterns(void **state)
{
	struct fixture *fx = *state;
	static const uint32_t bits[] = {
	    0x80000000u, /* -0 */
	    0x00000001u, /* smallest subnormal */
	    0x807fffffu, /* largest negative subnormal */
	    0x7f7fffffu, /* FLT_MAX */
	    0xff800000u, /* -inf */
	    0x7fc12345u, /* quiet NaN with a payload */
	    0x3eaaaaabu, /* 1/3 */
	};
	struct model_file back;

	new_model(fx, "cnn-pool", SIDE, 3);
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		memcpy(&fx->m->params[i * 997 % fx->m->nparams], &bits[i], sizeof(float));
	save(fx, fx->dir, &INFO);
	load_ok(fx->dir, 1, &back);
	assert_same_model(fx->m, back.model);
	model_file_release(&back);
}

/* Batch normalisation's moving statistics are not parameters, but a model
 * predicts with them: they come back bit for bit, after the parameters. */
static void test_save_then_load_restores_batch_normalization_state_bitwise(void **state)
{
	struct fixture *fx = *state;
	struct model_file back;
	unsigned char *buf;
	size_t len;
	uint32_t h;
	cJSON *json;

	if (keras_model_parse(&fx->km, BN_KERAS, strlen(BN_KERAS), "BN_KERAS", fx->err) < 0)
		fail_msg("%s", fx->err);
	fx->m = build(&fx->km, 5);
	assert_int_equal(fx->m->nstate, 2 * 4);
	/* Distinct, and none of them the initial 0 or 1. */
	for (size_t i = 0; i < fx->m->nstate; i++)
		fx->m->state[i] = (float)(i + 2) / 7.0f;
	save(fx, fx->dir, &INFO);

	buf = testutil_read_file(fx->path, &len);
	h = bytes_get_le32(buf + 12);
	assert_int_equal(len,
	                 PREFIX_LEN + h + (fx->m->nparams + fx->m->nstate) * sizeof(float) + 4);
	assert_memory_equal(buf + PREFIX_LEN + h + fx->m->nparams * sizeof(float), fx->m->state,
	                    fx->m->nstate * sizeof(float));
	json = parse_header(buf, len);
	assert_true(testutil_json_number(json, "model_state") == (double)fx->m->nstate);

	load_ok(fx->dir, 2, &back);
	assert_same_model(fx->m, back.model);
	assert_same_predictions(fx->m, back.model);
	model_file_release(&back);
	cJSON_Delete(json);
	free(buf);
}

/* Keras saves a model without trainable weights; so does mwj, and reads
 * it back. */
static void test_save_then_load_restores_a_model_without_parameters(void **state)
{
	struct fixture *fx = *state;
	struct model_file back;

	if (keras_model_parse(&fx->km, NORMALIZER_KERAS, strlen(NORMALIZER_KERAS),
	                      "NORMALIZER_KERAS", fx->err) < 0)
		fail_msg("%s", fx->err);
	fx->m = build(&fx->km, 5);
	assert_int_equal(fx->m->nparams, 0);
	assert_int_equal(fx->m->nstate, 2 * 2);
	for (size_t i = 0; i < fx->m->nstate; i++)
		fx->m->state[i] = (float)(i + 2) / 7.0f;
	save(fx, fx->dir, &INFO);
	load_ok(fx->dir, 2, &back);
	assert_same_model(fx->m, back.model);
	assert_same_predictions(fx->m, back.model);
	model_file_release(&back);
}

static void test_header_records_the_model_and_how_it_was_trained(void **state)
{
	struct fixture *fx = *state;
	struct model_file_info info = INFO;
	unsigned char *buf;
	size_t len;
	uint32_t h;
	cJSON *json, *input, *trained, *metrics;
	char hash[17];

	info.optimizer = "adam";
	info.learning_rate = 0.0005;
	info.batch_size = 32;
	info.epochs = 3;
	info.global_step = 2811;
	info.seed = UINT64_MAX;
	info.rescale = 0.5f;
	new_model(fx, "cnn-pool", 28, 9);
	save(fx, fx->dir, &info);
	buf = testutil_read_file(fx->path, &len);

	assert_memory_equal(buf, MAGIC, sizeof(MAGIC));
	assert_int_equal(bytes_get_le32(buf + 8), 2);
	h = bytes_get_le32(buf + 12);
	assert_int_equal(len, PREFIX_LEN + h + fx->m->nparams * sizeof(float) + 4);
	assert_int_equal(bytes_get_le32(buf + len - 4), crc32c(buf, len - 4));
	assert_memory_equal(buf + PREFIX_LEN + h, fx->m->params, fx->m->nparams * sizeof(float));

	json = parse_header(buf, len);
	assert_string_equal(testutil_json_string(json, "format"), "mwj-model");
	assert_true(testutil_json_number(json, "version") == 2);
	assert_string_equal(testutil_json_string(json, "model"), "cnn-pool");
	assert_string_equal(testutil_json_string(json, "arch"), fx->m->desc);
	snprintf(hash, sizeof(hash), "%016" PRIx64, fx->m->arch_hash);
	assert_string_equal(testutil_json_string(json, "arch_hash"), hash);
	/* The input as the Keras file gives it: 28x28, reshaped inside. */
	input = cJSON_GetObjectItemCaseSensitive(json, "input");
	assert_true(cJSON_IsArray(input));
	assert_int_equal(cJSON_GetArraySize(input), 2);
	assert_true(cJSON_GetArrayItem(input, 0)->valuedouble == 28);
	assert_true(cJSON_GetArrayItem(input, 1)->valuedouble == 28);
	assert_true(testutil_json_number(json, "outputs") == CLASSES);
	assert_true(testutil_json_number(json, "num_params") == (double)fx->m->nparams);
	assert_true(testutil_json_number(json, "model_state") == 0);
	assert_string_equal(testutil_json_string(json, "dtype"), "float32");
	assert_string_equal(testutil_json_string(json, "keras"), fx->km.json);

	trained = cJSON_GetObjectItemCaseSensitive(json, "trained");
	assert_true(cJSON_IsObject(trained));
	assert_string_equal(testutil_json_string(trained, "optimizer"), "adam");
	assert_true(testutil_json_number(trained, "learning_rate") == 0.0005);
	assert_true(testutil_json_number(trained, "batch_size") == 32);
	assert_true(testutil_json_number(trained, "workers") == 1);
	assert_true(testutil_json_number(trained, "epochs") == 3);
	assert_true(testutil_json_number(trained, "global_step") == 2811);
	/* All 64 bits of the seed, which a JSON number would round. */
	assert_string_equal(testutil_json_string(trained, "seed"), "18446744073709551615");
	assert_true(testutil_json_number(trained, "rescale") == 0.5);
	assert_string_equal(testutil_json_string(trained, "loss"),
	                    "sparse_categorical_crossentropy");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(trained, "from_logits")));
	metrics = cJSON_GetObjectItemCaseSensitive(trained, "metrics");
	assert_true(cJSON_IsArray(metrics));
	assert_int_equal(cJSON_GetArraySize(metrics), 1);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(metrics, 0)), "accuracy");
	cJSON_Delete(json);
	free(buf);
}

/* evaluate scores a model with the loss and metrics it was trained with,
 * on inputs scaled as training scaled them. */
static void test_load_returns_the_loss_metrics_and_rescale_it_was_trained_with(void **state)
{
	struct fixture *fx = *state;
	static const struct loss_config loss = {LOSS_CATEGORICAL_CROSSENTROPY, 0};
	static const enum metric_kind metrics[] = {METRIC_CATEGORICAL_ACCURACY,
	                                           METRIC_MEAN_SQUARED_ERROR};
	struct model_file_info info = INFO;
	struct model_file back;
	float rescale = 1.0f / 255.0f;

	info.loss = &loss;
	info.nmetrics = 2;
	info.metrics = metrics;
	info.rescale = rescale;
	new_model(fx, "cnn-pool", SIDE, 4);
	save(fx, fx->dir, &info);
	load_ok(fx->dir, 1, &back);
	assert_int_equal(back.has_loss, 1);
	assert_int_equal(back.loss.kind, LOSS_CATEGORICAL_CROSSENTROPY);
	assert_int_equal(back.loss.from_logits, 0);
	assert_int_equal(back.nmetrics, 2);
	assert_int_equal(back.metrics[0], METRIC_CATEGORICAL_ACCURACY);
	assert_int_equal(back.metrics[1], METRIC_MEAN_SQUARED_ERROR);
	assert_memory_equal(&back.rescale, &rescale, sizeof(rescale));
	model_file_release(&back);
}

static void test_load_of_a_file_trained_without_a_loss_says_it_has_none(void **state)
{
	struct fixture *fx = *state;
	struct model_file_info info = INFO;
	struct model_file back;
	unsigned char *buf;
	size_t len;
	cJSON *json;

	info.loss = NULL;
	info.nmetrics = 0;
	info.metrics = NULL;
	new_model(fx, "cnn-pool", SIDE, 4);
	save(fx, fx->dir, &info);
	buf = testutil_read_file(fx->path, &len);
	json = parse_header(buf, len);
	assert_false(
	    cJSON_HasObjectItem(cJSON_GetObjectItemCaseSensitive(json, "trained"), "loss"));
	load_ok(fx->dir, 1, &back);
	assert_int_equal(back.has_loss, 0);
	assert_int_equal(back.nmetrics, 0);
	assert_true(back.rescale == 0.0f);
	assert_same_model(fx->m, back.model);
	model_file_release(&back);
	cJSON_Delete(json);
	free(buf);
}

/* The bytes of model.mwj as mwj 0.1 wrote it: version 1, the model by
 * name, its input and classes, and m's parameters. The caller frees them. */
static unsigned char *v1_file(const struct model *m, const char *name, const char *input,
                              int classes, size_t *len)
{
	char header[1024];
	int h = snprintf(header, sizeof(header),
	                 "{\"format\":\"mwj-model\",\"version\":1,\"model\":\"%s\",\"arch\":\"%s\","
	                 "\"arch_hash\":\"%016" PRIx64 "\",\"input\":%s,\"classes\":%d,"
	                 "\"num_params\":%zu,\"dtype\":\"float32\",\"trained\":{"
	                 "\"optimizer\":\"sgd\",\"learning_rate\":0.001,\"batch_size\":64,"
	                 "\"workers\":1,\"epochs\":2,\"global_step\":1876,\"seed\":\"42\"}}",
	                 name, m->desc, m->arch_hash, input, classes, m->nparams);
	unsigned char *buf;

	assert_true(h > 0 && (size_t)h < sizeof(header));
	*len = PREFIX_LEN + (size_t)h + m->nparams * sizeof(float) + 4;
	buf = malloc(*len);
	assert_non_null(buf);
	memcpy(buf, MAGIC, sizeof(MAGIC));
	bytes_put_le32(buf + 8, 1);
	bytes_put_le32(buf + 12, (uint32_t)h);
	memcpy(buf + PREFIX_LEN, header, (size_t)h);
	memcpy(buf + PREFIX_LEN + h, m->params, m->nparams * sizeof(float));
	fix_crc(buf, *len);
	return buf;
}

/* The fixture's model: the built-in name, the model a version-1 file of
 * that name holds. */
static void new_builtin(struct fixture *fx, const char *name, uint64_t seed)
{
	if (keras_model_builtin(&fx->km, name, fx->err) < 0)
		fail_msg("%s", fx->err);
	fx->m = build(&fx->km, seed);
}

/* A model trained by mwj 0.1 still evaluates: as the built-in model of its
 * name, with the loss and metric that version always trained with. */
static void test_load_reads_a_version_1_file_as_the_built_in_model(void **state)
{
	struct fixture *fx = *state;
	struct model_file back;
	unsigned char *buf;
	size_t len;

	new_builtin(fx, "cnn-pool", 11);
	/* The architecture string and hash of mwj 0.1's cnn-pool. */
	assert_string_equal(fx->m->desc, "input 28x28x1; conv2d 3x3x1->32 relu; maxpool 2x2; "
	                                 "dense 5408->64 relu; dense 64->10");
	buf = v1_file(fx->m, "cnn-pool", "[28,28,1]", 10, &len);
	testutil_write_file(fx->path, buf, len);
	load_ok(fx->dir, 2, &back);
	assert_same_model(fx->m, back.model);
	assert_string_equal(back.km->json, fx->km.json);
	assert_int_equal(back.has_loss, 1);
	assert_int_equal(back.loss.kind, LOSS_SPARSE_CATEGORICAL_CROSSENTROPY);
	assert_int_equal(back.loss.from_logits, 1);
	assert_int_equal(back.nmetrics, 1);
	assert_int_equal(back.metrics[0], METRIC_ACCURACY);
	assert_true(back.rescale == 0.0f);
	assert_same_predictions(fx->m, back.model);
	model_file_release(&back);
	free(buf);
}

/* mwj 0.1 could train its models on other inputs and class counts, which
 * the built-in Keras files do not describe: such a file is refused, saying
 * what to do, as is a name that was never a model. */
static void test_load_refuses_a_version_1_file_of_a_model_this_build_does_not_build(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		const char *name, *input;
		int classes;
		const char *why;
	} cases[] = {
	    {"cnn-pool", "[12,12,1]", 10,
	     "inputs other than 28x28x1, which this build does not "
	     "build: train it again"},
	    {"cnn", "[28,28,3]", 10, "model 'cnn' on inputs other than 28x28x1"},
	    {"cnn-pool", "[28,28]", 10, "inputs other than 28x28x1"},
	    {"cnn-pool", "[28,28,1]", 5,
	     "with 5 classes, which this build does not build: train "
	     "it again"},
	    {"resnet50", "[28,28,1]", 10, "unknown model 'resnet50'"},
	};

	new_builtin(fx, "cnn-pool", 11);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len;
		unsigned char *buf =
		    v1_file(fx->m, cases[i].name, cases[i].input, cases[i].classes, &len);

		testutil_write_file(fx->path, buf, len);
		assert_load_refused(fx, cases[i].why);
		free(buf);
	}
}

static void test_save_replaces_the_old_file_and_leaves_no_temporaries(void **state)
{
	struct fixture *fx = *state;
	struct model_file back;
	DIR *d;
	struct dirent *e;
	int files = 0;

	save_small(fx);
	new_model(fx, "cnn-pool", SIDE, 8);
	save(fx, fx->dir, &INFO);
	load_ok(fx->dir, 1, &back);
	assert_same_model(fx->m, back.model);
	d = opendir(fx->dir);
	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			files++;
	closedir(d);
	assert_int_equal(files, 1);
	model_file_release(&back);
}

static void test_save_creates_missing_directories(void **state)
{
	struct fixture *fx = *state;
	char dir[PATH_MAX];
	struct model_file back;

	new_model(fx, "cnn-pool", SIDE, 5);
	snprintf(dir, sizeof(dir), "%s/run/final", fx->dir);
	save(fx, dir, &INFO);
	load_ok(dir, 1, &back);
	assert_same_model(fx->m, back.model);
	model_file_release(&back);
}

/* Saves a small model, overwrites n bytes of its file at offset with bytes,
 * fixes up the CRC so that the damage reaches the check meant for it, and
 * asserts that loading is refused saying why. */
static void assert_patched_file_refused(struct fixture *fx, size_t offset, const void *bytes,
                                        size_t n, const char *why)
{
	size_t len;
	unsigned char *buf;

	buf = save_small_and_read(fx, &len);
	assert_true(offset + n <= len);
	memcpy(buf + offset, bytes, n);
	fix_crc(buf, len);
	testutil_write_file(fx->path, buf, len);
	assert_load_refused(fx, why);
	free(buf);
}

static void test_load_refuses_a_bad_magic(void **state)
{
	/* "MWJMODEX" */
	assert_patched_file_refused(*state, 7, "X", 1, "bad magic");
}

static void test_load_refuses_an_unknown_format_version(void **state)
{
	static const unsigned char three[4] = {3, 0, 0, 0}; /* little-endian */

	assert_patched_file_refused(
	    *state, 8, three, sizeof(three),
	    "unsupported model format version 3 (this build reads 1 and 2)");
}

/* Cut anywhere, the file is refused, naming the file; which check catches
 * it depends on what is left. */
static void test_load_refuses_a_truncated_file(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	unsigned char *buf;
	uint32_t h;

	buf = save_small_and_read(fx, &len);
	h = bytes_get_le32(buf + 12);
	const struct {
		size_t keep;
		const char *why;
	} cases[] = {
	    {0, "not an mwj model file"},
	    {7, "bad magic"},
	    {8, "truncated: 8 bytes, less than a header"},
	    {PREFIX_LEN + 3, "less than a header"},
	    {PREFIX_LEN + 4, "truncated: header claims"},
	    {PREFIX_LEN + h / 2, "truncated: header claims"},
	    {PREFIX_LEN + h + 3, "truncated: header claims"},
	    /* The header is whole: its length says what is missing, unread. */
	    {PREFIX_LEN + h + 4, "truncated: holds 0 bytes of parameters and state"},
	    {len / 2, "truncated: holds"},
	    {len - 4, "truncated: holds"},
	    {len - 1, "truncated: holds"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		testutil_write_file(fx->path, buf, cases[i].keep);
		assert_load_refused(fx, cases[i].why);
	}
	free(buf);
}

static void test_load_refuses_a_flipped_byte(void **state)
{
	struct fixture *fx = *state;
	struct model_file back;
	size_t len;
	unsigned char *buf;
	const unsigned char *keras;
	uint32_t h;

	buf = save_small_and_read(fx, &len);
	h = bytes_get_le32(buf + 12);
	keras = memmem(buf + PREFIX_LEN, h, "\"keras\":\"", 9);
	assert_non_null(keras);
	/* One bit in the parameters, in the header, in its Keras JSON, and in
	 * the CRC itself. */
	const size_t at[] = {len / 2, PREFIX_LEN + h / 8, (size_t)(keras - buf) + 100, len - 2};
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		buf[at[i]] ^= 0x10;
		testutil_write_file(fx->path, buf, len);
		assert_load_refused(fx, "checksum mismatch");
		buf[at[i]] ^= 0x10;
	}
	/* Flipped back, the same bytes load. */
	testutil_write_file(fx->path, buf, len);
	load_ok(fx->dir, 1, &back);
	model_file_release(&back);
	free(buf);
}

/* Saves a small model, replaces member name of its file's header with value
 * (which it takes over) and asserts that loading is refused saying why. */
static void assert_header_member_refused(struct fixture *fx, const char *name, cJSON *value,
                                         const char *why)
{
	save_small(fx);
	replace_header_member(fx, name, value);
	assert_load_refused(fx, why);
}

/* The architecture is the "keras" member: one that does not parse, or asks
 * for what this build does not do, is refused with what is wrong. */
static void test_load_refuses_a_keras_member_that_does_not_parse_or_is_unsupported(void **state)
{
	static const struct {
		const char *keras, *why;
	} cases[] = {
	    {"{\"module\":\"keras\",\"class_name\":\"Sequential\"", "its Keras JSON: invalid JSON"},
	    {"{\"module\":\"keras\",\"class_name\":\"Sequential\",\"config\":{\"name\":\"s\","
	     "\"layers\":[{\"module\":\"keras.layers\",\"class_name\":\"InputLayer\",\"config\":{"
	     "\"batch_shape\":[null,8,8,1],\"name\":\"input_layer\"}},"
	     "{\"module\":\"keras.layers\",\"class_name\":\"Conv2D\",\"config\":{"
	     "\"name\":\"conv2d\",\"filters\":2,\"kernel_size\":[3,3],"
	     "\"data_format\":\"channels_first\"}}]}}",
	     "layer 'conv2d' (Conv2D): \"data_format\": \"channels_first\" is not supported"},
	    {"{\"module\":\"keras\",\"class_name\":\"Sequential\",\"config\":{\"name\":\"s\","
	     "\"layers\":[{\"module\":\"keras.layers\",\"class_name\":\"InputLayer\",\"config\":{"
	     "\"batch_shape\":[null,8,8],\"name\":\"input_layer\"}},"
	     "{\"module\":\"keras.layers\",\"class_name\":\"LSTM\",\"config\":{"
	     "\"name\":\"lstm\",\"units\":4}}]}}",
	     "LSTM"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_header_member_refused(*state, "keras", cJSON_CreateString(cases[i].keras),
		                             cases[i].why);
	assert_header_member_refused(*state, "keras", cJSON_CreateNumber(1), "'keras'");
}

static void test_load_refuses_another_format_or_dtype(void **state)
{
	assert_header_member_refused(*state, "dtype", cJSON_CreateString("bfloat16"),
	                             "dtype 'bfloat16'");
	assert_header_member_refused(*state, "format", cJSON_CreateString("keras-h5"),
	                             "format 'keras-h5'");
}

/* A hostile Keras JSON asking for 4096x4096 inputs is refused with a
 * message, not by running out of memory: nothing is allocated for it. */
static void test_load_refuses_a_keras_member_with_an_absurd_input_shape(void **state)
{
	struct fixture *fx = *state;
	struct keras_model huge = {0};

	testutil_keras(&huge, "cnn-pool", 4096, CLASSES);
	save_small(fx);
	replace_header_member(fx, "keras", cJSON_CreateString(huge.json));
	testutil_limit_memory(256ll << 20);
	assert_load_refused(fx, "GiB");
	testutil_unlimit_memory();
	keras_model_release(&huge);
}

/* A header of a few kilobytes whose Keras JSON asks for 400x400 inputs,
 * with the hash and parameter count of that model right, over the
 * parameters of a small one: refused for its length before the gigabyte
 * or so that the model's buffers take is allocated (the fuzz target found
 * it building them first). */
static void test_load_checks_the_file_length_before_building_a_large_model(void **state)
{
	struct fixture *fx = *state;
	struct keras_model large = {0};
	struct model_size size;
	size_t len;
	unsigned char *buf;
	char hex[17], want[128];
	cJSON *json;
	long long before;

	testutil_keras(&large, "cnn-pool", 400, CLASSES);
	assert_int_equal(model_plan(&large, 4, 0, &size, fx->err), 0);
	assert_true(size.nparams * sizeof(float) > (256u << 20));
	buf = save_small_and_read(fx, &len);
	json = parse_header(buf, len);
	snprintf(hex, sizeof(hex), "%016" PRIx64, size.arch_hash);
	assert_true(
	    cJSON_ReplaceItemInObjectCaseSensitive(json, "keras", cJSON_CreateString(large.json)));
	assert_true(
	    cJSON_ReplaceItemInObjectCaseSensitive(json, "arch_hash", cJSON_CreateString(hex)));
	assert_true(cJSON_ReplaceItemInObjectCaseSensitive(
	    json, "num_params", cJSON_CreateNumber((double)size.nparams)));
	rewrite_with_header(fx, json, 0);
	snprintf(want, sizeof(want),
	         "holds %zu bytes of parameters and state, model 'cnn-pool' needs %zu",
	         fx->m->nparams * sizeof(float), size.nparams * sizeof(float));
	before = testutil_peak_rss();
	assert_load_refused(fx, want);
	assert_true(testutil_peak_rss() - before < (64ll << 20));
	cJSON_Delete(json);
	keras_model_release(&large);
	free(buf);
}

static void test_load_refuses_a_header_that_is_not_json(void **state)
{
	/* '{' becomes '[': the header no longer parses. */
	assert_patched_file_refused(*state, PREFIX_LEN, "[", 1, "header: invalid JSON");
}

static void test_load_refuses_an_architecture_hash_mismatch(void **state)
{
	assert_header_member_refused(*state, "arch_hash", cJSON_CreateString("0123456789abcdef"),
	                             "architecture hash 0123456789abcdef does not match");
}

/* The file holds exactly the model's parameters, but the header's counts
 * say otherwise: the header is wrong and must not be believed. */
static void test_load_refuses_num_params_or_state_that_disagree_with_the_model(void **state)
{
	struct fixture *fx = *state;
	char want[128];
	size_t n;

	save_small(fx);
	n = fx->m->nparams;
	snprintf(want, sizeof(want),
	         "'num_params' is %zu and 'model_state' 0 but model 'cnn-pool' has %zu parameters "
	         "and 0 state values",
	         n + 1, n);
	replace_header_member(fx, "num_params", cJSON_CreateNumber((double)n + 1));
	assert_load_refused(fx, want);

	save_small(fx);
	snprintf(want, sizeof(want), "'num_params' is %zu and 'model_state' 8 but", n);
	replace_header_member(fx, "model_state", cJSON_CreateNumber(8));
	assert_load_refused(fx, want);
}

static void test_load_refuses_a_file_length_that_disagrees_with_num_params(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	unsigned char *buf;
	cJSON *json;
	char want[128];

	buf = save_small_and_read(fx, &len);
	json = parse_header(buf, len);
	/* One float short, with a header and CRC that are otherwise right. */
	rewrite_with_header(fx, json, 1);
	snprintf(want, sizeof(want),
	         "holds %zu bytes of parameters and state, model 'cnn-pool' needs %zu",
	         (fx->m->nparams - 1) * sizeof(float), fx->m->nparams * sizeof(float));
	assert_load_refused(fx, want);
	cJSON_Delete(json);
	free(buf);
}

static void test_load_names_a_missing_file(void **state)
{
	struct fixture *fx = *state;

	assert_load_refused(fx, "No such file or directory");
}

static void test_load_refuses_an_oversized_header_length(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	unsigned char *buf;
	char want[96];

	buf = save_small_and_read(fx, &len);
	const uint32_t lengths[] = {UINT32_MAX, (uint32_t)(len - PREFIX_LEN - 4 + 1)};
	for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
		bytes_put_le32(buf + 12, lengths[i]);
		fix_crc(buf, len);
		testutil_write_file(fx->path, buf, len);
		snprintf(want, sizeof(want), "truncated: header claims %" PRIu32 " bytes",
		         lengths[i]);
		assert_load_refused(fx, want);
	}
	free(buf);
}

/* A version-1 header is a few hundred bytes: one that claims more than
 * 64 KiB is refused before it is read, even where the file is that long. */
static void test_load_refuses_a_version_1_header_longer_than_64_kib(void **state)
{
	struct fixture *fx = *state;
	size_t len = PREFIX_LEN + 65537 + 4;
	unsigned char *buf = calloc(1, len);

	assert_non_null(buf);
	memcpy(buf, MAGIC, sizeof(MAGIC));
	bytes_put_le32(buf + 8, 1);
	bytes_put_le32(buf + 12, 65537);
	fix_crc(buf, len);
	testutil_write_file(fx->path, buf, len);
	assert_load_refused(fx, "header claims 65537 bytes, more than the 65536 a header may have");
	free(buf);
}

/* A model file far longer than its header says (a sparse file of 512 MiB
 * behind a small model's header) is refused by its size alone: neither
 * read whole nor held in memory, as a 3 GB one once was. */
static void test_load_refuses_a_file_longer_than_its_header_without_reading_it(void **state)
{
	struct fixture *fx = *state;
	struct model_file f;
	long long read0, rss0;
	int rc;

	save_small(fx);
	assert_int_equal(truncate(fx->path, 512ll << 20), 0);
	read0 = testutil_bytes_read();
	rss0 = testutil_peak_rss();
	testutil_limit_memory(256ll << 20);
	fx->err[0] = '\0';
	rc = model_file_load(fx->dir, 4, &f, fx->err);
	testutil_unlimit_memory();
	assert_int_equal(rc, -1);
	assert_null(f.model);
	print_message("    %s\n", fx->err);
	testutil_assert_contains(fx->err, fx->path);
	testutil_assert_contains(fx->err, "bytes of parameters and state, model 'cnn-pool' needs");
	assert_true(testutil_bytes_read() - read0 < (1 << 20));
	assert_true(testutil_peak_rss() - rss0 < (64ll << 20));
}

/* /dev/zero or a FIFO where model.mwj should be is refused at once, not
 * read until a 4 GiB limit. */
static void test_load_refuses_what_is_not_a_regular_file(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(symlink("/dev/zero", fx->path), 0);
	testutil_limit_memory(256ll << 20);
	assert_load_refused(fx, "not a regular file");
	testutil_unlimit_memory();
	assert_int_equal(unlink(fx->path), 0);
	assert_int_equal(mkfifo(fx->path, 0600), 0);
	assert_load_refused(fx, "not a regular file");
	assert_int_equal(unlink(fx->path), 0);
	assert_int_equal(mkdir(fx->path, 0700), 0);
	assert_load_refused(fx, "not a regular file");
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_save_then_load_restores_every_parameter_bitwise),
	    TEST(test_round_trip_keeps_special_float_bit_patterns),
	    TEST(test_save_then_load_restores_batch_normalization_state_bitwise),
	    TEST(test_save_then_load_restores_a_model_without_parameters),
	    TEST(test_header_records_the_model_and_how_it_was_trained),
	    TEST(test_load_returns_the_loss_metrics_and_rescale_it_was_trained_with),
	    TEST(test_load_of_a_file_trained_without_a_loss_says_it_has_none),
	    TEST(test_load_reads_a_version_1_file_as_the_built_in_model),
	    TEST(test_load_refuses_a_version_1_file_of_a_model_this_build_does_not_build),
	    TEST(test_save_replaces_the_old_file_and_leaves_no_temporaries),
	    TEST(test_save_creates_missing_directories),
	    TEST(test_load_refuses_a_bad_magic),
	    TEST(test_load_refuses_an_unknown_format_version),
	    TEST(test_load_refuses_a_truncated_file),
	    TEST(test_load_refuses_a_flipped_byte),
	    TEST(test_load_refuses_a_keras_member_that_does_not_parse_or_is_unsupported),
	    TEST(test_load_refuses_a_header_that_is_not_json),
	    TEST(test_load_refuses_another_format_or_dtype),
	    TEST(test_load_refuses_a_keras_member_with_an_absurd_input_shape),
	    TEST(test_load_checks_the_file_length_before_building_a_large_model),
	    TEST(test_load_refuses_an_architecture_hash_mismatch),
	    TEST(test_load_refuses_num_params_or_state_that_disagree_with_the_model),
	    TEST(test_load_refuses_a_file_length_that_disagrees_with_num_params),
	    TEST(test_load_names_a_missing_file),
	    TEST(test_load_refuses_an_oversized_header_length),
	    TEST(test_load_refuses_a_version_1_header_longer_than_64_kib),
	    TEST(test_load_refuses_a_file_longer_than_its_header_without_reading_it),
	    TEST(test_load_refuses_what_is_not_a_regular_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
