/* gzsource.c - a file's content, raw or inflated member by member; see
 * gzsource.h. */
#include "gzsource.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "err.h"

#define NAME_LEN (PATH_MAX + 8)
/* windowBits for inflateInit2: the largest window, gzip framing only. */
#define GZIP_WINDOW (15 + 16)

struct gzsource {
	int fd;
	char name[NAME_LEN];
	long long size;        /* of a regular file, for messages; -1 otherwise */
	unsigned char *in;     /* GZSOURCE_BUFFER bytes of the file */
	z_stream zs;           /* next_in/avail_in: what is left in in[], raw or not */
	int gz;                /* the content is inflated */
	int eof;               /* read() has said the file ends */
	int between;           /* a member has ended: another or the end must follow */
	int cut_short;         /* the file ended inside a member */
	unsigned long long at; /* bytes of the file consumed so far */
};

/* Reads the file into buf until *got of its n bytes are there or the
 * file ends. */
static int read_file(struct gzsource *s, unsigned char *buf, size_t n, size_t *got, char *err)
{
	while (*got < n && !s->eof) {
		ssize_t k = read(s->fd, buf + *got, n - *got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return err_set(err, "'%s': read: %s", s->name, strerror(errno));
		if (k == 0)
			s->eof = 1;
		*got += (size_t)k;
	}
	return 0;
}

/* Moves what is left to the front of in[] and reads more behind it, until
 * the buffer is full or the file ends. */
static int fill(struct gzsource *s, char *err)
{
	size_t have = s->zs.avail_in;

	if (have > 0 && s->zs.next_in != s->in)
		memmove(s->in, s->zs.next_in, have);
	s->zs.next_in = s->in;
	if (read_file(s, s->in, GZSOURCE_BUFFER, &have, err) < 0)
		return -1;
	s->zs.avail_in = (uInt)have;
	return 0;
}

struct gzsource *gzsource_new(int fd, const char *name, char *err)
{
	struct gzsource *s = xcalloc(1, sizeof(*s));
	struct stat st;

	s->fd = fd;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->size = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
	s->in = xmalloc(GZSOURCE_BUFFER);
	s->zs.next_in = s->in;
	if (fill(s, err) < 0) {
		gzsource_free(s);
		return NULL;
	}
	s->gz = s->zs.avail_in >= 2 && s->in[0] == 0x1f && s->in[1] == 0x8b;
	if (s->gz && inflateInit2(&s->zs, GZIP_WINDOW) != Z_OK) {
		s->gz = 0;
		gzsource_free(s);
		die("inflateInit2: out of memory");
	}
	return s;
}

/* Copies what is buffered, then reads the file straight into buf. */
static int read_raw(struct gzsource *s, unsigned char *buf, size_t n, size_t *got, char *err)
{
	size_t take = s->zs.avail_in < n ? s->zs.avail_in : n;

	memcpy(buf, s->zs.next_in, take);
	s->zs.next_in += take;
	s->zs.avail_in -= (uInt)take;
	*got = take;
	return read_file(s, buf, n, got, err);
}

/* Between members: another member starts here, the file ends cleanly
 * (returns 1), or what follows is junk (-1). */
static int next_member(struct gzsource *s, char *err)
{
	if (s->zs.avail_in < 2 && !s->eof && fill(s, err) < 0)
		return -1;
	if (s->zs.avail_in == 0)
		return 1;
	if (s->zs.avail_in >= 2 && s->zs.next_in[0] == 0x1f && s->zs.next_in[1] == 0x8b) {
		inflateReset(&s->zs);
		s->between = 0;
		return 0;
	}
	if (s->size >= 0)
		return err_set(err,
		               "'%s': %lld bytes of junk after the gzip member that ends at byte "
		               "%llu (they are not another gzip member)",
		               s->name, s->size - (long long)s->at, s->at);
	return err_set(err, "'%s': junk after the gzip member that ends at byte %llu", s->name,
	               s->at);
}

static int read_gz(struct gzsource *s, unsigned char *buf, size_t n, size_t *got, char *err)
{
	*got = 0;
	while (*got < n) {
		if (s->between) {
			int rc = next_member(s, err);
			if (rc != 0)
				return rc < 0 ? -1 : 0;
		}
		if (s->zs.avail_in == 0 && !s->eof && fill(s, err) < 0)
			return -1;
		uInt want = n - *got < UINT_MAX ? (uInt)(n - *got) : UINT_MAX, in = s->zs.avail_in;
		s->zs.next_out = buf + *got;
		s->zs.avail_out = want;
		int rc = inflate(&s->zs, Z_NO_FLUSH);
		*got += want - s->zs.avail_out;
		s->at += in - s->zs.avail_in;
		if (rc == Z_STREAM_END) {
			s->between = 1;
		} else if (rc == Z_BUF_ERROR && s->zs.avail_in == 0 && s->eof) {
			s->cut_short = 1;
			return 0;
		} else if (rc != Z_OK && (rc != Z_BUF_ERROR || s->zs.avail_in > 0)) {
			/* No progress with input and room left would loop: zlib
			 * never does it, and it is reported if it ever did. */
			return err_set(err, "'%s': corrupt gzip stream: %s", s->name,
			               s->zs.msg ? s->zs.msg : zError(rc));
		}
	}
	return 0;
}

int gzsource_read(struct gzsource *s, void *buf, size_t n, size_t *got, char *err)
{
	*got = 0;
	return s->gz ? read_gz(s, buf, n, got, err) : read_raw(s, buf, n, got, err);
}

int gzsource_cut_short(const struct gzsource *s)
{
	return s->cut_short;
}

void gzsource_free(struct gzsource *s)
{
	if (s == NULL)
		return;
	if (s->gz)
		inflateEnd(&s->zs);
	if (s->fd >= 0)
		close(s->fd);
	free(s->in);
	free(s);
}
