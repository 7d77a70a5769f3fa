/* dataset.h - an image classification split (images + labels) held in memory
 * as bytes, the data order of each pass, and batch assembly.
 *
 * The training stream is like tf.data's shuffle().repeat().batch(): pass p
 * over the set is a permutation drawn from (seed, p), the passes follow each
 * other, and every batch is full. So the examples of any step are a pure
 * function of (seed, global step), which is what makes exact resume and
 * sharding across workers possible.
 */
#ifndef MWJ_DATASET_H
#define MWJ_DATASET_H

#include <stdint.h>

#define DATASET_CLASSES  10
#define DATASET_PATH_LEN 4096

struct dataset {
	uint32_t n, rows, cols; /* examples of rows x cols x 1 */
	uint8_t *images;        /* (n, rows, cols), owned */
	uint8_t *labels;        /* (n), values < DATASET_CLASSES, owned */
	char images_path[DATASET_PATH_LEN];
	char labels_path[DATASET_PATH_LEN];
};

/* What a caller requires of a split's images: the shape a model takes
 * (rows and cols; 0 for any), or a check of the shape for a model yet to
 * be built for it (fits, with ctx; NULL for none), which returns 0 or -1
 * with why in err. */
struct dataset_want {
	uint32_t rows, cols;
	int (*fits)(const void *ctx, uint32_t rows, uint32_t cols, char *err);
	const void *ctx;
};

/* Loads "<dir>/<split>-images-idx3-ubyte[.gz]" and the matching labels, for
 * split "train" or "t10k". The headers of both files are read first, and
 * the counts they give must agree and the shape must be what want asks
 * (want NULL: any) before any data is read or inflated: a file that says
 * the wrong thing in its 16 bytes is refused at once, not after it has
 * taken its gigabyte of memory. Then every label must be a valid class.
 * Memory: rows x cols + 1 bytes an example (785 for Fashion-MNIST's
 * 28x28), held while ds lives. Returns 0, or -1 with a message in err
 * naming the file. */
int dataset_load(struct dataset *ds, const char *dir, const char *split,
                 const struct dataset_want *want, char *err);
void dataset_release(struct dataset *ds);

/* Writes the permutation of pass p into order (n entries): Fisher-Yates
 * driven by (seed, p). */
void dataset_shuffle(uint32_t *order, uint32_t n, uint64_t seed, uint64_t pass);

/* Gathers count examples, order[first..first+count), into x (count, rows,
 * cols, 1) scaled to [0, 1] like Keras' x / 255, and their labels into y. */
void dataset_gather(float *x, uint8_t *y, const struct dataset *ds, const uint32_t *order,
                    uint32_t first, uint32_t count);

/* The training stream: the permutation of the current pass and which pass
 * it is. init takes ds (which must outlive the stream) and the seed;
 * release frees the permutation and accepts a zeroed struct. */
struct dataset_stream {
	const struct dataset *ds;
	uint64_t seed;
	uint32_t *order; /* (ds->n) */
	uint64_t pass;
	int have_pass;
};

void dataset_stream_init(struct dataset_stream *s, const struct dataset *ds, uint64_t seed);
void dataset_stream_release(struct dataset_stream *s);

/* Gathers count examples starting at stream position pos (examples since
 * the start of training, across all workers), crossing into the next pass
 * where needed, as dataset_gather does. */
void dataset_stream_gather(struct dataset_stream *s, float *x, uint8_t *y, uint64_t pos,
                           uint32_t count);

/* The same examples as dataset_stream_gather, their pixels as the bytes
 * of the file, unscaled, into px (count, rows, cols): for a GPU, which
 * scales them itself after a copy of a quarter of the size. */
void dataset_stream_gather_bytes(struct dataset_stream *s, uint8_t *px, uint8_t *y, uint64_t pos,
                                 uint32_t count);

#endif
