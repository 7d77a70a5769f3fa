/* list_pager.h - the list half of an informer's list-then-watch (informer.h):
 * every page of the collection, then the result in place of the cache.
 *
 * - Pages of 100 (limit), following metadata.continue; a continue token
 *   that expired (410 Gone) starts the list again as one request for
 *   everything, as client-go's tools/pager does.
 * - Every list asks for the most recent state (no resourceVersion), so
 *   that a relist never goes back in time; the first page's
 *   resourceVersion becomes the one the watch resumes from.
 * - A server that never stops handing out continue tokens (10000 pages),
 *   or lists more than 2^21 objects, fails the list.
 * - A list that fails leaves the cache as it was.
 *
 * Called on the informer's thread only: that thread is the cache's one
 * writer (informer.c).
 */
#ifndef MWJ_LIST_PAGER_H
#define MWJ_LIST_PAGER_H

#include "informer.h"
#include "strmap.h"

/* Lists inf's collection and puts it in place of inf->cache and
 * inf->last_rv (under inf->lock), then calls the handler, without the
 * lock, with ADD for each new key, UPDATE for each key whose
 * resourceVersion changed and DELETE for each key gone; then marks inf
 * synced and wakes informer_wait_synced. Returns 0, or -1 with err (the
 * cache untouched) when a request fails, a page is malformed, a limit is
 * passed or inf is stopping. */
int list_pager_relist(struct informer *inf, char *err);

/* Deletes every object (cJSON *) in m and leaves m empty and ready for
 * use: for inf->cache and the maps this module builds. */
void list_pager_free_objects(struct strmap *m);

#endif
