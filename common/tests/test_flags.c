/* test_flags.c - flag tables over getopt_long: one parse after another in
 * one process, as the tests and the fuzz targets of both command lines do.
 * getopt keeps state between calls; a parse must depend on its own argv
 * alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "flags.h"

enum { F_EPOCHS = 256, F_HELP };

static const struct flag FLAGS[] = {
    {"epochs", F_EPOCHS, "N", "epochs to train"},
    {"help", F_HELP, NULL, "print this help and exit"},
};

/* Keeps the last value of --epochs, or "" when none came. */
static int apply(void *ctx, int id, const char *value, char *err)
{
	char *epochs = ctx;

	(void)err;
	if (id == F_EPOCHS)
		snprintf(epochs, 16, "%s", value);
	return 0;
}

static int parse(int argc, char **argv, char *epochs, char *err)
{
	epochs[0] = '\0';
	err[0] = '\0';
	return flags_parse(FLAGS, FLAGS_COUNT(FLAGS), F_HELP, argc, argv, apply, epochs, err);
}

/* "-xy" is refused at x, where getopt stops inside the word; the next
 * parse once went on at y of the argv before (freed by then, in the fuzz
 * targets) and refused a flag its own argv does not hold. */
static void test_flags_parse_forgets_the_word_the_parse_before_stopped_in(void **state)
{
	char epochs[16], err[ERR_LEN];
	char *bad_word = strdup("-xy");
	char *first[] = {"train", bad_word, NULL};
	char *second[] = {"train", "--epochs", "2", NULL};

	(void)state;
	assert_int_equal(parse(2, first, epochs, err), -1);
	assert_string_equal(err, "unknown flag '-x'");
	free(bad_word);
	assert_int_equal(parse(3, second, epochs, err), 0);
	assert_string_equal(err, "");
	assert_string_equal(epochs, "2");
}

static void test_flags_parse_gives_the_same_answer_twice(void **state)
{
	char *words[][4] = {
	    {"train", "-xy", NULL},
	    {"train", "--epochs", NULL},
	    {"train", "--epochs", "3", "--help"},
	    {"train", "-q", "--epochs", "3"},
	};
	int counts[] = {2, 2, 4, 4};

	(void)state;
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		char epochs[16], again_epochs[16], err[ERR_LEN], again_err[ERR_LEN];
		char *argv[5], *again_argv[5];
		int rc;

		/* getopt_long may reorder argv: each parse gets its own copy. */
		memcpy(argv, words[i], sizeof(words[i]));
		memcpy(again_argv, words[i], sizeof(words[i]));
		argv[4] = again_argv[4] = NULL;
		rc = parse(counts[i], argv, epochs, err);
		assert_int_equal(parse(counts[i], again_argv, again_epochs, again_err), rc);
		assert_string_equal(err, again_err);
		assert_string_equal(epochs, again_epochs);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flags_parse_forgets_the_word_the_parse_before_stopped_in),
	    cmocka_unit_test(test_flags_parse_gives_the_same_answer_twice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
