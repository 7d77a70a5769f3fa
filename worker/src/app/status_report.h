/* status_report.h - the chief reports where training stands to the
 * operator, which shows it in the job's status (`kubectl get mwj`:
 * PROGRESS, EPOCH, LOSS, ETA).
 *
 * Where to: the environment the operator sets in the chief's pod,
 *   MWJ_STATUS_URL         https://.../multiworkerjobs/<job>/status
 *   MWJ_STATUS_CA_FILE     the CA the operator's certificate chains to
 *   MWJ_STATUS_TOKEN_FILE  a projected ServiceAccount token for the
 *                          operator's audience, rotated by the kubelet
 *                          (read again for every report)
 * Without all three, nothing is reported.
 *
 * A report is a POST of {"training": {...}} (the operator's
 * controller/training.h), built from a snapshot of the worker's own
 * counters (worker_metrics.h), over HTTPS that verifies the operator
 * against that CA only, with the token as a bearer token.
 *
 * Guarantees:
 * - training never waits for a report: a thread of its own sends them,
 *   at most every STATUS_REPORT_INTERVAL_MS, and at each epoch's end
 *   (status_report_kick) but never twice within STATUS_REPORT_MIN_GAP_MS;
 *   the trainer's side costs a lock and a signal;
 * - nothing queues: a report is made when it is sent, from the newest
 *   snapshot, so an operator that is away for an hour costs nothing;
 * - each request is bounded (STATUS_REPORT_TIMEOUT_MS), a 429's
 *   Retry-After is honoured, a 503 (a standby) is tried once more at once;
 * - the first failure is one warning line, the rest are at debug level,
 *   and coming back is one info line;
 * - at the end one last report (100%) is sent, bounded by the same
 *   time-out, so the status shows the run finished.
 */
#ifndef MWJ_STATUS_REPORT_H
#define MWJ_STATUS_REPORT_H

#include <cjson/cJSON.h>

#include "worker_metrics.h"

#define STATUS_REPORT_INTERVAL_MS 5000
#define STATUS_REPORT_MIN_GAP_MS  1000
#define STATUS_REPORT_TIMEOUT_MS  5000
#define STATUS_REPORT_POLL_MS     250   /* before training's position is known */
#define STATUS_REPORT_TOKEN_MAX   16384 /* 16 KiB */

struct status_report;

/* Starts reporting m's snapshots when the environment says where.
 * Returns the reporter, or NULL when it does not (or says it only in
 * part, which is logged once): the caller then reports nothing. */
struct status_report *status_report_start(struct worker_metrics *m);

/* An epoch ended, or training's position became known (a backup
 * restored): report soon. Accepts NULL. */
void status_report_kick(struct status_report *r);

/* Stops the reporter; when last, sends one final report first. Frees r;
 * accepts NULL. */
void status_report_stop(struct status_report *r, int last);

/* The report of snapshot s, as {"training": {...}}. The caller deletes
 * it. Exposed for tests. */
cJSON *status_report_body(const struct worker_metrics_snapshot *s);

#endif
