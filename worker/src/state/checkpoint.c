/* checkpoint.c - the backup file: writing and reading it (format in
 * checkpoint.h; the directory is checkpoint_dir.c). */
#include "checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
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
#error "backups store little-endian numbers; add byte swapping for this target"
#endif

static const unsigned char MAGIC[8] = {'M', 'W', 'J', 'B', 'A', 'C', 'K', 'P'};
#define PREFIX_LEN  16 /* magic, version, header length */
#define SUMS_LEN    (METRICS_WORDS * sizeof(double))
#define SUMS_LEN_V1 (3 * sizeof(double)) /* loss, correct, count */
#define MAX_STATE   ((int64_t)1 << 40)
#define TRAILER_LEN 4
#define HEADER_MAX  65536 /* a real header is about 400 bytes */
#define HEAD_LEN    (PREFIX_LEN + HEADER_MAX)
#define MAX_SLOTS   OPTIMIZER_MAX_SLOTS
#define MAX_WORLD   4096
#define MAX_BATCH   (1 << 20)

/* --- Writing --- */

static char *header_json(const struct checkpoint *c)
{
	cJSON *o = cJSON_CreateObject();
	char hash[17], num[24];
	char *text;

	snprintf(hash, sizeof(hash), "%016" PRIx64, c->arch_hash);
	cJSON_AddStringToObject(o, "format", "mwj-backup");
	cJSON_AddNumberToObject(o, "version", CHECKPOINT_VERSION);
	cJSON_AddStringToObject(o, "model", c->model);
	cJSON_AddStringToObject(o, "arch_hash", hash);
	cJSON_AddNumberToObject(o, "num_params", (double)c->nparams);
	cJSON_AddNumberToObject(o, "model_state", (double)c->nstate);
	cJSON_AddStringToObject(o, "optimizer", optimizer_name(c->optimizer));
	cJSON_AddNumberToObject(o, "state_slots", c->nslots);
	snprintf(num, sizeof(num), "%" PRIu64, c->iterations);
	cJSON_AddStringToObject(o, "iterations", num);
	cJSON_AddNumberToObject(o, "learning_rate", c->learning_rate);
	cJSON_AddNumberToObject(o, "momentum", c->momentum);
	snprintf(num, sizeof(num), "%" PRIu64, c->seed);
	cJSON_AddStringToObject(o, "seed", num);
	cJSON_AddNumberToObject(o, "world", c->pos.world);
	cJSON_AddNumberToObject(o, "batch_size", c->pos.batch_size);
	cJSON_AddNumberToObject(o, "epoch", c->pos.epoch);
	cJSON_AddNumberToObject(o, "step", (double)c->pos.step);
	snprintf(num, sizeof(num), "%" PRIu64, c->pos.global_step);
	cJSON_AddStringToObject(o, "global_step", num);
	snprintf(num, sizeof(num), "%" PRIu64, c->pos.examples);
	cJSON_AddStringToObject(o, "examples", num);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!text)
		die("out of memory");
	return text;
}

/* Refuses what checkpoint_load would refuse to read back or list: a backup
 * that cannot be restored is worse than a failed save, which is logged. */
static int check_savable(const struct checkpoint *c, const char *path, char *err)
{
	if (c->pos.global_step > CHECKPOINT_STEP_MAX)
		return err_set(err, "'%s': global step %" PRIu64 " has more than %d digits", path,
		               c->pos.global_step, CHECKPOINT_STEP_DIGITS);
	if (c->nparams == 0 || (uint64_t)c->nparams > (1ull << 53))
		return err_set(err, "'%s': %zu parameters", path, c->nparams);
	if (c->nslots < 0 || c->nslots > MAX_SLOTS || (c->nslots > 0 && !c->opt_state))
		return err_set(err, "'%s': %d optimizer state slots", path, c->nslots);
	if ((uint64_t)c->nstate > (uint64_t)MAX_STATE || (c->nstate > 0 && !c->model_state))
		return err_set(err, "'%s': %zu floats of model state", path, c->nstate);
	if (!memchr(c->model, '\0', sizeof(c->model)))
		return err_set(err, "'%s': model name not terminated", path);
	return 0;
}

int checkpoint_save(const char *dir, const struct checkpoint *c, char *err)
{
	char path[PATH_MAX], ignored[ERR_LEN];
	unsigned char prefix[PREFIX_LEN], trailer[TRAILER_LEN];
	double sums[METRICS_WORDS];
	size_t params_len = c->nparams * sizeof(float);
	size_t model_len = c->nstate * sizeof(float);
	size_t state_len = c->nslots > 0 ? (size_t)c->nslots * params_len : 0;
	char *json;
	size_t json_len;
	uint32_t crc;
	int rc;

	if (checkpoint_path(dir, c->pos.global_step, path, sizeof(path)) < 0)
		return err_set(err, "backup directory '%s': path too long", dir);
	if (check_savable(c, path, err) < 0 || mkdir_p(dir, err) < 0)
		return -1;
	metrics_to_words(sums, &c->pos.sums);
	json = header_json(c);
	json_len = strlen(json);
	memcpy(prefix, MAGIC, sizeof(MAGIC));
	bytes_put_le32(prefix + 8, CHECKPOINT_VERSION);
	bytes_put_le32(prefix + 12, (uint32_t)json_len);
	crc = crc32c(prefix, sizeof(prefix));
	crc = crc32c_update(crc, json, json_len);
	crc = crc32c_update(crc, sums, sizeof(sums));
	crc = crc32c_update(crc, c->params, params_len);
	if (model_len)
		crc = crc32c_update(crc, c->model_state, model_len);
	if (state_len)
		crc = crc32c_update(crc, c->opt_state, state_len);
	bytes_put_le32(trailer, crc);
	const void *bufs[] = {prefix, json, sums, c->params, c->model_state, c->opt_state, trailer};
	const size_t lens[] = {sizeof(prefix), json_len,  sizeof(sums),   params_len,
	                       model_len,      state_len, sizeof(trailer)};
	rc = atomic_file_writev(path, bufs, lens, 7, 0644, err);
	free(json);
	if (rc < 0)
		return -1;
	/* The new backup is safe on disk; failing to prune loses nothing. */
	checkpoint_prune(dir, c->pos.global_step, ignored);
	return 0;
}

/* --- Reading --- */

/* The largest file whose checksum is read through when its header is
 * refused, only to say "damaged" rather than what the header got wrong: a
 * backup of this run's model with the longest header allowed. Saturates
 * rather than wraps. */
static uint64_t max_len(const struct checkpoint *c)
{
	uint64_t fixed = HEAD_LEN + SUMS_LEN + TRAILER_LEN + sizeof(float) * (uint64_t)c->nstate;
	uint64_t per_param = sizeof(float) * (uint64_t)(1 + (c->nslots > 0 ? c->nslots : 0));

	if ((uint64_t)c->nparams > (UINT64_MAX - fixed) / per_param)
		return UINT64_MAX;
	return fixed + (uint64_t)c->nparams * per_param;
}

/* A verdict that holds only for a sound file (a newer version, another
 * model): the rest of the file is checksummed, a few kilobytes at a time,
 * and a mismatch makes it damage instead. Returns rc or CORRUPT. */
static int unless_damaged(struct crc_reader *rd, int rc, char *err)
{
	char why[ERR_LEN];
	int sound = crc_reader_finish(rd, why);

	if (sound < 0) {
		err_set(err, "%s", why);
		return CHECKPOINT_CORRUPT;
	}
	if (sound == 0) {
		err_set(err, "'%s': checksum mismatch (file is corrupt or truncated)", rd->path);
		return CHECKPOINT_CORRUPT;
	}
	return rc;
}

/* Reads and checks magic, length, version and header length, in that
 * order; a newer version is told from damage by the checksum. Returns 0
 * with the header length, CORRUPT or INCOMPATIBLE. */
static int read_frame(struct crc_reader *rd, size_t *json_len, uint32_t *version_out, char *err)
{
	unsigned char prefix[PREFIX_LEN];
	size_t have = rd->len < PREFIX_LEN ? (size_t)rd->len : PREFIX_LEN;
	uint32_t version;

	if (crc_reader_take(rd, prefix, have, err) < 0)
		return CHECKPOINT_CORRUPT;
	/* A few bytes that begin like a backup are a truncated one. */
	if (memcmp(prefix, MAGIC, have < sizeof(MAGIC) ? have : sizeof(MAGIC)) != 0) {
		err_set(err, "'%s': not an mwj backup (bad magic)", rd->path);
		return CHECKPOINT_CORRUPT;
	}
	if (rd->len < PREFIX_LEN + TRAILER_LEN) {
		err_set(err, "'%s': truncated: %" PRIu64 " bytes, less than a header", rd->path,
		        rd->len);
		return CHECKPOINT_CORRUPT;
	}
	version = bytes_get_le32(prefix + 8);
	*version_out = version;
	if (version != CHECKPOINT_VERSION && version != 1) {
		err_set(err,
		        "'%s': unsupported backup format version %" PRIu32 " (this build reads %d)",
		        rd->path, version, CHECKPOINT_VERSION);
		return unless_damaged(rd, CHECKPOINT_INCOMPATIBLE, err);
	}
	*json_len = bytes_get_le32(prefix + 12);
	/* Length first: the subtraction must not wrap. */
	size_t sums_len = version == 1 ? SUMS_LEN_V1 : SUMS_LEN;
	if (rd->len < PREFIX_LEN + sums_len + TRAILER_LEN ||
	    *json_len > rd->len - PREFIX_LEN - sums_len - TRAILER_LEN) {
		err_set(err, "'%s': truncated: header claims %zu bytes, the file has %" PRIu64,
		        rd->path, *json_len, rd->len);
		return CHECKPOINT_CORRUPT;
	}
	if (*json_len > HEADER_MAX) {
		err_set(err, "'%s': header claims %zu bytes, more than the %d a header may have",
		        rd->path, *json_len, HEADER_MAX);
		return CHECKPOINT_CORRUPT;
	}
	return 0;
}

/* A 64-bit counter: a JSON string of decimal digits, at most max. */
static int get_u64(const cJSON *h, const char *key, uint64_t max, uint64_t *out, char *err)
{
	const char *s;
	char *end;
	unsigned long long v;

	if (json_get_string(h, "", key, &s, err) < 0)
		return -1;
	/* strtoull alone would take blanks, a sign or nothing at all. */
	errno = 0;
	v = s[0] >= '0' && s[0] <= '9' ? strtoull(s, &end, 10) : 0;
	if (s[0] < '0' || s[0] > '9' || errno != 0 || *end != '\0' || v > max)
		return err_set(err, "'%s' must be a string of decimal digits up to %" PRIu64, key,
		               max);
	*out = v;
	return 0;
}

/* 16 lower-case hex digits, as header_json writes them. */
static int parse_hash(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	for (int i = 0; i < 16; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return -1;
		v = v << 4 | (uint64_t)d;
	}
	if (s[16] != '\0')
		return -1;
	*out = v;
	return 0;
}

/* Reads what a backup must match, into got; *opt is borrowed from h. */
static int read_model(const cJSON *h, uint32_t frame_version, struct checkpoint *got,
                      const char **opt, char *err)
{
	const char *format, *model, *hash;
	int64_t version, nparams, nslots, nstate = 0;

	if (json_get_string(h, "", "format", &format, err) < 0)
		return -1;
	if (strcmp(format, "mwj-backup") != 0)
		return err_set(err, "'format' is '%.64s', expected 'mwj-backup'", format);
	if (json_get_i64(h, "", "version", 0, INT32_MAX, &version, err) < 0)
		return -1;
	if (version != (int64_t)frame_version)
		return err_set(err, "'version' is %" PRId64 " but the prefix says %" PRIu32,
		               version, frame_version);
	if (json_get_string(h, "", "model", &model, err) < 0 ||
	    json_get_string(h, "", "arch_hash", &hash, err) < 0 ||
	    json_get_i64(h, "", "num_params", 1, INT64_MAX, &nparams, err) < 0 ||
	    json_get_string(h, "", "optimizer", opt, err) < 0 ||
	    json_get_i64(h, "", "state_slots", 0, MAX_SLOTS, &nslots, err) < 0 ||
	    (version > 1 && json_get_i64(h, "", "model_state", 0, MAX_STATE, &nstate, err) < 0))
		return -1;
	/* Compared whole, not cut to fit: a longer name is another model. */
	if (strlen(model) >= sizeof(got->model))
		return err_set(err, "'model' is longer than %zu bytes", sizeof(got->model) - 1);
	if (parse_hash(hash, &got->arch_hash) < 0)
		return err_set(err, "'arch_hash' must be 16 lower-case hex digits");
	memcpy(got->model, model, strlen(model) + 1);
	got->nparams = (size_t)nparams;
	got->nstate = (size_t)nstate;
	got->nslots = (int)nslots;
	return 0;
}

/* Reads where training stands and the hyper-parameters, range-checked. */
static int read_position(const cJSON *h, struct checkpoint *got, char *err)
{
	int64_t world, batch, epoch, step;

	if (get_u64(h, "iterations", UINT64_MAX, &got->iterations, err) < 0 ||
	    json_get_double(h, "", "learning_rate", 0.0, 1e9, &got->learning_rate, err) < 0 ||
	    json_get_double(h, "", "momentum", 0.0, 1.0, &got->momentum, err) < 0 ||
	    get_u64(h, "seed", UINT64_MAX, &got->seed, err) < 0 ||
	    json_get_i64(h, "", "world", 1, MAX_WORLD, &world, err) < 0 ||
	    json_get_i64(h, "", "batch_size", 1, MAX_BATCH, &batch, err) < 0 ||
	    json_get_i64(h, "", "epoch", 0, INT32_MAX, &epoch, err) < 0 ||
	    json_get_i64(h, "", "step", 0, INT32_MAX, &step, err) < 0 ||
	    get_u64(h, "global_step", CHECKPOINT_STEP_MAX, &got->pos.global_step, err) < 0 ||
	    get_u64(h, "examples", UINT64_MAX, &got->pos.examples, err) < 0)
		return -1;
	got->pos.world = (uint32_t)world;
	got->pos.batch_size = (uint32_t)batch;
	got->pos.epoch = (int)epoch;
	got->pos.step = (long)step;
	return 0;
}

/* Checks that a backup of model got with optimizer opt fits the run c. */
static int check_fits(const struct checkpoint *got, const char *opt, const struct checkpoint *c,
                      const char *path, char *err)
{
	enum optimizer_kind kind;

	/* The architecture is the model; its name is for people (mwj 0.1 wrote
	 * the seed models' short names, its Keras files are "sequential"). */
	if (got->arch_hash != c->arch_hash || got->nparams != c->nparams ||
	    got->nstate != c->nstate) {
		/* The state too: a file that differs from this run in nothing
		 * else would otherwise be refused naming two equal models. */
		err_set(
		    err,
		    "'%s': backup is of model '%s' (architecture %016" PRIx64
		    ", %zu parameters, %zu floats of state), this run trains '%s' (architecture "
		    "%016" PRIx64 ", %zu parameters, %zu floats of state)",
		    path, got->model, got->arch_hash, got->nparams, got->nstate, c->model,
		    c->arch_hash, c->nparams, c->nstate);
		return CHECKPOINT_INCOMPATIBLE;
	}
	/* An optimizer this build does not know is a newer writer's, not
	 * damage: the CRC vouches for the bytes. */
	if (optimizer_parse(opt, &kind) < 0 || kind != c->optimizer || got->nslots != c->nslots) {
		err_set(
		    err,
		    "'%s': backup holds %.32s state with %d slot%s; this run uses %s (%d slot%s)",
		    path, opt, got->nslots, got->nslots == 1 ? "" : "s",
		    optimizer_name(c->optimizer), c->nslots, c->nslots == 1 ? "" : "s");
		return CHECKPOINT_INCOMPATIBLE;
	}
	return 0;
}

/* Compares the file's length with the one its header implies, before
 * anything past the header is read: a file longer or shorter than that is
 * damaged, however sound its checksum. */
static int check_length(const struct crc_reader *rd, size_t json_len, size_t sums_len,
                        const struct checkpoint *got, char *err)
{
	uint64_t per_param = sizeof(float) * (uint64_t)(1 + got->nslots);
	uint64_t fixed = PREFIX_LEN + json_len + sums_len + TRAILER_LEN;

	if ((uint64_t)got->nstate > rd->len / sizeof(float))
		return err_set(err,
		               "'%s': truncated: %" PRIu64 " bytes, but its header describes %zu "
		               "floats of model state",
		               rd->path, rd->len, got->nstate);
	fixed += sizeof(float) * (uint64_t)got->nstate;

	/* nparams is bounded by the length first, so that the product cannot
	 * wrap. */
	int shorter = (uint64_t)got->nparams > rd->len / per_param ||
	              rd->len < fixed + (uint64_t)got->nparams * per_param;

	if (shorter || rd->len > fixed + (uint64_t)got->nparams * per_param)
		return err_set(err,
		               "'%s': %s%" PRIu64 " bytes, but its header describes %zu parameters "
		               "and %d state slots",
		               rd->path, shorter ? "truncated: " : "", rd->len, got->nparams,
		               got->nslots);
	return 0;
}

/* Reads the header, checks it on its own (CORRUPT), against the file's
 * length (CORRUPT) and against the run c (INCOMPATIBLE). Fills got with
 * all but the metric sums and the buffers. A header refused on its own is
 * reported as the damage it most likely is when the checksum says so. */
static int read_header(struct crc_reader *rd, size_t json_len, uint32_t version,
                       const struct checkpoint *c, struct checkpoint *got, char *err)
{
	const char *opt = NULL;
	char why[ERR_LEN];
	int rc = CHECKPOINT_CORRUPT;
	char *text = xmalloc(json_len + 1);
	cJSON *h = NULL;

	if (crc_reader_take(rd, text, json_len, err) < 0)
		goto out;
	h = json_parse(text, json_len, why);
	if (!h || read_model(h, version, got, &opt, why) < 0 || read_position(h, got, why) < 0) {
		err_set(err, "'%s': header: %s", rd->path, why);
		if (rd->len <= max_len(c))
			rc = unless_damaged(rd, rc, err);
		goto out;
	}
	if (check_length(rd, json_len, version == 1 ? SUMS_LEN_V1 : SUMS_LEN, got, err) < 0)
		goto out;
	rc = check_fits(got, opt, c, rd->path, err);
	if (rc == CHECKPOINT_INCOMPATIBLE)
		rc = unless_damaged(rd, rc, err);
out:
	cJSON_Delete(h);
	free(text);
	return rc;
}

/* Reads what follows the header into got's sums and c's buffers, and the
 * checksum over it all. */
static int read_body(struct crc_reader *rd, uint32_t version, struct checkpoint *c,
                     struct checkpoint *got, char *err)
{
	double sums[METRICS_WORDS] = {0};
	size_t params_len = c->nparams * sizeof(float);
	int sound;

	if (crc_reader_take(rd, sums, version == 1 ? SUMS_LEN_V1 : SUMS_LEN, err) < 0 ||
	    crc_reader_take(rd, c->params, params_len, err) < 0 ||
	    (c->nstate > 0 &&
	     crc_reader_take(rd, c->model_state, c->nstate * sizeof(float), err) < 0) ||
	    (c->nslots > 0 &&
	     crc_reader_take(rd, c->opt_state, (size_t)c->nslots * params_len, err) < 0))
		return CHECKPOINT_CORRUPT;
	sound = crc_reader_finish(rd, err);
	if (sound < 0)
		return CHECKPOINT_CORRUPT;
	if (sound == 0) {
		err_set(err, "'%s': checksum mismatch (file is corrupt or truncated)", rd->path);
		return CHECKPOINT_CORRUPT;
	}
	if (version == 1) /* loss, correct, count: the accuracy was the first metric */
		got->pos.sums = (struct metrics){sums[0], sums[2], {sums[1]}};
	else
		metrics_from_words(&got->pos.sums, sums);
	return 0;
}

int checkpoint_load(const char *path, struct checkpoint *c, char *err)
{
	struct checkpoint got = {0};
	struct crc_reader rd;
	size_t json_len = 0;
	uint32_t version = 0;
	int rc;

	if (crc_reader_open(&rd, path, err) < 0)
		return CHECKPOINT_CORRUPT;
	rc = read_frame(&rd, &json_len, &version, err);
	if (rc == 0)
		rc = read_header(&rd, json_len, version, c, &got, err);
	if (rc == 0)
		rc = read_body(&rd, version, c, &got, err);
	crc_reader_close(&rd);
	if (rc < 0)
		return rc;
	c->pos = got.pos;
	c->seed = got.seed;
	memcpy(c->model, got.model, sizeof(c->model));
	c->iterations = got.iterations;
	c->learning_rate = got.learning_rate;
	c->momentum = got.momentum;
	return 0;
}
