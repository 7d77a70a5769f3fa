/* crc32c.c - CRC-32C (Castagnoli), reflected polynomial 0x82F63B78.
 *
 * The software path is slicing-by-8 (eight bytes per step through eight
 * 256-entry tables, computed once). On x86-64 CPUs with SSE4.2 the crc32
 * instruction computes the same CRC eight bytes per instruction.
 */
#include "crc32c.h"
#include "crc32c_sw.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#define CRC32C_POLY 0x82F63B78u

static uint32_t crc32c_table[8][256];
static pthread_once_t crc32c_table_once = PTHREAD_ONCE_INIT;

static void crc32c_init_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc32c_table[0][i] = c;
	}
	/* table[k][i] is the CRC of byte i followed by k zero bytes. */
	for (int k = 1; k < 8; k++)
		for (int i = 0; i < 256; i++) {
			uint32_t c = crc32c_table[k - 1][i];

			crc32c_table[k][i] = (c >> 8) ^ crc32c_table[0][c & 0xff];
		}
}

/* Loads bytes in little-endian order whatever the host's byte order, which is
 * what the reflected CRC consumes. Compilers turn this into one load. */
static uint32_t load_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t crc32c_sw_update(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;
	uint32_t(*t)[256] = crc32c_table;
	uint32_t c = ~crc;

	pthread_once(&crc32c_table_once, crc32c_init_table);
	while (len >= 8) {
		uint32_t lo = c ^ load_le32(p);
		uint32_t hi = load_le32(p + 4);

		c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
		    t[4][lo >> 24] ^ t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
		    t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len-- > 0)
		c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
	return ~c;
}

#if defined(__x86_64__)

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw_update(uint32_t crc, const void *data,
                                                                   size_t len)
{
	const unsigned char *p = data;
	uint64_t c = ~crc;

	/* Byte steps up to an 8-byte boundary keep the word loads aligned. */
	while (len > 0 && ((uintptr_t)p & 7) != 0) {
		c = _mm_crc32_u8((uint32_t)c, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, sizeof(w));
		c = _mm_crc32_u64(c, w);
		p += 8;
		len -= 8;
	}
	while (len-- > 0)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

int crc32c_hw_available(void)
{
	return __builtin_cpu_supports("sse4.2");
}

uint32_t crc32c_update(uint32_t crc, const void *data, size_t len)
{
	if (__builtin_cpu_supports("sse4.2"))
		return crc32c_hw_update(crc, data, len);
	return crc32c_sw_update(crc, data, len);
}

#else

int crc32c_hw_available(void)
{
	return 0;
}

uint32_t crc32c_update(uint32_t crc, const void *data, size_t len)
{
	return crc32c_sw_update(crc, data, len);
}

#endif
