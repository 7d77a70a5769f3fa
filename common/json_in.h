/* json_in.h - reading, tolerantly, the parts of API objects that anyone
 * who can edit the object may have written (a job's status, a pod's labels
 * and conditions): a member of the wrong type reads as absent, and a
 * string too long for its field is cut rather than refused.
 *
 * The strict readers, which fail with a message, are in json.h.
 */
#ifndef MWJ_JSON_IN_H
#define MWJ_JSON_IN_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* obj.name, or NULL when obj is not an object or the member is absent or
 * not a string. Borrowed from obj. */
const char *json_in_str(const cJSON *obj, const char *name);

/* Copies s into out (n bytes, n > 0), cut at a UTF-8 character boundary
 * when too long; "" for NULL. */
void json_in_copy_cut(char *out, size_t n, const char *s);

#endif
