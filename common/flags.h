/* flags.h - a command's flags as one table that both parses argv (GNU
 * long options through getopt_long) and prints --help, shared by
 * mwj-worker and mwj-operator so that both read and answer alike.
 *
 * A value is applied through the caller's function as it is met, after the
 * caller has applied its defaults and the MWJ_* environment, so that
 * flags win. Errors name the flag: "--epochs: '0' is out of range".
 */
#ifndef MWJ_FLAGS_H
#define MWJ_FLAGS_H

#include <stddef.h>
#include <stdio.h>

#define FLAGS_MAX 48

struct flag {
	const char *name; /* "epochs", for --epochs */
	int id;           /* the caller's, above 255 (short options are not used) */
	/* The value's name in --help ("N"); NULL: takes no value; in
	 * brackets ("[=BOOL]"): the value is optional, given as --flag=value,
	 * and apply gets NULL without one. */
	const char *meta;
	const char *help; /* ends with the default, if any */
};

/* Applies flag id with its value (NULL for a flag without one). Returns 0,
 * or -1 with a message (flags_parse prefixes the flag's name). */
typedef int (*flags_apply_fn)(void *ctx, int id, const char *value, char *err);

/* Parses argv[1..argc-1] against the table (n <= FLAGS_MAX). help_id is
 * the id of --help. Returns 0; 1 when --help was given (nothing after it
 * is parsed); -1 with a message for an unknown flag, a missing value, a
 * value apply refused, or a word that is not a flag. */
int flags_parse(const struct flag *flags, size_t n, int help_id, int argc, char **argv,
                flags_apply_fn apply, void *ctx, char *err);

/* Prints "usage: <usage>\n\nFlags:\n" and one aligned line per flag. */
void flags_print_help(FILE *out, const char *usage, const struct flag *flags, size_t n);

#define FLAGS_COUNT(t) (sizeof(t) / sizeof((t)[0]))

#endif
