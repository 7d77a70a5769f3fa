/* checkpoint_dir.c - the backup directory: file names, listing and pruning
 * (rules in checkpoint.h). */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "err.h"

#define NAME_PREFIX "backup-"
#define NAME_SUFFIX ".mwjb"
#define NAME_TEMP   ".tmp."    /* atomic_file's "<path>.tmp.<pid>" */
#define NO_STEP     UINT64_MAX /* no file name parses to it */

int checkpoint_path(const char *dir, uint64_t global_step, char *out, size_t n)
{
	int len = snprintf(out, n, "%s/" NAME_PREFIX "%0*" PRIu64 NAME_SUFFIX, dir,
	                   CHECKPOINT_STEP_DIGITS, global_step);

	return len < 0 || (size_t)len >= n ? -1 : 0;
}

/* --- The directory --- */

enum name_kind { NAME_OTHER, NAME_BACKUP, NAME_TEMPORARY };

/* Tells a backup's name, and the temporary file of a writer that died while
 * writing one, from anything else a user keeps in the directory. */
static enum name_kind parse_name(const char *name, uint64_t *step)
{
	size_t plen = strlen(NAME_PREFIX), slen = strlen(NAME_SUFFIX), tlen = strlen(NAME_TEMP);
	const char *p = name + plen;
	uint64_t v = 0;

	if (strncmp(name, NAME_PREFIX, plen) != 0)
		return NAME_OTHER;
	for (int i = 0; i < CHECKPOINT_STEP_DIGITS; i++, p++) {
		if (*p < '0' || *p > '9')
			return NAME_OTHER;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (strncmp(p, NAME_SUFFIX, slen) != 0)
		return NAME_OTHER;
	p += slen;
	*step = v;
	if (*p == '\0')
		return NAME_BACKUP;
	if (strncmp(p, NAME_TEMP, tlen) != 0)
		return NAME_OTHER;
	p += tlen;
	return *p != '\0' && strspn(p, "0123456789") == strlen(p) ? NAME_TEMPORARY : NAME_OTHER;
}

/* Adds step to steps, n of at most max kept newest first; when they are
 * full, the oldest falls out. Keeps no more than max without allocating,
 * however many files the directory holds. */
static void keep_newest(uint64_t *steps, int *n, int max, uint64_t step)
{
	int i;

	if (*n == max && (max == 0 || step <= steps[max - 1]))
		return;
	if (*n < max)
		(*n)++;
	for (i = *n - 1; i > 0 && steps[i - 1] < step; i--)
		steps[i] = steps[i - 1];
	steps[i] = step;
}

int checkpoint_list(const char *dir, uint64_t *steps, int max, char *err)
{
	const struct dirent *e;
	uint64_t step;
	int n = 0;
	DIR *d = opendir(dir);

	if (!d) {
		if (errno == ENOENT)
			return 0;
		return err_set(err, "opendir '%s': %s", dir, strerror(errno));
	}
	if (max < 0)
		max = 0;
	errno = 0;
	while ((e = readdir(d)) != NULL)
		if (parse_name(e->d_name, &step) == NAME_BACKUP)
			keep_newest(steps, &n, max, step);
	if (errno != 0)
		n = err_set(err, "readdir '%s': %s", dir, strerror(errno));
	closedir(d);
	return n;
}

/* The newest backup in d older than step, or NO_STEP. */
static uint64_t newest_below(DIR *d, uint64_t step)
{
	const struct dirent *e;
	uint64_t s, older = NO_STEP;

	while ((e = readdir(d)) != NULL)
		if (parse_name(e->d_name, &s) == NAME_BACKUP && s < step &&
		    (older == NO_STEP || s > older))
			older = s;
	return older;
}

int checkpoint_prune(const char *dir, uint64_t keep, char *err)
{
	const struct dirent *e;
	uint64_t step, older;
	int rc = 0;
	DIR *d = opendir(dir);

	if (!d) {
		if (errno == ENOENT)
			return 0;
		return err_set(err, "opendir '%s': %s", dir, strerror(errno));
	}
	older = keep == NO_STEP ? NO_STEP : newest_below(d, keep);
	rewinddir(d);
	while ((e = readdir(d)) != NULL) {
		enum name_kind kind = parse_name(e->d_name, &step);
		if (kind == NAME_OTHER || (kind == NAME_BACKUP && (step == keep || step == older)))
			continue;
		/* Relative to the open directory: no path to build or truncate. */
		if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT && rc == 0)
			rc = err_set(err, "unlink '%s/%s': %s", dir, e->d_name, strerror(errno));
	}
	closedir(d);
	return rc;
}

int checkpoint_remove_all(const char *dir, char *err)
{
	return checkpoint_prune(dir, NO_STEP, err);
}
