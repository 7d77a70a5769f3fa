/* fuzz_idx.c - a libFuzzer target for the IDX readers (idx.h):
 * idx_load_images and idx_load_labels, over raw and gzip files, as the
 * worker reads the data folder a user points it at.
 *
 * Input: byte 0 picks the mode, the rest is the file.
 *   bit 0  read labels (else images)
 *   bit 1  gzip the rest here first, so that mutations of the IDX content
 *          also reach the readers through a sound gzip stream (the rest
 *          may itself be gzip: content is sniffed)
 *   bit 2  store the file as "<name>.gz" and load "<name>": the fallback
 *          to the compressed name
 * Checked beyond "no crash": a refusal says why, naming the file, and
 * leaves the struct zeroed; an accepted file has dims in range, as many
 * bytes of data as they describe (for a raw file: exactly the file's
 * length after the header), all readable.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "err.h"
#include "fuzz/harness.h"
#include "idx.h"

#define MODE_LABELS   1
#define MODE_GZIP     2
#define MODE_FALLBACK 4

/* data gzip-compressed, in a malloc'd buffer of *len bytes. */
static unsigned char *gzip(const uint8_t *data, size_t size, size_t *len)
{
	z_stream z = {0};
	unsigned char *out;
	uLong cap;

	/* windowBits 15 + 16: a gzip header and trailer around deflate. */
	if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		die("deflateInit2 failed");
	cap = deflateBound(&z, (uLong)size) + 32;
	out = xmalloc(cap);
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)size;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		die("deflate did not finish");
	*len = z.total_out;
	deflateEnd(&z);
	return out;
}

/* Whether the file as stored is raw IDX, which gzread passes through. */
static int is_raw(const unsigned char *file, size_t len)
{
	return len < 2 || file[0] != 0x1f || file[1] != 0x8b;
}

/* Checks the outcome of a load of path, whose stored bytes are file. */
static void check_outcome(int rc, const char *err, const char *path, uint32_t count, uint32_t side2,
                          const uint8_t *bytes, size_t header, const unsigned char *file,
                          size_t len)
{
	size_t n = (size_t)count * side2;
	volatile uint8_t last;

	if (rc < 0) {
		FUZZ_CHECK(memchr(err, '\0', ERR_LEN) != NULL);
		FUZZ_CHECK(err[0] == '\'' && strncmp(err + 1, path, strlen(path)) == 0);
		FUZZ_CHECK(count == 0 && bytes == NULL);
		return;
	}
	FUZZ_CHECK(rc == 0 && bytes != NULL);
	FUZZ_CHECK(count >= 1 && count <= IDX_MAX_COUNT);
	FUZZ_CHECK(side2 >= 1 && side2 <= IDX_MAX_SIDE * IDX_MAX_SIDE);
	if (is_raw(file, len))
		FUZZ_CHECK(len == header + n);
	last = bytes[n - 1]; /* the sanitizer checks that it is there */
	(void)last;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[ERR_LEN] = "";
	unsigned char *zipped = NULL;
	const unsigned char *file;
	char path[4096];
	size_t len;
	int mode, rc;

	if (size < 1)
		return 0;
	mode = data[0];
	file = data + 1;
	len = size - 1;
	if (mode & MODE_GZIP) {
		zipped = gzip(file, len, &len);
		file = zipped;
	}
	/* The name loaded is always "idx": only one of the two may exist. */
	unlink(fuzz_path(mode & MODE_FALLBACK ? "idx" : "idx.gz"));
	fuzz_file(mode & MODE_FALLBACK ? "idx.gz" : "idx", file, len);
	snprintf(path, sizeof(path), "%s", fuzz_path("idx"));

	if (mode & MODE_LABELS) {
		struct idx_labels lab;

		rc = idx_load_labels(path, &lab, err);
		check_outcome(rc, err, path, lab.count, 1, lab.labels, 8, file, len);
		idx_labels_release(&lab);
	} else {
		struct idx_images img;

		rc = idx_load_images(path, &img, err);
		check_outcome(rc, err, path, img.count, img.rows * img.cols, img.pixels, 16, file,
		              len);
		if (rc == 0)
			FUZZ_CHECK(img.rows >= 1 && img.rows <= IDX_MAX_SIDE && img.cols >= 1 &&
			           img.cols <= IDX_MAX_SIDE);
		idx_images_release(&img);
	}
	free(zipped);
	return 0;
}
