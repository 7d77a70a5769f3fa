/* fuzz_model_file.c - a libFuzzer target for model_file_load
 * (model_file.h): the model.mwj that `mwj-worker evaluate --model-dir`
 * reads, whose header names the model and its input shape.
 *
 * Input: byte 0 picks the mode, the rest is model.mwj.
 *   bit 0  append the CRC-32C the format ends with, so that mutations
 *          reach the header and the model it builds
 * Checked beyond "no crash": a refusal names the file; an accepted file
 * builds a model whose shape is in range and whose parameters fill the
 * file exactly, and written again with model_file_save, loads back with
 * the same architecture and the same parameters, bit for bit.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bytes.h"
#include "err.h"
#include "fuzz/harness.h"
#include "model_file.h"

#define MODE_CRC  1
#define MAX_BATCH 2 /* examples per step of the model it builds */

static void check_accepted(const struct model *m, size_t len, const unsigned char *file)
{
	size_t header = bytes_get_le32(file + 12);

	FUZZ_CHECK(m->in_h >= 1 && m->in_h <= 4096 && m->in_w >= 1 && m->in_w <= 4096);
	FUZZ_CHECK(m->in_c >= 1 && m->in_c <= 4096);
	FUZZ_CHECK(m->classes >= 2 && m->classes <= 1 << 16 && m->max_batch == MAX_BATCH);
	FUZZ_CHECK(len == 16 + header + m->nparams * sizeof(float) + 4);
	FUZZ_CHECK(memcmp(m->params, file + 16 + header, m->nparams * sizeof(float)) == 0);
}

static void check_round_trip(const struct model *m)
{
	static const struct model_file_info info = {"sgd", 0.001, 32, 1, 1, 1, 42};
	char dir[4096], err[ERR_LEN];
	struct model *back;

	snprintf(dir, sizeof(dir), "%s", fuzz_path("saved"));
	FUZZ_CHECK(model_file_save(dir, m, &info, err) == 0);
	back = model_file_load(dir, MAX_BATCH, err);
	FUZZ_CHECK(back != NULL);
	FUZZ_CHECK(strcmp(back->name, m->name) == 0 && back->arch_hash == m->arch_hash);
	FUZZ_CHECK(back->nparams == m->nparams);
	FUZZ_CHECK(memcmp(back->params, m->params, m->nparams * sizeof(float)) == 0);
	model_free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[ERR_LEN] = "", dir[4096];
	unsigned char *file = NULL;
	struct model *m;
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
	fuzz_file("model/" MODEL_FILE_NAME, file, len);
	m = model_file_load(dir, MAX_BATCH, err);
	if (m != NULL) {
		check_accepted(m, len, file);
		check_round_trip(m);
	} else {
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		FUZZ_CHECK(strstr(err, dir) != NULL);
	}
	model_free(m);
	free(file);
	return 0;
}
