/* crc32c_sw.h - the two CRC-32C paths behind crc32c_update(), for tests.
 *
 * Not part of the API: crc32c_update() picks the path itself. Tests use these
 * to check that both paths agree.
 */
#ifndef MWJ_CRC32C_SW_H
#define MWJ_CRC32C_SW_H

#include <stddef.h>
#include <stdint.h>

/* The portable slicing-by-8 path; same contract as crc32c_update(). */
uint32_t crc32c_sw_update(uint32_t crc, const void *data, size_t len);

/* Whether crc32c_update() uses the SSE4.2 instruction on this machine. */
int crc32c_hw_available(void);

#endif
