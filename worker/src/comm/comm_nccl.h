/* comm_nccl.h - the NCCL communicator: the device collectives of a worker
 * with GPUs, across every GPU of every worker (cuda/comm_nccl.c; in a
 * CPU-only build, gpu_none.c refuses it).
 *
 * It is set up through a communicator that is already joined, the TCP
 * ring of the rendezvous (or the local one for a single worker): the chief
 * makes the ncclUniqueId and broadcasts it over that ring, and every worker
 * runs ncclCommInitRank for each of its GPUs, with a time-out. The ring is
 * kept, inside, for what is summed or sent on host buffers (the state sync,
 * validation), and for forming the group again: after a lost peer, leave
 * aborts the NCCL communicators, and rejoin forms the ring again and makes
 * new ones under a new id.
 *
 * NCCL's ranks: the workers in rank order, each with its GPUs in order, so
 * the world is the sum of the workers' GPUs (which may differ). The ring
 * algorithm and the simple protocol are pinned (NCCL_ALGO=Ring,
 * NCCL_PROTO=Simple, unless set in the environment), so sums are
 * bitwise-identical from run to run for a given world.
 */
#ifndef MWJ_COMM_NCCL_H
#define MWJ_COMM_NCCL_H

#include "comm.h"

/* Makes c the NCCL communicator over inner (a joined ring or local
 * communicator, whose ownership passes to c: inner is zeroed) for this
 * worker's replicas GPUs, devices 0 to replicas - 1. init_ms bounds the
 * set-up; collective_ms bounds the wait for a collective to be enqueued.
 * Returns 0; COMM_SETUP_RETRY with a message when a peer was lost or the
 * set-up timed out; COMM_SETUP_PERMANENT when it can never work (NCCL
 * refused the arguments: two workers on one GPU, say); in a CPU-only build
 * always COMM_SETUP_PERMANENT. On failure inner is left as it was. */
int comm_init_nccl(struct comm *c, struct comm *inner, int replicas, int init_ms, int collective_ms,
                   char *err);

#endif
