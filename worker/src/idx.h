/* idx.h - IDX files (the MNIST format), raw or gzip-compressed.
 *
 * An IDX file is a big-endian header, magic 0x00 0x00 <type> <ndims>, then
 * ndims uint32 dimensions, then the data. Images are type 0x08 (ubyte) with 3
 * dims (count, rows, cols); labels are type 0x08 with 1 dim (count).
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

/* Reads path, or path + ".gz" if path does not exist (so "train-images-idx3-ubyte"
 * finds either form). A name ending in ".gz", or content starting with the
 * gzip magic, is decompressed. Every header field is checked: magic, type,
 * number of dims, dims in range, and the data length exactly equal to the
 * header's product (a truncated or over-long file is an error). On error
 * returns -1 with a message in err (ERR_LEN) that names the file and the
 * problem, e.g. "'/d/train-images-idx3-ubyte.gz': truncated: read 1000 of 47040000 bytes of
 * image data". The struct is zeroed on error. */
int idx_load_images(const char *path, struct idx_images *out, char *err);
int idx_load_labels(const char *path, struct idx_labels *out, char *err);

/* Free what the loaders allocated and zero the struct. Accept NULL. */
void idx_images_release(struct idx_images *img);
void idx_labels_release(struct idx_labels *lab);

#endif
