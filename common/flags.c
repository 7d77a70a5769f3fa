/* flags.c - flag tables over getopt_long; see flags.h. */
#include "flags.h"

#include <getopt.h>

#include "err.h"

/* A meta in brackets ("[=BOOL]") makes the value optional. */
static int has_arg(const struct flag *f)
{
	if (f->meta == NULL)
		return no_argument;
	return f->meta[0] == '[' ? optional_argument : required_argument;
}

int flags_parse(const struct flag *flags, size_t n, int help_id, int argc, char **argv,
                flags_apply_fn apply, void *ctx, char *err)
{
	struct option opts[FLAGS_MAX + 1];
	int idx;

	if (n > FLAGS_MAX)
		return err_set(err, "internal: %zu flags, at most %d", n, FLAGS_MAX);
	for (size_t i = 0; i < n; i++)
		opts[i] = (struct option){flags[i].name, has_arg(&flags[i]), NULL, flags[i].id};
	opts[n] = (struct option){0};
	opterr = 0;
	/* 0, not 1: glibc then starts afresh at argv[1]. With 1 it would go on
	 * inside the word where the call before stopped ("-xy" refused at x
	 * leaves it at y), reading the caller's earlier argv. */
	optind = 0;
	for (;;) {
		int id = getopt_long(argc, argv, ":", opts, &idx);
		if (id == -1)
			break;
		/* An unknown short flag inside a word ("-xy") leaves optind on
		 * that word, so argv[optind - 1] would name the word before. */
		if (id == '?' && optopt > 0 && optopt < 256)
			return err_set(err, "unknown flag '-%c'", optopt);
		if (id == '?')
			return err_set(err, "unknown flag '%s'", argv[optind - 1]);
		if (id == ':')
			return err_set(err, "flag '%s' needs a value", argv[optind - 1]);
		if (id == help_id)
			return 1;
		if (apply(ctx, id, optarg, err) < 0) {
			for (size_t i = 0; i < n; i++)
				if (flags[i].id == id)
					return err_prefix(err, "--%s", flags[i].name);
			return -1;
		}
	}
	if (optind < argc)
		return err_set(err, "unexpected argument '%s'", argv[optind]);
	return 0;
}

void flags_print_help(FILE *out, const char *usage, const struct flag *flags, size_t n)
{
	fprintf(out, "usage: %s\n\nFlags:\n", usage);
	for (size_t i = 0; i < n; i++) {
		char left[64];
		snprintf(left, sizeof(left), "--%s%s%s", flags[i].name,
		         has_arg(&flags[i]) == required_argument ? " " : "",
		         flags[i].meta ? flags[i].meta : "");
		fprintf(out, "  %-26s %s\n", left, flags[i].help);
	}
}
