/* file_read.c - bounded reads of files nobody vouches for; see file_read.h. */
#include "file_read.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "crc32c.h"
#include "err.h"

#define CRC_CHUNK 16384 /* read at a time by file_crc32c, on the stack */

/* What a file that is not regular is, for messages. */
static const char *kind_of(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a file";
}

int file_open_regular(const char *path, struct stat *st, char *err)
{
	/* O_NONBLOCK: a FIFO in the file's place must not hang the open; it
	 * changes nothing for the regular file that is read. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0) {
		err_set(err, "open '%s': %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, st) < 0) {
		int e = errno;
		close(fd);
		err_set(err, "stat '%s': %s", path, strerror(e));
		errno = e;
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		err_set(err, "'%s': not a regular file (%s)", path, kind_of(st->st_mode));
		errno = EINVAL;
		return -1;
	}
	return fd;
}

int file_read_exact(int fd, void *buf, size_t n, const char *path, char *err)
{
	unsigned char *p = buf;
	size_t got = 0;

	while (got < n) {
		ssize_t k = read(fd, p + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return err_set(err, "read '%s': %s", path, strerror(errno));
		if (k == 0)
			return err_set(err, "read '%s': the file shrank while it was read", path);
		got += (size_t)k;
	}
	return 0;
}

int file_crc32c(int fd, uint64_t n, uint32_t *crc, const char *path, char *err)
{
	unsigned char buf[CRC_CHUNK];

	while (n > 0) {
		size_t want = n < sizeof(buf) ? (size_t)n : sizeof(buf);
		if (file_read_exact(fd, buf, want, path, err) < 0)
			return -1;
		*crc = crc32c_update(*crc, buf, want);
		n -= want;
	}
	return 0;
}

int crc_reader_open(struct crc_reader *r, const char *path, char *err)
{
	struct stat st;

	int fd = file_open_regular(path, &st, err);

	*r = (struct crc_reader){.path = path, .fd = -1};
	if (fd < 0)
		return -1;
	r->fd = fd;
	r->len = (uint64_t)st.st_size;
	return 0;
}

int crc_reader_take(struct crc_reader *r, void *buf, size_t n, char *err)
{
	if (file_read_exact(r->fd, buf, n, r->path, err) < 0)
		return -1;
	r->crc = crc32c_update(r->crc, buf, n);
	r->off += n;
	return 0;
}

int crc_reader_finish(struct crc_reader *r, char *err)
{
	unsigned char stored[4];

	if (r->len < r->off + sizeof(stored))
		return err_set(err, "'%s': no room for a checksum after %llu bytes", r->path,
		               (unsigned long long)r->off);
	if (file_crc32c(r->fd, r->len - sizeof(stored) - r->off, &r->crc, r->path, err) < 0 ||
	    file_read_exact(r->fd, stored, sizeof(stored), r->path, err) < 0)
		return -1;
	r->off = r->len;
	return r->crc == bytes_get_le32(stored);
}

void crc_reader_close(struct crc_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}
