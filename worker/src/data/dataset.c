/* dataset.c - loading a split (IDX or NumPy) and assembling shuffled
 * batches. */
#include "dataset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "idx.h"
#include "numpy_set.h"
#include "rng.h"
#include "simd.h"

/* The headers of both files against each other and against want. */
static int check_headers(const struct dataset *ds, const struct idx_file *img,
                         const struct idx_file *lab, const struct dataset_want *want, char *err)
{
	char why[ERR_LEN];

	if (img->count != lab->count)
		return err_set(err, "'%s' holds %u images but '%s' holds %u labels",
		               ds->images_path, img->count, ds->labels_path, lab->count);
	if (want == NULL)
		return 0;
	if ((want->rows && img->rows != want->rows) || (want->cols && img->cols != want->cols))
		return err_set(err, "'%s' holds %ux%u images, but the model takes %ux%u",
		               ds->images_path, img->rows, img->cols, want->rows, want->cols);
	if (want->fits && want->fits(want->ctx, img->rows, img->cols, why) < 0)
		return err_set(err, "'%s' holds %ux%u images: %s", ds->images_path, img->rows,
		               img->cols, why);
	return 0;
}

int dataset_load(struct dataset *ds, const char *dir, const char *split,
                 const struct dataset_want *want, char *err)
{
	struct idx_file img = {0}, lab = {0};
	uint8_t *pixels = NULL, *labels = NULL;
	int rc = -1;

	memset(ds, 0, sizeof(*ds));
	if (snprintf(ds->images_path, sizeof(ds->images_path), "%s/%s-images-idx3-ubyte", dir,
	             split) >= (int)sizeof(ds->images_path) ||
	    snprintf(ds->labels_path, sizeof(ds->labels_path), "%s/%s-labels-idx1-ubyte", dir,
	             split) >= (int)sizeof(ds->labels_path))
		return err_set(err, "data directory '%s': path too long", dir);
	if (idx_open_images(&img, ds->images_path, err) < 0 ||
	    idx_open_labels(&lab, ds->labels_path, err) < 0 ||
	    check_headers(ds, &img, &lab, want, err) < 0 || idx_read(&img, &pixels, err) < 0 ||
	    idx_read(&lab, &labels, err) < 0)
		goto out;
	for (uint32_t i = 0; i < lab.count; i++) {
		if (labels[i] >= DATASET_CLASSES) {
			err_set(err, "'%s': label %u of example %u is not a class 0..%d",
			        ds->labels_path, labels[i], i, DATASET_CLASSES - 1);
			goto out;
		}
	}
	ds->kind = DATASET_IDX;
	ds->n = img.count;
	ds->rows = img.rows;
	ds->cols = img.cols;
	ds->x_rank = 2;
	ds->x_shape[0] = img.rows;
	ds->x_shape[1] = img.cols;
	ds->x_len = (size_t)img.rows * img.cols;
	ds->y_len = 1;
	ds->scale = DATASET_RESCALE_NONE;
	ds->images = pixels;
	ds->labels = labels;
	pixels = labels = NULL;
	rc = 0;
out:
	free(pixels);
	free(labels);
	idx_close(&img);
	idx_close(&lab);
	return rc;
}

void dataset_release(struct dataset *ds)
{
	struct idx_images img = {.pixels = ds->images};
	struct idx_labels lab = {.labels = ds->labels};

	idx_images_release(&img);
	idx_labels_release(&lab);
	npy_release(&ds->x);
	npy_release(&ds->y);
	ds->images = NULL;
	ds->labels = NULL;
	ds->n = 0;
}

/* A split of a NumPy set: x and y taken over (the set's are zeroed). */
static int numpy_split(struct dataset *ds, struct npy_array *x, struct npy_array *y,
                       const char *path, const char *xname, const char *yname, char *err)
{
	char shape[NPY_SHAPE_STR_LEN];

	memset(ds, 0, sizeof(*ds));
	snprintf(ds->images_path, sizeof(ds->images_path), "%s in '%s'", xname, path);
	snprintf(ds->labels_path, sizeof(ds->labels_path), "%s in '%s'", yname, path);
	if (x->rank < 1 || x->rank - 1 > DATASET_MAX_RANK || y->rank < 1 ||
	    x->shape[0] > UINT32_MAX) {
		npy_shape_str(shape, sizeof(shape), x->shape, x->rank);
		return err_set(err,
		               "'%s': %s of shape %s is not up to %u examples of rank %d or less",
		               path, xname, shape, UINT32_MAX, DATASET_MAX_RANK);
	}
	ds->kind = DATASET_NUMPY;
	ds->n = (uint32_t)x->shape[0];
	ds->x_rank = x->rank - 1;
	for (int i = 0; i < ds->x_rank; i++)
		ds->x_shape[i] = x->shape[i + 1];
	ds->x_len = ds->n ? (size_t)(x->count / ds->n) : 0;
	ds->y_len = ds->n ? (size_t)(y->count / ds->n) : 0;
	ds->scale = 1.0f;
	ds->x = *x;
	ds->y = *y;
	memset(x, 0, sizeof(*x));
	memset(y, 0, sizeof(*y));
	return 0;
}

int dataset_load_numpy(struct dataset *train, struct dataset *test, int *has_test, const char *path,
                       char *err)
{
	struct numpy_set set;

	memset(train, 0, sizeof(*train));
	memset(test, 0, sizeof(*test));
	*has_test = 0;
	if (numpy_set_open(&set, path, err) < 0)
		return -1;
	if (numpy_split(train, &set.x_train, &set.y_train, path, "x_train", "y_train", err) < 0 ||
	    (set.has_test &&
	     numpy_split(test, &set.x_test, &set.y_test, path, "x_test", "y_test", err) < 0)) {
		numpy_set_release(&set);
		dataset_release(train);
		dataset_release(test);
		return -1;
	}
	*has_test = set.has_test;
	numpy_set_release(&set);
	return 0;
}

/* The axes of a shape without a trailing axis of 1. */
static int trimmed_rank(const uint64_t *d, int rank)
{
	return rank > 1 && d[rank - 1] == 1 ? rank - 1 : rank;
}

int dataset_check_shape(const struct dataset *ds, int in_rank, const int *in_shape, char *err)
{
	uint64_t want[DATASET_MAX_RANK] = {0};
	char a[NPY_SHAPE_STR_LEN], b[NPY_SHAPE_STR_LEN];
	int ra, rb, same;

	if (in_rank < 1 || in_rank > DATASET_MAX_RANK)
		return err_set(err, "a model input of rank %d", in_rank);
	for (int i = 0; i < in_rank; i++)
		want[i] = (uint64_t)in_shape[i];
	ra = trimmed_rank(ds->x_shape, ds->x_rank);
	rb = trimmed_rank(want, in_rank);
	same = ra == rb;
	for (int i = 0; same && i < ra; i++)
		same = ds->x_shape[i] == want[i];
	if (same)
		return 0;
	npy_shape_str(a, sizeof(a), ds->x_shape, ds->x_rank);
	npy_shape_str(b, sizeof(b), want, in_rank);
	return err_set(err, "%s holds examples of shape %s, but the model takes %s",
	               ds->images_path, a, b);
}

/* Values converted at a time by the checks. */
#define CHECK_CHUNK 65536

static int check_inputs(const struct dataset *ds, char *err)
{
	float buf[CHECK_CHUNK];
	uint64_t total = (uint64_t)ds->n * ds->x_len;

	if (ds->kind == DATASET_IDX || (ds->x.dtype != NPY_TYPE_F16 &&
	                                ds->x.dtype != NPY_TYPE_F32 && ds->x.dtype != NPY_TYPE_F64))
		return 0; /* integers are always finite */
	for (uint64_t at = 0; at < total; at += CHECK_CHUNK) {
		size_t n = total - at < CHECK_CHUNK ? (size_t)(total - at) : CHECK_CHUNK;
		npy_to_f32(buf, &ds->x, at, n, 1.0f);
		for (size_t i = 0; i < n; i++)
			if (!isfinite(buf[i]))
				return err_set(
				    err, "%s: example %llu holds %g, not a finite number",
				    ds->images_path, (unsigned long long)((at + i) / ds->x_len),
				    (double)buf[i]);
	}
	return 0;
}

int dataset_check_values(const struct dataset *ds, const struct loss_spec *loss, char *err)
{
	char why[ERR_LEN];
	float *t;

	if ((size_t)loss->T != ds->y_len)
		return err_set(err, "%s holds %zu target(s) an example, and the loss %s takes %d",
		               ds->labels_path, ds->y_len, loss_name(loss->kind), loss->T);
	if (check_inputs(ds, err) < 0)
		return -1;
	t = xcalloc(ds->y_len ? ds->y_len : 1, sizeof(float));
	for (uint32_t e = 0; e < ds->n; e++) {
		if (ds->kind == DATASET_IDX)
			t[0] = (float)ds->labels[e];
		else
			npy_to_f32(t, &ds->y, (uint64_t)e * ds->y_len, ds->y_len, 1.0f);
		if (loss_check_target(loss, t, why) < 0) {
			free(t);
			return err_set(err, "%s: example %u: %s", ds->labels_path, e, why);
		}
	}
	free(t);
	return 0;
}

void dataset_set_rescale(struct dataset *ds, float rescale)
{
	if (rescale != DATASET_RESCALE_NONE)
		ds->scale = rescale;
	else
		ds->scale = ds->kind == DATASET_IDX ? DATASET_RESCALE_NONE : 1.0f;
}

void dataset_shuffle(uint32_t *order, uint32_t n, uint64_t seed, uint64_t pass)
{
	struct rng r;

	/* Stream 0 is weight init; passes use streams 1, 2, ... */
	rng_init(&r, seed, pass + 1);
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = rng_below(&r, i);
		uint32_t t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
}

/* Pixels to floats: divided by 255 as Keras' tutorial does (x / 255), or
 * times scale. */
SIMD_CLONES
static void scale_pixels(float *restrict x, const uint8_t *restrict p, uint32_t n, float scale)
{
	if (scale == DATASET_RESCALE_NONE)
		for (uint32_t i = 0; i < n; i++)
			x[i] = (float)p[i] / 255.0f;
	else
		for (uint32_t i = 0; i < n; i++)
			x[i] = (float)p[i] * scale;
}

/* Values and targets of one example: an IDX split's from its shape, so
 * that a split made by hand from images and labels needs no more. */
static size_t x_len_of(const struct dataset *ds)
{
	return ds->kind == DATASET_IDX ? (size_t)ds->rows * ds->cols : ds->x_len;
}

static size_t y_len_of(const struct dataset *ds)
{
	return ds->kind == DATASET_IDX ? 1 : ds->y_len;
}

/* Example e into x (x_len) and y (y_len). */
static void gather_one(float *x, float *y, const struct dataset *ds, uint32_t e)
{
	if (ds->kind == DATASET_IDX) {
		uint32_t pixels = ds->rows * ds->cols;
		scale_pixels(x, ds->images + (size_t)e * pixels, pixels, ds->scale);
		y[0] = (float)ds->labels[e];
		return;
	}
	npy_to_f32(x, &ds->x, (uint64_t)e * ds->x_len, ds->x_len, ds->scale);
	npy_to_f32(y, &ds->y, (uint64_t)e * ds->y_len, ds->y_len, 1.0f);
}

void dataset_gather(float *x, float *y, const struct dataset *ds, const uint32_t *order,
                    uint32_t first, uint32_t count)
{
	for (uint32_t i = 0; i < count; i++) {
		uint32_t e = order ? order[first + i] : first + i;
		gather_one(x + (size_t)i * x_len_of(ds), y + (size_t)i * y_len_of(ds), ds, e);
	}
}

void dataset_stream_init(struct dataset_stream *s, const struct dataset *ds, uint64_t seed)
{
	*s = (struct dataset_stream){ds, seed, xcalloc(ds->n, sizeof(uint32_t)), 0, 0};
}

void dataset_stream_release(struct dataset_stream *s)
{
	free(s->order);
	s->order = NULL;
}

/* Gathers count examples from pos on into x (scaled floats) or px (bytes),
 * whichever is not NULL, shuffling each pass as it is reached. */
static void stream_gather(struct dataset_stream *s, float *x, uint8_t *px, float *y, uint64_t pos,
                          uint32_t count)
{
	const struct dataset *ds = s->ds;
	uint32_t n = ds->n, pixels = ds->rows * ds->cols;

	while (count > 0) {
		uint64_t pass = pos / n;
		uint32_t off = (uint32_t)(pos % n);
		uint32_t take = n - off < count ? n - off : count;
		if (!s->have_pass || s->pass != pass) {
			dataset_shuffle(s->order, n, s->seed, pass);
			s->pass = pass;
			s->have_pass = 1;
		}
		if (x) {
			dataset_gather(x, y, ds, s->order, off, take);
			x += (size_t)take * x_len_of(ds);
		} else {
			for (uint32_t i = 0; i < take; i++) {
				uint32_t e = s->order[off + i];
				memcpy(px + (size_t)i * pixels, ds->images + (size_t)e * pixels,
				       pixels);
				y[i] = (float)ds->labels[e];
			}
			px += (size_t)take * pixels;
		}
		y += (size_t)take * y_len_of(ds);
		pos += take;
		count -= take;
	}
}

void dataset_stream_gather(struct dataset_stream *s, float *x, float *y, uint64_t pos,
                           uint32_t count)
{
	stream_gather(s, x, NULL, y, pos, count);
}

void dataset_stream_gather_bytes(struct dataset_stream *s, uint8_t *px, float *y, uint64_t pos,
                                 uint32_t count)
{
	stream_gather(s, NULL, px, y, pos, count);
}
