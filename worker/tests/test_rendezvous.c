/* test_rendezvous.c - forming the ring over real sockets on 127.0.0.1:
 * which differences between two workers' hellos are refused and how each
 * is explained, a refused peer, giving up when a peer never comes; that
 * strangers (idle, garbage, cut-off, silent) at either port never hold the
 * real peer up; and that with a job key only workers holding it meet, while
 * a missing or different key is said on both sides and never shown.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "err.h"
#include "log.h"
#include "net.h"
#include "rendezvous.h"
#include "strangers.h"
#include "testutil.h"
#include "tf_config.h"

/* The real peer must be met this soon after it arrives, whatever else is
 * connected: about a second, with room for sanitizers on a busy machine.
 * Holding it up behind even one silent stranger took 10 s before. */
#define RING_FORMS_MS 1500
#define STRANGERS     100 /* idle ones, and as many sending garbage, per port */

static const struct hello BASE = {HANDSHAKE_PROTOCOL,   2, 1, 11, 22, 42, 64, 0, 3, 0, 0.001, 0.0,
                                  HELLO_COLLECTIVE_HOST};

struct mismatch {
	void (*change)(struct hello *h);
	const char *says;
};

static void other_protocol(struct hello *h)
{
	h->protocol++;
}
static void other_job(struct hello *h)
{
	h->job_hash++;
}
static void other_world(struct hello *h)
{
	h->world = 3;
}
static void other_rank(struct hello *h)
{
	h->rank = 0;
}
static void other_model(struct hello *h)
{
	h->arch_hash++;
}
static void other_seed(struct hello *h)
{
	h->seed = 7;
}
static void other_batch(struct hello *h)
{
	h->batch_size = 32;
}
static void other_lr(struct hello *h)
{
	h->learning_rate = 0.01;
}
static void other_optimizer(struct hello *h)
{
	h->optimizer = 1;
}
static void other_epochs(struct hello *h)
{
	h->epochs = 4;
}
static void other_steps(struct hello *h)
{
	h->steps_per_epoch = 100;
}
static void other_collective(struct hello *h)
{
	h->collective = HELLO_COLLECTIVE_NCCL;
}

static void test_every_difference_between_peers_is_refused_with_its_reason(void **state)
{
	static const struct mismatch table[] = {
	    {other_protocol, "protocol version differs"},
	    {other_job, "another job"},
	    {other_world, "world size differs: peer 3, this worker 2"},
	    {other_rank, "peer is rank 0 where rank 1 was expected"},
	    {other_model, "model differs"},
	    {other_seed, "--seed differs: peer 7, this worker 42"},
	    {other_batch, "--batch-size differs: peer 32, this worker 64"},
	    {other_lr, "optimizer settings differ: peer lr 0.01"},
	    {other_optimizer, "optimizer settings differ"},
	    {other_epochs, "--epochs or --steps-per-epoch differ: peer 4 x 0"},
	    {other_steps, "--epochs or --steps-per-epoch differ: peer 3 x 100"},
	    {other_collective, "collective differs: peer nccl (GPU), this worker ring (CPU)"},
	};
	char why[ERR_LEN];

	(void)state;
	assert_int_equal(handshake_check(&BASE, &BASE, 1, why), 0);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		struct hello theirs = BASE;
		table[i].change(&theirs);
		why[0] = '\0';
		assert_int_equal(handshake_check(&BASE, &theirs, 1, why), -1);
		if (!strstr(why, table[i].says))
			fail_msg("case %zu: '%s' does not say '%s'", i, why, table[i].says);
	}
}

static void test_the_job_identity_covers_name_and_addresses(void **state)
{
	const char *a = "{\"cluster\":{\"worker\":[\"a:1\",\"b:1\"]},\"task\":{\"type\":\"worker\","
	                "\"index\":0}}";
	const char *b = "{\"cluster\":{\"worker\":[\"a:1\",\"c:1\"]},\"task\":{\"type\":\"worker\","
	                "\"index\":0}}";
	struct tf_config ta = {0}, tb = {0};
	char err[ERR_LEN];

	(void)state;
	assert_int_equal(tf_config_parse(&ta, a, strlen(a), err), 0);
	assert_int_equal(tf_config_parse(&tb, b, strlen(b), err), 0);
	assert_true(rendezvous_job_hash("job", &ta) == rendezvous_job_hash("job", &ta));
	assert_true(rendezvous_job_hash("job", &ta) != rendezvous_job_hash("job2", &ta));
	assert_true(rendezvous_job_hash("job", &ta) != rendezvous_job_hash("job", &tb));
	tf_config_release(&ta);
	tf_config_release(&tb);
}

struct side {
	struct tf_config tc;
	struct hello me;
	const struct job_key *key;
	int lfd, rc, next, prev;
	long long deadline_ms; /* after its start */
	long long delay_ms;    /* before its start */
	long long took_ms;     /* from its start to the end of rendezvous_join */
	char err[ERR_LEN];
};

static void *join(void *arg)
{
	struct side *s = arg;
	long long t0;

	nanosleep(&(struct timespec){s->delay_ms / 1000, (s->delay_ms % 1000) * 1000000L}, NULL);
	t0 = net_now_ms();
	s->rc = rendezvous_join(s->lfd, &s->tc, &s->me, s->key, t0 + s->deadline_ms, &s->next,
	                        &s->prev, s->err);
	s->took_ms = net_now_ms() - t0;
	return NULL;
}

/* Listens for a world of 2 on 127.0.0.1 and writes each side's TF_CONFIG. */
static void listen_pair(struct side *s)
{
	char json[512], err[ERR_LEN];
	int ports[2];

	for (int r = 0; r < 2; r++) {
		s[r].lfd = net_listen(0, err);
		assert_true(s[r].lfd >= 0);
		ports[r] = net_local_port(s[r].lfd);
	}
	for (int r = 0; r < 2; r++) {
		snprintf(json, sizeof(json),
		         "{\"cluster\":{\"worker\":[\"127.0.0.1:%d\",\"127.0.0.1:%d\"]},"
		         "\"task\":{\"type\":\"worker\",\"index\":%d}}",
		         ports[0], ports[1], r);
		assert_int_equal(tf_config_parse(&s[r].tc, json, strlen(json), err), 0);
		s[r].me.rank = (uint32_t)r;
	}
}

/* Runs rendezvous_join for the first `start` sides at once and waits. */
static void join_pair(struct side *s, int start)
{
	pthread_t t[2];

	for (int r = 0; r < start; r++)
		assert_int_equal(pthread_create(&t[r], NULL, join, &s[r]), 0);
	for (int r = 0; r < start; r++)
		pthread_join(t[r], NULL);
}

static void close_pair(struct side *s, int start)
{
	for (int r = 0; r < 2; r++) {
		net_close(s[r].lfd);
		tf_config_release(&s[r].tc);
		if (r < start && s[r].rc == 0) {
			net_close(s[r].next);
			net_close(s[r].prev);
		}
	}
}

/* Two workers of a world of 2 on 127.0.0.1; only the first `start` run. */
static void run_pair(struct side *s, int start)
{
	listen_pair(s);
	join_pair(s, start);
	close_pair(s, start);
}

static void test_workers_with_the_same_configuration_form_a_ring(void **state)
{
	struct side s[2] = {{.me = BASE, .deadline_ms = 20000}, {.me = BASE, .deadline_ms = 20000}};

	(void)state;
	run_pair(s, 2);
	assert_int_equal(s[0].rc, 0);
	assert_int_equal(s[1].rc, 0);
}

static void test_a_peer_running_another_model_is_refused_by_both(void **state)
{
	struct side s[2] = {{.me = BASE, .deadline_ms = 3000}, {.me = BASE, .deadline_ms = 3000}};

	(void)state;
	s[1].me.arch_hash++;
	run_pair(s, 2);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(s[r].rc, RENDEZVOUS_REFUSED);
		assert_non_null(strstr(s[r].err, "refused"));
		assert_non_null(strstr(s[r].err, "model differs"));
	}
}

static void test_a_peer_that_never_comes_times_out_and_is_named(void **state)
{
	struct side s[2] = {{.me = BASE, .deadline_ms = 500}, {.me = BASE}};

	(void)state;
	run_pair(s, 1);
	assert_int_equal(s[0].rc, -1);
	assert_non_null(strstr(s[0].err, "timed out"));
	assert_non_null(strstr(s[0].err, "rank 1"));
}

/* --- Strangers --- */

/* The log, captured in a temporary file for the length of a test. */
static FILE *log_file;

static int capture_log(void **state)
{
	(void)state;
	log_file = tmpfile();
	if (log_file == NULL)
		return -1;
	log_set_stream(log_file);
	return 0;
}

static int restore_log(void **state)
{
	(void)state;
	log_set_stream(NULL);
	if (log_file)
		fclose(log_file);
	log_file = NULL;
	return 0;
}

/* What was logged so far; the caller frees it. */
static char *logged(void)
{
	long n;
	char *text;

	fflush(log_file);
	n = ftell(log_file);
	assert_true(n >= 0);
	text = calloc(1, (size_t)n + 1);
	assert_non_null(text);
	rewind(log_file);
	assert_int_equal(fread(text, 1, (size_t)n, log_file), (size_t)n);
	return text;
}

static int count(const char *text, const char *part)
{
	int n = 0;

	for (const char *p = strstr(text, part); p; p = strstr(p + 1, part))
		n++;
	return n;
}

static int ports_of(const struct side *s, int *ports)
{
	for (int r = 0; r < 2; r++)
		ports[r] = s[r].tc.addrs[r].port;
	return 2;
}

/* Waits until the strangers are queued at both listeners: once both
 * queues hold a connection, the strangers' thread needs a few of its
 * rounds (25 new connections a port each) for the rest. */
static void wait_for_strangers(const struct side *s)
{
	struct pollfd p[2] = {{s[0].lfd, POLLIN, 0}, {s[1].lfd, POLLIN, 0}};
	double deadline = testutil_now() + 10;

	while (testutil_now() < deadline)
		if (poll(p, 2, 100) > 0 && (p[0].revents & POLLIN) && (p[1].revents & POLLIN))
			break;
	nanosleep(&(struct timespec){0, 300L * 1000 * 1000}, NULL);
}

static void test_strangers_at_both_ports_do_not_hold_up_the_real_peer(void **state)
{
	/* Worker 1 comes a second after worker 0, which waits among idle and
	 * garbage connections that keep coming back when dropped. */
	struct side s[2] = {{.me = BASE, .deadline_ms = 30000},
	                    {.me = BASE, .deadline_ms = 30000, .delay_ms = 1000}};
	struct strangers *st;
	int ports[2];
	char *log;

	(void)state;
	listen_pair(s);
	st = strangers_start(ports, ports_of(s, ports), STRANGERS, STRANGERS);
	assert_non_null(st);
	wait_for_strangers(s);
	long long t0 = net_now_ms();
	join_pair(s, 2);
	long long seconds = (net_now_ms() - t0) / 1000 + 1;
	long made = strangers_stop(st);
	assert_int_equal(s[0].rc, 0);
	assert_int_equal(s[1].rc, 0);
	assert_true(made >= 2 * STRANGERS);
	if (s[1].took_ms > RING_FORMS_MS)
		fail_msg("the ring formed %lld ms after the peer arrived, not within %d ms",
		         s[1].took_ms, RING_FORMS_MS);
	close_pair(s, 2);
	/* Every dropped stranger may be logged, but not every one is: two
	 * accepting sides, each at most its burst and then one a second. */
	log = logged();
	int lines = count(log, "dropped connection from");
	if (lines == 0 || lines > 2 * (10 + (int)seconds + 1))
		fail_msg("%d log lines about dropped connections in %lld s:\n%s", lines, seconds,
		         log);
	if (made <= 2 * (10 + seconds + 1))
		fail_msg("only %ld strangers came: too few to show the rate limit", made);
	free(log);
}

static void test_strangers_during_a_rejoin_do_not_hold_up_the_replacement(void **state)
{
	/* As after a lost peer: worker 0's listener has queued strangers
	 * all along; it rejoins, and the replacement comes later. */
	struct side s[2] = {{.me = BASE, .deadline_ms = 30000},
	                    {.me = BASE, .deadline_ms = 30000, .delay_ms = 1500}};
	struct strangers *st;
	int ports[2];

	(void)state;
	listen_pair(s);
	join_pair(s, 2); /* the first ring */
	assert_int_equal(s[0].rc, 0);
	assert_int_equal(s[1].rc, 0);
	for (int r = 0; r < 2; r++) {
		net_close(s[r].next);
		net_close(s[r].prev);
	}
	st = strangers_start(ports, ports_of(s, ports), STRANGERS, STRANGERS);
	assert_non_null(st);
	wait_for_strangers(s);
	join_pair(s, 2); /* the ring again */
	strangers_stop(st);
	assert_int_equal(s[0].rc, 0);
	assert_int_equal(s[1].rc, 0);
	if (s[1].took_ms > RING_FORMS_MS)
		fail_msg("the ring formed again %lld ms after the replacement arrived, not within "
		         "%d ms",
		         s[1].took_ms, RING_FORMS_MS);
	close_pair(s, 2);
}

/* A listener at a port that accepts and then says nothing, until closed. */
struct mute {
	int lfd;
	int hold_ms;
};

static void *mute_run(void *arg)
{
	struct mute *m = arg;
	int fds[64], n = 0;
	long long end = net_now_ms() + m->hold_ms;
	char peer[64], err[ERR_LEN];

	while (net_now_ms() < end) {
		int fd = net_accept(m->lfd, 50, peer, sizeof(peer), err);
		if (fd >= 0 && n < 64)
			fds[n++] = fd;
		else
			net_close(fd);
	}
	for (int i = 0; i < n; i++)
		net_close(fds[i]);
	return NULL;
}

static void test_a_peer_address_that_accepts_and_says_nothing_is_tried_again(void **state)
{
	/* Worker 1's port is first held by something that accepts and says
	 * nothing; worker 0 must give up on it and try again, and meet
	 * worker 1 once it listens there. */
	struct side s[2] = {{.me = BASE, .deadline_ms = 30000},
	                    {.me = BASE, .deadline_ms = 30000, .delay_ms = 3000}};
	struct mute m = {.hold_ms = 2800};
	pthread_t t;
	char *log;

	(void)state;
	listen_pair(s);
	m.lfd = s[1].lfd; /* worker 1 takes the listener over once the mute one is done */
	assert_int_equal(pthread_create(&t, NULL, mute_run, &m), 0);
	join_pair(s, 2);
	pthread_join(t, NULL);
	assert_int_equal(s[0].rc, 0);
	assert_int_equal(s[1].rc, 0);
	log = logged();
	testutil_assert_contains(log, "timed out after 0 of 80 bytes of the greeting reply");
	free(log);
	close_pair(s, 2);
}

/* Connects to port and sends the first n bytes of a real greeting, then
 * stays connected (close_after 0) or closes. Returns the socket or -1. */
static int cut_off_hello(int port, size_t n, int close_after)
{
	struct handshake h;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	unsigned char *buf;
	size_t len;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	handshake_init(&h, HANDSHAKE_CONNECT, &BASE, NULL, 1);
	assert_int_equal(handshake_io(&h, &buf, &len), HANDSHAKE_SEND);
	assert_true(send(fd, buf, n, MSG_NOSIGNAL) == (ssize_t)n);
	if (close_after) {
		close(fd);
		return -1;
	}
	return fd;
}

static void test_cut_off_greetings_are_dropped_and_the_ring_forms(void **state)
{
	struct side s[2] = {{.me = BASE, .deadline_ms = 30000},
	                    {.me = BASE, .deadline_ms = 30000, .delay_ms = 500}};
	int kept[8];
	char *log;

	(void)state;
	listen_pair(s);
	for (int i = 0; i < 8; i++)
		kept[i] = cut_off_hello(s[0].tc.addrs[0].port, 30, i % 2);
	join_pair(s, 2);
	assert_int_equal(s[0].rc, 0);
	assert_int_equal(s[1].rc, 0);
	assert_true(s[1].took_ms <= RING_FORMS_MS);
	for (int i = 0; i < 8; i++)
		if (kept[i] >= 0)
			close(kept[i]);
	log = logged();
	testutil_assert_contains(log, "closed after 30 of 48 bytes of the greeting");
	free(log);
	close_pair(s, 2);
}

/* --- The job key --- */

static const char KEY_TEXT[] = "correct horse battery staple, job 1";

static void set_key(struct job_key *k, char last)
{
	k->len = strlen(KEY_TEXT);
	memcpy(k->bytes, KEY_TEXT, k->len);
	k->bytes[k->len - 1] = (unsigned char)last;
}

static void test_workers_holding_the_job_key_form_a_ring(void **state)
{
	struct job_key k;
	struct side s[2] = {{.me = BASE, .key = &k, .deadline_ms = 20000},
	                    {.me = BASE, .key = &k, .deadline_ms = 20000}};
	struct strangers *st;
	int ports[2];

	(void)state;
	set_key(&k, '1');
	listen_pair(s);
	st = strangers_start(ports, ports_of(s, ports), 10, 10);
	assert_non_null(st);
	join_pair(s, 2);
	strangers_stop(st);
	assert_int_equal(s[0].rc, 0);
	assert_int_equal(s[1].rc, 0);
	close_pair(s, 2);
}

/* Both sides give up at their deadline, retryable (-1, never REFUSED: a
 * stranger without the key must not be able to end a worker), and both
 * say what is wrong with the key; nothing shows the key. */
static void assert_key_trouble_on_both_sides(struct side *s, const char *says0, const char *says1)
{
	char *log;

	run_pair(s, 2);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(s[r].rc, -1);
		assert_null(strstr(s[r].err, "correct horse"));
	}
	testutil_assert_contains(s[0].err, says0);
	testutil_assert_contains(s[1].err, says1);
	log = logged();
	assert_null(strstr(log, "correct horse"));
	testutil_assert_contains(log, says0);
	testutil_assert_contains(log, says1);
	free(log);
}

static void test_a_different_key_is_refused_on_both_sides_without_showing_it(void **state)
{
	struct job_key k1, k2;
	struct side s[2] = {{.me = BASE, .key = &k1, .deadline_ms = 1500},
	                    {.me = BASE, .key = &k2, .deadline_ms = 1500}};

	(void)state;
	set_key(&k1, '1');
	set_key(&k2, '2');
	assert_key_trouble_on_both_sides(s, "does not hold this job's key",
	                                 "does not hold this job's key");
}

static void test_a_key_on_one_side_only_is_refused_on_both_sides(void **state)
{
	struct job_key k;
	struct side s[2] = {{.me = BASE, .key = &k, .deadline_ms = 1500},
	                    {.me = BASE, .deadline_ms = 1500}};

	(void)state;
	set_key(&k, '1');
	assert_key_trouble_on_both_sides(s, "no job key on the peer's side",
	                                 "this worker has none (--job-secret-file)");
}

/* A stranger that greets a worker holding the job key as a keyed worker
 * would, and then cannot prove the key, is told nothing of the job: none
 * of its values, as they go on the wire, is among what the worker sends
 * back before it hangs up. Protocol 3 answered the first message with
 * the job's whole hello. */
static void test_a_stranger_learns_nothing_of_the_job_from_a_keyed_worker(void **state)
{
	struct job_key k;
	struct side s[2] = {{.me = testutil_job_hello, .key = &k, .deadline_ms = 4000},
	                    {.me = testutil_job_hello}};
	unsigned char greeting[48] = "MWJRING\n", got[8192];
	pthread_t t;

	(void)state;
	set_key(&k, '1');
	listen_pair(s);
	/* Protocol, a key flag, and a nonce. */
	bytes_put_be32(greeting + 8, HANDSHAKE_PROTOCOL);
	bytes_put_be32(greeting + 12, 1);
	for (size_t i = 16; i < sizeof(greeting); i++)
		greeting[i] = (unsigned char)(i * 29);
	assert_int_equal(pthread_create(&t, NULL, join, &s[0]), 0);
	long n = strangers_listen_in(s[0].tc.addrs[0].port, greeting, sizeof(greeting), got,
	                             sizeof(got), 3000);
	pthread_join(t, NULL);
	close_pair(s, 1);
	print_message("the stranger was told %ld bytes\n", n);
	/* The worker answered: its greeting and its proof at least. */
	assert_true(n >= 48);
	testutil_assert_none_of_job(got, (size_t)n, &testutil_job_hello,
	                            "what the stranger was told");
	char *log = logged();
	testutil_assert_contains(log, "dropped connection from '127.0.0.1:");
	free(log);
}

#define LOGGED(f) cmocka_unit_test_setup_teardown(f, capture_log, restore_log)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_difference_between_peers_is_refused_with_its_reason),
	    cmocka_unit_test(test_the_job_identity_covers_name_and_addresses),
	    cmocka_unit_test(test_workers_with_the_same_configuration_form_a_ring),
	    cmocka_unit_test(test_a_peer_running_another_model_is_refused_by_both),
	    cmocka_unit_test(test_a_peer_that_never_comes_times_out_and_is_named),
	    LOGGED(test_strangers_at_both_ports_do_not_hold_up_the_real_peer),
	    LOGGED(test_strangers_during_a_rejoin_do_not_hold_up_the_replacement),
	    LOGGED(test_a_peer_address_that_accepts_and_says_nothing_is_tried_again),
	    LOGGED(test_cut_off_greetings_are_dropped_and_the_ring_forms),
	    LOGGED(test_workers_holding_the_job_key_form_a_ring),
	    LOGGED(test_a_different_key_is_refused_on_both_sides_without_showing_it),
	    LOGGED(test_a_key_on_one_side_only_is_refused_on_both_sides),
	    LOGGED(test_a_stranger_learns_nothing_of_the_job_from_a_keyed_worker),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
