/* flaky_peer.h - a worker that joins the ring and drops it at once, over and
 * over: what a replacement that crashes in the state sync after every
 * restart does to the survivors. For the tests that show a survivor neither
 * meets such a peer again as fast as the sockets allow nor waits for it
 * forever.
 *
 * A thread listens on the port of its task in TF_CONFIG and joins through
 * the worker's own rendezvous (rendezvous.h) with the hello it is given, so
 * the survivors meet it exactly as they meet mwj-worker. The moment the
 * ring is formed it closes both connections, before a byte of the state
 * sync, and joins again.
 */
#ifndef MWJ_FLAKY_PEER_H
#define MWJ_FLAKY_PEER_H

#include "handshake.h"

struct flaky_peer;

/* Starts the peer as the task of tf_config (TF_CONFIG's JSON) of a job
 * without a name (MWJ_JOB_NAME unset) or key, sending hello me with its
 * protocol, world, rank and job hash filled in from tf_config. Returns the
 * peer, which flaky_peer_stop frees, or NULL with a message in err
 * (ERR_LEN) if tf_config does not parse, its port cannot be listened on or
 * the thread cannot start. */
struct flaky_peer *flaky_peer_start(const char *tf_config, const struct hello *me, char *err);

/* Stops the thread, at most a second later, and closes the port. Returns
 * how many times the peer formed the ring. Accepts NULL (returns 0). */
long flaky_peer_stop(struct flaky_peer *p);

#endif
