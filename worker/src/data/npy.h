/* npy.h - NumPy .npy arrays (NEP 1, numpy/lib/format.py), as np.save writes
 * them, read in place and converted to float32 as they are used.
 *
 * A .npy file is the magic "\x93NUMPY", a version byte pair (1.0, 2.0 or
 * 3.0), the length of the header (2 bytes little-endian in 1.0, 4 in 2.0 and
 * 3.0), the header, then the data in C order. The header is a Python dict
 * literal such as {'descr': '<f4', 'fortran_order': False, 'shape': (60000,
 * 28, 28), }, which numpy reads with ast.literal_eval: keys in any order,
 * either quote, whitespace and newlines between tokens and a trailing comma
 * are all allowed, and so they are here.
 *
 * What is accepted: bool, int8..int64, uint8..uint64, float16, float32 and
 * float64, little-endian (a 1-byte type in any byte order), C order (or
 * Fortran order where the two are the same, rank 0 and 1), rank 0..8. Refused,
 * each with a message that says what to do: big-endian, object (pickled)
 * arrays, structured, string and other dtypes, Fortran order for rank >= 2,
 * a shape whose byte size does not fit 63 bits, and a header of more than
 * NPY_MAX_HEADER_BYTES, the limit numpy itself reads without max_header_size.
 *
 * The data is never copied: an array points at it where it lies, in a
 * mapping of the file or in a buffer (a member of a .npz, npz.h). It may be
 * unaligned (a member of a zip starts anywhere), so every element is read
 * through memcpy, never through a cast pointer. The host must be
 * little-endian (checked at compile time in npy.c).
 */
#ifndef MWJ_NPY_H
#define MWJ_NPY_H

#include <stddef.h>
#include <stdint.h>

#define NPY_MAX_RANK         8     /* numpy's NPY_MAXDIMS before numpy 2 */
#define NPY_MAX_HEADER_BYTES 10000 /* numpy's default max_header_size */
#define NPY_PREFIX_MAX       12    /* magic, version and a 4-byte header length */
#define NPY_SHAPE_STR_LEN    200   /* "(" + 8 dims of 19 digits + ", " each + ")" */

enum npy_dtype {
	NPY_TYPE_BOOL,
	NPY_TYPE_U8,
	NPY_TYPE_I8,
	NPY_TYPE_I16,
	NPY_TYPE_U16,
	NPY_TYPE_I32,
	NPY_TYPE_U32,
	NPY_TYPE_I64,
	NPY_TYPE_U64,
	NPY_TYPE_F16,
	NPY_TYPE_F32,
	NPY_TYPE_F64,
};

struct npy_array {
	enum npy_dtype dtype;
	size_t itemsize;              /* bytes an element: 1, 2, 4 or 8 */
	int rank;                     /* 0 for a scalar */
	uint64_t shape[NPY_MAX_RANK]; /* shape[0..rank) */
	uint64_t count;               /* elements: the product of the shape, 1 for rank 0 */
	uint64_t nbytes;              /* count * itemsize */
	size_t header_bytes;          /* where the data starts in the file or member */
	const unsigned char *data;    /* (shape...) little-endian, C order; may be unaligned */
	/* What keeps data alive, if the array owns it: at most one is set. */
	void *map; /* a mapping of map_len bytes, unmapped on release */
	size_t map_len;
	void *heap; /* a malloc'd buffer, freed on release */
};

/* --- Headers and arrays in memory --- */

/* Parses the magic, version and header at the start of buf, of which len
 * bytes are there (a whole file, or as much of one as has been read: the
 * whole header is there if len >= NPY_PREFIX_MAX + NPY_MAX_HEADER_BYTES or
 * the file is shorter). Fills a's dtype, itemsize, rank, shape, count,
 * nbytes and header_bytes; a holds and points at nothing (data NULL).
 * Returns 0, or -1 with a message in err (ERR_LEN) that names no file (the
 * caller prefixes one), e.g. "big-endian dtype '>f4': save it little-endian,
 * np.save(path, a.astype('<f4'))". */
int npy_parse_header(struct npy_array *a, const void *buf, size_t len, char *err);

/* Whether a file or member of len bytes holds exactly the header and data
 * that a's header describes. Returns 0, or -1 with a message naming both
 * sizes (no file name): "truncated: 1000 bytes, but the header (128 bytes)
 * and the (60000, 28, 28) '<f4' data it describes (188160000 bytes) make
 * 188160128", or the same saying how many bytes trail the data. */
int npy_check_length(const struct npy_array *a, uint64_t len, char *err);

/* npy_parse_header and npy_check_length over len bytes at buf, then points
 * a->data into buf. a borrows buf and owns nothing: buf must outlive it (a
 * caller that owns buf may hand it over by setting a->map or a->heap).
 * Returns 0, or -1 with their message and a zeroed. */
int npy_parse(struct npy_array *a, const void *buf, size_t len, char *err);

/* --- Files --- */

/* Memory-maps the .npy file at path (a regular file only: a device, FIFO
 * or directory is refused without being read) read-only and private, and
 * parses it; its length must be exactly header and data. a owns the
 * mapping (npy_release unmaps it); the file may be closed, moved or
 * unlinked after. Returns 0, or -1 with a message naming path, e.g.
 * "'/d/x_train.npy': truncated: ...", and a zeroed. As for any mapping, a
 * file that another process truncates afterwards faults when the lost
 * pages are read. */
int npy_open(struct npy_array *a, const char *path, char *err);

/* Unmaps or frees what a owns and zeroes it. Accepts NULL and a zeroed or
 * borrowing array. */
void npy_release(struct npy_array *a);

/* --- Elements --- */

/* Writes elements first..first+n of the flat array (C order) to dst as
 * float32, times scale (skipped when scale is 1, so that a float32 array's
 * NaN payloads pass unchanged). Each conversion rounds as numpy's
 * astype(np.float32) does (nearest, ties to even; float64 beyond the
 * float32 range to inf); float16 is widened exactly in software. Note that
 * x * (1/255.f) is not always x / 255.f to the last bit. first + n must not
 * pass a->count: that is a caller's bug and dies. */
void npy_to_f32(float *dst, const struct npy_array *a, uint64_t first, size_t n, float scale);

/* Element i of the flat array as a double: exact for every type but int64
 * and uint64 beyond 2^53, which round to nearest. i < a->count. */
double npy_get_f64(const struct npy_array *a, uint64_t i);

/* Element i as a whole number, for labels: returns 0 with *out set if it
 * is one in int64's range (an integer type, a bool, or a float holding a
 * whole number), -1 if not (a fraction, NaN, inf, a uint64 above
 * INT64_MAX), with *out untouched. i < a->count. */
int npy_get_i64(const struct npy_array *a, uint64_t i, int64_t *out);

/* --- For messages --- */

/* The dtype as numpy names it ("float32") and as a descr ("<f4"). */
const char *npy_dtype_name(enum npy_dtype t);
const char *npy_dtype_descr(enum npy_dtype t);

/* Writes dims[0..rank) as Python writes a tuple: "()", "(5,)", "(2, 3)",
 * into buf (len bytes, NPY_SHAPE_STR_LEN is room for any). Returns buf. */
char *npy_shape_str(char *buf, size_t len, const uint64_t *dims, int rank);

#endif
