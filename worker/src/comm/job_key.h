/* job_key.h - the job's ring key: a secret every worker of one job holds,
 * so that the ring handshake (handshake.h) can tell the job's own workers
 * from anything else that reaches their port.
 *
 * The operator creates one Secret of 32 random bytes per job and mounts it
 * read-only in every worker; the worker reads the file once at start. The
 * key is used as it is, every byte of the file, so a text key works too.
 * Nothing here ever writes the key into a message.
 */
#ifndef MWJ_JOB_KEY_H
#define MWJ_JOB_KEY_H

#include <stddef.h>

#define JOB_KEY_MIN_BYTES 32
/* A key file larger than this is not a key file (and /dev/zero must not be
 * read forever). */
#define JOB_KEY_MAX_BYTES 4096

struct job_key {
	size_t len; /* 0: no key */
	unsigned char bytes[JOB_KEY_MAX_BYTES];
};

/* Reads the key in the file at path into k. Returns 0, or -1 with a message
 * naming the path when the file is missing, unreadable, not a regular file,
 * shorter than JOB_KEY_MIN_BYTES or longer than JOB_KEY_MAX_BYTES; k then
 * holds no key. */
int job_key_load(struct job_key *k, const char *path, char *err);

/* Wipes the key from memory; k holds no key afterwards. Accepts NULL. */
void job_key_release(struct job_key *k);

#endif
