/* bytes.h - numbers in byte buffers: the little-endian fields of mwj's
 * files, the big-endian (network order) fields of the ring's handshake, and
 * a double's bits as an integer (to send or store it exactly). */
#ifndef MWJ_BYTES_H
#define MWJ_BYTES_H

#include <stdint.h>
#include <string.h>

static inline void bytes_put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t bytes_get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void bytes_put_be32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (24 - 8 * i));
}

static inline void bytes_put_be64(unsigned char *p, uint64_t v)
{
	bytes_put_be32(p, (uint32_t)(v >> 32));
	bytes_put_be32(p + 4, (uint32_t)v);
}

static inline uint32_t bytes_get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t bytes_get_be64(const unsigned char *p)
{
	return (uint64_t)bytes_get_be32(p) << 32 | bytes_get_be32(p + 4);
}

static inline uint64_t bytes_f64_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static inline double bytes_bits_f64(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

#endif
