/* net.c - TCP sockets for the workers' ring. */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "err.h"

/* Socket buffers: large enough that a pipelined segment or two of the ring
 * is in flight in each direction without waiting for the reader. */
#define NET_BUFFER_BYTES (4 << 20)

long long net_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void net_close(int fd)
{
	if (fd >= 0)
		close(fd);
}

void net_tune(int fd, int user_timeout_ms)
{
	int one = 1, buf = NET_BUFFER_BYTES;
	unsigned int uto = user_timeout_ms > 0 ? (unsigned int)user_timeout_ms : 0;

	/* Best effort: a socket that keeps its defaults still works. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	(void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof(uto));
}

static int listen_family(int family, int port, char *err)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	int one = 1, zero = 0;
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return err_set(err, "socket: %s", strerror(errno));
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_any;
		a->sin6_port = htons((uint16_t)port);
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_ANY);
		a->sin_port = htons((uint16_t)port);
		len = sizeof(*a);
	}
	/* A long queue: while the ring trains nobody accepts, and strangers
	 * (probes, scanners) that queue up then must not fill it, or the real
	 * peer's connection is dropped and waits out a SYN retransmission. */
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, SOMAXCONN) < 0) {
		err_set(err, "listen on port %d: %s", port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int net_listen(int port, char *err)
{
	int fd = listen_family(AF_INET6, port, err);

	/* Hosts without IPv6 refuse the socket; port conflicts fail both. */
	if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL))
		fd = listen_family(AF_INET, port, err);
	return fd;
}

int net_local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	memset(&ss, 0, sizeof(ss));
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -1;
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 a;
		memcpy(&a, &ss, sizeof(a));
		return ntohs(a.sin6_port);
	}
	struct sockaddr_in a;
	memcpy(&a, &ss, sizeof(a));
	return ntohs(a.sin_port);
}

static void format_peer(const struct sockaddr_storage *ss, char *out, size_t n)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr))
			inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], ip, sizeof(ip));
		else
			inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		port = ntohs(a->sin6_port);
	} else if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		port = ntohs(a->sin_port);
	}
	snprintf(out, n, "%s:%d", ip, port);
}

int net_accept(int lfd, int timeout_ms, char *peer, size_t n, char *err)
{
	struct pollfd p = {lfd, POLLIN, 0};
	struct sockaddr_storage ss = {0};
	socklen_t len = sizeof(ss);
	int rc, fd;

	err[0] = '\0';
	rc = poll(&p, 1, timeout_ms < 0 ? 0 : timeout_ms);
	if (rc < 0 && errno != EINTR)
		return err_set(err, "poll: %s", strerror(errno));
	if (rc <= 0)
		return -1;
	fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
			return -1; /* the caller polls again */
		return err_set(err, "accept: %s", strerror(errno));
	}
	format_peer(&ss, peer, n);
	net_tune(fd, 0);
	return fd;
}

/* Waits for a non-blocking connect to finish. Returns 0 or -1 with errno. */
static int connect_wait(int fd, int timeout_ms)
{
	struct pollfd p = {fd, POLLOUT, 0};
	int soerr = 0, rc;
	socklen_t len = sizeof(soerr);

	do
		rc = poll(&p, 1, timeout_ms);
	while (rc < 0 && errno == EINTR);
	if (rc == 0) {
		errno = ETIMEDOUT;
		return -1;
	}
	if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		return -1;
	errno = soerr;
	return soerr ? -1 : 0;
}

int net_connect(const char *host, int port, int timeout_ms, int *retry, char *err)
{
	struct addrinfo hints = {0}, *res = NULL;
	char service[16];
	int rc, fd = -1, saved = 0;

	*retry = 1;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc != 0) {
		/* A peer's DNS name appears only once its pod exists. */
		*retry = rc == EAI_NONAME || rc == EAI_AGAIN || rc == EAI_FAIL || rc == EAI_NODATA;
		return err_set(err, "resolve '%s': %s", host, gai_strerror(rc));
	}
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		            ai->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
		    (errno == EINPROGRESS && connect_wait(fd, timeout_ms) == 0))
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return err_set(err, "connect to '%s:%d': %s", host, port, strerror(saved));
	net_tune(fd, 0);
	return fd;
}

/* Waits until fd is ready for events or the deadline passes. */
static int wait_ready(int fd, short events, long long deadline_ms, const char *what, char *err)
{
	for (;;) {
		long long left = deadline_ms - net_now_ms();
		struct pollfd p = {fd, events, 0};
		int rc;
		if (left <= 0)
			return err_set(err, "%s: timed out", what);
		rc = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
		if (rc > 0)
			return 0;
		if (rc < 0 && errno != EINTR)
			return err_set(err, "%s: poll: %s", what, strerror(errno));
	}
}

int net_write_all(int fd, const void *buf, size_t len, long long deadline_ms, char *err)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t k = send(fd, p, len, MSG_NOSIGNAL);
		if (k > 0) {
			p += k;
			len -= (size_t)k;
		} else if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (wait_ready(fd, POLLOUT, deadline_ms, "send", err) < 0)
				return -1;
		} else {
			return err_set(err, "send: %s", k < 0 ? strerror(errno) : "no progress");
		}
	}
	return 0;
}

int net_read_all(int fd, void *buf, size_t len, long long deadline_ms, char *err)
{
	char *p = buf;

	while (len > 0) {
		ssize_t k = recv(fd, p, len, 0);
		if (k > 0) {
			p += k;
			len -= (size_t)k;
		} else if (k == 0) {
			return err_set(err, "connection closed by peer");
		} else if (errno == EAGAIN || errno == EINTR) {
			if (wait_ready(fd, POLLIN, deadline_ms, "receive", err) < 0)
				return -1;
		} else {
			return err_set(err, "receive: %s", strerror(errno));
		}
	}
	return 0;
}
