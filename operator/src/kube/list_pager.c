/* list_pager.c - the list half of an informer's list-then-watch: every
 * page of the collection into a fresh map, then that map in place of the
 * cache (list_pager.h).
 *
 * It runs on the informer's thread, the cache's only writer (informer.c):
 * it swaps the cache under the lock and calls the handler without it.
 */
#include "list_pager.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "informer_path.h"
#include "json.h"
#include "log.h"

/* client-go asks for 500 objects a page. A page is held whole twice over
 * (its text, then its parse, before the transform cuts each object), and
 * malloc keeps that peak: 100 a page keeps it to a fifth, for four more
 * requests per 500 objects. With 400 pods the operator's RSS after a list
 * is 4 MB lower. */
#define LIST_PAGE_SIZE 100
/* A server that hands out continue tokens for ever is broken: 10000 pages
 * are five million objects. */
#define LIST_MAX_PAGES   10000
#define LIST_MAX_OBJECTS (1 << 21)
#define CONTINUE_MAX     4096
/* As informer.c's: a key "ns/name", a resourceVersion. */
#define KEY_LEN 512
#define RV_LEN  32

_Static_assert(sizeof(((struct informer *)0)->last_rv) == RV_LEN, "informer.h's last_rv");

static int is_stopping(struct informer *inf)
{
	return __atomic_load_n(&inf->stopping, __ATOMIC_ACQUIRE);
}

static void notify(struct informer *inf, enum informer_op op, const cJSON *old, const cJSON *obj)
{
	if (inf->cfg.handler != NULL)
		inf->cfg.handler(inf->cfg.handler_ctx, op, old, obj);
}

static const char *object_version(const cJSON *obj)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion");

	return cJSON_IsString(rv) ? rv->valuestring : "";
}

/* --- Listing --- */

void list_pager_free_objects(struct strmap *m)
{
	size_t i = 0;
	struct strmap_slot *s;

	while ((s = strmap_next(m, &i)) != NULL)
		cJSON_Delete(s->value);
	strmap_release(m, NULL);
	strmap_init(m);
}

/* Items of a typed list carry no kind or apiVersion (a watch's objects
 * do): fill them in from the list's, so that every cached object looks
 * the same whichever way it came. */
static void fill_kind(cJSON *item, const char *list_kind, const char *api_version)
{
	size_t n = list_kind != NULL ? strlen(list_kind) : 0;

	if (!cJSON_HasObjectItem(item, "kind") && n > 4 && strcmp(list_kind + n - 4, "List") == 0) {
		char kind[128];

		snprintf(kind, sizeof(kind), "%.*s", (int)(n - 4), list_kind);
		cJSON_AddStringToObject(item, "kind", kind);
	}
	if (!cJSON_HasObjectItem(item, "apiVersion") && api_version != NULL)
		cJSON_AddStringToObject(item, "apiVersion", api_version);
}

static const char *string_member(const cJSON *obj, const char *name)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsString(s) ? s->valuestring : NULL;
}

/* A version as the watch will send it back: see watch_stream.c. */
static int usable_version(const char *rv, size_t size)
{
	size_t n = rv != NULL ? strlen(rv) : 0;

	if (n == 0 || n >= size)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)rv[i] <= 0x20 || (unsigned char)rv[i] >= 0x7F)
			return 0;
	}
	return 1;
}

/* Moves the items of one page into into; the page's resourceVersion goes
 * to rv (when rv is still "") and its continue token (malloc'd, NULL on
 * the last page) to *cont. */
static int take_page(struct informer *inf, const char *body, size_t len, struct strmap *into,
                     char *rv, size_t rv_len, char **cont, char *err)
{
	cJSON *root = json_parse(body, len, err);
	const cJSON *meta;
	const char *page_rv, *next;
	cJSON *items, *it;
	int skipped = 0;
	int rc = -1;

	*cont = NULL;
	if (root == NULL)
		return err_prefix(err, "list %s", inf->cfg.plural);
	meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
	page_rv = string_member(meta, "resourceVersion");
	if (!usable_version(page_rv, rv_len)) {
		err_set(err, "list %s: no usable metadata.resourceVersion", inf->cfg.plural);
		goto out;
	}
	items = cJSON_GetObjectItemCaseSensitive(root, "items");
	if (items != NULL && !cJSON_IsNull(items) && !cJSON_IsArray(items)) {
		err_set(err, "list %s: 'items' must be an array", inf->cfg.plural);
		goto out;
	}
	it = items != NULL && cJSON_IsArray(items) ? items->child : NULL;
	while (it != NULL) {
		cJSON *next_item = it->next;
		char key[KEY_LEN];

		if (!cJSON_IsObject(it) || informer_key(it, key, sizeof(key)) < 0) {
			skipped++;
		} else {
			cJSON *obj = cJSON_DetachItemViaPointer(items, it);

			fill_kind(obj, string_member(root, "kind"),
			          string_member(root, "apiVersion"));
			if (inf->cfg.transform)
				inf->cfg.transform(obj);
			/* The last of two items with one name wins, as in a watch. */
			cJSON_Delete(strmap_put(into, key, obj));
		}
		it = next_item;
	}
	if (skipped > 0)
		log_warn("informer %s: list skipped %d items without a usable name", inf->cfg.name,
		         skipped);
	if (into->len > LIST_MAX_OBJECTS) {
		err_set(err, "list %s: more than %d objects", inf->cfg.plural, LIST_MAX_OBJECTS);
		goto out;
	}
	if (rv[0] == '\0')
		snprintf(rv, rv_len, "%s", page_rv);
	next = string_member(meta, "continue");
	if (next != NULL && next[0] != '\0') {
		if (strlen(next) > CONTINUE_MAX) {
			err_set(err, "list %s: continue token longer than %d bytes",
			        inf->cfg.plural, CONTINUE_MAX);
			goto out;
		}
		*cont = strdup(next);
		if (*cont == NULL)
			die("out of memory");
	}
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

/* GETs every page of the collection into into, and its resourceVersion
 * into rv. */
static int list_all(struct informer *inf, struct strmap *into, char *rv, size_t rv_len, char *err)
{
	char path[KUBE_PATH_LEN];
	char *cont = NULL;
	int limit = LIST_PAGE_SIZE;
	int fell_back = 0;
	int rc = -1;

	rv[0] = '\0';
	for (int requests = 0;; requests++) {
		struct kube_resp resp = {0};
		struct kube_req req = {.method = "GET", .path = path};

		if (is_stopping(inf)) {
			err_set(err, "list %s: stopped", inf->cfg.plural);
			goto out;
		}
		if (requests > LIST_MAX_PAGES) {
			err_set(err, "list %s: more than %d pages", inf->cfg.plural,
			        LIST_MAX_PAGES);
			goto out;
		}
		if (informer_path_list(inf, limit, cont, path, err) < 0)
			goto out;
		if (kube_api_request(inf->api, &req, &resp, err) < 0)
			goto out;
		if (resp.status == 410 && cont != NULL && !fell_back) {
			/* The token outlived etcd's compaction window: start again with
			 * one list of everything, as client-go's pager does. */
			log_info("informer %s: list continuation expired: listing all at once",
			         inf->cfg.name);
			kube_resp_release(&resp);
			free(cont);
			cont = NULL;
			list_pager_free_objects(into);
			rv[0] = '\0';
			limit = 0;
			fell_back = 1;
			continue;
		}
		if (resp.status != 200) {
			err_set(err, "list %s: %ld%s%s%s%s", inf->cfg.plural, resp.status,
			        resp.reason[0] != '\0' ? " " : "", resp.reason,
			        resp.message[0] != '\0' ? ": " : "", resp.message);
			kube_resp_release(&resp);
			goto out;
		}
		free(cont);
		if (take_page(inf, resp.body, resp.body_len, into, rv, rv_len, &cont, err) < 0) {
			kube_resp_release(&resp);
			goto out;
		}
		kube_resp_release(&resp);
		if (cont == NULL)
			break;
	}
	rc = 0;
out:
	free(cont);
	return rc;
}

/* --- Replacing the cache --- */

/* Puts fresh (consumed) in place of the cache and tells the handler what
 * changed: ADD for a new key, UPDATE for a new resourceVersion, DELETE for
 * a key that is gone. The first list only adds. */
static void replace_cache(struct informer *inf, struct strmap *fresh, const char *rv)
{
	struct strmap old;
	size_t i = 0;
	struct strmap_slot *s;
	int added = 0, updated = 0, deleted = 0;

	pthread_mutex_lock(&inf->lock);
	old = inf->cache;
	inf->cache = *fresh;
	snprintf(inf->last_rv, sizeof(inf->last_rv), "%s", rv);
	pthread_mutex_unlock(&inf->lock);
	strmap_init(fresh);

	/* This thread alone changes the cache: it reads it without the lock. */
	while ((s = strmap_next(&inf->cache, &i)) != NULL) {
		const cJSON *was = strmap_get(&old, s->key);

		if (was == NULL) {
			added++;
			notify(inf, INFORMER_ADD, NULL, s->value);
		} else if (strcmp(object_version(was), object_version(s->value)) != 0) {
			updated++;
			notify(inf, INFORMER_UPDATE, was, s->value);
		}
	}
	i = 0;
	while ((s = strmap_next(&old, &i)) != NULL) {
		if (!strmap_has(&inf->cache, s->key)) {
			deleted++;
			notify(inf, INFORMER_DELETE, s->value, s->value);
		}
	}
	list_pager_free_objects(&old);
	log_info("informer %s: listed %zu objects at resourceVersion %s: %d added, %d updated, "
	         "%d deleted",
	         inf->cfg.name, inf->cache.len, rv, added, updated, deleted);

	/* Synced once the handler has seen the first list, as client-go's
	 * HasSynced: a controller that starts then finds every key queued. */
	pthread_mutex_lock(&inf->lock);
	inf->synced = 1;
	pthread_cond_broadcast(&inf->synced_cond);
	pthread_mutex_unlock(&inf->lock);
}

int list_pager_relist(struct informer *inf, char *err)
{
	struct strmap fresh;
	char rv[RV_LEN];

	strmap_init(&fresh);
	if (list_all(inf, &fresh, rv, sizeof(rv), err) < 0) {
		list_pager_free_objects(&fresh);
		return -1;
	}
	replace_cache(inf, &fresh, rv);
	/* The old cache and the pages are freed: give their memory back
	 * rather than keep the peak of a list for ever. */
	malloc_trim(0);
	return 0;
}
