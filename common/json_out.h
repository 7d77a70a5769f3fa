/* json_out.h - building the JSON objects the operator sends to the API.
 *
 * cJSON's Add functions return NULL when memory runs out and leave the
 * object without the member: an object sent that way would be a wrong
 * object, not a failed request. These wrappers die instead (out of memory
 * is fatal, err.h), so a builder either returns a complete object or none.
 * Each returns the member it added, borrowed from obj.
 */
#ifndef MWJ_JSON_OUT_H
#define MWJ_JSON_OUT_H

#include <cjson/cJSON.h>

#include "err.h"

static inline cJSON *json_out_new(void)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		die("out of memory building JSON");
	return o;
}

static inline cJSON *json_out_new_array(void)
{
	cJSON *a = cJSON_CreateArray();

	if (a == NULL)
		die("out of memory building JSON");
	return a;
}

/* Adds item (ownership passes to obj) under key, or to the array obj when
 * key is NULL. */
static inline cJSON *json_out_item(cJSON *obj, const char *key, cJSON *item)
{
	int ok = item != NULL && (key != NULL ? cJSON_AddItemToObject(obj, key, item)
	                                      : cJSON_AddItemToArray(obj, item));

	if (!ok)
		die("out of memory building JSON");
	return item;
}

static inline cJSON *json_out_str(cJSON *obj, const char *key, const char *value)
{
	return json_out_item(obj, key, cJSON_CreateString(value));
}

static inline cJSON *json_out_num(cJSON *obj, const char *key, double value)
{
	return json_out_item(obj, key, cJSON_CreateNumber(value));
}

static inline cJSON *json_out_bool(cJSON *obj, const char *key, int value)
{
	return json_out_item(obj, key, cJSON_CreateBool(value));
}

static inline cJSON *json_out_null(cJSON *obj, const char *key)
{
	return json_out_item(obj, key, cJSON_CreateNull());
}

static inline cJSON *json_out_obj(cJSON *obj, const char *key)
{
	return json_out_item(obj, key, cJSON_CreateObject());
}

static inline cJSON *json_out_arr(cJSON *obj, const char *key)
{
	return json_out_item(obj, key, cJSON_CreateArray());
}

/* A deep copy of item added under key (item stays the caller's). */
static inline cJSON *json_out_copy(cJSON *obj, const char *key, const cJSON *item)
{
	return json_out_item(obj, key, cJSON_Duplicate(item, 1));
}

/* Sets obj.key to item, replacing what was there (ownership passes). */
static inline cJSON *json_out_set(cJSON *obj, const char *key, cJSON *item)
{
	if (item == NULL)
		die("out of memory building JSON");
	if (cJSON_GetObjectItemCaseSensitive(obj, key) != NULL) {
		if (!cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item))
			die("out of memory building JSON");
		return item;
	}
	return json_out_item(obj, key, item);
}

#endif
