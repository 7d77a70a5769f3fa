/* testutil.h - what several worker tests need alike: where the real data and
 * the built binary are, a scratch directory per test, whole files read and
 * written, mwj-worker processes started and waited for, and checks on text
 * and JSON.
 *
 * Except for testutil_worker_bin(), which main() calls before any test, and
 * the fixture's setup and teardown, which return -1 as cmocka expects,
 * everything here fails the running cmocka test instead of returning an
 * error, so call it from a test body only.
 */
#ifndef MWJ_TESTUTIL_H
#define MWJ_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "handshake.h"

/* --- The real Fashion-MNIST files --- */

#define TESTUTIL_DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"

/* The directory of the Fashion-MNIST files: $MWJ_TEST_DATA ('make test' sets
 * it), or TESTUTIL_DEFAULT_DATA_DIR (Debian's dataset-fashion-mnist) when that
 * is unset or empty. Never NULL; the string is borrowed. */
const char *testutil_data_dir(void);

/* The seed models (examples/models) as Keras JSON for square inputs of
 * side x side and that many classes: "cnn" or "cnn-pool", the layers of
 * the shipped files. testutil_keras fills km (release it with
 * keras_model_release) and fails the test if it cannot; testutil_model
 * builds the model for max_batch examples, its parameters drawn from seed
 * when seed is not 0, and km, if not NULL, receives the plan too. */
struct keras_model;
struct model;
void testutil_keras(struct keras_model *km, const char *name, int side, int classes);
struct model *testutil_model(const char *name, int side, int classes, int max_batch, uint64_t seed);

/* --- The mwj-worker binary under test --- */

/* $MWJ_WORKER_BIN ('make test' sets it), for main() to check before running
 * the tests. Returns the borrowed path, or NULL after saying on stderr, as
 * prog, why it is unset or not an executable. */
const char *testutil_worker_bin(const char *prog);

/* --- A fixture with a scratch directory per test --- */

#define TESTUTIL_TMPDIR_LEN 64 /* room for "/tmp/mwj-test-<name>-XXXXXX" */

/* For a cmocka setup: allocates a zeroed fixture of size bytes, whose first
 * member must be char dir[TESTUTIL_TMPDIR_LEN], creates a new empty directory
 * "/tmp/mwj-test-<name>-XXXXXX" (mkdtemp) and writes its path into that
 * member, and stores the fixture in *state for the test and its teardown.
 * Returns 0, or -1 with nothing left allocated or created. */
int testutil_fixture_setup(void **state, size_t size, const char *name);

/* For a cmocka teardown, which runs even after a failed test: removes the
 * fixture's directory and everything below it, without following symbolic
 * links, and frees the fixture (*state may be NULL). Returns 0, or -1 if
 * something could not be removed, which cmocka reports as a failure. Free
 * what the fixture points to before calling it. */
int testutil_fixture_teardown(void **state);

/* --- Whole files --- */

/* Reads the file at path into a malloc'd buffer the caller frees, with a NUL
 * after the last byte so that a text file can be used as a string. *len, if
 * len is not NULL, is the length without that NUL. Fails the test if the
 * file cannot be read. */
void *testutil_read_file(const char *path, size_t *len);

/* Writes len bytes of buf to path, replacing what was there. Fails the test
 * on any error, the final fclose included. */
void testutil_write_file(const char *path, const void *buf, size_t len);

/* Stores v at p as 4 big-endian bytes, the byte order of IDX headers. */
void testutil_put_be32(uint8_t *p, uint32_t v);

/* A gzip stream of the 16 bytes at header followed by zeros up to len bytes
 * in all: an IDX file of images as large as its header says, deflated a
 * piece at a time so that the test never holds it whole. Returns a
 * malloc'd buffer of *out_len bytes that the caller frees. */
uint8_t *testutil_gzip_header_and_zeros(const uint8_t *header, size_t len, size_t *out_len);

/* Writes "<dir>/<split>-images-idx3-ubyte.gz" saying count images of side
 * x side (zeros, under a megabyte compressed for the 800 MiB that 200000
 * of 64x64 inflate to) and raw labels "<dir>/<split>-labels-idx1-ubyte"
 * saying nlabels: a split whose headers say something its size would make
 * costly to find out by reading it. */
void testutil_write_big_split(const char *dir, const char *split, uint32_t count, uint32_t side,
                              uint32_t nlabels);

/* --- What this process has spent --- */

/* Bytes this process has asked read() and its kin for so far, all threads
 * together (rchar in /proc/self/io): to show that a file was not read
 * whole. Fails the test if it cannot be known. */
long long testutil_bytes_read(void);

/* The peak resident memory of this process so far, in bytes. */
long long testutil_peak_rss(void);

/* Lowers this process's address-space limit (the soft one) to what it
 * maps now plus extra bytes, so that a loader that still read a huge or
 * endless file whole would fail there rather than take the machine's
 * memory; testutil_unlimit_memory() lifts it again. Both do nothing under
 * AddressSanitizer, which maps terabytes of shadow. */
void testutil_limit_memory(long long extra);
void testutil_unlimit_memory(void);

/* --- Child processes --- */

/* Seconds on the monotonic clock, for deadlines. */
double testutil_now(void);

/* Starts bin with args (NULL-ended, argv[0] excluded), stdin from /dev/null,
 * stdout and stderr into the files out_path and err_path (created or
 * truncated), and the inherited environment without TF_CONFIG and every
 * MWJ_* variable (a developer's own settings must not change what the tests
 * see), plus extra_env ("NAME=value", NULL-ended, or NULL), which replaces an
 * inherited variable of the same name. Returns the child's pid. Fails the
 * test if it cannot start. */
pid_t testutil_spawn(const char *bin, const char *const *args, const char *const *extra_env,
                     const char *out_path, const char *err_path);

/* Waits for child pid until deadline (testutil_now() clock). Returns its exit
 * status, or 128 + the signal that ended it, or -1, with the child still
 * running, if the deadline passed first. */
int testutil_wait(pid_t pid, double deadline);

/* testutil_wait, and when the child has ended, its peak resident memory in
 * bytes into *peak_rss (NULL: not wanted). */
int testutil_wait_peak(pid_t pid, double deadline, long long *peak_rss);

/* Kills child pid with SIGKILL and reaps it; does nothing if pid <= 0. */
void testutil_kill(pid_t pid);

/* --- Clusters of workers on 127.0.0.1 --- */

/* Fills ports with n different TCP ports of 127.0.0.1 that were free a
 * moment ago: all bound at once, so that the kernel cannot hand out one
 * twice. Fails the test if it cannot. */
void testutil_free_ports(int *ports, int n);

/* Writes "TF_CONFIG=..." into out (len bytes) for a cluster of chiefs (0 or
 * 1) chief and then workers worker tasks on ports in that order, as task
 * type (e.g. "worker") number index. */
void testutil_tf_config(char *out, size_t len, const int *ports, int chiefs, int workers,
                        const char *type, int index);

/* --- What a stranger may learn of a job --- */

/* A hello whose values are all distinctive on the wire, to look for in
 * what a worker sends. */
extern const struct hello testutil_job_hello;

/* Fails the test, naming what, if the n bytes at bytes hold any of job's
 * values (hashes, seed, steps, learning rate, momentum, batch, epochs) as
 * the handshake puts them on the wire, big-endian. */
void testutil_assert_none_of_job(const unsigned char *bytes, size_t n, const struct hello *job,
                                 const char *what);

/* --- Checks on text --- */

/* Fails the test, showing both strings, unless s contains part. */
void testutil_assert_contains(const char *s, const char *part);

/* Fails the test, showing both, unless s matches the POSIX extended regular
 * expression pattern (anywhere, unless anchored). */
void testutil_assert_matches(const char *s, const char *pattern);

/* --- Checks on JSON --- */

/* Parses text as a JSON object. The caller deletes the tree. Fails the test,
 * showing text, if it is not valid JSON or not an object. */
cJSON *testutil_json_object(const char *text);

/* The number member name of object o. Fails the test, naming the member, if
 * it is missing or not a number. */
double testutil_json_number(const cJSON *o, const char *name);

/* The string member name of object o, borrowed from the tree. Fails the
 * test, naming the member, if it is missing or not a string. */
const char *testutil_json_string(const cJSON *o, const char *name);

#endif
