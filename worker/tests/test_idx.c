/* test_idx.c - IDX loading: the real Fashion-MNIST files, files the tests
 * write themselves (raw and gzip) and every way a file can be malformed.
 *
 * The real data is found through MWJ_TEST_DATA (default: Debian's
 * dataset-fashion-mnist). Each test gets its own mkdtemp directory, emptied
 * and removed by the teardown even when the test fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "err.h"
#include "idx.h"
#include "testutil.h"

struct fixture {
	char dir[TESTUTIL_TMPDIR_LEN]; /* first, for testutil_fixture_setup() */
	char path[PATH_MAX];
	char err[ERR_LEN];
};

static int setup(void **state)
{
	return testutil_fixture_setup(state, sizeof(struct fixture), "idx");
}

/* The path of name in the fixture's directory (valid until the next call). */
static const char *tmp_path(struct fixture *fx, const char *name)
{
	snprintf(fx->path, sizeof(fx->path), "%s/%s", fx->dir, name);
	return fx->path;
}

static const char *data_path(const char *name)
{
	static char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", testutil_data_dir(), name);
	return p;
}

/* A gzip stream of buf in a new buffer; *out_len is its length. */
static uint8_t *gzip_bytes(const uint8_t *buf, size_t len, size_t *out_len)
{
	z_stream zs = {0};
	size_t cap = len + len / 100 + 1024;
	uint8_t *out = malloc(cap);

	assert_non_null(out);
	assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (uint8_t *)buf;
	zs.avail_in = (unsigned)len;
	zs.next_out = out;
	zs.avail_out = (unsigned)cap;
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	*out_len = zs.total_out;
	deflateEnd(&zs);
	return out;
}

/* An idx3 ubyte image file of count x rows x cols with a position-dependent
 * pattern, plus extra bytes of room at the end (zero) for trailing-data tests. */
static uint8_t *make_images(uint32_t count, uint32_t rows, uint32_t cols, size_t extra, size_t *len)
{
	size_t n = (size_t)count * rows * cols;
	uint8_t *buf = calloc(1, 16 + n + extra);

	assert_non_null(buf);
	testutil_put_be32(buf, 0x00000803);
	testutil_put_be32(buf + 4, count);
	testutil_put_be32(buf + 8, rows);
	testutil_put_be32(buf + 12, cols);
	for (size_t i = 0; i < n; i++)
		buf[16 + i] = (uint8_t)(i * 7 + i / 251);
	*len = 16 + n + extra;
	return buf;
}

static uint8_t *make_labels(uint32_t count, size_t *len)
{
	uint8_t *buf = calloc(1, 8 + (size_t)count);

	assert_non_null(buf);
	testutil_put_be32(buf, 0x00000801);
	testutil_put_be32(buf + 4, count);
	for (uint32_t i = 0; i < count; i++)
		buf[8 + i] = (uint8_t)(i % 10);
	*len = 8 + (size_t)count;
	return buf;
}

/* The loaders failed as a user would want: -1, the struct zeroed, and a
 * message naming the file and containing each of the given words. */
static void assert_images_error(const char *path, const char *name_in_msg, const char *word1,
                                const char *word2)
{
	struct idx_images img = {.count = 7};
	char err[ERR_LEN] = "";

	assert_int_equal(idx_load_images(path, &img, err), -1);
	assert_null(img.pixels);
	assert_int_equal(img.count, 0);
	assert_int_equal(img.rows, 0);
	assert_int_equal(img.cols, 0);
	print_message("    %s\n", err);
	assert_non_null(strstr(err, name_in_msg));
	assert_non_null(strstr(err, word1));
	if (word2 != NULL)
		assert_non_null(strstr(err, word2));
}

static void assert_labels_error(const char *path, const char *word1, const char *word2)
{
	struct idx_labels lab = {.count = 7};
	char err[ERR_LEN] = "";

	assert_int_equal(idx_load_labels(path, &lab, err), -1);
	assert_null(lab.labels);
	assert_int_equal(lab.count, 0);
	print_message("    %s\n", err);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, word1));
	if (word2 != NULL)
		assert_non_null(strstr(err, word2));
}

/* --- The real Fashion-MNIST files --- */

static void assert_fashion_images(const char *name, uint32_t count, unsigned first_sum)
{
	struct idx_images img = {0};
	char err[ERR_LEN] = "";
	unsigned sum = 0;

	assert_int_equal(idx_load_images(data_path(name), &img, err), 0);
	assert_int_equal(img.count, count);
	assert_int_equal(img.rows, 28);
	assert_int_equal(img.cols, 28);
	assert_non_null(img.pixels);
	/* The first image's pixel sum, computed independently with python3 gzip. */
	for (size_t i = 0; i < (size_t)28 * 28; i++)
		sum += img.pixels[i];
	assert_int_equal(sum, first_sum);
	idx_images_release(&img);
	assert_null(img.pixels);
	assert_int_equal(img.count, 0);
}

static void assert_fashion_labels(const char *name, uint32_t count, const uint8_t *first10)
{
	struct idx_labels lab = {0};
	char err[ERR_LEN] = "";
	uint32_t per_class[10] = {0};

	assert_int_equal(idx_load_labels(data_path(name), &lab, err), 0);
	assert_int_equal(lab.count, count);
	assert_memory_equal(lab.labels, first10, 10);
	for (uint32_t i = 0; i < lab.count; i++) {
		assert_true(lab.labels[i] < 10);
		per_class[lab.labels[i]]++;
	}
	/* Fashion-MNIST is exactly balanced. */
	for (int c = 0; c < 10; c++)
		assert_int_equal(per_class[c], count / 10);
	idx_labels_release(&lab);
	assert_null(lab.labels);
}

static void test_idx_loads_fashion_mnist_train_images(void **state)
{
	(void)state;
	assert_fashion_images("train-images-idx3-ubyte.gz", 60000, 76247);
}

static void test_idx_loads_fashion_mnist_test_images(void **state)
{
	(void)state;
	assert_fashion_images("t10k-images-idx3-ubyte.gz", 10000, 33456);
}

static void test_idx_loads_fashion_mnist_train_labels_starting_with_9(void **state)
{
	static const uint8_t first10[10] = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};

	(void)state;
	assert_fashion_labels("train-labels-idx1-ubyte.gz", 60000, first10);
}

static void test_idx_loads_fashion_mnist_test_labels_starting_with_9(void **state)
{
	static const uint8_t first10[10] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};

	(void)state;
	assert_fashion_labels("t10k-labels-idx1-ubyte.gz", 10000, first10);
}

static void test_idx_bare_name_finds_the_fashion_mnist_gz_file(void **state)
{
	static const uint8_t first10[10] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};

	(void)state;
	assert_fashion_labels("t10k-labels-idx1-ubyte", 10000, first10);
}

/* --- Files the tests write --- */

static void test_idx_loads_raw_images_byte_for_byte(void **state)
{
	struct fixture *fx = *state;
	struct idx_images img = {0};
	size_t len = 0;
	uint8_t *buf = make_images(5, 3, 4, 0, &len);

	testutil_write_file(tmp_path(fx, "images"), buf, len);
	assert_int_equal(idx_load_images(fx->path, &img, fx->err), 0);
	assert_int_equal(img.count, 5);
	assert_int_equal(img.rows, 3);
	assert_int_equal(img.cols, 4);
	assert_memory_equal(img.pixels, buf + 16, (size_t)5 * 3 * 4);
	idx_images_release(&img);
	free(buf);
}

static void test_idx_loads_raw_labels_byte_for_byte(void **state)
{
	struct fixture *fx = *state;
	struct idx_labels lab = {0};
	size_t len = 0;
	uint8_t *buf = make_labels(1234, &len);

	testutil_write_file(tmp_path(fx, "labels"), buf, len);
	assert_int_equal(idx_load_labels(fx->path, &lab, fx->err), 0);
	assert_int_equal(lab.count, 1234);
	assert_memory_equal(lab.labels, buf + 8, 1234);
	idx_labels_release(&lab);
	free(buf);
}

static void test_idx_loads_images_larger_than_one_read_chunk(void **state)
{
	/* 9 MiB of pixels crosses the first allocation and several zlib buffers. */
	struct fixture *fx = *state;
	struct idx_images img = {0};
	size_t len = 0, gz_len = 0;
	uint8_t *buf = make_images(2304, 64, 64, 0, &len);
	uint8_t *gz = gzip_bytes(buf, len, &gz_len);

	testutil_write_file(tmp_path(fx, "big.gz"), gz, gz_len);
	assert_int_equal(idx_load_images(fx->path, &img, fx->err), 0);
	assert_int_equal(img.count, 2304);
	assert_memory_equal(img.pixels, buf + 16, len - 16);
	idx_images_release(&img);
	free(gz);
	free(buf);
}

static void test_idx_decompresses_gzip_content_without_gz_suffix(void **state)
{
	struct fixture *fx = *state;
	struct idx_labels lab = {0};
	size_t len = 0, gz_len = 0;
	uint8_t *buf = make_labels(100, &len);
	uint8_t *gz = gzip_bytes(buf, len, &gz_len);

	testutil_write_file(tmp_path(fx, "labels"), gz, gz_len);
	assert_int_equal(idx_load_labels(fx->path, &lab, fx->err), 0);
	assert_int_equal(lab.count, 100);
	assert_memory_equal(lab.labels, buf + 8, 100);
	idx_labels_release(&lab);
	free(gz);
	free(buf);
}

static void test_idx_bare_name_finds_the_gz_file(void **state)
{
	struct fixture *fx = *state;
	struct idx_labels lab = {0};
	size_t len = 0, gz_len = 0;
	uint8_t *buf = make_labels(50, &len);
	uint8_t *gz = gzip_bytes(buf, len, &gz_len);

	testutil_write_file(tmp_path(fx, "labels.gz"), gz, gz_len);
	assert_int_equal(idx_load_labels(tmp_path(fx, "labels"), &lab, fx->err), 0);
	assert_int_equal(lab.count, 50);
	assert_memory_equal(lab.labels, buf + 8, 50);
	idx_labels_release(&lab);
	free(gz);
	free(buf);
}

static void test_idx_bare_name_is_preferred_over_the_gz_file(void **state)
{
	struct fixture *fx = *state;
	struct idx_labels lab = {0};
	size_t raw_len = 0, other_len = 0, gz_len = 0;
	uint8_t *raw = make_labels(10, &raw_len);
	uint8_t *other = make_labels(20, &other_len);
	uint8_t *gz = gzip_bytes(other, other_len, &gz_len);

	testutil_write_file(tmp_path(fx, "labels"), raw, raw_len);
	testutil_write_file(tmp_path(fx, "labels.gz"), gz, gz_len);
	assert_int_equal(idx_load_labels(tmp_path(fx, "labels"), &lab, fx->err), 0);
	assert_int_equal(lab.count, 10);
	idx_labels_release(&lab);
	free(gz);
	free(other);
	free(raw);
}

static void test_idx_release_accepts_null_and_zeroed_structs(void **state)
{
	struct idx_images img = {0};
	struct idx_labels lab = {0};

	(void)state;
	idx_images_release(NULL);
	idx_labels_release(NULL);
	idx_images_release(&img);
	idx_labels_release(&lab);
	assert_null(img.pixels);
	assert_null(lab.labels);
}

/* --- Malformed headers --- */

static void test_idx_rejects_a_file_that_is_not_idx(void **state)
{
	struct fixture *fx = *state;
	static const uint8_t junk[] = "GIF89a, not a dataset at all";

	testutil_write_file(tmp_path(fx, "junk"), junk, sizeof(junk));
	assert_images_error(fx->path, fx->path, "bad magic 0x47494638", "not an idx file");
}

static void test_idx_rejects_a_data_type_other_than_unsigned_byte(void **state)
{
	struct fixture *fx = *state;
	size_t len = 0;
	uint8_t *buf = make_images(2, 2, 2, 0, &len);

	buf[2] = 0x0d; /* float */
	testutil_write_file(tmp_path(fx, "floats"), buf, len);
	assert_images_error(fx->path, fx->path, "magic 0x00000d03", "data type 0x0d");
	free(buf);
}

static void test_idx_rejects_images_file_loaded_as_labels(void **state)
{
	struct fixture *fx = *state;
	size_t len = 0;
	uint8_t *buf = make_images(2, 2, 2, 0, &len);

	testutil_write_file(tmp_path(fx, "images"), buf, len);
	assert_labels_error(fx->path,
	                    "bad magic 0x00000803, expected 0x00000801 (idx1 ubyte labels)",
	                    "3 dimensions, not 1");
	free(buf);
}

static void test_idx_rejects_labels_file_loaded_as_images(void **state)
{
	struct fixture *fx = *state;
	size_t len = 0;
	uint8_t *buf = make_labels(16, &len);

	testutil_write_file(tmp_path(fx, "labels"), buf, len);
	assert_images_error(fx->path, fx->path, "expected 0x00000803", "1 dimensions, not 3");
	free(buf);
}

static void test_idx_rejects_zero_count(void **state)
{
	struct fixture *fx = *state;
	size_t len = 0;
	uint8_t *img = make_images(1, 2, 2, 0, &len);
	uint8_t *lab = NULL;

	testutil_put_be32(img + 4, 0);
	testutil_write_file(tmp_path(fx, "images"), img, len);
	assert_images_error(fx->path, fx->path, "image count 0", "out of range");
	lab = make_labels(1, &len);
	testutil_put_be32(lab + 4, 0);
	testutil_write_file(tmp_path(fx, "labels"), lab, len);
	assert_labels_error(fx->path, "label count 0", "out of range");
	free(lab);
	free(img);
}

static void test_idx_rejects_dimensions_out_of_range(void **state)
{
	static const struct {
		uint32_t count, rows, cols;
		const char *word;
	} cases[] = {
	    {IDX_MAX_COUNT + 1, 28, 28, "image count 100000001"},
	    {0xffffffffu, 28, 28, "image count 4294967295"},
	    {10, IDX_MAX_SIDE + 1, 28, "rows 4097"},
	    {10, 0, 28, "rows 0"},
	    {10, 28, 0xffffffffu, "cols 4294967295"},
	    {10, 28, 0, "cols 0"},
	};
	struct fixture *fx = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t hdr[16];

		testutil_put_be32(hdr, 0x00000803);
		testutil_put_be32(hdr + 4, cases[i].count);
		testutil_put_be32(hdr + 8, cases[i].rows);
		testutil_put_be32(hdr + 12, cases[i].cols);
		testutil_write_file(tmp_path(fx, "images"), hdr, sizeof(hdr));
		assert_images_error(fx->path, fx->path, cases[i].word, "out of range");
	}
}

static void test_idx_rejects_truncated_header(void **state)
{
	struct fixture *fx = *state;
	size_t len = 0;
	uint8_t *buf = make_images(2, 2, 2, 0, &len);

	testutil_write_file(tmp_path(fx, "images"), buf, 2);
	assert_images_error(fx->path, fx->path, "truncated", "read 2 of 16 bytes of header");
	testutil_write_file(fx->path, buf, 10);
	assert_images_error(fx->path, fx->path, "truncated", "read 10 of 16 bytes of header");
	testutil_write_file(fx->path, buf, 0);
	assert_images_error(fx->path, fx->path, "truncated", "read 0 of 16 bytes of header");
	free(buf);
}

/* --- Malformed data --- */

static void test_idx_rejects_truncated_raw_data(void **state)
{
	struct fixture *fx = *state;
	size_t len = 0;
	uint8_t *buf = make_images(10, 28, 28, 0, &len);

	testutil_write_file(tmp_path(fx, "images"), buf, 16 + 1000);
	assert_images_error(fx->path, fx->path, "truncated",
	                    "read 1000 of 7840 bytes of image data");
	free(buf);
}

static void test_idx_rejects_huge_claim_in_tiny_file_as_truncated(void **state)
{
	/* Header claims 1e8 x 4096 x 4096 bytes; the loader must not try to
	 * allocate that, only fail when the data runs out. */
	struct fixture *fx = *state;
	size_t len = 0;
	uint8_t *buf = make_images(1, 1, 1, 0, &len);

	testutil_put_be32(buf + 4, IDX_MAX_COUNT);
	testutil_put_be32(buf + 8, IDX_MAX_SIDE);
	testutil_put_be32(buf + 12, IDX_MAX_SIDE);
	testutil_write_file(tmp_path(fx, "images"), buf, len);
	assert_images_error(fx->path, fx->path, "truncated", "read 1 of ");
	free(buf);
}

static void test_idx_rejects_truncated_gzip_data(void **state)
{
	struct fixture *fx = *state;
	size_t len = 0, gz_len = 0;
	uint8_t *buf = make_images(100, 28, 28, 0, &len);
	uint8_t *gz = gzip_bytes(buf, len, &gz_len);

	testutil_write_file(tmp_path(fx, "images.gz"), gz, gz_len / 2);
	assert_images_error(fx->path, fx->path, "truncated gzip stream", "of 78400 bytes");
	free(gz);
	free(buf);
}

static void test_idx_rejects_gzip_missing_its_trailer(void **state)
{
	/* All the data decompresses, but the CRC and length are cut off. */
	struct fixture *fx = *state;
	size_t len = 0, gz_len = 0;
	uint8_t *buf = make_labels(1000, &len);
	uint8_t *gz = gzip_bytes(buf, len, &gz_len);

	testutil_write_file(tmp_path(fx, "labels.gz"), gz, gz_len - 8);
	assert_labels_error(fx->path, "truncated gzip stream", "trailer");
	free(gz);
	free(buf);
}

static void test_idx_rejects_trailing_data(void **state)
{
	struct fixture *fx = *state;
	size_t len = 0, gz_len = 0;
	uint8_t *buf = make_images(3, 5, 5, 12, &len);
	uint8_t *gz = gzip_bytes(buf, len, &gz_len);

	testutil_write_file(tmp_path(fx, "images"), buf, len);
	assert_images_error(fx->path, fx->path, "12 bytes of trailing data",
	                    "after 75 bytes of image data");
	testutil_write_file(tmp_path(fx, "images.gz"), gz, gz_len);
	assert_images_error(fx->path, fx->path, "12 bytes of trailing data", "image data");
	free(gz);
	free(buf);
}

static void test_idx_rejects_lots_of_trailing_data(void **state)
{
	struct fixture *fx = *state;
	size_t len = 0;
	uint8_t *buf = make_labels(10, &len);
	uint8_t *big = calloc(1, len + (3u << 20));

	assert_non_null(big);
	memcpy(big, buf, len);
	testutil_write_file(tmp_path(fx, "labels"), big, len + (3u << 20));
	assert_labels_error(fx->path, "at least", "bytes of trailing data after 10 bytes");
	free(big);
	free(buf);
}

static void test_idx_rejects_corrupt_gzip_data(void **state)
{
	struct fixture *fx = *state;
	size_t len = 0, gz_len = 0;
	uint8_t *buf = make_images(100, 28, 28, 0, &len);
	uint8_t *gz = gzip_bytes(buf, len, &gz_len);

	/* Damage the compressed body: inflate either rejects a block or the CRC. */
	for (size_t i = gz_len / 3; i < gz_len / 3 + 64; i++)
		gz[i] ^= 0x5a;
	testutil_write_file(tmp_path(fx, "images.gz"), gz, gz_len);
	assert_images_error(fx->path, fx->path, "corrupt gzip stream", NULL);
	free(gz);
	free(buf);
}

static void test_idx_rejects_gzip_with_bad_crc(void **state)
{
	struct fixture *fx = *state;
	size_t len = 0, gz_len = 0;
	uint8_t *buf = make_labels(500, &len);
	uint8_t *gz = gzip_bytes(buf, len, &gz_len);

	gz[gz_len - 8] ^= 0xff; /* first byte of the CRC-32 */
	testutil_write_file(tmp_path(fx, "labels.gz"), gz, gz_len);
	assert_labels_error(fx->path, "corrupt gzip stream", "incorrect data check");
	free(gz);
	free(buf);
}

static void test_idx_rejects_gzip_with_unknown_method(void **state)
{
	struct fixture *fx = *state;
	size_t len = 0, gz_len = 0;
	uint8_t *buf = make_labels(500, &len);
	uint8_t *gz = gzip_bytes(buf, len, &gz_len);

	gz[2] = 9; /* compression method: only 8 (deflate) exists */
	testutil_write_file(tmp_path(fx, "labels.gz"), gz, gz_len);
	assert_labels_error(fx->path, "corrupt gzip stream", "unknown compression method");
	free(gz);
	free(buf);
}

/* Junk appended after the gzip member is refused, where zlib's gzread
 * ignored it: a few bytes of text, and the zero padding of a tar block. */
static void test_idx_rejects_junk_after_the_gzip_member(void **state)
{
	struct fixture *fx = *state;
	size_t len = 0, gz_len = 0;
	uint8_t *buf = make_labels(300, &len);
	uint8_t *gz = gzip_bytes(buf, len, &gz_len);
	uint8_t *junk = calloc(1, gz_len + 512);
	static const uint8_t text[5] = {'j', 'u', 'n', 'k', '!'};
	char want[64];

	assert_non_null(junk);
	memcpy(junk, gz, gz_len);
	memcpy(junk + gz_len, text, sizeof(text));
	testutil_write_file(tmp_path(fx, "labels.gz"), junk, gz_len + 5);
	snprintf(want, sizeof(want), "ends at byte %zu", gz_len);
	assert_labels_error(fx->path, "5 bytes of junk after the gzip member", want);
	memset(junk + gz_len, 0, 512);
	testutil_write_file(tmp_path(fx, "labels.gz"), junk, gz_len + 512);
	assert_labels_error(fx->path, "512 bytes of junk after the gzip member", want);
	/* One byte of a gzip magic is no member either. */
	junk[gz_len] = 0x1f;
	testutil_write_file(tmp_path(fx, "labels.gz"), junk, gz_len + 1);
	assert_labels_error(fx->path, "1 bytes of junk", NULL);
	free(junk);
	free(gz);
	free(buf);
}

/* Members one after the other are one file (RFC 1952), as `cat a.gz b.gz`
 * makes and gzip -d reads: the data may be split anywhere between them. */
static void test_idx_reads_concatenated_gzip_members_as_one_file(void **state)
{
	struct fixture *fx = *state;
	struct idx_labels lab = {0};
	size_t len = 0, gz1_len = 0, gz2_len = 0;
	uint8_t *buf = make_labels(1000, &len);
	uint8_t *gz1 = gzip_bytes(buf, 5, &gz1_len);
	uint8_t *gz2 = gzip_bytes(buf + 5, len - 5, &gz2_len);
	uint8_t *both = malloc(gz1_len + gz2_len);

	assert_non_null(both);
	memcpy(both, gz1, gz1_len);
	memcpy(both + gz1_len, gz2, gz2_len);
	testutil_write_file(tmp_path(fx, "labels.gz"), both, gz1_len + gz2_len);
	assert_int_equal(idx_load_labels(fx->path, &lab, fx->err), 0);
	assert_int_equal(lab.count, 1000);
	assert_memory_equal(lab.labels, buf + 8, 1000);
	idx_labels_release(&lab);
	free(both);
	free(gz2);
	free(gz1);
	free(buf);
}

/* Opening reads the header alone: a gzip file whose header says 200000
 * images of 64x64 (800 MiB inflated, under a megabyte compressed) tells
 * its shape without the rest being inflated. */
static void test_idx_open_inflates_the_header_alone(void **state)
{
	struct fixture *fx = *state;
	struct idx_file f;
	uint8_t header[16];
	size_t gz_len = 0;
	uint8_t *gz;
	long long rss0;

	testutil_put_be32(header, 0x00000803);
	testutil_put_be32(header + 4, 200000);
	testutil_put_be32(header + 8, 64);
	testutil_put_be32(header + 12, 64);
	gz = testutil_gzip_header_and_zeros(header, 16 + 200000ull * 64 * 64, &gz_len);
	testutil_write_file(tmp_path(fx, "big-images.gz"), gz, gz_len);
	free(gz);
	rss0 = testutil_peak_rss();
	assert_int_equal(idx_open_images(&f, fx->path, fx->err), 0);
	assert_int_equal(f.count, 200000);
	assert_int_equal(f.rows, 64);
	assert_int_equal(f.cols, 64);
	assert_int_equal(f.size, 200000ull * 64 * 64);
	assert_true(testutil_peak_rss() - rss0 < (16ll << 20));
	idx_close(&f);
	idx_close(&f);
}

/* --- Files that cannot be read --- */

static void test_idx_reports_missing_file_under_both_names(void **state)
{
	struct fixture *fx = *state;
	char want[PATH_MAX + 64];

	tmp_path(fx, "train-images-idx3-ubyte");
	snprintf(want, sizeof(want), "'%s' (or '.gz'): No such file or directory", fx->path);
	assert_images_error(fx->path, want, "No such file", NULL);
	assert_labels_error(fx->path, "(or '.gz')", "No such file");
}

static void test_idx_reports_a_directory_as_a_read_error(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(mkdir(tmp_path(fx, "dir"), 0700), 0);
	assert_labels_error(fx->path, "read", "directory");
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, testutil_fixture_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_idx_loads_fashion_mnist_train_images),
	    cmocka_unit_test(test_idx_loads_fashion_mnist_test_images),
	    cmocka_unit_test(test_idx_loads_fashion_mnist_train_labels_starting_with_9),
	    cmocka_unit_test(test_idx_loads_fashion_mnist_test_labels_starting_with_9),
	    cmocka_unit_test(test_idx_bare_name_finds_the_fashion_mnist_gz_file),
	    TEST(test_idx_loads_raw_images_byte_for_byte),
	    TEST(test_idx_loads_raw_labels_byte_for_byte),
	    TEST(test_idx_loads_images_larger_than_one_read_chunk),
	    TEST(test_idx_decompresses_gzip_content_without_gz_suffix),
	    TEST(test_idx_bare_name_finds_the_gz_file),
	    TEST(test_idx_bare_name_is_preferred_over_the_gz_file),
	    cmocka_unit_test(test_idx_release_accepts_null_and_zeroed_structs),
	    TEST(test_idx_rejects_a_file_that_is_not_idx),
	    TEST(test_idx_rejects_a_data_type_other_than_unsigned_byte),
	    TEST(test_idx_rejects_images_file_loaded_as_labels),
	    TEST(test_idx_rejects_labels_file_loaded_as_images),
	    TEST(test_idx_rejects_zero_count),
	    TEST(test_idx_rejects_dimensions_out_of_range),
	    TEST(test_idx_rejects_truncated_header),
	    TEST(test_idx_rejects_truncated_raw_data),
	    TEST(test_idx_rejects_huge_claim_in_tiny_file_as_truncated),
	    TEST(test_idx_rejects_truncated_gzip_data),
	    TEST(test_idx_rejects_gzip_missing_its_trailer),
	    TEST(test_idx_rejects_trailing_data),
	    TEST(test_idx_rejects_lots_of_trailing_data),
	    TEST(test_idx_rejects_corrupt_gzip_data),
	    TEST(test_idx_rejects_gzip_with_bad_crc),
	    TEST(test_idx_rejects_gzip_with_unknown_method),
	    TEST(test_idx_rejects_junk_after_the_gzip_member),
	    TEST(test_idx_reads_concatenated_gzip_members_as_one_file),
	    TEST(test_idx_open_inflates_the_header_alone),
	    TEST(test_idx_reports_missing_file_under_both_names),
	    TEST(test_idx_reports_a_directory_as_a_read_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
