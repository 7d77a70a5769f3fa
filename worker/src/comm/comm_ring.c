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
	const struct tf_config *tc;
	const struct job_key *key;
	struct hello me;
	int collective_ms;
	int joined; /* ring holds connections */
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

static void ring_comm_leave(struct comm *c)
{
	struct ring_state *s = c->impl;

	if (s->joined)
		ring_release(&s->ring);
	s->joined = 0;
}

/* Meets the neighbours through s->lfd before deadline_ms and sets the ring
 * up over the two connections. */
static int join(struct ring_state *s, long long deadline_ms, char *err)
{
	const struct tf_config *tc = s->tc;
	int rc, next_fd, prev_fd, world = tc->world, rank = tc->rank;
	long long t0 = net_now_ms();
	char next[RING_NAME_LEN], prev[RING_NAME_LEN];

	rc = rendezvous_join(s->lfd, tc, &s->me, s->key, deadline_ms, &next_fd, &prev_fd, err);
	if (rc < 0)
		return rc;
	rendezvous_rank_name(tc, (rank + 1) % world, next, sizeof(next));
	rendezvous_rank_name(tc, (rank + world - 1) % world, prev, sizeof(prev));
	net_tune(next_fd, s->collective_ms);
	net_tune(prev_fd, s->collective_ms);
	ring_init(&s->ring, world, rank, next_fd, prev_fd, next, prev, s->collective_ms);
	s->joined = 1;
	log_info("rendezvous: ring of %d formed in %.2f s (next %s, previous %s%s)", world,
	         (double)(net_now_ms() - t0) / 1000.0, next, prev,
	         s->key && s->key->len ? "; both proved the job key" : "");
	return 0;
}

static int ring_comm_rejoin(struct comm *c, int timeout_ms, char *err)
{
	struct ring_state *s = c->impl;

	ring_comm_leave(c);
	return join(s, net_now_ms() + timeout_ms, err);
}

static void ring_comm_release(struct comm *c)
{
	struct ring_state *s = c->impl;

	if (!s)
		return;
	ring_comm_leave(c);
	net_close(s->lfd);
	free(s);
	c->impl = NULL;
}

static const struct comm_ops RING_OPS = {
    "ring",
    ring_comm_allreduce,
    ring_comm_allreduce_f64,
    ring_comm_broadcast,
    ring_comm_leave,
    ring_comm_rejoin,
    ring_comm_release,
    NULL,
    NULL,
};

int comm_init_ring(struct comm *c, const struct tf_config *tc, const struct hello *me,
                   const struct job_key *key, int rendezvous_ms, int collective_ms, char *err)
{
	long long deadline = net_now_ms() + rendezvous_ms;
	struct ring_state *s;
	char me_addr[TF_CONFIG_HOST_LEN + 8];
	int lfd, rc;

	lfd = net_listen(tc->addrs[tc->rank].port, err);
	if (lfd < 0)
		return -1;
	tf_address_format(&tc->addrs[tc->rank], me_addr, sizeof(me_addr));
	log_info("rendezvous: rank %d of %d, %s, listening on port %d", tc->rank, tc->world,
	         me_addr, tc->addrs[tc->rank].port);
	if (key == NULL || key->len == 0)
		log_warn("rendezvous: the ring is not authenticated: anything that reaches port %d "
		         "can join or disturb it; give every worker the job's key with "
		         "--job-secret-file",
		         tc->addrs[tc->rank].port);
	s = xcalloc(1, sizeof(*s));
	*s = (struct ring_state){
	    .lfd = lfd, .tc = tc, .key = key, .me = *me, .collective_ms = collective_ms};
	rc = join(s, deadline, err);
	if (rc < 0) {
		net_close(lfd);
		free(s);
		return rc;
	}
	*c = (struct comm){&RING_OPS, tc->world, tc->rank, s, NULL};
	return 0;
}
