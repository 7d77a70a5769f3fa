/* json.c - typed accessors over cJSON trees. */
#include "json.h"

#include "err.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Integers travel as doubles in cJSON; beyond 2^53 they are no longer exact. */
#define JSON_MAX_EXACT 9007199254740992.0

cJSON *json_parse(const char *text, size_t len, char *err)
{
	const char *end = NULL;
	const char *nul = NULL;
	cJSON *root;

	if (text == NULL) {
		err_set(err, "invalid JSON near byte 0");
		return NULL;
	}
	/* cJSON works on C strings inside the buffer: a NUL byte would cut a
	 * string value short without any error. */
	if (len > 0)
		nul = memchr(text, '\0', len);
	if (nul != NULL) {
		err_set(err, "invalid JSON near byte %zu", (size_t)(nul - text));
		return NULL;
	}

	root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (root == NULL) {
		size_t at = end != NULL && end >= text ? (size_t)(end - text) : 0;

		err_set(err, "invalid JSON near byte %zu", at);
		return NULL;
	}
	/* Without require_null_terminated cJSON stops after the value; only
	 * whitespace may follow it. */
	while (end < text + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
		end++;
	if (end < text + len) {
		cJSON_Delete(root);
		err_set(err, "invalid JSON near byte %zu", (size_t)(end - text));
		return NULL;
	}
	return root;
}

/* The name used in messages: "path.name", or just "name" at the root. */
static void member_name(char *buf, const char *path, const char *name)
{
	if (path == NULL || path[0] == '\0')
		snprintf(buf, ERR_LEN, "%s", name ? name : "");
	else
		snprintf(buf, ERR_LEN, "%s.%s", path, name ? name : "");
}

/* Looks name up in obj. A missing member is an error when required; when
 * optional, a missing or null member gives 0 with *item = NULL. A null
 * required member is left to the caller's type check. */
static int find_member(const cJSON *obj, const char *path, const char *name, int required,
                       const cJSON **item, char *err)
{
	char what[ERR_LEN];
	const cJSON *it;

	*item = NULL;
	if (!cJSON_IsObject(obj)) {
		if (path == NULL || path[0] == '\0')
			err_set(err, "top-level value must be an object");
		else
			err_set(err, "'%s' must be an object", path);
		return -1;
	}
	it = name ? cJSON_GetObjectItemCaseSensitive(obj, name) : NULL;
	if (it == NULL && required) {
		member_name(what, path, name);
		err_set(err, "'%s' is missing", what);
		return -1;
	}
	if (cJSON_IsNull(it) && !required)
		it = NULL;
	*item = it;
	return 0;
}

static int type_error(const char *path, const char *name, const char *type, char *err)
{
	char what[ERR_LEN];

	member_name(what, path, name);
	return err_set(err, "'%s' must be %s", what, type);
}

static int to_i64(const cJSON *it, const char *path, const char *name, int64_t min, int64_t max,
                  int64_t *out, char *err)
{
	char what[ERR_LEN];
	double d;
	int64_t v;

	if (!cJSON_IsNumber(it))
		return type_error(path, name, "an integer", err);
	d = it->valuedouble;
	if (!isfinite(d) || d != trunc(d))
		return type_error(path, name, "an integer", err);
	member_name(what, path, name);
	if (fabs(d) > JSON_MAX_EXACT)
		return err_set(err, "'%s' is too large to be exact (beyond 2^53)", what);
	v = (int64_t)d;
	if (v < min || v > max)
		return err_set(err, "'%s' is out of range [%" PRId64 ", %" PRId64 "]", what, min,
		               max);
	*out = v;
	return 0;
}

int json_get_object(const cJSON *obj, const char *path, const char *name, const cJSON **out,
                    char *err)
{
	const cJSON *it = NULL;

	if (find_member(obj, path, name, 1, &it, err) < 0)
		return -1;
	if (!cJSON_IsObject(it))
		return type_error(path, name, "an object", err);
	*out = it;
	return 0;
}

int json_get_array(const cJSON *obj, const char *path, const char *name, const cJSON **out,
                   char *err)
{
	const cJSON *it = NULL;

	if (find_member(obj, path, name, 1, &it, err) < 0)
		return -1;
	if (!cJSON_IsArray(it))
		return type_error(path, name, "an array", err);
	*out = it;
	return 0;
}

int json_get_string(const cJSON *obj, const char *path, const char *name, const char **out,
                    char *err)
{
	const cJSON *it = NULL;

	if (find_member(obj, path, name, 1, &it, err) < 0)
		return -1;
	if (!cJSON_IsString(it) || it->valuestring == NULL)
		return type_error(path, name, "a string", err);
	*out = it->valuestring;
	return 0;
}

int json_get_i64(const cJSON *obj, const char *path, const char *name, int64_t min, int64_t max,
                 int64_t *out, char *err)
{
	const cJSON *it = NULL;

	if (find_member(obj, path, name, 1, &it, err) < 0)
		return -1;
	return to_i64(it, path, name, min, max, out, err);
}

int json_get_double(const cJSON *obj, const char *path, const char *name, double min, double max,
                    double *out, char *err)
{
	const cJSON *it = NULL;
	char what[ERR_LEN];

	if (find_member(obj, path, name, 1, &it, err) < 0)
		return -1;
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
		return type_error(path, name, "a number", err);
	member_name(what, path, name);
	if (it->valuedouble < min || it->valuedouble > max)
		return err_set(err, "'%s' is out of range [%g, %g]", what, min, max);
	*out = it->valuedouble;
	return 0;
}

int json_get_bool(const cJSON *obj, const char *path, const char *name, int *out, char *err)
{
	const cJSON *it = NULL;

	if (find_member(obj, path, name, 1, &it, err) < 0)
		return -1;
	if (!cJSON_IsBool(it))
		return type_error(path, name, "a boolean", err);
	*out = cJSON_IsTrue(it) ? 1 : 0;
	return 0;
}

int json_opt_string(const cJSON *obj, const char *path, const char *name, const char **out,
                    char *err)
{
	const cJSON *it = NULL;

	if (find_member(obj, path, name, 0, &it, err) < 0)
		return -1;
	if (it == NULL)
		return 0;
	if (!cJSON_IsString(it) || it->valuestring == NULL)
		return type_error(path, name, "a string", err);
	*out = it->valuestring;
	return 0;
}

int json_opt_i64(const cJSON *obj, const char *path, const char *name, int64_t min, int64_t max,
                 int64_t *out, char *err)
{
	const cJSON *it = NULL;

	if (find_member(obj, path, name, 0, &it, err) < 0)
		return -1;
	if (it == NULL)
		return 0;
	return to_i64(it, path, name, min, max, out, err);
}

char *json_print(const cJSON *node)
{
	if (node == NULL)
		return NULL;
	return cJSON_PrintUnformatted(node);
}
