/* file_read.h - reading files nobody vouches for: model files, backups,
 * key files.
 *
 * Such a file may be anything a path can name: a device that never ends
 * (/dev/zero), a FIFO that never opens, a sparse file of gigabytes behind
 * a header that says kilobytes. So only regular files are opened, never
 * blocking on the way, and every read is of a length the caller has
 * already checked against the file's size and its header: nothing here
 * grows a buffer to whatever the file turns out to hold.
 */
#ifndef MWJ_FILE_READ_H
#define MWJ_FILE_READ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Opens path for reading and fills *st. Anything but a regular file (a
 * device, a FIFO, a socket, a directory) is refused without being read
 * and without blocking, naming what it is. Returns the descriptor, or -1
 * with a message naming path; errno is the failing call's, or EINVAL for
 * a file of another kind. */
int file_open_regular(const char *path, struct stat *st, char *err);

/* Reads exactly n bytes of fd into buf, across short reads and signals.
 * Returns 0, or -1 with a message naming path: the read error, or that
 * the file ended first (it shrank after its size was taken). */
int file_read_exact(int fd, void *buf, size_t n, const char *path, char *err);

/* Reads the next n bytes of fd through a small buffer of its own, adding
 * them to *crc (CRC-32C, crc32c.h), so that a file of any length is
 * checksummed in a few kilobytes of memory. Errors as file_read_exact. */
int file_crc32c(int fd, uint64_t n, uint32_t *crc, const char *path, char *err);

/* --- Files whose last 4 bytes are the CRC-32C of all before them --- */

/* Such a file (model files, backups) read front to back, with the CRC of
 * what has been read so far. The caller reads no further than len - 4
 * before crc_reader_finish. */
struct crc_reader {
	const char *path; /* borrowed, for messages */
	int fd;
	uint64_t len; /* the file's size when it was opened */
	uint64_t off; /* bytes read so far */
	uint32_t crc; /* CRC-32C of them */
};

/* Opens path as file_open_regular does. Returns 0, or -1 with its
 * message; r needs no close then. */
int crc_reader_open(struct crc_reader *r, const char *path, char *err);

/* Reads the next n bytes into buf and into the CRC. Returns 0 or -1 with
 * a message, as file_read_exact. */
int crc_reader_take(struct crc_reader *r, void *buf, size_t n, char *err);

/* Reads the rest of the file (a few kilobytes at a time: the caller need
 * not hold it) and compares the CRC with the stored one. Returns 1 if
 * they match, 0 if not, -1 with a message if the file cannot be read. */
int crc_reader_finish(struct crc_reader *r, char *err);

/* Closes the file; accepts a reader whose open failed, and a closed one. */
void crc_reader_close(struct crc_reader *r);

#endif
