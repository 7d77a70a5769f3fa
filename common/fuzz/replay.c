/* replay.c - runs a libFuzzer target over files, without libFuzzer: how
 * `make test` checks a target's seed corpus (and any input a fuzzing run
 * found and saved there) with the compiler and sanitizers of the build,
 * for the targets of both binaries (worker/fuzz, operator/fuzz).
 * With no arguments it replays every file in FUZZ_CORPUS, the folder the
 * Makefile builds it for; otherwise the files given. Ends with the line
 * "N passed, N failed"; a crash ends it earlier.
 */
#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#ifndef FUZZ_CORPUS
#error "build with -DFUZZ_CORPUS='\"folder\"' (the Makefile does)"
#endif

#define INPUT_MAX_BYTES (1 << 20)

/* Feeds the file at path to the target. Returns 0, or -1 if it cannot be
 * read. */
static int replay(const char *path)
{
	static uint8_t buf[INPUT_MAX_BYTES];
	FILE *f = fopen(path, "rb");
	size_t n;
	int bad;

	if (f == NULL) {
		perror(path);
		return -1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	bad = ferror(f);
	fclose(f);
	if (bad) {
		fprintf(stderr, "%s: read error\n", path);
		return -1;
	}
	LLVMFuzzerTestOneInput(buf, n);
	printf("ok   %s\n", path);
	return 0;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;

	if (argc > 1) {
		for (int i = 1; i < argc; i++) {
			if (replay(argv[i]) == 0)
				passed++;
			else
				failed++;
		}
	} else {
		DIR *d = opendir(FUZZ_CORPUS);
		const struct dirent *e;
		if (d == NULL) {
			perror(FUZZ_CORPUS);
			return 1;
		}
		while ((e = readdir(d)) != NULL) {
			char path[PATH_MAX];
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", FUZZ_CORPUS, e->d_name);
			if (replay(path) == 0)
				passed++;
			else
				failed++;
		}
		closedir(d);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed || passed == 0 ? 1 : 0;
}
