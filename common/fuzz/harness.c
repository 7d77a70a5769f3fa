/* harness.c - what the fuzz targets share (see harness.h). */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "crc32c.h"
#include "err.h"

/* --- Checks --- */

void fuzz_check_failed(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
	abort();
}

/* --- Files --- */

static char dir[PATH_MAX];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	/* Best effort: a folder left in /tmp harms nothing. */
	(void)remove(path);
	return 0;
}

static void remove_dir(void)
{
	nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	if (dir[0] != '\0')
		return dir;
	if (tmp == NULL || tmp[0] == '\0')
		tmp = "/tmp";
	if (snprintf(dir, sizeof(dir), "%s/mwj-fuzz-XXXXXX", tmp) >= (int)sizeof(dir))
		die("TMPDIR '%s': path too long", tmp);
	if (mkdtemp(dir) == NULL)
		die("mkdtemp '%s': %s", dir, strerror(errno));
	atexit(remove_dir);
	return dir;
}

const char *fuzz_path(const char *name)
{
	static char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", fuzz_dir(), name) >= (int)sizeof(path))
		die("fuzz file '%s': path too long", name);
	return path;
}

const char *fuzz_file(const char *name, const void *data, size_t size)
{
	const char *path = fuzz_path(name);
	const unsigned char *p = data;
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die("open '%s': %s", path, strerror(errno));
	while (size > 0) {
		ssize_t n = write(fd, p, size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("write '%s': %s", path, strerror(errno));
		p += n;
		size -= (size_t)n;
	}
	if (close(fd) < 0)
		die("close '%s': %s", path, strerror(errno));
	return path;
}

/* --- Framed files --- */

unsigned char *fuzz_crc_frame(const uint8_t *data, size_t size, size_t pad, size_t *len)
{
	unsigned char *buf = xcalloc(size + pad + 4, 1);

	if (size > 0)
		memcpy(buf, data, size);
	bytes_put_le32(buf + size + pad, crc32c(buf, size + pad));
	*len = size + pad + 4;
	return buf;
}

/* --- Command lines --- */

FILE *fuzz_devnull(void)
{
	static FILE *f;

	if (f == NULL)
		f = fopen("/dev/null", "w");
	if (f == NULL)
		die("open '/dev/null': %s", strerror(errno));
	return f;
}

void fuzz_args_split(struct fuzz_args *a, const char *argv0, const uint8_t *data, size_t size)
{
	size_t at = 0;

	/* One byte more, so that the last word is terminated too. */
	a->buf = xmalloc(size + 1);
	if (size > 0)
		memcpy(a->buf, data, size);
	a->buf[size] = '\0';
	a->argc = 0;
	a->argv[a->argc++] = (char *)argv0;
	while (at < size && a->argc <= FUZZ_ARGS_MAX) {
		a->argv[a->argc++] = a->buf + at;
		at += strlen(a->buf + at) + 1;
	}
	a->argv[a->argc] = NULL;
}

void fuzz_args_release(struct fuzz_args *a)
{
	free(a->buf);
	memset(a, 0, sizeof(*a));
}

/* Unsets every MWJ_* variable, and the n more in names. */
static void clear_env(const char *const *names, size_t n)
{
	char name[256];

	for (size_t i = 0; environ[i] != NULL;) {
		size_t len = strcspn(environ[i], "=");

		if (strncmp(environ[i], "MWJ_", 4) != 0 || len >= sizeof(name)) {
			i++;
			continue;
		}
		/* unsetenv moves the rest of environ down: i stays. */
		memcpy(name, environ[i], len);
		name[len] = '\0';
		unsetenv(name);
	}
	for (size_t i = 0; i < n; i++)
		unsetenv(names[i]);
}

int fuzz_cli_parse_twice(const struct fuzz_cli *cli, const uint8_t *data, size_t size, void *first,
                         void *second, char *err)
{
	static int env_cleared;
	char again_err[ERR_LEN] = "";
	struct fuzz_args args;
	int rc;

	if (!env_cleared)
		clear_env(cli->env, cli->nenv);
	env_cleared = 1;
	err[0] = '\0';
	fuzz_args_split(&args, cli->argv0, data, size);
	rc = cli->parse(first, args.argc, args.argv, fuzz_devnull(), err);
	fuzz_args_release(&args);
	fuzz_args_split(&args, cli->argv0, data, size);
	FUZZ_CHECK(cli->parse(second, args.argc, args.argv, fuzz_devnull(), again_err) == rc);
	fuzz_args_release(&args);
	FUZZ_CHECK(strcmp(err, again_err) == 0);
	return rc;
}
