/* test_crc32c.c - CRC-32C known vectors, chaining, and hardware/software
 * agreement. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "crc32c.h"
#include "crc32c_sw.h"

#include <string.h>

/* Deterministic xorshift64 so that a failure reproduces. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint8_t rng_byte(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint8_t)(rng_state >> 32);
}

static void fill_random(uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = rng_byte();
}

/* The definition, one bit at a time: slow, obviously right. */
static uint32_t crc32c_bitwise(const uint8_t *p, size_t len)
{
	uint32_t c = 0xFFFFFFFFu;

	for (size_t i = 0; i < len; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
	}
	return ~c;
}

struct vector {
	const char *name;
	uint8_t data[64];
	size_t len;
	uint32_t want;
};

/* "123456789" is the customary check value; the rest are RFC 3720 B.4. */
static const struct vector vectors[] = {
    {"empty", {0}, 0, 0x00000000u},
    {"check string", "123456789", 9, 0xE3069283u},
    {"32 zero bytes", {0}, 32, 0x8A9136AAu},
    {"32 0xff bytes",
     {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
     32,
     0x62A8AB43u},
    {"32 incrementing bytes",
     {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
      16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31},
     32,
     0x46DD794Eu},
    {"32 decrementing bytes",
     {31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16,
      15, 14, 13, 12, 11, 10, 9,  8,  7,  6,  5,  4,  3,  2,  1,  0},
     32,
     0x113FDB5Cu},
    {"iscsi read pdu",
     {0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
      0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
     48,
     0xD9963A56u},
};

#define N_VECTORS (sizeof(vectors) / sizeof(vectors[0]))

static void test_crc32c_matches_known_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_VECTORS; i++) {
		uint32_t got = crc32c(vectors[i].data, vectors[i].len);

		if (got != vectors[i].want)
			fail_msg("%s: got 0x%08x, want 0x%08x", vectors[i].name, got,
			         vectors[i].want);
	}
}

static void test_crc32c_software_path_matches_known_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_VECTORS; i++) {
		uint32_t got = crc32c_sw_update(0, vectors[i].data, vectors[i].len);

		if (got != vectors[i].want)
			fail_msg("%s: got 0x%08x, want 0x%08x", vectors[i].name, got,
			         vectors[i].want);
	}
}

static void test_crc32c_of_empty_input_leaves_crc_unchanged(void **state)
{
	(void)state;
	assert_int_equal(crc32c_update(0xE3069283u, NULL, 0), 0xE3069283u);
	assert_int_equal(crc32c_sw_update(0xE3069283u, NULL, 0), 0xE3069283u);
}

static void test_crc32c_update_continues_from_previous_result(void **state)
{
	uint8_t buf[1000];

	(void)state;
	fill_random(buf, sizeof(buf));
	uint32_t whole = crc32c(buf, sizeof(buf));

	assert_int_equal(whole, crc32c_bitwise(buf, sizeof(buf)));
	for (size_t cut = 0; cut <= sizeof(buf); cut++) {
		uint32_t hw = crc32c_update(crc32c(buf, cut), buf + cut, sizeof(buf) - cut);
		uint32_t sw =
		    crc32c_sw_update(crc32c_sw_update(0, buf, cut), buf + cut, sizeof(buf) - cut);

		assert_int_equal(hw, whole);
		assert_int_equal(sw, whole);
	}
}

/* Every start alignment and every length through the byte, word and tail
 * loops of both paths, against the bitwise definition. */
static void test_crc32c_paths_agree_at_all_alignments_and_lengths(void **state)
{
	uint8_t buf[16 + 300];

	(void)state;
	if (!crc32c_hw_available())
		print_message("no SSE4.2: crc32c_update uses the software path\n");
	for (int round = 0; round < 4; round++) {
		fill_random(buf, sizeof(buf));
		for (size_t off = 0; off < 16; off++)
			for (size_t len = 0; len <= 300; len++) {
				uint32_t want = crc32c_bitwise(buf + off, len);

				assert_int_equal(crc32c_update(0, buf + off, len), want);
				assert_int_equal(crc32c_sw_update(0, buf + off, len), want);
			}
	}
}

static void test_crc32c_paths_agree_on_large_buffer(void **state)
{
	enum { LEN = 1 << 20 };
	static uint8_t buf[LEN + 8];

	(void)state;
	fill_random(buf, sizeof(buf));
	for (size_t off = 0; off < 8; off++)
		assert_int_equal(crc32c_update(0x12345678u, buf + off, LEN),
		                 crc32c_sw_update(0x12345678u, buf + off, LEN));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crc32c_matches_known_vectors),
	    cmocka_unit_test(test_crc32c_software_path_matches_known_vectors),
	    cmocka_unit_test(test_crc32c_of_empty_input_leaves_crc_unchanged),
	    cmocka_unit_test(test_crc32c_update_continues_from_previous_result),
	    cmocka_unit_test(test_crc32c_paths_agree_at_all_alignments_and_lengths),
	    cmocka_unit_test(test_crc32c_paths_agree_on_large_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
