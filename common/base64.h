/* base64.h - base64 as Kubernetes writes it: RFC 4648's standard alphabet
 * with '=' padding, which is Go's encoding/base64.StdEncoding, the encoding
 * of every []byte in a JSON or YAML object (Secret data, a kubeconfig's
 * certificate-authority-data and client-key-data).
 *
 * Decoding is as strict as Go's: only the alphabet, padding that completes
 * the last group of four and nothing after it. Like Go, '\r' and '\n' are
 * skipped wherever they are, so a block wrapped at 64 or 76 columns
 * decodes; any other white space is refused. Messages give the offending
 * byte's offset, never the data: what is decoded is often a key.
 */
#ifndef MWJ_BASE64_H
#define MWJ_BASE64_H

#include <stddef.h>

/* Characters that encoding n bytes gives, without the terminating NUL. */
#define BASE64_ENCODED_LEN(n) (((n) + 2) / 3 * 4)

/* The most bytes that decoding len characters can give: a size for out. */
static inline size_t base64_decoded_max(size_t len)
{
	return len / 4 * 3;
}

/* Decodes the len characters of in into out (cap bytes) and sets *out_len.
 * Returns 0, or -1 with a message ("invalid base64 at byte 12") when in is
 * not base64 or out is too small; out may then hold part of the result. */
int base64_decode(unsigned char *out, size_t cap, size_t *out_len, const char *in, size_t len,
                  char *err);

/* Encodes the n bytes of in into out, NUL-terminated: out needs
 * BASE64_ENCODED_LEN(n) + 1 bytes (cap). Returns 0, or -1 with a message
 * when cap is too small. */
int base64_encode(char *out, size_t cap, const unsigned char *in, size_t n, char *err);

#endif
