/* rendezvous.c - connect to the next rank, accept the previous one, and
 * check each other's hello. */
#include "rendezvous.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bytes.h"
#include "err.h"
#include "hash.h"
#include "log.h"
#include "net.h"
#include "preempt.h"

#define HELLO_BYTES      88
#define REPLY_MSG_BYTES  256
#define REPLY_BYTES      (HELLO_BYTES + 4 + REPLY_MSG_BYTES)
#define BACKOFF_FIRST_MS 50
/* Low, because a survivor waiting for a replacement worker polls it at this
 * pace, and recovery time depends on how soon it notices the newcomer. */
#define BACKOFF_MAX_MS 100
/* How long one accepted connection may take to say hello. */
#define HELLO_TIMEOUT_MS 10000
#define NAME_LEN         (TF_CONFIG_HOST_LEN + 64)

static const unsigned char HELLO_MAGIC[8] = {'M', 'W', 'J', 'R', 'I', 'N', 'G', '\n'};

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (24 - 8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void hello_encode(unsigned char *p, const struct hello *h)
{
	memcpy(p, HELLO_MAGIC, sizeof(HELLO_MAGIC));
	put32(p + 8, h->protocol);
	put32(p + 12, h->world);
	put32(p + 16, h->rank);
	put32(p + 20, h->batch_size);
	put64(p + 24, h->job_hash);
	put64(p + 32, h->arch_hash);
	put64(p + 40, h->seed);
	put64(p + 48, bytes_f64_bits(h->learning_rate));
	put64(p + 56, bytes_f64_bits(h->momentum));
	put32(p + 64, h->optimizer);
	put32(p + 68, h->epochs);
	put64(p + 72, h->steps_per_epoch);
	memset(p + 80, 0, HELLO_BYTES - 80);
}

static int hello_decode(struct hello *h, const unsigned char *p, char *why)
{
	if (memcmp(p, HELLO_MAGIC, sizeof(HELLO_MAGIC)) != 0)
		return err_set(why, "not an mwj worker (bad greeting)");
	*h = (struct hello){get32(p + 8),
	                    get32(p + 12),
	                    get32(p + 16),
	                    get64(p + 24),
	                    get64(p + 32),
	                    get64(p + 40),
	                    get32(p + 20),
	                    get32(p + 64),
	                    get32(p + 68),
	                    get64(p + 72),
	                    bytes_bits_f64(get64(p + 48)),
	                    bytes_bits_f64(get64(p + 56))};
	return 0;
}

uint64_t rendezvous_job_hash(const char *job_name, const struct tf_config *tc)
{
	uint64_t h = hash_fnv1a64(HASH_FNV1A64_INIT, job_name, strlen(job_name) + 1);

	for (int i = 0; i < tc->world; i++) {
		char addr[TF_CONFIG_HOST_LEN + 16];
		tf_address_format(&tc->addrs[i], addr, sizeof(addr));
		h = hash_fnv1a64(h, addr, strlen(addr) + 1);
	}
	return h;
}

int rendezvous_check(const struct hello *mine, const struct hello *theirs, uint32_t want_rank,
                     char *why)
{
	if (theirs->protocol != mine->protocol)
		return err_set(why, "protocol version differs: peer %u, this worker %u",
		               theirs->protocol, mine->protocol);
	/* The job identity covers the cluster list, so a different world size
	 * would also show as another job: say the more precise thing first. */
	if (theirs->world != mine->world)
		return err_set(why, "world size differs: peer %u, this worker %u", theirs->world,
		               mine->world);
	if (theirs->job_hash != mine->job_hash)
		return err_set(why,
		               "peer belongs to another job (TF_CONFIG cluster or MWJ_JOB_NAME "
		               "differ)");
	if (theirs->rank != want_rank)
		return err_set(why, "peer is rank %u where rank %u was expected", theirs->rank,
		               want_rank);
	if (theirs->arch_hash != mine->arch_hash)
		return err_set(why, "model differs: peer architecture %016llx, this worker %016llx",
		               (unsigned long long)theirs->arch_hash,
		               (unsigned long long)mine->arch_hash);
	if (theirs->seed != mine->seed)
		return err_set(why, "--seed differs: peer %llu, this worker %llu",
		               (unsigned long long)theirs->seed, (unsigned long long)mine->seed);
	if (theirs->batch_size != mine->batch_size)
		return err_set(why, "--batch-size differs: peer %u, this worker %u",
		               theirs->batch_size, mine->batch_size);
	if (theirs->optimizer != mine->optimizer || theirs->learning_rate != mine->learning_rate ||
	    theirs->momentum != mine->momentum)
		return err_set(why,
		               "optimizer settings differ: peer lr %g momentum %g, this worker "
		               "lr %g momentum %g (or --optimizer)",
		               theirs->learning_rate, theirs->momentum, mine->learning_rate,
		               mine->momentum);
	if (theirs->epochs != mine->epochs || theirs->steps_per_epoch != mine->steps_per_epoch)
		return err_set(why,
		               "--epochs or --steps-per-epoch differ: peer %u x %llu, this "
		               "worker %u x %llu",
		               theirs->epochs, (unsigned long long)theirs->steps_per_epoch,
		               mine->epochs, (unsigned long long)mine->steps_per_epoch);
	return 0;
}

void rendezvous_rank_name(const struct tf_config *tc, int rank, char *out, size_t n)
{
	char addr[TF_CONFIG_HOST_LEN + 16];

	tf_address_format(&tc->addrs[rank], addr, sizeof(addr));
	snprintf(out, n, "rank %d ('%s')", rank, addr);
}

static void sleep_ms(long long ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* One attempt: connect to the next rank and trade hellos. Returns the
 * socket, -1 to retry (err says why) or RENDEZVOUS_REFUSED. */
static int connect_next(const struct tf_config *tc, const struct hello *me, long long deadline,
                        char *err)
{
	int next = (tc->rank + 1) % tc->world, retry = 1, fd;
	const struct tf_address *a = &tc->addrs[next];
	unsigned char msg[REPLY_BYTES];
	char why[ERR_LEN], name[NAME_LEN];
	struct hello theirs = {0};
	long long left = deadline - net_now_ms();

	rendezvous_rank_name(tc, next, name, sizeof(name));
	fd = net_connect(a->host, a->port, left < 5000 ? (int)(left > 0 ? left : 1) : 5000, &retry,
	                 err);
	if (fd < 0)
		return retry ? -1 : RENDEZVOUS_REFUSED;
	/* Something else listening there must not hold this worker for long. */
	long long hello_deadline = net_now_ms() + HELLO_TIMEOUT_MS;
	if (hello_deadline > deadline)
		hello_deadline = deadline;
	hello_encode(msg, me);
	if (net_write_all(fd, msg, HELLO_BYTES, hello_deadline, err) < 0 ||
	    net_read_all(fd, msg, REPLY_BYTES, hello_deadline, err) < 0) {
		err_prefix(err, "hello to %s", name);
		net_close(fd);
		return -1; /* the peer may be restarting */
	}
	msg[REPLY_BYTES - 1] = '\0';
	if (get32(msg + HELLO_BYTES) != 0) {
		err_set(err, "%s refused this worker: %s", name, (char *)msg + HELLO_BYTES + 4);
		net_close(fd);
		return RENDEZVOUS_REFUSED;
	}
	if (hello_decode(&theirs, msg, why) < 0 ||
	    rendezvous_check(me, &theirs, (uint32_t)next, why) < 0) {
		err_set(err, "refused %s: %s", name, why);
		net_close(fd);
		return RENDEZVOUS_REFUSED;
	}
	return fd;
}

struct acceptor {
	int lfd;
	const struct tf_config *tc;
	const struct hello *me;
	_Atomic long long deadline; /* lowered to stop the wait early */
	int fd, rc;
	_Atomic long long refused_at; /* when a connection was refused (its reason in why), or 0 */
	atomic_int done;              /* the thread has set fd and rc */
	char why[ERR_LEN];
	char err[ERR_LEN];
};

/* Reads one hello on fd and answers it. Returns 0 if the previous rank is
 * accepted, -1 if refused (logged here, as the connector logs its side). */
static int answer(struct acceptor *a, int fd, const char *peer)
{
	int prev = (a->tc->rank + a->tc->world - 1) % a->tc->world;
	long long deadline = net_now_ms() + HELLO_TIMEOUT_MS;
	unsigned char msg[REPLY_BYTES] = {0};
	char why[ERR_LEN] = "", err[ERR_LEN];
	struct hello theirs = {0};
	int ok;

	if (net_read_all(fd, msg, HELLO_BYTES, deadline, err) < 0) {
		log_warn("rendezvous: connection from '%s' sent no hello: %s", peer, err);
		return -1;
	}
	ok = hello_decode(&theirs, msg, why) == 0 &&
	     rendezvous_check(a->me, &theirs, (uint32_t)prev, why) == 0;
	hello_encode(msg, a->me);
	put32(msg + HELLO_BYTES, ok ? 0 : 1);
	snprintf((char *)msg + HELLO_BYTES + 4, REPLY_MSG_BYTES, "%s", why);
	if (net_write_all(fd, msg, REPLY_BYTES, deadline, err) < 0) {
		log_warn("rendezvous: reply to '%s': %s", peer, err);
		return -1;
	}
	if (!ok) {
		log_error("rendezvous: refused connection from '%s' (rank %u): %s", peer,
		          theirs.rank, why);
		snprintf(a->why, sizeof(a->why), "refused rank %u ('%s'): %s", theirs.rank, peer,
		         why);
		atomic_store(&a->refused_at, net_now_ms());
	}
	return ok ? 0 : -1;
}

static void *accept_prev(void *arg)
{
	struct acceptor *a = arg;
	char peer[96];

	for (;;) {
		long long left = a->deadline - net_now_ms();
		if (left <= 0) {
			a->rc = err_set(a->err, "no connection from the previous rank");
			break;
		}
		int fd =
		    net_accept(a->lfd, left > 1000 ? 1000 : (int)left, peer, sizeof(peer), a->err);
		if (fd < 0 && a->err[0]) {
			a->rc = -1;
			break;
		}
		if (fd >= 0 && answer(a, fd, peer) == 0) {
			a->fd = fd;
			a->rc = 0;
			break;
		}
		net_close(fd);
	}
	atomic_store(&a->done, 1);
	return NULL;
}

int rendezvous_join(int lfd, const struct tf_config *tc, const struct hello *me,
                    long long deadline_ms, int *next_fd, int *prev_fd, char *err)
{
	struct acceptor a = {
	    .lfd = lfd, .tc = tc, .me = me, .deadline = deadline_ms, .fd = -1, .rc = -1};
	long long backoff = BACKOFF_FIRST_MS;
	char last[ERR_LEN] = "not tried", name[NAME_LEN];
	pthread_t thread;
	int fd = -1;

	*next_fd = *prev_fd = -1;
	if (pthread_create(&thread, NULL, accept_prev, &a) != 0)
		return err_set(err, "rendezvous: cannot start a thread");
	while (net_now_ms() < deadline_ms) {
		if (preempt_signal()) {
			fd = RENDEZVOUS_STOPPED;
			break;
		}
		fd = connect_next(tc, me, deadline_ms, last);
		if (fd >= 0 || fd == RENDEZVOUS_REFUSED)
			break;
		/* A refused peer exits; give a correct one a little while, then
		 * report the refusal rather than time out much later. */
		long long refused_at = atomic_load(&a.refused_at);
		if (refused_at && net_now_ms() > refused_at + HELLO_TIMEOUT_MS)
			break;
		log_debug("rendezvous: %s; retrying in %lld ms", last, backoff);
		long long left = deadline_ms - net_now_ms();
		sleep_ms(backoff < left ? backoff : (left > 0 ? left : 0));
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	}
	if (fd < 0)
		atomic_store(&a.deadline, 0); /* no ring without the next rank */
	while (!atomic_load(&a.done)) {
		if (preempt_signal())
			atomic_store(&a.deadline, 0);
		sleep_ms(20);
	}
	pthread_join(thread, NULL);
	rendezvous_rank_name(tc, (tc->rank + 1) % tc->world, name, sizeof(name));
	if (fd == RENDEZVOUS_STOPPED || (a.rc < 0 && preempt_signal())) {
		net_close(fd);
		net_close(a.fd);
		err_set(err, "rendezvous: stopped by signal %d", preempt_signal());
		return RENDEZVOUS_STOPPED;
	}
	if (fd == RENDEZVOUS_REFUSED) {
		net_close(a.fd);
		err_set(err, "rendezvous: %s", last);
		return RENDEZVOUS_REFUSED;
	}
	/* Having refused a peer, waiting longer cannot help: that peer exits 1
	 * and a restarted worker would meet the same configuration. */
	if (fd < 0 && atomic_load(&a.refused_at)) {
		net_close(a.fd);
		err_set(err, "rendezvous: %s", a.why);
		return RENDEZVOUS_REFUSED;
	}
	if (fd < 0) {
		net_close(a.fd);
		return err_set(err, "rendezvous: timed out connecting to %s: %s", name, last);
	}
	if (a.rc < 0 && atomic_load(&a.refused_at)) {
		net_close(fd);
		err_set(err, "rendezvous: %s", a.why);
		return RENDEZVOUS_REFUSED;
	}
	if (a.rc < 0) {
		net_close(fd);
		rendezvous_rank_name(tc, (tc->rank + tc->world - 1) % tc->world, name,
		                     sizeof(name));
		return err_set(err, "rendezvous: timed out waiting for %s: %s", name, a.err);
	}
	*next_fd = fd;
	*prev_fd = a.fd;
	return 0;
}
