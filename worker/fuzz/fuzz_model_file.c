/* fuzz_model_file.c - a libFuzzer target for model_file_load
 * (model_file.h): the model.mwj that `mwj-worker evaluate --model-dir`
 * reads, whose header carries the model's Keras JSON, which the loader
 * builds the model from (fuzz/corpus/model_file holds mwj 0.1's
 * version-1 files, and version-2 ones that its .make-seeds.c writes).
 *
 * Input: byte 0 picks the mode, the rest is model.mwj.
 *   bit 0  append the CRC-32C the format ends with, so that mutations
 *          reach the header and the model it builds
 * Checked beyond "no crash": a refusal names the file and leaves nothing
 * behind; an accepted file builds a model whose shape is in range and
 * whose parameters and state fill the file exactly, with at most
 * LOSS_MAX_METRICS metrics and none without a loss, and written again
 * with model_file_save, loads back with the same architecture, Keras
 * JSON, parameters and state, bit for bit, and the same loss, metrics and
 * rescale.
 * A file whose model would need more than MODEL_BYTES_MAX of buffers is
 * not loaded: its activations are not in the file, so its length cannot
 * vouch for them, and a header of a kilobyte may ask for gigabytes (up to
 * MODEL_MAX_BYTES), which libFuzzer would report as running out of
 * memory.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "bytes.h"
#include "err.h"
#include "fuzz/harness.h"
#include "model_file.h"

#define MODE_CRC  1
#define MAX_BATCH 2 /* examples per step of the model it builds */
/* Twice this, the model and its copy read back, stays under libFuzzer's
 * 2 GiB with AddressSanitizer's overhead. */
#define MODEL_BYTES_MAX ((size_t)256 << 20)

/* The bytes of buffers that the model of a version-2 file's "keras"
 * member takes at MAX_BATCH (with the logits kept, the most it can take),
 * when the file is as long as that model's parameters and state make it;
 * otherwise 0: the loader refuses the file before it builds the model. */
static size_t planned_bytes(const unsigned char *file, size_t len)
{
	struct keras_model km = {0};
	struct model_size size = {0};
	char err[ERR_LEN];
	const cJSON *keras;
	cJSON *h;
	size_t hlen;
	int parsed;

	if (len < 20 || bytes_get_le32(file + 8) != 2)
		return 0;
	hlen = bytes_get_le32(file + 12);
	if (hlen > len - 20)
		return 0;
	h = cJSON_ParseWithLength((const char *)file + 16, hlen);
	keras = cJSON_GetObjectItemCaseSensitive(h, "keras");
	parsed =
	    cJSON_IsString(keras) &&
	    keras_model_parse(&km, keras->valuestring, strlen(keras->valuestring), "", err) == 0;
	if (parsed && (model_plan(&km, MAX_BATCH, 1, &size, err) < 0 ||
	               len - 20 - hlen != (size.nparams + size.nstate) * sizeof(float)))
		size.bytes = 0;
	keras_model_release(&km);
	cJSON_Delete(h);
	return size.bytes;
}

static void check_accepted(const struct model_file *f, size_t len, const unsigned char *file)
{
	const struct model *m = f->model;
	size_t header = bytes_get_le32(file + 12), params = m->nparams * sizeof(float);

	FUZZ_CHECK(m->in_rank >= 1 && m->in_rank <= KERAS_MAX_RANK && m->in_len >= 1);
	FUZZ_CHECK(m->out_len >= 1 && m->nlayers >= 1 && m->max_batch == MAX_BATCH);
	FUZZ_CHECK(f->nmetrics >= 0 && f->nmetrics <= LOSS_MAX_METRICS);
	FUZZ_CHECK(f->has_loss || f->nmetrics == 0);
	FUZZ_CHECK(f->km != NULL && f->km->json != NULL);
	FUZZ_CHECK(len == 16 + header + params + m->nstate * sizeof(float) + 4);
	FUZZ_CHECK(memcmp(m->params, file + 16 + header, params) == 0);
	FUZZ_CHECK(m->nstate == 0 ||
	           memcmp(m->state, file + 16 + header + params, m->nstate * sizeof(float)) == 0);
}

static void check_round_trip(const struct model_file *f)
{
	const struct model *m = f->model;
	const struct model_file_info info = {
	    .optimizer = "sgd",
	    .learning_rate = 0.001,
	    .batch_size = 32,
	    .workers = 1,
	    .epochs = 1,
	    .global_step = 1,
	    .seed = 42,
	    .loss = f->has_loss ? &f->loss : NULL,
	    .nmetrics = f->nmetrics,
	    .metrics = f->metrics,
	    .rescale = f->rescale,
	};
	char dir[4096], err[ERR_LEN];
	struct model_file back;

	snprintf(dir, sizeof(dir), "%s", fuzz_path("saved"));
	FUZZ_CHECK(model_file_save(dir, m, f->km, &info, err) == 0);
	FUZZ_CHECK(model_file_load(dir, MAX_BATCH, &back, err) == 0);
	FUZZ_CHECK(strcmp(back.model->name, m->name) == 0 && back.model->arch_hash == m->arch_hash);
	FUZZ_CHECK(strcmp(back.model->desc, m->desc) == 0);
	FUZZ_CHECK(strcmp(back.km->json, f->km->json) == 0);
	FUZZ_CHECK(back.model->nparams == m->nparams && back.model->nstate == m->nstate);
	FUZZ_CHECK(memcmp(back.model->params, m->params, m->nparams * sizeof(float)) == 0);
	FUZZ_CHECK(m->nstate == 0 ||
	           memcmp(back.model->state, m->state, m->nstate * sizeof(float)) == 0);
	FUZZ_CHECK(back.has_loss == f->has_loss && back.nmetrics == f->nmetrics);
	FUZZ_CHECK(!f->has_loss || (back.loss.kind == f->loss.kind &&
	                            back.loss.from_logits == f->loss.from_logits));
	FUZZ_CHECK(memcmp(back.metrics, f->metrics, (size_t)f->nmetrics * sizeof(f->metrics[0])) ==
	           0);
	/* Compared as numbers: JSON writes -0 as 0, which means the same. */
	FUZZ_CHECK(back.rescale == f->rescale);
	model_file_release(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[ERR_LEN] = "", dir[4096];
	unsigned char *file = NULL;
	struct model_file f;
	size_t len;

	if (size < 1)
		return 0;
	snprintf(dir, sizeof(dir), "%s", fuzz_path("model"));
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		die("mkdir '%s': %s", dir, strerror(errno));
	if (data[0] & MODE_CRC) {
		file = fuzz_crc_frame(data + 1, size - 1, 0, &len);
	} else {
		len = size - 1;
		file = xmalloc(len + 1);
		memcpy(file, data + 1, len);
	}
	if (planned_bytes(file, len) > MODEL_BYTES_MAX) {
		free(file);
		return 0;
	}
	fuzz_file("model/" MODEL_FILE_NAME, file, len);
	if (model_file_load(dir, MAX_BATCH, &f, err) == 0) {
		check_accepted(&f, len, file);
		check_round_trip(&f);
		model_file_release(&f);
	} else {
		FUZZ_CHECK(f.model == NULL && f.km == NULL);
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		FUZZ_CHECK(strstr(err, dir) != NULL);
	}
	free(file);
	return 0;
}
