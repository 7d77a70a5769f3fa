/* flaky_peer.c - a worker that joins the ring and drops it; see
 * flaky_peer.h. No cmocka here, as in strangers.c. */
#include "flaky_peer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm.h"
#include "err.h"
#include "model.h"
#include "net.h"
#include "optimizer.h"
#include "rendezvous.h"
#include "ring.h"
#include "state_sync.h"
#include "tf_config.h"

/* Each join's deadline, which bounds how long stopping takes. */
#define JOIN_MS 1000
/* The pause after a join that failed (a survivor that has exited, or
 * refused this hello), so that the peer never spins. */
#define RETRY_MS 20
/* How long the state sync may wait on a survivor. */
#define SYNC_MS 5000

struct flaky_peer {
	pthread_t thread;
	atomic_int stop;
	atomic_long joins;
	int lfd;
	struct tf_config tc;
	struct hello me;
	enum flaky_mode mode;
	size_t nparams;
};

/* The ring as the communicator state_sync talks to: the two collectives
 * it uses. */
static int ring_f64(struct comm *c, double *v, size_t n, char *err)
{
	return ring_allreduce_f64(c->impl, v, n, err);
}

static int ring_bcast(struct comm *c, void *buf, size_t bytes, int root, char *err)
{
	return ring_broadcast(c->impl, buf, bytes, root, err);
}

static const struct comm_ops SYNC_OPS = {"flaky", NULL, ring_f64, ring_bcast, NULL,
                                         NULL,    NULL, NULL,     NULL};

/* Takes part in the state sync over the ring just formed, as a worker
 * that has done nothing yet, and closes it. Returns 0 if the sync went
 * through. */
static int sync_then_drop(struct flaky_peer *p, int next, int prev)
{
	struct model *m = calloc(1, sizeof(*m));
	struct optimizer opt = {.kind = OPT_SGD, .n = p->nparams};
	struct train_position pos = {0};
	struct ring ring;
	char err[ERR_LEN];
	int from = 0, rc = -1;

	net_tune(next, SYNC_MS);
	net_tune(prev, SYNC_MS);
	ring_init(&ring, p->tc.world, p->tc.rank, next, prev, "next", "previous", SYNC_MS);
	struct comm c = {&SYNC_OPS, p->tc.world, p->tc.rank, &ring, NULL};
	if (m != NULL) {
		m->nparams = p->nparams;
		m->params = calloc(p->nparams, sizeof(float));
		m->grads = calloc(p->nparams, sizeof(float));
		if (m->params && m->grads)
			rc = state_sync(&c, &pos, m, &opt, &from, err);
		free(m->params);
		free(m->grads);
	}
	free(m);
	/* Gone before the first step's all-reduce, as a crash would be. */
	ring_release(&ring);
	return rc;
}

static void *run(void *arg)
{
	struct flaky_peer *p = arg;
	char err[ERR_LEN];

	while (!atomic_load(&p->stop)) {
		int next = -1, prev = -1;
		int rc = rendezvous_join(p->lfd, &p->tc, &p->me, NULL, net_now_ms() + JOIN_MS,
		                         &next, &prev, err);
		if (rc < 0) {
			nanosleep(&(struct timespec){0, RETRY_MS * 1000000L}, NULL);
			continue;
		}
		if (p->mode == FLAKY_DROP_AFTER_SYNC) {
			if (sync_then_drop(p, next, prev) == 0)
				atomic_fetch_add(&p->joins, 1);
			continue;
		}
		/* Gone before the state sync's first byte, as a crash would be. */
		net_close(next);
		net_close(prev);
		atomic_fetch_add(&p->joins, 1);
	}
	return NULL;
}

struct flaky_peer *flaky_peer_start(const char *tf_config, const struct hello *me,
                                    enum flaky_mode mode, size_t nparams, char *err)
{
	struct flaky_peer *p = calloc(1, sizeof(*p));

	if (p == NULL) {
		err_set(err, "out of memory");
		return NULL;
	}
	p->lfd = -1;
	if (tf_config_parse(&p->tc, tf_config, strlen(tf_config), err) < 0)
		goto fail;
	p->me = *me;
	p->mode = mode;
	p->nparams = nparams;
	p->me.protocol = HANDSHAKE_PROTOCOL;
	p->me.world = (uint32_t)p->tc.world;
	p->me.rank = (uint32_t)p->tc.rank;
	p->me.job_hash = rendezvous_job_hash("", &p->tc);
	p->lfd = net_listen(p->tc.addrs[p->tc.rank].port, err);
	if (p->lfd < 0)
		goto fail;
	if (pthread_create(&p->thread, NULL, run, p) != 0) {
		err_set(err, "pthread_create failed");
		goto fail;
	}
	return p;
fail:
	net_close(p->lfd);
	tf_config_release(&p->tc);
	free(p);
	return NULL;
}

long flaky_peer_stop(struct flaky_peer *p)
{
	long joins;

	if (p == NULL)
		return 0;
	atomic_store(&p->stop, 1);
	pthread_join(p->thread, NULL);
	joins = atomic_load(&p->joins);
	net_close(p->lfd);
	tf_config_release(&p->tc);
	free(p);
	return joins;
}
