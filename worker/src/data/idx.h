/* idx.h - IDX files (the MNIST format), raw or gzip-compressed.
 *
 * An IDX file is a big-endian header, magic 0x00 0x00 <type> <ndims>, then
 * ndims uint32 dimensions, then the data. Images are type 0x08 (ubyte) with 3
 * dims (count, rows, cols); labels are type 0x08 with 1 dim (count).
 *
 * Content starting with the gzip magic is inflated, whatever the name. A
 * gzip file may hold several members one after the other (RFC 1952, what
 * `cat a.gz b.gz` makes): their data are read as one, as gzip -d and
 * zlib's gzread do. Anything after the last member that is not another
 * member is refused, where gzread ignores it: a file with junk appended is
 * a damaged or tampered one.
 *
 * A file is read in two steps, so that a caller can compare what headers
 * say (images against labels, the shape against the model) before it
 * inflates or reads what may be gigabytes: idx_open_* reads and checks the
 * header alone, idx_read the data.
 */
#ifndef MWJ_IDX_H
#define MWJ_IDX_H

#include <stddef.h>
#include <stdint.h>

/* Hard caps that keep a hostile header from asking for absurd memory. */
#define IDX_MAX_COUNT 100000000u
#define IDX_MAX_SIDE  4096u

struct idx_images {
	uint32_t count, rows, cols;
	uint8_t *pixels; /* (count, rows, cols), owned */
};

struct idx_labels {
	uint32_t count;
	uint8_t *labels; /* (count), owned */
};

/* An open IDX file whose header has been read and checked. */
struct idx_file {
	struct idx_reader *r;  /* owned; NULL once closed */
	uint32_t count;        /* images or labels */
	uint32_t rows, cols;   /* images only; 1 for labels */
	size_t size;           /* bytes of data the header describes */
	const char *data_name; /* for messages: "image data" or "label data" */
};

/* --- Two steps --- */

/* Opens path, or path + ".gz" if path does not exist (so
 * "train-images-idx3-ubyte" finds either form), and reads and checks its
 * header alone: magic, type, number of dims, dims in range. For gzip, only
 * as much is inflated as holds the header. Returns 0 with f's counts set,
 * or -1 with a message in err (ERR_LEN) that names the file and the
 * problem, and f closed. */
int idx_open_images(struct idx_file *f, const char *path, char *err);
int idx_open_labels(struct idx_file *f, const char *path, char *err);

/* Reads the data the header describes into a new buffer (*data, the
 * caller frees it), which grows as the bytes arrive, so that a small file
 * claiming gigabytes fails as truncated rather than asking for the claim;
 * then checks that the file ends there, cleanly: no extra bytes, and for
 * gzip complete members (zlib checks their CRC and length) with nothing
 * after them. Returns 0, or -1 with a message naming the file, e.g.
 * "'/d/train-images-idx3-ubyte.gz': truncated: read 1000 of 47040000 bytes
 * of image data". The file stays open either way. */
int idx_read(struct idx_file *f, uint8_t **data, char *err);

/* Closes f; accepts a zeroed or closed one. */
void idx_close(struct idx_file *f);

/* --- One step --- */

/* idx_open_*, idx_read and idx_close together. The struct is zeroed on
 * error. */
int idx_load_images(const char *path, struct idx_images *out, char *err);
int idx_load_labels(const char *path, struct idx_labels *out, char *err);

/* Free what the loaders allocated and zero the struct. Accept NULL. */
void idx_images_release(struct idx_images *img);
void idx_labels_release(struct idx_labels *lab);

#endif
