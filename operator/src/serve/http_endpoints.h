/* http_endpoints.h - the operator's own HTTP endpoints, served by
 * libmicrohttpd through http_listen.h (one internal epoll thread per
 * listener, woken only by connections: an idle operator spends no CPU
 * here; thousands of idle or bursting clients leave the probes answered,
 * within the limits that http_listen.c sets and explains):
 *
 *   --metrics-addr  GET /metrics  the Prometheus text (operator_metrics.h)
 *   --health-addr   GET /healthz  200 while the process' loops turn: every
 *                                 informer, the leader election, no
 *                                 reconcile stuck; else 500 saying which
 *                   GET /readyz   200 once every cache has its first list
 *                                 (a standby is ready too); 503 before
 *
 * Addresses are "host:port", ":port" (every address), "[v6]:port", or "0"
 * (that listener off). When both are the same, one listener serves all
 * three paths. Port 0 picks a free port (one for each), which the log
 * and metrics_port, health_port say.
 */
#ifndef MWJ_HTTP_ENDPOINTS_H
#define MWJ_HTTP_ENDPOINTS_H

#include "http_listen.h"
#include "operator_metrics.h"

/* What one listener serves (SERVE_* bits in http_endpoints.c). */
struct http_route {
	const struct operator_metrics *m;
	int serves;
};

struct http_endpoints {
	const struct operator_metrics *metrics;   /* what the endpoints read */
	struct http_route routes[2];              /* metrics (and health when shared), health */
	struct http_listener metrics_l, health_l; /* health_l unstarted when shared or off */
	int metrics_port, health_port;            /* bound ports; 0 when off */
	unsigned int connection_limit;            /* each listener's (http_listen.h) */
};

/* Starts the listeners. Returns 0, or -1 with a message naming the
 * address (bad syntax, in use, not permitted). */
int http_endpoints_start(struct http_endpoints *h, const struct operator_metrics *m,
                         const char *metrics_addr, const char *health_addr, char *err);

/* Stops the listeners and waits for their threads. Accepts a zeroed h. */
void http_endpoints_stop(struct http_endpoints *h);

/* Checks an address as --metrics-addr and --health-addr take it. Returns
 * 0, or -1 with a message. */
int http_endpoints_check_addr(const char *addr, char *err);

#endif
