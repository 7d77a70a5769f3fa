/* rendezvous.h - how the workers of a job find each other and form the ring.
 *
 * Every worker listens on the port of its own TF_CONFIG address. It connects
 * to the next rank, retrying with back-off while that peer or its DNS name
 * is not up yet, and accepts the connection of the previous rank. Both ends
 * of each connection then run the handshake (handshake.h): they check that
 * they belong to the same job and world, sit where the other expects in the
 * ring, run the same model and hyper-parameters, and, when the job has a
 * key, that both hold it. A configuration mismatch is refused, and both
 * sides say why.
 *
 * Anything can reach the port: a port scanner, a health prober, a stranger
 * that connects and says nothing, or one that sends garbage. None of them
 * may hold up the real peer. The accepting side therefore runs every
 * pending handshake at once in one poll loop, each with a deadline of its
 * own (RENDEZVOUS_HANDSHAKE_MS), at most RENDEZVOUS_MAX_PENDING of them
 * (the oldest is dropped first), and never blocks on one connection; the
 * connecting side gives up on a peer that accepts and then says nothing at
 * the same deadline and tries again. Each dropped connection is logged
 * once, at warning level, through a rate limit.
 */
#ifndef MWJ_RENDEZVOUS_H
#define MWJ_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

#include "handshake.h"
#include "job_key.h"
#include "tf_config.h"

/* How long one connection may take over its whole handshake. */
#define RENDEZVOUS_HANDSHAKE_MS 2000
/* How many accepted connections may be in their handshake at once. */
#define RENDEZVOUS_MAX_PENDING 64

/* Returned besides 0 and -1 when a peer refused this worker: its
 * configuration differs, and restarting cannot fix that (exit 1). */
#define RENDEZVOUS_REFUSED (-2)
/* Returned when a preemption notice (preempt.h) arrived during the wait. */
#define RENDEZVOUS_STOPPED (-3)

/* The job identity: a hash of job_name (may be "") and every cluster
 * address in rank order. */
uint64_t rendezvous_job_hash(const char *job_name, const struct tf_config *tc);

/* Writes "rank R ('host:port')", how messages name rank of tc, into out
 * (n bytes). */
void rendezvous_rank_name(const struct tf_config *tc, int rank, char *out, size_t n);

/* Joins the ring as tc's rank, listening on lfd (net_listen on the rank's
 * port), before deadline_ms (net_now_ms clock), proving key (NULL or empty:
 * none) to both neighbours and requiring them to prove it. On success sets
 * *next_fd and *prev_fd to connected, checked sockets and returns 0.
 * Returns -1 with a message when the deadline passes (retryable: exit 75;
 * the message says what was last wrong with the connections that did come,
 * a missing or different key among them) or on a system error,
 * RENDEZVOUS_REFUSED when a neighbour that proved itself refused this
 * worker's configuration or this worker refused its configuration, and
 * RENDEZVOUS_STOPPED when a preemption notice came (preempt.h). */
int rendezvous_join(int lfd, const struct tf_config *tc, const struct hello *me,
                    const struct job_key *key, long long deadline_ms, int *next_fd, int *prev_fd,
                    char *err);

#endif
