/* test_npy.c - NumPy data: .npy arrays (npy.h), .npz archives (npz.h) and
 * the training sets made of them (numpy_set.h).
 *
 * What numpy writes and what its astype(np.float32) gives come from
 * fixtures in worker/tests/data/npy, written by numpy itself through
 * scripts/make-npy-fixtures.py (which says what each holds); the tests find
 * them beside this file, through __FILE__, the path the Makefile compiles
 * it by, relative to the repository root that the tests run from. Hostile
 * files are built here, in a mkdtemp folder per test that the teardown
 * removes: .npy bytes by hand, zips with minizip's zip.h in raw mode, so
 * that each field (method, CRC, declared size) is what the test says.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zip.h>
#include <zlib.h>

#include "err.h"
#include "npy.h"
#include "npz.h"
#include "numpy_set.h"
#include "testutil.h"

struct fixture {
	char dir[TESTUTIL_TMPDIR_LEN]; /* first, for testutil_fixture_setup() */
	char path[PATH_MAX];
	char err[ERR_LEN];
};

static int setup(void **state)
{
	return testutil_fixture_setup(state, sizeof(struct fixture), "npy");
}

/* The path of name in the fixture's directory (valid until the next call). */
static const char *tmp_path(struct fixture *fx, const char *name)
{
	snprintf(fx->path, sizeof(fx->path), "%s/%s", fx->dir, name);
	return fx->path;
}

/* The path of a committed fixture, worker/tests/data/npy/<name>. */
static const char *data_path(const char *name)
{
	static char p[PATH_MAX];
	const char *slash = strrchr(__FILE__, '/');

	snprintf(p, sizeof(p), "%.*s/data/npy/%s", slash ? (int)(slash - __FILE__) : 1,
	         slash ? __FILE__ : ".", name);
	return p;
}

static void assert_has(const char *err, const char *part)
{
	print_message("    %s\n", err);
	testutil_assert_contains(err, part);
}

static void assert_zeroed(const struct npy_array *a)
{
	static const struct npy_array zero;

	assert_memory_equal(a, &zero, sizeof(zero));
}

/* --- .npy bytes built here --- */

/* Magic, version major.minor, a header length and the header text as given
 * (no padding), for the prefix and dict tests. */
static size_t npy_raw(unsigned char *buf, unsigned major, unsigned minor, const char *dict)
{
	static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
	size_t hlen = strlen(dict), prefix = major == 1 ? 10 : 12;

	memcpy(buf, magic, sizeof(magic));
	buf[6] = (unsigned char)major;
	buf[7] = (unsigned char)minor;
	for (size_t i = 0; i < prefix - 8; i++)
		buf[8 + i] = (unsigned char)(hlen >> (8 * i));
	for (size_t i = 0; i < hlen; i++)
		buf[prefix + i] = (unsigned char)dict[i];
	return prefix + hlen;
}

/* A version 1.0 .npy of the header dict text and len bytes of data, padded
 * with spaces and a newline to 64 bytes as numpy pads, in a new buffer of
 * *out_len bytes that the caller frees. */
static unsigned char *npy_build(const char *dict, const void *data, size_t len, size_t *out_len)
{
	size_t dlen = strlen(dict), hlen = dlen + 1;
	unsigned char *buf;

	hlen += (64 - (10 + hlen) % 64) % 64;
	*out_len = 10 + hlen + len;
	buf = malloc(*out_len + 1);
	assert_non_null(buf);
	npy_raw(buf, 1, 0, "");
	buf[8] = (unsigned char)hlen;
	buf[9] = (unsigned char)(hlen >> 8);
	memset(buf + 10, ' ', hlen);
	for (size_t i = 0; i < dlen; i++)
		buf[10 + i] = (unsigned char)dict[i];
	buf[10 + hlen - 1] = '\n';
	if (len > 0)
		memcpy(buf + 10 + hlen, data, len);
	return buf;
}

/* --- Zips built here --- */

struct zmember {
	const char *name;
	const void *data; /* the member's content, before any compression */
	size_t len;
	int method;        /* 0 stored, 8 deflated, other: written raw as given */
	uint32_t crc_flip; /* xored into the CRC-32 written */
	long declared;     /* the uncompressed size written, if not 0 (-1: 0 itself) */
};

/* data deflated raw (no zlib header), as a zip member holds it. */
static unsigned char *deflate_raw(const void *data, size_t len, size_t *out_len)
{
	z_stream zs = {0};
	size_t cap = len + len / 100 + 1024;
	unsigned char *out = malloc(cap);

	assert_non_null(out);
	assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (unsigned char *)data;
	zs.avail_in = (unsigned)len;
	zs.next_out = out;
	zs.avail_out = (unsigned)cap;
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	*out_len = zs.total_out;
	deflateEnd(&zs);
	return out;
}

static void zip_write(const char *path, const struct zmember *m, int n)
{
	zipFile zf = zipOpen64(path, APPEND_STATUS_CREATE);

	assert_non_null(zf);
	for (int i = 0; i < n; i++) {
		zip_fileinfo zi = {0};
		unsigned char *packed = NULL;
		const void *raw = m[i].data;
		size_t raw_len = m[i].len;
		uLong crc = crc32(0, m[i].data, (uInt)m[i].len) ^ m[i].crc_flip;
		uint64_t declared = m[i].declared == 0    ? m[i].len
		                    : m[i].declared == -1 ? 0
		                                          : (uint64_t)m[i].declared;

		if (m[i].method == Z_DEFLATED) {
			packed = deflate_raw(m[i].data, m[i].len, &raw_len);
			raw = packed;
		}
		assert_int_equal(zipOpenNewFileInZip2_64(zf, m[i].name, &zi, NULL, 0, NULL, 0, NULL,
		                                         m[i].method, 6, 1, 1),
		                 ZIP_OK);
		assert_int_equal(zipWriteInFileInZip(zf, raw, (unsigned)raw_len), ZIP_OK);
		assert_int_equal(zipCloseFileInZipRaw64(zf, declared, crc), ZIP_OK);
		free(packed);
	}
	assert_int_equal(zipClose(zf, NULL), ZIP_OK);
}

/* A .npy of n float32 values 0, 1, 2, ... under a header saying shape
 * (claimed,), in a new buffer of *len bytes. */
static unsigned char *f32_npy(unsigned claimed, unsigned n, size_t *len)
{
	char dict[128];
	float v[64];
	unsigned char *buf;

	assert_true(n <= 64);
	for (unsigned i = 0; i < n; i++)
		v[i] = (float)i;
	snprintf(dict, sizeof(dict), "{'descr': '<f4', 'fortran_order': False, 'shape': (%u,), }",
	         claimed);
	buf = npy_build(dict, v, n * sizeof(float), len);
	return buf;
}

/* --- Every dtype, as numpy converts it --- */

static const struct {
	const char *name;
	enum npy_dtype dtype;
	size_t itemsize;
} dtype_fixtures[] = {
    {"b1", NPY_TYPE_BOOL, 1}, {"u1", NPY_TYPE_U8, 1},  {"i1", NPY_TYPE_I8, 1},
    {"i2", NPY_TYPE_I16, 2},  {"u2", NPY_TYPE_U16, 2}, {"i4", NPY_TYPE_I32, 4},
    {"u4", NPY_TYPE_U32, 4},  {"i8", NPY_TYPE_I64, 8}, {"u8", NPY_TYPE_U64, 8},
    {"f2", NPY_TYPE_F16, 2},  {"f4", NPY_TYPE_F32, 4}, {"f8", NPY_TYPE_F64, 8},
};

/* Fails naming the first element whose bits differ. */
static void assert_same_floats(const float *got, const float *want, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t g, w;

		memcpy(&g, &got[i], 4);
		memcpy(&w, &want[i], 4);
		if (g != w)
			fail_msg("%s: element %zu is %a (0x%08x), numpy gives %a (0x%08x)", what, i,
			         (double)got[i], g, (double)want[i], w);
	}
}

static void test_npy_converts_every_dtype_as_numpy_astype_float32_does(void **state)
{
	(void)state;
	for (size_t t = 0; t < sizeof(dtype_fixtures) / sizeof(dtype_fixtures[0]); t++) {
		char name[32], err[ERR_LEN] = "";
		struct npy_array a;
		size_t want_len;
		float *want, *got;

		snprintf(name, sizeof(name), "%s.npy", dtype_fixtures[t].name);
		if (npy_open(&a, data_path(name), err) != 0)
			fail_msg("%s", err);
		snprintf(name, sizeof(name), "%s.f32", dtype_fixtures[t].name);
		want = testutil_read_file(data_path(name), &want_len);
		assert_int_equal(a.dtype, dtype_fixtures[t].dtype);
		assert_int_equal(a.itemsize, dtype_fixtures[t].itemsize);
		assert_int_equal(a.rank, 1);
		assert_int_equal(a.shape[0] * 4, want_len);
		assert_int_equal(a.count, a.shape[0]);
		assert_non_null(a.map);
		got = calloc(a.count, sizeof(float));
		assert_non_null(got);
		npy_to_f32(got, &a, 0, a.count, 1.0f);
		assert_same_floats(got, want, a.count, name);
		/* A slice from the middle is the same elements. */
		npy_to_f32(got, &a, 2, 2, 1.0f);
		assert_same_floats(got, want + 2, 2, name);
		free(got);
		free(want);
		npy_release(&a);
		assert_zeroed(&a);
	}
}

static void test_npy_scale_multiplies_after_the_conversion_as_numpy_does(void **state)
{
	char err[ERR_LEN] = "";
	struct npy_array a;
	float got[256], *want;
	size_t len;
	int differ = 0;

	(void)state;
	assert_int_equal(npy_open(&a, data_path("u1_all.npy"), err), 0);
	want = testutil_read_file(data_path("u1_all_scaled.f32"), &len);
	assert_int_equal(len, sizeof(got));
	npy_to_f32(got, &a, 0, 256, 1.0f / 255.0f);
	assert_same_floats(got, want, 256, "u1_all * float32(1/255)");
	for (int i = 0; i < 256; i++)
		differ += got[i] != (float)i / 255.0f;
	print_message("    x * (1/255.f) differs from x / 255.f for %d of the 256 bytes\n", differ);
	free(want);
	npy_release(&a);
}

/* What a half is, by its definition, with libm: the reference the software
 * conversion is held to for all 65536 of them. */
static float half_by_definition(uint16_t h)
{
	int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
	float mag;

	if (exp == 31 && man != 0) {
		uint32_t bits = (uint32_t)(h & 0x8000) << 16 | 0x7f800000u | (uint32_t)man << 13;
		float f;

		memcpy(&f, &bits, 4);
		return f;
	}
	if (exp == 31)
		mag = INFINITY;
	else if (exp == 0)
		mag = ldexpf((float)man, -24);
	else
		mag = ldexpf((float)(1024 + man), exp - 25);
	return h & 0x8000 ? -mag : mag;
}

static void test_npy_widens_all_65536_float16_values_exactly_from_unaligned_data(void **state)
{
	uint16_t *halves = malloc(65536 * 2);
	float *got = malloc(65536 * sizeof(float)), *want = malloc(65536 * sizeof(float));
	char err[ERR_LEN] = "";
	unsigned char *file, *shifted;
	struct npy_array a;
	size_t len;

	(void)state;
	assert_non_null(halves);
	assert_non_null(got);
	assert_non_null(want);
	for (uint32_t i = 0; i < 65536; i++) {
		halves[i] = (uint16_t)i;
		want[i] = half_by_definition((uint16_t)i);
	}
	file = npy_build("{'descr': '<f2', 'fortran_order': False, 'shape': (65536,), }", halves,
	                 65536 * 2, &len);
	/* One byte in, so that no element is 2-aligned. */
	shifted = malloc(len + 1);
	assert_non_null(shifted);
	memcpy(shifted + 1, file, len);
	assert_int_equal(npy_parse(&a, shifted + 1, len, err), 0);
	assert_true(((uintptr_t)a.data & 1) == 1);
	npy_to_f32(got, &a, 0, 65536, 1.0f);
	assert_same_floats(got, want, 65536, "float16");
	npy_release(&a); /* borrowed: frees nothing */
	free(shifted);
	free(file);
	free(halves);
	free(got);
	free(want);
}

static void test_npy_reads_elements_as_doubles_and_as_whole_numbers(void **state)
{
	char err[ERR_LEN] = "";
	struct npy_array a;
	int64_t v = 7;

	(void)state;
	assert_int_equal(npy_open(&a, data_path("i8.npy"), err), 0);
	assert_int_equal(npy_get_i64(&a, 0, &v), 0);
	assert_true(v == INT64_MIN);
	assert_int_equal(npy_get_i64(&a, 4, &v), 0);
	assert_true(v == INT64_MAX);
	assert_true(npy_get_f64(&a, 1) == -1.0);
	npy_release(&a);

	assert_int_equal(npy_open(&a, data_path("u8.npy"), err), 0);
	v = 7;
	assert_int_equal(npy_get_i64(&a, 1, &v), -1); /* 2^64 - 1 */
	assert_int_equal(npy_get_i64(&a, 2, &v), -1); /* 2^63 */
	assert_int_equal(v, 7);
	assert_int_equal(npy_get_i64(&a, 4, &v), 0);
	assert_int_equal(v, (1 << 24) + 1);
	npy_release(&a);

	assert_int_equal(npy_open(&a, data_path("f8.npy"), err), 0);
	assert_true(npy_get_f64(&a, 1) == 0.1);
	assert_int_equal(npy_get_i64(&a, 0, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(npy_get_i64(&a, 1, &v), -1); /* 0.1 */
	assert_int_equal(npy_get_i64(&a, 2, &v), -1); /* 1e300 */
	assert_int_equal(npy_get_i64(&a, 9, &v), -1); /* NaN */
	npy_release(&a);

	assert_int_equal(npy_open(&a, data_path("f2.npy"), err), 0);
	assert_int_equal(npy_get_i64(&a, 3, &v), -1); /* -2.5 */
	assert_int_equal(npy_get_i64(&a, 5, &v), 0);  /* -65504 */
	assert_true(v == -65504);
	npy_release(&a);
	assert_int_equal(npy_open(&a, data_path("b1.npy"), err), 0);
	assert_int_equal(npy_get_i64(&a, 0, &v), 0);
	assert_int_equal(v, 1);
	npy_release(&a);
}

/* --- Shapes and versions numpy writes --- */

static void test_npy_reads_rank_3_scalar_and_format_versions_2_and_3(void **state)
{
	char err[ERR_LEN] = "", shape[NPY_SHAPE_STR_LEN];
	struct npy_array a;
	float f[24];

	(void)state;
	assert_int_equal(npy_open(&a, data_path("rank3.npy"), err), 0);
	assert_int_equal(a.rank, 3);
	assert_string_equal(npy_shape_str(shape, sizeof(shape), a.shape, a.rank), "(2, 3, 4)");
	assert_int_equal(a.count, 24);
	assert_int_equal(a.nbytes, 48);
	npy_to_f32(f, &a, 0, 24, 1.0f);
	for (int i = 0; i < 24; i++)
		assert_true(f[i] == (float)i);
	npy_release(&a);

	assert_int_equal(npy_open(&a, data_path("scalar.npy"), err), 0);
	assert_int_equal(a.rank, 0);
	assert_int_equal(a.count, 1);
	assert_string_equal(npy_shape_str(shape, sizeof(shape), a.shape, a.rank), "()");
	npy_to_f32(f, &a, 0, 1, 1.0f);
	assert_true(f[0] == 2.5f);
	npy_release(&a);

	assert_int_equal(npy_open(&a, data_path("v2.npy"), err), 0);
	assert_int_equal(a.dtype, NPY_TYPE_F32);
	assert_string_equal(npy_shape_str(shape, sizeof(shape), a.shape, a.rank), "(5,)");
	npy_to_f32(f, &a, 0, 5, 2.0f);
	assert_true(f[4] == 8.0f);
	npy_release(&a);

	assert_int_equal(npy_open(&a, data_path("v3.npy"), err), 0);
	assert_int_equal(a.dtype, NPY_TYPE_I64);
	assert_int_equal(a.count, 5);
	assert_true(npy_get_f64(&a, 4) == 4.0);
	npy_release(&a);
}

/* --- The header dict, as ast.literal_eval and numpy take it --- */

static void test_npy_header_takes_what_python_literals_allow(void **state)
{
	static const struct {
		const char *dict;
		enum npy_dtype dtype;
		int rank;
		uint64_t count;
	} cases[] = {
	    {"{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}", NPY_TYPE_F32, 2, 6},
	    {"{\"descr\":\"<i2\",\"fortran_order\":False,\"shape\":(7,)}", NPY_TYPE_I16, 1, 7},
	    {"{ 'descr' : '|u1' ,\n\t'fortran_order' : False ,\n 'shape' : ( 4 , 5 , ) , }\n",
	     NPY_TYPE_U8, 2, 20},
	    {"{'descr': '<f8', 'fortran_order': False, 'shape': ()}", NPY_TYPE_F64, 0, 1},
	    {"{'descr': '<u8', 'fortran_order': False, 'shape': (3L, 4L), }", NPY_TYPE_U64, 2, 12},
	    {"{'descr': '=f4', 'fortran_order': False, 'shape': (2,), }", NPY_TYPE_F32, 1, 2},
	    {"{'descr': '|f2', 'fortran_order': False, 'shape': (2,), }", NPY_TYPE_F16, 1, 2},
	    {"{'descr': '>u1', 'fortran_order': False, 'shape': (2,), }", NPY_TYPE_U8, 1, 2},
	    {"{'descr': '|b1', 'fortran_order': False, 'shape': (0, 28, 28), }", NPY_TYPE_BOOL, 3,
	     0},
	    {"{'descr': '<f4', 'fortran_order': True, 'shape': (5,), }", NPY_TYPE_F32, 1, 5},
	    {"{'descr': '<f4', 'fortran_order': True, 'shape': (1, 5, 1), }", NPY_TYPE_F32, 3, 5},
	    {"{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 2), }",
	     NPY_TYPE_I32, 8, 2},
	    {"{'descr': '<i4', 'fortran_order': False, 'shape': (00,), }", NPY_TYPE_I32, 1, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned char buf[256];
		char err[ERR_LEN] = "";
		struct npy_array a;
		size_t len = npy_raw(buf, 1, 0, cases[i].dict);

		if (npy_parse_header(&a, buf, len, err) != 0)
			fail_msg("%s: %s", cases[i].dict, err);
		assert_int_equal(a.dtype, cases[i].dtype);
		assert_int_equal(a.rank, cases[i].rank);
		assert_int_equal(a.count, cases[i].count);
		assert_int_equal(a.header_bytes, len);
		assert_null(a.data);
	}
}

static void test_npy_header_refuses_what_numpy_refuses_saying_why(void **state)
{
	static const struct {
		const char *dict, *why;
	} cases[] = {
	    {"{'descr': '<f4', 'fortran_order': False, 'shape': (5), }", "not a tuple"},
	    {"{'descr': '<f4', 'fortran_order': False, }", "lacks 'shape'"},
	    {"{'descr': '<f4', 'shape': (5,), }", "lacks 'fortran_order'"},
	    {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (5,)}", "twice"},
	    {"{'descr': '<f4', 'fortran_order': False, 'shape': (5,), 'x': 1}", "besides"},
	    {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "negative"},
	    {"{'descr': '<f4', 'fortran_order': False, 'shape': (05,), }", "leading zero"},
	    {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }",
	     "more than 8"},
	    {"{'descr': '<f4", "unterminated"},
	    {"{'descr': '<f4', 'fortran_order': False, 'shape': (5,), } x", "after the dict"},
	    {"{'descr': '<f4', 'fortran_order': true, 'shape': (5,), }", "True or False"},
	    {"{'descr': '<f4', 'fortran_order': 0, 'shape': (5,), }", "True or False"},
	    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,), }", "whole number"},
	    {"{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,), }",
	     "too large"},
	    {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
	     "more than 2^63 bytes"},
	    {"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296), }",
	     "more than 2^63 bytes"},
	    {"{'descr': '>f4', 'fortran_order': False, 'shape': (5,), }", ".astype('<f4')"},
	    {"{'descr': '>i8', 'fortran_order': False, 'shape': (5,), }", ".astype('<i8')"},
	    {"{'descr': '|O', 'fortran_order': False, 'shape': (5,), }", "Python objects"},
	    {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (5,), }", "structured"},
	    {"{'descr': '<U3', 'fortran_order': False, 'shape': (5,), }", "strings"},
	    {"{'descr': '|S3', 'fortran_order': False, 'shape': (5,), }", "strings"},
	    {"{'descr': '<c8', 'fortran_order': False, 'shape': (5,), }", "not supported"},
	    {"{'descr': '<f16', 'fortran_order': False, 'shape': (5,), }", "not supported"},
	    {"{'descr': '<i3', 'fortran_order': False, 'shape': (5,), }", "not supported"},
	    {"{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (5,), }", "not supported"},
	    {"{'descr': 'f4', 'fortran_order': False, 'shape': (5,), }", "not a numpy descr"},
	    {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", "ascontiguousarray"},
	    {"[1, 2]", "expected '{'"},
	    {"{'de\\scr': '<f4'}", "escapes"},
	    {"{'descr': '<f4' 'fortran_order': False}", "expected ',' or '}'"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned char buf[256];
		char err[ERR_LEN] = "";
		struct npy_array a = {.rank = 3};
		size_t len = npy_raw(buf, 1, 0, cases[i].dict);

		if (npy_parse_header(&a, buf, len, err) != -1)
			fail_msg("accepted %s", cases[i].dict);
		assert_has(err, cases[i].why);
		assert_zeroed(&a);
	}
}

static void test_npy_refuses_what_is_no_npy_header_or_is_cut_short(void **state)
{
	unsigned char buf[256];
	char err[ERR_LEN] = "";
	struct npy_array a;
	size_t len;

	(void)state;
	assert_int_equal(npy_parse_header(&a, "", 0, err), -1);
	assert_has(err, "truncated: 0 bytes");
	assert_int_equal(npy_parse_header(&a, "\x93NUM", 4, err), -1);
	assert_has(err, "truncated");
	assert_int_equal(npy_parse_header(&a, "hello, world", 12, err), -1);
	assert_has(err, "not a .npy file");
	assert_int_equal(npy_parse_header(&a, "PK\x03\x04\x14\x00", 6, err), -1);
	assert_has(err, "a zip (a .npz?)");

	len = npy_raw(buf, 4, 0, "{}");
	assert_int_equal(npy_parse_header(&a, buf, len, err), -1);
	assert_has(err, "version 4.0");
	len = npy_raw(buf, 1, 1, "{}");
	assert_int_equal(npy_parse_header(&a, buf, len, err), -1);
	assert_has(err, "version 1.1");

	/* The header itself cut: its length says more than follows. */
	len = npy_raw(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }");
	assert_int_equal(npy_parse_header(&a, buf, len - 20, err), -1);
	assert_has(err, "truncated: the header is");
	/* Version 2.0's 4-byte length, past the file. */
	len = npy_raw(buf, 2, 0, "{}");
	buf[10] = 1; /* 65536 + 2 */
	assert_int_equal(npy_parse_header(&a, buf, len, err), -1);
	assert_has(err, "more than the 10000");
	buf[10] = 0;
	buf[8] = 200;
	assert_int_equal(npy_parse_header(&a, buf, len, err), -1);
	assert_has(err, "the header is 200 bytes, but only 2 follow");
	/* Magic and version, cut before the header's length. */
	assert_int_equal(npy_parse_header(&a, "\x93NUMPY\x01\x00", 8, err), -1);
	assert_has(err, "truncated: 8 bytes");
}

/* --- Files --- */

static void assert_npy_open_fails(const char *path, const char *why)
{
	char err[ERR_LEN] = "";
	struct npy_array a = {.rank = 2};

	assert_int_equal(npy_open(&a, path, err), -1);
	assert_has(err, why);
	testutil_assert_contains(err, path);
	assert_zeroed(&a);
}

static void test_npy_refuses_the_dtypes_and_orders_numpy_writes_but_it_cannot_read(void **state)
{
	(void)state;
	assert_npy_open_fails(data_path("f4_be.npy"), "np.save(path, a.astype('<f4'))");
	assert_npy_open_fails(data_path("fortran.npy"), "np.ascontiguousarray(a)");
	assert_npy_open_fails(data_path("object.npy"), "Python objects (a pickle)");
	assert_npy_open_fails(data_path("structured.npy"), "structured dtype");
	assert_npy_open_fails(data_path("unicode.npy"), "strings");
	assert_npy_open_fails(data_path("complex.npy"), "'<c8' is not supported");
}

static void test_npy_refuses_truncated_data_and_trailing_bytes_naming_both_sizes(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	unsigned char *file = f32_npy(10, 10, &len);
	char want[PATH_MAX + 64];

	assert_int_equal(len, 128 + 40);
	testutil_write_file(tmp_path(fx, "short.npy"), file, len - 1);
	assert_npy_open_fails(fx->path, "truncated: 167 bytes, but the header (128 bytes) and the "
	                                "(10,) '<f4' data it describes (40 bytes) make 168");
	free(file);

	file = f32_npy(8, 10, &len);
	testutil_write_file(tmp_path(fx, "long.npy"), file, len);
	snprintf(want, sizeof(want), "'%s': 8 bytes of trailing data: 168 bytes", fx->path);
	assert_npy_open_fails(fx->path, want);
	free(file);

	/* A header that claims a terabyte over a few bytes is truncated, not
	 * an allocation. */
	file = npy_build("{'descr': '<f4', 'fortran_order': False, 'shape': (9073741824,), }",
	                 "abcdefgh", 8, &len);
	testutil_write_file(tmp_path(fx, "claim.npy"), file, len);
	assert_npy_open_fails(fx->path,
	                      "(9073741824,) '<f4' data it describes (36294967296 bytes)");
	free(file);

	testutil_write_file(tmp_path(fx, "empty.npy"), "", 0);
	assert_npy_open_fails(fx->path, "truncated: 0 bytes");
}

static void test_npy_open_refuses_what_is_not_a_regular_file(void **state)
{
	struct fixture *fx = *state;

	assert_npy_open_fails(fx->dir, "not a regular file (a directory)");
	assert_npy_open_fails("/dev/null", "not a regular file (a character device)");
	assert_npy_open_fails(tmp_path(fx, "missing.npy"), "No such file");
}

static void test_npy_release_accepts_null_and_a_zeroed_array(void **state)
{
	struct npy_array a = {0};

	(void)state;
	npy_release(NULL);
	npy_release(&a);
	assert_zeroed(&a);
}

/* --- .npz archives --- */

static const uint8_t set_y_test[2] = {2, 1};

/* x_train of the fixtures' set: (6, 4, 3) of 0..71. */
static void assert_x_train(const struct npy_array *a)
{
	char shape[NPY_SHAPE_STR_LEN];
	float f[72];

	assert_int_equal(a->dtype, NPY_TYPE_U8);
	assert_string_equal(npy_shape_str(shape, sizeof(shape), a->shape, a->rank), "(6, 4, 3)");
	npy_to_f32(f, a, 0, 72, 1.0f);
	for (int i = 0; i < 72; i++)
		assert_true(f[i] == (float)i);
}

/* The message of the last assert_npz_read_fails, for a closer look. */
static char npz_err[ERR_LEN];

static void assert_npz_read_fails(const char *path, const char *name, const char *why)
{
	char *err = npz_err, want[PATH_MAX + 64];
	struct npz *z = NULL;
	struct npy_array a = {.rank = 1};

	err[0] = '\0';
	if (npz_open(&z, path, err) != 0)
		fail_msg("%s", err);
	assert_int_equal(npz_read(z, name, &a, err), -1);
	assert_has(err, why);
	snprintf(want, sizeof(want), "'%s': member '%s.npy': ", path, name);
	testutil_assert_contains(err, want);
	assert_zeroed(&a);
	npz_close(z);
}

static void test_npz_maps_the_stored_members_np_savez_writes(void **state)
{
	char err[ERR_LEN] = "";
	struct npz *z = NULL;
	struct npy_array a;

	(void)state;
	if (npz_open(&z, data_path("set.npz"), err) != 0)
		fail_msg("%s", err);
	assert_int_equal(npz_count(z), 4);
	assert_true(npz_has(z, "x_train") && npz_has(z, "y_test"));
	assert_false(npz_has(z, "x_train.npy") || npz_has(z, "z"));
	assert_int_equal(npz_read(z, "x_train", &a, err), 0);
	/* Mapped, pointing into the mapping, not copied. */
	assert_non_null(a.map);
	assert_null(a.heap);
	assert_true(a.data >= (const unsigned char *)a.map &&
	            a.data + a.nbytes <= (const unsigned char *)a.map + a.map_len);
	assert_x_train(&a);
	npy_release(&a);
	assert_int_equal(npz_read(z, "y_test", &a, err), 0);
	assert_memory_equal(a.data, set_y_test, 2);
	npy_release(&a);
	npz_close(z);
}

static void test_npz_inflates_the_members_np_savez_compressed_writes(void **state)
{
	char err[ERR_LEN] = "";
	struct npz *z = NULL;
	struct npy_array a;

	(void)state;
	if (npz_open(&z, data_path("set_compressed.npz"), err) != 0)
		fail_msg("%s", err);
	assert_int_equal(npz_read(z, "x_train", &a, err), 0);
	assert_non_null(a.heap);
	assert_null(a.map);
	assert_x_train(&a);
	npy_release(&a);
	npz_close(z);
}

static void test_npz_reads_an_archive_with_zip64_records(void **state)
{
	char err[ERR_LEN] = "";
	struct npz *z = NULL;
	struct npy_array a;

	(void)state;
	if (npz_open(&z, data_path("set_zip64.npz"), err) != 0)
		fail_msg("%s", err);
	assert_int_equal(npz_count(z), 4);
	assert_int_equal(npz_read(z, "x_train", &a, err), 0);
	assert_x_train(&a);
	npy_release(&a);
	assert_int_equal(npz_read(z, "y_test", &a, err), 0);
	assert_memory_equal(a.data, set_y_test, 2);
	npy_release(&a);
	npz_close(z);
	/* Deflated with zip64 fields: minizip 1.1 would misread them. */
	assert_npz_read_fails(data_path("set_zip64_compressed.npz"), "x_train",
	                      "deflated with zip64 sizes or offset");
}

static void test_npz_arrays_outlive_the_archive_handle(void **state)
{
	const char *files[] = {"set.npz", "set_compressed.npz"};
	char err[ERR_LEN] = "";

	(void)state;
	for (int i = 0; i < 2; i++) {
		struct npz *z = NULL;
		struct npy_array a;

		assert_int_equal(npz_open(&z, data_path(files[i]), err), 0);
		assert_int_equal(npz_read(z, "x_train", &a, err), 0);
		npz_close(z);
		assert_x_train(&a);
		npy_release(&a);
	}
	npz_close(NULL);
}

static void test_npz_refuses_a_stored_member_with_a_damaged_crc(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	unsigned char *npy = f32_npy(8, 8, &len);
	struct zmember m = {"x.npy", npy, len, 0, 0x10, 0};

	zip_write(tmp_path(fx, "crc.npz"), &m, 1);
	assert_npz_read_fails(fx->path, "x", "crc-32 mismatch: the data is damaged");
	free(npy);
}

static void test_npz_refuses_a_deflated_member_with_a_bad_crc(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	unsigned char *npy = f32_npy(8, 8, &len);
	struct zmember m = {"x.npy", npy, len, Z_DEFLATED, 0x10, 0};

	zip_write(tmp_path(fx, "crc.npz"), &m, 1);
	assert_npz_read_fails(fx->path, "x", "crc-32 mismatch: the data is damaged");
	free(npy);
}

static void test_npz_refuses_a_member_whose_header_claims_more_than_it_holds(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	unsigned char *npy = f32_npy(10, 8, &len);
	struct zmember m[2] = {{"stored.npy", npy, len, 0, 0, 0},
	                       {"deflated.npy", npy, len, Z_DEFLATED, 0, 0}};

	zip_write(tmp_path(fx, "claim.npz"), m, 2);
	assert_npz_read_fails(fx->path, "stored",
	                      "truncated: 160 bytes, but the header (128 "
	                      "bytes) and the (10,) '<f4' data it describes "
	                      "(40 bytes) make 168");
	assert_npz_read_fails(fx->path, "deflated", "truncated: 160 bytes");
	free(npy);
}

static void test_npz_refuses_a_member_holding_more_than_its_header_says(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	unsigned char *npy = f32_npy(6, 8, &len);
	struct zmember m[2] = {{"stored.npy", npy, len, 0, 0, 0},
	                       {"deflated.npy", npy, len, Z_DEFLATED, 0, 0}};

	zip_write(tmp_path(fx, "long.npz"), m, 2);
	assert_npz_read_fails(fx->path, "stored", "8 bytes of trailing data");
	assert_npz_read_fails(fx->path, "deflated", "8 bytes of trailing data");
	free(npy);
}

/* The directory says one size, the deflate stream gives another: fewer
 * bytes than said is truncated; more is refused by the CRC-32 of what
 * minizip reads, which stops at the declared size (or, with a minizip
 * that reads on, by the look past it). */
static void test_npz_refuses_a_deflated_member_that_inflates_to_another_size(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	size_t len8;
	unsigned char *npy = f32_npy(10, 8, &len), *npy8 = f32_npy(8, 10, &len8);
	struct zmember m[2] = {{"short.npy", npy, len, Z_DEFLATED, 0, 168},
	                       {"long.npy", npy8, len8, Z_DEFLATED, 0, 160}};

	zip_write(tmp_path(fx, "size.npz"), m, 2);
	assert_npz_read_fails(fx->path, "short",
	                      "truncated: inflates to 160 bytes, the directory "
	                      "says 168");
	assert_npz_read_fails(fx->path, "long", "'");
	testutil_assert_matches(
	    npz_err, "crc-32 mismatch|inflates to more than the 160 bytes the directory says");
	free(npy);
	free(npy8);
}

/* Sets a 2-byte field of the zip's first member, at local_at in its local
 * header and central_at in its central record (zip.h writes only what it
 * has: these are for what it has not). */
static void set_first_field(const char *path, size_t local_at, size_t central_at, unsigned v)
{
	size_t len;
	unsigned char *zip = testutil_read_file(path, &len);
	unsigned char *central = memmem(zip, len, "PK\x01\x02", 4);

	assert_memory_equal(zip, "PK\x03\x04", 4);
	assert_non_null(central);
	zip[local_at] = central[central_at] = (unsigned char)v;
	zip[local_at + 1] = central[central_at + 1] = (unsigned char)(v >> 8);
	testutil_write_file(path, zip, len);
	free(zip);
}

static void test_npz_refuses_compression_methods_and_encryption_numpy_does_not_write(void **state)
{
	static const struct {
		unsigned method;
		const char *why;
	} cases[] = {
	    {12, "compression method 12 (bzip2) is not supported: np.savez stores (0) and "
	         "np.savez_compressed deflates (8)"},
	    {95, "compression method 95 (xz)"},
	    {1, "compression method 1 (unknown)"},
	};
	struct fixture *fx = *state;
	size_t len;
	unsigned char *npy = f32_npy(8, 8, &len);
	struct zmember m = {"x.npy", npy, len, 0, 0, 0};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		zip_write(tmp_path(fx, "method.npz"), &m, 1);
		set_first_field(fx->path, 8, 10, cases[i].method);
		assert_npz_read_fails(fx->path, "x", cases[i].why);
	}
	/* The general purpose flags' bit 0: encrypted. */
	zip_write(tmp_path(fx, "encrypted.npz"), &m, 1);
	set_first_field(fx->path, 6, 8, 1);
	assert_npz_read_fails(fx->path, "x", "encrypted");
	free(npy);
}

static void test_npz_refuses_an_empty_member_and_names_a_missing_one(void **state)
{
	struct fixture *fx = *state;
	struct zmember m = {"empty.npy", "", 0, 0, 0, 0};
	char err[ERR_LEN] = "";
	struct npz *z = NULL;
	struct npy_array a;

	zip_write(tmp_path(fx, "empty.npz"), &m, 1);
	assert_npz_read_fails(fx->path, "empty", "truncated: 0 bytes");
	assert_int_equal(npz_open(&z, fx->path, err), 0);
	assert_int_equal(npz_read(z, "x_train", &a, err), -1);
	assert_has(err, "no member 'x_train.npy'");
	testutil_assert_contains(err, fx->path);
	npz_close(z);
}

static void test_npz_open_refuses_what_is_not_a_zip(void **state)
{
	struct fixture *fx = *state;
	char err[ERR_LEN] = "";
	struct npz *z = NULL;
	struct zmember m[2] = {{"a.npy", "x", 1, 0, 0, 0}, {"a.npy", "y", 1, 0, 0, 0}};

	assert_int_equal(npz_open(&z, data_path("f4.npy"), err), -1);
	assert_null(z);
	assert_has(err, "a .npy file (one array), not a .npz");
	testutil_write_file(tmp_path(fx, "junk.npz"), "not a zip at all", 16);
	assert_int_equal(npz_open(&z, fx->path, err), -1);
	assert_has(err, "not a zip file");
	testutil_write_file(tmp_path(fx, "empty.npz"), "", 0);
	assert_int_equal(npz_open(&z, fx->path, err), -1);
	assert_has(err, "empty file");
	assert_int_equal(npz_open(&z, fx->dir, err), -1);
	assert_has(err, "not a regular file");
	/* What np.savez(path) of no arrays writes: the end record alone. */
	testutil_write_file(tmp_path(fx, "nothing.npz"),
	                    "PK\x05\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 22);
	assert_int_equal(npz_open(&z, fx->path, err), -1);
	assert_has(err, "an empty zip, with no arrays");
	zip_write(tmp_path(fx, "twice.npz"), m, 2);
	assert_int_equal(npz_open(&z, fx->path, err), -1);
	assert_has(err, "two members named 'a.npy'");
}

/* --- Training sets --- */

static void assert_the_set(const struct numpy_set *s, int has_test)
{
	char shape[NPY_SHAPE_STR_LEN];
	float f[24];

	assert_x_train(&s->x_train);
	assert_string_equal(npy_shape_str(shape, sizeof(shape), s->y_train.shape, s->y_train.rank),
	                    "(6,)");
	for (uint64_t i = 0; i < 6; i++)
		assert_true(npy_get_f64(&s->y_train, i) == (double)(i % 3));
	assert_int_equal(s->has_test, has_test);
	if (!has_test) {
		assert_zeroed(&s->x_test);
		assert_zeroed(&s->y_test);
		return;
	}
	assert_string_equal(npy_shape_str(shape, sizeof(shape), s->x_test.shape, s->x_test.rank),
	                    "(2, 4, 3)");
	npy_to_f32(f, &s->x_test, 0, 24, 1.0f);
	for (int i = 0; i < 24; i++)
		assert_true(f[i] == (float)(200 + i));
	assert_memory_equal(s->y_test.data, set_y_test, 2);
}

static void test_numpy_set_opens_a_npz_stored_deflated_or_zip64_and_a_folder(void **state)
{
	const char *paths[] = {"set.npz", "set_compressed.npz", "set_zip64.npz", "set_dir"};

	(void)state;
	for (int i = 0; i < 4; i++) {
		char err[ERR_LEN] = "";
		struct numpy_set s;

		if (numpy_set_open(&s, data_path(paths[i]), err) != 0)
			fail_msg("%s", err);
		assert_the_set(&s, 1);
		numpy_set_release(&s);
	}
}

static void test_numpy_set_without_test_arrays_has_no_test_split(void **state)
{
	char err[ERR_LEN] = "";
	struct numpy_set s;

	(void)state;
	assert_int_equal(numpy_set_open(&s, data_path("train_only.npz"), err), 0);
	assert_the_set(&s, 0);
	numpy_set_release(&s);
	numpy_set_release(&s);
	numpy_set_release(NULL);
}

static void assert_set_fails(const char *path, const char *why)
{
	static const struct numpy_set zero;
	char err[ERR_LEN] = "";
	struct numpy_set s = {.has_test = 1};

	assert_int_equal(numpy_set_open(&s, path, err), -1);
	assert_has(err, why);
	testutil_assert_contains(err, path);
	assert_memory_equal(&s, &zero, sizeof(zero));
}

static void test_numpy_set_refuses_x_and_y_of_different_lengths(void **state)
{
	struct fixture *fx = *state;
	size_t xl, yl;
	unsigned char *x = f32_npy(10, 10, &xl), *y = f32_npy(9, 9, &yl);
	struct zmember m[2] = {{"x_train.npy", x, xl, 0, 0, 0}, {"y_train.npy", y, yl, 0, 0, 0}};
	char want[PATH_MAX + 64];

	zip_write(tmp_path(fx, "set.npz"), m, 2);
	snprintf(want, sizeof(want), "'%s': y_train holds 9 entries but x_train 10 examples",
	         fx->path);
	assert_set_fails(fx->path, want);
	free(x);
	free(y);
}

static void test_numpy_set_refuses_x_test_without_y_test_in_both_forms(void **state)
{
	struct fixture *fx = *state;
	size_t len;
	unsigned char *x = f32_npy(4, 4, &len);
	struct zmember m[3] = {{"x_train.npy", x, len, 0, 0, 0},
	                       {"y_train.npy", x, len, 0, 0, 0},
	                       {"y_test.npy", x, len, 0, 0, 0}};

	zip_write(tmp_path(fx, "set.npz"), m, 3);
	assert_set_fails(fx->path, "y_test without x_test");
	testutil_write_file(tmp_path(fx, "x_train.npy"), x, len);
	testutil_write_file(tmp_path(fx, "y_train.npy"), x, len);
	testutil_write_file(tmp_path(fx, "x_test.npy"), x, len);
	assert_set_fails(fx->dir, "x_test.npy without y_test.npy");
	free(x);
}

static void test_numpy_set_refuses_a_set_without_x_train_naming_what_it_holds(void **state)
{
	struct fixture *fx = *state;

	assert_set_fails(data_path("positional.npz"), "no x_train array (it holds arr_0, arr_1)");
	assert_set_fails(fx->dir, "no x_train.npy in the folder");
	assert_set_fails(tmp_path(fx, "nothing-here"), "No such file");
	assert_set_fails(data_path("f4.npy"), "a .npy file (one array), not a .npz");
}

static void test_numpy_set_refuses_test_examples_shaped_unlike_train_ones(void **state)
{
	struct fixture *fx = *state;
	size_t xl, yl, tl;
	unsigned char *x = npy_build("{'descr': '|u1', 'fortran_order': False, 'shape': (3, 2), }",
	                             "abcdef", 6, &xl);
	unsigned char *y = f32_npy(3, 3, &yl);
	unsigned char *t = npy_build(
	    "{'descr': '|u1', 'fortran_order': False, 'shape': (3, 1, 2), }", "abcdef", 6, &tl);
	struct zmember m[4] = {{"x_train.npy", x, xl, 0, 0, 0},
	                       {"y_train.npy", y, yl, 0, 0, 0},
	                       {"x_test.npy", t, tl, 0, 0, 0},
	                       {"y_test.npy", y, yl, 0, 0, 0}};

	zip_write(tmp_path(fx, "set.npz"), m, 4);
	assert_set_fails(fx->path, "x_test examples are (1, 2) but x_train's are (2,)");
	free(x);
	free(y);
	free(t);
}

static void test_numpy_set_refuses_a_scalar_x_and_an_empty_one(void **state)
{
	struct fixture *fx = *state;
	size_t xl, yl, el;
	unsigned char *x = npy_build("{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
	                             "\0\0\0\0", 4, &xl);
	unsigned char *e =
	    npy_build("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", "", 0, &el);
	unsigned char *y = f32_npy(0, 0, &yl);

	testutil_write_file(tmp_path(fx, "x_train.npy"), x, xl);
	testutil_write_file(tmp_path(fx, "y_train.npy"), y, yl);
	assert_set_fails(fx->dir, "x_train is a scalar, not an array of examples");
	testutil_write_file(tmp_path(fx, "x_train.npy"), e, el);
	assert_set_fails(fx->dir, "x_train holds no examples");
	free(x);
	free(e);
	free(y);
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, testutil_fixture_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_npy_converts_every_dtype_as_numpy_astype_float32_does),
	    cmocka_unit_test(test_npy_scale_multiplies_after_the_conversion_as_numpy_does),
	    cmocka_unit_test(test_npy_widens_all_65536_float16_values_exactly_from_unaligned_data),
	    cmocka_unit_test(test_npy_reads_elements_as_doubles_and_as_whole_numbers),
	    cmocka_unit_test(test_npy_reads_rank_3_scalar_and_format_versions_2_and_3),
	    cmocka_unit_test(test_npy_header_takes_what_python_literals_allow),
	    cmocka_unit_test(test_npy_header_refuses_what_numpy_refuses_saying_why),
	    cmocka_unit_test(test_npy_refuses_what_is_no_npy_header_or_is_cut_short),
	    cmocka_unit_test(
	        test_npy_refuses_the_dtypes_and_orders_numpy_writes_but_it_cannot_read),
	    TEST(test_npy_refuses_truncated_data_and_trailing_bytes_naming_both_sizes),
	    TEST(test_npy_open_refuses_what_is_not_a_regular_file),
	    cmocka_unit_test(test_npy_release_accepts_null_and_a_zeroed_array),
	    cmocka_unit_test(test_npz_maps_the_stored_members_np_savez_writes),
	    cmocka_unit_test(test_npz_inflates_the_members_np_savez_compressed_writes),
	    cmocka_unit_test(test_npz_reads_an_archive_with_zip64_records),
	    cmocka_unit_test(test_npz_arrays_outlive_the_archive_handle),
	    TEST(test_npz_refuses_a_stored_member_with_a_damaged_crc),
	    TEST(test_npz_refuses_a_deflated_member_with_a_bad_crc),
	    TEST(test_npz_refuses_a_member_whose_header_claims_more_than_it_holds),
	    TEST(test_npz_refuses_a_member_holding_more_than_its_header_says),
	    TEST(test_npz_refuses_a_deflated_member_that_inflates_to_another_size),
	    TEST(test_npz_refuses_compression_methods_and_encryption_numpy_does_not_write),
	    TEST(test_npz_refuses_an_empty_member_and_names_a_missing_one),
	    TEST(test_npz_open_refuses_what_is_not_a_zip),
	    cmocka_unit_test(test_numpy_set_opens_a_npz_stored_deflated_or_zip64_and_a_folder),
	    cmocka_unit_test(test_numpy_set_without_test_arrays_has_no_test_split),
	    TEST(test_numpy_set_refuses_x_and_y_of_different_lengths),
	    TEST(test_numpy_set_refuses_x_test_without_y_test_in_both_forms),
	    TEST(test_numpy_set_refuses_a_set_without_x_train_naming_what_it_holds),
	    TEST(test_numpy_set_refuses_test_examples_shaped_unlike_train_ones),
	    TEST(test_numpy_set_refuses_a_scalar_x_and_an_empty_one),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
