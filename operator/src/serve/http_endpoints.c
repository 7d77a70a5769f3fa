/* http_endpoints.c - /metrics, /healthz and /readyz over libmicrohttpd;
 * see http_endpoints.h. */
#include "http_endpoints.h"

#include <stdio.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "prom_text.h"
#include "timers.h"

/* A leader election loop turns every retry period; one that has not for
 * twice the lease duration is stuck (its requests time out well before). */
#define LEADER_STALL_FACTOR 2

enum { SERVE_METRICS = 1, SERVE_HEALTH = 2 };

int http_endpoints_check_addr(const char *addr, char *err)
{
	return http_listen_check_addr(addr, err);
}

/* --- requests --- */

/* /healthz: as Kubernetes' own components answer it, one line per check. */
static enum MHD_Result healthz(struct MHD_Connection *conn, const struct operator_metrics *m)
{
	char why[ERR_LEN] = "", body[ERR_LEN + 160];
	int ok = controller_alive(m->controller, why);
	const struct leader *l = m->leader;
	int leader_ok = 1;

	if (l != NULL) {
		long long beat = __atomic_load_n(&l->heartbeat_ms, __ATOMIC_RELAXED);
		leader_ok = timers_now_ms() - beat <
		            (long long)l->cfg.lease_ms * LEADER_STALL_FACTOR + l->cfg.renew_ms;
	}
	if (ok && leader_ok)
		return http_listen_text(
		    conn, MHD_HTTP_OK,
		    "[+]informers ok\n[+]reconcilers ok\n[+]leader-election ok\n"
		    "healthz check passed\n");
	snprintf(body, sizeof(body),
	         "[%s]controller %s%s\n[%s]leader-election %s\nhealthz check failed\n",
	         ok ? "+" : "-", ok ? "ok" : "failed: ", why, leader_ok ? "+" : "-",
	         leader_ok ? "ok" : "failed: its loop has not turned");
	return http_listen_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, body);
}

/* One listener's paths; the method and the empty body are checked
 * already (http_listen.c). */
static enum MHD_Result on_request(void *ctx, struct MHD_Connection *conn, const char *url)
{
	const struct http_route *rt = ctx;
	const struct operator_metrics *m = rt->m;

	if ((rt->serves & SERVE_METRICS) && strcmp(url, "/metrics") == 0) {
		size_t len = 0;
		char *body = operator_metrics_render(m, &len);
		if (body == NULL)
			return http_listen_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
			                        "out of memory\n");
		return http_listen_reply(conn, MHD_HTTP_OK, PROM_CONTENT_TYPE, body, len, 1);
	}
	if ((rt->serves & SERVE_HEALTH) && strcmp(url, "/healthz") == 0)
		return healthz(conn, m);
	if ((rt->serves & SERVE_HEALTH) && strcmp(url, "/readyz") == 0) {
		if (controller_ready(m->controller))
			return http_listen_text(conn, MHD_HTTP_OK,
			                        "[+]informer-sync ok\nreadyz check passed\n");
		return http_listen_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
		                        "[-]informer-sync failed: the caches have not filled yet\n"
		                        "readyz check failed\n");
	}
	return http_listen_text(conn, MHD_HTTP_NOT_FOUND, "404 page not found\n");
}

/* --- listeners --- */

int http_endpoints_start(struct http_endpoints *h, const struct operator_metrics *m,
                         const char *metrics_addr, const char *health_addr, char *err)
{
	int metrics_on = strcmp(metrics_addr, "0") != 0, health_on = strcmp(health_addr, "0") != 0;
	size_t n = strlen(metrics_addr);
	/* One address, one listener; but port 0 asks for two free ports. */
	int shared = metrics_on && health_on && strcmp(metrics_addr, health_addr) == 0 &&
	             !(n >= 2 && strcmp(metrics_addr + n - 2, ":0") == 0);
	int listeners = metrics_on + (health_on && !shared);
	unsigned int limit = http_listen_connection_limit(listeners > 0 ? listeners : 1);

	memset(h, 0, sizeof(*h));
	h->metrics = m;
	h->connection_limit = limit;
	h->routes[0] = (struct http_route){m, SERVE_METRICS | (shared ? SERVE_HEALTH : 0)};
	h->routes[1] = (struct http_route){m, SERVE_HEALTH};
	if (metrics_on) {
		if (http_listen_start(&h->metrics_l, metrics_addr, limit, on_request, &h->routes[0],
		                      err) < 0)
			return err_prefix(err, "--metrics-addr");
		h->metrics_port = h->metrics_l.port;
		log_info("serving /metrics%s on port %d (up to %u connections, idle ones closed "
		         "after %d s)",
		         shared ? ", /healthz and /readyz" : "", h->metrics_port, limit,
		         HTTP_LISTEN_IDLE_TIMEOUT_S);
	}
	if (health_on && !shared) {
		if (http_listen_start(&h->health_l, health_addr, limit, on_request, &h->routes[1],
		                      err) < 0) {
			http_endpoints_stop(h);
			return err_prefix(err, "--health-addr");
		}
		h->health_port = h->health_l.port;
		log_info("serving /healthz and /readyz on port %d (up to %u connections, idle ones "
		         "closed after %d s)",
		         h->health_port, limit, HTTP_LISTEN_IDLE_TIMEOUT_S);
	}
	if (shared)
		h->health_port = h->metrics_port;
	return 0;
}

void http_endpoints_stop(struct http_endpoints *h)
{
	http_listen_stop(&h->metrics_l);
	http_listen_stop(&h->health_l);
}
