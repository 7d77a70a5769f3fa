/* keras_zip.h - one member of a zip archive held in memory: how a .keras
 * file (keras/src/saving/saving_lib.py: a zip of metadata.json,
 * config.json and model.weights.h5) gives up its config.json.
 *
 * The archive is the bytes of a file nobody vouches for, already read
 * whole and capped: minizip reads it through seek and read functions over
 * that buffer, each bounded by its length, so no offset in the archive can
 * reach past it, and the member is read into a buffer no larger than the
 * caller's cap whatever its header says, its CRC checked at the end.
 */
#ifndef MWJ_KERAS_ZIP_H
#define MWJ_KERAS_ZIP_H

#include <stddef.h>

/* 1 if the len bytes at buf start as a zip archive does ("PK\3\4", or
 * "PK\5\6" for an empty one), else 0. */
int keras_zip_is_zip(const void *buf, size_t len);

/* Reads member name (at the archive's root, matched exactly) of the
 * archive buf (len bytes) into a malloc'd buffer, NUL-terminated, that the
 * caller frees, of *out_len <= max bytes. Returns 0, or -1 with a message
 * in err (ERR_LEN): not a zip archive, no such member, an encrypted or
 * larger member, a damaged one (bad CRC, a short or failed inflate). */
int keras_zip_read(const void *buf, size_t len, const char *name, size_t max, char **out,
                   size_t *out_len, char *err);

#endif
