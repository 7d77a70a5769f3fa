/* test_base64.c - base64 as Go's StdEncoding reads and writes it: RFC 4648's
 * test vectors both ways, wrapped lines, and every malformed input refused
 * with the offset of the bad byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base64.h"
#include "err.h"

#include <string.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* RFC 4648, section 10. */
static const struct {
	const char *plain, *encoded;
} VECTORS[] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

static void test_base64_encodes_the_rfc_4648_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(VECTORS); i++) {
		const char *plain = VECTORS[i].plain;
		char out[16];
		char err[ERR_LEN] = "";

		assert_int_equal(base64_encode(out, sizeof(out), (const unsigned char *)plain,
		                               strlen(plain), err),
		                 0);
		assert_string_equal(out, VECTORS[i].encoded);
		assert_int_equal(strlen(out), BASE64_ENCODED_LEN(strlen(plain)));
	}
}

static void test_base64_decodes_the_rfc_4648_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(VECTORS); i++) {
		const char *enc = VECTORS[i].encoded;
		unsigned char out[16];
		size_t n = 99;
		char err[ERR_LEN] = "";

		if (base64_decode(out, base64_decoded_max(strlen(enc)), &n, enc, strlen(enc), err) <
		    0)
			fail_msg("'%s': %s", enc, err);
		assert_int_equal(n, strlen(VECTORS[i].plain));
		assert_memory_equal(out, VECTORS[i].plain, n);
	}
}

static void test_base64_round_trips_every_byte_value(void **state)
{
	unsigned char plain[256], back[256];
	char enc[BASE64_ENCODED_LEN(256) + 1];
	char err[ERR_LEN] = "";
	size_t n = 0;

	(void)state;
	for (int i = 0; i < 256; i++)
		plain[i] = (unsigned char)(255 - i);
	assert_int_equal(base64_encode(enc, sizeof(enc), plain, sizeof(plain), err), 0);
	assert_int_equal(base64_decode(back, sizeof(back), &n, enc, strlen(enc), err), 0);
	assert_int_equal(n, sizeof(plain));
	assert_memory_equal(back, plain, sizeof(plain));
}

static void test_base64_skips_line_breaks_as_go_does(void **state)
{
	/* A PEM-style wrapped block, CRLF included, and a break inside the
	 * padding. */
	const char *enc = "Zm9v\r\nYmFy\nZm9v\nYg=\n=\n";
	unsigned char out[32];
	char err[ERR_LEN] = "";
	size_t n = 0;

	(void)state;
	assert_int_equal(base64_decode(out, sizeof(out), &n, enc, strlen(enc), err), 0);
	assert_int_equal(n, 10);
	assert_memory_equal(out, "foobarfoob", 10);
}

static void test_base64_refuses_malformed_input_naming_the_byte(void **state)
{
	static const struct {
		const char *in, *msg;
	} cases[] = {
	    {"Zm9", "invalid base64 at byte 3: the last group is incomplete"},
	    {"Zg", "invalid base64 at byte 2: the last group is incomplete"},
	    {"Zg=", "invalid base64 at byte 3: the last group is incomplete"},
	    {"Zm9v Zm9v", "invalid base64 at byte 4"},
	    {"Zm9v\tZm9v", "invalid base64 at byte 4"},
	    {"Zm-v", "invalid base64 at byte 2"}, /* the URL alphabet is another encoding */
	    {"Zm_v", "invalid base64 at byte 2"},
	    {"Z===", "invalid base64 at byte 1"},
	    {"====", "invalid base64 at byte 0"},
	    {"Zg=a", "invalid base64 at byte 3"},
	    {"Zg==Zg==", "invalid base64 at byte 4"}, /* nothing after padding */
	    {"Zg==\n=", "invalid base64 at byte 5"},
	    {"Zm9v\xc3\xa9", "invalid base64 at byte 4"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		unsigned char out[16];
		char err[ERR_LEN] = "";
		size_t n = 12345;

		if (base64_decode(out, sizeof(out), &n, cases[i].in, strlen(cases[i].in), err) !=
		    -1)
			fail_msg("'%s' was accepted", cases[i].in);
		assert_string_equal(err, cases[i].msg);
		assert_int_equal(n, 12345);
	}
}

static void test_base64_refuses_a_nul_inside_the_input(void **state)
{
	const char in[] = "Zm9v\0Zm9v";
	unsigned char out[16];
	char err[ERR_LEN] = "";
	size_t n = 0;

	(void)state;
	assert_int_equal(base64_decode(out, sizeof(out), &n, in, sizeof(in) - 1, err), -1);
	assert_string_equal(err, "invalid base64 at byte 4");
}

static void test_base64_never_writes_past_the_output(void **state)
{
	unsigned char out[8];
	char enc[8];
	char err[ERR_LEN] = "";
	size_t n = 0;

	(void)state;
	memset(out, 0xAA, sizeof(out));
	assert_int_equal(base64_decode(out, 5, &n, "Zm9vYmFy", 8, err), -1);
	assert_string_equal(err, "base64: decoded data is more than 5 bytes");
	assert_int_equal(out[5], 0xAA);
	assert_int_equal(base64_decode(out, 6, &n, "Zm9vYmFy", 8, err), 0);
	assert_int_equal(n, 6);

	assert_int_equal(base64_encode(enc, 8, (const unsigned char *)"foobar", 6, err), -1);
	assert_string_equal(err, "base64: 6 bytes do not fit in 8 characters");
	assert_int_equal(base64_encode(enc, 5, (const unsigned char *)"foo", 3, err), 0);
	assert_string_equal(enc, "Zm9v");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_base64_encodes_the_rfc_4648_vectors),
	    cmocka_unit_test(test_base64_decodes_the_rfc_4648_vectors),
	    cmocka_unit_test(test_base64_round_trips_every_byte_value),
	    cmocka_unit_test(test_base64_skips_line_breaks_as_go_does),
	    cmocka_unit_test(test_base64_refuses_malformed_input_naming_the_byte),
	    cmocka_unit_test(test_base64_refuses_a_nul_inside_the_input),
	    cmocka_unit_test(test_base64_never_writes_past_the_output),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
