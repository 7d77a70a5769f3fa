/* operator_metrics.h - what /metrics says about the operator, read at
 * scrape time from the counters the parts keep themselves (controller,
 * actions, informers, work queue, API client, leader election) and from
 * /proc, in the Prometheus text format (prom_text.h). Names:
 *
 *   mwj_operator_jobs{phase}                         gauge, from the job cache
 *   mwj_operator_jobs_{created,succeeded,failed}_total
 *   mwj_operator_pods_{created,deleted}_total
 *   mwj_operator_{preemptions,failures}_handled_total
 *   mwj_operator_reconcile_total, _reconcile_errors_total,
 *   mwj_operator_reconcile_duration_seconds          histogram
 *   mwj_operator_api_requests_total{method,code}     code "0": no answer
 *   mwj_operator_api_retries_total, _api_writes_fenced_total
 *   mwj_operator_watches_total{resource}, _watch_errors_total{resource},
 *   mwj_operator_lists_total{resource}, _relists_after_gone_total{resource},
 *   mwj_operator_cached_objects{resource}
 *   mwj_operator_workqueue_depth, _workqueue_oldest_wait_seconds,
 *   mwj_operator_workqueue_longest_running_seconds,
 *   mwj_operator_workqueue_adds_total, _workqueue_retries_total
 *   mwj_operator_leader, mwj_operator_leader_transitions_total{event}
 *   mwj_operator_build_info{version}
 *   mwj_operator_job_training_progress_ratio{namespace,job}  from the chiefs'
 *   mwj_operator_job_training_samples_per_second{namespace,job}  newest
 *   mwj_operator_job_training_global_step{namespace,job}          reports
 *   mwj_operator_job_training_loss{namespace,job}
 *   mwj_operator_job_training_eta_seconds{namespace,job}
 *   mwj_operator_status_reports_total{result}  accepted, unauthorized,
 *                                    forbidden, limited, bad, unavailable
 *   process_cpu_seconds_total, process_resident_memory_bytes,
 *   process_virtual_memory_bytes, process_start_time_seconds,
 *   process_open_fds, process_max_fds    (the client libraries' standard)
 */
#ifndef MWJ_OPERATOR_METRICS_H
#define MWJ_OPERATOR_METRICS_H

#include <stddef.h>

#include "controller.h"
#include "kube_api.h"
#include "leader.h"
#include "status_endpoint.h"

struct operator_metrics {
	struct controller *controller;
	struct leader *leader; /* NULL: no leader election (always leads) */
	struct kube_api *api;
	const struct status_endpoint *status; /* NULL: no reports are taken */
	const char *version;
	double start_time_s; /* Unix time the process started */
};

/* Renders every metric. Returns a malloc'd text (its length in *len),
 * or NULL when out of memory. */
char *operator_metrics_render(const struct operator_metrics *m, size_t *len);

/* The process' resident set in bytes (0 if /proc cannot say). */
long long operator_metrics_rss_bytes(void);

#endif
