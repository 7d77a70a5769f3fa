/* checkpoint.c - backup files: writing, listing, reading and pruning them
 * (format and rules in checkpoint.h). */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "bytes.h"
#include "crc32c.h"
#include "err.h"
#include "json.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "backups store little-endian numbers; add byte swapping for this target"
#endif

static const unsigned char MAGIC[8] = {'M', 'W', 'J', 'B', 'A', 'C', 'K', 'P'};
#define PREFIX_LEN  16
#define SUMS_LEN    (3 * sizeof(double))
#define HEADER_MAX  65536
#define PATH_LEN    4200
#define NAME_PREFIX "backup-"
#define NAME_SUFFIX ".mwjb"
#define NAME_DIGITS 12
#define MAX_WORLD   4096

int checkpoint_path(const char *dir, uint64_t global_step, char *out, size_t n)
{
	int len = snprintf(out, n, "%s/" NAME_PREFIX "%0*" PRIu64 NAME_SUFFIX, dir, NAME_DIGITS,
	                   global_step);

	return len < 0 || (size_t)len >= n ? -1 : 0;
}

/* Parses a backup's file name. With tmp, also "<name>.tmp.<anything>",
 * what atomic_file leaves behind when its writer dies. Returns 0 and the
 * step, or -1 for any other name. */
static int parse_name(const char *name, int tmp, uint64_t *step)
{
	size_t plen = strlen(NAME_PREFIX), slen = strlen(NAME_SUFFIX);
	uint64_t v = 0;

	if (strncmp(name, NAME_PREFIX, plen) != 0)
		return -1;
	for (size_t i = 0; i < NAME_DIGITS; i++) {
		char c = name[plen + i];
		if (c < '0' || c > '9')
			return -1;
		v = v * 10 + (uint64_t)(c - '0');
	}
	const char *rest = name + plen + NAME_DIGITS;
	if (strncmp(rest, NAME_SUFFIX, slen) != 0)
		return -1;
	rest += slen;
	if (tmp ? strncmp(rest, ".tmp.", 5) != 0 : rest[0] != '\0')
		return -1;
	*step = v;
	return 0;
}

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x < y) - (x > y);
}

int checkpoint_list(const char *dir, uint64_t *steps, int max, char *err)
{
	uint64_t *all = NULL, step;
	size_t n = 0, cap = 0;
	const struct dirent *e;
	DIR *d = opendir(dir);

	if (!d) {
		if (errno == ENOENT)
			return 0;
		return err_set(err, "opendir '%s': %s", dir, strerror(errno));
	}
	while ((e = readdir(d)) != NULL) {
		if (parse_name(e->d_name, 0, &step) < 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			uint64_t *grown = xcalloc(cap, sizeof(*all));
			if (n)
				memcpy(grown, all, n * sizeof(*all));
			free(all);
			all = grown;
		}
		all[n++] = step;
	}
	closedir(d);
	if (n)
		qsort(all, n, sizeof(*all), cmp_desc);
	if (n > (size_t)max)
		n = (size_t)max;
	if (n)
		memcpy(steps, all, n * sizeof(*all));
	free(all);
	return (int)n;
}

/* Removes backups of dir other than keep_a and keep_b (UINT64_MAX: none),
 * and writers' temporary files. Returns 0, or -1 with the first failure. */
static int prune(const char *dir, uint64_t keep_a, uint64_t keep_b, char *err)
{
	char path[PATH_LEN];
	const struct dirent *e;
	uint64_t step;
	int rc = 0;
	DIR *d = opendir(dir);

	if (!d)
		return errno == ENOENT ? 0 : err_set(err, "opendir '%s': %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL) {
		int is_tmp = parse_name(e->d_name, 1, &step) == 0;
		if (!is_tmp &&
		    (parse_name(e->d_name, 0, &step) < 0 || step == keep_a || step == keep_b))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (unlink(path) < 0 && errno != ENOENT && rc == 0)
			rc = err_set(err, "unlink '%s': %s", path, strerror(errno));
	}
	closedir(d);
	return rc;
}

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

int checkpoint_save(const char *dir, const struct checkpoint *c, char *err)
{
	char path[PATH_LEN];
	unsigned char prefix[PREFIX_LEN], trailer[4];
	double sums[3] = {c->pos.sums.loss_sum, c->pos.sums.correct, c->pos.sums.count};
	size_t params_len = c->nparams * sizeof(float);
	size_t state_len = (size_t)c->nslots * params_len;
	uint64_t steps[CHECKPOINT_MAX_FILES] = {0}, older = UINT64_MAX;
	char ignored[ERR_LEN];
	int rc, n;

	if (checkpoint_path(dir, c->pos.global_step, path, sizeof(path)) < 0)
		return err_set(err, "backup directory '%s': path too long", dir);
	if (mkdir_p(dir, err) < 0)
		return -1;
	char *json = header_json(c);
	size_t json_len = strlen(json);
	memcpy(prefix, MAGIC, sizeof(MAGIC));
	bytes_put_le32(prefix + 8, CHECKPOINT_VERSION);
	bytes_put_le32(prefix + 12, (uint32_t)json_len);
	uint32_t crc = crc32c(prefix, sizeof(prefix));
	crc = crc32c_update(crc, json, json_len);
	crc = crc32c_update(crc, sums, sizeof(sums));
	crc = crc32c_update(crc, c->params, params_len);
	if (state_len)
		crc = crc32c_update(crc, c->opt_state, state_len);
	bytes_put_le32(trailer, crc);
	const void *bufs[] = {prefix, json, sums, c->params, c->opt_state, trailer};
	size_t lens[] = {sizeof(prefix), json_len,  sizeof(sums),
	                 params_len,     state_len, sizeof(trailer)};
	rc = atomic_file_writev(path, bufs, lens, 6, 0644, err);
	free(json);
	if (rc < 0)
		return -1;
	/* Keep the newest backup older than this one; anything newer belongs
	 * to a timeline that was abandoned. Failing to prune loses nothing. */
	n = checkpoint_list(dir, steps, CHECKPOINT_MAX_FILES, ignored);
	for (int i = 0; i < n; i++)
		if (steps[i] < c->pos.global_step) {
			older = steps[i];
			break;
		}
	prune(dir, c->pos.global_step, older, ignored);
	return 0;
}

int checkpoint_remove_all(const char *dir, char *err)
{
	return prune(dir, UINT64_MAX, UINT64_MAX, err);
}

/* Reads a decimal u64 held in a JSON string member. */
static int get_u64_string(const cJSON *h, const char *key, uint64_t *out, char *err)
{
	const char *s;
	char *end;

	if (json_get_string(h, "", key, &s, err) < 0)
		return -1;
	errno = 0;
	if (s[0] < '0' || s[0] > '9')
		return err_set(err, "'%s' is not a decimal number", key);
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return err_set(err, "'%s' is not a decimal number", key);
	*out = v;
	return 0;
}

/* Reads the header's fields into c, range-checked. Returns 0 or -1. */
static int read_header(const cJSON *h, struct checkpoint *c, int64_t *nparams, int64_t *nslots,
                       const char **opt, const char **hash, char *err)
{
	const char *format, *model;
	int64_t world, batch, epoch, step;

	if (json_get_string(h, "", "format", &format, err) < 0)
		return -1;
	if (strcmp(format, "mwj-backup") != 0)
		return err_set(err, "header says format '%s', expected 'mwj-backup'", format);
	if (json_get_string(h, "", "model", &model, err) < 0 ||
	    json_get_string(h, "", "arch_hash", hash, err) < 0 ||
	    json_get_i64(h, "", "num_params", 1, INT64_MAX / 16, nparams, err) < 0 ||
	    json_get_string(h, "", "optimizer", opt, err) < 0 ||
	    json_get_i64(h, "", "state_slots", 0, 2, nslots, err) < 0 ||
	    get_u64_string(h, "iterations", &c->iterations, err) < 0 ||
	    json_get_double(h, "", "learning_rate", 0.0, 1e9, &c->learning_rate, err) < 0 ||
	    json_get_double(h, "", "momentum", 0.0, 1.0, &c->momentum, err) < 0 ||
	    get_u64_string(h, "seed", &c->seed, err) < 0 ||
	    json_get_i64(h, "", "world", 1, MAX_WORLD, &world, err) < 0 ||
	    json_get_i64(h, "", "batch_size", 1, 1 << 20, &batch, err) < 0 ||
	    json_get_i64(h, "", "epoch", 0, INT32_MAX, &epoch, err) < 0 ||
	    json_get_i64(h, "", "step", 0, INT32_MAX, &step, err) < 0 ||
	    get_u64_string(h, "global_step", &c->pos.global_step, err) < 0 ||
	    get_u64_string(h, "examples", &c->pos.examples, err) < 0)
		return -1;
	snprintf(c->model, sizeof(c->model), "%s", model);
	c->pos.world = (uint32_t)world;
	c->pos.batch_size = (uint32_t)batch;
	c->pos.epoch = (int)epoch;
	c->pos.step = (long)step;
	return 0;
}

/* Checks that the sound backup b of len bytes (json_len of header) fits the
 * run c describes, and copies it in. */
static int take(const unsigned char *b, size_t len, size_t json_len, struct checkpoint *c,
                const char *path, char *err)
{
	struct checkpoint got = {0};
	int64_t nparams = 0, nslots = 0;
	const char *opt = "", *hash = "";
	char want[17], why[ERR_LEN];
	enum optimizer_kind kind;
	int rc = CHECKPOINT_CORRUPT;
	cJSON *h = json_parse((const char *)b + PREFIX_LEN, json_len, why);

	if (!h || read_header(h, &got, &nparams, &nslots, &opt, &hash, why) < 0) {
		err_set(err, "'%s': header: %s", path, why);
		goto out;
	}
	/* nparams is bounded by the length first, so the product cannot wrap. */
	if ((uint64_t)nparams > len / 4 || len != PREFIX_LEN + json_len + SUMS_LEN +
	                                              (size_t)nparams * 4 * (size_t)(1 + nslots) +
	                                              4) {
		err_set(err,
		        "'%s': %zu bytes, but its header describes %" PRId64
		        " parameters and %" PRId64 " state slots",
		        path, len, nparams, nslots);
		goto out;
	}
	rc = CHECKPOINT_INCOMPATIBLE;
	snprintf(want, sizeof(want), "%016" PRIx64, c->arch_hash);
	if (strcmp(got.model, c->model) != 0 || strcmp(hash, want) != 0 ||
	    (size_t)nparams != c->nparams) {
		err_set(err,
		        "'%s': backup is of model '%s' (architecture %s, %" PRId64
		        " parameters); this run trains '%s' (%s, %zu)",
		        path, got.model, hash, nparams, c->model, want, c->nparams);
		goto out;
	}
	if (optimizer_parse(opt, &kind) < 0 || kind != c->optimizer || nslots != c->nslots) {
		err_set(err,
		        "'%s': backup holds %s state with %" PRId64
		        " slot(s); this run uses %s with %d",
		        path, opt, nslots, optimizer_name(c->optimizer), c->nslots);
		goto out;
	}
	const unsigned char *p = b + PREFIX_LEN + json_len;
	double sums[3];
	memcpy(sums, p, sizeof(sums));
	p += SUMS_LEN;
	memcpy(c->params, p, c->nparams * sizeof(float));
	p += c->nparams * sizeof(float);
	if (c->nslots)
		memcpy(c->opt_state, p, (size_t)c->nslots * c->nparams * sizeof(float));
	got.pos.sums = (struct metrics){sums[0], sums[1], sums[2]};
	c->pos = got.pos;
	c->seed = got.seed;
	c->iterations = got.iterations;
	c->learning_rate = got.learning_rate;
	c->momentum = got.momentum;
	rc = 0;
out:
	cJSON_Delete(h);
	return rc;
}

/* A file larger than any backup of this run's model: most likely one of a
 * bigger model. Its header says so without reading the rest. Returns
 * CHECKPOINT_INCOMPATIBLE if it names another model, else CORRUPT. */
static int oversized(const char *path, const struct checkpoint *c, char *err)
{
	unsigned char head[PREFIX_LEN + 4096];
	char why[ERR_LEN];
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(head, 1, sizeof(head), f) : 0;
	struct checkpoint got = {0};
	int64_t nparams = 0, nslots = 0;
	const char *opt = "", *hash = "";
	cJSON *h = NULL;

	if (f)
		fclose(f);
	if (n > PREFIX_LEN && memcmp(head, MAGIC, sizeof(MAGIC)) == 0 &&
	    bytes_get_le32(head + 12) <= n - PREFIX_LEN)
		h = json_parse((const char *)head + PREFIX_LEN, bytes_get_le32(head + 12), why);
	if (h && read_header(h, &got, &nparams, &nslots, &opt, &hash, why) == 0 &&
	    (strcmp(got.model, c->model) != 0 || (size_t)nparams != c->nparams)) {
		err_set(err,
		        "'%s': backup is of model '%s' (%" PRId64 " parameters); this run "
		        "trains '%s' (%zu)",
		        path, got.model, nparams, c->model, c->nparams);
		cJSON_Delete(h);
		return CHECKPOINT_INCOMPATIBLE;
	}
	cJSON_Delete(h);
	return CHECKPOINT_CORRUPT;
}

int checkpoint_load(const char *path, struct checkpoint *c, char *err)
{
	size_t max = PREFIX_LEN + HEADER_MAX + SUMS_LEN +
	             c->nparams * sizeof(float) * (size_t)(1 + c->nslots) + 4;
	unsigned char *b = NULL;
	size_t len = 0, json_len;
	uint32_t version;
	int rc = CHECKPOINT_CORRUPT;

	if (file_read_all(path, max, &b, &len, err) < 0) {
		struct stat st;
		if (stat(path, &st) == 0 && (uintmax_t)st.st_size > max) {
			char why[ERR_LEN];
			int rc2 = oversized(path, c, why);
			if (rc2 == CHECKPOINT_INCOMPATIBLE)
				memcpy(err, why, ERR_LEN);
			return rc2;
		}
		return CHECKPOINT_CORRUPT;
	}
	if (len < sizeof(MAGIC) || memcmp(b, MAGIC, sizeof(MAGIC)) != 0) {
		err_set(err, "'%s': not an mwj backup (bad magic)", path);
		goto out;
	}
	if (len < PREFIX_LEN + 4) {
		err_set(err, "'%s': truncated: %zu bytes, less than a header", path, len);
		goto out;
	}
	if (crc32c(b, len - 4) != bytes_get_le32(b + len - 4)) {
		err_set(err, "'%s': checksum mismatch (file is corrupt or truncated)", path);
		goto out;
	}
	version = bytes_get_le32(b + 8);
	if (version != CHECKPOINT_VERSION) {
		err_set(err, "'%s': unsupported backup format version %u (this build reads %d)",
		        path, version, CHECKPOINT_VERSION);
		rc = CHECKPOINT_INCOMPATIBLE;
		goto out;
	}
	json_len = bytes_get_le32(b + 12);
	if (json_len > HEADER_MAX || json_len > len - PREFIX_LEN - 4 - SUMS_LEN) {
		err_set(err, "'%s': header claims %zu bytes, file has %zu", path, json_len, len);
		goto out;
	}
	rc = take(b, len, json_len, c, path, err);
out:
	free(b);
	return rc;
}
