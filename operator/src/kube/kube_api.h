/* kube_api.h - the operator's Kubernetes API client: one interface for
 * every request the operator makes, whatever carries it.
 *
 * Backends (struct kube_api_ops):
 *   curl  HTTPS (HTTP/2 when the server offers it, as a real API server
 *         does) over libcurl, connections reused (kube_curl.h);
 *   fake  scripted responses, for tests (operator/tests).
 *
 * Over a backend's raw round trip, this layer gives every call the same
 * behaviour: a time-out; 429 and 5xx (and a failed connection) retried with
 * capped exponential back-off and jitter, honouring Retry-After, up to a
 * deadline; an error body of kind Status parsed so that a log line says the
 * API's reason and message; and typed verbs (get, list, create, update,
 * merge patch, JSON patch, delete, status merge patch) over cJSON objects.
 * It never resolves a 409 by overwriting: the caller reads again and
 * recomputes.
 *
 * Thread-safe: any thread may call any function on one struct kube_api at
 * once (the curl backend keeps a handle per thread). A watch blocks its
 * thread until it ends.
 */
#ifndef MWJ_KUBE_API_H
#define MWJ_KUBE_API_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "err.h"

#define KUBE_REASON_LEN 64
#define KUBE_NAME_LEN   254 /* an object's name: an RFC 1123 subdomain */
/* A Status' message, whole: Pod Security's names every check a pod fails,
 * and a user needs all of it. */
#define KUBE_MESSAGE_LEN 2048
#define KUBE_PATH_LEN    2048

/* What a request asks for. path includes the query ("/api/v1/namespaces/
 * default/pods?labelSelector=..."); body may be NULL. */
struct kube_req {
	const char *method; /* GET, POST, PUT, PATCH, DELETE */
	const char *path;
	const char *content_type; /* of body; NULL: application/json */
	const char *body;
	size_t body_len;
	int timeout_ms; /* the whole round trip; 0: KUBE_DEFAULT_TIMEOUT_MS */
	int once;       /* one attempt, no retry (the leader election retries itself) */
	int unguarded;  /* a write the write guard lets through (the Lease's own) */
};

#define KUBE_DEFAULT_TIMEOUT_MS 30000

/* What came back. body is malloc'd and NUL-terminated (freed by
 * kube_resp_release); reason, message and code come from a Status body
 * (reason "" when the body is no Status); retry_after_s from the
 * Retry-After header or the Status' details.retryAfterSeconds (-1: none). */
struct kube_resp {
	long status; /* HTTP status; 0 when no response came */
	char *body;
	size_t body_len;
	char reason[KUBE_REASON_LEN]; /* "NotFound", "Conflict", "AlreadyExists", ... */
	char message[KUBE_MESSAGE_LEN];
	/* The reason of the Status' first details.causes entry ("" when none):
	 * "NamespaceTerminating" for a namespace being deleted. */
	char cause[KUBE_REASON_LEN];
	/* The Status' details.name: the object refused ("" when none); for a
	 * create with generateName, the name the server made up for it. */
	char name[KUBE_NAME_LEN];
	int retry_after_s;
	/* An earlier try of this request got no answer or a 5xx, so it may
	 * have been carried out: a 409 AlreadyExists after it may be its own
	 * doing. Set by kube_api_request. */
	int maybe_applied;
};

void kube_resp_release(struct kube_resp *r);

/* Fills reason, message and (when no header gave one: retry_after_s < 0)
 * retry_after_s from the body of resp, as kube_api_request() does for
 * every response that is not 2xx. A body that is no Status (a proxy's HTML
 * page, plain text) leaves reason "" and puts the start of the body, as
 * one printable line, into message. Never fails: the body is the server's,
 * and any bytes may come. Public for operator/fuzz/fuzz_api_objects.c. */
void kube_resp_parse_status(struct kube_resp *resp);

/* A watch's bytes, as they arrive; return 0 to go on, -1 to stop. */
typedef int (*kube_stream_fn)(const char *data, size_t len, void *ctx);

struct kube_api;

struct kube_api_ops {
	const char *name;
	/* One round trip, no retry: fills resp (status 0 when nothing came back,
	 * err then says why: connection refused, time-out, TLS). Returns 0 when
	 * a response came, whatever its status; -1 when none did. */
	int (*round_trip)(struct kube_api *api, const struct kube_req *req, struct kube_resp *resp,
	                  char *err);
	/* A streaming GET (a watch): calls fn with the body's bytes as they
	 * arrive, until the server ends the response, fn returns -1, nothing
	 * arrives for idle_ms, or kube_api_stop() is called. Sets *status to the
	 * HTTP status (0 if none came); a non-200 body is not streamed but
	 * returned in resp_body (malloc'd, the caller frees). Returns 0 when the
	 * stream ended normally or fn stopped it, -1 with err on a transport
	 * error or the idle time-out. */
	int (*stream)(struct kube_api *api, const char *path, int idle_ms, kube_stream_fn fn,
	              void *ctx, long *status, char **resp_body, char *err);
	/* Makes every stream and round trip in progress end soon (shutdown). */
	void (*stop)(struct kube_api *api);
	void (*release)(struct kube_api *api);
	/* Takes requests again after a stop (may be NULL: nothing to undo). */
	void (*resume)(struct kube_api *api);
};

/* The methods requests are counted by; WATCH is a streaming GET. */
enum kube_method {
	KUBE_GET,
	KUBE_POST,
	KUBE_PUT,
	KUBE_PATCH,
	KUBE_DELETE,
	KUBE_WATCH,
	KUBE_OTHER,
	KUBE_METHODS
};

/* Status codes are counted exactly from 0 (no response) to 599. */
#define KUBE_CODES 600

/* Counters of the requests made (every attempt, retries included), for
 * logs and metrics. Updated atomically. */
struct kube_api_stats {
	unsigned long requests, retries, errors_4xx, errors_5xx, transport_errors;
	unsigned long refused_by_guard; /* writes the write guard stopped */
	unsigned long by_code[KUBE_METHODS][KUBE_CODES];
};

/* "GET", ..., "WATCH", "OTHER". */
const char *kube_method_name(enum kube_method m);

/* Decides whether a write may go out now: returns 1 to send it, 0 to
 * refuse it (the caller's call then fails with err saying so, and nothing
 * is sent). Called before every attempt of every request that is not a
 * GET and not marked unguarded, from any thread. */
typedef int (*kube_write_guard_fn)(void *ctx);

struct kube_api {
	const struct kube_api_ops *ops;
	void *impl;                  /* the backend's state */
	int retry_deadline_ms;       /* how long a call keeps retrying; 0: KUBE_RETRY_DEADLINE_MS */
	int backoff_first_ms;        /* 0: KUBE_BACKOFF_FIRST_MS */
	int backoff_max_ms;          /* 0: KUBE_BACKOFF_MAX_MS */
	struct kube_api_stats stats; /* see above */
	volatile int stopping;       /* set by kube_api_stop: retries give up */
	/* The leader election's fence: set before the client is shared among
	 * threads, NULL for none. */
	kube_write_guard_fn write_guard;
	void *write_guard_ctx;
};

#define KUBE_RETRY_DEADLINE_MS 60000
#define KUBE_BACKOFF_FIRST_MS  200
#define KUBE_BACKOFF_MAX_MS    10000

/* --- Lifecycle --- */

/* Ends streams and retries in progress, so that threads blocked in the
 * client return soon (SIGTERM). */
void kube_api_stop(struct kube_api *api);

/* Undoes kube_api_stop, once every thread that was using the client has
 * returned: the operator stops everything, then releases its Lease. */
void kube_api_resume(struct kube_api *api);

/* Releases the backend; accepts NULL and a zeroed struct. */
void kube_api_release(struct kube_api *api);

/* --- Raw requests, with the retries above --- */

/* Sends req, retrying 429, 5xx and transport failures with capped
 * exponential back-off and jitter (at least Retry-After when given) until
 * the retry deadline, and parses a Status body. Returns 0 when a response
 * came (resp->status says which; the caller decides what a 404 or a 409
 * means), -1 with err when none came within the deadline or the client is
 * stopping. err names the method and path. */
int kube_api_request(struct kube_api *api, const struct kube_req *req, struct kube_resp *resp,
                     char *err);

/* A watch: the backend's stream (see struct kube_api_ops), counted in
 * stats as WATCH with its status. */
int kube_api_watch(struct kube_api *api, const char *path, int idle_ms, kube_stream_fn fn,
                   void *ctx, long *status, char **resp_body, char *err);

/* --- Typed verbs over cJSON ---
 * Each returns 0 on a 2xx, with *out (when out is not NULL) a tree the
 * caller deletes; -1 otherwise with err ("create pods 'ns/x': 409
 * AlreadyExists: pods \"x\" already exists") and, when resp_out is not
 * NULL, the status, reason and message copied there so that the caller
 * can tell a 404 or a 409 from the rest, and quote the API's own words. */
struct kube_result {
	long status;
	char reason[KUBE_REASON_LEN];
	char message[KUBE_MESSAGE_LEN]; /* the Status' message, or "" */
	char cause[KUBE_REASON_LEN];    /* as in struct kube_resp */
	char name[KUBE_NAME_LEN];       /* as in struct kube_resp */
	int maybe_applied;              /* as in struct kube_resp */
};

int kube_get(struct kube_api *api, const char *path, cJSON **out, struct kube_result *res,
             char *err);
int kube_create(struct kube_api *api, const char *collection_path, const cJSON *obj, cJSON **out,
                struct kube_result *res, char *err);
int kube_update(struct kube_api *api, const char *path, const cJSON *obj, cJSON **out,
                struct kube_result *res, char *err);
/* A JSON merge patch (application/merge-patch+json); path may end in
 * "/status" for the status subresource. */
int kube_merge_patch(struct kube_api *api, const char *path, const cJSON *patch, cJSON **out,
                     struct kube_result *res, char *err);
/* A JSON patch (application/json-patch+json): patch is an array of ops. */
int kube_json_patch(struct kube_api *api, const char *path, const cJSON *patch, cJSON **out,
                    struct kube_result *res, char *err);
/* DELETE with DeleteOptions: uid (may be NULL) as a precondition, so that
 * a newer object of the same name is never deleted by mistake;
 * propagation ("Background", "Foreground", "Orphan", or NULL for the
 * server's default); grace_s < 0 for the object's own grace period. A 404
 * counts as success when missing_ok. */
int kube_delete(struct kube_api *api, const char *path, const char *uid, const char *propagation,
                int grace_s, int missing_ok, struct kube_result *res, char *err);

/* What a call may change from the defaults above. */
struct kube_opts {
	int timeout_ms; /* the round trip; 0: KUBE_DEFAULT_TIMEOUT_MS */
	int once;       /* see struct kube_req */
	int unguarded;
};

/* A get (GET), create (POST) or update (PUT) of a JSON object, as the
 * verbs above, with opts (the leader election's Lease calls: one short
 * attempt, past the write guard). */
int kube_send(struct kube_api *api, const char *method, const char *path, const cJSON *obj,
              const struct kube_opts *opts, cJSON **out, struct kube_result *res, char *err);

/* --- Paths ---
 * Write the path of a resource into out (KUBE_PATH_LEN): group "" for the
 * core API, namespace NULL for a cluster-scoped resource or a list across
 * namespaces, name NULL for the collection. Names are not escaped: callers
 * pass names the API server has validated. Returns -1 if it does not fit,
 * or if a segment could change the path's shape (empty, "." or "..", or
 * holding '/', '?', '#', '%', a space or a control character); out is
 * then "". */
int kube_path(char *out, const char *group, const char *version, const char *ns, const char *plural,
              const char *name);

#endif
