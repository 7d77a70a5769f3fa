/* strangers.h - connections to the workers' ports that are not workers:
 * what a port scanner, a health prober, a service-discovery prober or a
 * hostile client does to a port in a cluster. For the tests that show the
 * rendezvous is not held up by them.
 *
 * A thread keeps, for every port, `idle` connections open that send
 * nothing and `garbage` connections that send a few hundred random bytes
 * (never an mwj greeting) and then stay open. A connection the worker
 * closes, or that could not be made yet because nothing listens, is made
 * again a moment later, so strangers are there before, during and after
 * every rendezvous, and a worker that drops them meets new ones.
 */
#ifndef MWJ_STRANGERS_H
#define MWJ_STRANGERS_H

struct strangers;

/* Starts the strangers on 127.0.0.1 at the nports ports (at most 64, and
 * at most 2048 connections in all). Returns NULL if the numbers are out of
 * range or the thread cannot start. */
struct strangers *strangers_start(const int *ports, int nports, int idle, int garbage);

/* Stops the thread and closes every connection. Returns how many
 * connections were made in all (at least the first round, once the ports
 * listened). Accepts NULL (returns 0). */
long strangers_stop(struct strangers *s);

/* A stranger that speaks first, as a connecting worker does: connects to
 * 127.0.0.1 at port, sends the len bytes at first and then junk bytes for
 * whatever the worker reads next (never a valid proof of a key), and
 * keeps what the worker sends back in got (cap bytes at most), until the
 * worker hangs up or ms have passed. Returns how many bytes it was told,
 * or -1 if it could not connect. */
long strangers_listen_in(int port, const void *first, size_t len, unsigned char *got, size_t cap,
                         int ms);

#endif
