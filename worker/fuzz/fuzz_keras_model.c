/* fuzz_keras_model.c - a libFuzzer target for the Keras model reader
 * (keras_model.h): model.to_json() text, a .keras zip, or any file that
 * `mwj-worker --model-file` may be pointed at.
 *
 * Input: byte 0 picks the mode, the rest is the file.
 *   0  the text, to keras_model_parse
 *   1  the bytes as a file, to keras_model_load (told JSON or zip by its
 *      content, so that mutations reach minizip)
 *   2  the text as config.json in a stored zip with a right CRC, to
 *      keras_model_load, so that mutations reach the parser through the
 *      .keras path
 * Checked beyond "no crash": a refusal says why, starting with what names
 * the file, and leaves the struct zeroed; an accepted model keeps every
 * bound keras_model.h promises (layer count, ranks, sizes, names unique
 * and printable, one -1 at most in a Reshape, rates and optimizer
 * hyper-parameters in range), keeps the text it read, and reads back from
 * that text to the same plan.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "bytes.h"
#include "err.h"
#include "fuzz/harness.h"
#include "keras_model.h"
#include "keras_read.h"

#define MODE_PARSE 0
#define MODE_FILE  1
#define MODE_ZIP   2

static int printable(const char *s, size_t len)
{
	size_t n = strnlen(s, len);

	if (n == 0 || n == len)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

static int dim_ok(int d)
{
	return d >= 1 && d <= KERAS_MAX_DIM;
}

static void check_init(const struct keras_init *i)
{
	FUZZ_CHECK(i->kind >= KERAS_INIT_ZEROS && i->kind <= KERAS_INIT_TRUNCATED_NORMAL);
	FUZZ_CHECK(i->has_seed == 0 || i->has_seed == 1);
	if (i->kind == KERAS_INIT_RANDOM_UNIFORM)
		FUZZ_CHECK(i->a <= i->b);
	if (i->kind == KERAS_INIT_RANDOM_NORMAL || i->kind == KERAS_INIT_TRUNCATED_NORMAL)
		FUZZ_CHECK(i->b >= 0);
}

static void check_layer(const struct keras_layer *l)
{
	int unknown = 0;

	FUZZ_CHECK(l->kind >= KERAS_CONV2D && l->kind <= KERAS_BATCH_NORMALIZATION);
	FUZZ_CHECK(printable(l->name, sizeof(l->name)));
	FUZZ_CHECK(memchr(l->class_name, '\0', sizeof(l->class_name)) != NULL);
	FUZZ_CHECK(l->act.kind >= KERAS_ACT_LINEAR && l->act.kind <= KERAS_ACT_LEAKY_RELU);
	check_init(&l->kernel_init);
	check_init(&l->bias_init);
	switch (l->kind) {
	case KERAS_CONV2D:
		FUZZ_CHECK(dim_ok(l->units));
		/* fall through */
	case KERAS_MAX_POOLING2D:
	case KERAS_AVERAGE_POOLING2D:
		for (int i = 0; i < 2; i++)
			FUZZ_CHECK(dim_ok(l->kernel[i]) && dim_ok(l->strides[i]));
		break;
	case KERAS_DENSE:
		FUZZ_CHECK(dim_ok(l->units));
		break;
	case KERAS_RESHAPE:
		FUZZ_CHECK(l->target_rank >= 1 && l->target_rank <= KERAS_MAX_RANK);
		for (int i = 0; i < l->target_rank; i++) {
			FUZZ_CHECK(l->target[i] == -1 || dim_ok(l->target[i]));
			unknown += l->target[i] == -1;
		}
		FUZZ_CHECK(unknown <= 1);
		break;
	case KERAS_DROPOUT:
		FUZZ_CHECK(l->rate >= 0 && l->rate < 1);
		break;
	case KERAS_BATCH_NORMALIZATION:
		FUZZ_CHECK(l->momentum >= 0 && l->momentum <= 1 && l->epsilon > 0);
		check_init(&l->beta_init);
		check_init(&l->gamma_init);
		check_init(&l->moving_mean_init);
		check_init(&l->moving_variance_init);
		break;
	default:
		break;
	}
}

static void check_accepted(const struct keras_model *km)
{
	const struct keras_compile *c = &km->compile;
	char err[ERR_LEN];

	FUZZ_CHECK(km->keras_version == 2 || km->keras_version == 3);
	FUZZ_CHECK(printable(km->name, sizeof(km->name)));
	FUZZ_CHECK(km->in_rank >= 0 && km->in_rank <= KERAS_MAX_RANK);
	for (int i = 0; i < km->in_rank; i++)
		FUZZ_CHECK(dim_ok(km->in_shape[i]));
	FUZZ_CHECK(km->nlayers >= 1 && km->nlayers <= KERAS_MAX_LAYERS);
	for (int i = 0; i < km->nlayers; i++) {
		check_layer(&km->layers[i]);
		for (int j = 0; j < i; j++)
			FUZZ_CHECK(strcmp(km->layers[i].name, km->layers[j].name) != 0);
	}
	FUZZ_CHECK(c->nmetrics >= 0 && c->nmetrics <= LOSS_MAX_METRICS);
	for (int i = 0; i < c->nmetrics; i++)
		FUZZ_CHECK(c->metrics[i] >= METRIC_ACCURACY &&
		           c->metrics[i] <= METRIC_MEAN_ABSOLUTE_ERROR);
	if (c->has_loss)
		FUZZ_CHECK(c->loss.kind >= LOSS_SPARSE_CATEGORICAL_CROSSENTROPY &&
		           c->loss.kind <= LOSS_MEAN_ABSOLUTE_ERROR);
	if (c->has_optimizer)
		FUZZ_CHECK(optimizer_config_check(&c->optimizer, err) == 0);
	FUZZ_CHECK(km->json != NULL && km->json[km->json_len] == '\0');
}

static int same_init(const struct keras_init *a, const struct keras_init *b)
{
	return a->kind == b->kind && a->a == b->a && a->b == b->b && a->has_seed == b->has_seed &&
	       a->seed == b->seed;
}

static int same_layer(const struct keras_layer *a, const struct keras_layer *b)
{
	return a->kind == b->kind && strcmp(a->name, b->name) == 0 &&
	       strcmp(a->class_name, b->class_name) == 0 && a->act.kind == b->act.kind &&
	       a->act.negative_slope == b->act.negative_slope &&
	       a->act.approximate == b->act.approximate && a->units == b->units &&
	       memcmp(a->kernel, b->kernel, sizeof(a->kernel)) == 0 &&
	       memcmp(a->strides, b->strides, sizeof(a->strides)) == 0 && a->same == b->same &&
	       a->use_bias == b->use_bias && same_init(&a->kernel_init, &b->kernel_init) &&
	       same_init(&a->bias_init, &b->bias_init) && a->target_rank == b->target_rank &&
	       memcmp(a->target, b->target, sizeof(a->target)) == 0 && a->keepdims == b->keepdims &&
	       a->rate == b->rate && a->has_seed == b->has_seed && a->seed == b->seed &&
	       a->momentum == b->momentum && a->epsilon == b->epsilon && a->center == b->center &&
	       a->scale == b->scale && a->synchronized == b->synchronized &&
	       same_init(&a->beta_init, &b->beta_init) &&
	       same_init(&a->gamma_init, &b->gamma_init) &&
	       same_init(&a->moving_mean_init, &b->moving_mean_init) &&
	       same_init(&a->moving_variance_init, &b->moving_variance_init);
}

static int same_compile(const struct keras_compile *a, const struct keras_compile *b)
{
	const struct optimizer_config *p = &a->optimizer, *q = &b->optimizer;

	return a->has_loss == b->has_loss && a->has_optimizer == b->has_optimizer &&
	       a->loss.kind == b->loss.kind && a->loss.from_logits == b->loss.from_logits &&
	       a->nmetrics == b->nmetrics &&
	       memcmp(a->metrics, b->metrics, sizeof(a->metrics[0]) * (size_t)a->nmetrics) == 0 &&
	       p->kind == q->kind && p->learning_rate == q->learning_rate &&
	       p->momentum == q->momentum && p->nesterov == q->nesterov && p->beta_1 == q->beta_1 &&
	       p->beta_2 == q->beta_2 && p->epsilon == q->epsilon &&
	       p->weight_decay == q->weight_decay &&
	       p->initial_accumulator_value == q->initial_accumulator_value && p->rho == q->rho &&
	       p->centered == q->centered;
}

/* The text the model kept reads back to the same plan. */
static void check_reread(const struct keras_model *km)
{
	static struct keras_model back;
	char err[ERR_LEN];

	FUZZ_CHECK(keras_model_parse(&back, km->json, km->json_len, "again", err) == 0);
	FUZZ_CHECK(back.nlayers == km->nlayers && back.in_rank == km->in_rank);
	FUZZ_CHECK(memcmp(back.in_shape, km->in_shape, sizeof(km->in_shape)) == 0);
	FUZZ_CHECK(strcmp(back.name, km->name) == 0 && back.keras_version == km->keras_version);
	for (int i = 0; i < km->nlayers; i++)
		FUZZ_CHECK(same_layer(&back.layers[i], &km->layers[i]));
	FUZZ_CHECK(same_compile(&back.compile, &km->compile));
	keras_model_release(&back);
}

static void put_le16(unsigned char *p, unsigned v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
}

/* A zip of one stored member, config.json, holding data: local header,
 * data, central directory, end record. The caller frees it. */
static unsigned char *stored_zip(const uint8_t *data, size_t size, size_t *len)
{
	static const char name[] = "config.json";
	const unsigned nlen = sizeof(name) - 1;
	uint32_t crc = (uint32_t)crc32(0L, data, (uInt)size);
	size_t local = 30 + nlen, central = 46 + nlen;
	unsigned char *z = xcalloc(1, local + size + central + 22);
	unsigned char *c = z + local + size, *e = c + central;

	bytes_put_le32(z, 0x04034b50); /* "PK\3\4" */
	put_le16(z + 4, 10);
	bytes_put_le32(z + 14, crc);
	bytes_put_le32(z + 18, (uint32_t)size);
	bytes_put_le32(z + 22, (uint32_t)size);
	put_le16(z + 26, nlen);
	memcpy(z + 30, name, nlen);
	memcpy(z + local, data, size);
	bytes_put_le32(c, 0x02014b50); /* "PK\1\2" */
	put_le16(c + 4, 20);
	put_le16(c + 6, 10);
	bytes_put_le32(c + 16, crc);
	bytes_put_le32(c + 20, (uint32_t)size);
	bytes_put_le32(c + 24, (uint32_t)size);
	put_le16(c + 28, nlen);
	memcpy(c + 46, name, nlen);
	bytes_put_le32(e, 0x06054b50); /* "PK\5\6" */
	put_le16(e + 8, 1);
	put_le16(e + 10, 1);
	bytes_put_le32(e + 12, (uint32_t)central);
	bytes_put_le32(e + 16, (uint32_t)(local + size));
	*len = local + size + central + 22;
	return z;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct keras_model km;
	char err[ERR_LEN] = "", what[ERR_LEN];
	unsigned char *zip = NULL;
	size_t len;
	int rc;

	if (size < 1 || data[0] > MODE_ZIP)
		return 0;
	if (data[0] == MODE_PARSE) {
		snprintf(what, sizeof(what), "fuzz");
		rc = keras_model_parse(&km, (const char *)data + 1, size - 1, what, err);
		if (rc == 0)
			FUZZ_CHECK(km.json_len == size - 1 &&
			           memcmp(km.json, data + 1, size - 1) == 0);
	} else {
		if (data[0] == MODE_ZIP) {
			zip = stored_zip(data + 1, size - 1, &len);
			fuzz_file("model.keras", zip, len);
		} else {
			fuzz_file("model.keras", data + 1, size - 1);
		}
		snprintf(what, sizeof(what), "'%s'", fuzz_path("model.keras"));
		rc = keras_model_load(&km, fuzz_path("model.keras"), err);
	}
	if (rc == 0) {
		check_accepted(&km);
		check_reread(&km);
	} else {
		FUZZ_CHECK(rc == -1);
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL && err[0] != '\0');
		FUZZ_CHECK(strncmp(err, what, strlen(what)) == 0);
		FUZZ_CHECK(km.json == NULL && km.nlayers == 0);
	}
	keras_model_release(&km);
	free(zip);
	return 0;
}
