/* The local test node's sandbox for one container: a mount and UTS
 * namespace of its own, where the pod's files are bind-mounted (its
 * /etc/hosts, /etc/resolv.conf and volumes), the host name is the pod's,
 * and the working directory is the container's; then the container's
 * command replaces it.
 *
 *   podsandbox HOSTNAME WORKDIR [rw|ro SOURCE TARGET]... -- PATH [ARG]...
 *
 * A missing TARGET is created: a folder when SOURCE is one, else an empty
 * file (with its parent folders). PATH is run as it is (the node has
 * looked it up in the container's PATH already), with this process's
 * environment.
 *
 * Why C: it did this as unshare(1) running a shell script of mount(1),
 * mkdir(1), dirname(1) and hostname(1), a dozen programs started for each
 * container; where starting a program costs milliseconds of CPU, hundreds
 * of pods starting together spent minutes of it there.
 *
 * On failure it writes "local node: <what>" to stderr (the container's
 * log) and exits 128, before the command runs, as the script did. Needs
 * root (CAP_SYS_ADMIN), as unshare did. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define SANDBOX_FAILED 128

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...)
{
	va_list ap;

	fputs("local node: ", stderr);
	va_start(ap, fmt);
	/* clang-tidy misreads ap when checking several files at once (llvm#40656).
	 * NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(SANDBOX_FAILED);
}

/* mkdir -p: path and every missing parent. */
static int make_dirs(const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* A mount point for source at target: a folder for a folder, else an
 * empty file in its parent folders. */
static int make_target(const char *source, const char *target)
{
	struct stat st;
	char parent[PATH_MAX];
	const char *slash;
	int fd;

	if (stat(target, &st) == 0)
		return 0;
	if (stat(source, &st) == 0 && S_ISDIR(st.st_mode))
		return make_dirs(target);
	slash = strrchr(target, '/');
	if (slash && slash != target) {
		size_t n = (size_t)(slash - target);

		if (n >= sizeof(parent))
			return -1;
		memcpy(parent, target, n);
		parent[n] = '\0';
		if (make_dirs(parent) != 0)
			return -1;
	}
	fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static void bind_mount(const char *mode, const char *source, const char *target)
{
	int ro = strcmp(mode, "ro") == 0;

	if (!ro && strcmp(mode, "rw") != 0)
		fail("mount mode '%s' is neither rw nor ro", mode);
	if (make_target(source, target) != 0 || mount(source, target, NULL, MS_BIND, NULL) != 0)
		fail("cannot mount %s at %s: %s", source, target, strerror(errno));
	if (ro && mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) != 0)
		fail("cannot make %s read-only: %s", target, strerror(errno));
}

int main(int argc, char **argv)
{
	const char *hostname, *workdir;
	int i;

	if (argc < 5)
		fail(
		    "usage: podsandbox HOSTNAME WORKDIR [rw|ro SOURCE TARGET]... -- PATH [ARG]...");
	hostname = argv[1];
	workdir = argv[2];
	if (unshare(CLONE_NEWNS | CLONE_NEWUTS) != 0)
		fail("unshare: %s", strerror(errno));
	/* What unshare --propagation private does: nothing mounted here
	 * reaches the host, or another pod. */
	if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		fail("make / private: %s", strerror(errno));
	for (i = 3; i < argc && strcmp(argv[i], "--") != 0; i += 3) {
		if (i + 2 >= argc)
			fail("a mount needs rw|ro SOURCE TARGET");
		bind_mount(argv[i], argv[i + 1], argv[i + 2]);
	}
	if (i + 1 >= argc)
		fail("no command after --");
	if (sethostname(hostname, strlen(hostname)) != 0)
		fail("cannot set the host name: %s", strerror(errno));
	if (chdir(workdir) != 0)
		fail("no working directory %s", workdir);
	/* execvp, as sh's exec: a script without #! runs under /bin/sh. */
	execvp(argv[i + 1], argv + i + 1);
	/* And as sh: 126 for a file it may not run, 127 for none. */
	fprintf(stderr, "local node: exec %s: %s\n", argv[i + 1], strerror(errno));
	return errno == EACCES ? 126 : 127;
}
