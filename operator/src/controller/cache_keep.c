/* cache_keep.c - what the operator's caches keep of each object; see
 * cache_keep.h. */
#include "cache_keep.h"

#include <string.h>

#include "err.h"

static int named(const cJSON *item, const char *const keep[])
{
	if (item->string == NULL)
		return 0;
	for (int k = 0; keep[k] != NULL; k++)
		if (strcmp(item->string, keep[k]) == 0)
			return 1;
	return 0;
}

/* Deletes every member of obj whose name is not in keep (NULL-ended).
 * Anything but an object is left alone. */
static void keep_members(cJSON *obj, const char *const keep[])
{
	cJSON *item;

	if (!cJSON_IsObject(obj))
		return;
	item = obj->child;
	while (item != NULL) {
		cJSON *next = item->next;

		if (!named(item, keep))
			cJSON_Delete(cJSON_DetachItemViaPointer(obj, item));
		item = next;
	}
}

/* keep_members on every element of the array member name of obj. */
static void keep_elements(cJSON *obj, const char *name, const char *const keep[])
{
	cJSON *item;

	cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(obj, name))
	{
		keep_members(item, keep);
	}
}

static void keep_no_managed_fields(cJSON *obj)
{
	cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
	                                        "managedFields");
}

void cache_keep_job(cJSON *obj)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");

	keep_no_managed_fields(obj);
	cJSON_DeleteItemFromObjectCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(meta, "annotations"),
	    "kubectl.kubernetes.io/last-applied-configuration");
}

/* The pod's status as pod_view_parse reads it. */
static void keep_pod_status(cJSON *status)
{
	static const char *const top[] = {"phase", "reason", "conditions", "containerStatuses",
	                                  NULL};
	static const char *const condition[] = {"type", "status", NULL};
	static const char *const container[] = {"name", "state", NULL};
	static const char *const state[] = {"terminated", "waiting", NULL};
	static const char *const terminated[] = {"exitCode", "reason", NULL};
	static const char *const waiting[] = {"reason", "message", NULL};
	cJSON *item;

	keep_members(status, top);
	keep_elements(status, "conditions", condition);
	keep_elements(status, "containerStatuses", container);
	cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(status, "containerStatuses"))
	{
		cJSON *st = cJSON_GetObjectItemCaseSensitive(item, "state");

		keep_members(st, state);
		keep_members(cJSON_GetObjectItemCaseSensitive(st, "terminated"), terminated);
		keep_members(cJSON_GetObjectItemCaseSensitive(st, "waiting"), waiting);
	}
}

void cache_keep_pod(cJSON *obj)
{
	static const char *const container[] = {"name", NULL};
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	cJSON *containers = cJSON_DetachItemFromObjectCaseSensitive(spec, "containers");

	keep_no_managed_fields(obj);
	cJSON_DeleteItemFromObjectCaseSensitive(obj, "spec");
	spec = cJSON_AddObjectToObject(obj, "spec");
	if (spec == NULL)
		die("out of memory");
	if (containers != NULL) {
		cJSON *item;

		cJSON_ArrayForEach(item, containers)
		{
			keep_members(item, container);
		}
		cJSON_AddItemToObject(spec, "containers", containers);
	}
	keep_pod_status(cJSON_GetObjectItemCaseSensitive(obj, "status"));
}

void cache_keep_metadata(cJSON *obj)
{
	static const char *const top[] = {"metadata", "kind", "apiVersion", NULL};

	keep_no_managed_fields(obj);
	keep_members(obj, top);
}
