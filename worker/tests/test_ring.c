/* test_ring.c - the ring collectives over real TCP sockets on 127.0.0.1,
 * one thread per rank: sums against a serial sum, bitwise agreement
 * across ranks, strided pieces, broadcast, and lost peers.
 *
 * Each ring is formed the way the worker forms it: a listening socket per
 * rank, a TF_CONFIG naming them, and rendezvous_join on every rank.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "err.h"
#include "net.h"
#include "rendezvous.h"
#include "ring.h"
#include "rng.h"
#include "tf_config.h"

#define MAX_RANKS  8
#define TIMEOUT_MS 30000

struct rank_ctx {
	struct tf_config tc;
	struct ring ring;
	int lfd, rc;
	char err[ERR_LEN];
	/* The work each rank's thread does once the ring is formed. */
	void (*work)(struct rank_ctx *c);
	float *buf;
	size_t n;
	const struct grad_slice *pieces;
	int npieces;
	int silent; /* form the ring, then close it without taking part */
};

static void *rank_main(void *arg)
{
	struct rank_ctx *c = arg;
	struct hello me = {HANDSHAKE_PROTOCOL,
	                   (uint32_t)c->tc.world,
	                   (uint32_t)c->tc.rank,
	                   7,
	                   9,
	                   42,
	                   64,
	                   0,
	                   1,
	                   0,
	                   0.001,
	                   0.0,
	                   HELLO_COLLECTIVE_HOST};
	int next, prev;

	c->rc = rendezvous_join(c->lfd, &c->tc, &me, NULL, net_now_ms() + TIMEOUT_MS, &next, &prev,
	                        c->err);
	if (c->rc < 0)
		return NULL;
	ring_init(&c->ring, c->tc.world, c->tc.rank, next, prev, "next", "prev", TIMEOUT_MS);
	if (c->silent)
		ring_release(&c->ring);
	else
		c->work(c);
	return NULL;
}

/* Forms a ring of world threads and runs each rank's work on it. */
static void run_ring(struct rank_ctx *ranks, int world)
{
	pthread_t threads[MAX_RANKS];
	char err[ERR_LEN];
	int ports[MAX_RANKS];

	for (int r = 0; r < world; r++) {
		ranks[r].lfd = net_listen(0, err);
		assert_true(ranks[r].lfd >= 0);
		ports[r] = net_local_port(ranks[r].lfd);
	}
	for (int r = 0; r < world; r++)
		assert_int_equal(tf_config_loopback(&ranks[r].tc, ports, world, r, err), 0);
	for (int r = 0; r < world; r++)
		assert_int_equal(pthread_create(&threads[r], NULL, rank_main, &ranks[r]), 0);
	for (int r = 0; r < world; r++) {
		pthread_join(threads[r], NULL);
		net_close(ranks[r].lfd);
		tf_config_release(&ranks[r].tc);
	}
}

static void do_allreduce(struct rank_ctx *c)
{
	c->rc = ring_allreduce(&c->ring, c->buf, c->pieces, c->npieces, c->err);
	ring_release(&c->ring);
}

static uint32_t float_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* What the ring must compute for element i: chunk c (of world, by the
 * ring's c * n / world boundaries) is summed starting at rank c, then
 * c + 1, and so on. */
static float ring_order_sum(float *const *in, int world, size_t n, size_t i)
{
	size_t c = 0;

	while ((c + 1) * n / (size_t)world <= i)
		c++;
	float s = in[c][i];
	for (int k = 1; k < world; k++)
		s += in[(c + (size_t)k) % (size_t)world][i];
	return s;
}

static void check_allreduce(int world, size_t n, int integers)
{
	struct rank_ctx ranks[MAX_RANKS] = {0};
	float *in[MAX_RANKS];
	struct grad_slice whole = {0, 1, n, n};
	struct rng g;

	rng_init(&g, 1000 * (uint64_t)world + n, 0);
	for (int r = 0; r < world; r++) {
		in[r] = malloc(n * sizeof(float));
		ranks[r].buf = malloc(n * sizeof(float));
		for (size_t i = 0; i < n; i++)
			in[r][i] = integers ? (float)((int)((i * 7 + (size_t)r * 13) % 1000) - 500)
			                    : rng_uniform(&g, -1.0f, 1.0f);
		memcpy(ranks[r].buf, in[r], n * sizeof(float));
		ranks[r].work = do_allreduce;
		ranks[r].pieces = &whole;
		ranks[r].npieces = 1;
	}
	run_ring(ranks, world);
	for (int r = 0; r < world; r++) {
		if (ranks[r].rc != 0)
			fail_msg("rank %d: %s", r, ranks[r].err);
		assert_memory_equal(ranks[r].buf, ranks[0].buf, n * sizeof(float));
	}
	for (size_t i = 0; i < n; i++) {
		float want = ring_order_sum(in, world, n, i);
		if (integers) {
			double exact = 0;
			for (int r = 0; r < world; r++)
				exact += in[r][i];
			assert_true((double)ranks[0].buf[i] == exact);
		}
		if (float_bits(ranks[0].buf[i]) != float_bits(want))
			fail_msg("world %d n %zu element %zu: %.9g, serial sum %.9g", world, n, i,
			         (double)ranks[0].buf[i], (double)want);
	}
	for (int r = 0; r < world; r++) {
		free(in[r]);
		free(ranks[r].buf);
	}
}

static const size_t SIZES[] = {1, 2, 3, 7, 127, 1000, 65537, (1u << 20) + 3};

static void test_allreduce_of_integers_is_the_exact_sum_on_every_rank(void **state)
{
	(void)state;
	for (int world = 2; world <= MAX_RANKS; world++)
		for (size_t s = 0; s < sizeof(SIZES) / sizeof(SIZES[0]); s++)
			if (SIZES[s] < 100000 || world <= 4 || world == MAX_RANKS)
				check_allreduce(world, SIZES[s], 1);
}

static void test_allreduce_of_random_floats_is_bitwise_the_ring_order_sum(void **state)
{
	(void)state;
	check_allreduce(2, (1u << 20) + 3, 0); /* several MB, odd */
	check_allreduce(3, 65537, 0);
	check_allreduce(5, 999, 0);
	check_allreduce(8, 3, 0); /* fewer elements than ranks */
}

static void test_allreduce_of_strided_pieces_leaves_the_rest_untouched(void **state)
{
	enum { ROWS = 37, COLS = 1001, OFF = 5, WIDTH = 333, TAIL = 3 * COLS + 17 };
	/* A column block of a (ROWS, COLS) matrix, then a contiguous piece. */
	const struct grad_slice pieces[2] = {{OFF, ROWS, WIDTH, COLS},
	                                     {ROWS * COLS, 1, TAIL, TAIL}};
	size_t n = ROWS * COLS + TAIL;
	struct rank_ctx ranks[3] = {0};

	(void)state;
	for (int r = 0; r < 3; r++) {
		ranks[r].buf = malloc(n * sizeof(float));
		for (size_t i = 0; i < n; i++)
			ranks[r].buf[i] = (float)(r + 1) * (float)(i % 251);
		ranks[r].work = do_allreduce;
		ranks[r].pieces = pieces;
		ranks[r].npieces = 2;
	}
	run_ring(ranks, 3);
	for (int r = 0; r < 3; r++) {
		assert_int_equal(ranks[r].rc, 0);
		for (size_t i = 0; i < n; i++) {
			size_t row = i / COLS, col = i % COLS;
			int in =
			    i >= ROWS * COLS || (col >= OFF && col < OFF + WIDTH && row < ROWS);
			float want = (float)(in ? 6 : r + 1) * (float)(i % 251);
			if (ranks[r].buf[i] != want)
				fail_msg("rank %d element %zu: %g, want %g", r, i,
				         (double)ranks[r].buf[i], (double)want);
		}
		free(ranks[r].buf);
	}
}

static void do_f64_and_broadcast(struct rank_ctx *c)
{
	double v[3] = {1.5, (double)c->tc.rank, 1e300};

	c->rc = ring_allreduce_f64(&c->ring, v, 3, c->err);
	if (c->rc == 0 && (v[0] != 1.5 * c->tc.world || v[2] != 1e300 * c->tc.world))
		c->rc = err_set(c->err, "f64 sums %g %g", v[0], v[2]);
	if (c->rc == 0 && c->tc.rank == 2)
		for (size_t i = 0; i < c->n; i++)
			c->buf[i] = (float)i * 0.5f;
	if (c->rc == 0)
		c->rc = ring_broadcast(&c->ring, c->buf, c->n * sizeof(float), 2, c->err);
	ring_release(&c->ring);
}

static void test_broadcast_copies_the_root_buffer_to_every_rank(void **state)
{
	size_t n = 300001; /* several segments, not a multiple of one */
	struct rank_ctx ranks[4] = {0};

	(void)state;
	for (int r = 0; r < 4; r++) {
		ranks[r].buf = calloc(n, sizeof(float));
		ranks[r].n = n;
		ranks[r].work = do_f64_and_broadcast;
	}
	run_ring(ranks, 4);
	for (int r = 0; r < 4; r++) {
		if (ranks[r].rc != 0)
			fail_msg("rank %d: %s", r, ranks[r].err);
		for (size_t i = 0; i < n; i++)
			assert_true(ranks[r].buf[i] == (float)i * 0.5f);
		free(ranks[r].buf);
	}
}

static void test_a_peer_that_leaves_is_named_by_both_neighbours(void **state)
{
	struct rank_ctx ranks[3] = {0};
	struct grad_slice whole = {0, 1, 1 << 20, 1 << 20};

	(void)state;
	for (int r = 0; r < 3; r++) {
		ranks[r].buf = calloc(1 << 20, sizeof(float));
		ranks[r].work = do_allreduce;
		ranks[r].pieces = &whole;
		ranks[r].npieces = 1;
	}
	ranks[2].silent = 1;
	long long t0 = net_now_ms();
	run_ring(ranks, 3);
	/* Long before the 30 s time-out: a closed connection is seen at once. */
	assert_true(net_now_ms() - t0 < TIMEOUT_MS / 2);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(ranks[r].rc, -1);
		assert_non_null(strstr(ranks[r].err, "lost peer"));
		free(ranks[r].buf);
	}
	/* Rank 2 is rank 1's next and rank 0's previous. The first of them to
	 * notice can only blame rank 2; the other may then see that one leave
	 * first (rank 1's writes can sit in its socket buffer for a while). */
	assert_true(strstr(ranks[1].err, "lost peer next") != NULL ||
	            strstr(ranks[0].err, "lost peer prev") != NULL);
	free(ranks[2].buf);
}

struct stall {
	struct ring ring;
	int rc;
	char err[ERR_LEN];
};

static void *stall_main(void *arg)
{
	struct stall *s = arg;
	float x[100] = {0};
	struct grad_slice whole = {0, 1, 100, 100};

	s->rc = ring_allreduce(&s->ring, x, &whole, 1, s->err);
	return NULL;
}

static void test_a_peer_that_stops_moving_times_out(void **state)
{
	int sv[2][2];
	struct stall s;
	pthread_t t;

	(void)state;
	/* Two socket pairs stand in for the ring of 2; the peer's ends stay open
	 * and silent. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv[0]), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv[1]), 0);
	ring_init(&s.ring, 2, 0, sv[0][0], sv[1][0], "rank 1 (next)", "rank 1 (prev)", 300);
	assert_int_equal(pthread_create(&t, NULL, stall_main, &s), 0);
	pthread_join(t, NULL);
	assert_int_equal(s.rc, -1);
	assert_non_null(strstr(s.err, "no progress"));
	assert_non_null(strstr(s.err, "rank 1"));
	ring_release(&s.ring);
	close(sv[0][1]);
	close(sv[1][1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allreduce_of_integers_is_the_exact_sum_on_every_rank),
	    cmocka_unit_test(test_allreduce_of_random_floats_is_bitwise_the_ring_order_sum),
	    cmocka_unit_test(test_allreduce_of_strided_pieces_leaves_the_rest_untouched),
	    cmocka_unit_test(test_broadcast_copies_the_root_buffer_to_every_rank),
	    cmocka_unit_test(test_a_peer_that_leaves_is_named_by_both_neighbours),
	    cmocka_unit_test(test_a_peer_that_stops_moving_times_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
