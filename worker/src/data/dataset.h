/* dataset.h - a split of examples and targets, the data order of each
 * pass, and batch assembly.
 *
 * A split comes from MNIST-format IDX files (uint8 images and class
 * labels, held in memory) or from NumPy arrays (data/numpy_set.h: x and y
 * of any accepted dtype and shape, memory-mapped where the file stores
 * them uncompressed). Either way a batch is assembled as floats: x (count,
 * x_len), the values of each example in C order times the split's scale
 * (IDX pixels divided by 255 unless --rescale says otherwise; NumPy values
 * as they are unless --rescale says otherwise, as Keras' Rescaling), and
 * y (count, y_len), the targets (a class label as its integer value).
 *
 * The training stream is like tf.data's shuffle().repeat().batch(): pass p
 * over the set is a permutation drawn from (seed, p), the passes follow each
 * other, and every batch is full. So the examples of any step are a pure
 * function of (seed, global step), which is what makes exact resume and
 * sharding across workers possible.
 */
#ifndef MWJ_DATASET_H
#define MWJ_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "loss.h"
#include "npy.h"

#define DATASET_CLASSES      10 /* IDX labels: Fashion-MNIST's and MNIST's classes */
#define DATASET_PATH_LEN     4096
#define DATASET_MAX_RANK     7 /* of an example: an array's rank less the batch axis */
#define DATASET_RESCALE_NONE 0.0f

enum dataset_kind { DATASET_IDX, DATASET_NUMPY };

struct dataset {
	enum dataset_kind kind;
	uint32_t n; /* examples */
	int x_rank; /* of one example */
	uint64_t x_shape[DATASET_MAX_RANK];
	size_t x_len, y_len; /* values of one example, targets of one */
	float scale;         /* x times this; for IDX, 0: divided by 255 */
	/* IDX */
	uint32_t rows, cols; /* examples of rows x cols */
	uint8_t *images;     /* (n, rows, cols), owned */
	uint8_t *labels;     /* (n), owned */
	/* NumPy */
	struct npy_array x, y;              /* (n, ...) each, owned */
	char images_path[DATASET_PATH_LEN]; /* for messages: the x file (and array) */
	char labels_path[DATASET_PATH_LEN]; /* the y file (and array) */
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

/* The splits of a NumPy set (numpy_set.h) at path: train always, test
 * when the set has x_test and y_test (has_test says; test is zeroed
 * otherwise). Arrays of rank 1 are one value (or target) an example.
 * Returns 0, or -1 with a message naming the file and array. */
int dataset_load_numpy(struct dataset *train, struct dataset *test, int *has_test, const char *path,
                       char *err);

void dataset_release(struct dataset *ds);

/* Whether a model whose examples are in_rank axes of in_shape takes this
 * split's examples: the same shape, an axis of 1 at the end of either
 * ignored (IDX images are (rows, cols), a model's input (rows, cols, 1)).
 * Returns 0, or -1 with both shapes in err. */
int dataset_check_shape(const struct dataset *ds, int in_rank, const int *in_shape, char *err);

/* Checks every value a run will read: each target against the loss
 * (loss_check_target: class labels in range, binary targets in [0, 1],
 * all finite) and, for floating-point inputs, every input finite (NaN in
 * the data would end training with a loss of NaN much later). A pass over
 * the whole split, memory-mapped or not. Returns 0, or -1 with the file,
 * the array, the example and the problem in err. */
int dataset_check_values(const struct dataset *ds, const struct loss_spec *loss, char *err);

/* Sets the scale of x: rescale, or DATASET_RESCALE_NONE for the default
 * (IDX: / 255; NumPy: 1). */
void dataset_set_rescale(struct dataset *ds, float rescale);

/* Writes the permutation of pass p into order (n entries): Fisher-Yates
 * driven by (seed, p). */
void dataset_shuffle(uint32_t *order, uint32_t n, uint64_t seed, uint64_t pass);

/* Gathers count examples, order[first..first+count) (order NULL: first
 * on, in file order), into x (count, x_len) and y (count, y_len). */
void dataset_gather(float *x, float *y, const struct dataset *ds, const uint32_t *order,
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
void dataset_stream_gather(struct dataset_stream *s, float *x, float *y, uint64_t pos,
                           uint32_t count);

/* The same examples of an IDX split, their pixels as the bytes of the
 * file, unscaled, into px (count, rows, cols): for a GPU, which scales
 * them itself after a copy of a quarter of the size. */
void dataset_stream_gather_bytes(struct dataset_stream *s, uint8_t *px, float *y, uint64_t pos,
                                 uint32_t count);

#endif
