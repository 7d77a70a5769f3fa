/* strmap.h - a hash map from strings to pointers: the operator's caches
 * (objects by "namespace/name"), its work queue's sets and its
 * expectations.
 *
 * Open addressing with linear probing, kept at most 3/4 full; keys are
 * copied in, values are the caller's. Not thread-safe: the owner locks.
 */
#ifndef MWJ_STRMAP_H
#define MWJ_STRMAP_H

#include <stddef.h>

struct strmap_slot {
	char *key; /* NULL: empty; STRMAP_TOMBSTONE: removed */
	void *value;
};

struct strmap {
	struct strmap_slot *slots;
	size_t cap;  /* a power of two, or 0 before the first insert */
	size_t len;  /* keys present */
	size_t used; /* keys present and tombstones */
};

/* An empty map; the struct may also be zeroed. */
void strmap_init(struct strmap *m);

/* Frees the map's own memory (keys and slots), not the values; call
 * free_value (may be NULL) on each value first. Accepts NULL. */
void strmap_release(struct strmap *m, void (*free_value)(void *));

/* The value of key, or NULL when absent. */
void *strmap_get(const struct strmap *m, const char *key);

/* Whether key is present (its value may be NULL). */
int strmap_has(const struct strmap *m, const char *key);

/* Sets key to value. Returns the value it replaces (NULL if the key was
 * new), for the caller to free. Dies on out of memory. */
void *strmap_put(struct strmap *m, const char *key, void *value);

/* Removes key. Returns its value (NULL if absent). */
void *strmap_remove(struct strmap *m, const char *key);

/* Iteration: i from 0 while i < m->cap; strmap_next returns the next
 * present slot at or after *i (advancing *i past it), or NULL at the end.
 * The map must not change during the iteration, except by strmap_remove
 * of the key just returned. */
struct strmap_slot *strmap_next(const struct strmap *m, size_t *i);

#endif
