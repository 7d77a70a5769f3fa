/* events.h - what `kubectl describe mwj NAME` shows: core/v1 Events on
 * the job, one per thing a user looks for (a pod created, a worker
 * preempted and recreated, a worker failed with its exit code, restarting,
 * the backoff limit or the deadline reached, succeeded, failed, suspended,
 * resumed).
 *
 * An Event is named "<job>.<16 hex digits>" (unique), involves the job
 * (kind, name, namespace, uid, apiVersion, resourceVersion), has type
 * Normal or Warning, a reason (CamelCase) and a message, firstTimestamp and
 * lastTimestamp (RFC 3339 seconds, UTC), count 1, source.component and
 * reportingComponent "mwj-operator", and reportingInstance the operator's
 * host name. It carries no eventTime, so the MicroTime and
 * reportingController rules of newer events do not apply, as for
 * client-go's legacy event recorder.
 */
#ifndef MWJ_EVENTS_H
#define MWJ_EVENTS_H

#include <cjson/cJSON.h>

#include "job.h"

#define EVENT_NORMAL  "Normal"
#define EVENT_WARNING "Warning"

/* A new Event object on the job (job_obj: the MultiWorkerJob as read,
 * for its apiVersion and resourceVersion). now: RFC 3339 time; instance:
 * the reporting instance (host name). The caller deletes it. */
cJSON *events_build(const struct job *j, const cJSON *job_obj, const char *type, const char *reason,
                    const char *message, const char *now, const char *instance);

#endif
