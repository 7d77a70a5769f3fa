/* status_endpoint.h - what the operator answers to a chief's training
 * report, apart from the HTTP server that carries it (status_server.h):
 *
 *   POST /apis/training.mwj.io/v1/namespaces/{ns}/multiworkerjobs/{name}/status
 *   Authorization: Bearer <the pod's projected token, audience REPORT_AUDIENCE>
 *   {"training": {...}}                                      (training.h)
 *
 * In this order, each answer a Kubernetes Status object as the API
 * server writes one (kind Status, status Failure, reason, message, code):
 *
 *   404 NotFound          another path, or no such job in the cache
 *   405 MethodNotAllowed  not a POST
 *   503 ServiceUnavailable this replica is not the leader (Retry-After 1:
 *                         the Service may route the next try elsewhere)
 *   401 Unauthorized      no bearer token, or one the TokenReview refuses
 *   429 TooManyRequests   a token not reviewed yet, beyond the operator's
 *                         rate of TokenReviews (STATUS_REVIEW_*): a flood of
 *                         made-up tokens costs the API server little
 *   403 Forbidden         a valid token that is not the job's chief's
 *                         (report_auth.h)
 *   503 ServiceUnavailable the TokenReview could not be made
 *   429 TooManyRequests   the chief's reports are over the job's rate
 *                         (reports.h), with Retry-After: counted after the
 *                         chief is known, so others cannot use it up
 *   413 RequestEntityTooLarge, 400 BadRequest  the body (training.h's caps)
 *   200 Success           the report is kept; the status shows it within
 *                         the job's write interval
 *
 * A refused request changes nothing. Thread-safe: the server's threads
 * call status_endpoint_handle at once.
 */
#ifndef MWJ_STATUS_ENDPOINT_H
#define MWJ_STATUS_ENDPOINT_H

#include <stddef.h>

#include "controller.h"
#include "ratelimit.h"
#include "report_auth.h"

/* TokenReviews of tokens not in the cache: a burst, then one per refill. */
#define STATUS_REVIEW_BURST     50
#define STATUS_REVIEW_REFILL_MS 50LL

/* Where the endpoint finds jobs and pods, and where reports go: the
 * controller's caches and controller_report (status_endpoint_init), or
 * a test's own. job and pod return a copy the caller deletes, or NULL. */
struct status_sources {
	cJSON *(*job)(void *ctx, const char *ns, const char *name);
	cJSON *(*pod)(void *ctx, const char *ns, const char *name);
	void (*report)(void *ctx, const char *key, const char *uid,
	               const struct training_status *t);
	struct reports *reports; /* the requests' per-job rate */
	void *ctx;
};

struct status_endpoint {
	struct status_sources src;
	struct kube_api *api; /* for TokenReviews */
	const char *audience;
	/* Whether this replica leads (leader_active); NULL: always. */
	int (*active)(void *ctx);
	void *active_ctx;
	struct report_reviews reviews;
	pthread_mutex_t review_lock;
	struct ratelimit review_rate;
	/* Answers by kind, for metrics. */
	unsigned long accepted, unauthorized, forbidden, limited, bad, unavailable;
};

struct status_reply {
	unsigned int status;
	char *body;        /* a Status object as JSON, malloc'd: the caller frees it */
	int retry_after_s; /* 0: no Retry-After header */
};

/* An endpoint over controller c's caches and reports. */
void status_endpoint_init(struct status_endpoint *e, struct controller *c, struct kube_api *api,
                          const char *audience);

/* The same over other sources (tests). */
void status_endpoint_init_sources(struct status_endpoint *e, const struct status_sources *src,
                                  struct kube_api *api, const char *audience);
void status_endpoint_release(struct status_endpoint *e);

/* Answers one request: method and url as received (url without the
 * query), authorization the header's value (NULL when absent), body the
 * len bytes received (len may be over TRAINING_REPORT_MAX: the server
 * stops reading there and passes the count). */
void status_endpoint_handle(struct status_endpoint *e, const char *method, const char *url,
                            const char *authorization, const char *body, size_t len,
                            struct status_reply *out);

/* Splits a report's path into ns and name (JOB_NAME_LEN each). Returns 0,
 * or -1 when url is no such path. */
int status_endpoint_path(const char *url, char *ns, char *name);

#endif
