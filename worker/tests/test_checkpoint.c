/* test_checkpoint.c - backup files: the bitwise round trip of everything a
 * resume needs, which files a directory keeps, and every way a file is
 * refused, told apart as damaged (use an older one) or incompatible (stop).
 *
 * Files are edited here from the format in checkpoint.h, with the CRC fixed
 * up after each edit except where the CRC is what is tested, so that each
 * damaged field reaches the check meant for it. Each test gets its own
 * mkdtemp directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
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
#define PREFIX_LEN 16
#define SUMS_LEN   24

struct fixture {
	char dir[TESTUTIL_TMPDIR_LEN]; /* first, for testutil_fixture_setup() */
	char err[ERR_LEN];
	float params[N], state[2 * N];
	float got_params[N], got_state[2 * N];
};

static int setup(void **state)
{
	return testutil_fixture_setup(state, sizeof(struct fixture), "checkpoint");
}

static int teardown(void **state)
{
	return testutil_fixture_teardown(state);
}

/* An Adam backup of a 1000-parameter model at global step step, with
 * values that only a bitwise copy keeps. */
static struct checkpoint sample(struct fixture *fx, uint64_t step)
{
	struct checkpoint c = {
	    .pos = {.epoch = 3,
	            .step = 17,
	            .global_step = step,
	            .examples = (1ull << 60) + 3,
	            .world = 4,
	            .batch_size = 32,
	            .sums = {0.1, 1e300, 123456789.0}},
	    .seed = UINT64_MAX,
	    .model = "cnn",
	    .arch_hash = 0x0123456789abcdefull,
	    .nparams = N,
	    .optimizer = OPT_ADAM,
	    .nslots = 2,
	    .iterations = (1ull << 53) + 1,
	    .learning_rate = 0.001,
	    .momentum = 0.0,
	    .params = fx->params,
	    .opt_state = fx->state,
	};

	for (int i = 0; i < N; i++)
		fx->params[i] = (float)i * 0.1f + (float)step;
	for (int i = 0; i < 2 * N; i++)
		fx->state[i] = 1.0f / (float)(i + 1);
	return c;
}

/* What this run builds, with buffers for a load. */
static struct checkpoint want(struct fixture *fx)
{
	struct checkpoint c = {.model = "cnn",
	                       .arch_hash = 0x0123456789abcdefull,
	                       .nparams = N,
	                       .optimizer = OPT_ADAM,
	                       .nslots = 2,
	                       .params = fx->got_params,
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

/* Rewrites the trailing CRC of the file at path so that it is sound. */
static void fix_crc(unsigned char *b, size_t len)
{
	bytes_put_le32(b + len - 4, crc32c(b, len - 4));
}

static void test_a_backup_round_trips_every_field_bitwise(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c = sample(fx, 42), got;

	save(fx, &c);
	assert_int_equal(load(fx, 42, &got), 0);
	assert_memory_equal(fx->got_params, fx->params, sizeof(fx->params));
	assert_memory_equal(fx->got_state, fx->state, sizeof(fx->state));
	assert_memory_equal(&got.pos.sums, &c.pos.sums, sizeof(c.pos.sums));
	assert_int_equal(got.pos.epoch, 3);
	assert_int_equal(got.pos.step, 17);
	assert_true(got.pos.global_step == 42);
	assert_true(got.pos.examples == (1ull << 60) + 3);
	assert_int_equal(got.pos.world, 4);
	assert_int_equal(got.pos.batch_size, 32);
	assert_true(got.seed == UINT64_MAX);
	assert_true(got.iterations == (1ull << 53) + 1);
	assert_true(got.learning_rate == 0.001);
	assert_string_equal(got.model, "cnn");
}

static void test_the_header_is_readable_json_a_tool_can_use(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c = sample(fx, 7);
	char path[PATH_MAX];
	size_t len;

	save(fx, &c);
	path_of(fx, 7, path);
	unsigned char *b = testutil_read_file(path, &len);
	assert_memory_equal(b, "MWJBACKP", 8);
	uint32_t hlen = (uint32_t)b[12] | (uint32_t)b[13] << 8 | (uint32_t)b[14] << 16;
	char *json = calloc(1, hlen + 1);
	assert_non_null(json);
	memcpy(json, b + PREFIX_LEN, hlen);
	cJSON *h = testutil_json_object(json);
	assert_string_equal(testutil_json_string(h, "format"), "mwj-backup");
	assert_string_equal(testutil_json_string(h, "global_step"), "7");
	assert_string_equal(testutil_json_string(h, "seed"), "18446744073709551615");
	assert_string_equal(testutil_json_string(h, "optimizer"), "adam");
	assert_true(testutil_json_number(h, "num_params") == N);
	assert_int_equal(len, PREFIX_LEN + hlen + SUMS_LEN + 3 * N * 4 + 4);
	cJSON_Delete(h);
	free(json);
	free(b);
}

static void test_list_gives_the_newest_first_and_ignores_other_files(void **state)
{
	struct fixture *fx = *state;
	const char *others[] = {"backup-12.mwjb", "backup-000000000001.mwjb.tmp.123", "notes.txt",
	                        "backup-00000000000x.mwjb", "backup-000000000002.mwjbx"};
	uint64_t steps[8];
	char path[PATH_MAX];
	struct checkpoint c;

	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", fx->dir, others[i]);
		testutil_write_file(path, "x", 1);
	}
	/* Written directly, so that no save prunes the others. */
	c = sample(fx, 5);
	save(fx, &c);
	path_of(fx, 5, path);
	size_t len;
	void *b = testutil_read_file(path, &len);
	char p2[PATH_MAX];
	path_of(fx, 300, p2);
	testutil_write_file(p2, b, len);
	path_of(fx, 40, p2);
	testutil_write_file(p2, b, len);
	free(b);
	assert_int_equal(checkpoint_list(fx->dir, steps, 8, fx->err), 3);
	assert_true(steps[0] == 300 && steps[1] == 40 && steps[2] == 5);
	assert_int_equal(checkpoint_list(fx->dir, steps, 2, fx->err), 2);
	assert_true(steps[0] == 300 && steps[1] == 40);
}

static void test_a_missing_directory_holds_no_backups(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX];
	uint64_t steps[2];

	snprintf(path, sizeof(path), "%s/none", fx->dir);
	assert_int_equal(checkpoint_list(path, steps, 2, fx->err), 0);
	assert_int_equal(checkpoint_remove_all(path, fx->err), 0);
}

static void assert_backups(struct fixture *fx, int n, const uint64_t *expect)
{
	uint64_t steps[8];

	assert_int_equal(checkpoint_list(fx->dir, steps, 8, fx->err), n);
	for (int i = 0; i < n; i++)
		assert_true(steps[i] == expect[i]);
}

static void test_a_save_keeps_itself_and_the_newest_older_backup(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c;
	char tmp[PATH_MAX];

	for (uint64_t s = 10; s <= 30; s += 10) {
		c = sample(fx, s);
		save(fx, &c);
	}
	assert_backups(fx, 2, (const uint64_t[]){30, 20});
	/* A crashed writer's temporary file goes with the next save. */
	snprintf(tmp, sizeof(tmp), "%s/backup-000000000040.mwjb.tmp.999", fx->dir);
	testutil_write_file(tmp, "partial", 7);
	/* Going back to step 25 (all workers restarted from an older backup):
	 * 30 belongs to the abandoned run and goes. */
	c = sample(fx, 25);
	save(fx, &c);
	assert_backups(fx, 2, (const uint64_t[]){25, 20});
	assert_int_equal(access(tmp, F_OK), -1);
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

static void test_a_damaged_byte_anywhere_is_a_corrupt_backup(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint got;
	char path[PATH_MAX];
	size_t len;
	unsigned char *good = saved_sample(fx, 9, path, &len);
	const size_t at[] = {9, 20, PREFIX_LEN + 300, len / 2, len - 5, len - 1};
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		unsigned char *b = malloc(len);
		assert_non_null(b);
		memcpy(b, good, len);
		b[at[i]] ^= 0x10;
		testutil_write_file(path, b, len);
		free(b);
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
	const size_t cut[] = {0, 4, 12, 19, PREFIX_LEN + 10, len / 2, len - 1};
	for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		testutil_write_file(path, good, cut[i]);
		assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
		testutil_assert_contains(fx->err, path);
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
}

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
static void sgd_run(struct checkpoint *c)
{
	c->optimizer = OPT_SGD;
	c->nslots = 0;
	c->opt_state = NULL;
}

static void test_a_backup_of_another_model_or_optimizer_is_incompatible(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c = sample(fx, 9);

	save(fx, &c);
	assert_int_equal(load_as(fx, other_hash), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err, "backup is of model 'cnn'");
	assert_int_equal(load_as(fx, other_name), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err, "this run trains 'cnn-pool'");
	/* Smaller than the file: found from the header alone. */
	assert_int_equal(load_as(fx, fewer_params), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err, "1000 parameters");
	assert_int_equal(load_as(fx, sgd_run), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err, "backup holds adam state with 2 slot(s); this run uses "
	                                  "sgd with 0");
}

static void test_a_newer_format_version_is_incompatible(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint got;
	char path[PATH_MAX];
	size_t len;
	unsigned char *b = saved_sample(fx, 9, path, &len);
	bytes_put_le32(b + 8, 2);
	fix_crc(b, len);
	testutil_write_file(path, b, len);
	free(b);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_INCOMPATIBLE);
	testutil_assert_contains(fx->err,
	                         "unsupported backup format version 2 (this build reads 1)");
}

/* Writes a backup with header json, payload bytes of zeros and a sound CRC. */
static void write_raw(struct fixture *fx, const char *json, size_t payload, uint32_t hlen)
{
	char path[PATH_MAX];
	size_t jlen = strlen(json), len = PREFIX_LEN + jlen + payload + 4;
	unsigned char *b = calloc(1, len);

	assert_non_null(b);
	static const unsigned char magic[8] = {'M', 'W', 'J', 'B', 'A', 'C', 'K', 'P'};
	memcpy(b, magic, sizeof(magic));
	bytes_put_le32(b + 8, 1);
	bytes_put_le32(b + 12, hlen);
	for (size_t i = 0; i < jlen; i++)
		b[PREFIX_LEN + i] = (unsigned char)json[i];
	fix_crc(b, len);
	path_of(fx, 9, path);
	testutil_write_file(path, b, len);
	free(b);
}

static void test_a_sound_file_with_a_hostile_header_is_corrupt_not_a_crash(void **state)
{
	struct fixture *fx = *state;
	static const char good_tail[] =
	    "\"optimizer\":\"adam\",\"state_slots\":2,\"iterations\":\"1\",\"learning_rate\":0.001,"
	    "\"momentum\":0,\"seed\":\"1\",\"world\":1,\"batch_size\":1,\"epoch\":0,";
	char json[1024];
	struct checkpoint got;
	size_t payload = SUMS_LEN + 3 * N * 4;
	const char *cases[] = {
	    "[1,2,3]", "{\"format\":\"mwj-backup\"}", "not json at all",
	    NULL, /* huge num_params, filled below */
	    NULL, /* negative step */
	    NULL, /* global_step not a number */
	};
	char big[1024], neg[1024], bad_step[1024];

	snprintf(big, sizeof(big),
	         "{\"format\":\"mwj-backup\",\"model\":\"cnn\",\"arch_hash\":\"0123456789abcdef\","
	         "\"num_params\":4611686018427387000,%s\"step\":0,\"global_step\":\"9\","
	         "\"examples\":\"0\"}",
	         good_tail);
	snprintf(neg, sizeof(neg),
	         "{\"format\":\"mwj-backup\",\"model\":\"cnn\",\"arch_hash\":\"0123456789abcdef\","
	         "\"num_params\":1000,%s\"step\":-1,\"global_step\":\"9\",\"examples\":\"0\"}",
	         good_tail);
	snprintf(bad_step, sizeof(bad_step),
	         "{\"format\":\"mwj-backup\",\"model\":\"cnn\",\"arch_hash\":\"0123456789abcdef\","
	         "\"num_params\":1000,%s\"step\":0,\"global_step\":\"-9\",\"examples\":\"0\"}",
	         good_tail);
	cases[3] = big;
	cases[4] = neg;
	cases[5] = bad_step;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(json, sizeof(json), "%s", cases[i]);
		write_raw(fx, json, payload, (uint32_t)strlen(json));
		assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
		testutil_assert_contains(fx->err, "header");
	}
	/* A header length beyond the file. */
	write_raw(fx, "{}", payload, 1u << 30);
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
	testutil_assert_contains(fx->err, "header claims");
	/* A sound header whose sizes disagree with the file's length. */
	snprintf(json, sizeof(json),
	         "{\"format\":\"mwj-backup\",\"model\":\"cnn\",\"arch_hash\":\"0123456789abcdef\","
	         "\"num_params\":1000,%s\"step\":0,\"global_step\":\"9\",\"examples\":\"0\"}",
	         good_tail);
	write_raw(fx, json, payload - 8, (uint32_t)strlen(json));
	assert_int_equal(load(fx, 9, &got), CHECKPOINT_CORRUPT);
	testutil_assert_contains(fx->err, "header describes 1000 parameters");
}

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
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
	int rc = checkpoint_save(fx->dir, &c, fx->err);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(rc, -1);
	testutil_assert_contains(fx->err, "backup-000000000020.mwjb");
	assert_backups(fx, 1, (const uint64_t[]){10});
	unsigned char *after = testutil_read_file(path, &len2);
	assert_int_equal(len2, len);
	assert_memory_equal(after, before, len);
	assert_int_equal(load(fx, 10, &got), 0);
	DIR *d = opendir(fx->dir);
	const struct dirent *e;
	int files = 0;
	while ((e = readdir(d)) != NULL)
		files += e->d_name[0] != '.';
	closedir(d);
	assert_int_equal(files, 1);
	free(before);
	free(after);
}

static void test_remove_all_takes_backups_and_leaves_other_files(void **state)
{
	struct fixture *fx = *state;
	struct checkpoint c;
	char other[PATH_MAX], tmp[PATH_MAX];

	for (uint64_t s = 1; s <= 2; s++) {
		c = sample(fx, s);
		save(fx, &c);
	}
	snprintf(other, sizeof(other), "%s/model.mwj", fx->dir);
	testutil_write_file(other, "x", 1);
	snprintf(tmp, sizeof(tmp), "%s/backup-000000000003.mwjb.tmp.77", fx->dir);
	testutil_write_file(tmp, "x", 1);
	assert_int_equal(checkpoint_remove_all(fx->dir, fx->err), 0);
	assert_backups(fx, 0, NULL);
	assert_int_equal(access(tmp, F_OK), -1);
	assert_int_equal(access(other, F_OK), 0);
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_a_backup_round_trips_every_field_bitwise),
	    TEST(test_the_header_is_readable_json_a_tool_can_use),
	    TEST(test_list_gives_the_newest_first_and_ignores_other_files),
	    TEST(test_a_missing_directory_holds_no_backups),
	    TEST(test_a_save_keeps_itself_and_the_newest_older_backup),
	    TEST(test_a_damaged_byte_anywhere_is_a_corrupt_backup),
	    TEST(test_a_truncated_backup_is_corrupt),
	    TEST(test_a_file_that_is_no_backup_is_corrupt),
	    TEST(test_a_backup_of_another_model_or_optimizer_is_incompatible),
	    TEST(test_a_newer_format_version_is_incompatible),
	    TEST(test_a_sound_file_with_a_hostile_header_is_corrupt_not_a_crash),
	    TEST(test_a_failing_write_leaves_the_previous_backup_intact),
	    TEST(test_remove_all_takes_backups_and_leaves_other_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
