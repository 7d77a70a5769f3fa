/* http_endpoints.c - /metrics, /healthz and /readyz over libmicrohttpd;
 * see http_endpoints.h. */
#include "http_endpoints.h"

#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "err.h"
#include "log.h"
#include "parse.h"
#include "prom_text.h"
#include "timers.h"

/* What keeps the endpoints answering when clients misbehave (a burst of
 * a thousand connections, hundreds that connect and say nothing): each
 * listener polls with epoll on a thread of its own, so a connection costs
 * a descriptor and a little memory, not a thread nor a slot of select's
 * 1,024; it takes up to CONNECTION_LIMIT at once, far above what probes
 * and scrapes need, within the descriptors the process may open (see
 * connection_limit); one that has sent nothing for CONNECTION_TIMEOUT_S
 * is closed, so silent ones free their slot in seconds, not the minutes a
 * drain of 64 slots took; each gets MEMORY_LIMIT bytes for its request
 * and reply headers (our requests are one line and a few headers; a
 * Prometheus scrape with a bearer token is under 2 KiB), so that a full
 * listener costs at most CONNECTION_LIMIT x MEMORY_LIMIT (16 MiB); and
 * LISTEN_BACKLOG connections wait in the kernel while the limit is
 * reached, instead of being refused. */
#define CONNECTION_LIMIT     2048
#define CONNECTION_TIMEOUT_S 3
#define MEMORY_LIMIT         8192
#define LISTEN_BACKLOG       1024
/* Descriptors kept for the rest of the operator (the API client's
 * connections, its watches, logs) when the limit is cut to fit
 * RLIMIT_NOFILE. */
#define FD_RESERVE     256
#define CONNECTION_MIN 16
#define HOST_LEN       256

/* A leader election loop turns every retry period; one that has not for
 * twice the lease duration is stuck (its requests time out well before). */
#define LEADER_STALL_FACTOR 2

enum { SERVE_METRICS = 1, SERVE_HEALTH = 2 };

/* --- addresses --- */

/* Splits "host:port", ":port" or "[v6]:port". Returns the port (0-65535),
 * or -1 with a message. host "" means every address. */
static int split_addr(const char *addr, char *host, int *port, char *err)
{
	const char *colon;
	char why[ERR_LEN];
	size_t hl;

	if (addr[0] == '[') {
		const char *end = strchr(addr, ']');
		if (end == NULL || end[1] != ':')
			return err_set(err, "'%s': expected [address]:port", addr);
		hl = (size_t)(end - addr - 1);
		if (hl == 0 || hl >= HOST_LEN)
			return err_set(err, "'%s': bad address", addr);
		memcpy(host, addr + 1, hl);
		host[hl] = '\0';
		colon = end + 1;
	} else {
		colon = strrchr(addr, ':');
		if (colon == NULL)
			return err_set(err, "'%s': expected host:port, :port or 0", addr);
		hl = (size_t)(colon - addr);
		if (hl >= HOST_LEN || memchr(addr, ':', hl) != NULL)
			return err_set(
			    err, "'%s': bad address (write an IPv6 one as [address]:port)", addr);
		memcpy(host, addr, hl);
		host[hl] = '\0';
	}
	if (parse_int(colon + 1, 0, 65535, port, why) < 0)
		return err_set(err, "'%s': the port must be a number from 0 to 65535", addr);
	return 0;
}

int http_endpoints_check_addr(const char *addr, char *err)
{
	char host[HOST_LEN] = "";
	int port = 0;

	if (strcmp(addr, "0") == 0)
		return 0;
	return split_addr(addr, host, &port, err);
}

/* --- requests --- */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status,
                             const char *content_type, char *body, size_t len, int owned)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
	    len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
	enum MHD_Result rc;

	if (r == NULL) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result text(struct MHD_Connection *conn, unsigned int status, const char *body)
{
	return reply(conn, status, "text/plain; charset=utf-8", (char *)body, strlen(body), 0);
}

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
		return text(conn, MHD_HTTP_OK,
		            "[+]informers ok\n[+]reconcilers ok\n[+]leader-election ok\n"
		            "healthz check passed\n");
	snprintf(body, sizeof(body),
	         "[%s]controller %s%s\n[%s]leader-election %s\nhealthz check failed\n",
	         ok ? "+" : "-", ok ? "ok" : "failed: ", why, leader_ok ? "+" : "-",
	         leader_ok ? "ok" : "failed: its loop has not turned");
	return text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, body);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
	const struct http_listener *ln = cls;
	const struct operator_metrics *m = ln->m;

	(void)version;
	(void)upload_data;
	(void)con_cls;
	if (*upload_data_size != 0) {
		*upload_data_size = 0; /* bodies are not read: these paths take none */
		return MHD_YES;
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	if ((ln->serves & SERVE_METRICS) && strcmp(url, "/metrics") == 0) {
		size_t len = 0;
		char *body = operator_metrics_render(m, &len);
		if (body == NULL)
			return text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
		return reply(conn, MHD_HTTP_OK, PROM_CONTENT_TYPE, body, len, 1);
	}
	if ((ln->serves & SERVE_HEALTH) && strcmp(url, "/healthz") == 0)
		return healthz(conn, m);
	if ((ln->serves & SERVE_HEALTH) && strcmp(url, "/readyz") == 0) {
		if (controller_ready(m->controller))
			return text(conn, MHD_HTTP_OK,
			            "[+]informer-sync ok\nreadyz check passed\n");
		return text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
		            "[-]informer-sync failed: the caches have not filled yet\n"
		            "readyz check failed\n");
	}
	return text(conn, MHD_HTTP_NOT_FOUND, "404 page not found\n");
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[ERR_LEN];

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_warn("http: %s", line);
}

/* --- listeners --- */

/* CONNECTION_LIMIT for each of n listeners, cut to what RLIMIT_NOFILE
 * leaves after FD_RESERVE: a listener that reaches its limit stops
 * accepting (the rest wait in the backlog), whereas one that runs out of
 * descriptors would starve the API client too. */
static unsigned int connection_limit(int n)
{
	struct rlimit rl;
	rlim_t fit;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return CONNECTION_LIMIT;
	fit = rl.rlim_cur > FD_RESERVE ? (rl.rlim_cur - FD_RESERVE) / (rlim_t)n : 0;
	if (fit < CONNECTION_MIN)
		fit = CONNECTION_MIN;
	return fit < CONNECTION_LIMIT ? (unsigned int)fit : CONNECTION_LIMIT;
}

/* One daemon with the options above; sa NULL: every address of the
 * family flags name. */
static struct MHD_Daemon *start_daemon(unsigned int flags, int port, const struct sockaddr *sa,
                                       struct http_listener *ln, unsigned int limit)
{
	struct MHD_OptionItem opts[] = {
	    {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)limit, NULL},
	    {MHD_OPTION_CONNECTION_TIMEOUT, CONNECTION_TIMEOUT_S, NULL},
	    {MHD_OPTION_CONNECTION_MEMORY_LIMIT, MEMORY_LIMIT, NULL},
	    {MHD_OPTION_LISTEN_BACKLOG_SIZE, LISTEN_BACKLOG, NULL},
	    {sa != NULL ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_END, 0, (void *)sa},
	    {MHD_OPTION_END, 0, NULL},
	};

	return MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, ln,
	                        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_ARRAY, opts,
	                        MHD_OPTION_END);
}

static struct MHD_Daemon *listen_on(const char *addr, struct http_listener *ln, unsigned int limit,
                                    int *bound, char *err)
{
	char host[HOST_LEN] = "", port_s[8];
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
	unsigned int flags =
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
	    (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_POLL);
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *info;
	int port = 0, rc;

	if (split_addr(addr, host, &port, err) < 0)
		return NULL;
	if (host[0] == '\0') {
		/* Every address: IPv6 and IPv4 where the host has IPv6, else IPv4. */
		d = start_daemon(flags | MHD_USE_DUAL_STACK, port, NULL, ln, limit);
		if (d == NULL)
			d = start_daemon(flags, port, NULL, ln, limit);
	} else {
		snprintf(port_s, sizeof(port_s), "%d", port);
		rc = getaddrinfo(host, port_s, &hints, &ai);
		if (rc != 0) {
			err_set(err, "'%s': %s", addr, gai_strerror(rc));
			return NULL;
		}
		if (ai->ai_family == AF_INET6)
			flags |= MHD_USE_IPv6;
		d = start_daemon(flags, port, ai->ai_addr, ln, limit);
		freeaddrinfo(ai);
	}
	if (d == NULL) {
		err_set(err, "'%s': cannot listen (in use, or not permitted)", addr);
		return NULL;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	*bound = info ? info->port : port;
	return d;
}

int http_endpoints_start(struct http_endpoints *h, const struct operator_metrics *m,
                         const char *metrics_addr, const char *health_addr, char *err)
{
	int metrics_on = strcmp(metrics_addr, "0") != 0, health_on = strcmp(health_addr, "0") != 0;
	size_t n = strlen(metrics_addr);
	/* One address, one listener; but port 0 asks for two free ports. */
	int shared = metrics_on && health_on && strcmp(metrics_addr, health_addr) == 0 &&
	             !(n >= 2 && strcmp(metrics_addr + n - 2, ":0") == 0);
	int listeners = metrics_on + (health_on && !shared);
	unsigned int limit = connection_limit(listeners > 0 ? listeners : 1);

	memset(h, 0, sizeof(*h));
	h->metrics = m;
	h->connection_limit = limit;
	h->listeners[0] = (struct http_listener){m, SERVE_METRICS | (shared ? SERVE_HEALTH : 0)};
	h->listeners[1] = (struct http_listener){m, SERVE_HEALTH};
	if (metrics_on) {
		h->metrics_d =
		    listen_on(metrics_addr, &h->listeners[0], limit, &h->metrics_port, err);
		if (h->metrics_d == NULL)
			return err_prefix(err, "--metrics-addr");
		log_info("serving /metrics%s on port %d (up to %u connections, idle ones closed "
		         "after %d s)",
		         shared ? ", /healthz and /readyz" : "", h->metrics_port, limit,
		         CONNECTION_TIMEOUT_S);
	}
	if (health_on && !shared) {
		h->health_d = listen_on(health_addr, &h->listeners[1], limit, &h->health_port, err);
		if (h->health_d == NULL) {
			http_endpoints_stop(h);
			return err_prefix(err, "--health-addr");
		}
		log_info("serving /healthz and /readyz on port %d (up to %u connections, idle ones "
		         "closed after %d s)",
		         h->health_port, limit, CONNECTION_TIMEOUT_S);
	}
	if (shared)
		h->health_port = h->metrics_port;
	return 0;
}

void http_endpoints_stop(struct http_endpoints *h)
{
	if (h->metrics_d)
		MHD_stop_daemon(h->metrics_d);
	if (h->health_d)
		MHD_stop_daemon(h->health_d);
	h->metrics_d = h->health_d = NULL;
}
