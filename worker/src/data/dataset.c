/* dataset.c - loading a split and assembling shuffled batches. */
#include "dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "idx.h"
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
	ds->n = img.count;
	ds->rows = img.rows;
	ds->cols = img.cols;
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
	ds->images = NULL;
	ds->labels = NULL;
	ds->n = 0;
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

SIMD_CLONES
static void scale_pixels(float *restrict x, const uint8_t *restrict p, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		x[i] = (float)p[i] / 255.0f;
}

void dataset_gather(float *x, uint8_t *y, const struct dataset *ds, const uint32_t *order,
                    uint32_t first, uint32_t count)
{
	uint32_t pixels = ds->rows * ds->cols;

	for (uint32_t i = 0; i < count; i++) {
		uint32_t e = order ? order[first + i] : first + i;
		scale_pixels(x + (size_t)i * pixels, ds->images + (size_t)e * pixels, pixels);
		y[i] = ds->labels[e];
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
static void stream_gather(struct dataset_stream *s, float *x, uint8_t *px, uint8_t *y, uint64_t pos,
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
			x += (size_t)take * pixels;
		} else {
			for (uint32_t i = 0; i < take; i++) {
				uint32_t e = s->order[off + i];
				memcpy(px + (size_t)i * pixels, ds->images + (size_t)e * pixels,
				       pixels);
				y[i] = ds->labels[e];
			}
			px += (size_t)take * pixels;
		}
		y += take;
		pos += take;
		count -= take;
	}
}

void dataset_stream_gather(struct dataset_stream *s, float *x, uint8_t *y, uint64_t pos,
                           uint32_t count)
{
	stream_gather(s, x, NULL, y, pos, count);
}

void dataset_stream_gather_bytes(struct dataset_stream *s, uint8_t *px, uint8_t *y, uint64_t pos,
                                 uint32_t count)
{
	stream_gather(s, NULL, px, y, pos, count);
}
