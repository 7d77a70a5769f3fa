/* bench_rendezvous.c - how soon two workers form the ring, and what the job
 * key costs, as JSON lines.
 *
 *   bench_rendezvous [--reps N] [--strangers N]
 *
 * arrival_to_ring: two ranks on 127.0.0.1 in one process (a thread each,
 * real sockets, rendezvous_join as mwj-worker runs it). Rank 0 is waiting
 * already; rank 1 arrives 100 ms later, as a replacement worker does after
 * a preemption; the sample is rank 1's time from calling rendezvous_join to
 * a ring. Without a key, with one, and with one while N idle connections
 * and N sending garbage (strangers.h) keep coming to both ports.
 *
 * handshake: the four-message handshake alone, both sides in memory, so
 * the HMAC-SHA256 work shows without the network: microseconds of CPU per
 * handshake, with and without a key.
 */
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"
#include "err.h"
#include "handshake.h"
#include "log.h"
#include "net.h"
#include "parse.h"
#include "rendezvous.h"
#include "strangers.h"
#include "tf_config.h"

#define MAX_REPS   200
#define LATE_MS    100
#define HANDSHAKES 20000

static const struct hello BASE = {HANDSHAKE_PROTOCOL,   2, 0, 1, 2, 3, 64, 0, 1, 0, 0.001, 0.0,
                                  HELLO_COLLECTIVE_HOST};

struct side {
	struct tf_config tc;
	const struct job_key *key;
	int lfd, rc, next, prev;
	long long delay_ms, took_ms;
	char err[ERR_LEN];
};

static void *join(void *arg)
{
	struct side *s = arg;
	struct hello me = BASE;

	me.rank = (uint32_t)s->tc.rank;
	nanosleep(&(struct timespec){0, s->delay_ms * 1000000L}, NULL);
	long long t0 = net_now_ms();
	s->rc =
	    rendezvous_join(s->lfd, &s->tc, &me, s->key, t0 + 30000, &s->next, &s->prev, s->err);
	s->took_ms = net_now_ms() - t0;
	return NULL;
}

/* Waits until strangers are queued at both listeners, and a little more for
 * the rest of them. */
static void wait_queued(const struct side *s)
{
	struct pollfd p[2] = {{s[0].lfd, POLLIN, 0}, {s[1].lfd, POLLIN, 0}};

	for (int i = 0; i < 100; i++)
		if (poll(p, 2, 100) > 0 && (p[0].revents & POLLIN) && (p[1].revents & POLLIN))
			break;
	nanosleep(&(struct timespec){0, 300L * 1000000L}, NULL);
}

/* One sample: the late rank's milliseconds from arrival to ring. */
static double arrival_to_ring(const struct job_key *key, int strangers)
{
	struct side s[2] = {{.key = key}, {.key = key, .delay_ms = LATE_MS}};
	struct strangers *st = NULL;
	pthread_t t[2];
	int ports[2];
	char err[ERR_LEN];

	for (int r = 0; r < 2; r++) {
		s[r].lfd = net_listen(0, err);
		if (s[r].lfd < 0)
			die("%s", err);
		ports[r] = net_local_port(s[r].lfd);
	}
	for (int r = 0; r < 2; r++)
		if (tf_config_loopback(&s[r].tc, ports, 2, r, err) < 0)
			die("%s", err);
	if (strangers > 0) {
		st = strangers_start(ports, 2, strangers, strangers);
		if (st == NULL)
			die("cannot start %d strangers", strangers);
		wait_queued(s);
	}
	for (int r = 0; r < 2; r++)
		if (pthread_create(&t[r], NULL, join, &s[r]) != 0)
			die("pthread_create");
	for (int r = 0; r < 2; r++)
		pthread_join(t[r], NULL);
	strangers_stop(st);
	for (int r = 0; r < 2; r++) {
		if (s[r].rc < 0)
			die("rank %d: %s", r, s[r].err);
		net_close(s[r].next);
		net_close(s[r].prev);
		net_close(s[r].lfd);
		tf_config_release(&s[r].tc);
	}
	return (double)s[1].took_ms;
}

static void report_arrival(const struct job_key *key, int strangers, int reps)
{
	double v[MAX_REPS], max = 0;

	for (int i = 0; i < reps; i++) {
		v[i] = arrival_to_ring(key, strangers);
		max = v[i] > max ? v[i] : max;
	}
	printf("{\"bench\":\"rendezvous\",\"what\":\"arrival_to_ring\",\"key\":%s,"
	       "\"strangers_per_port\":%d,\"reps\":%d,\"ms_median\":%.1f,\"ms_max\":%.1f}\n",
	       key ? "true" : "false", strangers ? 2 * strangers : 0, reps, bench_median(v, reps),
	       max);
	fflush(stdout);
}

static double cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* Runs one handshake between two in-memory sides; returns 0 if both end OK. */
static int one_handshake(const struct job_key *key)
{
	static struct handshake c, s;
	struct hello cm = BASE, sm = BASE;

	sm.rank = 1;
	handshake_init(&c, HANDSHAKE_CONNECT, &cm, key, 1);
	handshake_init(&s, HANDSHAKE_ACCEPT, &sm, key, 0);
	for (;;) {
		unsigned char *out, *in;
		size_t nout, nin;
		struct handshake *from = &c, *to = &s;
		if (handshake_io(&c, &out, &nout) != HANDSHAKE_SEND) {
			from = &s, to = &c;
			if (handshake_io(&s, &out, &nout) != HANDSHAKE_SEND)
				break;
		}
		if (handshake_io(to, &in, &nin) != HANDSHAKE_RECV)
			break;
		memcpy(in, out, nout);
		handshake_moved(from, nout);
		handshake_moved(to, nout);
	}
	return c.status == HANDSHAKE_OK && s.status == HANDSHAKE_OK ? 0 : -1;
}

static void report_handshake(const struct job_key *key)
{
	double t0 = cpu_us();

	for (int i = 0; i < HANDSHAKES; i++)
		if (one_handshake(key) < 0)
			die("handshake %d failed", i);
	printf("{\"bench\":\"handshake\",\"key\":%s,\"handshakes\":%d,"
	       "\"cpu_us_per_handshake_both_sides\":%.2f}\n",
	       key ? "true" : "false", HANDSHAKES, (cpu_us() - t0) / HANDSHAKES);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"reps", required_argument, NULL, 'r'},
	                                     {"strangers", required_argument, NULL, 's'},
	                                     {0}};
	int reps = 20, strangers = 100, c;
	struct job_key key = {.len = 32};
	char err[ERR_LEN];

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'r' && parse_int(optarg, 1, MAX_REPS, &reps, err) == 0)
			continue;
		if (c == 's' && parse_int(optarg, 1, 500, &strangers, err) == 0)
			continue;
		fprintf(stderr, "usage: bench_rendezvous [--reps 1..%d] [--strangers 1..500]\n",
		        MAX_REPS);
		return 1;
	}
	for (size_t i = 0; i < key.len; i++)
		key.bytes[i] = (unsigned char)(i * 7 + 3);
	/* Every sample with strangers drops hundreds of them, each worth a
	 * warning: only errors here. */
	log_set_level(LOG_ERROR);
	report_handshake(NULL);
	report_handshake(&key);
	report_arrival(NULL, 0, reps);
	report_arrival(&key, 0, reps);
	report_arrival(&key, strangers, reps);
	return 0;
}
