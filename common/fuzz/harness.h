/* harness.h - what the libFuzzer targets of both binaries (worker/fuzz,
 * operator/fuzz) share: a check that aborts, files for the parsers that
 * take a path, argv from bytes, and files framed by a trailing CRC-32C.
 *
 * A target runs thousands of inputs a second in one process, under
 * libFuzzer or under replay.c: files are rewritten in place, in one folder
 * per process made on first use and removed at exit. Nothing here logs;
 * what cannot be set up dies, since no input could be tried without it.
 */
#ifndef MWJ_FUZZ_HARNESS_H
#define MWJ_FUZZ_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The entry point every target defines, for libFuzzer and replay.c. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* --- Checks --- */

/* Aborts, naming the file, the line and the check that failed, so that
 * libFuzzer keeps the input as a crash. Used for what must hold beyond
 * "no crash": an accepted value round-trips, a struct keeps its bounds. */
#define FUZZ_CHECK(ok) ((ok) ? (void)0 : fuzz_check_failed(__FILE__, __LINE__, #ok))
void fuzz_check_failed(const char *file, int line, const char *what) __attribute__((noreturn));

/* --- Files --- */

/* This process's folder, "mwj-fuzz-XXXXXX" in $TMPDIR or /tmp, made on the
 * first call and removed with all it holds when the process exits. */
const char *fuzz_dir(void);

/* The path of fuzz_dir()/name, in a static buffer that the next call of
 * this or fuzz_file() overwrites. */
const char *fuzz_path(const char *name);

/* Writes size bytes of data as fuzz_dir()/name, replacing what was there.
 * Returns its path, as fuzz_path() does. */
const char *fuzz_file(const char *name, const void *data, size_t size);

/* --- Framed files --- */

/* The bytes of a file whose last 4 are the CRC-32C (little-endian) of all
 * before them (backups, model files): data, then pad zero bytes, then the
 * CRC, so that mutations reach the checks behind the checksum. Returns a
 * malloc'd buffer of *len bytes that the caller frees. */
unsigned char *fuzz_crc_frame(const uint8_t *data, size_t size, size_t pad, size_t *len);

/* --- Command lines --- */

/* An open /dev/null, for what a parser prints (--help); opened once. */
FILE *fuzz_devnull(void);

#define FUZZ_ARGS_MAX 64 /* words after argv[0] */

struct fuzz_args {
	int argc;
	char *argv[FUZZ_ARGS_MAX + 2]; /* argv[argc] is NULL */
	char *buf;                     /* the words, owned */
};

/* Splits data at NUL bytes into words after argv0: at most FUZZ_ARGS_MAX of
 * them, the rest of the input dropped. The words live in a fresh malloc'd
 * copy, so that a parser still holding one after fuzz_args_release() is a
 * use after free that AddressSanitizer reports. */
void fuzz_args_split(struct fuzz_args *a, const char *argv0, const uint8_t *data, size_t size);
void fuzz_args_release(struct fuzz_args *a);

/* A command-line parser under test: its program name, the environment
 * variables it reads besides MWJ_* (all of them unset on the first call,
 * so that only the input decides), and the parser itself, which fills out
 * (the caller's struct) from argv, prints help on help and returns what
 * the parser returns. */
struct fuzz_cli {
	const char *argv0;
	const char *const *env; /* nenv names, as "TF_CONFIG" */
	size_t nenv;
	int (*parse)(void *out, int argc, char **argv, FILE *help, char *err);
};

/* Parses the words of data (as fuzz_args_split) twice, into first and then
 * into second, each time from a fresh copy, since getopt_long reorders
 * argv, and checks that both return the same with the same message: a
 * parse depends on its own words alone, not on the parse before (getopt
 * keeps state between calls, inside glibc, where AddressSanitizer does not
 * see). The words are freed before it returns, so that a parser keeping a
 * pointer into argv is a use after free. Returns what the parser returned,
 * with its message in err (ERR_LEN); help goes to /dev/null. */
int fuzz_cli_parse_twice(const struct fuzz_cli *cli, const uint8_t *data, size_t size, void *first,
                         void *second, char *err);

#endif
