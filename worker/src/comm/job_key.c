/* job_key.c - reading the job's ring key. */
#include "job_key.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "file_read.h"

/* Reads up to n bytes, fewer only at the end of the file. */
static ssize_t read_up_to(int fd, unsigned char *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = read(fd, buf + got, n - got);
		if (k == 0)
			break;
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

int job_key_load(struct job_key *k, const char *path, char *err)
{
	/* One byte more than a key may have, to tell a long file from a full one. */
	unsigned char buf[JOB_KEY_MAX_BYTES + 1];
	char why[ERR_LEN];
	struct stat st;
	ssize_t n;
	int fd, rc = -1;

	k->len = 0;
	fd = file_open_regular(path, &st, why);
	/* The operator mounts the key readable by its owner only (0400): a
	 * container that runs as another user reads it through the group the
	 * volume is given, which is the pod's fsGroup. */
	if (fd < 0 && errno == EACCES)
		return err_set(err,
		               "job key '%s': %s: this process (uid %u, gid %u) may not read it; "
		               "on Kubernetes, set the pod's securityContext.fsGroup so that a "
		               "key mounted with mode 0400 is readable by a non-root user",
		               path, strerror(EACCES), (unsigned)geteuid(), (unsigned)getegid());
	if (fd < 0)
		return err_set(err, "job key: %s", why);
	n = read_up_to(fd, buf, sizeof(buf));
	if (n < 0) {
		err_set(err, "job key '%s': read: %s", path, strerror(errno));
		goto out;
	}
	if (n < JOB_KEY_MIN_BYTES) {
		err_set(err, "job key '%s': %zd bytes, a job key needs at least %d", path, n,
		        JOB_KEY_MIN_BYTES);
		goto out;
	}
	if (n > JOB_KEY_MAX_BYTES) {
		err_set(err, "job key '%s': longer than %d bytes, not a key file", path,
		        JOB_KEY_MAX_BYTES);
		goto out;
	}
	memcpy(k->bytes, buf, (size_t)n);
	k->len = (size_t)n;
	rc = 0;
out:
	OPENSSL_cleanse(buf, sizeof(buf));
	close(fd);
	return rc;
}

void job_key_release(struct job_key *k)
{
	if (k == NULL)
		return;
	OPENSSL_cleanse(k->bytes, sizeof(k->bytes));
	k->len = 0;
}
