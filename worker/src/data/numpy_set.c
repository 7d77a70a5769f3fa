/* numpy_set.c - a training set as NumPy arrays; see numpy_set.h.
 *
 * Both forms are read into the same four arrays by a loader of their own
 * (load_npz, load_folder), and then one set of checks runs on the shapes,
 * so that a .npz and a folder of the same arrays are refused alike.
 */
#include "numpy_set.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "npz.h"

#define NUMPY_SET_LISTED 8 /* member names a message lists before "..." */

/* The four arrays, by the names keras.datasets gives them. */
static const char *const names[4] = {"x_train", "y_train", "x_test", "y_test"};

static struct npy_array *slot(struct numpy_set *s, int i)
{
	struct npy_array *slots[4] = {&s->x_train, &s->y_train, &s->x_test, &s->y_test};

	return slots[i];
}

/* "it holds a, b, c": what a .npz has instead, for the message that says
 * x_train or y_train is missing. */
static void list_members(const struct npz *z, char *buf, size_t len)
{
	size_t at = 0, n = npz_count(z);

	buf[0] = '\0';
	for (size_t i = 0; i < n && at < len; i++) {
		int k = i == NUMPY_SET_LISTED
		            ? snprintf(buf + at, len - at, ", ...")
		            : snprintf(buf + at, len - at, "%s%s", i ? ", " : "", npz_name(z, i));

		if (k < 0 || i == NUMPY_SET_LISTED)
			break;
		at += (size_t)k;
	}
}

static int load_npz(struct numpy_set *s, const char *path, char *err)
{
	struct npz *z = NULL;
	char held[256];
	int rc = -1;

	if (npz_open(&z, path, err) != 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		if (npz_has(z, names[i]))
			continue;
		list_members(z, held, sizeof(held));
		err_set(err,
		        "'%s': no %s array (it holds %s); save with np.savez(path, "
		        "x_train=x, y_train=y)",
		        path, names[i], held[0] ? held : "none");
		goto out;
	}
	s->has_test = npz_has(z, "x_test") && npz_has(z, "y_test");
	if (!s->has_test && (npz_has(z, "x_test") || npz_has(z, "y_test"))) {
		err_set(err, "'%s': %s without %s", path,
		        npz_has(z, "x_test") ? "x_test" : "y_test",
		        npz_has(z, "x_test") ? "y_test" : "x_test");
		goto out;
	}
	for (int i = 0; i < (s->has_test ? 4 : 2); i++)
		if (npz_read(z, names[i], slot(s, i), err) != 0)
			goto out;
	rc = 0;
out:
	npz_close(z);
	return rc;
}

/* "<dir>/<name>.npy" into buf; whether it exists (0 or 1), or -1 if the
 * path is too long or cannot be looked at. */
static int folder_file(char *buf, size_t len, const char *dir, const char *name, char *err)
{
	struct stat st;
	int n = snprintf(buf, len, "%s/%s.npy", dir, name);

	if (n < 0 || (size_t)n >= len)
		return err_set(err, "'%s': path too long", dir);
	if (stat(buf, &st) == 0)
		return 1;
	if (errno == ENOENT)
		return 0;
	return err_set(err, "stat '%s': %s", buf, strerror(errno));
}

static int load_folder(struct numpy_set *s, const char *dir, char *err)
{
	char path[4][PATH_MAX];
	int have[4];

	for (int i = 0; i < 4; i++) {
		have[i] = folder_file(path[i], sizeof(path[i]), dir, names[i], err);
		if (have[i] < 0)
			return -1;
	}
	for (int i = 0; i < 2; i++)
		if (!have[i])
			return err_set(err, "'%s': no %s.npy in the folder (np.save it there)", dir,
			               names[i]);
	if (have[2] != have[3])
		return err_set(err, "'%s': %s.npy without %s.npy", dir,
		               have[2] ? "x_test" : "y_test", have[2] ? "y_test" : "x_test");
	s->has_test = have[2];
	for (int i = 0; i < (s->has_test ? 4 : 2); i++)
		if (npy_open(slot(s, i), path[i], err) != 0)
			return -1;
	return 0;
}

/* x and y of one split: x an array of examples, y as many entries. */
static int check_split(const struct npy_array *x, const struct npy_array *y, const char *xname,
                       const char *yname, const char *path, char *err)
{
	if (x->rank == 0)
		return err_set(err, "'%s': %s is a scalar, not an array of examples", path, xname);
	if (y->rank == 0)
		return err_set(err, "'%s': %s is a scalar, not one label an example", path, yname);
	if (x->shape[0] == 0)
		return err_set(err, "'%s': %s holds no examples", path, xname);
	if (y->shape[0] != x->shape[0])
		return err_set(err,
		               "'%s': %s holds %" PRIu64 " entries but %s %" PRIu64 " examples",
		               path, yname, y->shape[0], xname, x->shape[0]);
	return 0;
}

/* The checks of numpy_set.h, the same for both forms. */
static int check_set(const struct numpy_set *s, const char *path, char *err)
{
	const struct npy_array *tr = &s->x_train, *te = &s->x_test;
	char a[NPY_SHAPE_STR_LEN], b[NPY_SHAPE_STR_LEN];

	if (check_split(tr, &s->y_train, "x_train", "y_train", path, err) != 0)
		return -1;
	if (!s->has_test)
		return 0;
	if (check_split(te, &s->y_test, "x_test", "y_test", path, err) != 0)
		return -1;
	if (te->rank != tr->rank || memcmp(te->shape + 1, tr->shape + 1,
	                                   (size_t)(tr->rank - 1) * sizeof(tr->shape[0])) != 0)
		return err_set(err, "'%s': x_test examples are %s but x_train's are %s", path,
		               npy_shape_str(a, sizeof(a), te->shape + 1, te->rank - 1),
		               npy_shape_str(b, sizeof(b), tr->shape + 1, tr->rank - 1));
	return 0;
}

int numpy_set_open(struct numpy_set *s, const char *path, char *err)
{
	struct stat st;
	int rc;

	memset(s, 0, sizeof(*s));
	if (stat(path, &st) != 0)
		return err_set(err, "'%s': %s", path, strerror(errno));
	rc = S_ISDIR(st.st_mode) ? load_folder(s, path, err) : load_npz(s, path, err);
	if (rc == 0)
		rc = check_set(s, path, err);
	if (rc != 0)
		numpy_set_release(s);
	return rc;
}

void numpy_set_release(struct numpy_set *s)
{
	if (s == NULL)
		return;
	for (int i = 0; i < 4; i++)
		npy_release(slot(s, i));
	s->has_test = 0;
}
