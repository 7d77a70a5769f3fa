/* comm_nccl.c - the NCCL communicator (comm_nccl.h). */
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "comm_nccl.h"
#include "cuda_check.h"
#include "err.h"
#include "log.h"
#include "net.h"

#define NCCL_MAX_REPLICAS 64
/* How often a wait for an init looks at its communicators again. A wait
 * for a collective to be enqueued, on the step's path, yields instead. */
#define POLL_NS 200000L

struct nccl_state {
	struct comm inner; /* the ring (or local) communicator, owned */
	int replicas;      /* this worker's GPUs: devices 0 .. replicas - 1 */
	int init_ms, collective_ms;
	int first, nranks; /* this worker's first NCCL rank, and the NCCL world */
	int live;          /* comms hold communicators that were not aborted */
	ncclComm_t comms[NCCL_MAX_REPLICAS];
};

/* A failed NCCL call: its name, where it was made, NCCL's message and its
 * last error's text. */
#define nccl_fail(err, call, r, comm) nccl_fail_at(err, call, r, comm, __FILE__, __LINE__)

static int nccl_fail_at(char *err, const char *call, ncclResult_t r, ncclComm_t comm,
                        const char *file, int line)
{
	const char *last = comm ? ncclGetLastError(comm) : NULL;

	err_set(err, "%s:%d: %s: %s%s%s", file, line, call, ncclGetErrorString(r),
	        last && last[0] ? ": " : "", last ? last : "");
	/* NCCL refusing its arguments (two ranks on one GPU, say) will refuse
	 * them again; anything else may be a peer lost, or the system. */
	return r == ncclInvalidArgument || r == ncclInvalidUsage ? COMM_SETUP_PERMANENT
	                                                         : COMM_SETUP_RETRY;
}

/* Aborts every communicator (which also ends their kernels in flight). */
static void abort_all(struct nccl_state *s)
{
	if (!s->live)
		return;
	for (int i = 0; i < s->replicas; i++) {
		if (s->comms[i])
			ncclCommAbort(s->comms[i]);
		s->comms[i] = NULL;
	}
	s->live = 0;
}

/* Looks once at every communicator: sets *busy if one is still in
 * progress. Returns 0, or nccl_fail's code with the first error, what
 * naming the work that failed. */
static int look(struct nccl_state *s, const char *what, int *busy, char *err)
{
	*busy = 0;
	for (int i = 0; i < s->replicas; i++) {
		ncclResult_t state = ncclSuccess;
		ncclResult_t r = ncclCommGetAsyncError(s->comms[i], &state);
		if (r != ncclSuccess)
			return nccl_fail(err, "ncclCommGetAsyncError", r, s->comms[i]);
		if (state == ncclInProgress)
			*busy = 1;
		else if (state != ncclSuccess)
			return nccl_fail(err, what, state, s->comms[i]);
	}
	return 0;
}

/* Waits until no communicator is still in progress (non-blocking
 * communicators: an init, or a group's enqueue), until deadline_ms,
 * sleeping between looks, or with spin yielding only. Returns 0, or
 * nccl_fail's code with the first error, or COMM_SETUP_RETRY on a
 * time-out. */
static int wait_ready(struct nccl_state *s, long long deadline_ms, int spin, const char *what,
                      char *err)
{
	for (;;) {
		int busy, rc = look(s, what, &busy, err);
		if (rc < 0 || !busy)
			return rc;
		if (net_now_ms() > deadline_ms) {
			err_set(err, "%s: timed out", what);
			return COMM_SETUP_RETRY;
		}
		if (spin)
			sched_yield();
		else
			nanosleep(&(struct timespec){0, POLL_NS}, NULL);
	}
}

/* Which NCCL ranks this worker's GPUs are: every worker says how many it
 * has, over the ring. */
static int plan_ranks(struct nccl_state *s, char *err)
{
	int world = s->inner.world, rank = s->inner.rank;
	double *have = xcalloc((size_t)world, sizeof(double));
	int rc = -1;

	have[rank] = s->replicas;
	rc = COMM_SETUP_RETRY;
	if (comm_allreduce_f64(&s->inner, have, (size_t)world, err) < 0)
		goto out;
	rc = COMM_SETUP_PERMANENT;
	s->first = s->nranks = 0;
	for (int i = 0; i < world; i++) {
		if (have[i] < 1 || have[i] > NCCL_MAX_REPLICAS) {
			err_set(err, "rank %d says it has %g GPUs", i, have[i]);
			goto out;
		}
		if (i < rank)
			s->first += (int)have[i];
		s->nranks += (int)have[i];
	}
	rc = 0;
out:
	free(have);
	return rc;
}

/* Makes the NCCL communicators under a new id from the chief, before
 * deadline_ms. Returns 0, or COMM_SETUP_RETRY or COMM_SETUP_PERMANENT
 * with a message. */
static int init_comms(struct nccl_state *s, long long deadline_ms, char *err)
{
	ncclUniqueId id;
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	ncclResult_t r;
	int rc = plan_ranks(s, err);

	if (rc < 0)
		return rc;
	memset(&id, 0, sizeof(id));
	r = s->inner.rank == 0 ? ncclGetUniqueId(&id) : ncclSuccess;
	if (r != ncclSuccess)
		return nccl_fail(err, "ncclGetUniqueId", r, NULL);
	if (comm_broadcast(&s->inner, &id, sizeof(id), 0, err) < 0) {
		err_prefix(err, "sending the NCCL id");
		return COMM_SETUP_RETRY;
	}
	/* Non-blocking, so that a peer that never comes is a time-out here
	 * rather than a hang. */
	config.blocking = 0;
	memset(s->comms, 0, sizeof(s->comms));
	s->live = 1;
	ncclGroupStart();
	for (int i = 0; i < s->replicas; i++) {
		CUDA_CHECK(cudaSetDevice(i));
		r = ncclCommInitRankConfig(&s->comms[i], s->nranks, id, s->first + i, &config);
		if (r != ncclSuccess && r != ncclInProgress) {
			ncclGroupEnd();
			abort_all(s);
			return nccl_fail(err, "ncclCommInitRankConfig", r, NULL);
		}
	}
	r = ncclGroupEnd();
	if (r != ncclSuccess && r != ncclInProgress) {
		abort_all(s);
		return nccl_fail(err, "ncclGroupEnd", r, NULL);
	}
	rc = wait_ready(s, deadline_ms, 0, "ncclCommInitRank", err);
	if (rc < 0)
		abort_all(s);
	return rc;
}

static int nccl_allreduce(struct comm *c, float *base, const struct grad_slice *pieces, int npieces,
                          char *err)
{
	struct nccl_state *s = c->impl;

	return comm_allreduce(&s->inner, base, pieces, npieces, err);
}

static int nccl_allreduce_f64(struct comm *c, double *v, size_t n, char *err)
{
	struct nccl_state *s = c->impl;

	return comm_allreduce_f64(&s->inner, v, n, err);
}

static int nccl_broadcast(struct comm *c, void *buf, size_t bytes, int root, char *err)
{
	struct nccl_state *s = c->impl;

	return comm_broadcast(&s->inner, buf, bytes, root, err);
}

/* The ring's connections first, so that peers waiting on them learn at
 * once; the abort, which waits for NCCL's threads, after. */
static void nccl_leave(struct comm *c)
{
	struct nccl_state *s = c->impl;

	comm_leave(&s->inner);
	abort_all(s);
}

static int nccl_rejoin(struct comm *c, int timeout_ms, char *err)
{
	struct nccl_state *s = c->impl;
	long long deadline = net_now_ms() + timeout_ms;
	int rc;

	nccl_leave(c);
	rc = comm_rejoin(&s->inner, timeout_ms, err);
	if (rc < 0)
		return rc;
	return init_comms(s, deadline, err);
}

static void nccl_release(struct comm *c)
{
	struct nccl_state *s = c->impl;

	if (!s)
		return;
	abort_all(s);
	comm_release(&s->inner);
	free(s);
	c->impl = NULL;
}

static int nccl_allreduce_device(struct comm *c, void *const *bufs, size_t n, enum comm_dtype t,
                                 void *const *streams, char *err)
{
	struct nccl_state *s = c->impl;
	ncclDataType_t type = t == COMM_F64 ? ncclDouble : ncclFloat;
	ncclResult_t r;

	if (!s->live)
		return err_set(err, "the NCCL communicators were aborted");
	ncclGroupStart();
	for (int i = 0; i < s->replicas; i++) {
		r = ncclAllReduce(bufs[i], bufs[i], n, type, ncclSum, s->comms[i],
		                  (cudaStream_t)streams[i]);
		if (r != ncclSuccess && r != ncclInProgress) {
			ncclGroupEnd();
			nccl_fail(err, "ncclAllReduce", r, s->comms[i]);
			return -1;
		}
	}
	r = ncclGroupEnd();
	/* A non-blocking communicator's group is launched by a thread of
	 * NCCL's; a peer lost meanwhile must not hold this worker for ever. */
	if (r == ncclInProgress)
		return wait_ready(s, net_now_ms() + s->collective_ms, 1, "ncclAllReduce", err) < 0
		           ? -1
		           : 0;
	return r == ncclSuccess ? 0 : (nccl_fail(err, "ncclAllReduce", r, NULL), -1);
}

static int nccl_device_status(struct comm *c, char *err)
{
	struct nccl_state *s = c->impl;

	int busy;

	if (!s->live)
		return err_set(err, "the NCCL communicators were aborted");
	return look(s, "NCCL", &busy, err) < 0 ? -1 : 0;
}

static const struct comm_ops NCCL_OPS = {
    "nccl",      nccl_allreduce, nccl_allreduce_f64,    nccl_broadcast,     nccl_leave,
    nccl_rejoin, nccl_release,   nccl_allreduce_device, nccl_device_status,
};

/* The algorithm and protocol are pinned for bitwise-stable sums, unless
 * the user chose otherwise. */
static void pin_algorithm(void)
{
	if (!getenv("NCCL_ALGO"))
		setenv("NCCL_ALGO", "Ring", 0);
	if (!getenv("NCCL_PROTO"))
		setenv("NCCL_PROTO", "Simple", 0);
}

int comm_init_nccl(struct comm *c, struct comm *inner, int replicas, int init_ms, int collective_ms,
                   char *err)
{
	struct nccl_state *s;
	int version = 0, rc;

	if (replicas < 1 || replicas > NCCL_MAX_REPLICAS) {
		err_set(err, "nccl: %d GPUs, at most %d", replicas, NCCL_MAX_REPLICAS);
		return COMM_SETUP_PERMANENT;
	}
	pin_algorithm();
	s = xcalloc(1, sizeof(*s));
	s->inner = *inner;
	s->replicas = replicas;
	s->init_ms = init_ms;
	s->collective_ms = collective_ms;
	rc = init_comms(s, net_now_ms() + init_ms, err);
	if (rc < 0) {
		free(s);
		return rc;
	}
	*c = (struct comm){&NCCL_OPS, inner->world, inner->rank, s, NULL};
	memset(inner, 0, sizeof(*inner));
	ncclGetVersion(&version);
	log_info("nccl %d.%d.%d: ranks %d to %d of %d (NCCL_ALGO=%s NCCL_PROTO=%s)",
	         version / 10000, version / 100 % 100, version % 100, s->first,
	         s->first + replicas - 1, s->nranks, getenv("NCCL_ALGO"), getenv("NCCL_PROTO"));
	return 0;
}
