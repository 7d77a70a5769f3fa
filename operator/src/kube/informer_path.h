/* informer_path.h - the request paths of an informer's collection (its
 * group, version, namespace, plural and label selector): a page of the
 * list and the watch.
 *
 * Query values come from the config and from the server (versions,
 * continue tokens): everything but RFC 3986's unreserved characters is
 * escaped, so that none of them can add a parameter of its own.
 */
#ifndef MWJ_INFORMER_PATH_H
#define MWJ_INFORMER_PATH_H

#include "informer.h"

/* One page of the list, into out (KUBE_PATH_LEN bytes): limit objects (0:
 * everything at once), from the continue token cont (NULL: the first
 * page). No resourceVersion: the most recent state. Returns 0, or -1 with
 * err when the config makes no path or the path does not fit. */
int informer_path_list(struct informer *inf, int limit, const char *cont, char *out, char *err);

/* The watch from resourceVersion rv, with bookmarks, for timeout_s
 * seconds, into out (KUBE_PATH_LEN bytes). Returns 0, or -1 with err as
 * informer_path_list. */
int informer_path_watch(struct informer *inf, const char *rv, int timeout_s, char *out, char *err);

#endif
