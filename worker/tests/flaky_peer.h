/* flaky_peer.h - a worker that joins the ring and drops it, over and over:
 * what a replacement that crashes after every restart does to the
 * survivors. For the tests that show a survivor neither meets such a peer
 * again as fast as the sockets allow nor waits for it forever.
 *
 * A thread listens on the port of its task in TF_CONFIG and joins through
 * the worker's own rendezvous (rendezvous.h) with the hello it is given, so
 * the survivors meet it exactly as they meet mwj-worker. Once the ring is
 * formed it drops it, as its mode says, and joins again:
 *   FLAKY_DROP_AT_ONCE     both connections closed before a byte of the
 *                          state sync, which fails for the survivors;
 *   FLAKY_DROP_AFTER_SYNC  the state sync run through to its end, as the
 *                          worker runs it (state_sync.h), and then both
 *                          connections closed: the survivors go on to
 *                          their first step, whose all-reduce fails.
 */
#ifndef MWJ_FLAKY_PEER_H
#define MWJ_FLAKY_PEER_H

#include <stddef.h>

#include "handshake.h"

enum flaky_mode { FLAKY_DROP_AT_ONCE, FLAKY_DROP_AFTER_SYNC };

struct flaky_peer;

/* Starts the peer as the task of tf_config (TF_CONFIG's JSON) of a job
 * without a name (MWJ_JOB_NAME unset) or key, sending hello me with its
 * protocol, world, rank and job hash filled in from tf_config, and
 * dropping the ring as mode says. For FLAKY_DROP_AFTER_SYNC the survivors'
 * model has nparams parameters and an optimizer without state (SGD
 * without momentum), which the sync hands over. Returns the peer, which
 * flaky_peer_stop frees, or NULL with a message in err (ERR_LEN) if
 * tf_config does not parse, its port cannot be listened on or the thread
 * cannot start. */
struct flaky_peer *flaky_peer_start(const char *tf_config, const struct hello *me,
                                    enum flaky_mode mode, size_t nparams, char *err);

/* Stops the thread, within a few seconds, and closes the port.
 * Returns how many times the peer formed the ring (for
 * FLAKY_DROP_AFTER_SYNC: and went through the state sync). Accepts NULL
 * (returns 0). */
long flaky_peer_stop(struct flaky_peer *p);

#endif
