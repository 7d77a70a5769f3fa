/* crc32c.h - CRC-32C (Castagnoli), as used by iSCSI, ext4 and TFRecord.
 *
 * Uses the SSE4.2 crc32 instruction when the CPU has it, a slicing-by-8 table
 * otherwise; both give the same result. crc32c("123456789") == 0xE3069283.
 */
#ifndef MWJ_CRC32C_H
#define MWJ_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extends crc (0 for a fresh start) with len bytes of data. */
uint32_t crc32c_update(uint32_t crc, const void *data, size_t len);

static inline uint32_t crc32c(const void *data, size_t len)
{
	return crc32c_update(0, data, len);
}

#endif
