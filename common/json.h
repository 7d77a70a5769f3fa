/* json.h - typed accessors over cJSON trees.
 *
 * Getters look up a member of an object and check its type and range. They
 * return 0, or -1 with a message in err (ERR_LEN) that names the member, e.g.
 * "'task.index' must be an integer" (the caller passes the path prefix).
 * Returned strings and nodes are borrowed from the tree: the caller of
 * cJSON_Parse owns and deletes it.
 */
#ifndef MWJ_JSON_H
#define MWJ_JSON_H

#include <cjson/cJSON.h>
#include <stdint.h>

/* Parses text (len bytes, need not be NUL-terminated). Returns a tree the
 * caller deletes with cJSON_Delete, or NULL with "invalid JSON near byte N"
 * in err. */
cJSON *json_parse(const char *text, size_t len, char *err);

/* Required members. name is the member, path the dotted prefix used in
 * messages ("" for the root). */
int json_get_object(const cJSON *obj, const char *path, const char *name, const cJSON **out,
                    char *err);
int json_get_array(const cJSON *obj, const char *path, const char *name, const cJSON **out,
                   char *err);
int json_get_string(const cJSON *obj, const char *path, const char *name, const char **out,
                    char *err);
/* Integers must be whole numbers that fit exactly in a double (|v| <= 2^53). */
int json_get_i64(const cJSON *obj, const char *path, const char *name, int64_t min, int64_t max,
                 int64_t *out, char *err);
int json_get_bool(const cJSON *obj, const char *path, const char *name, int *out, char *err);
/* A finite number in [min, max]. */
int json_get_double(const cJSON *obj, const char *path, const char *name, double min, double max,
                    double *out, char *err);

/* Optional members: return 0 and leave *out untouched if absent (or null);
 * -1 if present with the wrong type or out of range. */
int json_opt_string(const cJSON *obj, const char *path, const char *name, const char **out,
                    char *err);
int json_opt_i64(const cJSON *obj, const char *path, const char *name, int64_t min, int64_t max,
                 int64_t *out, char *err);

/* Serializes without whitespace. Returns a malloc'd string the caller frees,
 * or NULL on out-of-memory. */
char *json_print(const cJSON *node);

#endif
