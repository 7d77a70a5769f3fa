/* bench_allreduce.c - the ring all-reduce over loopback TCP, one process per
 * rank as in a real job: time and bus bandwidth per size, as JSON lines.
 *
 *   bench_allreduce [--ranks N] [--min-ms MS]
 *
 * The parent opens one listening socket per rank, forks the ranks, and each
 * forms the ring through rendezvous_join exactly as mwj-worker does. For
 * every size, rank 0 times repeated all-reduces (each one synchronizes the
 * ring, so back-to-back calls measure the collective itself) and prints the
 * median. Bus bandwidth is 2 (n - 1) / n x bytes / time, the figure NCCL's
 * tests report, which is comparable across rank counts.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"
#include "err.h"
#include "net.h"
#include "parse.h"
#include "rendezvous.h"
#include "ring.h"
#include "tf_config.h"

#define MAX_RANKS 16
#define CNN_GRAD  2770634 /* floats in the cnn model's gradient */
#define REPS      9

static const size_t SIZES[] = {4096,    16384,   65536,    262144,
                               1 << 20, 4 << 20, 16 << 20, CNN_GRAD * sizeof(float)};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Times one size: REPS samples, each the mean of enough calls to last
 * min_ms. Every rank runs the same number of calls; rank 0 decides it and
 * tells the others through a one-double all-reduce. */
static double time_size(struct ring *r, float *buf, size_t n, double min_ms, char *err)
{
	struct grad_slice whole = {0, 1, n, n};
	double samples[REPS], calls = 1;

	for (int w = 0; w < 3; w++)
		if (ring_allreduce(r, buf, &whole, 1, err) < 0)
			return -1;
	double t0 = now_ms();
	if (ring_allreduce(r, buf, &whole, 1, err) < 0)
		return -1;
	double one = now_ms() - t0 + 1e-3;
	calls = r->rank == 0 ? (min_ms / one > 1 ? (double)(long)(min_ms / one) : 1) : 0;
	if (ring_allreduce_f64(r, &calls, 1, err) < 0)
		return -1;
	for (int s = 0; s < REPS; s++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (long k = 0; k < (long)calls; k++)
			if (ring_allreduce(r, buf, &whole, 1, err) < 0)
				return -1;
		clock_gettime(CLOCK_MONOTONIC, &b);
		samples[s] =
		    ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) * 1e-6) /
		    calls;
	}
	return bench_median(samples, REPS);
}

static int rank_main(int world, int rank, int lfd, const int *ports, double min_ms)
{
	char err[ERR_LEN];
	struct tf_config tc = {0};
	struct ring r;
	int next, prev;

	if (tf_config_loopback(&tc, ports, world, rank, err) < 0)
		die("%s", err);
	struct hello me = {
	    HANDSHAKE_PROTOCOL,   (uint32_t)world, (uint32_t)rank, 1, 2, 3, 64, 0, 1, 0, 0.001, 0.0,
	    HELLO_COLLECTIVE_HOST};
	if (rendezvous_join(lfd, &tc, &me, NULL, net_now_ms() + 30000, &next, &prev, err) < 0)
		die("rank %d: %s", rank, err);
	ring_init(&r, world, rank, next, prev, "next", "prev", 60000);
	float *buf =
	    xcalloc(SIZES[sizeof(SIZES) / sizeof(SIZES[0]) - 2] / sizeof(float) + 1, sizeof(float));
	for (size_t i = 0; i < sizeof(SIZES) / sizeof(SIZES[0]); i++) {
		size_t n = SIZES[i] / sizeof(float);
		double ms = time_size(&r, buf, n, min_ms, err);
		if (ms < 0)
			die("rank %d: %s", rank, err);
		if (rank == 0) {
			double bytes = (double)(n * sizeof(float));
			printf("{\"bench\":\"ring_allreduce\",\"ranks\":%d,\"bytes\":%zu,"
			       "\"ms_median\":%.4f,\"busbw_gbs\":%.3f%s}\n",
			       world, n * sizeof(float), ms,
			       2.0 * (world - 1) / world * bytes / (ms * 1e-3) / 1e9,
			       n == CNN_GRAD ? ",\"label\":\"cnn gradient\"" : "");
			fflush(stdout);
		}
	}
	free(buf);
	ring_release(&r);
	tf_config_release(&tc);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"ranks", required_argument, NULL, 'r'}, {"min-ms", required_argument, NULL, 'm'}, {0}};
	int world = 2, lfds[MAX_RANKS], ports[MAX_RANKS], c, failed = 0;
	double min_ms = 20;
	pid_t pids[MAX_RANKS];
	char err[ERR_LEN];

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'r' && parse_int(optarg, 2, MAX_RANKS, &world, err) == 0)
			continue;
		if (c == 'm' && parse_double(optarg, 1, 10000, &min_ms, err) == 0)
			continue;
		fprintf(stderr, "usage: bench_allreduce [--ranks 2..%d] [--min-ms MS]\n",
		        MAX_RANKS);
		return 1;
	}
	for (int r = 0; r < world; r++) {
		lfds[r] = net_listen(0, err);
		if (lfds[r] < 0)
			die("%s", err);
		ports[r] = net_local_port(lfds[r]);
	}
	fflush(stdout);
	for (int r = 0; r < world; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			die("fork failed");
		if (pids[r] == 0)
			_exit(rank_main(world, r, lfds[r], ports, min_ms));
	}
	for (int r = 0; r < world; r++) {
		int status;
		if (waitpid(pids[r], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			failed = 1;
		net_close(lfds[r]);
	}
	return failed;
}
