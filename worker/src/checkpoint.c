/* checkpoint.c - the backup file: writing and reading it (format in
 * checkpoint.h; the directory is checkpoint_dir.c). */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
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
#define PREFIX_LEN  16 /* magic, version, header length */
#define SUMS_LEN    (3 * sizeof(double))
#define TRAILER_LEN 4
#define HEADER_MAX  65536 /* a real header is about 400 bytes */
#define HEAD_LEN    (PREFIX_LEN + HEADER_MAX)
#define CHUNK       65536 /* read at a time from a file too big to hold */
#define MAX_SLOTS   2     /* Adam's two moments */
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
	if (!memchr(c->model, '\0', sizeof(c->model)))
		return err_set(err, "'%s': model name not terminated", path);
	return 0;
}

int checkpoint_save(const char *dir, const struct checkpoint *c, char *err)
{
	char path[PATH_MAX], ignored[ERR_LEN];
	unsigned char prefix[PREFIX_LEN], trailer[TRAILER_LEN];
	double sums[3] = {c->pos.sums.loss_sum, c->pos.sums.correct, c->pos.sums.count};
	size_t params_len = c->nparams * sizeof(float);
	size_t state_len = c->nslots > 0 ? (size_t)c->nslots * params_len : 0;
	char *json;
	size_t json_len;
	uint32_t crc;
	int rc;

	if (checkpoint_path(dir, c->pos.global_step, path, sizeof(path)) < 0)
		return err_set(err, "backup directory '%s': path too long", dir);
	if (check_savable(c, path, err) < 0 || mkdir_p(dir, err) < 0)
		return -1;
	json = header_json(c);
	json_len = strlen(json);
	memcpy(prefix, MAGIC, sizeof(MAGIC));
	bytes_put_le32(prefix + 8, CHECKPOINT_VERSION);
	bytes_put_le32(prefix + 12, (uint32_t)json_len);
	crc = crc32c(prefix, sizeof(prefix));
	crc = crc32c_update(crc, json, json_len);
	crc = crc32c_update(crc, sums, sizeof(sums));
	crc = crc32c_update(crc, c->params, params_len);
	if (state_len)
		crc = crc32c_update(crc, c->opt_state, state_len);
	bytes_put_le32(trailer, crc);
	const void *bufs[] = {prefix, json, sums, c->params, c->opt_state, trailer};
	const size_t lens[] = {sizeof(prefix), json_len,  sizeof(sums),
	                       params_len,     state_len, sizeof(trailer)};
	rc = atomic_file_writev(path, bufs, lens, 6, 0644, err);
	free(json);
	if (rc < 0)
		return -1;
	/* The new backup is safe on disk; failing to prune loses nothing. */
	checkpoint_prune(dir, c->pos.global_step, ignored);
	return 0;
}

/* --- Reading --- */

/* A backup file as checkpoint_load checks it: its first have bytes in b
 * (all len of them, unless the file is too big for this run), and the
 * CRC-32C of all but its last 4 bytes beside what those 4 bytes hold. */
struct image {
	const unsigned char *b;
	size_t have, len;
	uint32_t crc, stored;
};

/* Checks magic, length, checksum, version and header length, in that
 * order: a newer format is only told from damage once the CRC is known to
 * be good. Returns 0 with the header length, CORRUPT or INCOMPATIBLE. */
static int check_frame(const struct image *im, const char *path, size_t *json_len, char *err)
{
	size_t n = im->have < sizeof(MAGIC) ? im->have : sizeof(MAGIC);
	uint32_t version;

	/* A few bytes that begin like a backup are a truncated one. */
	if (memcmp(im->b, MAGIC, n) != 0) {
		err_set(err, "'%s': not an mwj backup (bad magic)", path);
		return CHECKPOINT_CORRUPT;
	}
	if (im->len < PREFIX_LEN + TRAILER_LEN) {
		err_set(err, "'%s': truncated: %zu bytes, less than a header", path, im->len);
		return CHECKPOINT_CORRUPT;
	}
	if (im->crc != im->stored) {
		err_set(err, "'%s': checksum mismatch (file is corrupt or truncated)", path);
		return CHECKPOINT_CORRUPT;
	}
	version = bytes_get_le32(im->b + 8);
	if (version != CHECKPOINT_VERSION) {
		err_set(err,
		        "'%s': unsupported backup format version %" PRIu32 " (this build reads %d)",
		        path, version, CHECKPOINT_VERSION);
		return CHECKPOINT_INCOMPATIBLE;
	}
	*json_len = bytes_get_le32(im->b + 12);
	/* Length first: the subtraction must not wrap. */
	if (im->len < PREFIX_LEN + SUMS_LEN + TRAILER_LEN || *json_len > HEADER_MAX ||
	    *json_len > im->len - PREFIX_LEN - SUMS_LEN - TRAILER_LEN) {
		err_set(err, "'%s': header claims %zu bytes, the file has %zu", path, *json_len,
		        im->len);
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
static int read_model(const cJSON *h, struct checkpoint *got, const char **opt, char *err)
{
	const char *format, *model, *hash;
	int64_t version, nparams, nslots;

	if (json_get_string(h, "", "format", &format, err) < 0)
		return -1;
	if (strcmp(format, "mwj-backup") != 0)
		return err_set(err, "'format' is '%.64s', expected 'mwj-backup'", format);
	if (json_get_i64(h, "", "version", 0, INT32_MAX, &version, err) < 0)
		return -1;
	if (version != CHECKPOINT_VERSION)
		return err_set(err, "'version' is %" PRId64 " but the prefix says %d", version,
		               CHECKPOINT_VERSION);
	if (json_get_string(h, "", "model", &model, err) < 0 ||
	    json_get_string(h, "", "arch_hash", &hash, err) < 0 ||
	    json_get_i64(h, "", "num_params", 1, INT64_MAX, &nparams, err) < 0 ||
	    json_get_string(h, "", "optimizer", opt, err) < 0 ||
	    json_get_i64(h, "", "state_slots", 0, MAX_SLOTS, &nslots, err) < 0)
		return -1;
	/* Compared whole, not cut to fit: a longer name is another model. */
	if (strlen(model) >= sizeof(got->model))
		return err_set(err, "'model' is longer than %zu bytes", sizeof(got->model) - 1);
	if (parse_hash(hash, &got->arch_hash) < 0)
		return err_set(err, "'arch_hash' must be 16 lower-case hex digits");
	memcpy(got->model, model, strlen(model) + 1);
	got->nparams = (size_t)nparams;
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

	if (strcmp(got->model, c->model) != 0 || got->arch_hash != c->arch_hash ||
	    got->nparams != c->nparams) {
		err_set(err,
		        "'%s': backup is of model '%s' (architecture %016" PRIx64
		        ", %zu parameters)"
		        ", this run trains '%s' (architecture %016" PRIx64 ", %zu parameters)",
		        path, got->model, got->arch_hash, got->nparams, c->model, c->arch_hash,
		        c->nparams);
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

/* Parses the header of a sound file, checks it against the file's length
 * (CORRUPT) and then against the run c (INCOMPATIBLE). Fills got with all
 * but the metric sums and the buffers. */
static int check_header(const struct image *im, size_t json_len, const struct checkpoint *c,
                        const char *path, struct checkpoint *got, char *err)
{
	const char *opt = NULL;
	char why[ERR_LEN];
	int rc = CHECKPOINT_CORRUPT;
	cJSON *h = json_parse((const char *)im->b + PREFIX_LEN, json_len, why);

	if (!h || read_model(h, got, &opt, why) < 0 || read_position(h, got, why) < 0) {
		err_set(err, "'%s': header: %s", path, why);
		goto out;
	}
	/* nparams is bounded by the length first, so that the product cannot
	 * wrap. The CRC was good: a writer got this wrong. */
	if (got->nparams > im->len / sizeof(float) ||
	    im->len != PREFIX_LEN + json_len + SUMS_LEN +
	                   got->nparams * sizeof(float) * (size_t)(1 + got->nslots) + TRAILER_LEN) {
		err_set(
		    err,
		    "'%s': %zu bytes long, but its header describes %zu parameters and %d state "
		    "slots",
		    path, im->len, got->nparams, got->nslots);
		goto out;
	}
	rc = check_fits(got, opt, c, path, err);
out:
	cJSON_Delete(h);
	return rc;
}

/* The largest file checkpoint_load reads whole: a backup of this run's
 * model with the longest header allowed. Saturates rather than wraps. */
static size_t max_len(const struct checkpoint *c)
{
	size_t fixed = HEAD_LEN + SUMS_LEN + TRAILER_LEN;
	size_t per_param = sizeof(float) * (size_t)(1 + (c->nslots > 0 ? c->nslots : 0));

	if (c->nparams > (SIZE_MAX - fixed) / per_param)
		return SIZE_MAX;
	return fixed + c->nparams * per_param;
}

/* Reads the file at path through a CHUNK-sized buffer, keeping only its
 * first HEAD_LEN bytes in *head (malloc'd; the caller frees it, also on
 * failure), and fills im. */
static int read_streaming(const char *path, struct image *im, unsigned char **head, char *err)
{
	unsigned char trailer[TRAILER_LEN] = {0};
	unsigned char *scratch = xmalloc(CHUNK);
	struct stat st;
	size_t off = 0, body;
	int rc = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*head = xmalloc(HEAD_LEN);
	if (fd < 0 || fstat(fd, &st) < 0) {
		err_set(err, "open '%s': %s", path, strerror(errno));
		goto out;
	}
	im->len = (size_t)st.st_size;
	im->have = im->len < HEAD_LEN ? im->len : HEAD_LEN;
	im->b = *head;
	im->crc = 0;
	body = im->len >= TRAILER_LEN ? im->len - TRAILER_LEN : 0;
	while (off < im->len) {
		unsigned char *dst = off < im->have ? *head + off : scratch;
		size_t want = off < im->have ? im->have - off : CHUNK;
		ssize_t n = read(fd, dst, want < im->len - off ? want : im->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err_set(err, "read '%s': %s", path,
			        n < 0 ? strerror(errno) : "file shrank");
			goto out;
		}
		size_t got = (size_t)n;
		if (off < body)
			im->crc = crc32c_update(im->crc, dst, got < body - off ? got : body - off);
		for (size_t i = body > off ? body - off : 0; i < got; i++)
			trailer[off + i - body] = dst[i];
		off += got;
	}
	im->stored = bytes_get_le32(trailer);
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(scratch);
	return rc;
}

/* A file too big to be a backup of this run's model: most likely a sound
 * backup of a bigger one, which must stop the run rather than be passed
 * over as damaged. It is checked like any other, with the checksum
 * streamed over it so that a huge file never sits in memory. Never
 * returns 0. */
static int load_oversized(const char *path, const struct checkpoint *c, char *err)
{
	struct checkpoint got = {0};
	struct image im = {0};
	unsigned char *head = NULL;
	size_t json_len = 0;
	int rc = CHECKPOINT_CORRUPT;

	if (read_streaming(path, &im, &head, err) < 0)
		goto out;
	rc = check_frame(&im, path, &json_len, err);
	if (rc == 0)
		rc = check_header(&im, json_len, c, path, &got, err);
	/* Cannot happen: a header that fits this run makes the file small. */
	if (rc == 0) {
		err_set(err, "'%s': larger than any backup of this run", path);
		rc = CHECKPOINT_CORRUPT;
	}
out:
	free(head);
	return rc;
}

static int is_larger_file(const char *path, size_t max)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max;
}

int checkpoint_load(const char *path, struct checkpoint *c, char *err)
{
	struct checkpoint got = {0};
	struct image im = {0};
	unsigned char *b = NULL;
	size_t len = 0, json_len = 0, max = max_len(c);
	int rc;

	if (file_read_all(path, max, &b, &len, err) < 0)
		return is_larger_file(path, max) ? load_oversized(path, c, err)
		                                 : CHECKPOINT_CORRUPT;
	im.b = b;
	im.have = im.len = len;
	if (len >= PREFIX_LEN + TRAILER_LEN) {
		im.crc = crc32c(b, len - TRAILER_LEN);
		im.stored = bytes_get_le32(b + len - TRAILER_LEN);
	}
	rc = check_frame(&im, path, &json_len, err);
	if (rc == 0)
		rc = check_header(&im, json_len, c, path, &got, err);
	if (rc == 0) {
		const unsigned char *p = b + PREFIX_LEN + json_len;
		double sums[3];
		memcpy(sums, p, SUMS_LEN);
		p += SUMS_LEN;
		memcpy(c->params, p, c->nparams * sizeof(float));
		if (c->nslots > 0)
			memcpy(c->opt_state, p + c->nparams * sizeof(float),
			       (size_t)c->nslots * c->nparams * sizeof(float));
		got.pos.sums = (struct metrics){sums[0], sums[1], sums[2]};
		c->pos = got.pos;
		c->seed = got.seed;
		memcpy(c->model, got.model, sizeof(c->model));
		c->iterations = got.iterations;
		c->learning_rate = got.learning_rate;
		c->momentum = got.momentum;
	}
	free(b);
	return rc;
}
