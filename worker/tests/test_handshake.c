/* test_handshake.c - the ring's connection handshake, run in memory: two
 * workers of one job accept each other; a missing or different key is
 * refused on both sides, saying so and never showing the key; a peer's
 * refusal counts only once the peer has proved itself; a recorded
 * handshake replayed to a new connection is refused; garbage and cut-off
 * messages end the handshake. Also: reading the key file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"
#include "handshake.h"
#include "job_key.h"
#include "testutil.h"

static const struct hello BASE = {HANDSHAKE_PROTOCOL,   2, 0, 11, 22, 42, 64, 0, 3, 0, 0.001, 0.0,
                                  HELLO_COLLECTIVE_HOST};

/* Two keys that differ only in their last byte, and the text of the first
 * (it is printable), to look for in messages. */
static const char KEY_TEXT[] = "correct horse battery staple, job 1";
static struct job_key key_a, key_b;

static int setup_keys(void **state)
{
	(void)state;
	key_a.len = key_b.len = strlen(KEY_TEXT);
	memcpy(key_a.bytes, KEY_TEXT, key_a.len);
	memcpy(key_b.bytes, KEY_TEXT, key_b.len);
	key_b.bytes[key_b.len - 1] = '2';
	return 0;
}

/* The connecting worker is rank 0 of 2, the accepting one rank 1. */
static void start_pair(struct handshake *c, struct handshake *s, const struct job_key *ck,
                       const struct job_key *sk)
{
	struct hello c_me = BASE, s_me = BASE;

	c_me.rank = 0;
	s_me.rank = 1;
	handshake_init(c, HANDSHAKE_CONNECT, &c_me, ck, 1);
	handshake_init(s, HANDSHAKE_ACCEPT, &s_me, sk, 0);
}

/* Moves bytes from one side to the other, in pieces of at most chunk, until
 * neither has anything to send. */
static void exchange(struct handshake *c, struct handshake *s, size_t chunk)
{
	for (int turns = 0; turns < 100000; turns++) {
		struct handshake *from = NULL, *to = NULL;
		unsigned char *out, *in;
		size_t nout, nin;
		if (handshake_io(c, &out, &nout) == HANDSHAKE_SEND)
			from = c, to = s;
		else if (handshake_io(s, &out, &nout) == HANDSHAKE_SEND)
			from = s, to = c;
		if (from == NULL)
			return;
		if (handshake_io(to, &in, &nin) != HANDSHAKE_RECV)
			return; /* the other side has finished: it hangs up */
		size_t n = nout < nin ? nout : nin;
		n = n < chunk ? n : chunk;
		memcpy(in, out, n);
		handshake_moved(from, n);
		handshake_moved(to, n);
	}
	fail_msg("the handshake never ended");
}

static int done(struct handshake *h)
{
	unsigned char *buf;
	size_t len;

	return handshake_io(h, &buf, &len) == HANDSHAKE_DONE;
}

static void assert_no_key_in(const char *text)
{
	if (strstr(text, KEY_TEXT) || strstr(text, "correct horse"))
		fail_msg("'%s' shows the key", text);
}

static void test_workers_without_a_key_accept_each_other(void **state)
{
	struct handshake c, s;

	(void)state;
	start_pair(&c, &s, NULL, NULL);
	exchange(&c, &s, SIZE_MAX);
	assert_true(done(&c) && done(&s));
	assert_int_equal(c.status, HANDSHAKE_OK);
	assert_int_equal(s.status, HANDSHAKE_OK);
	assert_false(c.authenticated || s.authenticated);
	assert_int_equal(c.peer.rank, 1);
	assert_int_equal(s.peer.rank, 0);
}

static void test_workers_holding_the_same_key_prove_it_to_each_other(void **state)
{
	struct handshake c, s;

	(void)state;
	start_pair(&c, &s, &key_a, &key_a);
	/* A byte at a time: every message may arrive in pieces. */
	exchange(&c, &s, 1);
	assert_int_equal(c.status, HANDSHAKE_OK);
	assert_int_equal(s.status, HANDSHAKE_OK);
	assert_true(c.authenticated && s.authenticated);
	assert_string_equal(c.why, "");
}

static void test_different_keys_are_refused_on_both_sides_without_showing_the_key(void **state)
{
	struct handshake c, s;

	(void)state;
	start_pair(&c, &s, &key_a, &key_b);
	exchange(&c, &s, SIZE_MAX);
	assert_int_equal(c.status, HANDSHAKE_UNAUTHENTICATED);
	assert_int_equal(s.status, HANDSHAKE_UNAUTHENTICATED);
	assert_false(c.authenticated || s.authenticated);
	testutil_assert_contains(c.why, "does not hold this job's key");
	testutil_assert_contains(s.why, "does not hold this job's key");
	assert_no_key_in(c.why);
	assert_no_key_in(s.why);
	/* Nor does the key travel: neither side's bytes contain it. */
	assert_null(memmem(c.wire, sizeof(c.wire), KEY_TEXT, 8));
	assert_null(memmem(s.wire, sizeof(s.wire), KEY_TEXT, 8));
}

static void test_a_key_on_one_side_only_is_refused_on_both_saying_which(void **state)
{
	struct handshake c, s;

	(void)state;
	start_pair(&c, &s, &key_a, NULL);
	exchange(&c, &s, SIZE_MAX);
	assert_int_equal(c.status, HANDSHAKE_UNAUTHENTICATED);
	assert_int_equal(s.status, HANDSHAKE_UNAUTHENTICATED);
	testutil_assert_contains(c.why, "no job key on the peer's side");
	testutil_assert_contains(s.why, "this worker has none (--job-secret-file)");

	start_pair(&c, &s, NULL, &key_a);
	exchange(&c, &s, SIZE_MAX);
	assert_int_equal(c.status, HANDSHAKE_UNAUTHENTICATED);
	assert_int_equal(s.status, HANDSHAKE_UNAUTHENTICATED);
	testutil_assert_contains(c.why, "this worker has none (--job-secret-file)");
	testutil_assert_contains(s.why, "no job key on the peer's side");
}

/* The connecting side holds key_a; the accepting one runs another model
 * and holds its_key. */
static void meet_another_model(struct handshake *c, struct handshake *s,
                               const struct job_key *its_key)
{
	struct hello other = BASE;

	other.rank = 1;
	other.arch_hash++;
	handshake_init(c, HANDSHAKE_CONNECT, &BASE, &key_a, 1);
	handshake_init(s, HANDSHAKE_ACCEPT, &other, its_key, 0);
	exchange(c, s, SIZE_MAX);
}

static void test_a_proved_peer_with_another_model_is_refused_for_good(void **state)
{
	struct handshake c, s;

	(void)state;
	meet_another_model(&c, &s, &key_a);
	/* Both proved the key, so the refusal is believed: REFUSED, not a
	 * key problem. */
	assert_int_equal(c.status, HANDSHAKE_REFUSED);
	assert_int_equal(s.status, HANDSHAKE_REFUSED);
	assert_true(c.authenticated && s.authenticated);
	testutil_assert_contains(c.why, "model differs");
	testutil_assert_contains(s.why, "model differs");
	/* Each reports the refusal it heard of first, as with one message each
	 * way: the accepting side its own, the connecting side the reply's.
	 * Either side is enough to tell the user, if the other is gone. */
	assert_false(s.by_peer);
	assert_true(c.by_peer);
}

static void test_a_stranger_s_refusal_is_not_believed(void **state)
{
	struct handshake c, s;

	(void)state;
	/* Another model and another key: what a stranger that knows the
	 * protocol sends. Its refusal must not end the job (REFUSED is exit
	 * 1): it is only a key problem. */
	meet_another_model(&c, &s, &key_b);
	assert_int_equal(c.status, HANDSHAKE_UNAUTHENTICATED);
	assert_int_equal(s.status, HANDSHAKE_UNAUTHENTICATED);
}

/* Runs a keyed handshake and keeps what each side sent. */
static void record(unsigned char *c_sent, unsigned char *s_sent)
{
	struct handshake c, s;

	start_pair(&c, &s, &key_a, &key_a);
	exchange(&c, &s, SIZE_MAX);
	assert_int_equal(c.status, HANDSHAKE_OK);
	memcpy(c_sent, c.wire, HANDSHAKE_WIRE_BYTES);
	memcpy(s_sent, s.wire, HANDSHAKE_WIRE_BYTES);
}

/* Feeds h what the recorded transcript says its peer sent, as the peer
 * would, and drops what h sends. */
static void replay(struct handshake *h, const unsigned char *wire)
{
	unsigned char *buf;
	size_t len, at = 0;
	enum handshake_io io;

	while ((io = handshake_io(h, &buf, &len)) != HANDSHAKE_DONE) {
		if (io == HANDSHAKE_RECV)
			memcpy(buf, wire + at, len);
		handshake_moved(h, len);
		at += len;
	}
}

static void test_a_replayed_handshake_is_refused_on_either_side(void **state)
{
	unsigned char c_sent[HANDSHAKE_WIRE_BYTES], s_sent[HANDSHAKE_WIRE_BYTES];
	struct hello c_me = BASE, s_me = BASE;
	struct handshake h;

	(void)state;
	c_me.rank = 0;
	s_me.rank = 1;
	record(c_sent, s_sent);
	/* A stranger replays the connecting worker's messages to a new
	 * accepting side: its fresh nonce makes the recorded proof wrong. */
	handshake_init(&h, HANDSHAKE_ACCEPT, &s_me, &key_a, 0);
	replay(&h, c_sent);
	assert_int_equal(h.status, HANDSHAKE_UNAUTHENTICATED);
	testutil_assert_contains(h.why, "does not hold this job's key");
	/* And the accepting worker's messages to a new connecting side. */
	handshake_init(&h, HANDSHAKE_CONNECT, &c_me, &key_a, 1);
	replay(&h, s_sent);
	assert_int_equal(h.status, HANDSHAKE_UNAUTHENTICATED);
}

static void test_garbage_ends_the_handshake_at_once(void **state)
{
	struct handshake h;
	unsigned char *buf;
	size_t len;

	(void)state;
	handshake_init(&h, HANDSHAKE_ACCEPT, &BASE, &key_a, 0);
	assert_int_equal(handshake_io(&h, &buf, &len), HANDSHAKE_RECV);
	assert_int_equal(len, HANDSHAKE_GREETING_BYTES);
	memset(buf, 'G', len);
	handshake_moved(&h, len);
	/* Nothing is sent back to something that is not a worker. */
	assert_int_equal(handshake_io(&h, &buf, &len), HANDSHAKE_DONE);
	assert_int_equal(h.status, HANDSHAKE_BAD);
	testutil_assert_contains(h.why, "not an mwj worker");
}

/* Moves the whole message that from is sending to to, with byte at (if
 * not SIZE_MAX) replaced by value on the way. */
static void pass(struct handshake *from, struct handshake *to, size_t at, unsigned char value)
{
	unsigned char *out, *in;
	size_t nout, nin;

	assert_int_equal(handshake_io(from, &out, &nout), HANDSHAKE_SEND);
	assert_int_equal(handshake_io(to, &in, &nin), HANDSHAKE_RECV);
	assert_int_equal(nout, nin);
	memcpy(in, out, nout);
	if (at != SIZE_MAX)
		in[at] = value;
	handshake_moved(from, nout);
	handshake_moved(to, nin);
}

static void test_a_verdict_with_an_unknown_status_ends_the_handshake(void **state)
{
	struct handshake c, s;

	(void)state;
	start_pair(&c, &s, NULL, NULL);
	/* The greetings go across; the connecting side's verdict arrives with
	 * status 7. */
	pass(&c, &s, SIZE_MAX, 0);
	pass(&s, &c, SIZE_MAX, 0);
	pass(&c, &s, 3, 7);
	assert_true(done(&s));
	assert_int_equal(s.status, HANDSHAKE_BAD);
	testutil_assert_contains(s.why, "not a verdict");
}

static void test_a_peer_of_another_protocol_is_dropped_naming_both_versions(void **state)
{
	struct handshake c, s;

	(void)state;
	start_pair(&c, &s, &key_a, &key_a);
	pass(&c, &s, 11, HANDSHAKE_PROTOCOL - 1); /* the last byte of the version */
	assert_true(done(&s));
	assert_int_equal(s.status, HANDSHAKE_BAD);
	testutil_assert_contains(s.why, "protocol version differs: peer 3, this worker 4");
}

static void test_progress_names_the_message_and_its_bytes(void **state)
{
	struct handshake h;
	char where[96];

	(void)state;
	handshake_init(&h, HANDSHAKE_ACCEPT, &BASE, NULL, 0);
	handshake_moved(&h, 12);
	handshake_progress(&h, where, sizeof(where));
	assert_string_equal(where, "12 of 48 bytes of the greeting");
}

/* --- What a peer learns before it has proved the key --- */

/* Fails if the bytes h has sent hold any of job's values, or anything but
 * zeros where a hello goes. */
static void assert_sent_nothing_of(const struct handshake *h, const struct hello *job)
{
	unsigned char sent[HANDSHAKE_WIRE_BYTES];
	size_t n = 0, at = 0;

	/* The messages alternate, the connecting side's first. */
	static const size_t len[] = {
	    HANDSHAKE_GREETING_BYTES, HANDSHAKE_GREETING_BYTES + HANDSHAKE_MAC_BYTES,
	    HANDSHAKE_STATUS_BYTES + HANDSHAKE_HELLO_BYTES + HANDSHAKE_MAC_BYTES,
	    HANDSHAKE_STATUS_BYTES + HANDSHAKE_HELLO_BYTES + HANDSHAKE_MAC_BYTES,
	    HANDSHAKE_STATUS_BYTES + HANDSHAKE_MAC_BYTES};
	for (int m = 0; m < 5; m++) {
		if ((m % 2 == 0) == (h->role == HANDSHAKE_CONNECT)) {
			memcpy(sent + n, h->wire + at, len[m]);
			n += len[m];
			if (m == 2 || m == 3)
				for (size_t i = 0; i < HANDSHAKE_HELLO_BYTES; i++)
					assert_int_equal(h->wire[at + HANDSHAKE_STATUS_BYTES + i],
					                 0);
		}
		at += len[m];
	}
	assert_int_equal(at, HANDSHAKE_WIRE_BYTES);
	testutil_assert_none_of_job(sent, n, job, "what went to a peer that did not prove the key");
}

static void test_nothing_of_the_job_goes_to_a_peer_before_it_proves_the_key(void **state)
{
	struct hello c_me = testutil_job_hello, s_me = testutil_job_hello, other = BASE;
	struct handshake c, s;

	(void)state;
	s_me.rank = 1;
	/* The accepting side, met by one with another key, who runs
	 * another job. */
	other.rank = 0;
	handshake_init(&c, HANDSHAKE_CONNECT, &other, &key_b, 1);
	handshake_init(&s, HANDSHAKE_ACCEPT, &s_me, &key_a, 0);
	exchange(&c, &s, SIZE_MAX);
	assert_int_equal(s.status, HANDSHAKE_UNAUTHENTICATED);
	assert_sent_nothing_of(&s, &s_me);
	assert_false(c.have_peer);
	/* The connecting side, meeting one with another key. */
	other.rank = 1;
	handshake_init(&c, HANDSHAKE_CONNECT, &c_me, &key_a, 1);
	handshake_init(&s, HANDSHAKE_ACCEPT, &other, &key_b, 0);
	exchange(&c, &s, SIZE_MAX);
	assert_int_equal(c.status, HANDSHAKE_UNAUTHENTICATED);
	assert_sent_nothing_of(&c, &c_me);
	assert_false(s.have_peer);
	/* And a peer without a key gets nothing from one with it either way. */
	handshake_init(&c, HANDSHAKE_CONNECT, &c_me, &key_a, 1);
	handshake_init(&s, HANDSHAKE_ACCEPT, &other, NULL, 0);
	exchange(&c, &s, SIZE_MAX);
	assert_sent_nothing_of(&c, &c_me);
	handshake_init(&c, HANDSHAKE_CONNECT, &other, NULL, 1);
	handshake_init(&s, HANDSHAKE_ACCEPT, &s_me, &key_a, 0);
	exchange(&c, &s, SIZE_MAX);
	assert_sent_nothing_of(&s, &s_me);
	/* With the key, the same job is met and each learns the other's. */
	handshake_init(&c, HANDSHAKE_CONNECT, &c_me, &key_a, 1);
	handshake_init(&s, HANDSHAKE_ACCEPT, &s_me, &key_a, 0);
	exchange(&c, &s, SIZE_MAX);
	assert_int_equal(c.status, HANDSHAKE_OK);
	assert_int_equal(s.status, HANDSHAKE_OK);
	assert_true(c.peer.seed == c_me.seed && s.peer.job_hash == s_me.job_hash);
}

/* --- The key file --- */

struct keyfile {
	char dir[TESTUTIL_TMPDIR_LEN]; /* first, for testutil_fixture_setup() */
};

static int setup_dir(void **state)
{
	return testutil_fixture_setup(state, sizeof(struct keyfile), "jobkey");
}

static int teardown_dir(void **state)
{
	return testutil_fixture_teardown(state);
}

static void test_a_key_file_is_read_whole(void **state)
{
	struct keyfile *fx = *state;
	unsigned char bytes[32];
	char path[128], err[ERR_LEN];
	struct job_key k;

	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)(i * 37); /* NUL and newline bytes too */
	snprintf(path, sizeof(path), "%s/key", fx->dir);
	testutil_write_file(path, bytes, sizeof(bytes));
	assert_int_equal(job_key_load(&k, path, err), 0);
	assert_int_equal(k.len, 32);
	assert_memory_equal(k.bytes, bytes, 32);
	job_key_release(&k);
	assert_int_equal(k.len, 0);
	job_key_release(NULL);
}

static void test_a_bad_key_file_is_refused_naming_the_path(void **state)
{
	struct keyfile *fx = *state;
	static unsigned char big[JOB_KEY_MAX_BYTES + 1];
	char path[128], err[ERR_LEN];
	struct job_key k;

	snprintf(path, sizeof(path), "%s/missing", fx->dir);
	assert_int_equal(job_key_load(&k, path, err), -1);
	testutil_assert_contains(err, path);
	testutil_assert_contains(err, "No such file or directory");

	snprintf(path, sizeof(path), "%s/short", fx->dir);
	static const char short_key[] = "31 bytes: one byte too few, no.";
	assert_int_equal(sizeof(short_key) - 1, 31);
	testutil_write_file(path, short_key, 31);
	assert_int_equal(job_key_load(&k, path, err), -1);
	testutil_assert_contains(err, path);
	testutil_assert_contains(err, "31 bytes, a job key needs at least 32");
	assert_no_key_in(err);

	snprintf(path, sizeof(path), "%s/big", fx->dir);
	testutil_write_file(path, big, sizeof(big));
	assert_int_equal(job_key_load(&k, path, err), -1);
	testutil_assert_contains(err, "longer than 4096 bytes");

	assert_int_equal(job_key_load(&k, fx->dir, err), -1);
	testutil_assert_contains(err, "not a regular file");
	assert_int_equal(k.len, 0);
}

/* job_key_load of path as the user and group 65532 (the images' user): in
 * a child when this runs as root, who reads any file. Its message goes
 * into err. */
static int load_as_non_root(const char *path, char *err)
{
	int fds[2], status = 0, rc = -1;
	pid_t pid;

	if (geteuid() != 0) {
		struct job_key k;
		rc = job_key_load(&k, path, err);
		job_key_release(&k);
		return rc;
	}
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct job_key k;
		char msg[ERR_LEN] = "";
		close(fds[0]);
		if (setgroups(0, NULL) != 0 || setgid(65532) != 0 || setuid(65532) != 0)
			_exit(2);
		int got = job_key_load(&k, path, msg);
		(void)!write(fds[1], msg, strlen(msg) + 1);
		_exit(got == 0 ? 0 : 1);
	}
	close(fds[1]);
	ssize_t n = read(fds[0], err, ERR_LEN - 1);
	err[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_not_equal(WEXITSTATUS(status), 2); /* the child could not drop root */
	return WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* The operator mounts the key 0400: a worker that does not run as its
 * owner reads it only through the pod's fsGroup, and the message says so. */
static void test_a_key_file_the_user_may_not_read_suggests_the_pod_s_fs_group(void **state)
{
	struct keyfile *fx = *state;
	char path[128], err[ERR_LEN] = "";

	assert_int_equal(chmod(fx->dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/locked", fx->dir);
	testutil_write_file(path, KEY_TEXT, strlen(KEY_TEXT));
	assert_int_equal(chmod(path, 0400), 0);
	if (geteuid() != 0)
		assert_int_equal(chmod(path, 0), 0);
	assert_int_equal(load_as_non_root(path, err), -1);
	print_message("    %s\n", err);
	testutil_assert_contains(err, path);
	testutil_assert_contains(err, "Permission denied");
	testutil_assert_contains(err, "securityContext.fsGroup");
	assert_null(strstr(err, "correct horse"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_workers_without_a_key_accept_each_other),
	    cmocka_unit_test(test_workers_holding_the_same_key_prove_it_to_each_other),
	    cmocka_unit_test(test_different_keys_are_refused_on_both_sides_without_showing_the_key),
	    cmocka_unit_test(test_a_key_on_one_side_only_is_refused_on_both_saying_which),
	    cmocka_unit_test(test_a_proved_peer_with_another_model_is_refused_for_good),
	    cmocka_unit_test(test_a_stranger_s_refusal_is_not_believed),
	    cmocka_unit_test(test_a_replayed_handshake_is_refused_on_either_side),
	    cmocka_unit_test(test_garbage_ends_the_handshake_at_once),
	    cmocka_unit_test(test_a_verdict_with_an_unknown_status_ends_the_handshake),
	    cmocka_unit_test(test_a_peer_of_another_protocol_is_dropped_naming_both_versions),
	    cmocka_unit_test(test_nothing_of_the_job_goes_to_a_peer_before_it_proves_the_key),
	    cmocka_unit_test(test_progress_names_the_message_and_its_bytes),
	    cmocka_unit_test_setup_teardown(test_a_key_file_is_read_whole, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_a_bad_key_file_is_refused_naming_the_path,
	                                    setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(
	        test_a_key_file_the_user_may_not_read_suggests_the_pod_s_fs_group, setup_dir,
	        teardown_dir),
	};

	return cmocka_run_group_tests(tests, setup_keys, NULL);
}
