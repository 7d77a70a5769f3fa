/* atomic_file.h - crash-safe whole-file writes.
 *
 * atomic_file_write() writes data to "<path>.tmp.<pid>", fsyncs it, renames it
 * over path and fsyncs the directory, so that after a crash a reader sees
 * either the old file or the new one, never a mix. On any failure the temp
 * file is removed, the old file at path is untouched, and -1 is returned with
 * a message in err (ERR_LEN) naming the failing call and path.
 */
#ifndef MWJ_ATOMIC_FILE_H
#define MWJ_ATOMIC_FILE_H

#include <stddef.h>

/* Writes len bytes of data. mode is the new file's permission bits. */
int atomic_file_write(const char *path, const void *data, size_t len, unsigned mode, char *err);

/* Gathers n buffers (bufs[i], lens[i]) into one atomic write. */
int atomic_file_writev(const char *path, const void *const *bufs, const size_t *lens, int n,
                       unsigned mode, char *err);

/* Reads a whole file into a malloc'd buffer the caller frees, refusing files
 * larger than max_len. Returns 0, or -1 with a message naming the path. */
int file_read_all(const char *path, size_t max_len, unsigned char **out, size_t *out_len,
                  char *err);

/* Creates dir and its missing parents (mode 0755). Returns 0 or -1. */
int mkdir_p(const char *dir, char *err);

/* Creates dir as a writer would (mkdir_p), then creates and removes a file
 * in it ("<dir>/.mwj-write-check.<pid>"), so that a folder this process
 * cannot write is found at start, before work that would be lost with it.
 * Returns 0, or -1 with a message naming the failing call and path. */
int dir_check_writable(const char *dir, char *err);

#endif
