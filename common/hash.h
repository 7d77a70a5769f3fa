/* hash.h - FNV-1a, a stable 64-bit fingerprint of bytes: architecture
 * strings, job identities. Not for security: only to tell different
 * configurations apart in files and handshakes.
 */
#ifndef MWJ_HASH_H
#define MWJ_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV1A64_INIT 0xcbf29ce484222325ull

/* Folds len bytes into h (start from HASH_FNV1A64_INIT) and returns it. */
static inline uint64_t hash_fnv1a64(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#endif
