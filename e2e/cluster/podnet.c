/* The local test node's network view for one pod, preloaded into the pod's
 * processes (LD_PRELOAD). Pods on the local node share the host's network,
 * each with a loopback address of its own (127.0.0.x, in MWJ_LOCAL_POD_IP);
 * a server that listens "on all interfaces" must then listen on that
 * address only, or two pods listening on the same port would collide. So
 * bind() to the wildcard address (0.0.0.0, or :: for a dual-stack socket)
 * binds to the pod's address instead. Everything else passes through. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

static bind_fn real_bind(void)
{
	static bind_fn real;

	if (!real)
		real = (bind_fn)dlsym(RTLD_NEXT, "bind");
	return real;
}

static int pod_ip(struct in_addr *ip)
{
	const char *text = getenv("MWJ_LOCAL_POD_IP");

	return text && inet_pton(AF_INET, text, ip) == 1;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	bind_fn real = real_bind();
	struct in_addr ip;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in) &&
	    ((const struct sockaddr_in *)addr)->sin_addr.s_addr == htonl(INADDR_ANY) &&
	    pod_ip(&ip)) {
		struct sockaddr_in a;

		memcpy(&a, addr, sizeof(a));
		a.sin_addr = ip;
		return real(fd, (const struct sockaddr *)&a, sizeof(a));
	}
	if (addr && addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6) &&
	    IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)addr)->sin6_addr) &&
	    pod_ip(&ip)) {
		struct sockaddr_in6 a;

		/* The IPv4-mapped form of the pod's address: IPv4 clients reach
		 * it, as they reach a dual-stack wildcard socket. */
		memcpy(&a, addr, sizeof(a));
		memset(&a.sin6_addr, 0, sizeof(a.sin6_addr));
		a.sin6_addr.s6_addr[10] = 0xff;
		a.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&a.sin6_addr.s6_addr[12], &ip, sizeof(ip));
		return real(fd, (const struct sockaddr *)&a, sizeof(a));
	}
	return real(fd, addr, len);
}
