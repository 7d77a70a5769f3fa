/* test_checkpoint.c - backup files: the bitwise round trip of everything a
 * resume needs, which files a directory keeps, and every way a file is
 * refused, told apart as damaged (use an older one) or incompatible (stop).
 *
 * Files are edited here from the format in checkpoint.h, with the CRC fixed
 * up after each edit except where the CRC is what is tested, so that each
 * damaged field reaches the check meant for it; version-1 files (mwj 0.1)
 * are built byte by byte as its writer wrote them. Each test gets its own
 * mkdtemp directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "checkpoint.h"
#include "crc32c.h"
#include "err.h"
#include "testutil.h"

#define N          1000 /* parameters of the made-up model */
#define NSTATE     24   /* its model state: moving means and variances */
#define PREFIX_LEN 16
#define SUMS_LEN   48 /* loss, count and four metrics, f64 */
/* sums, params, model state and Adam's 2 slots */
#define PAYLOAD (SUMS_LEN + (3 * N + NSTATE) * 4)
/* where the model state ends, from the end of a file with 2 slots */
#define MODEL_STATE_END (4 + 2 * N * 4)

static const unsigned char MAGIC[8] = {'M', 'W', 'J', 'B', 'A', 'C', 'K', 'P'};

struct fixture {
	char dir[TESTUTIL_TMPDIR_LEN]; /* first, for testutil_fixture_setup() */
	char err[ERR_LEN];
	float params[N], state[3 * N], model_state[NSTATE];
	float got_params[N], got_state[3 * N], got_model_state[NSTATE];
};

static int setup(void **state)
{
	return testutil_fixture_setup(state, sizeof(struct fixture), "checkpoint");
}

static int teardown(void **state)
{
	return testutil_fixture_teardown(state);
}

/* An Adam backup of a 1000-parameter model with 24 floats of state at
 * global step step, with values that only a bitwise copy keeps. */
static struct checkpoint sample(struct fixture *fx, uint64_t step)
{
	struct checkpoint c = {
	    .pos = {.epoch = 3,
	            .step = 17,
	            .global_step = step,
	            .examples = (1ull << 60) + 3,
	            .world = 4,
	            .batch_size = 32,
	            .sums = {.loss_sum = 0.1,
	                     .count = 123456789.0,
	                     .sums = {1e300, -0.0, 4.9e-324 /* subnormal */, 0x1p-1022}}},
	    .seed = UINT64_MAX,
	    .model = "cnn",
	    .arch_hash = 0x0123456789abcdefull,
	    .nparams = N,
	    .nstate = NSTATE,
	    .optimizer = OPT_ADAM,
	    .nslots = 2,
	    .iterations = (1ull << 53) + 1,
	    .learning_rate = 0.001,
	    .momentum = 0.0,
	    .params = fx->params,
	    .model_state = fx->model_state,
	    .opt_state = fx->state,
	};

	for (int i = 0; i < N; i++)
		fx->params[i] = (float)i * 0.1f + (float)step;
	fx->params[1] = -0.0f;
	fx->params[2] = nanf("0x2a");
	fx->params[3] = 1e-45f; /* subnormal */
	for (int i = 0; i < 3 * N; i++)
		fx->state[i] = 1.0f / (float)(i + 1);
	for (int i = 0; i < NSTATE; i++)
		fx->model_state[i] = (float)(i + 1) * 1e-3f - (float)step;
	fx->model_state[0] = -0.0f;
	fx->model_state[1] = nanf("0x15");
	fx->model_state[NSTATE - 1] = 1e-40f; /* subnormal */
	return c;
}

/* What this run builds, with buffers for a load. */
static struct checkpoint want(struct fixture *fx)
{
	struct checkpoint c = {.model = "cnn",
	                       .arch_hash = 0x0123456789abcdefull,
	                       .nparams = N,
	                       .nstate = NSTATE,
	                       .optimizer = OPT_ADAM,
	                       .nslots = 2,
	                       .params = fx->got_params,
	                       .model_state = fx->got_model_state,
	                       .opt_state = fx->got_state};
	return c;
}

static void save(struct fixture *fx, const struct checkpoint *c)
{
	if (checkpoint_save(fx->dir, c, fx->err) < 0)
		fail_msg("%s", fx->err);
}

static void path_of(const struct fixture *fx, uint64_t step, char *path)
{
	assert_int_equal(checkpoint_path(fx->dir, step, path, PATH_MAX), 0);
}

static int load(struct fixture *fx, uint64_t step, struct checkpoint *c)
{
	char path[PATH_MAX];

	path_of(fx, step, path);
	*c = want(fx);
	return checkpoint_load(path, c, fx->err);
}

/* Rewrites the trailing CRC of a backup's bytes so that it is sound. */
static void fix_crc(unsigned char *b, size_t len)
{
	bytes_put_le32(b + len - 4, crc32c(b, len - 4));
}

/* Saves sample(fx, step) and returns the file's path and bytes; the caller
 * frees them. */
static unsigned char *saved_sample(struct fixture *fx, uint64_t step, char *path, size_t *len)
{
	struct checkpoint c = sample(fx, step);

	save(fx, &c);
	path_of(fx, step, path);
	return testutil_read_file(path, len);
}

static void assert_backups(struct fixture *fx, int n, const uint64_t *expect)
{
	uint64_t steps[8];

	assert_int_equal(checkpoint_list(fx->dir, steps, 8, fx->err), n);
	for (int i = 0; i < n; i++)
		assert_true(steps[i] == expect[i]);
}

static void touch(const struct fixture *fx, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", fx->dir, name);
	testutil_write_file(path, "x", 1);
}

static int exists(const struct fixture *fx, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", fx->dir, name);
	return access(path, F_OK) == 0;
}

/* --- Round trips --- */

static void test_a_backup_round_trips_every_field_bitwise(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c = sample(fx, 42), got;

	save(fx, &c);
	memset(fx->got_params, 0xff, sizeof(fx->got_params));
	memset(fx->got_model_state, 0xff, sizeof(fx->got_model_state));
	assert_int_equal(load(fx, 42, &got), 0);
	assert_memory_equal(fx->got_params, fx->params, sizeof(fx->params));
	assert_memory_equal(fx->got_model_state, fx->model_state, sizeof(fx->model_state));
	assert_memory_equal(fx->got_state, fx->state, 2 * N * sizeof(float));
	assert_memory_equal(&got.pos.sums, &c.pos.sums, sizeof(c.pos.sums));
	assert_int_equal(got.pos.epoch, 3);
	assert_int_equal(got.pos.step, 17);
	assert_true(got.pos.global_step == 42);
	assert_true(got.pos.examples == (1ull << 60) + 3);
	assert_int_equal(got.pos.world, 4);
	assert_int_equal(got.pos.batch_size, 32);
	assert_true(got.seed == UINT64_MAX);
	assert_true(got.iterations == (1ull << 53) + 1);
	assert_true(bytes_f64_bits(got.learning_rate) == bytes_f64_bits(0.001));
	assert_true(got.momentum == 0.0);
	assert_string_equal(got.model, "cnn");
	assert_ptr_equal(got.params, fx->got_params);
	assert_ptr_equal(got.model_state, fx->got_model_state);
	assert_ptr_equal(got.opt_state, fx->got_state);
	assert_int_equal(got.nstate, NSTATE);
}

/* The six sums are doubles in the file, in the order of metrics_to_words,
 * and come back as the same bits: a NaN payload, -0, a subnormal. */
static void test_the_six_metric_sums_round_trip_bit_for_bit(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c = sample(fx, 6), got;
	const double want_sums[METRICS_WORDS] = {nan("0x7"), 5e-324, -0.0, 1e308, -1.5, 3.0};
	char path[PATH_MAX];
	size_t len;

	metrics_from_words(&c.pos.sums, want_sums);
	save(fx, &c);
	path_of(fx, 6, path);
	unsigned char *b = testutil_read_file(path, &len);
	const unsigned char *at = b + PREFIX_LEN + bytes_get_le32(b + 12);
	for (int i = 0; i < METRICS_WORDS; i++) {
		double d;
		memcpy(&d, at + 8 * i, sizeof(d));
		assert_true(bytes_f64_bits(d) == bytes_f64_bits(want_sums[i]));
	}
	free(b);
	assert_int_equal(load(fx, 6, &got), 0);
	double back[METRICS_WORDS];
	metrics_to_words(back, &got.pos.sums);
	for (int i = 0; i < METRICS_WORDS; i++)
		assert_true(bytes_f64_bits(back[i]) == bytes_f64_bits(want_sums[i]));
}

/* Centered RMSprop with momentum keeps the most slots a backup holds. */
static void test_a_backup_with_three_optimizer_slots_round_trips(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c = sample(fx, 11), got;
	char path[PATH_MAX];
	size_t len;

	c.optimizer = OPT_RMSPROP;
	c.nslots = OPTIMIZER_MAX_SLOTS;
	c.momentum = 0.9;
	save(fx, &c);
	path_of(fx, 11, path);
	unsigned char *b = testutil_read_file(path, &len);
	assert_int_equal(len, PREFIX_LEN + bytes_get_le32(b + 12) + SUMS_LEN +
	                          (4 * N + NSTATE) * sizeof(float) + 4);
	free(b);
	got = want(fx);
	got.optimizer = OPT_RMSPROP;
	got.nslots = 3;
	memset(fx->got_state, 0xff, sizeof(fx->got_state));
	assert_int_equal(checkpoint_load(path, &got, fx->err), 0);
	assert_memory_equal(fx->got_state, fx->state, sizeof(fx->state));
	assert_memory_equal(fx->got_params, fx->params, sizeof(fx->params));
	assert_memory_equal(fx->got_model_state, fx->model_state, sizeof(fx->model_state));
	assert_true(bytes_f64_bits(got.momentum) == bytes_f64_bits(0.9));
	/* The same file for a run with Adam's two slots is another layout. */
	got = want(fx);
	assert_int_equal(checkpoint_load(path, &got, fx->err), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err,
	                         "backup holds rmsprop state with 3 slots; this run uses adam");
}

static void test_a_backup_without_optimizer_or_model_state_round_trips(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c = sample(fx, 8), got;

	c.optimizer = OPT_SGD;
	c.nslots = 0;
	c.opt_state = NULL;
	c.nstate = 0;
	c.model_state = NULL;
	c.momentum = 0.1;
	save(fx, &c);
	got = want(fx);
	got.optimizer = OPT_SGD;
	got.nslots = 0;
	got.opt_state = NULL;
	got.nstate = 0;
	got.model_state = NULL;
	char path[PATH_MAX];
	path_of(fx, 8, path);
	size_t len;
	free(testutil_read_file(path, &len));
	assert_true(len > (size_t)N * 4 && len < (size_t)N * 4 + 1024);
	assert_int_equal(checkpoint_load(path, &got, fx->err), 0);
	assert_memory_equal(fx->got_params, fx->params, sizeof(fx->params));
	assert_true(bytes_f64_bits(got.momentum) == bytes_f64_bits(0.1));
	assert_null(got.opt_state);
	assert_null(got.model_state);
}

static void test_the_header_is_readable_json_a_tool_can_use(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX];
	size_t len;
	unsigned char *b = saved_sample(fx, 7, path, &len);

	assert_memory_equal(b, "MWJBACKP", 8);
	assert_int_equal(bytes_get_le32(b + 8), 2);
	uint32_t hlen = bytes_get_le32(b + 12);
	char *json = calloc(1, hlen + 1);
	assert_non_null(json);
	memcpy(json, b + PREFIX_LEN, hlen);
	cJSON *h = testutil_json_object(json);
	assert_string_equal(testutil_json_string(h, "format"), "mwj-backup");
	assert_true(testutil_json_number(h, "version") == 2);
	assert_string_equal(testutil_json_string(h, "arch_hash"), "0123456789abcdef");
	assert_string_equal(testutil_json_string(h, "global_step"), "7");
	assert_string_equal(testutil_json_string(h, "seed"), "18446744073709551615");
	assert_string_equal(testutil_json_string(h, "iterations"), "9007199254740993");
	assert_string_equal(testutil_json_string(h, "optimizer"), "adam");
	assert_true(testutil_json_number(h, "num_params") == N);
	assert_true(testutil_json_number(h, "state_slots") == 2);
	assert_true(testutil_json_number(h, "model_state") == NSTATE);
	assert_int_equal(len, PREFIX_LEN + hlen + PAYLOAD + 4);
	assert_int_equal(bytes_get_le32(b + len - 4), crc32c(b, len - 4));
	cJSON_Delete(h);
	free(json);
	free(b);
}

/* --- The directory --- */

static void test_list_gives_the_newest_first_and_ignores_other_files(void **state)
{
	struct fixture *fx = *state;
	const char *others[] = {"backup-12.mwjb",
	                        "backup-000000000001.mwjb.tmp.123",
	                        "notes.txt",
	                        "backup-00000000000x.mwjb",
	                        "backup-000000000002.mwjbx",
	                        "backup-0000000000003.mwjb",
	                        "xbackup-000000000004.mwjb"};
	uint64_t steps[8];
	char path[PATH_MAX];
	struct checkpoint c;

	/* Copies written directly, and the other files after the one save, so
	 * that no save prunes them. */
	c = sample(fx, 5);
	save(fx, &c);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		touch(fx, others[i]);
	path_of(fx, 5, path);
	size_t len;
	void *b = testutil_read_file(path, &len);
	const uint64_t copies[] = {40, 300, 7, 999999999999};
	for (size_t i = 0; i < sizeof(copies) / sizeof(copies[0]); i++) {
		path_of(fx, copies[i], path);
		testutil_write_file(path, b, len);
	}
	free(b);
	assert_int_equal(checkpoint_list(fx->dir, steps, 8, fx->err), 5);
	assert_true(steps[0] == 999999999999 && steps[1] == 300 && steps[2] == 40 &&
	            steps[3] == 7 && steps[4] == 5);
	assert_int_equal(checkpoint_list(fx->dir, steps, 2, fx->err), 2);
	assert_true(steps[0] == 999999999999 && steps[1] == 300);
	assert_int_equal(checkpoint_list(fx->dir, steps, 0, fx->err), 0);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		assert_true(exists(fx, others[i]));
}

static void test_a_missing_directory_holds_no_backups(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX];
	uint64_t steps[2];

	snprintf(path, sizeof(path), "%s/none", fx->dir);
	assert_int_equal(checkpoint_list(path, steps, 2, fx->err), 0);
	assert_int_equal(checkpoint_remove_all(path, fx->err), 0);
	/* A file where the directory should be cannot be read as one. */
	touch(fx, "file");
	snprintf(path, sizeof(path), "%s/file", fx->dir);
	assert_int_equal(checkpoint_list(path, steps, 2, fx->err), -1);
	testutil_assert_contains(fx->err, path);
}

static void test_a_save_creates_the_directory(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c = sample(fx, 1);
	char dir[PATH_MAX];
	uint64_t steps[2];

	snprintf(dir, sizeof(dir), "%s/a/b", fx->dir);
	assert_int_equal(checkpoint_save(dir, &c, fx->err), 0);
	assert_int_equal(checkpoint_list(dir, steps, 2, fx->err), 1);
	assert_true(steps[0] == 1);
}

static void test_a_save_keeps_itself_and_the_newest_older_backup(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c;

	for (uint64_t s = 10; s <= 30; s += 10) {
		c = sample(fx, s);
		save(fx, &c);
	}
	assert_backups(fx, 2, (const uint64_t[]){30, 20});
	/* Going back to step 25 (all workers restarted from an older backup):
	 * 30 belongs to the abandoned run and goes. */
	c = sample(fx, 25);
	save(fx, &c);
	assert_backups(fx, 2, (const uint64_t[]){25, 20});
	/* Going back before every backup left: none is older, so it is alone. */
	c = sample(fx, 15);
	save(fx, &c);
	assert_backups(fx, 1, (const uint64_t[]){15});
	/* Saving a step again replaces it and keeps its predecessor. */
	c = sample(fx, 16);
	save(fx, &c);
	save(fx, &c);
	assert_backups(fx, 2, (const uint64_t[]){16, 15});
}

static void test_a_save_removes_only_temporary_files_of_backups(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c = sample(fx, 10);
	const char *stale[] = {"backup-000000000040.mwjb.tmp.999",
	                       "backup-000000000005.mwjb.tmp.1"};
	const char *kept[] = {"model.mwj.tmp.12", "backup-000000000040.mwjb.tmp.",
	                      "backup-000000000040.mwjb.tmp.12x", "backup-000000000040.mwjb.bak",
	                      "notes.txt"};

	for (size_t i = 0; i < sizeof(stale) / sizeof(stale[0]); i++)
		touch(fx, stale[i]);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		touch(fx, kept[i]);
	save(fx, &c);
	for (size_t i = 0; i < sizeof(stale) / sizeof(stale[0]); i++)
		assert_false(exists(fx, stale[i]));
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		assert_true(exists(fx, kept[i]));
	assert_backups(fx, 1, (const uint64_t[]){10});
}

static void test_remove_all_takes_backups_and_leaves_other_files(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c;

	for (uint64_t s = 1; s <= 2; s++) {
		c = sample(fx, s);
		save(fx, &c);
	}
	touch(fx, "model.mwj");
	touch(fx, "model.mwj.tmp.77");
	touch(fx, "backup-000000000003.mwjb.tmp.77");
	assert_int_equal(checkpoint_remove_all(fx->dir, fx->err), 0);
	assert_backups(fx, 0, NULL);
	assert_false(exists(fx, "backup-000000000003.mwjb.tmp.77"));
	assert_true(exists(fx, "model.mwj"));
	assert_true(exists(fx, "model.mwj.tmp.77"));
}

static void test_a_path_or_step_that_does_not_fit_is_refused(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c = sample(fx, 1000000000000ull);
	char small[16], path[PATH_MAX];

	assert_int_equal(checkpoint_path("/d", 7, path, sizeof(path)), 0);
	assert_string_equal(path, "/d/backup-000000000007.mwjb");
	assert_int_equal(checkpoint_path("/d", 7, small, sizeof(small)), -1);
	assert_int_equal(checkpoint_path("/d", 7, path, 28), 0);
	assert_int_equal(checkpoint_path("/d", 7, path, 27), -1);
	/* A 13-digit step would make a file no list could find. */
	assert_int_equal(checkpoint_save(fx->dir, &c, fx->err), -1);
	testutil_assert_contains(fx->err, "has more than 12 digits");
	assert_backups(fx, 0, NULL);
}

/* --- Damaged files --- */

static void test_a_damaged_byte_anywhere_is_a_corrupt_backup(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint got;
	char path[PATH_MAX];
	size_t len;
	unsigned char *good = saved_sample(fx, 9, path, &len);
	/* The prefix, the header, the sums, the params, the model state (its
	 * first and last byte), the slots and the CRC. */
	const size_t at[] = {9,
	                     13,
	                     20,
	                     len - 4 - PAYLOAD,
	                     len - 4 - PAYLOAD + SUMS_LEN - 1,
	                     len - MODEL_STATE_END - NSTATE * 4,
	                     len - MODEL_STATE_END - 1,
	                     len - 4 * N,
	                     len / 2,
	                     len - 5,
	                     len - 1};

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		unsigned char *b = malloc(len);
		assert_non_null(b);
		memcpy(b, good, len);
		b[at[i]] ^= 0x10;
		testutil_write_file(path, b, len);
		free(b);
		memset(fx->got_params, 0, sizeof(fx->got_params));
		assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
		testutil_assert_contains(fx->err, path);
		testutil_assert_contains(fx->err, "checksum mismatch");
	}
	free(good);
}

static void test_a_truncated_backup_is_corrupt(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint got;
	char path[PATH_MAX];
	size_t len;
	unsigned char *good = saved_sample(fx, 9, path, &len);
	const size_t cut[] = {0, 4, 8, 12, 19, 20, PREFIX_LEN + 10, len / 2, len - 4, len - 1};

	for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		testutil_write_file(path, good, cut[i]);
		assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
		testutil_assert_contains(fx->err, path);
		testutil_assert_matches(fx->err, "truncated|checksum mismatch");
	}
	free(good);
}

static void test_a_file_that_is_no_backup_is_corrupt(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX];
	struct checkpoint got;

	path_of(fx, 3, path);
	testutil_write_file(path, "MWJMODEL and some more bytes after it", 37);
	assert_int_equal(load(fx, 3, &got), CHECKPOINT_CORRUPT);
	testutil_assert_contains(fx->err, "not an mwj backup (bad magic)");
	testutil_assert_contains(fx->err, path);
	testutil_write_file(path, "MW", 2);
	assert_int_equal(load(fx, 3, &got), CHECKPOINT_CORRUPT);
	testutil_assert_contains(fx->err, "truncated");
	/* No file at all is damage too: an older backup may still do. */
	unlink(path);
	assert_int_equal(load(fx, 3, &got), CHECKPOINT_CORRUPT);
	testutil_assert_contains(fx->err, path);
}

/* A backup far longer than its header says (sparse, 512 MiB) is damaged
 * by its size alone: refused without being read, let alone held. */
static void test_a_backup_longer_than_its_header_says_is_corrupt_without_being_read(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint got;
	char path[PATH_MAX];
	size_t len;
	unsigned char *good = saved_sample(fx, 9, path, &len);
	long long read0 = testutil_bytes_read(), rss0 = testutil_peak_rss();

	free(good);
	assert_int_equal(truncate(path, 512ll << 20), 0);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
	print_message("    %s\n", fx->err);
	testutil_assert_contains(fx->err, path);
	testutil_assert_contains(fx->err,
	                         "536870912 bytes, but its header describes 1000 parameters");
	assert_true(testutil_bytes_read() - read0 < (1 << 20));
	assert_true(testutil_peak_rss() - rss0 < (64ll << 20));
}

/* A device or FIFO under a backup's name is damage, found at once. */
static void test_a_backup_that_is_not_a_regular_file_is_corrupt(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint got;
	char path[PATH_MAX];

	path_of(fx, 9, path);
	assert_int_equal(symlink("/dev/zero", path), 0);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
	testutil_assert_contains(fx->err, path);
	testutil_assert_contains(fx->err, "not a regular file");
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
	testutil_assert_contains(fx->err, "not a regular file");
}

/* --- Backups of something else --- */

/* Loads step 9 as a run described by edit of want(). */
static int load_as(struct fixture *fx, void (*edit)(struct checkpoint *))
{
	char path[PATH_MAX];
	struct checkpoint c = want(fx);

	edit(&c);
	path_of(fx, 9, path);
	return checkpoint_load(path, &c, fx->err);
}

static void other_hash(struct checkpoint *c)
{
	c->arch_hash ^= 1;
}
static void other_name(struct checkpoint *c)
{
	snprintf(c->model, sizeof(c->model), "cnn-pool");
}
static void fewer_params(struct checkpoint *c)
{
	c->nparams = N / 2;
}
static void less_model_state(struct checkpoint *c)
{
	c->nstate = NSTATE - 1;
}
static void no_model_state(struct checkpoint *c)
{
	c->nstate = 0;
	c->model_state = NULL;
}
static void sgd_run(struct checkpoint *c)
{
	c->optimizer = OPT_SGD;
	c->nslots = 0;
	c->opt_state = NULL;
}
static void sgd_momentum_run(struct checkpoint *c)
{
	c->optimizer = OPT_SGD;
	c->nslots = 1;
}

static void test_a_backup_of_another_model_or_optimizer_is_incompatible(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c = sample(fx, 9);
	char path[PATH_MAX];

	save(fx, &c);
	path_of(fx, 9, path);
	assert_int_equal(load_as(fx, other_hash), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err, path);
	testutil_assert_contains(fx->err,
	                         "backup is of model 'cnn' (architecture 0123456789abcdef");
	testutil_assert_contains(fx->err, "this run trains 'cnn' (architecture 0123456789abcdee");
	assert_int_equal(load_as(fx, fewer_params), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err,
	                         "1000 parameters, 24 floats of state), this run trains 'cnn' "
	                         "(architecture 0123456789abcdef, 500 parameters, 24 floats");
	/* The state's length is the model's too: batch normalisation added or
	 * taken out. */
	assert_int_equal(load_as(fx, less_model_state), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err, "1000 parameters, 24 floats of state), this run trains "
	                                  "'cnn' (architecture 0123456789abcdef, 1000 parameters, "
	                                  "23 floats of state)");
	assert_int_equal(load_as(fx, no_model_state), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err, "this run trains 'cnn' (architecture 0123456789abcdef, "
	                                  "1000 parameters, 0 floats of state)");
	assert_int_equal(load_as(fx, sgd_run), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(
	    fx->err, "backup holds adam state with 2 slots; this run uses sgd (0 slots)");
	assert_int_equal(load_as(fx, sgd_momentum_run), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err, "this run uses sgd (1 slot)");
}

/* The architecture is the model, its name only a label (mwj 0.1 wrote
 * "cnn", a Keras file says "sequential"): a backup of the same layers
 * under another name is restored, and keeps the name it was saved with. */
static void test_a_backup_of_the_same_architecture_under_another_name_is_restored(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c = sample(fx, 9), got = want(fx);
	char path[PATH_MAX];

	snprintf(c.model, sizeof(c.model), "sequential");
	save(fx, &c);
	path_of(fx, 9, path);
	assert_int_equal(checkpoint_load(path, &got, fx->err), 0);
	assert_string_equal(got.model, "sequential");
	assert_memory_equal(fx->got_params, fx->params, sizeof(fx->params));
	assert_int_equal(load_as(fx, other_name), 0);
}

/* A backup far bigger than any of this run's model: read in chunks, not
 * whole, and still told apart from damage. */
static void test_a_backup_of_a_bigger_model_is_incompatible_not_damaged(void **state)
{
	struct fixture *fx = *state;
	enum { BIG = 50 * N };
	float *params = calloc(BIG, sizeof(float)), *slots = calloc(2 * BIG, sizeof(float));
	struct checkpoint c = sample(fx, 9), got;
	char path[PATH_MAX];
	size_t len;

	assert_non_null(params);
	assert_non_null(slots);
	snprintf(c.model, sizeof(c.model), "cnn-big");
	c.nparams = BIG;
	c.params = params;
	c.opt_state = slots;
	save(fx, &c);
	path_of(fx, 9, path);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err, "backup is of model 'cnn-big'");
	testutil_assert_contains(fx->err, path);
	unsigned char *b = testutil_read_file(path, &len);
	b[len - 100] ^= 1;
	testutil_write_file(path, b, len);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
	testutil_assert_contains(fx->err, "checksum mismatch");
	b[len - 100] ^= 1;
	testutil_write_file(path, b, len - 1);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
	testutil_assert_contains(fx->err, "truncated");
	bytes_put_le32(b + 8, 3);
	fix_crc(b, len);
	testutil_write_file(path, b, len);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err, "unsupported backup format version 3");
	b[0] = 'X';
	testutil_write_file(path, b, len);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
	testutil_assert_contains(fx->err, "bad magic");
	free(b);
	free(params);
	free(slots);
}

static void test_a_newer_format_version_is_incompatible(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint got;
	char path[PATH_MAX];
	size_t len;
	unsigned char *b = saved_sample(fx, 9, path, &len);

	bytes_put_le32(b + 8, 3);
	fix_crc(b, len);
	testutil_write_file(path, b, len);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err, path);
	testutil_assert_contains(fx->err,
	                         "unsupported backup format version 3 (this build reads 2)");
	/* No version came before 1. */
	bytes_put_le32(b + 8, 0);
	fix_crc(b, len);
	testutil_write_file(path, b, len);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err, "unsupported backup format version 0");
	free(b);
}

/* --- Sound files from a buggy or hostile writer --- */

/* Writes a backup of step 9 whose prefix says format version 2 and hlen,
 * with json, payload zero bytes and a sound CRC. */
static void write_raw(struct fixture *fx, const char *json, size_t payload, uint32_t hlen)
{
	char path[PATH_MAX];
	size_t jlen = strlen(json), len = PREFIX_LEN + jlen + payload + 4;
	unsigned char *b = calloc(1, len);

	assert_non_null(b);
	memcpy(b, MAGIC, sizeof(MAGIC));
	bytes_put_le32(b + 8, 2);
	bytes_put_le32(b + 12, hlen);
	/* The header is not NUL-terminated in the file. */
	for (size_t i = 0; i < jlen; i++)
		b[PREFIX_LEN + i] = (unsigned char)json[i];
	fix_crc(b, len);
	path_of(fx, 9, path);
	testutil_write_file(path, b, len);
	free(b);
}

/* The header checkpoint_save writes for sample(fx, 9), parsed. */
static cJSON *good_header(struct fixture *fx)
{
	char path[PATH_MAX];
	size_t len;
	unsigned char *b = saved_sample(fx, 9, path, &len);
	uint32_t hlen = bytes_get_le32(b + 12);
	cJSON *h = cJSON_ParseWithLength((const char *)b + PREFIX_LEN, hlen);

	assert_non_null(h);
	free(b);
	return h;
}

/* A model name one byte longer than a backup holds. */
#define NAME_16  "0123456789abcdef"
#define NAME_128 NAME_16 NAME_16 NAME_16 NAME_16 NAME_16 NAME_16 NAME_16 NAME_16

struct header_case {
	const char *key;
	const char *value; /* JSON text, or NULL to remove the member */
	const char *says;  /* in the message */
};

static const struct header_case HEADER_CASES[] = {
    {"num_params", "4611686018427387904", "'num_params' is too large"},
    {"num_params", "1000000000000000", "header describes 1000000000000000 parameters"},
    {"num_params", "999", "header describes 999 parameters"},
    {"num_params", "0", "'num_params' is out of range"},
    {"num_params", "1000.5", "'num_params'"},
    {"state_slots", "4", "'state_slots' is out of range"},
    {"state_slots", "3", "header describes 1000 parameters and 3 state slots"},
    {"state_slots", "1", "header describes 1000 parameters and 1 state slots"},
    {"step", "-1", "'step' is out of range"},
    {"epoch", "-1", "'epoch' is out of range"},
    {"epoch", "2147483648", "'epoch' is out of range"},
    {"world", "0", "'world' is out of range"},
    {"world", "4097", "'world' is out of range"},
    {"batch_size", "0", "'batch_size' is out of range"},
    {"learning_rate", "\"0.1\"", "'learning_rate'"},
    {"momentum", "2", "'momentum' is out of range"},
    {"seed", NULL, "'seed' is missing"},
    {"model", NULL, "'model' is missing"},
    {"model", "\"" NAME_128 "\"", "'model' is longer than 127 bytes"},
    {"arch_hash", "\"0123456789ABCDEF\"", "'arch_hash' must be 16 lower-case hex digits"},
    {"arch_hash", "\"0123\"", "'arch_hash' must be"},
    {"arch_hash", "\"0123456789abcdef0\"", "'arch_hash' must be"},
    {"global_step", "\"-9\"", "'global_step' must be a string of decimal digits"},
    {"global_step", "\" 9\"", "'global_step' must be"},
    {"global_step", "\"\"", "'global_step' must be"},
    {"global_step", "\"9x\"", "'global_step' must be"},
    {"global_step", "\"1000000000000\"", "'global_step' must be"},
    {"global_step", "9", "'global_step' must be"},
    {"seed", "\"18446744073709551616\"", "'seed' must be"},
    {"format", "\"mwj-model\"", "'format' is 'mwj-model'"},
    {"version", "1", "'version' is 1 but the prefix says 2"},
    {"version", "3", "'version' is 3 but the prefix says 2"},
    {"model_state", NULL, "'model_state' is missing"},
    {"model_state", "-1", "'model_state' is out of range"},
    {"model_state", "1099511627777", "'model_state' is out of range"},
    {"model_state", "1.5", "'model_state'"},
    {"model_state", "\"24\"", "'model_state'"},
    {"model_state", "25", "header describes 1000 parameters and 2 state slots"},
    {"model_state", "23", "header describes 1000 parameters and 2 state slots"},
    {"model_state", "0", "header describes 1000 parameters and 2 state slots"},
    {"model_state", "1000000000", "describes 1000000000 floats of model state"},
};

/* Every field of a header with a sound CRC, damaged one at a time. The
 * file is the size a sound header describes, so each case meets only the
 * check meant for it; the unchanged header is the control. */
static void test_a_sound_file_with_a_hostile_header_field_is_corrupt(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX];
	struct checkpoint got;
	cJSON *good = good_header(fx);
	char *text = cJSON_PrintUnformatted(good);

	path_of(fx, 9, path);
	write_raw(fx, text, PAYLOAD, (uint32_t)strlen(text));
	free(text);
	assert_int_equal(load(fx, 9, &got), 0);
	for (size_t i = 0; i < sizeof(HEADER_CASES) / sizeof(HEADER_CASES[0]); i++) {
		const struct header_case *hc = &HEADER_CASES[i];
		cJSON *h = cJSON_Duplicate(good, 1);
		if (hc->value)
			cJSON_ReplaceItemInObjectCaseSensitive(h, hc->key, cJSON_Parse(hc->value));
		else
			cJSON_DeleteItemFromObjectCaseSensitive(h, hc->key);
		text = cJSON_PrintUnformatted(h);
		write_raw(fx, text, PAYLOAD, (uint32_t)strlen(text));
		int rc = load(fx, 9, &got);
		if (rc != CHECKPOINT_CORRUPT)
			fail_msg("%s = %s: returned %d: %s", hc->key,
			         hc->value ? hc->value : "(none)", rc, fx->err);
		testutil_assert_contains(fx->err, path);
		testutil_assert_contains(fx->err, hc->says);
		cJSON_Delete(h);
		free(text);
	}
	cJSON_Delete(good);
}

static void test_a_sound_file_with_a_hostile_header_framing_is_corrupt(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint got;
	const char *not_objects[] = {"[1,2,3]", "not json at all", "{}",
	                             "",        "{\"format\":1}",  "{\"a\":1}\n\x01"};

	for (size_t i = 0; i < sizeof(not_objects) / sizeof(not_objects[0]); i++) {
		write_raw(fx, not_objects[i], PAYLOAD, (uint32_t)strlen(not_objects[i]));
		assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
		testutil_assert_contains(fx->err, "header");
	}
	/* A header length beyond the file, beyond any header, and (under the
	 * cap) beyond a file too short to hold the metric sums. */
	write_raw(fx, "{}", PAYLOAD, 1u << 30);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
	testutil_assert_contains(fx->err, "header claims 1073741824 bytes");
	write_raw(fx, "{}", PAYLOAD, PAYLOAD + 3);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
	testutil_assert_contains(fx->err, "header claims");
	char filler[SUMS_LEN + 1];
	for (size_t n = 0; n <= SUMS_LEN; n++) {
		memset(filler, 'x', n);
		filler[n] = '\0';
		write_raw(fx, filler, 0, 60000);
		assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
		testutil_assert_contains(fx->err, "header claims 60000 bytes");
	}
	/* A NUL inside the header would cut its strings short unnoticed. */
	static const char with_nul[] = "{\"format\":\"mwj-backup\0\"}";
	write_raw(fx, "", PAYLOAD + sizeof(with_nul) - 1, sizeof(with_nul) - 1);
	char path[PATH_MAX];
	size_t len;
	path_of(fx, 9, path);
	unsigned char *b = testutil_read_file(path, &len);
	memcpy(b + PREFIX_LEN, with_nul, sizeof(with_nul) - 1);
	fix_crc(b, len);
	testutil_write_file(path, b, len);
	free(b);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
	testutil_assert_contains(fx->err, "header: invalid JSON");
}

/* --- Positions a run can take up --- */

/* The run the cases below are checked against: 3 epochs of 20 steps. */
static const struct checkpoint_run RUN_20 = {3, 20, 60000};
/* The same with one pass an epoch: 938 steps at 1 worker x 64. */
static const struct checkpoint_run RUN_PASS = {3, 0, 60000};

/* A backup of step 5 of epoch 2 (0-based 1) of 20-step epochs, 1 x 64,
 * with an accuracy and a mean squared error. */
static struct train_position sound_position(void)
{
	return (struct train_position){
	    .epoch = 1,
	    .step = 5,
	    .global_step = 25,
	    .examples = 25 * 64,
	    .world = 1,
	    .batch_size = 64,
	    .sums = {.loss_sum = 5 * 64 * 0.7, .count = 5 * 64, .sums = {200, 3.5}}};
}

static void far_step(struct train_position *p)
{
	p->step = 100000;
	p->global_step = 100020;
	p->examples = 100020ull * 64;
	p->sums.count = 100000.0 * 64;
}
static void step_beyond_all_steps(struct train_position *p)
{
	p->step = 30;
}
static void epochs_beyond_all_steps(struct train_position *p)
{
	p->epoch = 21;
}
static void epoch_past_the_run(struct train_position *p)
{
	p->epoch = 4;
	p->global_step = 85;
	p->examples = 85 * 64;
}
static void finished_run_with_steps(struct train_position *p)
{
	p->epoch = 3;
	p->global_step = 65;
	p->examples = 65 * 64;
}
static void no_examples(struct train_position *p)
{
	p->examples = 0;
}
static void examples_without_steps(struct train_position *p)
{
	*p = (struct train_position){.examples = 64, .world = 1, .batch_size = 64};
}
static void too_many_examples(struct train_position *p)
{
	p->examples = UINT64_MAX;
}
static void sums_of_no_steps(struct train_position *p)
{
	p->sums.count = 0;
	p->sums.sums[0] = 0;
}
/* A sum of squared errors may well exceed the examples seen. */
static void a_metric_above_the_count(struct train_position *p)
{
	p->sums.sums[1] = 1e6;
}
static void a_negative_metric(struct train_position *p)
{
	p->sums.sums[1] = -0.5;
}
static void a_nan_metric(struct train_position *p)
{
	p->sums.sums[2] = nan("");
}
static void an_infinite_metric(struct train_position *p)
{
	p->sums.sums[3] = INFINITY;
}
static void an_infinite_count(struct train_position *p)
{
	p->sums.count = INFINITY;
}
/* At the start of an epoch every sum is 0, the metrics' too. */
static void a_metric_at_step_0(struct train_position *p)
{
	p->step = 0;
	p->sums = (struct metrics){.sums = {0, 0, 0, 1}};
}
static void nothing_at_step_0(struct train_position *p)
{
	p->step = 0;
	p->sums = (struct metrics){0};
}
static void a_nan_loss(struct train_position *p)
{
	p->sums.loss_sum = nan("");
}
static void a_negative_loss(struct train_position *p)
{
	p->sums.loss_sum = -1;
}
static void sums_at_step_0(struct train_position *p)
{
	p->step = 0;
}
static void past_the_data_set(struct train_position *p)
{
	p->epoch = 0;
	p->step = 939;
	p->global_step = 939;
	p->examples = 939 * 64;
	p->sums.count = 939 * 64;
}

struct position_case {
	void (*edit)(struct train_position *p);
	const struct checkpoint_run *run;
	const char *says; /* NULL: the position is sound */
};

static const struct position_case POSITION_CASES[] = {
    {NULL, &RUN_20, NULL},
    {NULL, &RUN_PASS, NULL},
    {far_step, &RUN_20,
     "step 100000 of epoch 2, past the 20 steps of an epoch "
     "(--steps-per-epoch 20)"},
    {step_beyond_all_steps, &RUN_20, "step 30 of an epoch, more than the 25 steps it took"},
    {epochs_beyond_all_steps, &RUN_20, "past 21 whole epoch(s) and 5 step(s) of another"},
    {epoch_past_the_run, &RUN_20,
     "at epoch 5, step 5, past the 3 epoch(s) of this run "
     "(--epochs 5 or more"},
    {finished_run_with_steps, &RUN_20, "at epoch 4, step 5, past the 3 epoch(s)"},
    {no_examples, &RUN_20, "25 steps cannot have taken 0 examples"},
    {examples_without_steps, &RUN_20, "0 steps cannot have taken 64 examples"},
    {too_many_examples, &RUN_20, "cannot have taken 18446744073709551615 examples"},
    {sums_of_no_steps, &RUN_20, "running sums"},
    {a_metric_above_the_count, &RUN_20, NULL},
    {a_negative_metric, &RUN_20, "metrics 200 -0.5 0 0 over 320 examples"},
    {a_nan_metric, &RUN_20, "metrics 200 3.5 nan 0 over 320 examples"},
    {an_infinite_metric, &RUN_20, "metrics 200 3.5 0 inf over 320 examples"},
    {an_infinite_count, &RUN_20, "over inf examples"},
    {a_metric_at_step_0, &RUN_20, "metrics 0 0 0 1 over 0 examples) do not fit its 0 step(s)"},
    {nothing_at_step_0, &RUN_20, NULL},
    {a_nan_loss, &RUN_20, "running sums (loss nan"},
    {a_negative_loss, &RUN_20, "running sums (loss -1"},
    {sums_at_step_0, &RUN_20, "do not fit its 0 step(s)"},
    {past_the_data_set, &RUN_PASS,
     "step 939 of epoch 1, but an epoch of 1 worker(s) at batch "
     "64 is 938 steps over the 60000 examples"},
    {past_the_data_set, &RUN_20, "past the 20 steps of an epoch"},
};

static void test_a_position_no_run_could_reach_is_refused_saying_why(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(POSITION_CASES) / sizeof(POSITION_CASES[0]); i++) {
		const struct position_case *pc = &POSITION_CASES[i];
		struct train_position p = sound_position();
		char err[ERR_LEN] = "";
		if (pc->edit)
			pc->edit(&p);
		int rc = checkpoint_check_position(&p, pc->run, err);
		if (pc->says == NULL && rc != 0)
			fail_msg("case %zu: refused: %s", i, err);
		if (pc->says != NULL && (rc != -1 || strstr(err, pc->says) == NULL))
			fail_msg("case %zu: rc %d, '%s' does not say '%s'", i, rc, err, pc->says);
	}
	/* A fresh start and a finished run's last backup are positions too. */
	struct train_position start = {.world = 1, .batch_size = 64};
	struct train_position done = {
	    .epoch = 3, .global_step = 60, .examples = 3840, .world = 1, .batch_size = 64};
	char err[ERR_LEN];
	assert_int_equal(checkpoint_check_position(&start, &RUN_20, err), 0);
	assert_int_equal(checkpoint_check_position(&done, &RUN_20, err), 0);
}

/* --- Backups of mwj 0.1 --- */

/* The sums mwj 0.1 kept: loss, examples predicted right, examples. */
static const double V1_SUMS[3] = {224.0625, 200.0, 320.0};

/* The bytes of a backup as mwj 0.1 wrote it (format version 1), built
 * here rather than by checkpoint_save: step 5 of epoch 2 at 1 x 64 of
 * want()'s model with fx's params and, for opt with nslots slots, fx's
 * optimizer state. The header is what its header_json printed, key for
 * key; the body is sums (3 doubles as 0.1 wrote them, or 6 for a file
 * that mixes the versions), params, slots, CRC. The caller frees it. */
static unsigned char *v1_backup(const struct fixture *fx, const char *opt, int nslots, int nsums,
                                size_t *len)
{
	char json[1024];
	const double sums6[METRICS_WORDS] = {V1_SUMS[0], V1_SUMS[2], V1_SUMS[1]};
	const double *sums = nsums == 3 ? V1_SUMS : sums6;
	int jlen = snprintf(json, sizeof(json),
	                    "{\"format\":\"mwj-backup\",\"version\":1,\"model\":\"cnn\","
	                    "\"arch_hash\":\"0123456789abcdef\",\"num_params\":%d,"
	                    "\"optimizer\":\"%s\",\"state_slots\":%d,\"iterations\":\"25\","
	                    "\"learning_rate\":0.001,\"momentum\":%s,\"seed\":\"42\",\"world\":1,"
	                    "\"batch_size\":64,\"epoch\":1,\"step\":5,\"global_step\":\"25\","
	                    "\"examples\":\"1600\"}",
	                    N, opt, nslots, nslots == 1 ? "0.9" : "0");
	size_t params_len = N * sizeof(float), at = PREFIX_LEN;

	assert_true(jlen > 0 && (size_t)jlen < sizeof(json));
	*len = PREFIX_LEN + (size_t)jlen + (size_t)nsums * 8 + params_len * (1 + nslots) + 4;
	unsigned char *b = malloc(*len);
	assert_non_null(b);
	memcpy(b, MAGIC, sizeof(MAGIC));
	bytes_put_le32(b + 8, 1);
	bytes_put_le32(b + 12, (uint32_t)jlen);
	memcpy(b + at, json, (size_t)jlen);
	at += (size_t)jlen;
	memcpy(b + at, sums, (size_t)nsums * 8);
	at += (size_t)nsums * 8;
	memcpy(b + at, fx->params, params_len);
	at += params_len;
	memcpy(b + at, fx->state, params_len * (size_t)nslots);
	fix_crc(b, *len);
	return b;
}

static void write_v1(struct fixture *fx, const char *opt, int nslots, int nsums)
{
	char path[PATH_MAX];
	size_t len;
	unsigned char *b = v1_backup(fx, opt, nslots, nsums, &len);

	path_of(fx, 9, path);
	testutil_write_file(path, b, len);
	free(b);
}

/* A run of mwj 0.1 goes on after an upgrade: every field comes back, the
 * accuracy's sum as the first metric's, and the position is one the run
 * can take up. */
static void test_a_version_1_backup_of_mwj_0_1_is_restored(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint got;
	char path[PATH_MAX];

	(void)sample(fx, 9); /* the values to write, in fx's buffers */
	write_v1(fx, "adam", 2, 3);
	path_of(fx, 9, path);
	got = want(fx);
	got.nstate = 0;
	got.model_state = NULL;
	memset(fx->got_state, 0xff, sizeof(fx->got_state));
	assert_int_equal(checkpoint_load(path, &got, fx->err), 0);
	assert_memory_equal(fx->got_params, fx->params, sizeof(fx->params));
	assert_memory_equal(fx->got_state, fx->state, 2 * N * sizeof(float));
	assert_true(bytes_f64_bits(got.pos.sums.loss_sum) == bytes_f64_bits(V1_SUMS[0]));
	assert_true(bytes_f64_bits(got.pos.sums.sums[0]) == bytes_f64_bits(V1_SUMS[1]));
	assert_true(bytes_f64_bits(got.pos.sums.count) == bytes_f64_bits(V1_SUMS[2]));
	for (int i = 1; i < METRICS_MAX; i++)
		assert_true(bytes_f64_bits(got.pos.sums.sums[i]) == 0);
	assert_int_equal(got.pos.epoch, 1);
	assert_int_equal(got.pos.step, 5);
	assert_true(got.pos.global_step == 25);
	assert_true(got.pos.examples == 1600);
	assert_int_equal(got.pos.world, 1);
	assert_int_equal(got.pos.batch_size, 64);
	assert_true(got.seed == 42 && got.iterations == 25);
	assert_true(bytes_f64_bits(got.learning_rate) == bytes_f64_bits(0.001));
	assert_string_equal(got.model, "cnn");
	assert_null(got.model_state);
	assert_int_equal(checkpoint_check_position(&got.pos, &RUN_20, fx->err), 0);
	assert_true(metrics_mean(&got.pos.sums, 0) == 200.0 / 320.0);
}

static void test_a_version_1_backup_with_sgd_momentum_is_restored(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint got;
	char path[PATH_MAX];

	(void)sample(fx, 9);
	write_v1(fx, "sgd", 1, 3);
	path_of(fx, 9, path);
	got = want(fx);
	got.nstate = 0;
	got.model_state = NULL;
	got.optimizer = OPT_SGD;
	got.nslots = 1;
	assert_int_equal(checkpoint_load(path, &got, fx->err), 0);
	assert_memory_equal(fx->got_params, fx->params, sizeof(fx->params));
	assert_memory_equal(fx->got_state, fx->state, N * sizeof(float));
	assert_true(bytes_f64_bits(got.momentum) == bytes_f64_bits(0.9));
}

/* mwj 0.1 had no model state: its backup cannot be of a model with one,
 * however its other numbers agree. */
static void test_a_version_1_backup_is_incompatible_with_a_model_with_state(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint got;

	(void)sample(fx, 9);
	write_v1(fx, "adam", 2, 3);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err, "1000 parameters, 0 floats of state), this run trains "
	                                  "'cnn' (architecture 0123456789abcdef, 1000 parameters, "
	                                  "24 floats of state)");
}

/* A version-1 file is as closely checked as a version-2 one: its length
 * counts three sums, not six, and its checksum covers it all. */
static void test_a_damaged_version_1_backup_is_corrupt(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint got;
	char path[PATH_MAX];
	size_t len;

	(void)sample(fx, 9);
	path_of(fx, 9, path);
	write_v1(fx, "adam", 2, METRICS_WORDS);
	got = want(fx);
	got.nstate = 0;
	assert_int_equal(checkpoint_load(path, &got, fx->err), CHECKPOINT_CORRUPT);
	testutil_assert_contains(fx->err, "but its header describes 1000 parameters");
	unsigned char *b = v1_backup(fx, "adam", 2, 3, &len);
	/* The version, the sums' last byte, the second slot, the CRC. */
	const size_t at[] = {8, len - 4 - 3 * N * 4 - 1, len - 4 - N * 4, len - 1};
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		b[at[i]] ^= 0x40;
		testutil_write_file(path, b, len);
		b[at[i]] ^= 0x40;
		got = want(fx);
		got.nstate = 0;
		int rc = checkpoint_load(path, &got, fx->err);
		if (rc != CHECKPOINT_CORRUPT)
			fail_msg("byte %zu: returned %d: %s", at[i], rc, fx->err);
		testutil_assert_contains(fx->err, "checksum mismatch");
	}
	testutil_write_file(path, b, len - 1);
	got = want(fx);
	got.nstate = 0;
	assert_int_equal(checkpoint_load(path, &got, fx->err), CHECKPOINT_CORRUPT);
	free(b);
}

/* --- Failing writes --- */

/* The disk fills up (a file-size limit makes write fail with EFBIG for
 * real): the save fails and says so, the backup before it is untouched,
 * and no temporary file is left. */
static void test_a_failing_write_leaves_the_previous_backup_intact(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c = sample(fx, 10), got;
	struct rlimit old, low;
	char path[PATH_MAX];
	size_t len, len2;

	save(fx, &c);
	path_of(fx, 10, path);
	unsigned char *before = testutil_read_file(path, &len);
	c = sample(fx, 20);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	low = old;
	low.rlim_cur = 4096;
	assert_true(len > low.rlim_cur);
	void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
	int rc = checkpoint_save(fx->dir, &c, fx->err);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, old_handler);
	assert_int_equal(rc, -1);
	testutil_assert_contains(fx->err, "write '");
	testutil_assert_contains(fx->err, "backup-000000000020.mwjb");
	assert_backups(fx, 1, (const uint64_t[]){10});
	unsigned char *after = testutil_read_file(path, &len2);
	assert_int_equal(len2, len);
	assert_memory_equal(after, before, len);
	assert_int_equal(load(fx, 10, &got), 0);
	assert_true(got.pos.global_step == 10);
	DIR *d = opendir(fx->dir);
	assert_non_null(d);
	const struct dirent *e;
	int files = 0;
	while ((e = readdir(d)) != NULL)
		files += e->d_name[0] != '.';
	closedir(d);
	assert_int_equal(files, 1);
	free(before);
	free(after);
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_a_backup_round_trips_every_field_bitwise),
	    TEST(test_a_backup_without_optimizer_or_model_state_round_trips),
	    TEST(test_the_six_metric_sums_round_trip_bit_for_bit),
	    TEST(test_a_backup_with_three_optimizer_slots_round_trips),
	    TEST(test_the_header_is_readable_json_a_tool_can_use),
	    TEST(test_list_gives_the_newest_first_and_ignores_other_files),
	    TEST(test_a_missing_directory_holds_no_backups),
	    TEST(test_a_save_creates_the_directory),
	    TEST(test_a_save_keeps_itself_and_the_newest_older_backup),
	    TEST(test_a_save_removes_only_temporary_files_of_backups),
	    TEST(test_remove_all_takes_backups_and_leaves_other_files),
	    TEST(test_a_path_or_step_that_does_not_fit_is_refused),
	    TEST(test_a_damaged_byte_anywhere_is_a_corrupt_backup),
	    TEST(test_a_truncated_backup_is_corrupt),
	    TEST(test_a_file_that_is_no_backup_is_corrupt),
	    TEST(test_a_backup_longer_than_its_header_says_is_corrupt_without_being_read),
	    TEST(test_a_backup_that_is_not_a_regular_file_is_corrupt),
	    TEST(test_a_backup_of_another_model_or_optimizer_is_incompatible),
	    TEST(test_a_backup_of_the_same_architecture_under_another_name_is_restored),
	    TEST(test_a_backup_of_a_bigger_model_is_incompatible_not_damaged),
	    TEST(test_a_newer_format_version_is_incompatible),
	    TEST(test_a_sound_file_with_a_hostile_header_field_is_corrupt),
	    TEST(test_a_sound_file_with_a_hostile_header_framing_is_corrupt),
	    TEST(test_a_version_1_backup_of_mwj_0_1_is_restored),
	    TEST(test_a_version_1_backup_with_sgd_momentum_is_restored),
	    TEST(test_a_version_1_backup_is_incompatible_with_a_model_with_state),
	    TEST(test_a_damaged_version_1_backup_is_corrupt),
	    cmocka_unit_test(test_a_position_no_run_could_reach_is_refused_saying_why),
	    TEST(test_a_failing_write_leaves_the_previous_backup_intact),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
