/* informer.h - a local, always fresh copy of one kind of object, as
 * client-go's informers keep one: list, then watch from the list's
 * resourceVersion, on a thread of its own.
 *
 * - The watch asks for bookmarks and resumes from the last resourceVersion
 *   seen (an event's or a bookmark's) when it ends, is dropped, or times
 *   out; bookmarks are optional and rare, and nothing counts on them.
 * - 410 Gone, whether as the HTTP status of the watch request or as an
 *   ERROR event inside its stream, means the version is too old: list
 *   again, replace the cache, and tell the handler about every object
 *   that appeared, changed or went in between.
 * - A watch that sends nothing for longer than its deadline (its
 *   timeoutSeconds plus a margin) is dropped and resumed: a connection
 *   that went silent must not freeze the cache.
 * - Failed requests are retried with back-off; a malformed or oversized
 *   line (watch_stream.h) is logged and the watch restarted.
 * - Every resync period the handler is called for every cached object
 *   (level-based controllers catch anything they missed).
 *
 * The cache maps "namespace/name" to the object; readers get deep copies.
 */
#ifndef MWJ_INFORMER_H
#define MWJ_INFORMER_H

#include <cjson/cJSON.h>
#include <pthread.h>

#include "kube_api.h"
#include "strmap.h"

enum informer_op { INFORMER_ADD, INFORMER_UPDATE, INFORMER_DELETE, INFORMER_RESYNC };

/* Called from the informer's thread after the cache changed: old is the
 * previous object (NULL for ADD), obj the new one (for DELETE the last
 * state known). Both are borrowed for the call only. */
typedef void (*informer_fn)(void *ctx, enum informer_op op, const cJSON *old, const cJSON *obj);

struct informer_config {
	const char *name;  /* for logs: "multiworkerjobs", "pods" */
	const char *group; /* "" for the core API */
	const char *version;
	const char *plural;
	const char *namespace;      /* NULL or "": every namespace */
	const char *label_selector; /* NULL: none */
	int watch_timeout_s;        /* the watch's timeoutSeconds; 0: 300 */
	int resync_s;               /* 0: no periodic resync */
	informer_fn handler;
	void *handler_ctx;
	/* Called with handler_ctx after every list is in the cache and the
	 * handler has been told of it, with when the list began (monotonic
	 * ms): what was done before then is in it. NULL: not called. */
	void (*relisted)(void *ctx, long long list_start_ms);
	/* Called on every object before it is cached, on the informer's
	 * thread, to drop what the controller never reads (client-go's
	 * TransformFunc): the cache, and so the operator's memory, then
	 * grows with what it uses. NULL: objects are cached whole. */
	void (*transform)(cJSON *obj);
};

struct informer {
	struct informer_config cfg;
	struct kube_api *api;
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t synced_cond;
	struct strmap cache; /* "ns/name" -> cJSON * */
	int synced;          /* the first list is in the cache */
	char last_rv[32];    /* the newest resourceVersion seen */
	volatile int stopping;
	/* Counters, for logs and metrics. */
	unsigned long lists, watches, relists_after_gone, watch_errors;
	/* When the thread last turned or data last came (monotonic ms). */
	long long heartbeat_ms;
};

/* Whether the first list is in the cache (thread-safe). */
int informer_synced(struct informer *inf);

/* For /healthz: whether the informer's thread has turned or received
 * data within its longest watch (timeoutSeconds plus the idle margin)
 * and a minute more; one that has not is stuck. Thread-safe. */
int informer_alive(struct informer *inf);

/* --- Lifecycle --- */

/* Sets inf up (nothing runs yet). The strings in cfg must outlive inf. */
void informer_init(struct informer *inf, struct kube_api *api, const struct informer_config *cfg);

/* Starts the informer's thread. Returns 0, or -1 with a message. */
int informer_start(struct informer *inf, char *err);

/* Waits until the first list is in the cache, up to timeout_ms. Returns 1
 * when synced, 0 on time-out or stop. */
int informer_wait_synced(struct informer *inf, int timeout_ms);

/* Stops the thread (the API client must be stopped too, for a watch in
 * progress to end at once) and waits for it. */
void informer_stop(struct informer *inf);

/* Frees the cache. Call after informer_stop. Accepts NULL. */
void informer_release(struct informer *inf);

/* --- Reading the cache --- */

/* A deep copy of the object ns/name (ns "" for cluster-scoped), or NULL.
 * The caller deletes it. */
cJSON *informer_get(struct informer *inf, const char *ns, const char *name);

/* A new JSON array of deep copies of the cached objects for which keep
 * returns nonzero (keep NULL: all). The caller deletes it. */
cJSON *informer_list(struct informer *inf, int (*keep)(const cJSON *obj, void *ctx), void *ctx);

/* Calls fn with every cached object (borrowed, under the cache's lock:
 * fn must not call back into the informer). */
void informer_each(struct informer *inf, void (*fn)(void *ctx, const cJSON *obj), void *ctx);

/* "ns/name" of an object into out (n bytes), or "name" when it has no
 * namespace. Returns -1 if the object has no metadata.name. */
int informer_key(const cJSON *obj, char *out, size_t n);

#endif
