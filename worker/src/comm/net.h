/* net.h - TCP sockets for the workers' ring: listening on all interfaces,
 * connecting by name, and whole-buffer reads and writes with a deadline.
 *
 * Every socket this file returns is non-blocking and close-on-exec; reads and
 * writes wait in poll(), retry on EINTR and on short transfers, and never
 * raise SIGPIPE. Functions return 0 (or a descriptor), or -1 with a message
 * in err (ERR_LEN).
 */
#ifndef MWJ_NET_H
#define MWJ_NET_H

#include <stddef.h>

/* Listens on port (1..65535) on every interface, IPv6 and IPv4 where the
 * host has them. Returns the listening descriptor. */
int net_listen(int port, char *err);

/* The local port fd is bound to (e.g. after net_listen on port 0), or -1. */
int net_local_port(int fd);

/* Waits up to timeout_ms for a connection on lfd and returns it, tuned
 * for the ring (see net_tune). Returns -1 with err empty on time-out, -1
 * with a message on failure. peer (n bytes) receives "ip:port". */
int net_accept(int lfd, int timeout_ms, char *peer, size_t n, char *err);

/* One attempt to connect to host:port within timeout_ms, trying every
 * address the name resolves to. Returns the connected, tuned descriptor.
 * *retry is set when a later attempt may succeed (name not resolvable yet,
 * refused, unreachable, timed out) and cleared for errors that will not go
 * away. */
int net_connect(const char *host, int port, int timeout_ms, int *retry, char *err);

/* Disables Nagle, enlarges the socket buffers and makes the kernel give up
 * on a peer that stops acknowledging after user_timeout_ms. */
void net_tune(int fd, int user_timeout_ms);

/* Writes or reads exactly len bytes before the deadline (monotonic
 * milliseconds, see net_now_ms). A peer that closes, resets or misses the
 * deadline is an error. */
int net_write_all(int fd, const void *buf, size_t len, long long deadline_ms, char *err);
int net_read_all(int fd, void *buf, size_t len, long long deadline_ms, char *err);

/* Monotonic clock in milliseconds. */
long long net_now_ms(void);

/* Closes fd if it is >= 0. */
void net_close(int fd);

#endif
