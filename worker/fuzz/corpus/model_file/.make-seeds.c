/* .make-seeds.c - writes the version-2 seeds of fuzz_model_file (the
 * files named v2-*) into a folder: valid files from model_file_save, and
 * files damaged one field each behind a right CRC. A dot file, so that
 * the replay skips it. Re-run after the format changes, from the
 * repository root, after `make build/obj/libmwjworker.a build/obj/libmwjcommon.a`:
 *   cc -std=c17 -D_GNU_SOURCE -Icommon $(for r in base optim nn data comm state \
 *     backend app; do printf -- '-Iworker/src/%s ' $r; done) \
 *     $(pkg-config --cflags libcjson) worker/fuzz/corpus/model_file/.make-seeds.c \
 *     build/obj/libmwjworker.a build/obj/libmwjcommon.a \
 *     $(pkg-config --libs openblas libcjson zlib libcrypto minizip) -lm -lpthread \
 *     -o /tmp/make-seeds && /tmp/make-seeds worker/fuzz/corpus/model_file
 * Byte 0 of a seed is fuzz_model_file's mode: 1 for the file without its
 * CRC (the target appends it), 0 for the file as it is.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bytes.h"
#include "crc32c.h"
#include "err.h"
#include "keras_model.h"
#include "model.h"
#include "model_file.h"

#define PREFIX_LEN 16

/* The seed models' layers (examples/models/cnn-pool.json) on side x side. */
#define CNN_POOL                                                                                   \
	"{\"module\":\"keras\",\"class_name\":\"Sequential\",\"config\":{\"name\":\"cnn-pool\","   \
	"\"layers\":[{\"module\":\"keras.layers\",\"class_name\":\"InputLayer\",\"config\":{"      \
	"\"batch_shape\":[null,%d,%d],\"name\":\"input_layer\"}},"                                 \
	"{\"module\":\"keras.layers\",\"class_name\":\"Reshape\",\"config\":{\"name\":"            \
	"\"reshape\","                                                                             \
	"\"target_shape\":[%d,%d,1]}},"                                                            \
	"{\"module\":\"keras.layers\",\"class_name\":\"Conv2D\",\"config\":{\"name\":\"conv2d\","  \
	"\"filters\":32,\"kernel_size\":[3,3],\"activation\":\"relu\"}},"                          \
	"{\"module\":\"keras.layers\",\"class_name\":\"MaxPooling2D\",\"config\":{"                \
	"\"name\":\"max_pooling2d\",\"pool_size\":[2,2]}},"                                        \
	"{\"module\":\"keras.layers\",\"class_name\":\"Flatten\",\"config\":{\"name\":"            \
	"\"flatten\"}},"                                                                           \
	"{\"module\":\"keras.layers\",\"class_name\":\"Dense\",\"config\":{\"name\":\"dense\","    \
	"\"units\":64,\"activation\":\"relu\"}},"                                                  \
	"{\"module\":\"keras.layers\",\"class_name\":\"Dense\",\"config\":{\"name\":\"dense_1\","  \
	"\"units\":10}}]}}"

/* Conv2D, BatchNormalization (4 channels: 8 floats of state), Dense. */
static const char BN[] =
    "{\"module\":\"keras\",\"class_name\":\"Sequential\",\"config\":{\"name\":\"bn\","
    "\"layers\":[{\"module\":\"keras.layers\",\"class_name\":\"InputLayer\",\"config\":{"
    "\"batch_shape\":[null,4,4,2],\"name\":\"input_layer\"}},"
    "{\"module\":\"keras.layers\",\"class_name\":\"Conv2D\",\"config\":{\"name\":\"conv2d\","
    "\"filters\":4,\"kernel_size\":[3,3]}},"
    "{\"module\":\"keras.layers\",\"class_name\":\"BatchNormalization\",\"config\":{"
    "\"name\":\"batch_normalization\",\"momentum\":0.9}},"
    "{\"module\":\"keras.layers\",\"class_name\":\"Flatten\",\"config\":{\"name\":\"flatten\"}},"
    "{\"module\":\"keras.layers\",\"class_name\":\"Dense\",\"config\":{\"name\":\"dense\","
    "\"units\":3,\"activation\":\"softmax\"}}]}}";

/* No parameters, 4 floats of state. */
static const char NORMALIZER[] =
    "{\"module\":\"keras\",\"class_name\":\"Sequential\",\"config\":{\"name\":\"norm\","
    "\"layers\":[{\"module\":\"keras.layers\",\"class_name\":\"InputLayer\",\"config\":{"
    "\"batch_shape\":[null,3,3,2],\"name\":\"input_layer\"}},"
    "{\"module\":\"keras.layers\",\"class_name\":\"BatchNormalization\",\"config\":{"
    "\"name\":\"batch_normalization\",\"center\":false,\"scale\":false}}]}}";

static const char CHANNELS_FIRST[] =
    "{\"module\":\"keras\",\"class_name\":\"Sequential\",\"config\":{\"name\":\"s\","
    "\"layers\":[{\"module\":\"keras.layers\",\"class_name\":\"InputLayer\",\"config\":{"
    "\"batch_shape\":[null,4,4,1],\"name\":\"input_layer\"}},"
    "{\"module\":\"keras.layers\",\"class_name\":\"Conv2D\",\"config\":{\"name\":\"conv2d\","
    "\"filters\":2,\"kernel_size\":[3,3],\"data_format\":\"channels_first\"}}]}}";

/* 98 parameters, and 10 GB of activations at a batch of 2: the file's
 * length vouches for the parameters only. */
static const char BIG_ACTIVATIONS[] =
    "{\"module\":\"keras\",\"class_name\":\"Sequential\",\"config\":{\"name\":\"big\","
    "\"layers\":[{\"module\":\"keras.layers\",\"class_name\":\"InputLayer\",\"config\":{"
    "\"batch_shape\":[null,4096,4096,1],\"name\":\"input_layer\"}},"
    "{\"module\":\"keras.layers\",\"class_name\":\"Conv2D\",\"config\":{\"name\":\"conv2d\","
    "\"filters\":24,\"kernel_size\":[1,1]}},"
    "{\"module\":\"keras.layers\",\"class_name\":\"GlobalAveragePooling2D\",\"config\":{"
    "\"name\":\"global_average_pooling2d\"}},"
    "{\"module\":\"keras.layers\",\"class_name\":\"Dense\",\"config\":{\"name\":\"dense\","
    "\"units\":2}}]}}";

static const struct loss_config SPARSE = {LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
static const struct loss_config CATEGORICAL = {LOSS_CATEGORICAL_CROSSENTROPY, 0};
static const enum metric_kind METRICS[] = {METRIC_ACCURACY, METRIC_MEAN_SQUARED_ERROR};

struct file {
	unsigned char *buf;
	size_t len;
};

static void parse(struct keras_model *km, const char *json)
{
	char err[ERR_LEN];

	if (keras_model_parse(km, json, strlen(json), "seed", err) < 0)
		die("%s", err);
}

static struct file read_all(const char *path)
{
	struct file f = {0};
	FILE *in = fopen(path, "rb");

	if (!in || fseek(in, 0, SEEK_END) < 0)
		die("open '%s'", path);
	f.len = (size_t)ftell(in);
	f.buf = xmalloc(f.len);
	rewind(in);
	if (fread(f.buf, 1, f.len, in) != f.len)
		die("read '%s'", path);
	fclose(in);
	return f;
}

/* The bytes model_file_save writes for km, its parameters from seed 1 and
 * its state, if any, distinct values. */
static struct file saved(const char *tmp, const char *json, const struct model_file_info *info)
{
	struct keras_model km = {0};
	char err[ERR_LEN], path[4096];
	struct model *m;

	parse(&km, json);
	m = model_new(&km, 2, 0, err);
	if (!m)
		die("%s", err);
	model_init_params(m, &km, 1);
	for (size_t i = 0; i < m->nstate; i++)
		m->state[i] = (float)(i + 2) / 7.0f;
	if (model_file_save(tmp, m, &km, info, err) < 0)
		die("%s", err);
	model_free(m);
	keras_model_release(&km);
	snprintf(path, sizeof(path), "%s/%s", tmp, MODEL_FILE_NAME);
	return read_all(path);
}

static cJSON *header(struct file f)
{
	cJSON *h =
	    cJSON_ParseWithLength((const char *)f.buf + PREFIX_LEN, bytes_get_le32(f.buf + 12));

	if (!h)
		die("header does not parse");
	return h;
}

/* f with header h (deleted here) and its body less the last drop floats,
 * the CRC fixed up. */
static struct file with_header(struct file f, cJSON *h, size_t drop)
{
	char *text = cJSON_PrintUnformatted(h);
	size_t old = bytes_get_le32(f.buf + 12), tlen = strlen(text);
	size_t body = f.len - PREFIX_LEN - old - 4 - drop * sizeof(float);
	struct file out = {xmalloc(PREFIX_LEN + tlen + body + 4), PREFIX_LEN + tlen + body + 4};

	memcpy(out.buf, f.buf, PREFIX_LEN);
	bytes_put_le32(out.buf + 12, (uint32_t)tlen);
	memcpy(out.buf + PREFIX_LEN, text, tlen);
	memcpy(out.buf + PREFIX_LEN + tlen, f.buf + PREFIX_LEN + old, body);
	bytes_put_le32(out.buf + out.len - 4, crc32c(out.buf, out.len - 4));
	free(text);
	cJSON_Delete(h);
	return out;
}

/* f with member name of the header (or of "trained", when in is that)
 * replaced by value, or removed when value is NULL. */
static struct file edited(struct file f, const char *in, const char *name, cJSON *value)
{
	cJSON *h = header(f), *o = in ? cJSON_GetObjectItemCaseSensitive(h, in) : h;

	if (!value)
		cJSON_DeleteItemFromObjectCaseSensitive(o, name);
	else if (cJSON_HasObjectItem(o, name))
		cJSON_ReplaceItemInObjectCaseSensitive(o, name, value);
	else
		cJSON_AddItemToObject(o, name, value);
	return with_header(f, h, 0);
}

/* Writes dir/name: the mode byte, then f, without its CRC in mode 1. Frees
 * f. */
static void emit(const char *dir, const char *name, int mode, struct file f)
{
	char path[4096];
	unsigned char m = (unsigned char)mode;
	FILE *out;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	out = fopen(path, "wb");
	if (!out || fwrite(&m, 1, 1, out) != 1 ||
	    fwrite(f.buf, 1, f.len - (mode & 1 ? 4 : 0), out) != f.len - (mode & 1 ? 4 : 0) ||
	    fclose(out) != 0)
		die("write '%s'", path);
	free(f.buf);
}

static struct file copy(struct file f)
{
	struct file c = {xmalloc(f.len), f.len};

	memcpy(c.buf, f.buf, f.len);
	return c;
}

/* f with json as its "keras" member, with the hash and parameter count of
 * that model right; with fit, the body cut to that model's parameters and
 * state (it must be smaller than f's). The model is planned, not built. */
static struct file with_keras(struct file f, const char *json, int fit)
{
	struct keras_model km = {0};
	struct model_size size;
	char err[ERR_LEN], hash[17];
	cJSON *h = header(f);
	size_t body = f.len - PREFIX_LEN - bytes_get_le32(f.buf + 12) - 4;

	parse(&km, json);
	if (model_plan(&km, 2, 0, &size, err) < 0)
		die("%s", err);
	snprintf(hash, sizeof(hash), "%016" PRIx64, size.arch_hash);
	cJSON_ReplaceItemInObjectCaseSensitive(h, "keras", cJSON_CreateString(km.json));
	cJSON_ReplaceItemInObjectCaseSensitive(h, "arch_hash", cJSON_CreateString(hash));
	cJSON_ReplaceItemInObjectCaseSensitive(h, "num_params",
	                                       cJSON_CreateNumber((double)size.nparams));
	cJSON_ReplaceItemInObjectCaseSensitive(h, "model_state",
	                                       cJSON_CreateNumber((double)size.nstate));
	keras_model_release(&km);
	return with_header(f, h, fit ? body / sizeof(float) - size.nparams - size.nstate : 0);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/make-seeds-XXXXXX", json[4096], path[4096];
	struct model_file_info info = {"sgd", 0.01, 32, 2, 3, 120, 7, &SPARSE, 1, METRICS, 0};
	struct file small, bn;
	cJSON *metrics;

	if (argc != 2 || !mkdtemp(tmp))
		die("usage: make-seeds <corpus folder>");
	snprintf(json, sizeof(json), CNN_POOL, 4, 4, 4, 4);
	small = saved(tmp, json, &info);
	bn = saved(tmp, BN, &info);
	emit(argv[1], "v2-cnn-pool-4x4-crc", 1, copy(small));
	emit(argv[1], "v2-cnn-pool-4x4-raw", 0, copy(small));
	emit(argv[1], "v2-bn-state-crc", 1, copy(bn));
	emit(argv[1], "v2-no-parameters-crc", 1, saved(tmp, NORMALIZER, &info));
	info.loss = NULL;
	emit(argv[1], "v2-no-loss-crc", 1, saved(tmp, json, &info));
	info = (struct model_file_info){"adam", 1e-3,         8, 1,       1,         9,
	                                3,      &CATEGORICAL, 2, METRICS, 1.0f / 255};
	emit(argv[1], "v2-two-metrics-rescale-crc", 1, saved(tmp, json, &info));

	emit(argv[1], "v2-keras-not-json", 1,
	     edited(small, NULL, "keras", cJSON_CreateString("{\"module\":")));
	emit(argv[1], "v2-keras-channels-first", 1,
	     edited(small, NULL, "keras", cJSON_CreateString(CHANNELS_FIRST)));
	snprintf(path, sizeof(path), CNN_POOL, 4096, 4096, 4096, 4096);
	emit(argv[1], "v2-keras-input-4096", 1,
	     edited(small, NULL, "keras", cJSON_CreateString(path)));
	emit(argv[1], "v2-keras-missing", 1, edited(small, NULL, "keras", NULL));
	snprintf(path, sizeof(path), CNN_POOL, 400, 400, 400, 400);
	emit(argv[1], "v2-large-model-short-file", 1, with_keras(small, path, 0));
	emit(argv[1], "v2-activations-10-gib", 1, with_keras(small, BIG_ACTIVATIONS, 1));
	emit(argv[1], "v2-arch-hash-wrong", 1,
	     edited(small, NULL, "arch_hash", cJSON_CreateString("0123456789abcdef")));
	emit(argv[1], "v2-model-state-wrong", 1,
	     edited(small, NULL, "model_state", cJSON_CreateNumber(8)));
	emit(argv[1], "v2-bn-state-short", 1, with_header(bn, header(bn), 1));
	emit(argv[1], "v2-loss-unknown", 1,
	     edited(bn, "trained", "loss", cJSON_CreateString("hinge")));
	metrics = cJSON_CreateArray();
	for (int i = 0; i < LOSS_MAX_METRICS + 1; i++)
		cJSON_AddItemToArray(metrics, cJSON_CreateString("accuracy"));
	emit(argv[1], "v2-metrics-too-many", 1, edited(bn, "trained", "metrics", metrics));
	metrics = cJSON_CreateArray();
	cJSON_AddItemToArray(metrics, cJSON_CreateString("auc"));
	emit(argv[1], "v2-metric-unknown", 1, edited(bn, "trained", "metrics", metrics));
	emit(argv[1], "v2-rescale-string", 1,
	     edited(bn, "trained", "rescale", cJSON_CreateString("1/255")));
	{
		struct file f = copy(small);
		bytes_put_le32(f.buf + 8, 3);
		bytes_put_le32(f.buf + f.len - 4, crc32c(f.buf, f.len - 4));
		emit(argv[1], "v2-version-3", 1, f);
		f = copy(small);
		f.buf[f.len / 2] ^= 0x10;
		emit(argv[1], "v2-crc-mismatch", 0, f);
		f = copy(small);
		bytes_put_le32(f.buf + 12, (uint32_t)f.len);
		emit(argv[1], "v2-header-length-past-end", 1, f);
	}
	free(small.buf);
	free(bn.buf);
	snprintf(path, sizeof(path), "%s/%s", tmp, MODEL_FILE_NAME);
	remove(path);
	remove(tmp);
	return 0;
}
