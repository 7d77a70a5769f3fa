/* flaky_peer.c - a worker that joins the ring and drops it at once; see
 * flaky_peer.h. No cmocka here, as in strangers.c. */
#include "flaky_peer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "net.h"
#include "rendezvous.h"
#include "tf_config.h"

/* Each join's deadline, which bounds how long stopping takes. */
#define JOIN_MS 1000
/* The pause after a join that failed (a survivor that has exited, or
 * refused this hello), so that the peer never spins. */
#define RETRY_MS 20

struct flaky_peer {
	pthread_t thread;
	atomic_int stop;
	atomic_long joins;
	int lfd;
	struct tf_config tc;
	struct hello me;
};

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
		/* Gone before the state sync's first byte, as a crash would be. */
		net_close(next);
		net_close(prev);
		atomic_fetch_add(&p->joins, 1);
	}
	return NULL;
}

struct flaky_peer *flaky_peer_start(const char *tf_config, const struct hello *me, char *err)
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
