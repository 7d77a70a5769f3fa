/* comm_ring.c - the communicator over the TCP ring. */
#include "comm_ring.h"

#include <stdio.h>
#include <stdlib.h>

#include "err.h"
#include "log.h"
#include "net.h"
#include "ring.h"

struct ring_state {
	int lfd; /* kept open: a replacement worker rejoins through it */
	struct ring ring;
};

static int ring_comm_allreduce(struct comm *c, float *base, const struct grad_slice *pieces,
                               int npieces, char *err)
{
	struct ring_state *s = c->impl;

	return ring_allreduce(&s->ring, base, pieces, npieces, err);
}

static int ring_comm_allreduce_f64(struct comm *c, double *v, size_t n, char *err)
{
	struct ring_state *s = c->impl;

	return ring_allreduce_f64(&s->ring, v, n, err);
}

static int ring_comm_broadcast(struct comm *c, void *buf, size_t bytes, int root, char *err)
{
	struct ring_state *s = c->impl;

	return ring_broadcast(&s->ring, buf, bytes, root, err);
}

static void ring_comm_release(struct comm *c)
{
	struct ring_state *s = c->impl;

	if (!s)
		return;
	ring_release(&s->ring);
	net_close(s->lfd);
	free(s);
	c->impl = NULL;
}

static const struct comm_ops RING_OPS = {
    "ring", ring_comm_allreduce, ring_comm_allreduce_f64, ring_comm_broadcast, ring_comm_release,
};

int comm_init_ring(struct comm *c, const struct tf_config *tc, const struct hello *me,
                   int rendezvous_ms, int collective_ms, char *err)
{
	int lfd, rc, next_fd, prev_fd, world = tc->world, rank = tc->rank;
	long long t0 = net_now_ms();
	char next[RING_NAME_LEN], prev[RING_NAME_LEN];

	lfd = net_listen(tc->addrs[rank].port, err);
	if (lfd < 0)
		return -1;
	log_info("rendezvous: rank %d of %d listening on port %d", rank, world,
	         tc->addrs[rank].port);
	rc = rendezvous_join(lfd, tc, me, t0 + rendezvous_ms, &next_fd, &prev_fd, err);
	if (rc < 0) {
		net_close(lfd);
		return rc;
	}
	rendezvous_rank_name(tc, (rank + 1) % world, next, sizeof(next));
	rendezvous_rank_name(tc, (rank + world - 1) % world, prev, sizeof(prev));
	net_tune(next_fd, collective_ms);
	net_tune(prev_fd, collective_ms);
	struct ring_state *s = xcalloc(1, sizeof(*s));
	s->lfd = lfd;
	ring_init(&s->ring, world, rank, next_fd, prev_fd, next, prev, collective_ms);
	*c = (struct comm){&RING_OPS, world, rank, s};
	log_info("rendezvous: ring of %d formed in %.2f s (next %s, previous %s)", world,
	         (double)(net_now_ms() - t0) / 1000.0, next, prev);
	return 0;
}
