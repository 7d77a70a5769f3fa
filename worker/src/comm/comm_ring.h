/* comm_ring.h - the ring backend of the communicator (comm.h): TCP between
 * CPU workers, formed by rendezvous.h from TF_CONFIG.
 */
#ifndef MWJ_COMM_RING_H
#define MWJ_COMM_RING_H

#include "comm.h"
#include "rendezvous.h"
#include "tf_config.h"

/* Listens on this rank's port, joins the ring within rendezvous_ms and sets
 * c up over it; collectives that make no progress for collective_ms fail.
 * With key (NULL or empty: none), every connection of the ring, at start
 * and at every rejoin, is made only with peers that prove they hold it;
 * without one, the ring is not authenticated, and that is logged once.
 * Returns 0; -1 with a message if the rendezvous timed out or the port is
 * taken (retryable, exit 75); RENDEZVOUS_REFUSED if a peer refused this
 * worker (exit 1); RENDEZVOUS_STOPPED if a preemption notice came. tc and key
 * must outlive c: comm_rejoin meets the same cluster again. */
int comm_init_ring(struct comm *c, const struct tf_config *tc, const struct hello *me,
                   const struct job_key *key, int rendezvous_ms, int collective_ms, char *err);

#endif
