/* rendezvous.c - connect to the next rank, accept the previous one, and run
 * the handshake on each, without letting any other connection hold either
 * side up. */
#include "rendezvous.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "err.h"
#include "hash.h"
#include "log.h"
#include "net.h"
#include "preempt.h"
#include "ratelimit.h"

#define BACKOFF_FIRST_MS 50
/* Low, because a survivor waiting for a replacement worker polls it at this
 * pace, and recovery time depends on how soon it notices the newcomer. */
#define BACKOFF_MAX_MS 100
/* Having refused a peer, how long a correct one may still come before the
 * refusal is what the rendezvous ends with. */
#define REFUSED_GRACE_MS 10000
/* The longest any wait goes without looking at the deadline (which the
 * other side may lower) and the preemption flag. */
#define SLICE_MS 100
/* Log lines about dropped connections: 10 at once, then one a second. */
#define LOG_BURST       10
#define LOG_INTERVAL_MS 1000
#define NAME_LEN        (TF_CONFIG_HOST_LEN + 64)
#define PEER_LEN        96

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

void rendezvous_rank_name(const struct tf_config *tc, int rank, char *out, size_t n)
{
	char addr[TF_CONFIG_HOST_LEN + 16];

	tf_address_format(&tc->addrs[rank], addr, sizeof(addr));
	snprintf(out, n, "rank %d ('%s')", rank, addr);
}

static long long min_ll(long long a, long long b)
{
	return a < b ? a : b;
}

static void sleep_ms(long long ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Moves what h asks for over the non-blocking fd until the socket would
 * block. Returns 1 when the handshake is done, 0 when fd must be polled for
 * *events first, -1 with a message when the connection closed or failed. */
static int pump(struct handshake *h, int fd, short *events, char *err)
{
	for (;;) {
		unsigned char *buf;
		size_t len;
		char where[96];
		enum handshake_io io = handshake_io(h, &buf, &len);
		if (io == HANDSHAKE_DONE)
			return 1;
		ssize_t k =
		    io == HANDSHAKE_SEND ? send(fd, buf, len, MSG_NOSIGNAL) : recv(fd, buf, len, 0);
		if (k > 0) {
			handshake_moved(h, (size_t)k);
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			*events = io == HANDSHAKE_SEND ? POLLOUT : POLLIN;
			return 0;
		}
		handshake_progress(h, where, sizeof(where));
		if (k == 0)
			return err_set(err, "closed after %s", where);
		return err_set(err, "%s after %s", strerror(errno), where);
	}
}

/* The message for a handshake that ended other than OK, naming the peer. */
static void explain(const struct handshake *h, const char *name, char *err)
{
	if (h->by_peer)
		err_set(err, "%s refused this worker: %s", name, h->why);
	else
		err_set(err, "refused %s: %s", name, h->why);
}

/* Logs "rendezvous: <what>" at level unless the rate limit says no; the
 * first line after some were left out says how many. */
static void log_limited(struct ratelimit *limit, enum log_level level, const char *what)
{
	long long suppressed = 0;

	if (!log_enabled(level) || !ratelimit_allow(limit, net_now_ms(), &suppressed))
		return;
	if (suppressed > 0)
		log_msg(level, "rendezvous: %s (and %lld more not logged)", what, suppressed);
	else
		log_msg(level, "rendezvous: %s", what);
}

/* --- The connecting side --- */

/* Runs h over fd until it is done, the deadline passes or a preemption
 * notice comes. Returns 0 when done, -1 with a message otherwise. */
static int run_handshake(struct handshake *h, int fd, long long deadline_ms, char *err)
{
	for (;;) {
		short events = 0;
		char where[96];
		int rc = pump(h, fd, &events, err);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
		long long left = deadline_ms - net_now_ms();
		if (left <= 0 || preempt_signal()) {
			handshake_progress(h, where, sizeof(where));
			return err_set(err, "%s after %s", left <= 0 ? "timed out" : "stopped",
			               where);
		}
		struct pollfd p = {fd, events, 0};
		if (poll(&p, 1, (int)min_ll(left, SLICE_MS)) < 0 && errno != EINTR)
			return err_set(err, "poll: %s", strerror(errno));
	}
}

/* One attempt: connect to the next rank and run the handshake, giving a
 * peer that says nothing RENDEZVOUS_HANDSHAKE_MS. Returns the socket,
 * RENDEZVOUS_REFUSED, or -1 to retry (err says why); *odd is set when
 * something answered that is not the peer as it should be, which is worth
 * a warning, rather than nothing being there yet: ODD_VERDICT when the
 * peer finished the handshake and said why it would not go on (a job key
 * on one side only, say), ODD_BROKEN when the handshake broke off. */
enum { ODD_BROKEN = 1, ODD_VERDICT = 2 };

static int connect_next(const struct tf_config *tc, const struct hello *me,
                        const struct job_key *key, long long deadline, int *odd, char *err)
{
	int next = (tc->rank + 1) % tc->world, retry = 1, fd;
	const struct tf_address *a = &tc->addrs[next];
	long long now = net_now_ms(), attempt = min_ll(deadline - now, RENDEZVOUS_HANDSHAKE_MS);
	char name[NAME_LEN];
	struct handshake *h;

	*odd = 0;
	rendezvous_rank_name(tc, next, name, sizeof(name));
	fd = net_connect(a->host, a->port, attempt > 0 ? (int)attempt : 1, &retry, err);
	if (fd < 0)
		return retry ? -1 : RENDEZVOUS_REFUSED;
	h = xmalloc(sizeof(*h));
	handshake_init(h, HANDSHAKE_CONNECT, me, key, (uint32_t)next);
	*odd = ODD_BROKEN;
	if (run_handshake(h, fd, min_ll(deadline, net_now_ms() + RENDEZVOUS_HANDSHAKE_MS), err) <
	    0) {
		err_prefix(err, "handshake with %s", name);
		net_close(fd);
		fd = -1; /* the peer may be restarting, or something else is there */
	} else if (h->status != HANDSHAKE_OK) {
		*odd = ODD_VERDICT;
		explain(h, name, err);
		net_close(fd);
		fd = h->status == HANDSHAKE_REFUSED ? RENDEZVOUS_REFUSED : -1;
	}
	free(h);
	return fd;
}

/* --- The accepting side --- */

struct pending {
	int fd;
	long long deadline; /* RENDEZVOUS_HANDSHAKE_MS after it was accepted */
	unsigned long seq;  /* order of arrival: the lowest is dropped first */
	short events;
	char peer[PEER_LEN]; /* "ip:port" */
	struct handshake hs;
};

struct acceptor {
	int lfd;
	const struct tf_config *tc;
	const struct hello *me;
	const struct job_key *key;
	_Atomic long long deadline; /* lowered to stop the wait early */
	int fd, rc;
	_Atomic long long refused_at; /* when a peer was refused (its reason in why), or 0 */
	/* The thread has set fd and rc: done, under lock, signalled on
	 * finished, so that the connecting side learns it at once. */
	pthread_mutex_t lock;
	pthread_cond_t finished;
	int done;
	char why[ERR_LEN];
	char dropped[ERR_LEN]; /* the last connection dropped, and why */
	char err[ERR_LEN];
	struct ratelimit log_limit;
	unsigned long seq;
	int n;
	struct pending *pend[RENDEZVOUS_MAX_PENDING];
};

/* Logs one line about a dropped connection at level, through the rate
 * limit, and remembers it for the time-out message. */
static void note(struct acceptor *a, enum log_level level, const char *what)
{
	snprintf(a->dropped, sizeof(a->dropped), "%s", what);
	log_limited(&a->log_limit, level, what);
}

/* Removes pending connection i, closing it unless keep. */
static void forget(struct acceptor *a, int i, int keep)
{
	if (!keep)
		net_close(a->pend[i]->fd);
	free(a->pend[i]);
	a->pend[i] = a->pend[--a->n];
}

static void drop(struct acceptor *a, int i, const char *why)
{
	char what[ERR_LEN];

	snprintf(what, sizeof(what), "dropped connection from '%s': %s", a->pend[i]->peer, why);
	note(a, LOG_WARN, what);
	forget(a, i, 0);
}

/* A handshake that has ended: takes the previous rank, or refuses. Returns
 * 1 when the ring's previous rank is found. */
static int conclude(struct acceptor *a, int i)
{
	struct pending *p = a->pend[i];
	char what[ERR_LEN];

	if (p->hs.status == HANDSHAKE_OK) {
		a->fd = p->fd;
		a->rc = 0;
		forget(a, i, 1);
		return 1;
	}
	if (p->hs.status != HANDSHAKE_REFUSED) {
		drop(a, i, p->hs.why);
		return 0;
	}
	/* Only a peer that proved itself (or any, without a key) gets this
	 * far: its configuration differs, and waiting cannot change that. Its
	 * address is where it connected from, not its own in TF_CONFIG. */
	if (p->hs.by_peer)
		snprintf(what, sizeof(what),
		         "connection from '%s' (rank %u) refused this worker: %.300s", p->peer,
		         p->hs.peer.rank, p->hs.why);
	else
		snprintf(what, sizeof(what), "refused connection from '%s' (rank %u): %.300s",
		         p->peer, p->hs.peer.rank, p->hs.why);
	note(a, LOG_ERROR, what);
	snprintf(a->why, sizeof(a->why), "%s", what);
	atomic_store(&a->refused_at, net_now_ms());
	forget(a, i, 0);
	return 0;
}

/* Moves pending connection i on. Returns 1 when the ring's previous rank is
 * found. */
static int serve(struct acceptor *a, int i)
{
	char err[ERR_LEN];
	int rc = pump(&a->pend[i]->hs, a->pend[i]->fd, &a->pend[i]->events, err);

	if (rc < 0)
		drop(a, i, err);
	return rc > 0 ? conclude(a, i) : 0;
}

/* Accepts every connection waiting on the listener, each into a pending
 * handshake, dropping the oldest pending one when there are too many.
 * Returns 1 when the ring's previous rank is found. */
static int take_new(struct acceptor *a)
{
	int prev = (a->tc->rank + a->tc->world - 1) % a->tc->world;

	for (int k = 0; k < 4 * RENDEZVOUS_MAX_PENDING; k++) {
		char peer[PEER_LEN], err[ERR_LEN] = "";
		int fd = net_accept(a->lfd, 0, peer, sizeof(peer), err);
		if (fd < 0) {
			if (err[0])
				note(a, LOG_WARN, err);
			return 0;
		}
		if (a->n == RENDEZVOUS_MAX_PENDING) {
			int oldest = 0;
			for (int i = 1; i < a->n; i++)
				if (a->pend[i]->seq < a->pend[oldest]->seq)
					oldest = i;
			drop(a, oldest,
			     "too many connections in their handshake at once: the oldest goes "
			     "first");
		}
		struct pending *p = xmalloc(sizeof(*p));
		p->fd = fd;
		p->deadline = net_now_ms() + RENDEZVOUS_HANDSHAKE_MS;
		p->seq = a->seq++;
		p->events = POLLIN;
		snprintf(p->peer, sizeof(p->peer), "%s", peer);
		handshake_init(&p->hs, HANDSHAKE_ACCEPT, a->me, a->key, (uint32_t)prev);
		a->pend[a->n++] = p;
		/* Its hello is often there already. */
		if (serve(a, a->n - 1))
			return 1;
	}
	return 0;
}

/* Drops every pending connection past its deadline; returns the earliest
 * deadline left, or LLONG_MAX. */
static long long expire(struct acceptor *a, long long now)
{
	long long next = LLONG_MAX;

	for (int i = a->n - 1; i >= 0; i--) {
		if (a->pend[i]->deadline <= now) {
			char where[96], why[160];
			handshake_progress(&a->pend[i]->hs, where, sizeof(where));
			snprintf(why, sizeof(why), "no handshake within %d ms (%s)",
			         RENDEZVOUS_HANDSHAKE_MS, where);
			drop(a, i, why);
		} else if (a->pend[i]->deadline < next) {
			next = a->pend[i]->deadline;
		}
	}
	return next;
}

/* One turn of the poll loop. Returns 1 when the previous rank is found, -1
 * on a system error (in a->err), 0 to go on. */
static int accept_turn(struct acceptor *a, long long end)
{
	struct pollfd pfd[1 + RENDEZVOUS_MAX_PENDING];
	long long now = net_now_ms(), wake = min_ll(end, expire(a, now)) - now;
	int n = a->n, rc;

	pfd[0] = (struct pollfd){a->lfd, POLLIN, 0};
	for (int i = 0; i < n; i++)
		pfd[1 + i] = (struct pollfd){a->pend[i]->fd, a->pend[i]->events, 0};
	rc = poll(pfd, (nfds_t)n + 1, wake < 0 ? 0 : (int)min_ll(wake, SLICE_MS));
	if (rc < 0 && errno != EINTR)
		return err_set(a->err, "poll: %s", strerror(errno));
	if (rc <= 0)
		return 0;
	/* From the last: forget() moves the last entry into the freed slot,
	 * and the last has been served already. */
	for (int i = n - 1; i >= 0; i--)
		if (pfd[1 + i].revents && serve(a, i))
			return 1;
	return (pfd[0].revents & POLLIN) ? take_new(a) : 0;
}

static void *accept_prev(void *arg)
{
	struct acceptor *a = arg;

	for (;;) {
		long long end = atomic_load(&a->deadline);
		if (net_now_ms() >= end) {
			if (a->dropped[0])
				a->rc = err_set(a->err,
				                "no connection from the previous rank; the last "
				                "one that came: %s",
				                a->dropped);
			else
				a->rc = err_set(a->err, "no connection from the previous rank");
			break;
		}
		int rc = accept_turn(a, end);
		if (rc != 0) {
			a->rc = rc > 0 ? 0 : -1;
			break;
		}
	}
	while (a->n > 0)
		forget(a, a->n - 1, 0);
	pthread_mutex_lock(&a->lock);
	a->done = 1;
	pthread_cond_signal(&a->finished);
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* --- Both sides together --- */

/* Connects to the next rank until it works, is refused, the deadline
 * passes, a preemption notice comes, or the acceptor refused a peer a
 * while ago. Returns the socket or a negative code, with err (ERR_LEN)
 * saying what went wrong last. */
static int connect_loop(const struct tf_config *tc, const struct hello *me,
                        const struct job_key *key, long long deadline_ms, const struct acceptor *a,
                        char *last)
{
	long long backoff = BACKOFF_FIRST_MS;
	struct ratelimit limit;
	int fd = -1, odd;
	/* The peer's last verdict: worth more than a later try that broke off
	 * (the peer giving up at its own deadline, say), so that is what a
	 * time-out reports. */
	char verdict[ERR_LEN] = "";

	ratelimit_init(&limit, LOG_BURST, LOG_INTERVAL_MS);
	snprintf(last, ERR_LEN, "not tried");
	while (net_now_ms() < deadline_ms) {
		if (preempt_signal())
			return RENDEZVOUS_STOPPED;
		fd = connect_next(tc, me, key, deadline_ms, &odd, last);
		if (fd >= 0 || fd == RENDEZVOUS_REFUSED)
			return fd;
		/* A refused peer exits; give a correct one a little while, then
		 * report the refusal rather than time out much later. */
		long long refused_at = atomic_load(&a->refused_at);
		if (odd == ODD_VERDICT)
			snprintf(verdict, sizeof(verdict), "%s", last);
		if (refused_at && net_now_ms() > refused_at + REFUSED_GRACE_MS)
			break;
		if (odd)
			log_limited(&limit, LOG_WARN, last);
		else
			log_debug("rendezvous: %s; retrying in %lld ms", last, backoff);
		long long left = deadline_ms - net_now_ms();
		sleep_ms(backoff < left ? backoff : (left > 0 ? left : 0));
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	}
	if (verdict[0] != '\0')
		snprintf(last, ERR_LEN, "%s", verdict);
	return -1;
}

/* Waits for the accepting side to finish, stopping it at a preemption
 * notice (the flag is set by a signal handler, so it is looked at every
 * SLICE_MS). */
static void wait_acceptor(struct acceptor *a)
{
	pthread_mutex_lock(&a->lock);
	while (!a->done) {
		struct timespec until;
		if (preempt_signal())
			atomic_store(&a->deadline, 0);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += SLICE_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&a->finished, &a->lock, &until);
	}
	pthread_mutex_unlock(&a->lock);
}

/* Says why the rendezvous failed, given the connecting side's result fd
 * and what the accepting side did; closes what is open. */
static int failed(struct acceptor *a, const struct tf_config *tc, int fd, const char *last,
                  char *err)
{
	char name[NAME_LEN];
	int refused = atomic_load(&a->refused_at) != 0;

	net_close(fd);
	net_close(a->fd);
	if (fd == RENDEZVOUS_STOPPED || (a->rc < 0 && preempt_signal())) {
		err_set(err, "rendezvous: stopped by signal %d", preempt_signal());
		return RENDEZVOUS_STOPPED;
	}
	if (fd == RENDEZVOUS_REFUSED) {
		err_set(err, "rendezvous: %s", last);
		return RENDEZVOUS_REFUSED;
	}
	/* Having refused a peer, waiting longer cannot help: that peer exits 1
	 * and a restarted worker would meet the same configuration. */
	if (refused) {
		err_set(err, "rendezvous: %s", a->why);
		return RENDEZVOUS_REFUSED;
	}
	if (fd < 0) {
		rendezvous_rank_name(tc, (tc->rank + 1) % tc->world, name, sizeof(name));
		return err_set(err, "rendezvous: timed out connecting to %s: %s", name, last);
	}
	rendezvous_rank_name(tc, (tc->rank + tc->world - 1) % tc->world, name, sizeof(name));
	return err_set(err, "rendezvous: timed out waiting for %s: %s", name, a->err);
}

/* The lock and the condition, the latter on the monotonic clock that
 * wait_acceptor's time-outs use. */
static int init_sync(struct acceptor *a)
{
	pthread_condattr_t attr;
	int rc = -1;

	if (pthread_condattr_init(&attr) != 0)
		return -1;
	if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
	    pthread_cond_init(&a->finished, &attr) == 0) {
		if (pthread_mutex_init(&a->lock, NULL) == 0)
			rc = 0;
		else
			pthread_cond_destroy(&a->finished);
	}
	pthread_condattr_destroy(&attr);
	return rc;
}

int rendezvous_join(int lfd, const struct tf_config *tc, const struct hello *me,
                    const struct job_key *key, long long deadline_ms, int *next_fd, int *prev_fd,
                    char *err)
{
	struct acceptor *a = xcalloc(1, sizeof(*a));
	char last[ERR_LEN];
	pthread_t thread;
	int fd, rc;

	*next_fd = *prev_fd = -1;
	a->lfd = lfd;
	a->tc = tc;
	a->me = me;
	a->key = key;
	a->deadline = deadline_ms;
	a->fd = -1;
	a->rc = -1;
	ratelimit_init(&a->log_limit, LOG_BURST, LOG_INTERVAL_MS);
	if (init_sync(a) < 0 || pthread_create(&thread, NULL, accept_prev, a) != 0) {
		free(a);
		return err_set(err, "rendezvous: cannot start a thread");
	}
	fd = connect_loop(tc, me, key, deadline_ms, a, last);
	if (fd < 0)
		atomic_store(&a->deadline, 0); /* no ring without the next rank */
	wait_acceptor(a);
	pthread_join(thread, NULL);
	if (fd >= 0 && a->rc == 0) {
		*next_fd = fd;
		*prev_fd = a->fd;
		rc = 0;
	} else {
		rc = failed(a, tc, fd, last, err);
	}
	pthread_cond_destroy(&a->finished);
	pthread_mutex_destroy(&a->lock);
	free(a);
	return rc;
}
