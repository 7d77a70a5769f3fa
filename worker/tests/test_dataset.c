/* test_dataset.c - a split in memory: the data order of each pass, batch
 * assembly, and loading the real Fashion-MNIST files and broken ones.
 *
 * The real data is found through MWJ_TEST_DATA (default: Debian's
 * dataset-fashion-mnist). Tests that write files get their own mkdtemp
 * directory, removed by the teardown even when the test fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "err.h"
#include "loss.h"
#include "testutil.h"

/* order must hold each of 0..n-1 exactly once. */
static void assert_permutation(const uint32_t *order, uint32_t n)
{
	uint8_t *seen = calloc(n ? n : 1, 1);

	assert_non_null(seen);
	for (uint32_t i = 0; i < n; i++) {
		assert_true(order[i] < n);
		assert_int_equal(seen[order[i]], 0);
		seen[order[i]] = 1;
	}
	free(seen);
}

/* How many positions two orders share; a fresh shuffle of n shares about 1. */
static uint32_t same_positions(const uint32_t *a, const uint32_t *b, uint32_t n)
{
	uint32_t same = 0;

	for (uint32_t i = 0; i < n; i++)
		same += a[i] == b[i];
	return same;
}

enum { N = 60000 };

static void test_shuffle_is_a_permutation(void **state)
{
	static const uint32_t sizes[] = {0, 1, 2, 3, 10, 1000, N};
	uint32_t *order = malloc(N * sizeof(*order));

	(void)state;
	assert_non_null(order);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (uint64_t pass = 0; pass < 3; pass++) {
			dataset_shuffle(order, sizes[i], 42, pass);
			assert_permutation(order, sizes[i]);
		}
	free(order);
}

static void test_shuffle_is_a_pure_function_of_seed_and_pass(void **state)
{
	uint32_t *a = malloc(N * sizeof(*a)), *b = malloc(N * sizeof(*b));

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	dataset_shuffle(a, N, 42, 3);
	/* Another pass in between must not disturb it: no hidden state. */
	dataset_shuffle(b, N, 7, 0);
	dataset_shuffle(b, N, 42, 3);
	assert_memory_equal(a, b, N * sizeof(*a));
	free(a);
	free(b);
}

static void test_shuffle_differs_across_passes_and_seeds(void **state)
{
	uint32_t *base = malloc(N * sizeof(*base)), *other = malloc(N * sizeof(*other));

	(void)state;
	assert_non_null(base);
	assert_non_null(other);
	dataset_shuffle(base, N, 42, 0);
	/* Not the file order: a real shuffle leaves few examples in place. */
	for (uint32_t i = 0; i < N; i++)
		other[i] = i;
	assert_true(same_positions(base, other, N) < 100);

	dataset_shuffle(other, N, 42, 1);
	assert_true(same_positions(base, other, N) < 100);
	dataset_shuffle(other, N, 43, 0);
	assert_true(same_positions(base, other, N) < 100);
	/* Seeds and passes are separate inputs, not added together. */
	dataset_shuffle(base, N, 43, 0);
	dataset_shuffle(other, N, 42, 1);
	assert_true(same_positions(base, other, N) < 100);
	free(base);
	free(other);
}

/* Fisher-Yates done right makes all 3! orders equally likely; an off-by-one
 * in the loop bounds would make some impossible or twice as likely. */
static void test_shuffle_draws_every_order_of_three_about_equally(void **state)
{
	enum { SEEDS = 6000 };
	int counts[3][3][3] = {{{0}}};
	uint32_t order[3];

	(void)state;
	for (uint64_t seed = 0; seed < SEEDS; seed++) {
		dataset_shuffle(order, 3, seed, seed % 5);
		counts[order[0]][order[1]][order[2]]++;
	}
	/* 1000 each expected, standard deviation about 29. */
	for (int a = 0; a < 3; a++)
		for (int b = 0; b < 3; b++)
			for (int c = 0; c < 3; c++) {
				int distinct = a != b && b != c && a != c;
				int n = counts[a][b][c];
				if (distinct && (n < 850 || n > 1150))
					fail_msg("order %d %d %d drawn %d times of %d", a, b, c, n,
					         SEEDS);
				if (!distinct)
					assert_int_equal(n, 0);
			}
}

static void test_gather_scales_every_pixel_value_exactly_like_keras(void **state)
{
	uint8_t pixels[256], label = 3;
	float y = 255.0f;
	struct dataset ds = {.n = 1, .rows = 16, .cols = 16, .images = pixels, .labels = &label};
	float x[256];

	(void)state;
	for (int i = 0; i < 256; i++)
		pixels[i] = (uint8_t)i;
	dataset_gather(x, &y, &ds, NULL, 0, 1);
	/* x / 255 in float32, rounded once: bitwise, not approximately. */
	for (int i = 0; i < 256; i++) {
		float want = (float)i / 255.0f;
		uint32_t got_bits, want_bits;
		memcpy(&got_bits, &x[i], sizeof(got_bits));
		memcpy(&want_bits, &want, sizeof(want_bits));
		if (got_bits != want_bits)
			fail_msg("pixel %d scaled to %.9g, want %.9g", i, x[i], want);
	}
	assert_true(x[0] == 0.0f);
	assert_true(x[255] == 1.0f);
	assert_true(y == 3.0f);
}

/* Five 2x3 images whose pixels encode (example, position). */
struct tiny {
	uint8_t images[5 * 6];
	uint8_t labels[5];
	struct dataset ds;
};

static void tiny_init(struct tiny *t)
{
	for (int e = 0; e < 5; e++) {
		for (int p = 0; p < 6; p++)
			t->images[e * 6 + p] = (uint8_t)(50 * e + p);
		t->labels[e] = (uint8_t)(9 - e);
	}
	t->ds = (struct dataset){
	    .n = 5, .rows = 2, .cols = 3, .images = t->images, .labels = t->labels};
}

static void assert_example(const float *x, float y, const struct tiny *t, int e)
{
	for (int p = 0; p < 6; p++)
		assert_true(x[p] == (float)t->images[e * 6 + p] / 255.0f);
	assert_true(y == (float)t->labels[e]);
}

static void test_gather_picks_the_examples_the_order_names(void **state)
{
	struct tiny t;
	const uint32_t order[5] = {4, 0, 3, 1, 2};
	float x[3 * 6], y[3];

	(void)state;
	tiny_init(&t);
	/* order[1..4): examples 0, 3, 1, with their own labels. */
	memset(x, 0xff, sizeof(x));
	dataset_gather(x, y, &t.ds, order, 1, 3);
	assert_example(x, y[0], &t, 0);
	assert_example(x + 6, y[1], &t, 3);
	assert_example(x + 12, y[2], &t, 1);
}

static void test_gather_without_an_order_reads_file_order(void **state)
{
	struct tiny t;
	float x[2 * 6 + 1], y[2 + 1];

	(void)state;
	tiny_init(&t);
	/* A canary after the batch: gather writes exactly count examples. */
	x[12] = -7.0f;
	y[2] = 77.0f;
	dataset_gather(x, y, &t.ds, NULL, 3, 2);
	assert_example(x, y[0], &t, 3);
	assert_example(x + 6, y[1], &t, 4);
	assert_true(x[12] == -7.0f);
	assert_true(y[2] == 77.0f);
}

/* The bytes a GPU is sent are the examples, in the order, that the floats
 * are made of, across the end of a pass too. */
static void test_stream_gathers_the_same_examples_as_bytes_and_as_floats(void **state)
{
	struct tiny t;
	struct dataset_stream a, b;
	float x[4 * 6], ya[4], yb[4];
	uint8_t px[4 * 6];

	(void)state;
	tiny_init(&t);
	dataset_stream_init(&a, &t.ds, 9);
	dataset_stream_init(&b, &t.ds, 9);
	for (uint64_t pos = 0; pos < 12; pos += 3) {
		dataset_stream_gather(&a, x, ya, pos, 4);
		dataset_stream_gather_bytes(&b, px, yb, pos, 4);
		assert_memory_equal(ya, yb, sizeof(ya));
		for (int i = 0; i < 4 * 6; i++)
			assert_true(x[i] == (float)px[i] / 255.0f);
	}
	dataset_stream_release(&a);
	dataset_stream_release(&b);
}

static void assert_class_balance(const struct dataset *ds, uint32_t per_class)
{
	uint32_t counts[DATASET_CLASSES] = {0};

	for (uint32_t i = 0; i < ds->n; i++) {
		assert_true(ds->labels[i] < DATASET_CLASSES);
		counts[ds->labels[i]]++;
	}
	for (int c = 0; c < DATASET_CLASSES; c++)
		assert_int_equal(counts[c], per_class);
}

static void test_load_reads_the_real_fashion_mnist_splits(void **state)
{
	struct dataset train, test;
	char err[ERR_LEN] = "";
	uint64_t sum = 0;

	(void)state;
	if (dataset_load(&train, testutil_data_dir(), "train", NULL, err) < 0)
		fail_msg("%s", err);
	assert_int_equal(train.n, 60000);
	assert_int_equal(train.rows, 28);
	assert_int_equal(train.cols, 28);
	/* Fashion-MNIST is balanced: 6000 of each class, the first an ankle boot. */
	assert_class_balance(&train, 6000);
	assert_int_equal(train.labels[0], 9);
	for (int p = 0; p < 28 * 28; p++)
		sum += train.images[p];
	assert_int_equal(sum, 76247);
	assert_non_null(strstr(train.images_path, "train-images-idx3-ubyte"));
	assert_non_null(strstr(train.labels_path, "train-labels-idx1-ubyte"));
	dataset_release(&train);
	assert_null(train.images);
	assert_null(train.labels);
	assert_int_equal(train.n, 0);

	if (dataset_load(&test, testutil_data_dir(), "t10k", NULL, err) < 0)
		fail_msg("%s", err);
	assert_int_equal(test.n, 10000);
	assert_int_equal(test.rows, 28);
	assert_int_equal(test.cols, 28);
	assert_class_balance(&test, 1000);
	assert_int_equal(test.labels[0], 9);
	assert_int_equal(test.labels[1], 2);
	dataset_release(&test);
}

struct fixture {
	char dir[TESTUTIL_TMPDIR_LEN]; /* first, for testutil_fixture_setup() */
	char images[PATH_MAX];
	char labels[PATH_MAX];
	char err[ERR_LEN];
};

static int setup(void **state)
{
	struct fixture *fx;

	if (testutil_fixture_setup(state, sizeof(*fx), "dataset") < 0)
		return -1;
	fx = *state;
	snprintf(fx->images, sizeof(fx->images), "%s/train-images-idx3-ubyte", fx->dir);
	snprintf(fx->labels, sizeof(fx->labels), "%s/train-labels-idx1-ubyte", fx->dir);
	return 0;
}

/* Raw IDX files: count 4x4 images of value 7, and the given labels. */
static void write_split(struct fixture *fx, uint32_t count, const uint8_t *labels, uint32_t nlabels)
{
	uint8_t buf[16 + 16 * 16];

	assert_true(count <= 16 && nlabels <= 16);
	testutil_put_be32(buf, 0x00000803);
	testutil_put_be32(buf + 4, count);
	testutil_put_be32(buf + 8, 4);
	testutil_put_be32(buf + 12, 4);
	memset(buf + 16, 7, (size_t)count * 16);
	testutil_write_file(fx->images, buf, 16 + (size_t)count * 16);
	testutil_put_be32(buf, 0x00000801);
	testutil_put_be32(buf + 4, nlabels);
	memcpy(buf + 8, labels, nlabels);
	testutil_write_file(fx->labels, buf, 8 + (size_t)nlabels);
}

static void test_load_reads_a_small_split_it_wrote(void **state)
{
	struct fixture *fx = *state;
	const uint8_t labels[3] = {0, 9, 5};
	struct dataset ds;

	write_split(fx, 3, labels, 3);
	if (dataset_load(&ds, fx->dir, "train", NULL, fx->err) < 0)
		fail_msg("%s", fx->err);
	assert_int_equal(ds.n, 3);
	assert_int_equal(ds.rows, 4);
	assert_int_equal(ds.cols, 4);
	assert_memory_equal(ds.labels, labels, 3);
	assert_int_equal(ds.images[3 * 16 - 1], 7);
	dataset_release(&ds);
}

static void test_load_refuses_image_and_label_counts_that_disagree(void **state)
{
	struct fixture *fx = *state;
	const uint8_t labels[2] = {1, 2};
	struct dataset ds;

	write_split(fx, 3, labels, 2);
	assert_int_equal(dataset_load(&ds, fx->dir, "train", NULL, fx->err), -1);
	testutil_assert_contains(fx->err, fx->images);
	testutil_assert_contains(fx->err, fx->labels);
	testutil_assert_contains(fx->err, "3 images");
	testutil_assert_contains(fx->err, "2 labels");
	assert_null(ds.images);
	assert_null(ds.labels);
	dataset_release(&ds);
}

static void test_load_refuses_a_label_that_is_not_a_class(void **state)
{
	struct fixture *fx = *state;
	const uint8_t labels[4] = {0, 9, 10, 3};
	struct dataset ds;

	write_split(fx, 4, labels, 4);
	assert_int_equal(dataset_load(&ds, fx->dir, "train", NULL, fx->err), -1);
	testutil_assert_contains(fx->err, fx->labels);
	testutil_assert_contains(fx->err, "label 10 of example 2");
	assert_null(ds.images);
	dataset_release(&ds);

	/* The largest byte value, at the last example. */
	const uint8_t last[4] = {0, 1, 2, 255};
	write_split(fx, 4, last, 4);
	assert_int_equal(dataset_load(&ds, fx->dir, "train", NULL, fx->err), -1);
	testutil_assert_contains(fx->err, fx->labels);
	testutil_assert_contains(fx->err, "label 255 of example 3");
}

static void test_load_names_the_missing_file(void **state)
{
	struct fixture *fx = *state;
	const uint8_t labels[1] = {0};
	struct dataset ds;

	assert_int_equal(dataset_load(&ds, fx->dir, "train", NULL, fx->err), -1);
	testutil_assert_contains(fx->err, fx->images);

	write_split(fx, 1, labels, 1);
	unlink(fx->labels);
	assert_int_equal(dataset_load(&ds, fx->dir, "train", NULL, fx->err), -1);
	testutil_assert_contains(fx->err, fx->labels);
	assert_null(ds.images);
}

/* Refuses the split with want, having inflated its header alone (the rest
 * is 800 MiB), saying says. */
static void assert_refused_from_the_header(struct fixture *fx, const struct dataset_want *want,
                                           const char *says)
{
	struct dataset ds;
	long long rss0 = testutil_peak_rss();

	assert_int_equal(dataset_load(&ds, fx->dir, "train", want, fx->err), -1);
	print_message("    %s\n", fx->err);
	testutil_assert_contains(fx->err, fx->images);
	testutil_assert_contains(fx->err, says);
	assert_null(ds.images);
	assert_true(testutil_peak_rss() - rss0 < (32ll << 20));
}

static void test_load_refuses_another_shape_than_the_model_s_from_the_header(void **state)
{
	struct fixture *fx = *state;
	const struct dataset_want model = {28, 28, NULL, NULL};

	testutil_write_big_split(fx->dir, "train", 200000, 64, 200000);
	assert_refused_from_the_header(fx, &model, "holds 64x64 images, but the model takes 28x28");
}

static void test_load_refuses_counts_that_disagree_from_the_headers(void **state)
{
	struct fixture *fx = *state;

	testutil_write_big_split(fx->dir, "train", 200000, 64, 60000);
	assert_refused_from_the_header(fx, NULL, "holds 200000 images but");
	testutil_assert_contains(fx->err, "holds 60000 labels");
}

/* What a model built for the images would make of their shape. */
static int too_big_for_the_model(const void *ctx, uint32_t rows, uint32_t cols, char *err)
{
	(void)ctx;
	return err_set(err, "a model of %ux%u inputs would not fit", rows, cols);
}

static void test_load_asks_whether_the_shape_fits_before_reading(void **state)
{
	struct fixture *fx = *state;
	const struct dataset_want model = {0, 0, too_big_for_the_model, NULL};

	testutil_write_big_split(fx->dir, "train", 200000, 64, 200000);
	assert_refused_from_the_header(fx, &model,
	                               "holds 64x64 images: a model of 64x64 inputs would not fit");
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, testutil_fixture_teardown)

/* --- NumPy splits --- */

/* The NumPy fixtures (scripts/make-npy-fixtures.py): set.npz and its
 * variants hold x_train (6, 4, 3) uint8 0..71, y_train (6,) 0 1 2 0 1 2,
 * x_test (2, 4, 3) 200.., y_test (2,) 2 1. */
static const char *npy_fixture(char *buf, size_t len, const char *name)
{
	const char *file = __FILE__;
	const char *slash = strrchr(file, '/');

	snprintf(buf, len, "%.*s/data/npy/%s", slash ? (int)(slash - file) : 1, slash ? file : ".",
	         name);
	return buf;
}

static void test_numpy_splits_load_as_keras_datasets_returns_them(void **state)
{
	static const char *const sets[] = {"set.npz", "set_compressed.npz", "set_dir"};
	char path[PATH_MAX], err[ERR_LEN];
	(void)state;

	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
		struct dataset train, test;
		int has_test = 0;
		float x[12], y;
		assert_int_equal(dataset_load_numpy(&train, &test, &has_test,
		                                    npy_fixture(path, sizeof(path), sets[i]), err),
		                 0);
		assert_int_equal(has_test, 1);
		assert_int_equal(train.n, 6);
		assert_int_equal(train.x_rank, 2);
		assert_int_equal(train.x_len, 12);
		assert_int_equal(train.y_len, 1);
		assert_int_equal(test.n, 2);
		/* NumPy values as they are, unless --rescale says otherwise. */
		dataset_set_rescale(&train, DATASET_RESCALE_NONE);
		dataset_gather(x, &y, &train, NULL, 4, 1);
		assert_true(x[0] == 48.0f && x[11] == 59.0f && y == 1.0f);
		dataset_set_rescale(&test, 0.5f);
		dataset_gather(x, &y, &test, NULL, 1, 1);
		assert_true(x[0] == 106.0f && y == 1.0f);
		dataset_release(&train);
		dataset_release(&test);
	}
}

static void test_a_numpy_split_fits_a_model_of_its_shape_with_a_trailing_axis_of_one(void **state)
{
	char path[PATH_MAX], err[ERR_LEN];
	struct dataset train, test;
	int has_test;
	(void)state;

	assert_int_equal(dataset_load_numpy(&train, &test, &has_test,
	                                    npy_fixture(path, sizeof(path), "set.npz"), err),
	                 0);
	assert_int_equal(dataset_check_shape(&train, 2, (const int[]){4, 3}, err), 0);
	assert_int_equal(dataset_check_shape(&train, 3, (const int[]){4, 3, 1}, err), 0);
	assert_int_equal(dataset_check_shape(&train, 1, (const int[]){12}, err), -1);
	testutil_assert_contains(err, "x_train in '");
	testutil_assert_contains(err, "holds examples of shape (4, 3), but the model takes (12,)");
	dataset_release(&train);
	dataset_release(&test);
}

static void test_targets_out_of_range_for_the_loss_are_refused_naming_the_example(void **state)
{
	char path[PATH_MAX], err[ERR_LEN];
	struct dataset train, test;
	struct loss_spec two, three;
	struct loss_config sparse = {LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
	int has_test;
	(void)state;

	assert_int_equal(dataset_load_numpy(&train, &test, &has_test,
	                                    npy_fixture(path, sizeof(path), "set.npz"), err),
	                 0);
	assert_int_equal(loss_resolve(&three, &sparse, 1, 3, 1, NULL, 0, err), 0);
	assert_int_equal(dataset_check_values(&train, &three, err), 0);
	/* Labels 0..2 do not fit 2 classes: example 2 holds the first 2. */
	assert_int_equal(loss_resolve(&two, &sparse, 1, 2, 1, NULL, 0, err), 0);
	assert_int_equal(dataset_check_values(&train, &two, err), -1);
	testutil_assert_contains(err, "y_train in '");
	testutil_assert_contains(err, "example 2: label 2 is not a class 0..1");
	dataset_release(&train);
	dataset_release(&test);
}

static void test_a_nan_in_float_inputs_is_refused_naming_the_example(void **state)
{
	char dir[] = "/tmp/mwj-test-npy-XXXXXX", path[PATH_MAX + 32], err[ERR_LEN];
	/* x_train (3, 2) float32 with a NaN in example 1, y_train (3,) float32 */
	static const float xs[6] = {0.5f, 1.0f, 2.0f, NAN, 3.0f, 4.0f}, ys[3] = {0, 1, 0};
	struct dataset train, test;
	struct loss_spec spec;
	struct loss_config mse = {LOSS_MEAN_SQUARED_ERROR, 0};
	int has_test;
	(void)state;

	assert_non_null(mkdtemp(dir));
	static const char hx[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }";
	static const char hy[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
	const char *heads[2] = {hx, hy}, *names[2] = {"x_train.npy", "y_train.npy"};
	const float *data[2] = {xs, ys};
	size_t sizes[2] = {sizeof(xs), sizeof(ys)};
	for (int a = 0; a < 2; a++) {
		/* magic, version 1.0, the header padded with spaces and a
		 * newline to a multiple of 64 bytes, then the data */
		unsigned char buf[256] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
		size_t total = (10 + strlen(heads[a]) + 1 + 63) / 64 * 64, h = total - 10;
		memset(buf + 10, ' ', h);
		memcpy(buf + 10, heads[a], strlen(heads[a]));
		buf[total - 1] = '\n';
		buf[8] = (unsigned char)h;
		memcpy(buf + total, data[a], sizes[a]);
		snprintf(path, sizeof(path), "%s/%s", dir, names[a]);
		testutil_write_file(path, buf, total + sizes[a]);
	}
	if (dataset_load_numpy(&train, &test, &has_test, dir, err) < 0)
		fail_msg("%s", err);
	assert_int_equal(has_test, 0);
	assert_int_equal(loss_resolve(&spec, &mse, 0, 1, 1, NULL, 0, err), 0);
	assert_int_equal(dataset_check_values(&train, &spec, err), -1);
	testutil_assert_contains(err, "x_train in '");
	testutil_assert_contains(err, "example 1 holds nan, not a finite number");
	dataset_release(&train);
	dataset_release(&test);
	for (int a = 0; a < 2; a++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[a]);
		unlink(path);
	}
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_shuffle_is_a_permutation),
	    cmocka_unit_test(test_shuffle_is_a_pure_function_of_seed_and_pass),
	    cmocka_unit_test(test_shuffle_differs_across_passes_and_seeds),
	    cmocka_unit_test(test_shuffle_draws_every_order_of_three_about_equally),
	    cmocka_unit_test(test_gather_scales_every_pixel_value_exactly_like_keras),
	    cmocka_unit_test(test_gather_picks_the_examples_the_order_names),
	    cmocka_unit_test(test_gather_without_an_order_reads_file_order),
	    cmocka_unit_test(test_stream_gathers_the_same_examples_as_bytes_and_as_floats),
	    cmocka_unit_test(test_load_reads_the_real_fashion_mnist_splits),
	    TEST(test_load_reads_a_small_split_it_wrote),
	    TEST(test_load_refuses_image_and_label_counts_that_disagree),
	    TEST(test_load_refuses_a_label_that_is_not_a_class),
	    TEST(test_load_names_the_missing_file),
	    TEST(test_load_refuses_another_shape_than_the_model_s_from_the_header),
	    TEST(test_load_refuses_counts_that_disagree_from_the_headers),
	    TEST(test_load_asks_whether_the_shape_fits_before_reading),
	    cmocka_unit_test(test_numpy_splits_load_as_keras_datasets_returns_them),
	    cmocka_unit_test(
	        test_a_numpy_split_fits_a_model_of_its_shape_with_a_trailing_axis_of_one),
	    cmocka_unit_test(test_targets_out_of_range_for_the_loss_are_refused_naming_the_example),
	    cmocka_unit_test(test_a_nan_in_float_inputs_is_refused_naming_the_example),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
