/* reports.h - the chiefs' training reports between their arrival and the
 * job's status: the newest one of each job, and when each job's status
 * may show the next.
 *
 * A chief reports every few seconds; a job's status is written at most
 * every write_interval_ms, with the operator's other changes to it, so
 * that the API server sees a write rate bounded by the number of jobs,
 * whatever the rate of reports. Only the newest report of a job is kept:
 * one between two writes is overwritten, never queued. Requests are also
 * limited per job before they are even parsed (a token bucket: a chief
 * that reports too often, or someone posting for it, gets 429).
 *
 * Guarantees:
 * - at most one slot per job key, freed by reports_forget when the job
 *   is gone; a report is for a job's uid, and a slot of another uid (the
 *   job deleted and made again under its name) is replaced, not merged;
 * - reports_due hands a pass the newest report once per interval; a pass
 *   that did not write it (a refused or conflicting status write) leaves
 *   it due, and the next pass takes it again;
 * - thread-safe: the status server's threads put, the reconcile threads
 *   take, the metrics scrape reads.
 */
#ifndef MWJ_REPORTS_H
#define MWJ_REPORTS_H

#include <pthread.h>

#include "job.h"
#include "strmap.h"
#include "training.h"

#define REPORTS_WRITE_INTERVAL_MS 5000LL
/* Requests per job: a burst of this many, then one per interval. */
#define REPORTS_BURST     5
#define REPORTS_REFILL_MS 1000LL

struct reports {
	pthread_mutex_t lock;
	struct strmap jobs; /* key -> struct report_slot * (reports.c) */
	long long write_interval_ms;
	/* Counters, for metrics. */
	unsigned long accepted, limited;
};

/* An empty table whose jobs' statuses show a report at most every
 * write_interval_ms. */
void reports_init(struct reports *r, long long write_interval_ms);

/* Frees every slot. Accepts a zeroed r. */
void reports_release(struct reports *r);

/* One request for job key at now_ms (monotonic): 0 when it may go on,
 * else how many milliseconds until it may (for Retry-After). */
long long reports_admit(struct reports *r, const char *key, long long now_ms);

/* Keeps t as the newest report of the job (key, uid). Returns how long
 * from now_ms until its status may show it: 0 now, or the wait the
 * interval leaves (the caller queues the job for then). */
long long reports_put(struct reports *r, const char *key, const char *uid,
                      const struct training_status *t, long long now_ms);

/* For a pass over job (key, uid) at now_ms: copies its newest report
 * into out and returns 1 when one is waiting and the interval since the
 * last write is over; returns 0 otherwise, with *wait_ms the time until
 * a waiting report is due (-1: none waits). */
int reports_due(struct reports *r, const char *key, const char *uid, struct training_status *out,
                long long now_ms, long long *wait_ms);

/* As reports_due, whatever the interval: the job has just ended, and the
 * chief's last report (100%) should not wait for the next write. Returns
 * 1 with it in out, or 0 when none waits. */
int reports_due_now(struct reports *r, const char *key, const char *uid,
                    struct training_status *out);

/* The pass wrote the report reports_due gave it (its status write
 * succeeded at now_ms): the next one waits the interval. */
void reports_written(struct reports *r, const char *key, const char *uid, long long now_ms);

/* The job is gone: its slot goes too. */
void reports_forget(struct reports *r, const char *key);

/* Calls fn for each job's newest report (under the lock: fn must not
 * call back into r). */
void reports_each(struct reports *r,
                  void (*fn)(void *ctx, const char *key, const struct training_status *t),
                  void *ctx);

#endif
