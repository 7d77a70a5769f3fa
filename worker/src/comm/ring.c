/* ring.c - ring all-reduce and broadcast over TCP, pipelined by segment. */
#include "ring.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "err.h"
#include "net.h"
#include "simd.h"

/* Segment size: large enough that a syscall moves a lot of data, small
 * enough that the ring's first and last hops overlap the middle. */
#define RING_SEGMENT_BYTES ((size_t)256 * 1024)
#define RING_MAX_IOV       64

/* The logical vector a collective works on: pieces of rows in memory. */
struct vec {
	char *base;
	size_t elem; /* bytes per element */
	const struct grad_slice *pieces;
	int npieces;
	size_t n; /* elements */
	void (*add)(void *dst, const void *src, size_t n);
};

/* One segment to send or receive: elements [lo, hi) of the vector. A send
 * waits until need receives have completed; a receive with reduce set is
 * summed into the vector, otherwise it overwrites it. */
struct ring_op {
	size_t lo, hi, need;
	int reduce;
};

SIMD_CLONES
static void add_f32(void *dst, const void *src, size_t n)
{
	float *restrict d = dst;
	const float *restrict s = src;

	for (size_t i = 0; i < n; i++)
		d[i] += s[i];
}

static void add_f64(void *dst, const void *src, size_t n)
{
	double *restrict d = dst;
	const double *restrict s = src;

	for (size_t i = 0; i < n; i++)
		d[i] += s[i];
}

void ring_init(struct ring *r, int world, int rank, int next_fd, int prev_fd, const char *next_name,
               const char *prev_name, int timeout_ms)
{
	memset(r, 0, sizeof(*r));
	r->world = world;
	r->rank = rank;
	r->next_fd = next_fd;
	r->prev_fd = prev_fd;
	snprintf(r->next_name, sizeof(r->next_name), "%s", next_name);
	snprintf(r->prev_name, sizeof(r->prev_name), "%s", prev_name);
	r->timeout_ms = timeout_ms;
	r->seg_bytes = RING_SEGMENT_BYTES;
	r->scratch = xmalloc(r->seg_bytes);
}

void ring_release(struct ring *r)
{
	if (!r)
		return;
	net_close(r->next_fd);
	net_close(r->prev_fd);
	free(r->scratch);
	free(r->ops);
	memset(r, 0, sizeof(*r));
	r->next_fd = r->prev_fd = -1;
}

/* Fills iov with the memory of vector bytes [lo, hi), at most max entries.
 * Returns the number of entries. */
static int vec_iov(const struct vec *v, size_t lo, size_t hi, struct iovec *iov, int max)
{
	size_t start = 0; /* byte offset of the current piece */
	int k = 0;

	for (int p = 0; p < v->npieces && lo < hi && k < max; p++) {
		const struct grad_slice *s = &v->pieces[p];
		size_t row_bytes = s->cols * v->elem, len = s->rows * row_bytes;
		if (lo >= start + len) {
			start += len;
			continue;
		}
		while (lo < hi && lo < start + len && k < max) {
			size_t in = lo - start, row = in / row_bytes, col = in % row_bytes;
			size_t take = row_bytes - col;
			if (take > hi - lo)
				take = hi - lo;
			iov[k].iov_base = v->base + (s->off + row * s->stride) * v->elem + col;
			iov[k].iov_len = take;
			k++;
			lo += take;
		}
		start += len;
	}
	return k;
}

/* Adds src (the received bytes [lo, hi) of the vector) into the vector. */
static void vec_reduce(const struct vec *v, size_t lo, size_t hi, const char *src)
{
	struct iovec iov[RING_MAX_IOV];

	if (!v->add)
		return; /* a broadcast only copies */
	while (lo < hi) {
		int k = vec_iov(v, lo, hi, iov, RING_MAX_IOV);
		for (int i = 0; i < k; i++) {
			v->add(iov[i].iov_base, src, iov[i].iov_len / v->elem);
			src += iov[i].iov_len;
			lo += iov[i].iov_len;
		}
	}
}

static struct ring_op *ops_reserve(struct ring *r, size_t n)
{
	if (n > r->ops_cap) {
		free(r->ops);
		r->ops = xcalloc(n, sizeof(*r->ops));
		r->ops_cap = n;
	}
	return r->ops;
}

/* Progress of one direction through its list of operations. */
struct cursor {
	const struct ring_op *ops;
	size_t n, i, done; /* operations, current one, bytes of it moved */
};

struct engine {
	struct ring *r;
	const struct vec *v;
	struct cursor send, recv;
};

static int lost(const char *peer, const char *what, char *err)
{
	return err_set(err, "lost peer %s: %s", peer, what);
}

/* Sends what it can without blocking. Returns 1 if bytes moved, 0 if it
 * must wait, -1 on error. */
static int pump_send(struct engine *e, char *err)
{
	struct cursor *c = &e->send;
	int moved = 0;

	while (c->i < c->n && e->recv.i >= c->ops[c->i].need) {
		const struct ring_op *op = &c->ops[c->i];
		size_t lo = op->lo * e->v->elem + c->done, hi = op->hi * e->v->elem;
		struct iovec iov[RING_MAX_IOV];
		struct msghdr msg = {0};
		msg.msg_iov = iov;
		msg.msg_iovlen = (size_t)vec_iov(e->v, lo, hi, iov, RING_MAX_IOV);
		ssize_t k = sendmsg(e->r->next_fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return moved;
			return lost(e->r->next_name, strerror(errno), err);
		}
		moved = 1;
		c->done += (size_t)k;
		if (lo + (size_t)k == hi) {
			c->i++;
			c->done = 0;
		}
	}
	return moved;
}

/* Receives what has arrived. Returns 1 if bytes moved, 0 if it must wait,
 * -1 on error. */
static int pump_recv(struct engine *e, char *err)
{
	struct cursor *c = &e->recv;
	int moved = 0;

	while (c->i < c->n) {
		const struct ring_op *op = &c->ops[c->i];
		size_t lo = op->lo * e->v->elem, hi = op->hi * e->v->elem;
		struct iovec iov[RING_MAX_IOV];
		struct msghdr msg = {0};
		msg.msg_iov = iov;
		if (op->reduce) {
			iov[0].iov_base = e->r->scratch + c->done;
			iov[0].iov_len = hi - lo - c->done;
			msg.msg_iovlen = 1;
		} else {
			msg.msg_iovlen = (size_t)vec_iov(e->v, lo + c->done, hi, iov, RING_MAX_IOV);
		}
		ssize_t k = recvmsg(e->r->prev_fd, &msg, MSG_DONTWAIT);
		if (k == 0)
			return lost(e->r->prev_name, "connection closed", err);
		if (k < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return moved;
			return lost(e->r->prev_name, strerror(errno), err);
		}
		moved = 1;
		c->done += (size_t)k;
		if (lo + c->done == hi) {
			if (op->reduce)
				vec_reduce(e->v, lo, hi, e->r->scratch);
			c->i++;
			c->done = 0;
		}
	}
	return moved;
}

/* The connection to the next rank carries nothing back, so anything
 * readable on it is the peer going away. */
static int check_next(struct engine *e, char *err)
{
	char byte;
	ssize_t k = recv(e->r->next_fd, &byte, 1, MSG_DONTWAIT | MSG_PEEK);

	if (k == 0)
		return lost(e->r->next_name, "connection closed", err);
	if (k < 0 && errno != EAGAIN && errno != EINTR)
		return lost(e->r->next_name, strerror(errno), err);
	if (k > 0)
		return lost(e->r->next_name, "unexpected data", err);
	return 0;
}

/* Runs both operation lists to completion. */
static int engine_run(struct engine *e, char *err)
{
	long long last = net_now_ms();

	while (e->send.i < e->send.n || e->recv.i < e->recv.n) {
		int s = pump_send(e, err), rcv = s < 0 ? -1 : pump_recv(e, err);
		if (s < 0 || rcv < 0)
			return -1;
		if (s || rcv) {
			last = net_now_ms();
			continue;
		}
		/* While something is left to send, watch the next rank going
		 * away too; once all is sent it may leave before this rank is
		 * done. */
		struct pollfd p[2] = {{e->r->next_fd, 0, 0}, {e->r->prev_fd, 0, 0}};
		int sending = e->send.i < e->send.n && e->recv.i >= e->send.ops[e->send.i].need;
		if (e->send.i < e->send.n)
			p[0].events = POLLIN;
		if (sending)
			p[0].events |= POLLOUT;
		if (e->recv.i < e->recv.n)
			p[1].events = POLLIN;
		long long left = last + e->r->timeout_ms - net_now_ms();
		if (left <= 0) {
			const char *peer =
			    e->recv.i < e->recv.n && !sending ? e->r->prev_name : e->r->next_name;
			return err_set(err, "lost peer %s: no progress for %d s", peer,
			               e->r->timeout_ms / 1000);
		}
		int rc = poll(p, 2, left > INT_MAX ? INT_MAX : (int)left);
		if (rc < 0 && errno != EINTR)
			return err_set(err, "poll: %s", strerror(errno));
		if (rc > 0 && p[0].events && (p[0].revents & (POLLIN | POLLERR | POLLHUP)) &&
		    check_next(e, err) < 0)
			return -1;
	}
	return 0;
}

static size_t mod(long long a, int w)
{
	long long m = a % w;

	return (size_t)(m < 0 ? m + w : m);
}

/* Builds the operation lists of reduce-scatter then all-gather over v and
 * runs them. */
static int allreduce(struct ring *r, const struct vec *v, char *err)
{
	int W = r->world;
	size_t seg = r->seg_bytes / v->elem, steps = 2 * (size_t)(W - 1);
	/* Every element is sent at most twice, and each step rounds up once. */
	size_t per_dir = 2 * (v->n / seg) + 2 * steps + 2;
	size_t ns = 0, nr = 0, prev_step_start = 0;

	if (W == 1 || v->n == 0)
		return 0;
	struct ring_op *sends = ops_reserve(r, 2 * per_dir), *recvs = sends + per_dir;
	for (size_t t = 0; t < steps; t++) {
		size_t sc = mod((long long)r->rank - (long long)t, W);
		size_t rc = mod((long long)r->rank - (long long)t - 1, W);
		size_t slo = sc * v->n / (size_t)W, shi = (sc + 1) * v->n / (size_t)W;
		size_t rlo = rc * v->n / (size_t)W, rhi = (rc + 1) * v->n / (size_t)W;
		/* What goes out at step t is what came in at step t - 1, segment
		 * by segment. */
		for (size_t lo = slo, j = 0; lo < shi; lo += seg, j++)
			sends[ns++] = (struct ring_op){lo, lo + seg < shi ? lo + seg : shi,
			                               t == 0 ? 0 : prev_step_start + j + 1, 0};
		prev_step_start = nr;
		for (size_t lo = rlo; lo < rhi; lo += seg)
			recvs[nr++] = (struct ring_op){lo, lo + seg < rhi ? lo + seg : rhi, 0,
			                               t + 1 < (size_t)W};
	}
	struct engine e = {r, v, {sends, ns, 0, 0}, {recvs, nr, 0, 0}};
	return engine_run(&e, err);
}

int ring_allreduce(struct ring *r, float *base, const struct grad_slice *pieces, int npieces,
                   char *err)
{
	struct vec v = {(char *)base, sizeof(float), pieces, npieces, 0, add_f32};

	for (int i = 0; i < npieces; i++)
		v.n += pieces[i].rows * pieces[i].cols;
	return allreduce(r, &v, err);
}

int ring_allreduce_f64(struct ring *r, double *x, size_t n, char *err)
{
	struct grad_slice whole = {0, 1, n, n};
	struct vec v = {(char *)x, sizeof(double), &whole, 1, n, add_f64};

	return allreduce(r, &v, err);
}

int ring_broadcast(struct ring *r, void *buf, size_t bytes, int root, char *err)
{
	struct grad_slice whole = {0, 1, bytes, bytes};
	struct vec v = {buf, 1, &whole, 1, bytes, NULL};
	size_t seg = r->seg_bytes, nseg = (bytes + seg - 1) / seg;
	struct ring_op *ops = ops_reserve(r, 2 * nseg + 2);
	int first = r->rank == root, last = (r->rank + 1) % r->world == root;
	struct engine e = {r, &v, {ops, 0, 0, 0}, {ops + nseg, 0, 0, 0}};

	if (r->world == 1 || bytes == 0)
		return 0;
	for (size_t j = 0; j < nseg; j++) {
		size_t lo = j * seg, hi = lo + seg < bytes ? lo + seg : bytes;
		/* Forward each segment once it has arrived, except back to root. */
		ops[j] = (struct ring_op){lo, hi, first ? 0 : j + 1, 0};
		ops[nseg + j] = (struct ring_op){lo, hi, 0, 0};
	}
	e.send.n = last ? 0 : nseg;
	e.recv.n = first ? 0 : nseg;
	return engine_run(&e, err);
}
