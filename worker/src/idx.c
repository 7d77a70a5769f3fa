/* idx.c - IDX files (the MNIST format), raw or gzip-compressed.
 *
 * Everything goes through zlib's gzread, which passes raw files through
 * unchanged, so one code path reads both forms. The header is never trusted:
 * the data buffer grows as bytes actually arrive (up to the header's capped
 * claim), so a tiny file claiming terabytes fails as truncated instead of
 * asking malloc for the claim.
 */
#include "idx.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "err.h"

#define IDX_GZ_BUFFER    (256u * 1024u) /* zlib's input and output buffers */
#define IDX_READ_CHUNK   (16u << 20)    /* bytes per gzread call; must fit an int */
#define IDX_FIRST_ALLOC  (4u << 20)     /* first data allocation; doubled from there */
#define IDX_TRAILING_CAP (1u << 20)     /* stop counting trailing bytes here */
#define IDX_TYPE_UBYTE   0x08u
#define IDX_MAX_DIMS     3

/* What one kind of file must look like. */
struct idx_spec {
	const char *kind; /* for messages: "idx3 ubyte images" */
	const char *data; /* for messages: "image data" */
	unsigned ndims;
	const char *dim_name[IDX_MAX_DIMS];
	uint32_t dim_max[IDX_MAX_DIMS];
};

static const struct idx_spec images_spec = {
    .kind = "idx3 ubyte images",
    .data = "image data",
    .ndims = 3,
    .dim_name = {"image count", "rows", "cols"},
    .dim_max = {IDX_MAX_COUNT, IDX_MAX_SIDE, IDX_MAX_SIDE},
};

static const struct idx_spec labels_spec = {
    .kind = "idx1 ubyte labels",
    .data = "label data",
    .ndims = 1,
    .dim_name = {"label count"},
    .dim_max = {IDX_MAX_COUNT},
};

/* An open file; messages name it as path + suffix. */
struct idx_reader {
	gzFile gz;
	const char *path;
	const char *suffix; /* "" or ".gz" when the bare name did not exist */
};

/* Opens path, or path + ".gz" if path does not exist. */
static int reader_open(struct idx_reader *r, const char *path, char *err)
{
	char gzpath[PATH_MAX];
	int fd = -1;

	r->gz = NULL;
	r->path = path;
	r->suffix = "";
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		int n = snprintf(gzpath, sizeof(gzpath), "%s.gz", path);

		if (n < 0 || (size_t)n >= sizeof(gzpath))
			return err_set(err, "'%s': %s", path, strerror(ENOENT));
		fd = open(gzpath, O_RDONLY | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			return err_set(err, "'%s' (or '.gz'): %s", path, strerror(ENOENT));
		r->suffix = ".gz";
	}
	if (fd < 0)
		return err_set(err, "'%s%s': %s", path, r->suffix, strerror(errno));
	r->gz = gzdopen(fd, "rb");
	if (r->gz == NULL) {
		close(fd);
		return err_set(err, "'%s%s': gzdopen failed", path, r->suffix);
	}
	if (gzbuffer(r->gz, IDX_GZ_BUFFER) != 0) {
		gzclose(r->gz);
		r->gz = NULL;
		return err_set(err, "'%s%s': gzbuffer failed", path, r->suffix);
	}
	return 0;
}

static void reader_close(struct idx_reader *r)
{
	if (r->gz != NULL)
		gzclose(r->gz);
	r->gz = NULL;
}

/* Reports the error zlib recorded after gzread returned -1. */
static int reader_error(const struct idx_reader *r, char *err)
{
	int errnum = Z_OK;
	const char *msg = gzerror(r->gz, &errnum);
	const char *sep = strstr(msg, ">: ");

	/* zlib prefixes the message with its own name for the file, "<fd:3>". */
	if (strncmp(msg, "<fd:", 4) == 0 && sep != NULL)
		msg = sep + 3;
	if (errnum == Z_DATA_ERROR)
		return err_set(err, "'%s%s': corrupt gzip stream: %s", r->path, r->suffix, msg);
	return err_set(err, "'%s%s': read: %s", r->path, r->suffix, msg);
}

/* True if the input ended inside a gzip member rather than at a clean end. */
static int reader_cut_short(const struct idx_reader *r)
{
	int errnum = Z_OK;

	gzerror(r->gz, &errnum);
	return errnum == Z_BUF_ERROR;
}

/* Reads up to n bytes into buf, stopping early only at the end of the input;
 * *got says how many arrived. Returns -1 if the input is unreadable or corrupt. */
static int reader_read(struct idx_reader *r, uint8_t *buf, size_t n, size_t *got, char *err)
{
	*got = 0;
	while (*got < n) {
		size_t want = n - *got < IDX_READ_CHUNK ? n - *got : IDX_READ_CHUNK;
		int rc = gzread(r->gz, buf + *got, (unsigned)want);

		if (rc < 0)
			return reader_error(r, err);
		if (rc == 0)
			break;
		*got += (size_t)rc;
	}
	return 0;
}

static int reader_truncated(const struct idx_reader *r, size_t got, size_t need, const char *what,
                            char *err)
{
	return err_set(err, "'%s%s': truncated%s: read %zu of %zu bytes of %s", r->path, r->suffix,
	               reader_cut_short(r) ? " gzip stream" : "", got, need, what);
}

/* Reads exactly need bytes of data into a new buffer that grows as the bytes
 * arrive, so memory follows the file's real length, not the header's claim. */
static int read_data(struct idx_reader *r, size_t need, const char *what, uint8_t **out, char *err)
{
	uint8_t *buf = NULL;
	size_t cap = 0, have = 0;
	int rc = -1;

	*out = NULL;
	while (have < need) {
		size_t got = 0;

		if (have == cap) {
			size_t ncap = cap == 0 ? IDX_FIRST_ALLOC : cap * 2;
			uint8_t *nbuf = NULL;

			if (ncap > need || ncap < cap)
				ncap = need;
			nbuf = realloc(buf, ncap);
			if (nbuf == NULL) {
				err_set(err, "'%s%s': out of memory for %zu bytes of %s", r->path,
				        r->suffix, ncap, what);
				goto out;
			}
			buf = nbuf;
			cap = ncap;
		}
		if (reader_read(r, buf + have, cap - have, &got, err) != 0)
			goto out;
		have += got;
		if (have < cap) {
			reader_truncated(r, have, need, what, err);
			goto out;
		}
	}
	*out = buf;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	return rc;
}

/* After the data, the file must end, cleanly: no extra bytes, and for gzip a
 * complete trailer (zlib checks its CRC and length on the way). */
static int expect_end(struct idx_reader *r, size_t need, const char *what, char *err)
{
	uint8_t scratch[16384];
	size_t extra = 0;

	while (extra <= IDX_TRAILING_CAP) {
		int rc = gzread(r->gz, scratch, sizeof(scratch));

		if (rc < 0)
			return reader_error(r, err);
		if (rc == 0)
			break;
		extra += (size_t)rc;
	}
	if (extra > 0)
		return err_set(err, "'%s%s': %s%zu bytes of trailing data after %zu bytes of %s",
		               r->path, r->suffix, extra > IDX_TRAILING_CAP ? "at least " : "",
		               extra, need, what);
	if (reader_cut_short(r))
		return err_set(err, "'%s%s': truncated gzip stream: trailer missing after %s",
		               r->path, r->suffix, what);
	return 0;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Reads and checks the header; fills dims (spec->ndims of them) and *size,
 * the number of data bytes they describe. */
static int read_header(struct idx_reader *r, const struct idx_spec *spec, uint32_t *dims,
                       size_t *size, char *err)
{
	uint8_t hdr[4 + 4 * IDX_MAX_DIMS];
	size_t hdr_len = 4 + 4 * (size_t)spec->ndims;
	uint32_t expect = IDX_TYPE_UBYTE << 8 | spec->ndims;
	size_t got = 0, got_dims = 0;

	if (reader_read(r, hdr, 4, &got, err) != 0)
		return -1;
	if (got < 4)
		return reader_truncated(r, got, hdr_len, "header", err);
	if (be32(hdr) != expect) {
		char why[64];

		if (hdr[0] != 0 || hdr[1] != 0)
			snprintf(why, sizeof(why), "not an idx file");
		else if (hdr[2] != IDX_TYPE_UBYTE)
			snprintf(why, sizeof(why), "data type 0x%02x is not unsigned byte (0x08)",
			         hdr[2]);
		else
			snprintf(why, sizeof(why), "%u dimensions, not %u", hdr[3], spec->ndims);
		return err_set(err, "'%s%s': bad magic 0x%08x, expected 0x%08x (%s): %s", r->path,
		               r->suffix, be32(hdr), expect, spec->kind, why);
	}
	if (reader_read(r, hdr + 4, hdr_len - 4, &got_dims, err) != 0)
		return -1;
	if (got_dims < hdr_len - 4)
		return reader_truncated(r, 4 + got_dims, hdr_len, "header", err);

	*size = 1;
	for (unsigned i = 0; i < spec->ndims; i++) {
		dims[i] = be32(hdr + 4 + 4 * (size_t)i);
		if (dims[i] == 0 || dims[i] > spec->dim_max[i])
			return err_set(err, "'%s%s': %s %u out of range 1..%u", r->path, r->suffix,
			               spec->dim_name[i], dims[i], spec->dim_max[i]);
		if (*size > SIZE_MAX / dims[i])
			return err_set(err, "'%s%s': %s too large for this machine", r->path,
			               r->suffix, spec->data);
		*size *= dims[i];
	}
	return 0;
}

static int idx_load(const char *path, const struct idx_spec *spec, uint32_t *dims, uint8_t **data,
                    char *err)
{
	struct idx_reader r = {0};
	size_t size = 0;
	int rc = -1;

	*data = NULL;
	if (reader_open(&r, path, err) != 0)
		return -1;
	if (read_header(&r, spec, dims, &size, err) != 0)
		goto out;
	if (read_data(&r, size, spec->data, data, err) != 0)
		goto out;
	if (expect_end(&r, size, spec->data, err) != 0) {
		free(*data);
		*data = NULL;
		goto out;
	}
	rc = 0;
out:
	reader_close(&r);
	return rc;
}

int idx_load_images(const char *path, struct idx_images *out, char *err)
{
	uint32_t dims[3] = {0};

	memset(out, 0, sizeof(*out));
	if (idx_load(path, &images_spec, dims, &out->pixels, err) != 0)
		return -1;
	out->count = dims[0];
	out->rows = dims[1];
	out->cols = dims[2];
	return 0;
}

int idx_load_labels(const char *path, struct idx_labels *out, char *err)
{
	uint32_t dims[1] = {0};

	memset(out, 0, sizeof(*out));
	if (idx_load(path, &labels_spec, dims, &out->labels, err) != 0)
		return -1;
	out->count = dims[0];
	return 0;
}

void idx_images_release(struct idx_images *img)
{
	if (img == NULL)
		return;
	free(img->pixels);
	memset(img, 0, sizeof(*img));
}

void idx_labels_release(struct idx_labels *lab)
{
	if (lab == NULL)
		return;
	free(lab->labels);
	memset(lab, 0, sizeof(*lab));
}
