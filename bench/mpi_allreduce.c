/* mpi_allreduce.c - the baseline our ring all-reduce is measured against:
 * Open MPI's MPI_Allreduce(MPI_FLOAT, MPI_SUM) at the gradient sizes we care
 * about, from 4 KiB to 16 MiB plus the `cnn` model's gradient.
 *
 * Each iteration is bracketed by MPI_Barrier and timed on every rank; the
 * iteration's time is the maximum over ranks (the slowest rank is when the
 * step can go on), and the median over iterations is reported. The reduction
 * runs in place by default, as a trainer reduces its gradient buffer; the
 * buffer is refilled outside the timed region so the sums stay finite and
 * the first result can be checked.
 *
 * Not built by the Makefile (it needs mpicc):
 *   mpicc -O2 -std=c17 -o build/bin/mpi_allreduce bench/mpi_allreduce.c
 *   mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ob1 \
 *       --mca btl tcp,self --mca btl_tcp_if_include lo build/bin/mpi_allreduce
 * (ob1 with only the tcp and self transports: no shared memory, no UCX.)
 *
 * usage: mpi_allreduce [--min-iters N] [--time SEC] [--out-of-place]
 */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_stats.h"
#include <string.h>

#define MPIB_CNN_FLOATS 2770634L /* gradient of the `cnn` model */
#define MPIB_WARMUP     5
#define MPIB_MAX_ITERS  10000

struct mpib_size {
	long floats;
	const char *label; /* NULL for the plain power-of-two sizes */
};

static const struct mpib_size mpib_sizes[] = {
    {1024, NULL},
    {4096, NULL},
    {16384, NULL},
    {65536, NULL},
    {262144, NULL},
    {1048576, NULL},
    {MPIB_CNN_FLOATS, "cnn"},
    {4194304, NULL},
};

struct mpib_opts {
	long min_iters;   /* at least this many timed iterations per size */
	double seconds;   /* and about this much time per size */
	int out_of_place; /* separate send buffer instead of MPI_IN_PLACE */
};

static int rank0_say(int rank, const char *msg)
{
	if (rank == 0)
		fprintf(stderr, "mpi_allreduce: %s\n", msg);
	return -1;
}

/* Every rank parses the same argv, so every rank reaches the same verdict
 * and they can all return without talking to each other. */
static int parse_opts(int argc, char **argv, int rank, struct mpib_opts *o)
{
	static const struct option table[] = {
	    {"min-iters", required_argument, NULL, 'n'},
	    {"time", required_argument, NULL, 't'},
	    {"out-of-place", no_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	char *end;

	o->min_iters = 20;
	o->seconds = 0.25;
	o->out_of_place = 0;
	opterr = 0; /* one message from rank 0, not one per rank */
	while ((c = getopt_long(argc, argv, "", table, NULL)) != -1) {
		switch (c) {
		case 'n':
			o->min_iters = strtol(optarg, &end, 10);
			if (end == optarg || *end || o->min_iters < 1 ||
			    o->min_iters > MPIB_MAX_ITERS)
				return rank0_say(rank, "--min-iters: expected 1..10000");
			break;
		case 't':
			o->seconds = strtod(optarg, &end);
			if (end == optarg || *end || !(o->seconds >= 0.0 && o->seconds <= 60.0))
				return rank0_say(rank, "--time: expected 0..60 seconds");
			break;
		case 'o':
			o->out_of_place = 1;
			break;
		default:
			rank0_say(
			    rank,
			    "usage: mpi_allreduce [--min-iters N] [--time SEC] [--out-of-place]");
			return c == 'h' ? 1 : -1;
		}
	}
	if (optind != argc)
		return rank0_say(rank, "unexpected argument");
	return 0;
}

/* Each rank contributes rank + 1, so every element must come back as
 * N(N+1)/2, exactly representable for any sane N. */
static void fill(float *buf, long n, int rank)
{
	for (long i = 0; i < n; i++)
		buf[i] = (float)(rank + 1);
}

/* One timed MPI_Allreduce; returns this rank's seconds. */
static double allreduce_once(float *buf, float *send, long n, int rank)
{
	fill(send ? send : buf, n, rank);
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	MPI_Allreduce(send ? send : MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	return MPI_Wtime() - t0;
}

static int bench_size(const struct mpib_size *s, const struct mpib_opts *o, int rank, int nranks,
                      float *buf, float *send, double *t, double *tmax)
{
	double warm = 0.0, per_iter;
	long iters, bad = 0;
	float want = (float)nranks * (float)(nranks + 1) / 2.0f;

	/* Warm-up: connections, registration, page faults; also the estimate
	 * of one iteration's cost that sets the iteration count. */
	for (int i = 0; i < MPIB_WARMUP; i++)
		warm += allreduce_once(buf, send, s->floats, rank);
	for (long i = 0; i < s->floats; i++)
		bad += buf[i] != want;
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (bad) {
		if (rank == 0)
			fprintf(stderr, "mpi_allreduce: %ld wrong sums at %ld floats\n", bad,
			        s->floats);
		return -1;
	}
	/* All ranks must agree on the count: decide from the max over ranks. */
	MPI_Allreduce(&warm, &per_iter, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	per_iter /= MPIB_WARMUP;
	iters = per_iter > 0.0 ? (long)(o->seconds / per_iter) : MPIB_MAX_ITERS;
	iters = iters < o->min_iters     ? o->min_iters
	        : iters > MPIB_MAX_ITERS ? MPIB_MAX_ITERS
	                                 : iters;

	for (long i = 0; i < iters; i++)
		t[i] = allreduce_once(buf, send, s->floats, rank);
	MPI_Reduce(t, tmax, (int)iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		double bytes = (double)s->floats * sizeof(float), sec = bench_median(tmax, iters);
		printf("{\"bench\":\"mpi_allreduce\",\"ranks\":%d,\"bytes\":%.0f,", nranks, bytes);
		if (s->label)
			printf("\"label\":\"%s\",", s->label);
		printf("\"ms_median\":%.4f,\"busbw_gbs\":%.4f,\"iters\":%ld,\"in_place\":%s}\n",
		       sec * 1e3, 2.0 * (nranks - 1) / nranks * bytes / sec / 1e9, iters,
		       o->out_of_place ? "false" : "true");
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct mpib_opts o;
	int rank, nranks, rc = 1, parsed;
	long max_floats = 0;
	size_t nsizes = sizeof(mpib_sizes) / sizeof(mpib_sizes[0]);
	float *buf = NULL, *send = NULL;
	double *t = NULL, *tmax = NULL;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	parsed = parse_opts(argc, argv, rank, &o);
	if (parsed != 0) {
		rc = parsed > 0 ? 0 : 2;
		goto out;
	}
	for (size_t i = 0; i < nsizes; i++)
		max_floats = mpib_sizes[i].floats > max_floats ? mpib_sizes[i].floats : max_floats;
	buf = malloc((size_t)max_floats * sizeof(float));
	send = o.out_of_place ? malloc((size_t)max_floats * sizeof(float)) : NULL;
	t = malloc(MPIB_MAX_ITERS * sizeof(double));
	tmax = malloc(MPIB_MAX_ITERS * sizeof(double));
	if (!buf || !t || !tmax || (o.out_of_place && !send)) {
		fprintf(stderr, "mpi_allreduce: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (rank == 0)
		fprintf(stderr, "mpi_allreduce: ranks %d, min-iters %ld, time %.2fs per size, %s\n",
		        nranks, o.min_iters, o.seconds,
		        o.out_of_place ? "out of place" : "in place");
	for (size_t i = 0; i < nsizes; i++)
		if (bench_size(&mpib_sizes[i], &o, rank, nranks, buf, send, t, tmax) < 0)
			goto out;
	rc = 0;
out:
	free(buf);
	free(send);
	free(t);
	free(tmax);
	MPI_Finalize();
	return rc;
}
