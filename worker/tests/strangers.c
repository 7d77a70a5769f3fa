/* strangers.c - connections that are not workers; see strangers.h. No
 * cmocka here: the rendezvous benchmark uses it too. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "strangers.h"

#define MAX_SLOTS 2048
/* New connections per port and round (500 a second at most): enough to
 * refill a port's strangers within a second, few enough not to starve the
 * workers of CPU. */
#define OPENS_PER_ROUND 25
#define ROUND_MS        50

enum { CLOSED, CONNECTING, OPEN };

struct slot {
	int fd, port, garbage, state;
};

struct strangers {
	pthread_t thread;
	atomic_int stop;
	int nports, n;
	struct slot slots[MAX_SLOTS];
	unsigned seed;
	long made;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void shut(struct slot *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->state = CLOSED;
}

static void dial(struct slot *s)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		return;
	if (connect(s->fd, (struct sockaddr *)&a, sizeof(a)) == 0)
		s->state = OPEN;
	else if (errno == EINPROGRESS)
		s->state = CONNECTING;
	else
		shut(s); /* nothing listens yet: next round */
}

/* Random bytes that can never be an mwj greeting (it starts with 'M'). */
static void babble(struct strangers *st, struct slot *s)
{
	unsigned char junk[512];
	size_t n = 64 + (size_t)(rand_r(&st->seed) % 448);

	for (size_t i = 0; i < n; i++)
		junk[i] = (unsigned char)rand_r(&st->seed);
	if (junk[0] == 'M')
		junk[0] = 'x';
	(void)!send(s->fd, junk, n, MSG_NOSIGNAL);
}

/* A connection that finished connecting, or heard from the worker. */
static void on_ready(struct strangers *st, struct slot *s, short revents)
{
	char buf[4096];
	int soerr = 0;
	socklen_t len = sizeof(soerr);

	if (s->state == CONNECTING) {
		if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr != 0) {
			shut(s);
			return;
		}
		s->state = OPEN;
		st->made++;
		if (s->garbage)
			babble(st, s);
		return;
	}
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		ssize_t k = recv(s->fd, buf, sizeof(buf), 0);
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
			shut(s); /* the worker dropped it: another comes */
	}
}

static void round_trip(struct strangers *st, struct pollfd *pfd, int *map)
{
	int opened[64] = {0}, np = 0;

	for (int i = 0; i < st->n; i++) {
		struct slot *s = &st->slots[i];
		int port_ix = i % st->nports;
		if (s->state == CLOSED && opened[port_ix] < OPENS_PER_ROUND) {
			opened[port_ix]++;
			dial(s);
			if (s->state == OPEN) {
				st->made++;
				if (s->garbage)
					babble(st, s);
			}
		}
		if (s->state != CLOSED) {
			pfd[np] =
			    (struct pollfd){s->fd, s->state == CONNECTING ? POLLOUT : POLLIN, 0};
			map[np++] = i;
		}
	}
	/* The rest of the round: answer what happens, open nothing new. */
	for (long long end = now_ms() + ROUND_MS, left; (left = end - now_ms()) > 0;) {
		if (poll(pfd, (nfds_t)np, (int)left) <= 0)
			return;
		for (int k = 0; k < np; k++) {
			if (pfd[k].revents && st->slots[map[k]].state != CLOSED)
				on_ready(st, &st->slots[map[k]], pfd[k].revents);
			if (st->slots[map[k]].state == CLOSED)
				pfd[k].fd = -1; /* poll skips it */
			else
				pfd[k].events =
				    st->slots[map[k]].state == CONNECTING ? POLLOUT : POLLIN;
		}
	}
}

static void *run(void *arg)
{
	struct strangers *st = arg;
	struct pollfd *pfd = calloc(MAX_SLOTS, sizeof(*pfd));
	int *map = calloc(MAX_SLOTS, sizeof(*map));

	while (pfd && map && !atomic_load(&st->stop))
		round_trip(st, pfd, map);
	free(pfd);
	free(map);
	return NULL;
}

struct strangers *strangers_start(const int *ports, int nports, int idle, int garbage)
{
	struct strangers *st;

	if (nports <= 0 || nports > 64 || idle < 0 || garbage < 0 ||
	    nports * (idle + garbage) > MAX_SLOTS)
		return NULL;
	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return NULL;
	st->seed = (unsigned)time(NULL);
	st->nports = nports;
	/* Slot i belongs to port i % nports, so that opened[] counts per port. */
	for (int k = 0; k < idle + garbage; k++)
		for (int p = 0; p < nports; p++)
			st->slots[st->n++] = (struct slot){-1, ports[p], k >= idle, CLOSED};
	if (pthread_create(&st->thread, NULL, run, st) != 0) {
		free(st);
		return NULL;
	}
	return st;
}

long strangers_stop(struct strangers *st)
{
	long made;

	if (st == NULL)
		return 0;
	atomic_store(&st->stop, 1);
	pthread_join(st->thread, NULL);
	for (int i = 0; i < st->n; i++)
		shut(&st->slots[i]);
	made = st->made;
	free(st);
	return made;
}

long strangers_listen_in(int port, const void *first, size_t len, unsigned char *got, size_t cap,
                         int ms)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	unsigned char junk[2048];
	unsigned seed = (unsigned)time(NULL);
	long long end = now_ms() + ms;
	size_t n = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)rand_r(&seed);
	(void)!send(fd, first, len, MSG_NOSIGNAL);
	(void)!send(fd, junk, sizeof(junk), MSG_NOSIGNAL);
	for (long long left; n < cap && (left = end - now_ms()) > 0;) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, (int)left) <= 0)
			break;
		ssize_t k = recv(fd, got + n, cap - n, 0);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	return (long)n;
}
