/* metrics_endpoint.h - mwj-worker's GET /metrics (--metrics-addr): what
 * worker_metrics.h counts, in the Prometheus text format (prom_text.h),
 * served through http_listen.h as the operator serves its own (one epoll
 * thread that sleeps until a connection comes: an idle worker spends no
 * CPU on it; the same connection limits).
 *
 * Every worker serves it, not only the chief. Names, all prefixed
 * mwj_worker_ (times in seconds, sizes in bytes, counters end in _total):
 *
 *   info{rank,world,job,backend,communicator}  gauge, 1
 *   steps_total, examples_total                 counter, this process
 *   step_duration_seconds                       histogram
 *   allreduce_seconds_total, allreduce_bytes_total  counter
 *   rendezvous_duration_seconds                 histogram
 *   resyncs_total                               counter
 *   resync_duration_seconds                     histogram
 *   epoch, epochs, epoch_step, steps_per_epoch, global_step   gauge
 *   loss, metric{metric}                        gauge, the epoch's running mean
 *   validation_loss, validation_metric{metric}  gauge, after an epoch with validation
 *   learning_rate                               gauge
 *   backup_duration_seconds                     histogram   } the chief with
 *   backup_size_bytes, last_backup_step         gauge       } --backup-dir
 *   backup_failures_total                       counter     } only
 *   gpu_memory_used_bytes{gpu}                  gauge, CUDA only
 *
 * Anything else than /metrics is 404.
 */
#ifndef MWJ_METRICS_ENDPOINT_H
#define MWJ_METRICS_ENDPOINT_H

#include <stddef.h>

#include "http_listen.h"
#include "worker_metrics.h"

struct metrics_endpoint {
	struct worker_metrics *m;
	struct http_listener l;
};

/* Renders m as the text format. Returns a malloc'd text the caller frees
 * (its length in *len), or NULL when out of memory. */
char *metrics_endpoint_render(struct worker_metrics *m, size_t *len);

/* Serves m on addr ("host:port", ":port", "[v6]:port"; not "0") and logs
 * the port bound. e must stay where it is until metrics_endpoint_stop.
 * Returns 0, or -1 with a message naming addr. */
int metrics_endpoint_start(struct metrics_endpoint *e, struct worker_metrics *m, const char *addr,
                           char *err);

/* Stops serving; accepts a zeroed or stopped e. */
void metrics_endpoint_stop(struct metrics_endpoint *e);

#endif
