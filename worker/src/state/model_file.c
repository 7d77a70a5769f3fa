/* model_file.c - saving and loading model.mwj (format in model_file.h). */
#include "model_file.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "bytes.h"
#include "crc32c.h"
#include "err.h"
#include "file_read.h"
#include "json.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "model files store little-endian floats; add byte swapping for this target"
#endif

static const unsigned char MAGIC[8] = {'M', 'W', 'J', 'M', 'O', 'D', 'E', 'L'};
#define PREFIX_LEN 16
/* A version-1 header is about 400 bytes; a version-2 one holds the
 * model's Keras JSON. */
#define HEADER_MAX_V1 65536
#define HEADER_MAX    (KERAS_MAX_FILE_BYTES + 65536)
#define PATH_LEN      4096

/* --- Writing --- */

static void add_trained(cJSON *o, const struct model_file_info *info)
{
	cJSON *t = cJSON_AddObjectToObject(o, "trained");
	char seed[24];

	cJSON_AddStringToObject(t, "optimizer", info->optimizer);
	cJSON_AddNumberToObject(t, "learning_rate", info->learning_rate);
	cJSON_AddNumberToObject(t, "batch_size", info->batch_size);
	cJSON_AddNumberToObject(t, "workers", info->workers);
	cJSON_AddNumberToObject(t, "epochs", info->epochs);
	cJSON_AddNumberToObject(t, "global_step", (double)info->global_step);
	/* A string: seeds use all 64 bits, which a JSON number cannot hold. */
	snprintf(seed, sizeof(seed), "%" PRIu64, info->seed);
	cJSON_AddStringToObject(t, "seed", seed);
	cJSON_AddNumberToObject(t, "rescale", info->rescale);
	if (!info->loss)
		return;
	cJSON_AddStringToObject(t, "loss", loss_name(info->loss->kind));
	cJSON_AddBoolToObject(t, "from_logits", info->loss->from_logits);
	cJSON *ms = cJSON_AddArrayToObject(t, "metrics");
	for (int i = 0; i < info->nmetrics; i++)
		cJSON_AddItemToArray(ms, cJSON_CreateString(metric_name(info->metrics[i])));
}

static char *header_json(const struct model *m, const struct keras_model *km,
                         const struct model_file_info *info)
{
	cJSON *o = cJSON_CreateObject(), *in;
	char hash[17];
	char *text;

	snprintf(hash, sizeof(hash), "%016" PRIx64, m->arch_hash);
	cJSON_AddStringToObject(o, "format", "mwj-model");
	cJSON_AddNumberToObject(o, "version", MODEL_FILE_VERSION);
	cJSON_AddStringToObject(o, "model", m->name);
	cJSON_AddStringToObject(o, "arch", m->desc);
	cJSON_AddStringToObject(o, "arch_hash", hash);
	in = cJSON_AddArrayToObject(o, "input");
	for (int i = 0; i < m->in_rank; i++)
		cJSON_AddItemToArray(in, cJSON_CreateNumber(m->in_shape[i]));
	cJSON_AddNumberToObject(o, "outputs", (double)m->out_len);
	cJSON_AddNumberToObject(o, "num_params", (double)m->nparams);
	cJSON_AddNumberToObject(o, "model_state", (double)m->nstate);
	cJSON_AddStringToObject(o, "dtype", "float32");
	cJSON_AddStringToObject(o, "keras", km->json);
	add_trained(o, info);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

int model_file_save(const char *dir, const struct model *m, const struct keras_model *km,
                    const struct model_file_info *info, char *err)
{
	char path[PATH_LEN];
	unsigned char prefix[PREFIX_LEN], trailer[4];
	char *json = NULL;
	size_t json_len, params_len = m->nparams * sizeof(float),
	                 state_len = m->nstate * sizeof(float);
	uint32_t crc;
	int rc = -1;

	if (snprintf(path, sizeof(path), "%s/%s", dir, MODEL_FILE_NAME) >= (int)sizeof(path))
		return err_set(err, "model directory '%s': path too long", dir);
	if (mkdir_p(dir, err) < 0)
		return -1;
	json = header_json(m, km, info);
	if (!json)
		die("out of memory");
	json_len = strlen(json);
	if (json_len > HEADER_MAX) {
		free(json);
		return err_set(err, "'%s': a header of %zu bytes, more than %zu", path, json_len,
		               (size_t)HEADER_MAX);
	}
	memcpy(prefix, MAGIC, sizeof(MAGIC));
	bytes_put_le32(prefix + 8, MODEL_FILE_VERSION);
	bytes_put_le32(prefix + 12, (uint32_t)json_len);
	crc = crc32c(prefix, sizeof(prefix));
	crc = crc32c_update(crc, json, json_len);
	crc = crc32c_update(crc, m->params, params_len);
	if (state_len)
		crc = crc32c_update(crc, m->state, state_len);
	bytes_put_le32(trailer, crc);
	{
		const void *bufs[] = {prefix, json, m->params, m->state, trailer};
		size_t lens[] = {sizeof(prefix), json_len, params_len, state_len, sizeof(trailer)};
		rc = atomic_file_writev(path, bufs, lens, 5, 0644, err);
	}
	free(json);
	return rc;
}

/* --- Reading --- */

/* What the header says the file holds, checked against the model it
 * builds. */
struct header {
	uint32_t version;
	struct keras_model *km;
	struct model_size size;
	int output_logits;
	int has_loss;
	struct loss_config loss;
	int nmetrics;
	enum metric_kind metrics[LOSS_MAX_METRICS];
	double rescale;
};

/* The loss and metrics of "trained", when it records them. */
static int read_trained_loss(const cJSON *h, struct header *hd, char *err)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(h, "trained"), *ms = NULL;
	const char *name;

	if (cJSON_IsObject(t) && cJSON_HasObjectItem(t, "rescale") &&
	    json_get_double(t, "trained", "rescale", -1e30, 1e30, &hd->rescale, err) < 0)
		return -1;
	if (!cJSON_IsObject(t) || !cJSON_HasObjectItem(t, "loss"))
		return 0;
	if (json_get_string(t, "trained", "loss", &name, err) < 0 ||
	    json_get_bool(t, "trained", "from_logits", &hd->loss.from_logits, err) < 0 ||
	    json_get_array(t, "trained", "metrics", &ms, err) < 0)
		return -1;
	if (loss_parse(name, &hd->loss.kind) < 0)
		return err_set(err, "'trained.loss' is '%.64s', not a loss mwj knows", name);
	if (cJSON_GetArraySize(ms) > LOSS_MAX_METRICS)
		return err_set(err, "'trained.metrics' holds more than %d metrics",
		               LOSS_MAX_METRICS);
	for (int i = 0; i < cJSON_GetArraySize(ms); i++) {
		const cJSON *e = cJSON_GetArrayItem(ms, i);
		if (!cJSON_IsString(e) || metric_parse(e->valuestring, &hd->metrics[i]) < 0)
			return err_set(err, "'trained.metrics[%d]' is not a metric mwj knows", i);
	}
	hd->nmetrics = cJSON_GetArraySize(ms);
	hd->has_loss = 1;
	return 0;
}

/* Version 1 named one of the two seed models, on 28x28x1 inputs, trained
 * with sparse cross-entropy from logits and accuracy. */
static int read_v1_model(const cJSON *h, struct header *hd, char *err)
{
	const char *name;
	const cJSON *input;
	int64_t classes;

	if (json_get_string(h, "", "model", &name, err) < 0 ||
	    json_get_array(h, "", "input", &input, err) < 0 ||
	    json_get_i64(h, "", "classes", 2, 1 << 16, &classes, err) < 0)
		return -1;
	hd->km = xcalloc(1, sizeof(*hd->km));
	if (keras_model_builtin(hd->km, name, err) < 0)
		return -1;
	double want[3] = {28, 28, 1};
	for (int i = 0; i < 3; i++) {
		const cJSON *d = cJSON_GetArrayItem(input, i);
		if (cJSON_GetArraySize(input) != 3 || !cJSON_IsNumber(d) ||
		    d->valuedouble != want[i])
			return err_set(
			    err,
			    "a version-1 file of model '%s' on inputs other than 28x28x1, "
			    "which this build does not build: train it again",
			    name);
	}
	if (classes != 10)
		return err_set(err,
		               "a version-1 file of model '%s' with %" PRId64 " classes, which "
		               "this build does not build: train it again",
		               name, classes);
	hd->has_loss = 1;
	hd->loss = (struct loss_config){LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
	hd->nmetrics = 1;
	hd->metrics[0] = METRIC_ACCURACY;
	return 0;
}

/* Checks the header against the model it describes: its Keras JSON
 * builds a model whose hash and sizes are the ones recorded. Nothing is
 * allocated for the model's buffers: a header of a few bytes may describe
 * a model whose buffers take gigabytes, which the file's length must
 * vouch for first. */
static int check_header(const cJSON *h, int max_batch, struct header *hd, char *err)
{
	const char *hash, *format, *dtype, *keras;
	int64_t claimed, state = 0;
	char want[17];
	int spec_logits;

	if (json_get_string(h, "", "format", &format, err) < 0 ||
	    json_get_string(h, "", "dtype", &dtype, err) < 0)
		return -1;
	if (strcmp(format, "mwj-model") != 0 || strcmp(dtype, "float32") != 0)
		return err_set(err,
		               "header says format '%s' with dtype '%s', expected 'mwj-model' with "
		               "'float32'",
		               format, dtype);
	/* No parameters is a model too: activations, or a batch
	 * normalisation without center and scale (state only). */
	if (json_get_string(h, "", "arch_hash", &hash, err) < 0 ||
	    json_get_i64(h, "", "num_params", 0, INT64_MAX / 8, &claimed, err) < 0 ||
	    (hd->version > 1 &&
	     json_get_i64(h, "", "model_state", 0, INT64_MAX / 8, &state, err) < 0))
		return -1;
	if (hd->version == 1) {
		if (read_v1_model(h, hd, err) < 0)
			return -1;
	} else {
		if (json_get_string(h, "", "keras", &keras, err) < 0 ||
		    read_trained_loss(h, hd, err) < 0)
			return -1;
		hd->km = xcalloc(1, sizeof(*hd->km));
		if (keras_model_parse(hd->km, keras, strlen(keras), "its Keras JSON", err) < 0)
			return -1;
	}
	if (hd->has_loss)
		model_loss_reads(hd->km, &hd->loss, &spec_logits, &hd->output_logits);
	if (model_plan(hd->km, max_batch, hd->output_logits, &hd->size, err) < 0)
		return -1;
	snprintf(want, sizeof(want), "%016" PRIx64, hd->size.arch_hash);
	if (strcmp(hash, want) != 0)
		return err_set(err,
		               "architecture hash %s does not match model '%s' (%s) as built here",
		               hash, hd->km->name, want);
	if ((uint64_t)claimed != hd->size.nparams || (uint64_t)state != hd->size.nstate)
		return err_set(err,
		               "'num_params' is %" PRId64 " and 'model_state' %" PRId64
		               " but model '%s' has %zu parameters and %zu state values",
		               claimed, state, hd->km->name, hd->size.nparams, hd->size.nstate);
	return 0;
}

/* Reads and checks the prefix; sets *json_len and the version. */
static int read_prefix(struct crc_reader *rd, size_t *json_len, uint32_t *version, char *err)
{
	unsigned char prefix[PREFIX_LEN];
	size_t have = rd->len < PREFIX_LEN ? (size_t)rd->len : PREFIX_LEN;
	size_t max;

	if (crc_reader_take(rd, prefix, have, err) < 0)
		return -1;
	if (have < sizeof(MAGIC) || memcmp(prefix, MAGIC, sizeof(MAGIC)) != 0)
		return err_set(err, "'%s': not an mwj model file (bad magic)", rd->path);
	if (rd->len < PREFIX_LEN + 4)
		return err_set(err, "'%s': truncated: %" PRIu64 " bytes, less than a header",
		               rd->path, rd->len);
	*version = bytes_get_le32(prefix + 8);
	if (*version != MODEL_FILE_VERSION && *version != 1)
		return err_set(
		    err, "'%s': unsupported model format version %u (this build reads 1 and %d)",
		    rd->path, *version, MODEL_FILE_VERSION);
	*json_len = bytes_get_le32(prefix + 12);
	if (*json_len > rd->len - PREFIX_LEN - 4)
		return err_set(err, "'%s': truncated: header claims %zu bytes, file has %" PRIu64,
		               rd->path, *json_len, rd->len);
	max = *version == 1 ? HEADER_MAX_V1 : HEADER_MAX;
	if (*json_len > max)
		return err_set(err,
		               "'%s': header claims %zu bytes, more than the %zu a header may have",
		               rd->path, *json_len, max);
	return 0;
}

/* Reads the header and checks it; when it is refused, the message says
 * "checksum mismatch" instead if the file is damaged, since then the
 * header's complaint means nothing. */
static int read_header(struct crc_reader *rd, size_t json_len, int max_batch, struct header *hd,
                       char *err)
{
	char *text = xmalloc(json_len + 1);
	cJSON *h = NULL;
	int rc = -1;

	if (crc_reader_take(rd, text, json_len, err) < 0)
		goto out;
	h = json_parse(text, json_len, err);
	if (h)
		rc = check_header(h, max_batch, hd, err);
	else
		err_prefix(err, "header");
	if (rc < 0) {
		char why[ERR_LEN];
		if (crc_reader_finish(rd, why) == 0)
			err_set(err, "checksum mismatch (file is corrupt or truncated)");
		err_prefix(err, "'%s'", rd->path);
	}
out:
	cJSON_Delete(h);
	free(text);
	return rc;
}

static void header_release(struct header *hd)
{
	if (hd->km) {
		keras_model_release(hd->km);
		free(hd->km);
		hd->km = NULL;
	}
}

/* The parameters and state, and the checksum over the whole file. */
static int read_body(struct crc_reader *rd, struct model *m, const char *path, char *err)
{
	int sound =
	    crc_reader_take(rd, m->params, m->nparams * sizeof(float), err) < 0 ||
	            (m->nstate && crc_reader_take(rd, m->state, m->nstate * sizeof(float), err) < 0)
	        ? -1
	        : crc_reader_finish(rd, err);

	if (sound == 0)
		err_set(err, "'%s': checksum mismatch (file is corrupt or truncated)", path);
	return sound <= 0 ? -1 : 0;
}

int model_file_load(const char *dir, int max_batch, struct model_file *f, char *err)
{
	char path[PATH_LEN];
	struct crc_reader rd = {.fd = -1};
	struct header hd = {0};
	size_t json_len = 0, body_len, want;
	int rc = -1;

	memset(f, 0, sizeof(*f));
	if (snprintf(path, sizeof(path), "%s/%s", dir, MODEL_FILE_NAME) >= (int)sizeof(path))
		return err_set(err, "model directory '%s': path too long", dir);
	if (crc_reader_open(&rd, path, err) < 0 ||
	    read_prefix(&rd, &json_len, &hd.version, err) < 0 ||
	    read_header(&rd, json_len, max_batch, &hd, err) < 0)
		goto out;
	/* The length the header implies, before anything is built or read:
	 * a file longer or shorter than that is not this model's. */
	body_len = (size_t)(rd.len - PREFIX_LEN - json_len - 4);
	want = (hd.size.nparams + hd.size.nstate) * sizeof(float);
	if (body_len != want) {
		err_set(err,
		        "'%s': %sholds %zu bytes of parameters and state, model '%s' needs %zu",
		        path, body_len < want ? "truncated: " : "", body_len, hd.km->name, want);
		goto out;
	}
	f->model = model_new(hd.km, max_batch, hd.output_logits, err);
	if (!f->model) {
		err_prefix(err, "'%s'", path);
		goto out;
	}
	if (read_body(&rd, f->model, path, err) < 0)
		goto out;
	f->km = hd.km;
	hd.km = NULL;
	f->has_loss = hd.has_loss;
	f->loss = hd.loss;
	f->nmetrics = hd.nmetrics;
	memcpy(f->metrics, hd.metrics, sizeof(f->metrics));
	f->rescale = (float)hd.rescale;
	rc = 0;
out:
	header_release(&hd);
	crc_reader_close(&rd);
	if (rc < 0)
		model_file_release(f);
	return rc;
}

void model_file_release(struct model_file *f)
{
	if (!f)
		return;
	model_free(f->model);
	if (f->km) {
		keras_model_release(f->km);
		free(f->km);
	}
	memset(f, 0, sizeof(*f));
}
