/* keras_zip.c - one member of a zip archive in memory, through minizip
 * with I/O functions over the caller's buffer. */
#include "keras_zip.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <unzip.h>

#include "err.h"

/* The archive as minizip's stream: every read and seek stays within len. */
struct mem_stream {
	const unsigned char *buf;
	size_t len;
	size_t pos;
};

/* minizip passes the "file name" it was opened with to open: here the
 * stream itself. */
static voidpf ZCALLBACK mem_open(voidpf opaque, const void *name, int mode)
{
	(void)opaque;
	if ((mode & ZLIB_FILEFUNC_MODE_READWRITEFILTER) != ZLIB_FILEFUNC_MODE_READ)
		return NULL;
	return (voidpf)name;
}

static uLong ZCALLBACK mem_read(voidpf opaque, voidpf stream, void *buf, uLong size)
{
	struct mem_stream *m = stream;
	size_t left = m->len - m->pos;
	size_t n = size < left ? size : left;

	(void)opaque;
	memcpy(buf, m->buf + m->pos, n);
	m->pos += n;
	return (uLong)n;
}

static uLong ZCALLBACK mem_write(voidpf opaque, voidpf stream, const void *buf, uLong size)
{
	(void)opaque, (void)stream, (void)buf, (void)size;
	return 0;
}

static ZPOS64_T ZCALLBACK mem_tell(voidpf opaque, voidpf stream)
{
	const struct mem_stream *m = stream;

	(void)opaque;
	return m->pos;
}

/* Positions outside [0, len] are refused, as a file's lseek past the end
 * would only give reads of nothing. */
static long ZCALLBACK mem_seek(voidpf opaque, voidpf stream, ZPOS64_T offset, int origin)
{
	struct mem_stream *m = stream;
	ZPOS64_T base;

	(void)opaque;
	switch (origin) {
	case ZLIB_FILEFUNC_SEEK_SET:
		base = 0;
		break;
	case ZLIB_FILEFUNC_SEEK_CUR:
		base = m->pos;
		break;
	case ZLIB_FILEFUNC_SEEK_END:
		base = m->len;
		break;
	default:
		return -1;
	}
	if (offset > m->len - base)
		return -1;
	m->pos = (size_t)(base + offset);
	return 0;
}

static int ZCALLBACK mem_close(voidpf opaque, voidpf stream)
{
	(void)opaque, (void)stream;
	return 0;
}

static int ZCALLBACK mem_error(voidpf opaque, voidpf stream)
{
	(void)opaque, (void)stream;
	return 0;
}

int keras_zip_is_zip(const void *buf, size_t len)
{
	const unsigned char *b = buf;

	return len >= 4 && b[0] == 'P' && b[1] == 'K' &&
	       ((b[2] == 3 && b[3] == 4) || (b[2] == 5 && b[3] == 6));
}

/* Reads the current member, already opened, of size bytes into out (size
 * + 1 bytes). The CRC is checked by unzCloseCurrentFile once all is read. */
static int read_member(unzFile uf, char *out, size_t size, const char *name, char *err)
{
	size_t got = 0;
	int n, rc;

	while (got < size) {
		unsigned chunk = size - got > (1u << 20) ? 1u << 20 : (unsigned)(size - got);

		n = unzReadCurrentFile(uf, out + got, chunk);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	rc = unzCloseCurrentFile(uf);
	if (got < size)
		return err_set(err, "member '%s': damaged (%zu of %zu bytes could be read)", name,
		               got, size);
	if (rc == UNZ_CRCERROR)
		return err_set(err, "member '%s': damaged (CRC mismatch)", name);
	if (rc != UNZ_OK)
		return err_set(err, "member '%s': damaged (minizip error %d)", name, rc);
	out[size] = '\0';
	return 0;
}

int keras_zip_read(const void *buf, size_t len, const char *name, size_t max, char **out,
                   size_t *out_len, char *err)
{
	struct mem_stream m = {buf, len, 0};
	zlib_filefunc64_def io = {mem_open, mem_read,  mem_write, mem_tell,
	                          mem_seek, mem_close, mem_error, NULL};
	unz_file_info64 info;
	unzFile uf = NULL;
	char *data = NULL;
	int rc = -1;

	*out = NULL;
	*out_len = 0;
	uf = unzOpen2_64(&m, &io);
	if (uf == NULL)
		return err_set(err, "not a zip archive that can be read (no central directory)");
	if (unzLocateFile(uf, name, 1) != UNZ_OK) {
		err_set(err, "no member '%s' in the archive", name);
		goto out;
	}
	if (unzGetCurrentFileInfo64(uf, &info, NULL, 0, NULL, 0, NULL, 0) != UNZ_OK) {
		err_set(err, "member '%s': damaged (unreadable header)", name);
		goto out;
	}
	if (info.flag & 1) {
		err_set(err, "member '%s': encrypted", name);
		goto out;
	}
	if (info.uncompressed_size > max) {
		err_set(err, "member '%s': %llu bytes, more than the %zu a model may hold", name,
		        (unsigned long long)info.uncompressed_size, max);
		goto out;
	}
	if (unzOpenCurrentFile(uf) != UNZ_OK) {
		err_set(err, "member '%s': cannot be read (compression method %lu)", name,
		        info.compression_method);
		goto out;
	}
	data = xmalloc((size_t)info.uncompressed_size + 1);
	if (read_member(uf, data, (size_t)info.uncompressed_size, name, err) < 0)
		goto out;
	*out = data;
	*out_len = (size_t)info.uncompressed_size;
	data = NULL;
	rc = 0;
out:
	free(data);
	unzClose(uf);
	return rc;
}
