/* ring.h - collectives over a ring of TCP connections: each worker sends to
 * the next rank and receives from the previous one.
 *
 * The all-reduce is reduce-scatter then all-gather (Baidu's ring, as in
 * NCCL and Horovod). The vector is cut into world chunks; in 2 * (world - 1)
 * steps each chunk travels once around the ring being summed and once more
 * being copied. Every chunk is cut again into segments that are sent,
 * received and summed as soon as the segment they depend on has arrived, so
 * all three overlap. Chunk c is always summed in the same order (rank c,
 * then c + 1, ...) and then copied verbatim, so every rank ends with
 * bitwise-identical results, and the same results for the same world size.
 *
 * Any length works, including fewer elements than ranks. A peer that closes
 * or resets its connection, or a collective with no bytes moving for the
 * ring's time-out, fails with a message that names the peer: the caller
 * treats it as retryable (exit 75). After a failure the ring is unusable.
 *
 * Collectives must be called by one thread at a time, in the same order
 * with the same lengths on every rank.
 */
#ifndef MWJ_RING_H
#define MWJ_RING_H

#include <stddef.h>
#include <stdint.h>

#include "grad_slice.h"

#define RING_NAME_LEN 300

struct ring_op;

struct ring {
	int world, rank;
	int next_fd, prev_fd; /* owned: to rank + 1, from rank - 1 */
	char next_name[RING_NAME_LEN], prev_name[RING_NAME_LEN]; /* "rank 1 ('w1:2222')" */
	int timeout_ms;   /* no progress for this long is a lost peer */
	size_t seg_bytes; /* pipelining granularity */
	char *scratch;    /* (seg_bytes): one received segment awaiting its sum */
	struct ring_op *ops;
	size_t ops_cap;
};

/* Sets up r over two connected sockets (non-blocking, see net.h), taking
 * ownership of both. The names are for messages. release closes them and
 * accepts a zeroed struct. */
void ring_init(struct ring *r, int world, int rank, int next_fd, int prev_fd, const char *next_name,
               const char *prev_name, int timeout_ms);
void ring_release(struct ring *r);

/* Sums a float vector across the ring in place. The vector is the
 * concatenation of pieces (grad_slice.h: rows of cols floats at
 * base + off + row * stride), so that a strided block of a weight matrix
 * travels without being copied first. Returns 0, or -1 with a message. */
int ring_allreduce(struct ring *r, float *base, const struct grad_slice *pieces, int npieces,
                   char *err);

/* Sums n doubles across the ring in place: metrics and flags. */
int ring_allreduce_f64(struct ring *r, double *v, size_t n, char *err);

/* Copies bytes of buf on rank root to buf on every other rank, pipelined
 * along the ring. */
int ring_broadcast(struct ring *r, void *buf, size_t bytes, int root, char *err);

#endif
