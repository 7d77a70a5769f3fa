/* atomic_file.c - crash-safe whole-file writes: temp file, fsync, rename,
 * fsync the directory. */
#include "atomic_file.h"

#include "err.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Writes all len bytes, resuming after short writes and signals. */
static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		size_t chunk = len < SSIZE_MAX ? len : SSIZE_MAX;
		ssize_t n = write(fd, p, chunk);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			/* A regular file never legitimately takes zero bytes. */
			errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Opens the temp file. A leftover from an earlier process that had our pid
 * (pid 1 in every container restart) is ours to remove: without this one
 * crash would block every later write. */
static int open_temp(const char *tmp, unsigned mode)
{
	int fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, (mode_t)mode);

	if (fd >= 0 || errno != EEXIST)
		return fd;
	if (unlink(tmp) < 0) {
		errno = EEXIST;
		return -1;
	}
	return open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, (mode_t)mode);
}

/* fsyncs the directory holding path, so that the rename itself is durable. */
static int sync_parent_dir(const char *path, char *err)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd;
	int rc = 0;

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_set(err, "open directory '%s': %s", dir, strerror(errno));
	/* Some file systems cannot sync a directory and say EINVAL; there is
	 * nothing more to do for them. */
	if (fsync(fd) < 0 && errno != EINVAL)
		rc = err_set(err, "fsync directory '%s': %s", dir, strerror(errno));
	close(fd);
	return rc;
}

int atomic_file_writev(const char *path, const void *const *bufs, const size_t *lens, int n,
                       unsigned mode, char *err)
{
	char tmp[PATH_MAX];
	int fd = -1;
	int rc = -1;
	int len;

	if (path == NULL || path[0] == '\0')
		return err_set(err, "atomic write: empty path");
	if (n < 0 || (n > 0 && (bufs == NULL || lens == NULL)))
		return err_set(err, "atomic write '%s': bad buffer list", path);
	len = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	if (len < 0 || (size_t)len >= sizeof(tmp))
		return err_set(err, "atomic write '%s': path too long", path);

	fd = open_temp(tmp, mode);
	if (fd < 0)
		return err_set(err, "open '%s': %s", tmp, strerror(errno));
	for (int i = 0; i < n; i++) {
		if (lens[i] > 0 && write_all(fd, bufs[i], lens[i]) < 0) {
			err_set(err, "write '%s': %s", tmp, strerror(errno));
			goto out;
		}
	}
	if (fsync(fd) < 0) {
		err_set(err, "fsync '%s': %s", tmp, strerror(errno));
		goto out;
	}
	/* close() can report a delayed write error (NFS, quotas); after it the
	 * descriptor is gone whatever it returned. */
	if (close(fd) < 0) {
		fd = -1;
		err_set(err, "close '%s': %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		err_set(err, "rename '%s' to '%s': %s", tmp, path, strerror(errno));
		goto out;
	}
	/* The new file is in place; the temp name no longer exists. */
	tmp[0] = '\0';
	rc = sync_parent_dir(path, err);
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0 && tmp[0] != '\0')
		unlink(tmp);
	return rc;
}

int atomic_file_write(const char *path, const void *data, size_t len, unsigned mode, char *err)
{
	const void *bufs[1] = {data};
	const size_t lens[1] = {len};

	return atomic_file_writev(path, bufs, lens, 1, mode, err);
}

/* Grows *buf to at least want bytes; out of memory is fatal (see err.h). */
static unsigned char *grow(unsigned char *buf, size_t want)
{
	unsigned char *p = realloc(buf, want);

	if (p == NULL) {
		free(buf);
		die("out of memory allocating %zu bytes", want);
	}
	return p;
}

int file_read_all(const char *path, size_t max_len, unsigned char **out, size_t *out_len, char *err)
{
	unsigned char *buf = NULL;
	size_t cap = 4096;
	size_t len = 0;
	struct stat st;
	int fd = -1;
	int rc = -1;

	/* max_len + 1 bytes must be addressable to detect an oversized file. */
	if (max_len == SIZE_MAX)
		max_len--;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(err, "open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		err_set(err, "stat '%s': %s", path, strerror(errno));
		goto out;
	}
	/* The size is only a hint (files in /proc say 0, files grow); the read
	 * loop below enforces max_len whatever it says. */
	if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max_len) {
		err_set(err, "read '%s': file is %jd bytes, more than the limit of %zu", path,
		        (intmax_t)st.st_size, max_len);
		goto out;
	}
	/* Room for one byte more than expected, so that EOF is seen without
	 * growing the buffer. */
	if (S_ISREG(st.st_mode))
		cap = (size_t)st.st_size + 1;
	else if (cap > max_len)
		cap = max_len + 1;
	buf = grow(NULL, cap);

	for (;;) {
		ssize_t n;

		if (len == cap) {
			/* One byte past max_len is enough to know the file is too big. */
			if (cap > max_len) {
				err_set(err, "read '%s': file is more than the limit of %zu bytes",
				        path, max_len);
				goto out;
			}
			cap = cap > max_len / 2 ? max_len + 1 : cap * 2;
			buf = grow(buf, cap);
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err_set(err, "read '%s': %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*out = buf;
	*out_len = len;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

int mkdir_p(const char *dir, char *err)
{
	char buf[PATH_MAX];
	struct stat st;
	size_t len;

	if (dir == NULL || dir[0] == '\0')
		return err_set(err, "mkdir: empty path");
	len = strlen(dir);
	if (len >= sizeof(buf))
		return err_set(err, "mkdir '%s': path too long", dir);
	memcpy(buf, dir, len + 1);

	/* Create each prefix ending before a '/', then the whole path. */
	for (char *p = buf + 1; *p != '\0'; p++) {
		if (*p != '/' || p[-1] == '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return err_set(err, "mkdir '%s': %s", buf, strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return err_set(err, "mkdir '%s': %s", buf, strerror(errno));
	if (stat(buf, &st) < 0)
		return err_set(err, "stat '%s': %s", buf, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return err_set(err, "mkdir '%s': exists and is not a directory", buf);
	return 0;
}

int dir_check_writable(const char *dir, char *err)
{
	char probe[PATH_MAX];
	int len, fd;

	if (mkdir_p(dir, err) < 0)
		return -1;
	len = snprintf(probe, sizeof(probe), "%s/.mwj-write-check.%ld", dir, (long)getpid());
	if (len < 0 || (size_t)len >= sizeof(probe))
		return err_set(err, "'%s': path too long", dir);
	/* The same O_EXCL create, with the same leftover rule, as a write. */
	fd = open_temp(probe, 0600);
	if (fd < 0)
		return err_set(err, "create '%s': %s", probe, strerror(errno));
	close(fd);
	if (unlink(probe) < 0)
		return err_set(err, "unlink '%s': %s", probe, strerror(errno));
	return 0;
}
