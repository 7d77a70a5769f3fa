/* http_listen.h - a small HTTP server for read-only endpoints (/metrics,
 * /healthz, /readyz), over libmicrohttpd; mwj-operator and mwj-worker
 * serve theirs through it.
 *
 * Each listener polls with epoll (poll where epoll is missing) on a thread
 * of its own that sleeps until a connection comes: an idle listener costs
 * no CPU. Misbehaving clients (a burst of a thousand connections, hundreds
 * that connect and say nothing) leave it answering, within the limits that
 * http_listen.c sets and explains: up to http_listen_connection_limit()
 * connections at once, each closed after HTTP_LISTEN_IDLE_TIMEOUT_S
 * seconds without a byte, 8 KiB of headers each, a backlog of 1,024.
 *
 * Only GET and HEAD are answered (anything else gets 405 before the
 * handler is called), and request bodies are never read.
 *
 * Addresses: "host:port", ":port" (every address: IPv6 and IPv4 where the
 * host has IPv6), "[v6]:port", and "0", which the callers take as "off"
 * (http_listen_check_addr accepts it, http_listen_start does not). Port 0
 * picks a free port, which l->port says once started.
 */
#ifndef MWJ_HTTP_LISTEN_H
#define MWJ_HTTP_LISTEN_H

#include <microhttpd.h>

/* A connection that has sent nothing for this long is closed. */
#define HTTP_LISTEN_IDLE_TIMEOUT_S 3

/* Answers a GET or HEAD of url on conn: queues a response with
 * http_listen_reply or http_listen_text and returns what they return.
 * Called on the listener's thread. */
typedef enum MHD_Result (*http_listen_handler)(void *ctx, struct MHD_Connection *conn,
                                               const char *url);

struct http_listener {
	struct MHD_Daemon *daemon; /* NULL: not started, or stopped */
	int port;                  /* the port bound, once started; 0 before */
	http_listen_handler handle;
	void *ctx; /* handle's first argument */
};

/* --- addresses --- */

/* Checks addr as the --metrics-addr flags take it ("0" included).
 * Returns 0, or -1 with a message naming addr. */
int http_listen_check_addr(const char *addr, char *err);

/* --- listeners --- */

/* The connection limit for each of n listeners of this process: 2,048,
 * cut to what RLIMIT_NOFILE leaves after 256 descriptors kept for the
 * rest of the process (a listener that reaches its limit stops accepting,
 * the rest wait in the backlog; one that ran out of descriptors would
 * starve everything else), and never under 16. */
unsigned int http_listen_connection_limit(int n);

/* Starts serving addr (not "0") with handle(ctx, ...), taking up to limit
 * connections at once. l is filled, and must stay where it is until
 * http_listen_stop. Returns 0, or -1 with a message naming addr (bad
 * syntax, unknown host, in use, not permitted). Logs nothing: the caller
 * says what it serves. */
int http_listen_start(struct http_listener *l, const char *addr, unsigned int limit,
                      http_listen_handler handle, void *ctx, char *err);

/* Stops the listener and waits for its thread. Accepts a zeroed or
 * stopped l. */
void http_listen_stop(struct http_listener *l);

/* For a server that runs its own daemon (TLS, a socket handed from one
 * daemon to the next with MHD_OPTION_LISTEN_SOCKET): opens a TCP socket
 * listening on addr (not "0"), every address meaning IPv6 and IPv4 where
 * the host has IPv6, else IPv4; non-blocking, close-on-exec, SO_REUSEADDR,
 * with the backlog of the listeners above. Returns the descriptor, which
 * the caller closes, with the port bound in *port; or -1 with a message
 * naming addr (bad syntax, unknown host, in use, not permitted). */
int http_listen_socket(const char *addr, int *port, char *err);

/* --- replies, for handlers --- */

/* Queues a reply of status with len bytes of body, marked not to be
 * cached. owned: body is malloc'd and taken over (freed whatever
 * happens); otherwise it is copied. Returns MHD_YES, or MHD_NO when the
 * connection should be closed (out of memory). */
enum MHD_Result http_listen_reply(struct MHD_Connection *conn, unsigned int status,
                                  const char *content_type, char *body, size_t len, int owned);

/* http_listen_reply of a NUL-terminated plain text, copied. */
enum MHD_Result http_listen_text(struct MHD_Connection *conn, unsigned int status,
                                 const char *body);

#endif
