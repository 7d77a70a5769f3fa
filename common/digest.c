/* digest.c - SHA-256 through libcrypto's EVP interface. */
#include "digest.h"

#include <openssl/evp.h>
#include <stdio.h>

#include "err.h"

void digest_sha256_hex(const void *data, size_t len, char out[DIGEST_HEX_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) != 1 || n != 32)
		die("libcrypto: SHA-256 failed");
	for (unsigned int i = 0; i < n; i++)
		snprintf(out + 2 * (size_t)i, 3, "%02x", md[i]);
}
