/* digest.h - SHA-256 of memory, through OpenSSL's libcrypto: the
 * fingerprint of a model's weights that every worker logs, so that
 * identical weights can be checked across workers and runs.
 */
#ifndef MWJ_DIGEST_H
#define MWJ_DIGEST_H

#include <stddef.h>

#define DIGEST_HEX_LEN 65 /* 64 hex digits and a NUL */

/* Writes the SHA-256 of len bytes at data as lower-case hex into out. Dies
 * only if libcrypto cannot compute a digest at all. */
void digest_sha256_hex(const void *data, size_t len, char out[DIGEST_HEX_LEN]);

#endif
