/* bench_tcp_exchange.c - the reference for a two-worker all-reduce over TCP:
 * two processes on 127.0.0.1 that each send B bytes to the other while
 * receiving B bytes from it, with nothing else (no reduction, no slicing).
 * A two-rank ring all-reduce moves exactly this much data each way, so its
 * time over this one says what the ring's own work costs. It is not a hard
 * floor: an all-reduce that moves the data in slices can beat one exchange
 * of the whole buffer, because its working set stays in cache.
 *
 * The parent process drives; the forked child follows a header the parent
 * sends before each size. Every iteration starts with a one-byte handshake
 * each way, so both ends start together; each end times itself, and the
 * iteration's time is the slower end's. The median over iterations counts.
 *
 * Both directions move at once, in one of two ways per endpoint:
 *   thread  a sender thread writes while the main thread reads (default)
 *   poll    one thread, non-blocking send/recv, poll() when neither can move
 * Sockets have TCP_NODELAY and, unless --sockbuf 0, fixed SO_SNDBUF and
 * SO_RCVBUF (which turns off the kernel's buffer autotuning).
 *
 * Beside the time, each end measures the CPU time its process spent in the
 * round (CLOCK_PROCESS_CPUTIME_ID: both threads, user and kernel), and the
 * line gives the median of the two ends' mean: what one worker pays in CPU
 * to send its gradient and receive its peer's, which on a machine whose
 * cores are all busy training is time taken from the training.
 *
 * Why the defaults: on the 2-core bookworm VM, thread mode beat poll mode by
 * 20-40% from 1 MiB up (poll serializes each end's two copies on one thread),
 * and poll only won below 64 KiB, by tens of microseconds. 256 KiB buffers
 * (512 KiB once the kernel doubles them) beat 4 MiB ones and autotuning on
 * the cnn gradient in three sweeps, 6.1-6.9 against 7.8-9.4 ms, and at
 * 16 MiB: less data in flight keeps the socket queues in cache between the
 * sender's copy and the receiver's. From 256 KiB to 4 MiB autotuning or
 * 4 MiB buffers were faster (1 MiB: 0.5 against 0.7-0.85 ms). Run to run,
 * the medians vary by +-25% on that VM: compare interleaved runs.
 *
 * usage: bench_tcp_exchange [--iters N] [--time SEC] [--sockbuf BYTES] [--chunk BYTES]
 *                           [--mode thread|poll]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_stats.h"
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TX_ERR_LEN     256
#define TX_CNN_BYTES   (2770634L * 4) /* gradient of the `cnn` model */
#define TX_WARMUP      5
#define TX_MIN_ITERS   20
#define TX_MAX_ITERS   10000
#define TX_SOCKBUF     (256 << 10)
#define TX_MAX_SOCKBUF (1 << 30)
#define TX_CHUNK       0
#define TX_USAGE                                                                                   \
	"usage: bench_tcp_exchange [--iters N] [--time SEC] [--sockbuf BYTES] "                    \
	"[--chunk BYTES] [--mode thread|poll]\n"                                                   \
	"  --iters N        timed iterations per size (default: enough for --time, at least 20)\n" \
	"  --time SEC       time per size when --iters is not given (default 0.25)\n"              \
	"  --sockbuf BYTES  SO_SNDBUF and SO_RCVBUF, 0 = kernel autotuning (default 262144)\n"     \
	"  --chunk BYTES    most bytes per send()/recv() call, 0 = all that is left (default 0)\n" \
	"  --mode MODE      thread: sender thread + receiving main thread (default);\n"            \
	"                   poll: one thread with non-blocking sockets\n"

enum tx_mode { TX_THREAD, TX_POLL };

static const long tx_sizes[] = {4096,    16384,   65536,        262144,
                                1048576, 4194304, TX_CNN_BYTES, 16777216};
#define TX_NSIZES   (sizeof(tx_sizes) / sizeof(tx_sizes[0]))
#define TX_MAX_SIZE 16777216L

struct tx_opts {
	long iters;     /* 0: time-bounded */
	double seconds; /* target time per size when iters is 0 */
	int sockbuf;    /* bytes; 0 leaves the kernel's autotuning on */
	long chunk;     /* most bytes per send/recv call; 0: all that is left */
	enum tx_mode mode;
};

/* What the parent tells the child before each batch; bytes 0 means stop. */
struct tx_header {
	uint64_t bytes;
	uint64_t iters;
};

struct tx_endpoint {
	int fd;
	enum tx_mode mode;
	size_t chunk;      /* most bytes per send/recv call */
	char *sbuf, *rbuf; /* TX_MAX_SIZE bytes each */
	/* thread mode: the sender waits at start, sends, and meets main at done */
	pthread_t sender;
	int sender_running;
	pthread_barrier_t start, done;
	size_t bytes; /* for the sender; 0 tells it to exit */
	int send_failed;
	char send_err[TX_ERR_LEN];
};

static int tx_err(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tx_err(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, TX_ERR_LEN, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
	va_end(ap);
	return -1;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* write_all and read_all move at most chunk bytes per system call. */
static int write_all(int fd, const void *buf, size_t n, size_t chunk, char *err)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t k = send(fd, p, n < chunk ? n : chunk, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return tx_err(err, "send: %s", strerror(errno));
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t n, size_t chunk, char *err)
{
	char *p = buf;

	while (n > 0) {
		ssize_t k = recv(fd, p, n < chunk ? n : chunk, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return tx_err(err, "recv: %s", strerror(errno));
		if (k == 0)
			return tx_err(err, "recv: peer closed the connection");
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* One non-blocking step of one direction: 1 moved, 0 would block, -1 error. */
static int step_io(int fd, char *p, size_t *done, size_t n, size_t chunk, int sending, char *err)
{
	size_t len = n - *done < chunk ? n - *done : chunk;
	ssize_t k;

	do {
		k = sending ? send(fd, p + *done, len, MSG_DONTWAIT | MSG_NOSIGNAL)
		            : recv(fd, p + *done, len, MSG_DONTWAIT);
	} while (k < 0 && errno == EINTR);
	if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (k < 0)
		return tx_err(err, "%s: %s", sending ? "send" : "recv", strerror(errno));
	if (k == 0 && !sending)
		return tx_err(err, "recv: peer closed the connection");
	*done += (size_t)k;
	return 1;
}

/* Both directions from one thread; sleeps in poll() only when neither moves. */
static int exchange_poll(struct tx_endpoint *e, size_t n, char *err)
{
	size_t sent = 0, got = 0;

	while (sent < n || got < n) {
		int moved = 0, r;
		if (got < n) {
			r = step_io(e->fd, e->rbuf, &got, n, e->chunk, 0, err);
			if (r < 0)
				return -1;
			moved |= r;
		}
		if (sent < n) {
			r = step_io(e->fd, e->sbuf, &sent, n, e->chunk, 1, err);
			if (r < 0)
				return -1;
			moved |= r;
		}
		if (moved)
			continue;
		struct pollfd pfd = {
		    .fd = e->fd,
		    .events = (short)((got < n ? POLLIN : 0) | (sent < n ? POLLOUT : 0))};
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return tx_err(err, "poll: %s", strerror(errno));
	}
	return 0;
}

static void *sender_main(void *arg)
{
	struct tx_endpoint *e = arg;

	for (;;) {
		pthread_barrier_wait(&e->start);
		if (e->bytes == 0)
			return NULL;
		e->send_failed = write_all(e->fd, e->sbuf, e->bytes, e->chunk, e->send_err) < 0;
		pthread_barrier_wait(&e->done);
	}
}

static int exchange_thread(struct tx_endpoint *e, size_t n, char *err)
{
	int rc;

	e->bytes = n;
	pthread_barrier_wait(&e->start);
	rc = read_all(e->fd, e->rbuf, n, e->chunk, err);
	if (rc < 0)
		shutdown(e->fd, SHUT_RDWR); /* so a blocked sender fails instead of hanging */
	pthread_barrier_wait(&e->done);
	if (rc == 0 && e->send_failed)
		rc = tx_err(err, "%s", e->send_err);
	return rc;
}

/* Runs iters handshake-then-exchange rounds of n bytes; t[i] gets this
 * end's seconds for round i, and t[iters + i] its process's CPU seconds. */
static int run_rounds(struct tx_endpoint *e, size_t n, long iters, double *t, char *err)
{
	char token = 'x';

	for (long i = 0; i < iters; i++) {
		if (write_all(e->fd, &token, 1, SIZE_MAX, err) < 0 ||
		    read_all(e->fd, &token, 1, SIZE_MAX, err) < 0)
			return -1;
		double t0 = now(), c0 = cpu_now();
		if ((e->mode == TX_THREAD ? exchange_thread(e, n, err) : exchange_poll(e, n, err)) <
		    0)
			return -1;
		t[i] = now() - t0;
		t[iters + i] = cpu_now() - c0;
	}
	return 0;
}

/* Parent side of one batch: tells the child, runs it, and combines the
 * child's times into t as per-round maxima, and the CPU times in
 * t[iters..] as per-round means of the two ends. */
static int lead_batch(struct tx_endpoint *e, size_t n, long iters, double *t, double *peer,
                      char *err)
{
	struct tx_header h = {.bytes = n, .iters = (uint64_t)iters};

	if (write_all(e->fd, &h, sizeof(h), SIZE_MAX, err) < 0 ||
	    run_rounds(e, n, iters, t, err) < 0 ||
	    read_all(e->fd, peer, 2 * (size_t)iters * sizeof(double), SIZE_MAX, err) < 0)
		return -1;
	for (long i = 0; i < iters; i++) {
		t[i] = peer[i] > t[i] ? peer[i] : t[i];
		t[iters + i] = (t[iters + i] + peer[iters + i]) / 2.0;
	}
	return 0;
}

static int lead(struct tx_endpoint *e, const struct tx_opts *o, double *t, double *peer, char *err)
{
	struct tx_header stop = {0, 0};

	for (size_t s = 0; s < TX_NSIZES; s++) {
		size_t n = (size_t)tx_sizes[s];
		double warm = 0.0;
		long iters = o->iters;

		/* The warm-up also prices one round, which sets the count. */
		if (lead_batch(e, n, TX_WARMUP, t, peer, err) < 0)
			return -1;
		for (int i = 0; i < TX_WARMUP; i++)
			warm += t[i];
		if (iters == 0) {
			iters = warm > 0.0 ? (long)(o->seconds * TX_WARMUP / warm) : TX_MAX_ITERS;
			iters = iters < TX_MIN_ITERS   ? TX_MIN_ITERS
			        : iters > TX_MAX_ITERS ? TX_MAX_ITERS
			                               : iters;
		}
		if (lead_batch(e, n, iters, t, peer, err) < 0)
			return -1;
		double sec = bench_median(t, iters), cpu = bench_median(t + iters, iters);
		printf("{\"bench\":\"tcp_exchange\",\"bytes\":%zu,%s\"ms_median\":%.4f,"
		       "\"gbs\":%.4f,\"cpu_ms_per_end_median\":%.4f,\"iters\":%ld,\"mode\":\"%s\","
		       "\"sockbuf\":%d,\"chunk\":%ld}\n",
		       n, tx_sizes[s] == TX_CNN_BYTES ? "\"label\":\"cnn\"," : "", sec * 1e3,
		       (double)n / sec / 1e9, cpu * 1e3, iters,
		       o->mode == TX_THREAD ? "thread" : "poll", o->sockbuf, o->chunk);
		fflush(stdout);
	}
	return write_all(e->fd, &stop, sizeof(stop), SIZE_MAX, err);
}

static int follow(struct tx_endpoint *e, double *t, char *err)
{
	struct tx_header h;

	for (;;) {
		if (read_all(e->fd, &h, sizeof(h), SIZE_MAX, err) < 0)
			return -1;
		if (h.bytes == 0)
			return 0;
		if (h.bytes > TX_MAX_SIZE || h.iters < 1 || h.iters > TX_MAX_ITERS)
			return tx_err(err, "bad header: %llu bytes, %llu iterations",
			              (unsigned long long)h.bytes, (unsigned long long)h.iters);
		if (run_rounds(e, h.bytes, (long)h.iters, t, err) < 0 ||
		    write_all(e->fd, t, 2 * h.iters * sizeof(double), SIZE_MAX, err) < 0)
			return -1;
	}
}

/* Buffers are set before listen() and connect(): the window scale is fixed
 * by the SYN, and an accepted socket inherits the listener's settings. */
static int tune_socket(int fd, int sockbuf, char *err)
{
	int one = 1;

	if (sockbuf > 0 && (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sockbuf, sizeof(sockbuf)) < 0 ||
	                    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sockbuf, sizeof(sockbuf)) < 0))
		return tx_err(err, "setsockopt SO_SNDBUF/SO_RCVBUF %d: %s", sockbuf,
		              strerror(errno));
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return tx_err(err, "setsockopt TCP_NODELAY: %s", strerror(errno));
	return 0;
}

/* A listener on 127.0.0.1 with a kernel-chosen port, written to addr. */
static int listen_loopback(int sockbuf, struct sockaddr_in *addr, char *err)
{
	socklen_t len = sizeof(*addr);
	int fd;

	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return tx_err(err, "socket: %s", strerror(errno));
	if (tune_socket(fd, sockbuf, err) < 0)
		goto fail;
	if (bind(fd, (struct sockaddr *)addr, sizeof(*addr)) < 0 || listen(fd, 1) < 0 ||
	    getsockname(fd, (struct sockaddr *)addr, &len) < 0) {
		tx_err(err, "listen on 127.0.0.1: %s", strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

static int connect_loopback(const struct sockaddr_in *addr, int sockbuf, char *err)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return tx_err(err, "socket: %s", strerror(errno));
	if (tune_socket(fd, sockbuf, err) < 0)
		goto fail;
	if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0) {
		tx_err(err, "connect to '127.0.0.1:%d': %s", ntohs(addr->sin_port),
		       strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

/* Buffers, touched so page faults stay out of the first rounds, and the
 * sender thread in thread mode. */
static int endpoint_init(struct tx_endpoint *e, int fd, const struct tx_opts *o, char *err)
{
	int rc;

	memset(e, 0, sizeof(*e));
	e->fd = fd;
	e->mode = o->mode;
	e->chunk = o->chunk > 0 ? (size_t)o->chunk : SIZE_MAX;
	e->sbuf = malloc(TX_MAX_SIZE);
	e->rbuf = malloc(TX_MAX_SIZE);
	if (!e->sbuf || !e->rbuf)
		return tx_err(err, "out of memory");
	memset(e->sbuf, 0x5a, TX_MAX_SIZE);
	memset(e->rbuf, 0, TX_MAX_SIZE);
	if (o->mode != TX_THREAD)
		return 0;
	if (pthread_barrier_init(&e->start, NULL, 2) != 0 ||
	    pthread_barrier_init(&e->done, NULL, 2) != 0)
		return tx_err(err, "pthread_barrier_init failed");
	rc = pthread_create(&e->sender, NULL, sender_main, e);
	if (rc != 0)
		return tx_err(err, "pthread_create: %s", strerror(rc));
	e->sender_running = 1;
	return 0;
}

/* Stops the sender, frees the buffers and closes the socket. */
static void endpoint_release(struct tx_endpoint *e)
{
	if (e->sender_running) {
		e->bytes = 0;
		pthread_barrier_wait(&e->start);
		pthread_join(e->sender, NULL);
		pthread_barrier_destroy(&e->start);
		pthread_barrier_destroy(&e->done);
	}
	free(e->sbuf);
	free(e->rbuf);
	if (e->fd >= 0)
		close(e->fd);
}

/* Child process: connect, follow the parent's batches, exit. */
static int child_main(const struct sockaddr_in *addr, const struct tx_opts *o, double *t)
{
	char err[TX_ERR_LEN];
	struct tx_endpoint e;
	int fd = connect_loopback(addr, o->sockbuf, err), rc = -1;

	if (fd < 0) {
		fprintf(stderr, "bench_tcp_exchange: child: %s\n", err);
		return 1;
	}
	if (endpoint_init(&e, fd, o, err) == 0)
		rc = follow(&e, t, err);
	if (rc < 0)
		fprintf(stderr, "bench_tcp_exchange: child: %s\n", err);
	endpoint_release(&e);
	return rc < 0 ? 1 : 0;
}

static int bad_flag(const char *msg)
{
	fprintf(stderr, "bench_tcp_exchange: %s\n%s", msg, TX_USAGE);
	return -1;
}

/* Returns 0 to run, 1 after --help, -1 on a bad flag. */
static int parse_opts(int argc, char **argv, struct tx_opts *o)
{
	static const struct option table[] = {
	    {"iters", required_argument, NULL, 'n'},
	    {"time", required_argument, NULL, 't'},
	    {"sockbuf", required_argument, NULL, 'b'},
	    {"chunk", required_argument, NULL, 'c'},
	    {"mode", required_argument, NULL, 'm'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	long v;
	char *end;

	*o = (struct tx_opts){.iters = 0,
	                      .seconds = 0.25,
	                      .sockbuf = TX_SOCKBUF,
	                      .chunk = TX_CHUNK,
	                      .mode = TX_THREAD};
	while ((c = getopt_long(argc, argv, "h", table, NULL)) != -1) {
		errno = 0;
		switch (c) {
		case 'n':
			o->iters = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || o->iters < 1 ||
			    o->iters > TX_MAX_ITERS)
				return bad_flag("--iters: expected 1..10000");
			break;
		case 't':
			o->seconds = strtod(optarg, &end);
			if (errno || end == optarg || *end ||
			    !(o->seconds > 0.0 && o->seconds <= 60.0))
				return bad_flag("--time: expected seconds in (0, 60]");
			break;
		case 'b':
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 0 || v > TX_MAX_SOCKBUF)
				return bad_flag("--sockbuf: expected 0..1073741824 bytes");
			o->sockbuf = (int)v;
			break;
		case 'c':
			o->chunk = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || o->chunk < 0 ||
			    o->chunk > TX_MAX_SIZE)
				return bad_flag("--chunk: expected 0..16777216 bytes");
			break;
		case 'm':
			if (strcmp(optarg, "thread") == 0)
				o->mode = TX_THREAD;
			else if (strcmp(optarg, "poll") == 0)
				o->mode = TX_POLL;
			else
				return bad_flag("--mode: expected 'thread' or 'poll'");
			break;
		case 'h':
			fputs(TX_USAGE, stdout);
			return 1;
		default: /* getopt_long has said what was wrong */
			fputs(TX_USAGE, stderr);
			return -1;
		}
	}
	if (optind != argc)
		return bad_flag("unexpected argument");
	return 0;
}

/* Prints the effective configuration once, with what the kernel made of
 * the buffer sizes (it doubles them, and caps them at net.core.*mem_max). */
static void print_config(int fd, const struct tx_opts *o)
{
	int snd = 0, rcv = 0;
	socklen_t len = sizeof(int);

	if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, &len) < 0)
		snd = -1;
	len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &len) < 0)
		rcv = -1;
	fprintf(stderr,
	        "bench_tcp_exchange: mode %s, sockbuf %d (%s; kernel reports snd %d rcv %d), "
	        "chunk %ld, %s\n",
	        o->mode == TX_THREAD ? "thread" : "poll", o->sockbuf,
	        o->sockbuf ? "fixed" : "autotuned", snd, rcv, o->chunk,
	        o->iters ? "fixed iterations" : "time-bounded iterations");
}

int main(int argc, char **argv)
{
	char err[TX_ERR_LEN];
	struct tx_opts o;
	struct tx_endpoint e = {.fd = -1};
	struct sockaddr_in addr;
	double *t = NULL, *peer = NULL;
	int lfd = -1, fd = -1, rc = 1, status = 0, parsed = parse_opts(argc, argv, &o);
	pid_t child = -1;

	if (parsed != 0)
		return parsed > 0 ? 0 : 2;
	t = malloc(2 * (size_t)TX_MAX_ITERS * sizeof(double)); /* times, then CPU times */
	peer = malloc(2 * (size_t)TX_MAX_ITERS * sizeof(double));
	if (!t || !peer) {
		fprintf(stderr, "bench_tcp_exchange: out of memory\n");
		goto out;
	}
	lfd = listen_loopback(o.sockbuf, &addr, err);
	if (lfd < 0)
		goto fail;
	fflush(NULL); /* nothing buffered may be written twice */
	child = fork();
	if (child < 0) {
		tx_err(err, "fork: %s", strerror(errno));
		goto fail;
	}
	if (child == 0) {
		close(lfd);
		_exit(child_main(&addr, &o, t));
	}
	do
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		tx_err(err, "accept: %s", strerror(errno));
		goto fail;
	}
	close(lfd);
	lfd = -1;
	if (endpoint_init(&e, fd, &o, err) < 0)
		goto fail;
	print_config(fd, &o);
	if (lead(&e, &o, t, peer, err) < 0)
		goto fail;
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "bench_tcp_exchange: %s\n", err);
out:
	if (e.fd >= 0)
		endpoint_release(&e); /* closes fd: a waiting child sees EOF */
	else if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	if (child > 0) {
		pid_t w;
		do
			w = waitpid(child, &status, 0);
		while (w < 0 && errno == EINTR);
		if (w < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "bench_tcp_exchange: child failed (status %d)\n", status);
			rc = 1;
		}
	}
	free(t);
	free(peer);
	return rc;
}
