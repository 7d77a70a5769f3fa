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
#include "json.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "model files store little-endian floats; add byte swapping for this target"
#endif

static const unsigned char MAGIC[8] = {'M', 'W', 'J', 'M', 'O', 'D', 'E', 'L'};
#define PREFIX_LEN 16
#define PATH_LEN   4096

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

/* Checks the header against the model its name builds, and that the file
 * length agrees with num_params, before the model is built: a header of a
 * few bytes may name a shape whose buffers take gigabytes. */
static struct model *model_from_header(const cJSON *h, size_t params_bytes, int max_batch,
                                       char *err)
{
	const char *name, *hash, *format, *dtype;
	const cJSON *input;
	int64_t classes, nparams, dims[3];
	size_t built = 0;
	uint64_t built_hash = 0;
	char want[17];

	if (json_get_string(h, "", "format", &format, err) < 0 ||
	    json_get_string(h, "", "dtype", &dtype, err) < 0)
		return NULL;
	if (strcmp(format, "mwj-model") != 0 || strcmp(dtype, "float32") != 0) {
		err_set(err,
		        "header says format '%s' with dtype '%s', expected 'mwj-model' with "
		        "'float32'",
		        format, dtype);
		return NULL;
	}
	if (json_get_string(h, "", "model", &name, err) < 0 ||
	    json_get_string(h, "", "arch_hash", &hash, err) < 0 ||
	    json_get_array(h, "", "input", &input, err) < 0 ||
	    json_get_i64(h, "", "classes", 2, 1 << 16, &classes, err) < 0 ||
	    json_get_i64(h, "", "num_params", 1, INT64_MAX / 8, &nparams, err) < 0)
		return NULL;
	if (cJSON_GetArraySize(input) != 3) {
		err_set(err, "'input' must hold 3 dimensions");
		return NULL;
	}
	for (int i = 0; i < 3; i++) {
		const cJSON *d = cJSON_GetArrayItem(input, i);
		if (!cJSON_IsNumber(d) || d->valuedouble < 1 || d->valuedouble > 4096 ||
		    d->valuedouble != (double)(int)d->valuedouble) {
			err_set(err, "'input[%d]' must be an integer in [1, 4096]", i);
			return NULL;
		}
		dims[i] = (int64_t)d->valuedouble;
	}
	if (model_plan(name, (int)dims[0], (int)dims[1], (int)dims[2], (int)classes, max_batch,
	               &built, &built_hash, err) < 0)
		return NULL;
	snprintf(want, sizeof(want), "%016" PRIx64, built_hash);
	if (strcmp(hash, want) != 0) {
		err_set(err, "architecture hash %s does not match model '%s' (%s) as built here",
		        hash, name, want);
	} else if ((uint64_t)nparams != built) {
		err_set(err, "'num_params' is %" PRId64 " but model '%s' has %zu parameters",
		        nparams, name, built);
	} else if (params_bytes != built * sizeof(float)) {
		err_set(err, "holds %zu bytes of parameters, model '%s' needs %zu", params_bytes,
		        name, built * sizeof(float));
	} else {
		return model_new(name, (int)dims[0], (int)dims[1], (int)dims[2], (int)classes,
		                 max_batch, err);
	}
	return NULL;
}

struct model *model_file_load(const char *dir, int max_batch, char *err)
{
	char path[PATH_LEN];
	unsigned char *buf = NULL;
	size_t len = 0, json_len;
	uint32_t version;
	cJSON *h = NULL;
	struct model *m = NULL;

	if (snprintf(path, sizeof(path), "%s/%s", dir, MODEL_FILE_NAME) >= (int)sizeof(path)) {
		err_set(err, "model directory '%s': path too long", dir);
		return NULL;
	}
	if (file_read_all(path, MODEL_FILE_MAX_BYTES, &buf, &len, err) < 0)
		return NULL;
	if (len < sizeof(MAGIC) || memcmp(buf, MAGIC, sizeof(MAGIC)) != 0) {
		err_set(err, "'%s': not an mwj model file (bad magic)", path);
		goto out;
	}
	if (len < PREFIX_LEN + 4) {
		err_set(err, "'%s': truncated: %zu bytes, less than a header", path, len);
		goto out;
	}
	version = bytes_get_le32(buf + 8);
	if (version != MODEL_FILE_VERSION) {
		err_set(err, "'%s': unsupported model format version %u (this build reads %d)",
		        path, version, MODEL_FILE_VERSION);
		goto out;
	}
	json_len = bytes_get_le32(buf + 12);
	if (json_len > len - PREFIX_LEN - 4) {
		err_set(err, "'%s': truncated: header claims %zu bytes, file has %zu", path,
		        json_len, len);
		goto out;
	}
	if (crc32c(buf, len - 4) != bytes_get_le32(buf + len - 4)) {
		err_set(err, "'%s': checksum mismatch (file is corrupt or truncated)", path);
		goto out;
	}
	h = json_parse((const char *)buf + PREFIX_LEN, json_len, err);
	if (!h) {
		err_prefix(err, "'%s': header", path);
		goto out;
	}
	m = model_from_header(h, len - PREFIX_LEN - json_len - 4, max_batch, err);
	if (!m) {
		err_prefix(err, "'%s'", path);
		goto out;
	}
	memcpy(m->params, buf + PREFIX_LEN + json_len, m->nparams * sizeof(float));
out:
	cJSON_Delete(h);
	free(buf);
	return m;
}
