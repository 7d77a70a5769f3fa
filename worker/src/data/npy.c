/* npy.c - NumPy .npy arrays: the header, the file, the elements; see npy.h.
 *
 * The header is read with a scanner for exactly the Python literals a .npy
 * dict holds (strings, True/False, a tuple of ints), never with anything
 * more general: it takes what ast.literal_eval takes for those and refuses
 * the rest, always naming the byte where it stopped.
 */
#include "npy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "err.h"
#include "file_read.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "npy.c reads little-endian data in place: a big-endian host needs byte swaps");

#define NPY_MAGIC     "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_STR_MAX   64 /* a key or descr; '<M8[ns]' and the like fit */
#define NPY_SUPPORTED "bool, int8..int64, uint8..uint64, float16, float32 and float64 are"

/* What each accepted dtype is called, by numpy and in a descr. */
static const struct dtype_spec {
	char kind;
	unsigned size;
	const char *name;
	const char *descr;
} dtypes[] = {
    [NPY_TYPE_BOOL] = {'b', 1, "bool", "|b1"},   [NPY_TYPE_U8] = {'u', 1, "uint8", "|u1"},
    [NPY_TYPE_I8] = {'i', 1, "int8", "|i1"},     [NPY_TYPE_I16] = {'i', 2, "int16", "<i2"},
    [NPY_TYPE_U16] = {'u', 2, "uint16", "<u2"},  [NPY_TYPE_I32] = {'i', 4, "int32", "<i4"},
    [NPY_TYPE_U32] = {'u', 4, "uint32", "<u4"},  [NPY_TYPE_I64] = {'i', 8, "int64", "<i8"},
    [NPY_TYPE_U64] = {'u', 8, "uint64", "<u8"},  [NPY_TYPE_F16] = {'f', 2, "float16", "<f2"},
    [NPY_TYPE_F32] = {'f', 4, "float32", "<f4"}, [NPY_TYPE_F64] = {'f', 8, "float64", "<f8"},
};
#define NPY_NTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

const char *npy_dtype_name(enum npy_dtype t)
{
	return (size_t)t < NPY_NTYPES ? dtypes[t].name : "?";
}

const char *npy_dtype_descr(enum npy_dtype t)
{
	return (size_t)t < NPY_NTYPES ? dtypes[t].descr : "?";
}

char *npy_shape_str(char *buf, size_t len, const uint64_t *dims, int rank)
{
	size_t at = 0;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	for (int i = 0; i <= rank && at < len; i++) {
		int k;

		if (i == rank)
			k = snprintf(buf + at, len - at, "%s)", rank == 1 ? "," : "");
		else
			k = snprintf(buf + at, len - at, "%s%" PRIu64, i == 0 ? "(" : ", ",
			             dims[i]);
		if (k < 0)
			break;
		at += (size_t)k;
	}
	if (rank == 0)
		snprintf(buf, len, "()");
	return buf;
}

/* --- The header dict --- */

/* The header text, with where the scan is and where the header begins in
 * the file, so that a message can name the byte. */
struct scan {
	const char *p, *end;
	const char *start; /* the first byte of the header text */
	size_t base;       /* its offset in the file */
	char *err;
};

static int scan_fail(const struct scan *s, const char *what)
{
	return err_set(s->err, "malformed header at byte %zu: %s",
	               s->base + (size_t)(s->p - s->start), what);
}

static int scan_peek(const struct scan *s)
{
	return s->p < s->end ? (unsigned char)*s->p : -1;
}

/* Python's whitespace between tokens inside brackets, newlines included. */
static void scan_space(struct scan *s)
{
	while (s->p < s->end &&
	       (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r' || *s->p == '\f'))
		s->p++;
}

static int scan_expect(struct scan *s, char c, const char *what)
{
	if (scan_peek(s) != (unsigned char)c)
		return scan_fail(s, what);
	s->p++;
	return 0;
}

static int is_word_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* A string literal in either quote, without escapes (no key or dtype
 * string needs one), into out (NPY_STR_MAX bytes). */
static int scan_string(struct scan *s, char *out)
{
	size_t n = 0;
	char q;

	if (scan_peek(s) != '\'' && scan_peek(s) != '"')
		return scan_fail(s, "expected a quoted string");
	q = *s->p++;
	while (s->p < s->end && *s->p != q) {
		unsigned char c = (unsigned char)*s->p;

		if (c == '\\')
			return scan_fail(s, "escapes in strings are not supported");
		if (c < 0x20 || c >= 0x7f)
			return scan_fail(s, "a control or non-ascii byte in a string");
		if (n + 1 >= NPY_STR_MAX)
			return scan_fail(s, "string too long");
		out[n++] = (char)c;
		s->p++;
	}
	if (s->p == s->end)
		return scan_fail(s, "unterminated string");
	s->p++;
	out[n] = '\0';
	return 0;
}

static int scan_bool(struct scan *s, int *out)
{
	size_t left = (size_t)(s->end - s->p);

	if (left >= 4 && memcmp(s->p, "True", 4) == 0 && (left == 4 || !is_word_char(s->p[4]))) {
		s->p += 4;
		*out = 1;
		return 0;
	}
	if (left >= 5 && memcmp(s->p, "False", 5) == 0 && (left == 5 || !is_word_char(s->p[5]))) {
		s->p += 5;
		*out = 0;
		return 0;
	}
	return scan_fail(s, "fortran_order is not True or False");
}

/* A dimension: a Python int literal, non-negative, at most INT64_MAX (numpy's
 * intp). An 'L' after it is what Python 2 wrote and numpy still reads. */
static int scan_dim(struct scan *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *first = s->p;

	if (scan_peek(s) == '-')
		return scan_fail(s, "negative dimension");
	while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
		unsigned d = (unsigned)(*s->p - '0');

		if (s->p > first && *first == '0' && d != 0)
			return scan_fail(s, "leading zero in a dimension");
		if (v > ((uint64_t)INT64_MAX - d) / 10)
			return scan_fail(s, "dimension too large");
		v = v * 10 + d;
		s->p++;
	}
	if (s->p == first)
		return scan_fail(s, "expected a dimension");
	if (scan_peek(s) == 'L')
		s->p++;
	if (scan_peek(s) == '.' || is_word_char(scan_peek(s)))
		return scan_fail(s, "dimension is not a whole number");
	*out = v;
	return 0;
}

/* A tuple of dimensions: "()", "(5,)", "(2, 3)", "(2, 3,)". "(5)" is an
 * int to Python, not a tuple, and numpy refuses it. */
static int scan_shape(struct scan *s, struct npy_array *a)
{
	int commas = 0;

	a->rank = 0;
	if (scan_expect(s, '(', "shape is not a tuple") != 0)
		return -1;
	scan_space(s);
	while (scan_peek(s) != ')') {
		if (a->rank == NPY_MAX_RANK)
			return scan_fail(s, "shape has more than 8 dimensions");
		if (scan_dim(s, &a->shape[a->rank]) != 0)
			return -1;
		a->rank++;
		scan_space(s);
		if (scan_peek(s) == ',') {
			s->p++;
			commas++;
			scan_space(s);
		} else if (scan_peek(s) != ')') {
			return scan_fail(s, "expected ',' or ')' in the shape");
		}
	}
	s->p++;
	if (a->rank == 1 && commas == 0)
		return scan_fail(s, "shape (n) is an int, not a tuple: a 1-d shape is (n,)");
	return 0;
}

enum { KEY_DESCR = 1, KEY_FORTRAN = 2, KEY_SHAPE = 4 };

/* One "key: value" of the dict; *seen collects the keys. */
static int scan_item(struct scan *s, struct npy_array *a, char *descr, int *fortran, int *seen)
{
	char key[NPY_STR_MAX];
	int bit;

	if (scan_string(s, key) != 0)
		return -1;
	if (strcmp(key, "descr") == 0)
		bit = KEY_DESCR;
	else if (strcmp(key, "fortran_order") == 0)
		bit = KEY_FORTRAN;
	else if (strcmp(key, "shape") == 0)
		bit = KEY_SHAPE;
	else
		return err_set(s->err,
		               "header has a key '%s' besides descr, fortran_order and shape", key);
	if (*seen & bit)
		return err_set(s->err, "header has the key '%s' twice", key);
	*seen |= bit;
	scan_space(s);
	if (scan_expect(s, ':', "expected ':' after a key") != 0)
		return -1;
	scan_space(s);
	if (bit == KEY_SHAPE)
		return scan_shape(s, a);
	if (bit == KEY_FORTRAN)
		return scan_bool(s, fortran);
	if (scan_peek(s) == '[' || scan_peek(s) == '(')
		return err_set(s->err, "structured dtype (a record of fields) is not supported: "
		                       "save each field as an array of its own");
	return scan_string(s, descr);
}

static int scan_dict(struct scan *s, struct npy_array *a, char *descr, int *fortran)
{
	int seen = 0;

	scan_space(s);
	if (scan_expect(s, '{', "expected '{'") != 0)
		return -1;
	for (;;) {
		scan_space(s);
		if (scan_peek(s) == '}')
			break;
		if (scan_item(s, a, descr, fortran, &seen) != 0)
			return -1;
		scan_space(s);
		if (scan_peek(s) == ',')
			s->p++;
		else if (scan_peek(s) != '}')
			return scan_fail(s, "expected ',' or '}'");
	}
	s->p++;
	scan_space(s);
	if (s->p != s->end)
		return scan_fail(s, "something after the dict");
	if (!(seen & KEY_DESCR))
		return err_set(s->err, "header lacks 'descr'");
	if (!(seen & KEY_FORTRAN))
		return err_set(s->err, "header lacks 'fortran_order'");
	if (!(seen & KEY_SHAPE))
		return err_set(s->err, "header lacks 'shape'");
	return 0;
}

/* --- From the dict to the array --- */

/* The dtype a descr names, e.g. '<f4', or why it cannot be read. */
static int parse_descr(struct npy_array *a, const char *d, char *err)
{
	char order = d[0], kind = order ? d[1] : '\0';
	unsigned size = 0;

	if (order == '\0' || strchr("<>|=", order) == NULL || kind == '\0')
		return err_set(err, "dtype '%s' is not a numpy descr such as '<f4'", d);
	if (kind == 'O')
		return err_set(err,
		               "dtype '%s' holds Python objects (a pickle), which are not read: "
		               "save a numeric array, e.g. a.astype('<f4')",
		               d);
	if (strchr("USaV", kind) != NULL)
		return err_set(err, "dtype '%s' holds strings or raw bytes, not numbers", d);
	for (const char *p = d + 2; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || size > 1000)
			return err_set(err, "dtype '%s' is not supported: " NPY_SUPPORTED, d);
		size = size * 10 + (unsigned)(*p - '0');
	}
	for (size_t t = 0; t < NPY_NTYPES; t++) {
		if (dtypes[t].kind != kind || dtypes[t].size != size)
			continue;
		if (order == '>' && size > 1)
			return err_set(err,
			               "big-endian dtype '%s': save it little-endian, "
			               "np.save(path, a.astype('<%c%u'))",
			               d, kind, size);
		a->dtype = (enum npy_dtype)t;
		a->itemsize = size;
		return 0;
	}
	return err_set(err, "dtype '%s' is not supported: " NPY_SUPPORTED, d);
}

/* Fortran order is refused, except where its layout is C order's too: no
 * more than one dimension longer than 1, or no elements at all. */
static int check_order(const struct npy_array *a, int fortran, char *err)
{
	int long_dims = 0;

	if (!fortran || a->count == 0)
		return 0;
	for (int i = 0; i < a->rank; i++)
		long_dims += a->shape[i] > 1;
	if (long_dims <= 1)
		return 0;
	return err_set(err, "fortran_order is True: save it in C order, "
	                    "np.save(path, np.ascontiguousarray(a))");
}

/* count and nbytes, refusing a shape whose size does not fit 63 bits even
 * with its zero dimensions left out, so that every partial product (the
 * elements of one example, say) fits as well. */
static int size_shape(struct npy_array *a, char *err)
{
	uint64_t span = a->itemsize;
	char shape[NPY_SHAPE_STR_LEN];

	a->count = 1;
	for (int i = 0; i < a->rank; i++) {
		uint64_t d = a->shape[i];

		if (d != 0 && span > (uint64_t)INT64_MAX / d)
			return err_set(err, "shape %s of '%s' describes more than 2^63 bytes",
			               npy_shape_str(shape, sizeof(shape), a->shape, a->rank),
			               npy_dtype_descr(a->dtype));
		span *= d != 0 ? d : 1;
		a->count *= d;
	}
	a->nbytes = a->count * a->itemsize;
	return 0;
}

/* The magic, the version and the header length: the header's size and
 * where it starts, or why the bytes are no .npy file. */
static int parse_prefix(const unsigned char *b, size_t len, size_t *prefix, size_t *hlen, char *err)
{
	size_t magic = len < NPY_MAGIC_LEN ? len : NPY_MAGIC_LEN;

	if (memcmp(b, NPY_MAGIC, magic) != 0) {
		if (len >= 4 && memcmp(b, "PK\x03\x04", 4) == 0)
			return err_set(err, "not a .npy file but a zip (a .npz?)");
		return err_set(err, "not a .npy file: it does not start with \\x93NUMPY");
	}
	if (len < 8)
		return err_set(err, "truncated: %zu bytes, too few for a .npy header", len);
	if ((b[6] != 1 && b[6] != 2 && b[6] != 3) || b[7] != 0)
		return err_set(err,
		               "unknown .npy format version %u.%u (1.0, 2.0 and 3.0 are known)",
		               b[6], b[7]);
	*prefix = b[6] == 1 ? 10 : 12;
	if (len < *prefix)
		return err_set(err, "truncated: %zu bytes, too few for a .npy header", len);
	*hlen = b[6] == 1
	            ? (size_t)b[8] | (size_t)b[9] << 8
	            : (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
	if (*hlen > NPY_MAX_HEADER_BYTES)
		return err_set(err, "header of %zu bytes, more than the %d numpy reads", *hlen,
		               NPY_MAX_HEADER_BYTES);
	if (*hlen > len - *prefix)
		return err_set(err,
		               "truncated: the header is %zu bytes, but only %zu follow its "
		               "length",
		               *hlen, len - *prefix);
	return 0;
}

int npy_parse_header(struct npy_array *a, const void *buf, size_t len, char *err)
{
	const unsigned char *b = buf;
	char descr[NPY_STR_MAX] = "";
	size_t prefix = 0, hlen = 0;
	int fortran = 0;
	struct scan s;

	memset(a, 0, sizeof(*a));
	if (parse_prefix(b, len, &prefix, &hlen, err) != 0)
		return -1;
	s = (struct scan){.p = (const char *)b + prefix,
	                  .end = (const char *)b + prefix + hlen,
	                  .base = prefix,
	                  .start = (const char *)b + prefix,
	                  .err = err};
	if (scan_dict(&s, a, descr, &fortran) != 0 || parse_descr(a, descr, err) != 0 ||
	    size_shape(a, err) != 0 || check_order(a, fortran, err) != 0) {
		memset(a, 0, sizeof(*a));
		return -1;
	}
	a->header_bytes = prefix + hlen;
	return 0;
}

int npy_check_length(const struct npy_array *a, uint64_t len, char *err)
{
	uint64_t need = a->header_bytes + a->nbytes;
	char shape[NPY_SHAPE_STR_LEN];

	if (len == need)
		return 0;
	npy_shape_str(shape, sizeof(shape), a->shape, a->rank);
	if (len < need)
		return err_set(
		    err,
		    "truncated: %" PRIu64 " bytes, but the header (%zu bytes) and the %s "
		    "'%s' data it describes (%" PRIu64 " bytes) make %" PRIu64,
		    len, a->header_bytes, shape, npy_dtype_descr(a->dtype), a->nbytes, need);
	return err_set(err,
	               "%" PRIu64 " bytes of trailing data: %" PRIu64 " bytes, but the header (%zu "
	               "bytes) and the %s '%s' data it describes (%" PRIu64 " bytes) make %" PRIu64,
	               len - need, len, a->header_bytes, shape, npy_dtype_descr(a->dtype),
	               a->nbytes, need);
}

int npy_parse(struct npy_array *a, const void *buf, size_t len, char *err)
{
	if (npy_parse_header(a, buf, len, err) != 0)
		return -1;
	if (npy_check_length(a, len, err) != 0) {
		memset(a, 0, sizeof(*a));
		return -1;
	}
	a->data = (const unsigned char *)buf + a->header_bytes;
	return 0;
}

/* --- Files --- */

int npy_open(struct npy_array *a, const char *path, char *err)
{
	struct stat st;
	void *map = NULL;
	size_t len;
	int fd;

	memset(a, 0, sizeof(*a));
	fd = file_open_regular(path, &st, err);
	if (fd < 0)
		return -1;
	if ((uintmax_t)st.st_size > SIZE_MAX) {
		close(fd);
		return err_set(err, "'%s': %jd bytes, too large to map", path,
		               (intmax_t)st.st_size);
	}
	len = (size_t)st.st_size;
	/* An empty file cannot be mapped; the parser says what it lacks. */
	if (len > 0) {
		map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			int e = errno;

			close(fd);
			return err_set(err, "mmap '%s': %s", path, strerror(e));
		}
	}
	close(fd);
	if (npy_parse(a, len > 0 ? map : "", len, err) != 0) {
		if (map != NULL)
			munmap(map, len);
		return err_prefix(err, "'%s'", path);
	}
	a->map = map;
	a->map_len = len;
	return 0;
}

void npy_release(struct npy_array *a)
{
	if (a == NULL)
		return;
	if (a->map != NULL)
		munmap(a->map, a->map_len);
	free(a->heap);
	memset(a, 0, sizeof(*a));
}

/* --- Elements --- */

/* IEEE half to single, exactly: every half is a single. Subnormals are
 * their mantissa times 2^-24, which a float holds exactly; inf and NaN
 * keep their payload, as numpy's npy_half_to_float does. */
static float half_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
	uint32_t bits;
	float f;

	if (exp == 0) {
		f = (float)man * 0x1p-24f;
		memcpy(&bits, &f, sizeof(bits));
		bits |= sign;
	} else if (exp == 0x1f) {
		bits = sign | 0x7f800000u | man << 13;
	} else {
		bits = sign | (exp + 112) << 23 | man << 13;
	}
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* Loads element i of type T from possibly unaligned bytes. */
#define NPY_LOAD(T, p, i)                                                                          \
	__extension__({                                                                            \
		T v_;                                                                              \
		memcpy(&v_, (p) + (size_t)(i) * sizeof(T), sizeof(T));                             \
		v_;                                                                                \
	})

/* n elements of type T at p to float, each as (float)(x) rounds. */
#define NPY_CONVERT(T, x)                                                                          \
	do {                                                                                       \
		for (size_t i = 0; i < n; i++) {                                                   \
			T v = NPY_LOAD(T, p, i);                                                   \
			dst[i] = (float)(x);                                                       \
		}                                                                                  \
	} while (0)

void npy_to_f32(float *dst, const struct npy_array *a, uint64_t first, size_t n, float scale)
{
	const unsigned char *p;

	if (n > a->count || first > a->count - n)
		die("npy_to_f32: elements %" PRIu64 "..%" PRIu64 " of an array of %" PRIu64, first,
		    first + n, a->count);
	p = a->data + first * a->itemsize;
	switch (a->dtype) {
	case NPY_TYPE_BOOL:
		NPY_CONVERT(uint8_t, v != 0);
		break;
	case NPY_TYPE_U8:
		NPY_CONVERT(uint8_t, v);
		break;
	case NPY_TYPE_I8:
		NPY_CONVERT(int8_t, v);
		break;
	case NPY_TYPE_I16:
		NPY_CONVERT(int16_t, v);
		break;
	case NPY_TYPE_U16:
		NPY_CONVERT(uint16_t, v);
		break;
	case NPY_TYPE_I32:
		NPY_CONVERT(int32_t, v);
		break;
	case NPY_TYPE_U32:
		NPY_CONVERT(uint32_t, v);
		break;
	case NPY_TYPE_I64:
		NPY_CONVERT(int64_t, v);
		break;
	case NPY_TYPE_U64:
		NPY_CONVERT(uint64_t, v);
		break;
	case NPY_TYPE_F16:
		NPY_CONVERT(uint16_t, half_to_f32(v));
		break;
	case NPY_TYPE_F32:
		NPY_CONVERT(float, v);
		break;
	case NPY_TYPE_F64:
		NPY_CONVERT(double, v);
		break;
	}
	if (scale != 1.0f)
		for (size_t i = 0; i < n; i++)
			dst[i] *= scale;
}

double npy_get_f64(const struct npy_array *a, uint64_t i)
{
	const unsigned char *p = a->data;

	switch (a->dtype) {
	case NPY_TYPE_BOOL:
		return NPY_LOAD(uint8_t, p, i) != 0;
	case NPY_TYPE_U8:
		return NPY_LOAD(uint8_t, p, i);
	case NPY_TYPE_I8:
		return NPY_LOAD(int8_t, p, i);
	case NPY_TYPE_I16:
		return NPY_LOAD(int16_t, p, i);
	case NPY_TYPE_U16:
		return NPY_LOAD(uint16_t, p, i);
	case NPY_TYPE_I32:
		return NPY_LOAD(int32_t, p, i);
	case NPY_TYPE_U32:
		return NPY_LOAD(uint32_t, p, i);
	case NPY_TYPE_I64:
		return (double)NPY_LOAD(int64_t, p, i);
	case NPY_TYPE_U64:
		return (double)NPY_LOAD(uint64_t, p, i);
	case NPY_TYPE_F16:
		return half_to_f32(NPY_LOAD(uint16_t, p, i));
	case NPY_TYPE_F32:
		return NPY_LOAD(float, p, i);
	case NPY_TYPE_F64:
		return NPY_LOAD(double, p, i);
	}
	return 0;
}

int npy_get_i64(const struct npy_array *a, uint64_t i, int64_t *out)
{
	double d;

	switch (a->dtype) {
	case NPY_TYPE_I64:
		*out = NPY_LOAD(int64_t, a->data, i);
		return 0;
	case NPY_TYPE_U64: {
		uint64_t u = NPY_LOAD(uint64_t, a->data, i);

		if (u > (uint64_t)INT64_MAX)
			return -1;
		*out = (int64_t)u;
		return 0;
	}
	case NPY_TYPE_F16:
	case NPY_TYPE_F32:
	case NPY_TYPE_F64:
		d = npy_get_f64(a, i);
		/* The range test is false for NaN too. */
		if (!(d >= -0x1p63 && d < 0x1p63) || (double)(int64_t)d != d)
			return -1;
		*out = (int64_t)d;
		return 0;
	default:
		/* The narrower integers and bool: a double holds them exactly. */
		*out = (int64_t)npy_get_f64(a, i);
		return 0;
	}
}
