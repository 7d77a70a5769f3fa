/* idx.c - IDX files (the MNIST format), raw or gzip-compressed.
 *
 * Everything goes through gzsource.h, which passes raw files through
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

#include "err.h"
#include "gzsource.h"

#define IDX_FIRST_ALLOC  (4u << 20) /* first data allocation; doubled from there */
#define IDX_TRAILING_CAP (1u << 20) /* stop counting trailing bytes here */
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

/* An open file: its content, and its name for messages, path + suffix. */
struct idx_reader {
	struct gzsource *src;
	char name[PATH_MAX + 8];
};

/* Opens path, or path + ".gz" if path does not exist. O_NONBLOCK: a FIFO
 * in its place fails to read instead of hanging. */
static struct idx_reader *reader_open(const char *path, char *err)
{
	struct idx_reader *r = NULL;
	const char *suffix = "";
	char gzpath[PATH_MAX];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0 && errno == ENOENT) {
		int n = snprintf(gzpath, sizeof(gzpath), "%s.gz", path);

		if (n < 0 || (size_t)n >= sizeof(gzpath)) {
			err_set(err, "'%s': %s", path, strerror(ENOENT));
			return NULL;
		}
		fd = open(gzpath, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0 && errno == ENOENT) {
			err_set(err, "'%s' (or '.gz'): %s", path, strerror(ENOENT));
			return NULL;
		}
		suffix = ".gz";
	}
	if (fd < 0) {
		err_set(err, "'%s%s': %s", path, suffix, strerror(errno));
		return NULL;
	}
	r = xcalloc(1, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s%s", path, suffix);
	r->src = gzsource_new(fd, r->name, err);
	if (r->src == NULL) {
		free(r);
		return NULL;
	}
	return r;
}

static void reader_close(struct idx_reader *r)
{
	if (r == NULL)
		return;
	gzsource_free(r->src);
	free(r);
}

/* Reads up to n bytes into buf, stopping early only at the end of the input;
 * *got says how many arrived. Returns -1 if the input is unreadable or corrupt. */
static int reader_read(struct idx_reader *r, uint8_t *buf, size_t n, size_t *got, char *err)
{
	return gzsource_read(r->src, buf, n, got, err);
}

static int reader_truncated(const struct idx_reader *r, size_t got, size_t need, const char *what,
                            char *err)
{
	return err_set(err, "'%s': truncated%s: read %zu of %zu bytes of %s", r->name,
	               gzsource_cut_short(r->src) ? " gzip stream" : "", got, need, what);
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
				err_set(err, "'%s': out of memory for %zu bytes of %s", r->name,
				        ncap, what);
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

/* After the data, the file must end, cleanly: no extra bytes, and for gzip
 * complete members with nothing after them (gzsource.h). */
static int expect_end(struct idx_reader *r, size_t need, const char *what, char *err)
{
	uint8_t scratch[16384];
	size_t extra = 0;

	while (extra <= IDX_TRAILING_CAP) {
		size_t got = 0;

		if (reader_read(r, scratch, sizeof(scratch), &got, err) != 0)
			return -1;
		extra += got;
		if (got < sizeof(scratch))
			break;
	}
	if (extra > 0)
		return err_set(err, "'%s': %s%zu bytes of trailing data after %zu bytes of %s",
		               r->name, extra > IDX_TRAILING_CAP ? "at least " : "", extra, need,
		               what);
	if (gzsource_cut_short(r->src))
		return err_set(err, "'%s': truncated gzip stream: trailer missing after %s",
		               r->name, what);
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
		return err_set(err, "'%s': bad magic 0x%08x, expected 0x%08x (%s): %s", r->name,
		               be32(hdr), expect, spec->kind, why);
	}
	if (reader_read(r, hdr + 4, hdr_len - 4, &got_dims, err) != 0)
		return -1;
	if (got_dims < hdr_len - 4)
		return reader_truncated(r, 4 + got_dims, hdr_len, "header", err);

	*size = 1;
	for (unsigned i = 0; i < spec->ndims; i++) {
		dims[i] = be32(hdr + 4 + 4 * (size_t)i);
		if (dims[i] == 0 || dims[i] > spec->dim_max[i])
			return err_set(err, "'%s': %s %u out of range 1..%u", r->name,
			               spec->dim_name[i], dims[i], spec->dim_max[i]);
		if (*size > SIZE_MAX / dims[i])
			return err_set(err, "'%s': %s too large for this machine", r->name,
			               spec->data);
		*size *= dims[i];
	}
	return 0;
}

/* Opens path as spec says and reads its header into f. */
static int idx_open(struct idx_file *f, const char *path, const struct idx_spec *spec, char *err)
{
	uint32_t dims[IDX_MAX_DIMS] = {0, 1, 1};

	memset(f, 0, sizeof(*f));
	f->r = reader_open(path, err);
	if (f->r == NULL)
		return -1;
	if (read_header(f->r, spec, dims, &f->size, err) != 0) {
		idx_close(f);
		return -1;
	}
	f->count = dims[0];
	f->rows = dims[1];
	f->cols = dims[2];
	f->data_name = spec->data;
	return 0;
}

int idx_open_images(struct idx_file *f, const char *path, char *err)
{
	return idx_open(f, path, &images_spec, err);
}

int idx_open_labels(struct idx_file *f, const char *path, char *err)
{
	return idx_open(f, path, &labels_spec, err);
}

int idx_read(struct idx_file *f, uint8_t **data, char *err)
{
	*data = NULL;
	if (read_data(f->r, f->size, f->data_name, data, err) != 0)
		return -1;
	if (expect_end(f->r, f->size, f->data_name, err) != 0) {
		free(*data);
		*data = NULL;
		return -1;
	}
	return 0;
}

void idx_close(struct idx_file *f)
{
	reader_close(f->r);
	f->r = NULL;
}

int idx_load_images(const char *path, struct idx_images *out, char *err)
{
	struct idx_file f;
	int rc;

	memset(out, 0, sizeof(*out));
	if (idx_open_images(&f, path, err) != 0)
		return -1;
	rc = idx_read(&f, &out->pixels, err);
	if (rc == 0)
		*out = (struct idx_images){f.count, f.rows, f.cols, out->pixels};
	idx_close(&f);
	return rc;
}

int idx_load_labels(const char *path, struct idx_labels *out, char *err)
{
	struct idx_file f;
	int rc;

	memset(out, 0, sizeof(*out));
	if (idx_open_labels(&f, path, err) != 0)
		return -1;
	rc = idx_read(&f, &out->labels, err);
	if (rc == 0)
		out->count = f.count;
	idx_close(&f);
	return rc;
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
