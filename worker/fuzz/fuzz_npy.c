/* fuzz_npy.c - a libFuzzer target for the NumPy readers (npy.h, npz.h,
 * numpy_set.h), as the worker reads the file or folder --data names.
 *
 * Input: byte 0 picks the mode (its low two bits), the rest is the file.
 *   0  a .npy file: npy_open
 *   1  a .npz file: npz_open, npz_read of its first FUZZ_MEMBERS members,
 *      numpy_set_open
 *   2  the .npy of both x_train and y_train in a zip made here, stored
 *   3  the same, deflated
 * Modes 2 and 3 let mutations of a .npy reach the mapped and the inflated
 * paths through a sound zip, whose CRCs are right.
 * Checked beyond "no crash": a refusal says why, naming the file, and
 * leaves the array zeroed; whatever path the bytes take (a file, a stored
 * member, a deflated one), they are accepted or refused as npy_parse takes
 * them from memory; an accepted array's header and data are exactly its
 * bytes, its count is its shape's product, and every element converts
 * (the sanitizers check each read).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>
#include <zlib.h>

#include "err.h"
#include "fuzz/harness.h"
#include "npy.h"
#include "npz.h"
#include "numpy_set.h"

#define MODE_NPY           0
#define MODE_NPZ           1
#define MODE_WRAP_STORED   2
#define MODE_WRAP_DEFLATED 3
#define FUZZ_MEMBERS       16

/* A refusal: -1, a message naming path first, the array zeroed. */
static void check_refusal(const char *err, const char *path, const struct npy_array *a)
{
	FUZZ_CHECK(memchr(err, '\0', ERR_LEN) != NULL);
	FUZZ_CHECK(err[0] == '\'' && strncmp(err + 1, path, strlen(path)) == 0);
	FUZZ_CHECK(a->rank == 0 && a->count == 0 && a->nbytes == 0 && a->header_bytes == 0);
	FUZZ_CHECK(a->data == NULL && a->map == NULL && a->heap == NULL);
}

/* An accepted array of len bytes in all: consistent, and every element
 * readable and convertible. */
static void check_array(const struct npy_array *a, uint64_t len)
{
	uint64_t count = 1;
	float f[256];

	FUZZ_CHECK(a->rank >= 0 && a->rank <= NPY_MAX_RANK);
	for (int i = 0; i < a->rank; i++)
		count *= a->shape[i];
	FUZZ_CHECK(count == a->count && a->nbytes == count * a->itemsize);
	FUZZ_CHECK(a->header_bytes + a->nbytes == len);
	FUZZ_CHECK(a->data != NULL || a->nbytes == 0);
	for (uint64_t at = 0; at < a->count; at += 256) {
		size_t n = a->count - at < 256 ? (size_t)(a->count - at) : 256;

		npy_to_f32(f, a, at, n, 0.5f);
	}
	if (a->count > 0) {
		int64_t v;

		(void)npy_get_f64(a, a->count - 1);
		(void)npy_get_i64(a, 0, &v);
	}
}

/* How npy_parse takes the bytes from memory: what every path must agree
 * with. */
static int parses(const uint8_t *data, size_t size)
{
	char err[ERR_LEN];
	struct npy_array a;
	int rc = npy_parse(&a, size > 0 ? data : (const uint8_t *)"", size, err);

	if (rc == 0)
		check_array(&a, size);
	npy_release(&a);
	return rc;
}

static void fuzz_npy_file(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file("x.npy", data, size);
	char err[ERR_LEN] = "";
	struct npy_array a;
	int rc = npy_open(&a, path, err);

	if (rc == 0)
		check_array(&a, size);
	else
		check_refusal(err, path, &a);
	FUZZ_CHECK(rc == parses(data, size));
	npy_release(&a);
}

/* Every member through npz_read, then the set, from a zip at path. */
static void fuzz_npz_file(const char *path)
{
	char err[ERR_LEN] = "";
	struct numpy_set s;
	struct npz *z = NULL;

	if (npz_open(&z, path, err) != 0) {
		FUZZ_CHECK(z == NULL && err[0] == '\'');
		return;
	}
	for (size_t i = 0; i < npz_count(z) && i < FUZZ_MEMBERS; i++) {
		struct npy_array a;

		if (npz_read(z, npz_name(z, i), &a, err) == 0)
			FUZZ_CHECK(a.count == 0 || a.data != NULL);
		else
			check_refusal(err, path, &a);
		npy_release(&a);
	}
	npz_close(z);
	if (numpy_set_open(&s, path, err) == 0) {
		FUZZ_CHECK(s.x_train.rank >= 1 && s.y_train.rank >= 1);
		FUZZ_CHECK(s.x_train.shape[0] == s.y_train.shape[0]);
		FUZZ_CHECK(!s.has_test || s.x_test.rank == s.x_train.rank);
		numpy_set_release(&s);
	} else {
		FUZZ_CHECK(err[0] == '\'');
	}
}

/* A zip of the bytes as x_train.npy and y_train.npy, stored or deflated. */
static const char *wrap(const uint8_t *data, size_t size, int method)
{
	static const char *const names[2] = {"x_train.npy", "y_train.npy"};
	char path[4096];
	zipFile zf;

	snprintf(path, sizeof(path), "%s", fuzz_path("wrap.npz"));
	zf = zipOpen64(path, APPEND_STATUS_CREATE);
	if (zf == NULL)
		die("zipOpen64 '%s' failed", path);
	for (int i = 0; i < 2; i++) {
		zip_fileinfo zi = {0};

		if (zipOpenNewFileInZip64(zf, names[i], &zi, NULL, 0, NULL, 0, NULL, method,
		                          Z_BEST_SPEED, 0) != ZIP_OK ||
		    zipWriteInFileInZip(zf, data, (unsigned)size) != ZIP_OK ||
		    zipCloseFileInZip(zf) != ZIP_OK)
			die("writing '%s' failed", path);
	}
	if (zipClose(zf, NULL) != ZIP_OK)
		die("closing '%s' failed", path);
	return fuzz_path("wrap.npz");
}

static void fuzz_wrapped(const uint8_t *data, size_t size, int method)
{
	const char *path = wrap(data, size, method);
	char err[ERR_LEN] = "", name[4096];
	struct npz *z = NULL;
	struct npy_array a;
	int rc;

	snprintf(name, sizeof(name), "%s", path);
	FUZZ_CHECK(npz_open(&z, name, err) == 0);
	FUZZ_CHECK(npz_count(z) == 2 && npz_has(z, "x_train") && npz_has(z, "y_train"));
	rc = npz_read(z, "x_train", &a, err);
	if (rc == 0) {
		check_array(&a, size);
		FUZZ_CHECK(method == 0 ? a.map != NULL : a.heap != NULL);
	} else {
		check_refusal(err, name, &a);
	}
	FUZZ_CHECK(rc == parses(data, size));
	npy_release(&a);
	npz_close(z);
	fuzz_npz_file(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] & 3) {
	case MODE_NPY:
		fuzz_npy_file(data + 1, size - 1);
		break;
	case MODE_NPZ:
		fuzz_npz_file(fuzz_file("x.npz", data + 1, size - 1));
		break;
	case MODE_WRAP_STORED:
		fuzz_wrapped(data + 1, size - 1, 0);
		break;
	case MODE_WRAP_DEFLATED:
		fuzz_wrapped(data + 1, size - 1, Z_DEFLATED);
		break;
	}
	return 0;
}
