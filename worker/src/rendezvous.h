/* rendezvous.h - how the workers of a job find each other and form the ring.
 *
 * Every worker listens on the port of its own TF_CONFIG address. It connects
 * to the next rank, retrying with back-off while that peer or its DNS name
 * is not up yet, and accepts the connection of the previous rank. Both ends
 * of each connection then exchange a hello and check that they belong to
 * the same job and world, sit where the other expects in the ring, and run
 * the same model and hyper-parameters; a mismatch is refused, and both
 * sides say why.
 */
#ifndef MWJ_RENDEZVOUS_H
#define MWJ_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

#include "tf_config.h"

#define RENDEZVOUS_PROTOCOL 1

/* Returned besides 0 and -1 when a peer refused this worker: its
 * configuration differs, and restarting cannot fix that (exit 1). */
#define RENDEZVOUS_REFUSED (-2)
/* Returned when a preemption notice (preempt.h) arrived during the wait. */
#define RENDEZVOUS_STOPPED (-3)

/* What must agree across the ring. */
struct hello {
	uint32_t protocol, world, rank;
	uint64_t job_hash;  /* the job's name and its cluster addresses */
	uint64_t arch_hash; /* the model architecture (model.h) */
	uint64_t seed;
	uint32_t batch_size, optimizer, epochs;
	uint64_t steps_per_epoch; /* as given; 0: one pass */
	double learning_rate, momentum;
};

/* The job identity: a hash of job_name (may be "") and every cluster
 * address in rank order. */
uint64_t rendezvous_job_hash(const char *job_name, const struct tf_config *tc);

/* Writes "rank R ('host:port')", how messages name rank of tc, into out
 * (n bytes). */
void rendezvous_rank_name(const struct tf_config *tc, int rank, char *out, size_t n);

/* Joins the ring as tc's rank, listening on lfd (net_listen on the rank's
 * port), before deadline_ms (net_now_ms clock). On success sets *next_fd and
 * *prev_fd to connected, checked sockets and returns 0. Returns -1 with a
 * message when the deadline passes (retryable: exit 75) or on a system
 * error, RENDEZVOUS_REFUSED when a peer refused this worker's hello, and
 * RENDEZVOUS_STOPPED when a preemption notice came (preempt.h). A
 * refused incoming connection is logged and the wait goes on. */
int rendezvous_join(int lfd, const struct tf_config *tc, const struct hello *me,
                    long long deadline_ms, int *next_fd, int *prev_fd, char *err);

/* Checks a peer's hello against this worker's: theirs must come from
 * want_rank. Returns 0, or -1 with the first difference in why (ERR_LEN),
 * e.g. "model differs". */
int rendezvous_check(const struct hello *mine, const struct hello *theirs, uint32_t want_rank,
                     char *why);

#endif
