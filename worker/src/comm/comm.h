/* comm.h - the communicator: the collectives a synchronous data-parallel
 * trainer needs, behind one interface, so that the training loop does not
 * know how they are carried out.
 *
 * Backends:
 *   local  one worker: a sum over one rank is the identity;
 *   ring   TCP ring (ring.h), joined through rendezvous.h, for CPUs;
 *   nccl   the device collectives on GPU buffers (cuda/comm_nccl.h), over
 *          every GPU of every worker, set up through a ring or local
 *          communicator that it keeps for everything on host buffers.
 *
 * Every rank must issue the same collectives in the same order with the same
 * lengths, from one thread at a time. Failures of a networked backend are
 * retryable (a peer lost or timed out): the caller leaves the broken group
 * and rejoins it once the operator has replaced the lost worker, or exits 75
 * if no replacement comes.
 */
#ifndef MWJ_COMM_H
#define MWJ_COMM_H

#include <stddef.h>

#include "grad_slice.h"

struct comm;
struct worker_metrics;

/* Element types of the device collectives. */
enum comm_dtype { COMM_F32, COMM_F64 };

struct comm_ops {
	const char *name;
	int (*allreduce)(struct comm *c, float *base, const struct grad_slice *pieces, int npieces,
	                 char *err);
	int (*allreduce_f64)(struct comm *c, double *v, size_t n, char *err);
	int (*broadcast)(struct comm *c, void *buf, size_t bytes, int root, char *err);
	void (*leave)(struct comm *c);
	int (*rejoin)(struct comm *c, int timeout_ms, char *err);
	void (*release)(struct comm *c);
	/* Device collectives; NULL in backends without them. */
	int (*allreduce_device)(struct comm *c, void *const *bufs, size_t n, enum comm_dtype t,
	                        void *const *streams, char *err);
	int (*device_status)(struct comm *c, char *err);
};

struct comm {
	const struct comm_ops *ops;
	int world, rank;
	void *impl; /* the backend's state */
	/* Where the all-reduces below count their bytes and time (NULL:
	 * nowhere). The init functions leave it NULL; the owner sets it once
	 * the communicator is made. A backend that wraps another (nccl) keeps
	 * the inner one's NULL, so that nothing is counted twice. */
	struct worker_metrics *metrics;
};

/* A communicator for a world of one. */
void comm_init_local(struct comm *c);

/* Releases the backend (closing its connections); accepts a zeroed struct. */
void comm_release(struct comm *c);

/* Collectives, each returning 0 or -1 with a message in err.
 * comm_allreduce: sums the float vector made of pieces of base (rows of
 * cols at base + off + row * stride) across all ranks, in place. Every rank
 * gets bitwise-identical sums.
 * comm_allreduce_f64: sums n doubles in place.
 * comm_broadcast: copies bytes of buf from rank root to all others.
 * With c->metrics set, the two all-reduces count the bytes of their
 * buffers and the time they took there (two clock reads a call), on a
 * world of more than one. */
int comm_allreduce(struct comm *c, float *base, const struct grad_slice *pieces, int npieces,
                   char *err);
int comm_allreduce_f64(struct comm *c, double *v, size_t n, char *err);
int comm_broadcast(struct comm *c, void *buf, size_t bytes, int root, char *err);

/* After a failed collective: comm_leave drops this worker's connections at
 * once, so that the peers still waiting on them fail too instead of waiting
 * out their time-out, and keeps listening for newcomers. comm_rejoin
 * (which leaves first if needed) forms the group again with the same
 * members, waiting up to timeout_ms for a lost member's replacement.
 * Returns 0; -1 with a message on a time-out (retryable: exit 75); the
 * rendezvous codes RENDEZVOUS_REFUSED (exit 1) and RENDEZVOUS_STOPPED (a
 * preemption notice came). A world of one has nothing to leave or join. */
void comm_leave(struct comm *c);
int comm_rejoin(struct comm *c, int timeout_ms, char *err);

/* What comm_rejoin (and a device backend's set-up, comm_init_nccl) may
 * return beyond 0, -1 (a time-out) and the rendezvous' RENDEZVOUS_REFUSED
 * and RENDEZVOUS_STOPPED:
 *   COMM_SETUP_RETRY      the group formed, but the backend's own set-up
 *                         over it failed (a peer lost meanwhile): meet again;
 *   COMM_SETUP_PERMANENT  the set-up can never work as configured (two
 *                         workers on one GPU): exit 1. */
#define COMM_SETUP_RETRY     (-5)
#define COMM_SETUP_PERMANENT (-6)

/* Device collectives (nccl only)
 * comm_has_device: whether the backend sums device buffers.
 * comm_allreduce_device: enqueues the sum, in place, of the n elements of
 * type t at bufs[i], the buffer of this worker's replica i on its GPU,
 * across every replica of every worker, on streams[i] (cudaStream_t), and
 * returns without waiting. Every replica gets bitwise-identical sums.
 * With c->metrics set, it counts the bytes of one replica's buffer; not
 * its time, which passes on the GPU, in the step's.
 * comm_device_status: 0 while the collectives enqueued can still complete;
 * -1 with a message once one has failed (a lost peer): the caller then
 * leaves the group, which aborts what is in flight.
 * Both return -1 with a message on failure. */
int comm_has_device(const struct comm *c);
int comm_allreduce_device(struct comm *c, void *const *bufs, size_t n, enum comm_dtype t,
                          void *const *streams, char *err);
int comm_device_status(struct comm *c, char *err);

/* The backend's name: "local", "ring" or "nccl". */
const char *comm_name(const struct comm *c);

#endif
