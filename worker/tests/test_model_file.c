/* test_model_file.c - model.mwj: the bitwise round trip, the header a tool
 * can read without this code, and every way a file can be refused.
 *
 * Files are taken apart and put back together here from the format in
 * model_file.h, not through model_file.c, so that a damaged field reaches the
 * check meant for it: the CRC is fixed up after each edit, except where the
 * CRC is what is being tested. Each test gets its own mkdtemp directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bytes.h"
#include "crc32c.h"
#include "err.h"
#include "model.h"
#include "model_file.h"
#include "testutil.h"

#define PREFIX_LEN 16 /* magic, version, header length */
#define SIDE       12 /* input side of the small models the refusal tests use */

struct fixture {
	char dir[TESTUTIL_TMPDIR_LEN]; /* first, for testutil_fixture_setup() */
	char path[PATH_MAX];           /* dir/model.mwj */
	char err[ERR_LEN];
	struct model *m;
};

static const struct model_file_info INFO = {"sgd", 0.001, 64, 1, 2, 1876, 42};

static int setup(void **state)
{
	struct fixture *fx;

	if (testutil_fixture_setup(state, sizeof(*fx), "model-file") < 0)
		return -1;
	fx = *state;
	snprintf(fx->path, sizeof(fx->path), "%s/%s", fx->dir, MODEL_FILE_NAME);
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	model_free(fx->m);
	return testutil_fixture_teardown(state);
}

static struct model *new_model(const char *name, int side, uint64_t seed)
{
	char err[ERR_LEN];
	struct model *m = model_new(name, side, side, 1, 10, 2, err); /* max_batch 2 */

	if (m == NULL)
		fail_msg("model_new '%s': %s", name, err);
	model_init_params(m, seed);
	return m;
}

/* Saves a small cnn-pool model into the fixture's directory, replacing the
 * fixture's model if an earlier call made one. */
static void save_small(struct fixture *fx)
{
	model_free(fx->m);
	fx->m = new_model("cnn-pool", SIDE, 7);
	if (model_file_save(fx->dir, fx->m, &INFO, fx->err) < 0)
		fail_msg("%s", fx->err);
}

/* save_small(), then the bytes of the file it wrote; the caller frees them. */
static unsigned char *save_small_and_read(struct fixture *fx, size_t *len)
{
	save_small(fx);
	return testutil_read_file(fx->path, len);
}

/* Recomputes the trailing CRC-32C over everything before it. */
static void fix_crc(unsigned char *buf, size_t len)
{
	bytes_put_le32(buf + len - 4, crc32c(buf, len - 4));
}

/* The JSON header of a file's bytes, parsed; the caller deletes it. */
static cJSON *parse_header(const unsigned char *buf, size_t len)
{
	uint32_t h = bytes_get_le32(buf + 12);
	cJSON *json;

	assert_true(PREFIX_LEN + (size_t)h + 4 <= len);
	json = cJSON_ParseWithLength((const char *)buf + PREFIX_LEN, h);
	assert_non_null(json);
	assert_true(cJSON_IsObject(json));
	return json;
}

/* Writes fx->path anew with header json and the parameters bytes of the old
 * file (the last drop_floats left out), and a correct CRC. */
static void rewrite_with_header(struct fixture *fx, const cJSON *json, size_t drop_floats)
{
	size_t len, out_len, params_len;
	unsigned char *old = testutil_read_file(fx->path, &len), *out;
	char *text = cJSON_PrintUnformatted(json);
	uint32_t h = bytes_get_le32(old + 12);
	size_t tlen;

	assert_non_null(text);
	tlen = strlen(text);
	params_len = len - PREFIX_LEN - h - 4 - drop_floats * sizeof(float);
	out_len = PREFIX_LEN + tlen + params_len + 4;
	out = malloc(out_len);
	assert_non_null(out);
	memcpy(out, old, PREFIX_LEN);
	bytes_put_le32(out + 12, (uint32_t)tlen);
	memcpy(out + PREFIX_LEN, text, tlen);
	memcpy(out + PREFIX_LEN + tlen, old + PREFIX_LEN + h, params_len);
	fix_crc(out, out_len);
	testutil_write_file(fx->path, out, out_len);
	free(out);
	free(text);
	free(old);
}

/* Replaces one member of the saved file's header and fixes up the file. */
static void replace_header_member(struct fixture *fx, const char *name, cJSON *value)
{
	size_t len;
	unsigned char *buf = testutil_read_file(fx->path, &len);
	cJSON *json = parse_header(buf, len);

	assert_true(cJSON_ReplaceItemInObjectCaseSensitive(json, name, value));
	rewrite_with_header(fx, json, 0);
	cJSON_Delete(json);
	free(buf);
}

/* Loading must fail, name the file and say why. */
static void assert_load_refused(struct fixture *fx, const char *why)
{
	struct model *m;

	fx->err[0] = '\0';
	m = model_file_load(fx->dir, 4, fx->err);
	if (m != NULL) {
		model_free(m);
		fail_msg("model_file_load accepted a file that should fail with '%s'", why);
	}
	testutil_assert_contains(fx->err, fx->path);
	testutil_assert_contains(fx->err, why);
}

/* Loads the model in dir, failing the test with the loader's message if it
 * refuses. Never returns NULL. */
static struct model *load_ok(const char *dir, int max_batch)
{
	char err[ERR_LEN] = "";
	struct model *m = model_file_load(dir, max_batch, err);

	if (m == NULL) {
		fail_msg("load '%s': %s", dir, err);
		abort(); /* not reached; for clang-analyzer, which cannot tell */
	}
	return m;
}

static void assert_same_model(const struct model *a, const struct model *b)
{
	assert_string_equal(a->name, b->name);
	assert_string_equal(a->desc, b->desc);
	assert_true(a->arch_hash == b->arch_hash);
	assert_int_equal(a->in_h, b->in_h);
	assert_int_equal(a->in_w, b->in_w);
	assert_int_equal(a->in_c, b->in_c);
	assert_int_equal(a->classes, b->classes);
	assert_int_equal(a->nparams, b->nparams);
	assert_memory_equal(a->params, b->params, a->nparams * sizeof(float));
}

static void test_save_then_load_restores_every_parameter_bitwise(void **state)
{
	struct fixture *fx = *state;
	static const char *const names[] = {"cnn", "cnn-pool"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct model *m = new_model(names[i], 28, 100 + i), *back;
		float x[2 * 28 * 28];

		if (model_file_save(fx->dir, m, &INFO, fx->err) < 0)
			fail_msg("%s", fx->err);
		back = load_ok(fx->dir, 3);
		assert_same_model(m, back);
		assert_int_equal(back->max_batch, 3);
		/* The loaded model predicts exactly what the saved one did. */
		for (size_t j = 0; j < sizeof(x) / sizeof(x[0]); j++)
			x[j] = (float)(j % 251) / 250.0f;
		model_forward(m, x, 2);
		model_forward(back, x, 2);
		assert_memory_equal(model_logits(m), model_logits(back), sizeof(float) * 2 * 10);
		model_free(back);
		model_free(m);
	}
}

/* Values a text format or a float conversion would not carry through. */
static void test_round_trip_keeps_special_float_bit_patterns(void **state)
{
	struct fixture *fx = *state;
	static const uint32_t bits[] = {
	    0x80000000u, /* -0 */
	    0x00000001u, /* smallest subnormal */
	    0x807fffffu, /* largest negative subnormal */
	    0x7f7fffffu, /* FLT_MAX */
	    0xff800000u, /* -inf */
	    0x7fc12345u, /* quiet NaN with a payload */
	    0x3eaaaaabu, /* 1/3 */
	};
	struct model *back;

	fx->m = new_model("cnn-pool", SIDE, 3);
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		memcpy(&fx->m->params[i * 997 % fx->m->nparams], &bits[i], sizeof(float));
	if (model_file_save(fx->dir, fx->m, &INFO, fx->err) < 0)
		fail_msg("%s", fx->err);
	back = load_ok(fx->dir, 1);
	assert_same_model(fx->m, back);
	model_free(back);
}

static void test_header_records_the_model_and_how_it_was_trained(void **state)
{
	struct fixture *fx = *state;
	const struct model_file_info info = {"adam", 0.0005, 32, 1, 3, 2811, UINT64_MAX};
	unsigned char *buf;
	size_t len;
	uint32_t h;
	cJSON *json, *input, *trained;
	char hash[17];

	fx->m = new_model("cnn-pool", 28, 9);
	if (model_file_save(fx->dir, fx->m, &info, fx->err) < 0)
		fail_msg("%s", fx->err);
	buf = testutil_read_file(fx->path, &len);

	assert_memory_equal(buf, "MWJMODEL", 8);
	assert_int_equal(bytes_get_le32(buf + 8), 1);
	h = bytes_get_le32(buf + 12);
	assert_int_equal(len, PREFIX_LEN + h + fx->m->nparams * sizeof(float) + 4);
	assert_int_equal(bytes_get_le32(buf + len - 4), crc32c(buf, len - 4));
	assert_memory_equal(buf + PREFIX_LEN + h, fx->m->params, fx->m->nparams * sizeof(float));

	json = parse_header(buf, len);
	assert_string_equal(testutil_json_string(json, "format"), "mwj-model");
	assert_true(testutil_json_number(json, "version") == 1);
	assert_string_equal(testutil_json_string(json, "model"), "cnn-pool");
	assert_string_equal(testutil_json_string(json, "arch"), fx->m->desc);
	snprintf(hash, sizeof(hash), "%016" PRIx64, fx->m->arch_hash);
	assert_string_equal(testutil_json_string(json, "arch_hash"), hash);
	input = cJSON_GetObjectItemCaseSensitive(json, "input");
	assert_true(cJSON_IsArray(input));
	assert_int_equal(cJSON_GetArraySize(input), 3);
	assert_true(cJSON_GetArrayItem(input, 0)->valuedouble == 28);
	assert_true(cJSON_GetArrayItem(input, 1)->valuedouble == 28);
	assert_true(cJSON_GetArrayItem(input, 2)->valuedouble == 1);
	assert_true(testutil_json_number(json, "classes") == 10);
	assert_true(testutil_json_number(json, "num_params") == (double)fx->m->nparams);
	assert_string_equal(testutil_json_string(json, "dtype"), "float32");

	trained = cJSON_GetObjectItemCaseSensitive(json, "trained");
	assert_true(cJSON_IsObject(trained));
	assert_string_equal(testutil_json_string(trained, "optimizer"), "adam");
	assert_true(testutil_json_number(trained, "learning_rate") == 0.0005);
	assert_true(testutil_json_number(trained, "batch_size") == 32);
	assert_true(testutil_json_number(trained, "workers") == 1);
	assert_true(testutil_json_number(trained, "epochs") == 3);
	assert_true(testutil_json_number(trained, "global_step") == 2811);
	/* All 64 bits of the seed, which a JSON number would round. */
	assert_string_equal(testutil_json_string(trained, "seed"), "18446744073709551615");
	cJSON_Delete(json);
	free(buf);
}

static void test_save_replaces_the_old_file_and_leaves_no_temporaries(void **state)
{
	struct fixture *fx = *state;
	struct model *newer = new_model("cnn-pool", SIDE, 8), *back;
	DIR *d;
	struct dirent *e;
	int files = 0;

	save_small(fx);
	if (model_file_save(fx->dir, newer, &INFO, fx->err) < 0)
		fail_msg("%s", fx->err);
	back = load_ok(fx->dir, 1);
	assert_same_model(newer, back);
	d = opendir(fx->dir);
	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			files++;
	closedir(d);
	assert_int_equal(files, 1);
	model_free(back);
	model_free(newer);
}

static void test_save_creates_missing_directories(void **state)
{
	struct fixture *fx = *state;
	char dir[PATH_MAX];
	struct model *back;

	fx->m = new_model("cnn-pool", SIDE, 5);
	snprintf(dir, sizeof(dir), "%s/run/final", fx->dir);
	if (model_file_save(dir, fx->m, &INFO, fx->err) < 0)
		fail_msg("%s", fx->err);
	back = load_ok(dir, 1);
	assert_same_model(fx->m, back);
	model_free(back);
}

/* Saves a small model, overwrites n bytes of its file at offset with bytes,
 * fixes up the CRC so that the damage reaches the check meant for it, and
 * asserts that loading is refused saying why. */
static void assert_patched_file_refused(struct fixture *fx, size_t offset, const void *bytes,
                                        size_t n, const char *why)
{
	size_t len;
	unsigned char *buf;

	buf = save_small_and_read(fx, &len);
	assert_true(offset + n <= len);
	memcpy(buf + offset, bytes, n);
	fix_crc(buf, len);
	testutil_write_file(fx->path, buf, len);
	assert_load_refused(fx, why);
	free(buf);
}

static void test_load_refuses_a_bad_magic(void **state)
{
	/* "MWJMODEX" */
	assert_patched_file_refused(*state, 7, "X", 1, "bad magic");
}

static void test_load_refuses_an_unknown_format_version(void **state)
{
	static const unsigned char two[4] = {2, 0, 0, 0}; /* little-endian */

	assert_patched_file_refused(*state, 8, two, sizeof(two),
	                            "unsupported model format version 2");
}

/* Cut anywhere, the file is refused, naming the file; which check catches
 * it depends on what is left. */
static void test_load_refuses_a_truncated_file(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	unsigned char *buf;
	uint32_t h;

	buf = save_small_and_read(fx, &len);
	h = bytes_get_le32(buf + 12);
	const struct {
		size_t keep;
		const char *why;
	} cases[] = {
	    {0, "not an mwj model file"},
	    /* Shorter than prefix and CRC: refused, but what it says is not
	     * pinned ("bad magic" today, though the magic is intact). */
	    {8, ""},
	    {PREFIX_LEN + 3, ""},
	    {PREFIX_LEN + 4, "truncated: header claims"},
	    {PREFIX_LEN + h / 2, "truncated: header claims"},
	    {PREFIX_LEN + h + 3, "truncated: header claims"},
	    /* The header is whole: its length says what is missing, unread. */
	    {PREFIX_LEN + h + 4, "truncated: holds 0 bytes of parameters"},
	    {len / 2, "truncated: holds"},
	    {len - 4, "truncated: holds"},
	    {len - 1, "truncated: holds"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		testutil_write_file(fx->path, buf, cases[i].keep);
		assert_load_refused(fx, cases[i].why);
	}
	free(buf);
}

static void test_load_refuses_a_flipped_byte(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	unsigned char *buf;
	uint32_t h;

	buf = save_small_and_read(fx, &len);
	h = bytes_get_le32(buf + 12);
	/* One bit in the parameters, in the header, and in the CRC itself. */
	const size_t at[] = {len / 2, PREFIX_LEN + h / 2, len - 2};
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		buf[at[i]] ^= 0x10;
		testutil_write_file(fx->path, buf, len);
		assert_load_refused(fx, "checksum mismatch");
		buf[at[i]] ^= 0x10;
	}
	/* Flipped back, the same bytes load. */
	testutil_write_file(fx->path, buf, len);
	struct model *back = load_ok(fx->dir, 1);
	model_free(back);
	free(buf);
}

/* Saves a small model, replaces member name of its file's header with value
 * (which it takes over) and asserts that loading is refused saying why. */
static void assert_header_member_refused(struct fixture *fx, const char *name, cJSON *value,
                                         const char *why)
{
	save_small(fx);
	replace_header_member(fx, name, value);
	assert_load_refused(fx, why);
}

static void test_load_refuses_a_header_naming_an_unknown_model(void **state)
{
	assert_header_member_refused(*state, "model", cJSON_CreateString("resnet50"),
	                             "unknown model 'resnet50'");
}

static void test_load_refuses_another_format_or_dtype(void **state)
{
	assert_header_member_refused(*state, "dtype", cJSON_CreateString("bfloat16"),
	                             "dtype 'bfloat16'");
	assert_header_member_refused(*state, "format", cJSON_CreateString("keras-h5"),
	                             "format 'keras-h5'");
}

/* A hostile header asking for 4096x4096 inputs is refused with a message,
 * not by running out of memory. */
static void test_load_refuses_a_header_with_an_absurd_input_shape(void **state)
{
	cJSON *input = cJSON_CreateArray();

	cJSON_AddItemToArray(input, cJSON_CreateNumber(4096));
	cJSON_AddItemToArray(input, cJSON_CreateNumber(4096));
	cJSON_AddItemToArray(input, cJSON_CreateNumber(1));
	assert_header_member_refused(*state, "input", input, "GiB");
}

/* The peak resident memory of this process so far, in bytes. */
static long long peak_rss(void)
{
	struct rusage ru;

	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	return (long long)ru.ru_maxrss * 1024;
}

/* A header of a few hundred bytes naming a 400x400 input, with the hash and
 * parameter count of that model right, over the parameters of a small one:
 * refused for its length before the gigabyte or so that the model's buffers
 * take is allocated (the fuzz target found it building them first). */
static void test_load_checks_the_file_length_before_building_a_large_model(void **state)
{
	struct fixture *fx = *state;
	size_t len, nparams = 0;
	uint64_t hash = 0;
	unsigned char *buf;
	char hex[17], want[96];
	cJSON *json, *input = cJSON_CreateArray();
	long long before;

	assert_int_equal(model_plan("cnn-pool", 400, 400, 1, 10, 4, &nparams, &hash, fx->err), 0);
	assert_true(nparams * sizeof(float) > (256u << 20));
	buf = save_small_and_read(fx, &len);
	json = parse_header(buf, len);
	for (int i = 0; i < 3; i++)
		cJSON_AddItemToArray(input, cJSON_CreateNumber(i < 2 ? 400 : 1));
	snprintf(hex, sizeof(hex), "%016" PRIx64, hash);
	assert_true(cJSON_ReplaceItemInObjectCaseSensitive(json, "input", input));
	assert_true(
	    cJSON_ReplaceItemInObjectCaseSensitive(json, "arch_hash", cJSON_CreateString(hex)));
	assert_true(cJSON_ReplaceItemInObjectCaseSensitive(json, "num_params",
	                                                   cJSON_CreateNumber((double)nparams)));
	rewrite_with_header(fx, json, 0);
	snprintf(want, sizeof(want), "holds %zu bytes of parameters, model 'cnn-pool' needs %zu",
	         fx->m->nparams * sizeof(float), nparams * sizeof(float));
	before = peak_rss();
	assert_load_refused(fx, want);
	assert_true(peak_rss() - before < (64ll << 20));
	cJSON_Delete(json);
	free(buf);
}

static void test_load_refuses_a_header_that_is_not_json(void **state)
{
	/* '{' becomes '[': the header no longer parses. */
	assert_patched_file_refused(*state, PREFIX_LEN, "[", 1, "header: invalid JSON");
}

static void test_load_refuses_an_architecture_hash_mismatch(void **state)
{
	assert_header_member_refused(*state, "arch_hash", cJSON_CreateString("0123456789abcdef"),
	                             "architecture hash 0123456789abcdef does not match");
}

/* The file holds exactly the model's parameters, but the header's count
 * says otherwise: the header is wrong and must not be believed. */
static void test_load_refuses_num_params_that_disagree_with_the_model(void **state)
{
	struct fixture *fx = *state;
	char want[64];

	save_small(fx);
	snprintf(want, sizeof(want), "'num_params' is %zu but model 'cnn-pool' has %zu",
	         fx->m->nparams + 1, fx->m->nparams);
	replace_header_member(fx, "num_params", cJSON_CreateNumber((double)fx->m->nparams + 1));
	assert_load_refused(fx, want);
}

static void test_load_refuses_a_file_length_that_disagrees_with_num_params(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	unsigned char *buf;
	cJSON *json;
	char want[96];

	buf = save_small_and_read(fx, &len);
	json = parse_header(buf, len);
	/* One float short, with a header and CRC that are otherwise right. */
	rewrite_with_header(fx, json, 1);
	snprintf(want, sizeof(want), "holds %zu bytes of parameters, model 'cnn-pool' needs %zu",
	         (fx->m->nparams - 1) * sizeof(float), fx->m->nparams * sizeof(float));
	assert_load_refused(fx, want);
	cJSON_Delete(json);
	free(buf);
}

static void test_load_names_a_missing_file(void **state)
{
	struct fixture *fx = *state;

	assert_load_refused(fx, "No such file or directory");
}

static void test_load_refuses_an_oversized_header_length(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	unsigned char *buf;
	char want[96];

	buf = save_small_and_read(fx, &len);
	const uint32_t lengths[] = {UINT32_MAX, (uint32_t)(len - PREFIX_LEN - 4 + 1)};
	for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
		bytes_put_le32(buf + 12, lengths[i]);
		fix_crc(buf, len);
		testutil_write_file(fx->path, buf, len);
		snprintf(want, sizeof(want), "truncated: header claims %" PRIu32 " bytes",
		         lengths[i]);
		assert_load_refused(fx, want);
	}
	free(buf);
}

/* A model file far longer than its header says (a sparse file of 512 MiB
 * behind a small model's header) is refused by its size alone: neither
 * read whole nor held in memory, as a 3 GB one once was. */
static void test_load_refuses_a_file_longer_than_its_header_without_reading_it(void **state)
{
	struct fixture *fx = *state;
	long long read0, rss0;

	save_small(fx);
	assert_int_equal(truncate(fx->path, 512ll << 20), 0);
	read0 = testutil_bytes_read();
	rss0 = testutil_peak_rss();
	testutil_limit_memory(256ll << 20);
	fx->err[0] = '\0';
	struct model *m = model_file_load(fx->dir, 4, fx->err);
	testutil_unlimit_memory();
	assert_null(m);
	print_message("    %s\n", fx->err);
	testutil_assert_contains(fx->err, fx->path);
	testutil_assert_contains(fx->err, "bytes of parameters, model 'cnn-pool' needs");
	assert_true(testutil_bytes_read() - read0 < (1 << 20));
	assert_true(testutil_peak_rss() - rss0 < (64ll << 20));
}

/* /dev/zero or a FIFO where model.mwj should be is refused at once, not
 * read until a 4 GiB limit. */
static void test_load_refuses_what_is_not_a_regular_file(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(symlink("/dev/zero", fx->path), 0);
	testutil_limit_memory(256ll << 20);
	assert_load_refused(fx, "not a regular file");
	testutil_unlimit_memory();
	assert_int_equal(unlink(fx->path), 0);
	assert_int_equal(mkfifo(fx->path, 0600), 0);
	assert_load_refused(fx, "not a regular file");
	assert_int_equal(unlink(fx->path), 0);
	assert_int_equal(mkdir(fx->path, 0700), 0);
	assert_load_refused(fx, "not a regular file");
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_save_then_load_restores_every_parameter_bitwise),
	    TEST(test_round_trip_keeps_special_float_bit_patterns),
	    TEST(test_header_records_the_model_and_how_it_was_trained),
	    TEST(test_save_replaces_the_old_file_and_leaves_no_temporaries),
	    TEST(test_save_creates_missing_directories),
	    TEST(test_load_refuses_a_bad_magic),
	    TEST(test_load_refuses_an_unknown_format_version),
	    TEST(test_load_refuses_a_truncated_file),
	    TEST(test_load_refuses_a_flipped_byte),
	    TEST(test_load_refuses_a_header_naming_an_unknown_model),
	    TEST(test_load_refuses_a_header_that_is_not_json),
	    TEST(test_load_refuses_another_format_or_dtype),
	    TEST(test_load_refuses_a_header_with_an_absurd_input_shape),
	    TEST(test_load_checks_the_file_length_before_building_a_large_model),
	    TEST(test_load_refuses_an_architecture_hash_mismatch),
	    TEST(test_load_refuses_num_params_that_disagree_with_the_model),
	    TEST(test_load_refuses_a_file_length_that_disagrees_with_num_params),
	    TEST(test_load_names_a_missing_file),
	    TEST(test_load_refuses_an_oversized_header_length),
	    TEST(test_load_refuses_a_file_longer_than_its_header_without_reading_it),
	    TEST(test_load_refuses_what_is_not_a_regular_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
