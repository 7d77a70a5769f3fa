/* numpy_set.h - a training set in NumPy form, what `--data PATH` names when
 * it is not a folder of IDX files: the arrays keras.datasets returns,
 * (x_train, y_train), (x_test, y_test), as a user saves them.
 *
 * PATH is either
 *   - a .npz (any name: a regular file) holding x_train and y_train, and
 *     optionally x_test and y_test: np.savez(path, x_train=x, y_train=y,
 *     ...) or np.savez_compressed; or
 *   - a folder holding x_train.npy and y_train.npy, and optionally
 *     x_test.npy and y_test.npy: np.save of each.
 * x is (N, ...) examples of any shape (rank 1, (N,), is one feature an
 * example); y has N entries along its first dimension. The test split is
 * both arrays or neither. What is checked here is what the arrays' shapes
 * say of each other; the caller checks them against the model and the
 * labels against the classes (npy_get_i64).
 *
 * The arrays are mapped or inflated as npz.h and npy.h say, and owned by
 * the set.
 */
#ifndef MWJ_NUMPY_SET_H
#define MWJ_NUMPY_SET_H

#include "npy.h"

struct numpy_set {
	struct npy_array x_train, y_train; /* (N, ...), (N, ...) */
	struct npy_array x_test, y_test;   /* (M, ...) as x_train's examples; zeroed if absent */
	int has_test;
};

/* Opens the set at path: a folder of .npy files or a .npz. Returns 0, or
 * -1 with a message in err (ERR_LEN) naming the file and the array, e.g.
 * "'/d/set.npz': y_train holds 59999 entries but x_train 60000 examples",
 * and s zeroed. */
int numpy_set_open(struct numpy_set *s, const char *path, char *err);

/* Releases the four arrays and zeroes s. Accepts NULL and a zeroed set. */
void numpy_set_release(struct numpy_set *s);

#endif
