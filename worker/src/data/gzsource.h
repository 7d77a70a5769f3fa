/* gzsource.h - the content of a file that may be gzip-compressed: its bytes
 * as they are, or inflated when they begin with the gzip magic (1f 8b),
 * whatever the file is called.
 *
 * A gzip file is a series of members (RFC 1952): their data are read one
 * after the other, as gzip -d and zlib's gzread read them. After the last
 * member the file must end. zlib's gzread ignores whatever follows a
 * member that is not another one; here it is an error naming how many
 * bytes follow and where the member ended, since a data file with junk
 * appended has been damaged or tampered with. zlib checks each member's
 * CRC-32 and length as it ends.
 *
 * The file is read in pieces of GZSOURCE_BUFFER bytes, and only as far as
 * the caller asks: reading a header inflates no more than the header's
 * piece of the file.
 */
#ifndef MWJ_GZSOURCE_H
#define MWJ_GZSOURCE_H

#include <stddef.h>

#define GZSOURCE_BUFFER ((size_t)256 << 10) /* of the file, read at a time */

struct gzsource;

/* A source reading fd, which it takes over (closing it on failure too);
 * name is how messages name the file (copied). Returns NULL with a
 * message in err (ERR_LEN) when the first bytes cannot be read. */
struct gzsource *gzsource_new(int fd, const char *name, char *err);

/* Reads up to n bytes of the content into buf; fewer only at its end.
 * *got says how many came. Returns 0, or -1 with a message naming the
 * file: unreadable, a corrupt gzip stream (zlib's reason), or junk after
 * the last member. */
int gzsource_read(struct gzsource *s, void *buf, size_t n, size_t *got, char *err);

/* After a read that came short: whether the file ended inside a gzip
 * member (truncated) rather than cleanly. */
int gzsource_cut_short(const struct gzsource *s);

/* Closes the file and frees s; accepts NULL. */
void gzsource_free(struct gzsource *s);

#endif
