/* The local test node's sandbox for one container: a mount and UTS
 * namespace of its own, where the pod's files are bind-mounted (its
 * /etc/hosts, /etc/resolv.conf and volumes), the host name is the pod's,
 * the user, group and supplementary groups are the container's, and the
 * working directory is the container's; then the container's command
 * replaces it.
 *
 *   podsandbox [-u UID] [-g GID] [-G GID,GID...] HOSTNAME WORKDIR
 *              [rw|ro SOURCE TARGET]... -- PATH [ARG]...
 *
 * The ids are dropped to after the mounts (which need root) and before
 * the working directory is entered, as runc does (its init: setupUser,
 * then chdir), so a folder the user may not enter stops it. Without -u
 * and -g it stays root; -G with an empty list clears the groups, and
 * without -G the groups are cleared too whenever -u or -g is given (the
 * node's own groups never leak into a container).
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
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define SANDBOX_FAILED     128
#define SANDBOX_MAX_GROUPS 64

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

/* A user or group id: a decimal number below 2^32 - 1 (which is -1, "no
 * change", to setresuid). */
static gid_t parse_id(const char *text, const char *what)
{
	char *end = NULL;
	unsigned long long v;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v >= 0xffffffffULL)
		fail("%s '%s' is not a user or group id", what, text);
	return (gid_t)v;
}

/* "1,2,3" into groups; returns how many. An empty text is no group. */
static size_t parse_groups(const char *text, gid_t *groups)
{
	char buf[1024], *save = NULL, *tok;
	size_t n = 0;

	if (strlen(text) >= sizeof(buf))
		fail("supplementary groups '%.40s...' are too long", text);
	strcpy(buf, text);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == SANDBOX_MAX_GROUPS)
			fail("more than %d supplementary groups", SANDBOX_MAX_GROUPS);
		groups[n++] = parse_id(tok, "supplementary group");
	}
	return n;
}

struct ids {
	int set;   /* any of -u, -g, -G given */
	uid_t uid; /* 0 unless -u */
	gid_t gid; /* 0 unless -g */
	size_t ngroups;
	gid_t groups[SANDBOX_MAX_GROUPS];
};

/* Groups first, then the group, then the user: after setuid, the others
 * can no longer be changed. */
static void drop_to(const struct ids *id)
{
	if (!id->set)
		return;
	if (setgroups(id->ngroups, id->groups) != 0)
		fail("setgroups: %s", strerror(errno));
	if (setresgid(id->gid, id->gid, id->gid) != 0)
		fail("setgid %u: %s", (unsigned)id->gid, strerror(errno));
	if (setresuid(id->uid, id->uid, id->uid) != 0)
		fail("setuid %u: %s", (unsigned)id->uid, strerror(errno));
}

int main(int argc, char **argv)
{
	const char *hostname, *workdir;
	struct ids id = {0};
	int i = 1;

	while (i + 1 < argc && argv[i][0] == '-' && argv[i][1] != '\0' && argv[i][2] == '\0' &&
	       strchr("ugG", argv[i][1])) {
		if (argv[i][1] == 'u')
			id.uid = parse_id(argv[i + 1], "user");
		else if (argv[i][1] == 'g')
			id.gid = parse_id(argv[i + 1], "group");
		else
			id.ngroups = parse_groups(argv[i + 1], id.groups);
		id.set = 1;
		i += 2;
	}
	if (argc - i < 4)
		fail("usage: podsandbox [-u UID] [-g GID] [-G GID,...] HOSTNAME WORKDIR "
		     "[rw|ro SOURCE TARGET]... -- PATH [ARG]...");
	hostname = argv[i];
	workdir = argv[i + 1];
	if (unshare(CLONE_NEWNS | CLONE_NEWUTS) != 0)
		fail("unshare: %s", strerror(errno));
	/* What unshare --propagation private does: nothing mounted here
	 * reaches the host, or another pod. */
	if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		fail("make / private: %s", strerror(errno));
	for (i += 2; i < argc && strcmp(argv[i], "--") != 0; i += 3) {
		if (i + 2 >= argc)
			fail("a mount needs rw|ro SOURCE TARGET");
		bind_mount(argv[i], argv[i + 1], argv[i + 2]);
	}
	if (i + 1 >= argc)
		fail("no command after --");
	if (sethostname(hostname, strlen(hostname)) != 0)
		fail("cannot set the host name: %s", strerror(errno));
	drop_to(&id);
	if (chdir(workdir) != 0)
		fail("no working directory %s: %s", workdir, strerror(errno));
	/* execvp, as sh's exec: a script without #! runs under /bin/sh. */
	execvp(argv[i + 1], argv + i + 1);
	/* And as sh: 126 for a file it may not run, 127 for none. */
	fprintf(stderr, "local node: exec %s: %s\n", argv[i + 1], strerror(errno));
	return errno == EACCES ? 126 : 127;
}
