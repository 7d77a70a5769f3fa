/* report_auth.h - who may report a job's training: its chief, and only
 * its chief, as a TokenReview of its projected ServiceAccount token says.
 *
 * The operator mounts into every worker pod a token whose audience is the
 * operator's own (REPORT_AUDIENCE by default), bound to the pod, which the
 * kubelet rotates. A report carries it as "Authorization: Bearer". The
 * operator asks the API server (POST authentication.k8s.io/v1
 * tokenreviews, with spec.audiences [its audience]) and decides from the
 * answer and its own caches:
 *
 *   401 Unauthorized  no token, a token the API server does not
 *                     authenticate (expired, of a deleted pod or
 *                     ServiceAccount, forged), or one not for the
 *                     operator's audience (a token for the API server
 *                     itself among them);
 *   403 Forbidden     a valid token that is no ServiceAccount's of the
 *                     job's namespace, not bound to a pod, bound to a pod
 *                     the job does not own (another job's, any other), to
 *                     an older pod of the same name (its uid differs), or
 *                     to a worker other than the chief (index 0).
 *
 * The decision is a pure function of the review, the job and the pod, so
 * that it is tested as a table. Reviews are cached by the token's SHA-256
 * for REPORT_REVIEW_TTL_S (never past the token's own expiry, which the
 * cache cannot see, so the TTL is short), as the API server's own webhook
 * token authenticator caches; a refused token for less, so that a flood
 * of one bad token costs one review, not one per request.
 */
#ifndef MWJ_REPORT_AUTH_H
#define MWJ_REPORT_AUTH_H

#include <cjson/cJSON.h>
#include <pthread.h>

#include "err.h"
#include "job.h"
#include "strmap.h"

#define REPORT_AUDIENCE         "mwj-operator"
#define REPORT_REVIEW_TTL_S     60
#define REPORT_REFUSED_TTL_S    10
#define REPORT_REVIEW_CACHE_MAX 4096
#define REPORT_USER_LEN         256

/* pkg/apis/authentication: the extra keys of a pod-bound token's user. */
#define REPORT_EXTRA_POD_NAME "authentication.kubernetes.io/pod-name"
#define REPORT_EXTRA_POD_UID  "authentication.kubernetes.io/pod-uid"

/* What a TokenReview said. */
struct token_review {
	int authenticated;
	int audience_ok; /* status.audiences holds the operator's audience */
	char username[REPORT_USER_LEN];
	char pod_name[JOB_NAME_LEN], pod_uid[JOB_UID_LEN]; /* "" when not bound to a pod */
	char error[ERR_LEN];                               /* status.error, or "" */
};

enum report_verdict { REPORT_ALLOW, REPORT_UNAUTHORIZED, REPORT_FORBIDDEN };

/* --- The review --- */

/* The TokenReview request for token: {"apiVersion", "kind", "spec":
 * {"token", "audiences": [audience]}}. The caller deletes it. */
cJSON *report_review_request(const char *token, const char *audience);

/* Reads the API server's answer into r. Returns 0, or -1 with a message
 * when it is no TokenReview (r then says not authenticated). */
int report_review_parse(struct token_review *r, const cJSON *answer, const char *audience,
                        char *err);

/* --- The decision --- */

/* Whether the reviewed token may report for job j (NULL: not found is
 * decided by the caller before), whose pod named as the token's is pod
 * (from the cache; NULL when there is none). why (ERR_LEN) says why not,
 * for the answer's message. */
enum report_verdict report_decide(const struct token_review *r, const struct job *j,
                                  const cJSON *pod, char *why);

/* --- The cache of reviews --- */

struct report_reviews {
	pthread_mutex_t lock;
	struct strmap by_token; /* hex SHA-256 of the token -> struct cached_review * */
	unsigned long hits, misses;
};

void report_reviews_init(struct report_reviews *c);
void report_reviews_release(struct report_reviews *c);

/* The cached review of token at now_s (wall seconds) into r: 1, or 0. */
int report_reviews_get(struct report_reviews *c, const char *token, long long now_s,
                       struct token_review *r);

/* Keeps r for token from now_s (REPORT_REVIEW_TTL_S when authenticated,
 * REPORT_REFUSED_TTL_S when not). A full cache is emptied first. */
void report_reviews_put(struct report_reviews *c, const char *token, long long now_s,
                        const struct token_review *r);

#endif
