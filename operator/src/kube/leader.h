/* leader.h - one active replica at a time, through a coordination.k8s.io/v1
 * Lease, as client-go's leaderelection package does it:
 *
 * - A candidate reads the Lease every retry period. It takes the Lease
 *   when there is none, when its holder is "" (released), or when the
 *   record has not changed for the record's leaseDurationSeconds as
 *   measured on this replica's own monotonic clock (never by comparing
 *   the holder's renewTime with this clock: clocks differ between nodes).
 *   Taking it raises leaseTransitions and sets acquireTime.
 * - The leader renews every retry period. Every write carries the
 *   resourceVersion read, so two candidates never both win (409).
 * - The leader's fence: leader_active() is true only while the last
 *   successful renewal was *sent* less than the renew deadline ago, on
 *   the monotonic clock. The API client's write guard asks it before
 *   every write, so a leader that cannot renew (API errors, a network
 *   split, a paused process) stops writing at the renew deadline, before
 *   any other replica can see its lease expire (lease duration > renew
 *   deadline). The loop also gives up leading then, and becomes a
 *   candidate again.
 * - leader_release() clears the holder (leaseDurationSeconds 1), so a
 *   standby takes over within a retry period instead of a lease duration.
 *
 * Transitions (became leader, lost the lease) are logged and counted.
 */
#ifndef MWJ_LEADER_H
#define MWJ_LEADER_H

#include <pthread.h>

#include "kube_api.h"

#define LEADER_NAME_LEN     254
#define LEADER_IDENTITY_LEN 320

/* client-go's defaults, as kube-controller-manager uses them. */
#define LEADER_LEASE_MS 15000
#define LEADER_RENEW_MS 10000
#define LEADER_RETRY_MS 2000

struct leader_config {
	const char *namespace; /* the Lease's */
	const char *name;      /* the Lease's */
	const char *identity;  /* this replica's, unique (leader_identity) */
	int lease_ms, renew_ms, retry_ms;
	/* Called from the leader's thread when this replica starts and stops
	 * leading (may be NULL). */
	void (*on_started)(void *ctx);
	void (*on_stopped)(void *ctx);
	void *ctx;
};

/* What this replica last read of the Lease. */
struct leader_record {
	char holder[LEADER_IDENTITY_LEN]; /* "" when released */
	char acquire_time[32], renew_time[32];
	long transitions;
	int duration_s;
	char resource_version[64];
};

struct leader {
	struct leader_config cfg;
	struct kube_api *api;
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int stopping;
	struct leader_record seen; /* the record as last read or written */
	int have_seen;
	long long seen_at_ms;         /* monotonic time it last changed */
	int leading;                  /* the loop's view: this replica leads */
	long long renewed_ms;         /* monotonic send time of the last successful write */
	long long heartbeat_ms;       /* when the loop last turned, for /healthz */
	unsigned long acquired, lost; /* transitions, counted */
	unsigned long renew_failures; /* failed tries while leading */
};

/* Checks a configuration: namespace and name valid, lease > renew >
 * retry * 1.2 (client-go's rule, so a renewal has time to be retried
 * before the deadline), all positive. Returns 0, or -1 with a message. */
int leader_config_check(const struct leader_config *cfg, char *err);

/* "<host>_<random 128-bit hex>" into out (LEADER_IDENTITY_LEN), as
 * controller-runtime names its replicas: unique even for two processes on
 * one host, and across restarts. */
void leader_identity(char *out);

/* Sets l up (nothing runs yet). The strings in cfg must outlive l. */
void leader_init(struct leader *l, struct kube_api *api, const struct leader_config *cfg);

/* One try to acquire or renew at now_ms on timers_now_ms's clock (the loop's step;
 * exposed for tests, which drive time). Returns 1 when this replica holds
 * the Lease now, 0 when another does, -1 with a message when the API did
 * not answer as needed (the caller's rules above then apply). Does not
 * change l->leading nor call the callbacks. */
int leader_try(struct leader *l, long long now_ms, char *err);

/* Starts the election loop on a thread of its own. Returns 0, or -1 with
 * a message. */
int leader_start(struct leader *l, char *err);

/* Whether this replica may act as the leader now: it leads, and its last
 * renewal was sent less than the renew deadline ago. Thread-safe; the
 * API client's write guard (kube_write_guard_fn, with l as ctx). */
int leader_active(void *l);

/* Stops the loop (this replica stops acting at once: leader_active is 0
 * from here on) and waits for it. */
void leader_stop(struct leader *l);

/* After leader_stop: gives the Lease up if this replica held it, so that a
 * standby takes over at its next retry. Returns 0 (also when there was
 * nothing to release), or -1 with a message. */
int leader_release(struct leader *l, char *err);

/* Frees what leader_init set up. Call after leader_stop. */
void leader_destroy(struct leader *l);

#endif
