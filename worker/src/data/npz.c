/* npz.c - NumPy .npz archives through minizip; see npz.h.
 *
 * minizip reads through the descriptor opened here (pread, via its ioapi),
 * not through a second fopen of the path, so the directory it reads and the
 * bytes mapped for a stored member come from the same file. The directory
 * is listed once at open and sorted by name: duplicate names are refused
 * (zipfile, and so np.load, would take the last, minizip the first), and a
 * lookup is a binary search.
 *
 * Each member's central record is also read here, for its sizes and the
 * offset of its local header: Debian's minizip 1.1 tests the zip64 markers
 * against (unsigned long)-1, which is not 0xffffffff where a long has 64
 * bits, and so keeps the marker as the size or offset of every member that
 * Python wrote zip64 fields for (an array or an offset past 2 GiB). A stored
 * member is therefore found and mapped from those values alone; a deflated
 * one with zip64 fields is refused, since minizip would inflate it wrongly.
 */
#include "npz.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <unzip.h>
#include <zlib.h>

#include "bytes.h"
#include "err.h"
#include "file_read.h"

#define NPZ_FIRST_ALLOC ((size_t)1 << 20) /* of an inflated member; doubled from there */
#define NPZ_READ_CHUNK  (1u << 30)        /* asked of unzReadCurrentFile at a time */
#define NPZ_STORED      0
#define ZIP64_MARK      0xffffffffu /* a size or offset that the zip64 field holds */
#define ZIP_CENTRAL_SIG 0x02014b50u
#define ZIP_LOCAL_SIG   0x04034b50u
#define ZIP_CENTRAL_LEN 46 /* a central record before its name */
#define ZIP_LOCAL_LEN   30 /* a local header before its name */

/* The file as minizip's ioapi sees it: a descriptor and a position. */
struct npz_io {
	int fd;
	uint64_t size, pos;
	int error; /* errno of a failed read, 0 if none */
};

struct npz_member {
	char *name;           /* as in the zip, owned */
	char *key;            /* the name without ".npy", owned; the name if it has none */
	unz64_file_pos where; /* its entry in minizip's directory */
	/* From its central record, zip64 field applied. */
	unsigned flag, method;
	uint32_t crc;
	uint64_t csize, usize, local; /* sizes; offset of the local header */
	int zip64;                    /* some of them came from the zip64 field */
};

struct npz {
	char *path; /* owned, for messages */
	struct npz_io io;
	unzFile uf;
	struct npz_member *members; /* sorted by name */
	size_t count;
};

static unsigned le16(const unsigned char *p)
{
	return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static uint64_t le64(const unsigned char *p)
{
	return bytes_get_le32(p) | (uint64_t)bytes_get_le32(p + 4) << 32;
}

/* Reads up to n bytes at off, across short reads and signals; *got says
 * how many came (fewer at the end of the file or on an error, whose errno
 * goes into io->error). */
static void read_some(struct npz_io *io, void *buf, size_t n, uint64_t off, size_t *got)
{
	*got = 0;
	while (*got < n && off + *got < io->size) {
		ssize_t k = pread(io->fd, (char *)buf + *got, n - *got, (off_t)(off + *got));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			io->error = errno;
		if (k <= 0)
			break;
		*got += (size_t)k;
	}
}

/* Reads exactly n bytes at off; -1 if the file ends first or fails. */
static int read_at(struct npz *z, void *buf, size_t n, uint64_t off)
{
	size_t got;

	read_some(&z->io, buf, n, off, &got);
	return got == n ? 0 : -1;
}

/* --- minizip's file functions over the descriptor --- */

static voidpf ZCALLBACK io_open(voidpf opaque, const void *filename, int mode)
{
	(void)filename;
	(void)mode;
	return opaque;
}

static uLong ZCALLBACK io_read(voidpf opaque, voidpf stream, void *buf, uLong size)
{
	struct npz_io *io = stream;
	size_t got;

	(void)opaque;
	read_some(io, buf, size, io->pos, &got);
	io->pos += got;
	return got;
}

static uLong ZCALLBACK io_write(voidpf opaque, voidpf stream, const void *buf, uLong size)
{
	(void)opaque;
	(void)stream;
	(void)buf;
	(void)size;
	return 0;
}

static ZPOS64_T ZCALLBACK io_tell(voidpf opaque, voidpf stream)
{
	(void)opaque;
	return ((const struct npz_io *)stream)->pos;
}

/* Seeks within the file only: an offset past its end is a damaged record. */
static long ZCALLBACK io_seek(voidpf opaque, voidpf stream, ZPOS64_T offset, int origin)
{
	struct npz_io *io = stream;
	uint64_t base = origin == ZLIB_FILEFUNC_SEEK_CUR   ? io->pos
	                : origin == ZLIB_FILEFUNC_SEEK_END ? io->size
	                                                   : 0;

	(void)opaque;
	if (base > io->size || offset > io->size - base)
		return -1;
	io->pos = base + offset;
	return 0;
}

static int ZCALLBACK io_close(voidpf opaque, voidpf stream)
{
	(void)opaque;
	(void)stream;
	return 0; /* the descriptor is npz_close's to close */
}

static int ZCALLBACK io_error(voidpf opaque, voidpf stream)
{
	(void)opaque;
	return ((const struct npz_io *)stream)->error != 0;
}

/* What a minizip or zlib result code means, for messages. */
static const char *zip_why(int rc, const struct npz_io *io)
{
	switch (rc) {
	case UNZ_ERRNO:
		return io->error != 0 ? strerror(io->error)
		                      : "a record points past the end of the file";
	case UNZ_BADZIPFILE:
		return "a damaged zip record";
	case UNZ_CRCERROR:
		return "crc-32 mismatch: the data is damaged";
	case UNZ_INTERNALERROR:
	case Z_MEM_ERROR:
		return "out of memory";
	case Z_DATA_ERROR:
		return "corrupt deflate data";
	case Z_BUF_ERROR:
		return "the deflate data ends early";
	default:
		return "minizip failed";
	}
}

/* --- The directory --- */

static int member_cmp(const void *a, const void *b)
{
	return strcmp(((const struct npz_member *)a)->name, ((const struct npz_member *)b)->name);
}

/* APPNOTE 4.5.3: the zip64 extra field (id 1) holds, in this order, the
 * uncompressed size, the compressed size and the local header's offset,
 * each only where the record's own field is the marker. */
static int apply_zip64(struct npz_member *m, const unsigned char *x, size_t len, char *err)
{
	uint64_t *fields[3] = {&m->usize, &m->csize, &m->local};

	for (size_t at = 0; len - at >= 4;) {
		size_t id = le16(x + at), n = le16(x + at + 2), k = 0;

		if (n > len - at - 4)
			break;
		if (id != 1) {
			at += 4 + n;
			continue;
		}
		for (int i = 0; i < 3; i++) {
			if (*fields[i] != ZIP64_MARK)
				continue;
			if (n - k < 8)
				return err_set(err, "its zip64 field is too short");
			*fields[i] = le64(x + at + 4 + k);
			k += 8;
		}
		m->zip64 = 1;
		return 0;
	}
	return err_set(err, "a size or offset says zip64, but there is no zip64 field");
}

/* The central record minizip is at, as the file holds it (see the top). */
static int read_record(struct npz *z, struct npz_member *m, char *err)
{
	uint64_t pos = unzGetOffset64(z->uf);
	unsigned char rec[ZIP_CENTRAL_LEN], *extra;
	size_t xlen;
	int rc;

	if (read_at(z, rec, sizeof(rec), pos) != 0 || bytes_get_le32(rec) != ZIP_CENTRAL_SIG)
		return err_set(err, "no central record at byte %" PRIu64 " (data before the zip?)",
		               pos);
	m->flag = le16(rec + 8);
	m->method = le16(rec + 10);
	m->crc = bytes_get_le32(rec + 16);
	m->csize = bytes_get_le32(rec + 20);
	m->usize = bytes_get_le32(rec + 24);
	m->local = bytes_get_le32(rec + 42);
	if (m->csize != ZIP64_MARK && m->usize != ZIP64_MARK && m->local != ZIP64_MARK)
		return 0;
	xlen = le16(rec + 30);
	extra = xmalloc(xlen + 1);
	rc = read_at(z, extra, xlen, pos + ZIP_CENTRAL_LEN + le16(rec + 28));
	if (rc != 0)
		err_set(err, "its extra field runs past the end of the file");
	else
		rc = apply_zip64(m, extra, xlen, err);
	free(extra);
	return rc;
}

/* Adds the directory entry minizip is at to z->members, which grows as
 * entries really come (a directory's count is a claim), up to
 * NPZ_MAX_MEMBERS. */
static int add_member(struct npz *z, size_t *cap, char *err)
{
	struct npz_member *m;
	unz_file_info64 info;
	size_t len;
	int rc;

	if (z->count == NPZ_MAX_MEMBERS)
		return err_set(err, "'%s': more than %u members", z->path, NPZ_MAX_MEMBERS);
	if (z->count == *cap) {
		*cap = *cap == 0 ? 8 : *cap * 2;
		m = realloc(z->members, *cap * sizeof(*m));
		if (m == NULL)
			die("out of memory for %zu zip members", *cap);
		z->members = m;
	}
	m = &z->members[z->count];
	memset(m, 0, sizeof(*m));
	rc = unzGetCurrentFileInfo64(z->uf, &info, NULL, 0, NULL, 0, NULL, 0);
	if (rc != UNZ_OK)
		return err_set(err, "'%s': directory entry %zu: %s", z->path, z->count,
		               zip_why(rc, &z->io));
	m->name = xmalloc(info.size_filename + 1);
	m->name[info.size_filename] = '\0';
	z->count++;
	rc =
	    unzGetCurrentFileInfo64(z->uf, NULL, m->name, info.size_filename + 1, NULL, 0, NULL, 0);
	if (rc == UNZ_OK)
		rc = unzGetFilePos64(z->uf, &m->where);
	if (rc != UNZ_OK)
		return err_set(err, "'%s': directory entry %zu: %s", z->path, z->count - 1,
		               zip_why(rc, &z->io));
	if (strlen(m->name) != info.size_filename)
		return err_set(err, "'%s': directory entry %zu: a NUL byte in its name", z->path,
		               z->count - 1);
	if (read_record(z, m, err) != 0)
		return err_prefix(err, "'%s': member '%s'", z->path, m->name);
	len = info.size_filename;
	if (len >= 4 && strcmp(m->name + len - 4, ".npy") == 0)
		len -= 4;
	m->key = xmalloc(len + 1);
	memcpy(m->key, m->name, len);
	m->key[len] = '\0';
	return 0;
}

static int list_members(struct npz *z, char *err)
{
	unz_global_info64 gi;
	size_t cap = 0;
	int rc = unzGetGlobalInfo64(z->uf, &gi);

	/* An empty zip has no first entry to go to. */
	if (rc != UNZ_OK || gi.number_entry == 0)
		return 0;
	for (rc = unzGoToFirstFile(z->uf); rc == UNZ_OK; rc = unzGoToNextFile(z->uf))
		if (add_member(z, &cap, err) != 0)
			return -1;
	if (rc != UNZ_END_OF_LIST_OF_FILE)
		return err_set(err, "'%s': directory entry %zu: %s", z->path, z->count,
		               zip_why(rc, &z->io));
	qsort(z->members, z->count, sizeof(*z->members), member_cmp);
	for (size_t i = 1; i < z->count; i++)
		if (strcmp(z->members[i - 1].name, z->members[i].name) == 0)
			return err_set(err, "'%s': two members named '%s'", z->path,
			               z->members[i].name);
	return 0;
}

/* Why minizip found no zip: an empty file, a .npy, a zip of nothing, or
 * no zip directory. */
static int not_a_zip(const struct npz *z, char *err)
{
	unsigned char head[6];

	if (z->io.size == 0)
		return err_set(err, "'%s': empty file, not a .npz", z->path);
	if (z->io.size < sizeof(head) || pread(z->io.fd, head, sizeof(head), 0) != sizeof(head))
		head[0] = '\0';
	if (memcmp(head, "\x93NUMPY", sizeof(head)) == 0)
		return err_set(err, "'%s': a .npy file (one array), not a .npz", z->path);
	/* minizip 1.1 opens no zip without members: np.savez(path) of nothing. */
	if (memcmp(head, "PK\x05\x06", 4) == 0)
		return err_set(err, "'%s': an empty zip, with no arrays", z->path);
	return err_set(err, "'%s': not a zip file (no end of central directory record)", z->path);
}

int npz_open(struct npz **out, const char *path, char *err)
{
	zlib_filefunc64_def funcs = {io_open, io_read,  io_write, io_tell,
	                             io_seek, io_close, io_error, NULL};
	struct npz *z = xcalloc(1, sizeof(*z));
	struct stat st;

	*out = NULL;
	z->path = xmalloc(strlen(path) + 1);
	memcpy(z->path, path, strlen(path) + 1);
	z->io.fd = file_open_regular(path, &st, err);
	if (z->io.fd < 0)
		goto fail;
	z->io.size = (uint64_t)st.st_size;
	funcs.opaque = &z->io;
	z->uf = unzOpen2_64(path, &funcs);
	if (z->uf == NULL) {
		not_a_zip(z, err);
		goto fail;
	}
	if (list_members(z, err) != 0)
		goto fail;
	*out = z;
	return 0;
fail:
	npz_close(z);
	return -1;
}

/* The member "<name>.npy", or NULL. */
static const struct npz_member *find(const struct npz *z, const char *name)
{
	size_t len = strlen(name) + sizeof(".npy");
	char *want = xmalloc(len);
	struct npz_member key = {.name = want};
	const struct npz_member *m;

	snprintf(want, len, "%s.npy", name);
	m = z->count == 0 ? NULL
	                  : bsearch(&key, z->members, z->count, sizeof(*z->members), member_cmp);
	free(want);
	return m;
}

int npz_has(const struct npz *z, const char *name)
{
	return find(z, name) != NULL;
}

size_t npz_count(const struct npz *z)
{
	return z->count;
}

const char *npz_name(const struct npz *z, size_t i)
{
	return z->members[i].key;
}

/* --- Members --- */

/* Where a member's data starts: after its local header, whose signature,
 * method and name must be the directory's. */
static int data_offset(struct npz *z, const struct npz_member *m, uint64_t *off, char *err)
{
	unsigned char h[ZIP_LOCAL_LEN];
	size_t nlen = strlen(m->name);
	char *name;
	int same;

	if (read_at(z, h, sizeof(h), m->local) != 0 || bytes_get_le32(h) != ZIP_LOCAL_SIG)
		return err_set(err, "no local header at byte %" PRIu64, m->local);
	if (le16(h + 8) != m->method || le16(h + 26) != nlen)
		return err_set(err, "its local header disagrees with the directory");
	name = xmalloc(nlen + 1);
	same = read_at(z, name, nlen, m->local + ZIP_LOCAL_LEN) == 0 &&
	       memcmp(name, m->name, nlen) == 0;
	free(name);
	if (!same)
		return err_set(err, "its local header names another member");
	*off = m->local + ZIP_LOCAL_LEN + nlen + le16(h + 28);
	return 0;
}

/* A stored member: its bytes mapped where they lie in the file, the .npy
 * header checked against their length, then their CRC-32. */
static int read_stored(struct npz *z, const struct npz_member *m, struct npy_array *a, char *err)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), delta, len = (size_t)m->usize;
	unsigned char *map;
	uint64_t off = 0;

	if (m->csize != m->usize)
		return err_set(err, "stored, but %" PRIu64 " bytes compressed and %" PRIu64 " not",
		               m->csize, m->usize);
	if (data_offset(z, m, &off, err) != 0)
		return -1;
	if (off > z->io.size || m->usize > z->io.size - off)
		return err_set(err,
		               "its %" PRIu64 " bytes at byte %" PRIu64 " run past the end of the "
		               "file (%" PRIu64 " bytes)",
		               m->usize, off, z->io.size);
	if (len == 0)
		return npy_parse(a, "", 0, err);
	delta = (size_t)(off % page);
	map = mmap(NULL, len + delta, PROT_READ, MAP_PRIVATE, z->io.fd, (off_t)(off - delta));
	if (map == MAP_FAILED)
		return err_set(err, "mmap: %s", strerror(errno));
	if (npy_parse(a, map + delta, len, err) != 0) {
		munmap(map, len + delta);
		return -1;
	}
	if (crc32_z(0, map + delta, len) != m->crc) {
		munmap(map, len + delta);
		memset(a, 0, sizeof(*a));
		return err_set(err, "crc-32 mismatch: the data is damaged");
	}
	a->map = map;
	a->map_len = len + delta;
	return 0;
}

/* Inflates the next n bytes of the open member to buf; *got says how many
 * came (fewer: the member ended). */
static int inflate_some(struct npz *z, unsigned char *buf, size_t n, size_t *got, char *err)
{
	*got = 0;
	while (*got < n) {
		unsigned want = n - *got < NPZ_READ_CHUNK ? (unsigned)(n - *got) : NPZ_READ_CHUNK;
		int k = unzReadCurrentFile(z->uf, buf + *got, want);

		if (k < 0)
			return err_set(err, "%s", zip_why(k, &z->io));
		if (k == 0)
			break;
		*got += (size_t)k;
	}
	return 0;
}

/* Grows *buf (of *cap bytes) toward need, doubling, so that memory follows
 * the bytes that really arrive, not what the directory declares. */
static int grow(unsigned char **buf, size_t *cap, size_t have, size_t need, char *err)
{
	size_t ncap = *cap == 0 ? NPZ_FIRST_ALLOC : *cap * 2;
	unsigned char *nbuf;

	if (have < *cap)
		return 0;
	if (ncap > need || ncap < *cap)
		ncap = need;
	nbuf = realloc(*buf, ncap);
	if (nbuf == NULL)
		return err_set(err, "out of memory for %zu bytes", ncap);
	*buf = nbuf;
	*cap = ncap;
	return 0;
}

/* Inflates the open member into *buf: its .npy header first, checked
 * against the declared size before the rest is inflated, then exactly the
 * declared bytes and the end of the stream. */
static int inflate_member(struct npz *z, size_t declared, unsigned char **buf, char *err)
{
	size_t head = declared < NPY_PREFIX_MAX + NPY_MAX_HEADER_BYTES
	                  ? declared
	                  : NPY_PREFIX_MAX + NPY_MAX_HEADER_BYTES;
	size_t cap = 0, have = 0, got = 0;
	struct npy_array hdr;
	unsigned char extra;

	if (grow(buf, &cap, 0, declared > 0 ? declared : 1, err) != 0 ||
	    inflate_some(z, *buf, head, &have, err) != 0)
		return -1;
	if (npy_parse_header(&hdr, *buf, have, err) != 0 ||
	    npy_check_length(&hdr, declared, err) != 0)
		return -1;
	while (have < declared) {
		if (grow(buf, &cap, have, declared, err) != 0 ||
		    inflate_some(z, *buf + have, cap - have, &got, err) != 0)
			return -1;
		have += got;
		if (have < cap)
			return err_set(err,
			               "truncated: inflates to %zu bytes, the directory says %zu",
			               have, declared);
	}
	/* One byte more must find the end of the deflate stream. */
	if (inflate_some(z, &extra, 1, &got, err) != 0)
		return -1;
	if (got != 0)
		return err_set(err, "inflates to more than the %zu bytes the directory says",
		               declared);
	return 0;
}

static int read_deflated(struct npz *z, const struct npz_member *m, struct npy_array *a, char *err)
{
	unsigned char *buf = NULL;
	int rc;

	if (m->zip64)
		return err_set(err, "deflated with zip64 sizes or offset (past 2 GiB), which this "
		                    "system's minizip misreads: save with np.savez, which stores");
	if (m->usize > NPZ_MAX_INFLATE_BYTES)
		return err_set(err, "inflates to %" PRIu64 " bytes, more than the limit of %zu",
		               m->usize, NPZ_MAX_INFLATE_BYTES);
	rc = unzGoToFilePos64(z->uf, &m->where);
	if (rc == UNZ_OK)
		rc = unzOpenCurrentFile(z->uf);
	if (rc != UNZ_OK)
		return err_set(err, "%s", zip_why(rc, &z->io));
	if (inflate_member(z, (size_t)m->usize, &buf, err) != 0) {
		unzCloseCurrentFile(z->uf);
		free(buf);
		return -1;
	}
	/* All the declared bytes were read: minizip compares the CRC-32. */
	rc = unzCloseCurrentFile(z->uf);
	if (rc != UNZ_OK) {
		free(buf);
		return err_set(err, "%s", zip_why(rc, &z->io));
	}
	if (npy_parse(a, buf, (size_t)m->usize, err) != 0) {
		free(buf);
		return -1;
	}
	a->heap = buf;
	return 0;
}

/* What a compression method is, for the message that refuses it. */
static const char *method_name(unsigned method)
{
	switch (method) {
	case 9:
		return "deflate64";
	case 12:
		return "bzip2";
	case 14:
		return "lzma";
	case 93:
		return "zstd";
	case 95:
		return "xz";
	default:
		return "unknown";
	}
}

static int read_member(struct npz *z, const struct npz_member *m, struct npy_array *a, char *err)
{
	if (m->flag & 1)
		return err_set(err, "encrypted, which np.load cannot read either");
	if (m->method == NPZ_STORED)
		return read_stored(z, m, a, err);
	if (m->method == Z_DEFLATED)
		return read_deflated(z, m, a, err);
	return err_set(err,
	               "compression method %u (%s) is not supported: np.savez stores (0) "
	               "and np.savez_compressed deflates (8)",
	               m->method, method_name(m->method));
}

int npz_read(struct npz *z, const char *name, struct npy_array *a, char *err)
{
	const struct npz_member *m = find(z, name);

	memset(a, 0, sizeof(*a));
	if (m == NULL)
		return err_set(err, "'%s': no member '%s.npy'", z->path, name);
	if (read_member(z, m, a, err) != 0) {
		memset(a, 0, sizeof(*a));
		return err_prefix(err, "'%s': member '%s'", z->path, m->name);
	}
	return 0;
}

void npz_close(struct npz *z)
{
	if (z == NULL)
		return;
	for (size_t i = 0; i < z->count; i++) {
		free(z->members[i].name);
		free(z->members[i].key);
	}
	free(z->members);
	if (z->uf != NULL)
		unzClose(z->uf);
	if (z->io.fd >= 0)
		close(z->io.fd);
	free(z->path);
	free(z);
}
