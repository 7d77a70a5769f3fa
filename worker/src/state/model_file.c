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
/* A real header is about 400 bytes. */
#define MODEL_FILE_HEADER_MAX 65536
#define PATH_LEN              4096

static char *header_json(const struct model *m, const struct model_file_info *info)
{
	cJSON *o = cJSON_CreateObject(), *t, *in;
	char hash[17];
	char *text;

	snprintf(hash, sizeof(hash), "%016" PRIx64, m->arch_hash);
	cJSON_AddStringToObject(o, "format", "mwj-model");
	cJSON_AddNumberToObject(o, "version", MODEL_FILE_VERSION);
	cJSON_AddStringToObject(o, "model", m->name);
	cJSON_AddStringToObject(o, "arch", m->desc);
	cJSON_AddStringToObject(o, "arch_hash", hash);
	in = cJSON_AddArrayToObject(o, "input");
	cJSON_AddItemToArray(in, cJSON_CreateNumber(m->in_h));
	cJSON_AddItemToArray(in, cJSON_CreateNumber(m->in_w));
	cJSON_AddItemToArray(in, cJSON_CreateNumber(m->in_c));
	cJSON_AddNumberToObject(o, "classes", m->classes);
	cJSON_AddNumberToObject(o, "num_params", (double)m->nparams);
	cJSON_AddStringToObject(o, "dtype", "float32");
	t = cJSON_AddObjectToObject(o, "trained");
	cJSON_AddStringToObject(t, "optimizer", info->optimizer);
	cJSON_AddNumberToObject(t, "learning_rate", info->learning_rate);
	cJSON_AddNumberToObject(t, "batch_size", info->batch_size);
	cJSON_AddNumberToObject(t, "workers", info->workers);
	cJSON_AddNumberToObject(t, "epochs", info->epochs);
	cJSON_AddNumberToObject(t, "global_step", (double)info->global_step);
	/* A string: seeds use all 64 bits, which a JSON number cannot hold. */
	char seed[24];
	snprintf(seed, sizeof(seed), "%" PRIu64, info->seed);
	cJSON_AddStringToObject(t, "seed", seed);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

int model_file_save(const char *dir, const struct model *m, const struct model_file_info *info,
                    char *err)
{
	char path[PATH_LEN];
	unsigned char prefix[PREFIX_LEN], trailer[4];
	char *json = NULL;
	size_t json_len, params_len = m->nparams * sizeof(float);
	uint32_t crc;
	int rc = -1;

	if (snprintf(path, sizeof(path), "%s/%s", dir, MODEL_FILE_NAME) >= (int)sizeof(path))
		return err_set(err, "model directory '%s': path too long", dir);
	if (mkdir_p(dir, err) < 0)
		return -1;
	json = header_json(m, info);
	if (!json)
		die("out of memory");
	json_len = strlen(json);
	memcpy(prefix, MAGIC, sizeof(MAGIC));
	bytes_put_le32(prefix + 8, MODEL_FILE_VERSION);
	bytes_put_le32(prefix + 12, (uint32_t)json_len);
	crc = crc32c(prefix, sizeof(prefix));
	crc = crc32c_update(crc, json, json_len);
	crc = crc32c_update(crc, m->params, params_len);
	bytes_put_le32(trailer, crc);
	{
		const void *bufs[] = {prefix, json, m->params, trailer};
		size_t lens[] = {sizeof(prefix), json_len, params_len, sizeof(trailer)};
		rc = atomic_file_writev(path, bufs, lens, 4, 0644, err);
	}
	free(json);
	return rc;
}

/* Checks the header against the model its name builds: 0 with the name,
 * shape and parameter count of the model to build, or -1 with a message.
 * Nothing is allocated: a header of a few bytes may name a shape whose
 * buffers take gigabytes, which the file's length must vouch for first. */
static int check_header(const cJSON *h, int max_batch, const char **name, int64_t dims[3],
                        int64_t *classes, size_t *nparams, char *err)
{
	const char *hash, *format, *dtype;
	const cJSON *input;
	int64_t claimed;
	uint64_t built_hash = 0;
	char want[17];

	if (json_get_string(h, "", "format", &format, err) < 0 ||
	    json_get_string(h, "", "dtype", &dtype, err) < 0)
		return -1;
	if (strcmp(format, "mwj-model") != 0 || strcmp(dtype, "float32") != 0)
		return err_set(err,
		               "header says format '%s' with dtype '%s', expected 'mwj-model' with "
		               "'float32'",
		               format, dtype);
	if (json_get_string(h, "", "model", name, err) < 0 ||
	    json_get_string(h, "", "arch_hash", &hash, err) < 0 ||
	    json_get_array(h, "", "input", &input, err) < 0 ||
	    json_get_i64(h, "", "classes", 2, 1 << 16, classes, err) < 0 ||
	    json_get_i64(h, "", "num_params", 1, INT64_MAX / 8, &claimed, err) < 0)
		return -1;
	if (cJSON_GetArraySize(input) != 3)
		return err_set(err, "'input' must hold 3 dimensions");
	for (int i = 0; i < 3; i++) {
		const cJSON *d = cJSON_GetArrayItem(input, i);
		if (!cJSON_IsNumber(d) || d->valuedouble < 1 || d->valuedouble > 4096 ||
		    d->valuedouble != (double)(int)d->valuedouble)
			return err_set(err, "'input[%d]' must be an integer in [1, 4096]", i);
		dims[i] = (int64_t)d->valuedouble;
	}
	if (model_plan(*name, (int)dims[0], (int)dims[1], (int)dims[2], (int)*classes, max_batch,
	               nparams, &built_hash, err) < 0)
		return -1;
	snprintf(want, sizeof(want), "%016" PRIx64, built_hash);
	if (strcmp(hash, want) != 0)
		return err_set(err,
		               "architecture hash %s does not match model '%s' (%s) as built here",
		               hash, *name, want);
	if ((uint64_t)claimed != *nparams)
		return err_set(err, "'num_params' is %" PRId64 " but model '%s' has %zu parameters",
		               claimed, *name, *nparams);
	return 0;
}

/* Reads and checks the prefix; sets *json_len. */
static int read_prefix(struct crc_reader *rd, size_t *json_len, char *err)
{
	unsigned char prefix[PREFIX_LEN];
	size_t have = rd->len < PREFIX_LEN ? (size_t)rd->len : PREFIX_LEN;
	uint32_t version;

	if (crc_reader_take(rd, prefix, have, err) < 0)
		return -1;
	if (have < sizeof(MAGIC) || memcmp(prefix, MAGIC, sizeof(MAGIC)) != 0)
		return err_set(err, "'%s': not an mwj model file (bad magic)", rd->path);
	if (rd->len < PREFIX_LEN + 4)
		return err_set(err, "'%s': truncated: %" PRIu64 " bytes, less than a header",
		               rd->path, rd->len);
	version = bytes_get_le32(prefix + 8);
	if (version != MODEL_FILE_VERSION)
		return err_set(err,
		               "'%s': unsupported model format version %u (this build reads %d)",
		               rd->path, version, MODEL_FILE_VERSION);
	*json_len = bytes_get_le32(prefix + 12);
	if (*json_len > rd->len - PREFIX_LEN - 4)
		return err_set(err, "'%s': truncated: header claims %zu bytes, file has %" PRIu64,
		               rd->path, *json_len, rd->len);
	if (*json_len > MODEL_FILE_HEADER_MAX)
		return err_set(err,
		               "'%s': header claims %zu bytes, more than the %d a header may have",
		               rd->path, *json_len, MODEL_FILE_HEADER_MAX);
	return 0;
}

/* Reads the header and checks it; when it is refused, the message says
 * "checksum mismatch" instead if the file is damaged, since then the
 * header's complaint means nothing. */
static int read_header(struct crc_reader *rd, size_t json_len, int max_batch, const char **name,
                       int64_t dims[3], int64_t *classes, size_t *nparams, cJSON **h, char *err)
{
	char *text = xmalloc(json_len + 1);
	int rc = -1;

	if (crc_reader_take(rd, text, json_len, err) < 0)
		goto out;
	*h = json_parse(text, json_len, err);
	if (*h)
		rc = check_header(*h, max_batch, name, dims, classes, nparams, err);
	else
		err_prefix(err, "header");
	if (rc < 0) {
		char why[ERR_LEN];
		if (crc_reader_finish(rd, why) == 0)
			err_set(err, "checksum mismatch (file is corrupt or truncated)");
		err_prefix(err, "'%s'", rd->path);
	}
out:
	free(text);
	return rc;
}

struct model *model_file_load(const char *dir, int max_batch, char *err)
{
	char path[PATH_LEN];
	struct crc_reader rd = {.fd = -1};
	size_t json_len = 0, nparams = 0, params_len;
	int64_t dims[3] = {0}, classes = 0;
	const char *name = NULL;
	cJSON *h = NULL;
	struct model *m = NULL;
	int sound;

	if (snprintf(path, sizeof(path), "%s/%s", dir, MODEL_FILE_NAME) >= (int)sizeof(path)) {
		err_set(err, "model directory '%s': path too long", dir);
		return NULL;
	}
	if (crc_reader_open(&rd, path, err) < 0 || read_prefix(&rd, &json_len, err) < 0 ||
	    read_header(&rd, json_len, max_batch, &name, dims, &classes, &nparams, &h, err) < 0)
		goto out;
	/* The length the header implies, before anything is built or read:
	 * a file longer or shorter than that is not this model's. */
	params_len = (size_t)(rd.len - PREFIX_LEN - json_len - 4);
	if (params_len != nparams * sizeof(float)) {
		err_set(err, "'%s': %sholds %zu bytes of parameters, model '%s' needs %zu", path,
		        params_len < nparams * sizeof(float) ? "truncated: " : "", params_len, name,
		        nparams * sizeof(float));
		goto out;
	}
	m = model_new(name, (int)dims[0], (int)dims[1], (int)dims[2], (int)classes, max_batch, err);
	if (!m) {
		err_prefix(err, "'%s'", path);
		goto out;
	}
	sound =
	    crc_reader_take(&rd, m->params, params_len, err) < 0 ? -1 : crc_reader_finish(&rd, err);
	if (sound == 0)
		err_set(err, "'%s': checksum mismatch (file is corrupt or truncated)", path);
	if (sound <= 0) {
		model_free(m);
		m = NULL;
	}
out:
	cJSON_Delete(h);
	crc_reader_close(&rd);
	return m;
}
