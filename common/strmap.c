/* strmap.c - a hash map from strings to pointers. */
#include "strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hash.h"

/* A removed key: probing goes on past it, inserting may reuse it. */
static char tombstone;
#define STRMAP_TOMBSTONE (&tombstone)

void strmap_init(struct strmap *m)
{
	memset(m, 0, sizeof(*m));
}

void strmap_release(struct strmap *m, void (*free_value)(void *))
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->cap; i++) {
		char *k = m->slots[i].key;
		if (k == NULL || k == STRMAP_TOMBSTONE)
			continue;
		if (free_value)
			free_value(m->slots[i].value);
		free(k);
	}
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

static size_t slot_of(const struct strmap *m, const char *key)
{
	return (size_t)hash_fnv1a64(HASH_FNV1A64_INIT, key, strlen(key)) & (m->cap - 1);
}

/* The slot holding key, or SIZE_MAX. */
static size_t find(const struct strmap *m, const char *key)
{
	if (m->cap == 0)
		return SIZE_MAX;
	for (size_t i = slot_of(m, key), n = 0; n < m->cap; i = (i + 1) & (m->cap - 1), n++) {
		const char *k = m->slots[i].key;
		if (k == NULL)
			return SIZE_MAX;
		if (k != STRMAP_TOMBSTONE && strcmp(k, key) == 0)
			return i;
	}
	return SIZE_MAX;
}

/* Moves every present key into a table of cap slots (tombstones go). */
static void rehash(struct strmap *m, size_t cap)
{
	struct strmap_slot *old = m->slots;
	size_t old_cap = m->cap;

	m->slots = xcalloc(cap, sizeof(*m->slots));
	m->cap = cap;
	m->used = m->len;
	for (size_t i = 0; i < old_cap; i++) {
		char *k = old[i].key;
		if (k == NULL || k == STRMAP_TOMBSTONE)
			continue;
		size_t j = slot_of(m, k);
		while (m->slots[j].key != NULL)
			j = (j + 1) & (cap - 1);
		m->slots[j] = old[i];
	}
	free(old);
}

void *strmap_get(const struct strmap *m, const char *key)
{
	size_t i = find(m, key);

	return i == SIZE_MAX ? NULL : m->slots[i].value;
}

int strmap_has(const struct strmap *m, const char *key)
{
	return find(m, key) != SIZE_MAX;
}

void *strmap_put(struct strmap *m, const char *key, void *value)
{
	size_t i = find(m, key);

	if (i != SIZE_MAX) {
		void *old = m->slots[i].value;
		m->slots[i].value = value;
		return old;
	}
	if ((m->used + 1) * 4 > m->cap * 3) /* grow (or clean tombstones) first */
		rehash(m, m->cap == 0 ? 16 : (m->len + 1) * 4 > m->cap * 2 ? m->cap * 2 : m->cap);
	i = slot_of(m, key);
	while (m->slots[i].key != NULL && m->slots[i].key != STRMAP_TOMBSTONE)
		i = (i + 1) & (m->cap - 1);
	if (m->slots[i].key == NULL)
		m->used++;
	size_t n = strlen(key) + 1;
	m->slots[i].key = xmalloc(n);
	memcpy(m->slots[i].key, key, n);
	m->slots[i].value = value;
	m->len++;
	return NULL;
}

void *strmap_remove(struct strmap *m, const char *key)
{
	size_t i = find(m, key);
	void *value;

	if (i == SIZE_MAX)
		return NULL;
	value = m->slots[i].value;
	free(m->slots[i].key);
	m->slots[i].key = STRMAP_TOMBSTONE;
	m->slots[i].value = NULL;
	m->len--;
	return value;
}

struct strmap_slot *strmap_next(const struct strmap *m, size_t *i)
{
	for (; *i < m->cap; (*i)++) {
		const char *k = m->slots[*i].key;
		if (k != NULL && k != STRMAP_TOMBSTONE)
			return &m->slots[(*i)++];
	}
	return NULL;
}
