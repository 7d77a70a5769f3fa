/* npz.h - NumPy .npz archives: what np.savez and np.savez_compressed write,
 * a zip (zip64 records included) of members "<name>.npy", one per array.
 *
 * minizip (zlib's contrib, <unzip.h>) reads the directory, through a
 * descriptor this module opened once (so that the file checked is the file
 * read). A member is then read in one of two ways:
 *   - STORED (method 0, np.savez): the member's bytes are memory-mapped
 *     where they lie in the zip and the array points into the mapping; their
 *     CRC-32 is checked once, when the member is read.
 *   - DEFLATED (method 8, np.savez_compressed): the member is inflated into
 *     a buffer on the heap that grows as bytes arrive (never sized by what
 *     the zip declares), up to NPZ_MAX_INFLATE_BYTES; minizip checks the
 *     CRC-32 at the end.
 * Any other method, an encrypted member, or sizes that disagree (the
 * directory's, the local header's, the .npy header's, the bytes there
 * really are) are refused. So is a deflated member with zip64 fields
 * (Python writes them past 2 GiB), which Debian's minizip 1.1 misreads
 * (npz.c says how); stored zip64 members are read, from the directory as
 * npz.c reads it itself. Each array owns what its data lives in (its own
 * mapping or buffer), so it may outlive the archive handle.
 */
#ifndef MWJ_NPZ_H
#define MWJ_NPZ_H

#include <stddef.h>

#include "npy.h"

#define NPZ_MAX_INFLATE_BYTES ((size_t)64 << 30) /* one inflated member */
#define NPZ_MAX_MEMBERS       65536u             /* np.savez writes one per array */

struct npz;

/* Opens the .npz at path (a regular file only) and reads its directory.
 * Returns 0 with *z set (the caller closes it with npz_close), or -1 with
 * a message in err (ERR_LEN) naming path, e.g. "'/d/set.npz': not a zip
 * file", and *z NULL. */
int npz_open(struct npz **z, const char *path, char *err);

/* Whether the archive holds an array called name, i.e. a member
 * "<name>.npy" (np.savez(path, x_train=a) writes "x_train.npy"). */
int npz_has(const struct npz *z, const char *name);

/* The members, for messages ("it holds arr_0, arr_1"): how many, and the
 * name of member i with ".npy" removed where it ends so. The string is
 * borrowed from z. */
size_t npz_count(const struct npz *z);
const char *npz_name(const struct npz *z, size_t i);

/* Reads the array called name (see npz_has) into a, which owns its data
 * (npy_release frees it) and may outlive z. Returns 0, or -1 with a
 * message naming the file and the member, e.g. "'/d/set.npz': member
 * 'x_train.npy': crc-32 mismatch: the data is damaged", and a zeroed. */
int npz_read(struct npz *z, const char *name, struct npy_array *a, char *err);

/* Closes the archive; arrays read from it stay valid. Accepts NULL. */
void npz_close(struct npz *z);

#endif
