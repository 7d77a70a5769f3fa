/* http_listen.c - HTTP listeners over libmicrohttpd; see http_listen.h. */
#include "http_listen.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "err.h"
#include "log.h"
#include "parse.h"

/* What keeps a listener answering when clients misbehave (a burst of a
 * thousand connections, hundreds that connect and say nothing): it polls
 * with epoll on a thread of its own, so a connection costs a descriptor
 * and a little memory, not a thread nor a slot of select's 1,024; it takes
 * up to CONNECTION_LIMIT at once, far above what probes and scrapes need,
 * within the descriptors the process may open (see
 * http_listen_connection_limit); one that has sent nothing for
 * HTTP_LISTEN_IDLE_TIMEOUT_S is closed, so silent ones free their slot in
 * seconds, not the minutes a drain of 64 slots took; each gets
 * MEMORY_LIMIT bytes for its request and reply headers (our requests are
 * one line and a few headers; a Prometheus scrape with a bearer token is
 * under 2 KiB), so that a full listener costs at most CONNECTION_LIMIT x
 * MEMORY_LIMIT (16 MiB); and LISTEN_BACKLOG connections wait in the kernel
 * while the limit is reached, instead of being refused. */
#define CONNECTION_LIMIT 2048
#define MEMORY_LIMIT     8192
#define LISTEN_BACKLOG   1024
/* Descriptors kept for the rest of the process (the operator's API
 * client, its watches, logs) when the limit is cut to fit RLIMIT_NOFILE. */
#define FD_RESERVE     256
#define CONNECTION_MIN 16
#define HOST_LEN       256

/* --- addresses --- */

/* Splits "host:port", ":port" or "[v6]:port". Returns 0 with the port
 * (0-65535), or -1 with a message. host "" means every address. */
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

int http_listen_check_addr(const char *addr, char *err)
{
	char host[HOST_LEN] = "";
	int port = 0;

	if (strcmp(addr, "0") == 0)
		return 0;
	return split_addr(addr, host, &port, err);
}

/* --- requests --- */

enum MHD_Result http_listen_reply(struct MHD_Connection *conn, unsigned int status,
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

enum MHD_Result http_listen_text(struct MHD_Connection *conn, unsigned int status, const char *body)
{
	return http_listen_reply(conn, status, "text/plain; charset=utf-8", (char *)body,
	                         strlen(body), 0);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
	const struct http_listener *l = cls;

	(void)version;
	(void)upload_data;
	(void)con_cls;
	if (*upload_data_size != 0) {
		*upload_data_size = 0; /* bodies are not read: these paths take none */
		return MHD_YES;
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return http_listen_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	return l->handle(l->ctx, conn, url);
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

unsigned int http_listen_connection_limit(int n)
{
	struct rlimit rl;
	rlim_t fit;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return CONNECTION_LIMIT;
	fit = rl.rlim_cur > FD_RESERVE ? (rl.rlim_cur - FD_RESERVE) / (rlim_t)(n > 0 ? n : 1) : 0;
	if (fit < CONNECTION_MIN)
		fit = CONNECTION_MIN;
	return fit < CONNECTION_LIMIT ? (unsigned int)fit : CONNECTION_LIMIT;
}

/* One daemon with the options above; sa NULL: every address of the
 * family flags name. */
static struct MHD_Daemon *start_daemon(unsigned int flags, int port, const struct sockaddr *sa,
                                       struct http_listener *l, unsigned int limit)
{
	struct MHD_OptionItem opts[] = {
	    {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)limit, NULL},
	    {MHD_OPTION_CONNECTION_TIMEOUT, HTTP_LISTEN_IDLE_TIMEOUT_S, NULL},
	    {MHD_OPTION_CONNECTION_MEMORY_LIMIT, MEMORY_LIMIT, NULL},
	    {MHD_OPTION_LISTEN_BACKLOG_SIZE, LISTEN_BACKLOG, NULL},
	    {sa != NULL ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_END, 0, (void *)sa},
	    {MHD_OPTION_END, 0, NULL},
	};

	return MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, l,
	                        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_ARRAY, opts,
	                        MHD_OPTION_END);
}

int http_listen_start(struct http_listener *l, const char *addr, unsigned int limit,
                      http_listen_handler handle, void *ctx, char *err)
{
	char host[HOST_LEN] = "", port_s[8];
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
	unsigned int flags =
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
	    (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_POLL);
	const union MHD_DaemonInfo *info;
	int port = 0, rc;

	*l = (struct http_listener){NULL, 0, handle, ctx};
	if (split_addr(addr, host, &port, err) < 0)
		return -1;
	if (host[0] == '\0') {
		/* Every address: IPv6 and IPv4 where the host has IPv6, else IPv4. */
		l->daemon = start_daemon(flags | MHD_USE_DUAL_STACK, port, NULL, l, limit);
		if (l->daemon == NULL)
			l->daemon = start_daemon(flags, port, NULL, l, limit);
	} else {
		snprintf(port_s, sizeof(port_s), "%d", port);
		rc = getaddrinfo(host, port_s, &hints, &ai);
		if (rc != 0)
			return err_set(err, "'%s': %s", addr, gai_strerror(rc));
		if (ai->ai_family == AF_INET6)
			flags |= MHD_USE_IPv6;
		l->daemon = start_daemon(flags, port, ai->ai_addr, l, limit);
		freeaddrinfo(ai);
	}
	if (l->daemon == NULL)
		return err_set(err, "'%s': cannot listen (in use, or not permitted)", addr);
	info = MHD_get_daemon_info(l->daemon, MHD_DAEMON_INFO_BIND_PORT);
	l->port = info ? info->port : port;
	return 0;
}

void http_listen_stop(struct http_listener *l)
{
	if (l->daemon)
		MHD_stop_daemon(l->daemon);
	l->daemon = NULL;
}

/* --- sockets of one's own --- */

/* A socket of family listening on sa (len bytes): the descriptor, or -1
 * with errno set. v6only 0 takes IPv4 too on an IPv6 socket. */
static int listen_fd(int family, const struct sockaddr *sa, socklen_t len, int v6only)
{
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1, saved;

	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)) < 0) ||
	    bind(fd, sa, len) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

static int bound_port(int fd)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} a;
	socklen_t len = sizeof(a);

	memset(&a, 0, sizeof(a));
	if (getsockname(fd, &a.sa, &len) < 0)
		return -1;
	return ntohs(a.sa.sa_family == AF_INET6 ? a.v6.sin6_port : a.v4.sin_port);
}

int http_listen_socket(const char *addr, int *port, char *err)
{
	char host[HOST_LEN] = "", port_s[8];
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
	int want = 0, fd, rc, why;

	if (split_addr(addr, host, &want, err) < 0)
		return -1;
	if (host[0] == '\0') {
		/* Every address: IPv6 and IPv4 where the host has IPv6, else IPv4. */
		struct sockaddr_in6 any6 = {.sin6_family = AF_INET6,
		                            .sin6_port = htons((uint16_t)want)};
		struct sockaddr_in any4 = {.sin_family = AF_INET,
		                           .sin_port = htons((uint16_t)want)};
		any6.sin6_addr = in6addr_any;
		any4.sin_addr.s_addr = htonl(INADDR_ANY);
		fd = listen_fd(AF_INET6, (struct sockaddr *)&any6, sizeof(any6), 0);
		if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL))
			fd = listen_fd(AF_INET, (struct sockaddr *)&any4, sizeof(any4), 0);
	} else {
		snprintf(port_s, sizeof(port_s), "%d", want);
		rc = getaddrinfo(host, port_s, &hints, &ai);
		if (rc != 0)
			return err_set(err, "'%s': %s", addr, gai_strerror(rc));
		fd = listen_fd(ai->ai_family, ai->ai_addr, ai->ai_addrlen, 1);
		why = errno;
		freeaddrinfo(ai);
		errno = why;
	}
	if (fd < 0)
		return err_set(err, "'%s': cannot listen: %s", addr, strerror(errno));
	*port = bound_port(fd);
	if (*port < 0) {
		close(fd);
		return err_set(err, "'%s': getsockname: %s", addr, strerror(errno));
	}
	return fd;
}
