/* base64.c - strict base64 with Go's StdEncoding rules (see base64.h). */
#include "base64.h"

#include "err.h"

#include <stdint.h>

static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The 6-bit value of c, or -1 for a character outside the alphabet. */
static int sextet(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int base64_decode(unsigned char *out, size_t cap, size_t *out_len, const char *in, size_t len,
                  char *err)
{
	uint32_t group = 0; /* the sextets of the group so far, high first */
	int have = 0;       /* characters in the group, padding included */
	int pad = 0;        /* '=' in the group */
	int ended = 0;      /* a padded group was the last one */
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		int v = sextet(c);

		if (c == '\r' || c == '\n')
			continue;
		/* Padding may only take the last two places of a group, and only
		 * padding may follow padding. */
		if (ended || (c == '=' && have < 2) || (c != '=' && (v < 0 || pad > 0)))
			return err_set(err, "invalid base64 at byte %zu", i);
		if (c == '=')
			pad++;
		group = group << 6 | (uint32_t)(v < 0 ? 0 : v);
		if (++have < 4)
			continue;
		if ((size_t)(3 - pad) > cap - n) /* n <= cap always */
			return err_set(err, "base64: decoded data is more than %zu bytes", cap);
		for (int k = 0; k < 3 - pad; k++)
			out[n++] = (unsigned char)(group >> (16 - 8 * k));
		ended = pad > 0;
		group = 0;
		have = 0;
		pad = 0;
	}
	if (have != 0)
		return err_set(err, "invalid base64 at byte %zu: the last group is incomplete",
		               len);
	*out_len = n;
	return 0;
}

int base64_encode(char *out, size_t cap, const unsigned char *in, size_t n, char *err)
{
	size_t w = 0;

	if (n > (SIZE_MAX - 1) / 4 * 3 || cap < BASE64_ENCODED_LEN(n) + 1)
		return err_set(err, "base64: %zu bytes do not fit in %zu characters", n, cap);
	for (size_t i = 0; i < n; i += 3) {
		size_t left = n - i;
		uint32_t group = (uint32_t)in[i] << 16;

		if (left > 1)
			group |= (uint32_t)in[i + 1] << 8;
		if (left > 2)
			group |= in[i + 2];
		out[w++] = ALPHABET[group >> 18 & 63];
		out[w++] = ALPHABET[group >> 12 & 63];
		out[w++] = left > 1 ? ALPHABET[group >> 6 & 63] : '=';
		out[w++] = left > 2 ? ALPHABET[group & 63] : '=';
	}
	out[w] = '\0';
	return 0;
}
