/* keras_read.c - objects, tables of keys, values and messages for the
 * readers of a Keras model file. */
#include "keras_read.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

/* A value longer than this is cut in messages ("..." follows). */
#define SHOWN_MAX 72
/* Integers travel as doubles in JSON; beyond 2^53 they are not exact. */
#define SEED_MAX 9007199254740992.0

/* The value as the file has it, compact, cut to SHOWN_MAX bytes. */
static void show(char *buf, size_t len, const cJSON *value)
{
	char *json = value != NULL ? cJSON_PrintUnformatted(value) : NULL;

	if (json == NULL) {
		snprintf(buf, len, "%s", value != NULL ? "(unprintable)" : "(missing)");
		return;
	}
	if (strlen(json) > SHOWN_MAX)
		snprintf(buf, len, "%.*s...", SHOWN_MAX, json);
	else
		snprintf(buf, len, "%s", json);
	free(json);
}

static int refuse_va(char *err, const char *ctx, const char *key, const char *shown,
                     const char *why, va_list ap)
{
	char reason[ERR_LEN];

	/* clang-tidy misreads ap when checking several files at once (llvm#40656).
	 * NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	vsnprintf(reason, sizeof(reason), why, ap);
	return err_set(err, "%s: \"%s\": %s %s", ctx, key, shown, reason);
}

int keras_refuse(char *err, const char *ctx, const char *key, const cJSON *value, const char *why,
                 ...)
{
	char shown[SHOWN_MAX + 8];
	va_list ap;
	int rc;

	show(shown, sizeof(shown), value);
	va_start(ap, why);
	rc = refuse_va(err, ctx, key, shown, why, ap);
	va_end(ap);
	return rc;
}

int keras_refuse_as(char *err, const char *ctx, const char *key, const char *shown, const char *why,
                    ...)
{
	va_list ap;
	int rc;

	va_start(ap, why);
	rc = refuse_va(err, ctx, key, shown, why, ap);
	va_end(ap);
	return rc;
}

const char *keras_clean(char *buf, size_t len, const char *s)
{
	size_t i = 0;

	for (; s != NULL && s[i] != '\0' && i + 1 < len; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[i] = '\0';
	return buf;
}

/* --- Keras objects --- */

static int listed(const char *name, const char *const *list)
{
	for (; list != NULL && *list != NULL; list++)
		if (strcmp(name, *list) == 0)
			return 1;
	return 0;
}

/* A built-in object names itself one of two ways (serialization_lib's
 * serialize_with_public_class and serialize_with_public_fn): null, or for a
 * Keras function its own name. */
static int check_builtin(const struct keras_obj *o, const cJSON *module, const cJSON *registered,
                         const char *ctx, const char *key, char *err)
{
	if (module != NULL && !cJSON_IsNull(module)) {
		const char *m = cJSON_IsString(module) ? module->valuestring : NULL;

		if (m == NULL || !(strcmp(m, "keras") == 0 || strncmp(m, "keras.", 6) == 0))
			return keras_refuse(err, ctx, key, o->node,
			                    "is not supported (a custom object: its \"module\" is "
			                    "not Keras')");
	}
	if (registered == NULL || cJSON_IsNull(registered))
		return 0;
	if (cJSON_IsString(registered) && strcmp(o->class_name, "function") == 0 &&
	    o->config != NULL && cJSON_IsString(o->config) &&
	    strcmp(registered->valuestring, o->config->valuestring) == 0)
		return 0;
	return keras_refuse(err, ctx, key, o->node,
	                    "is not supported (a custom object: \"registered_name\" is not a "
	                    "Keras built-in)");
}

int keras_obj_read(struct keras_obj *o, const cJSON *node, const char *const *extra,
                   const char *ctx, const char *key, char *err)
{
	const cJSON *module = NULL, *registered = NULL, *it;

	memset(o, 0, sizeof(*o));
	o->node = node;
	if (!cJSON_IsObject(node))
		return keras_refuse(err, ctx, key, node, "must be a Keras object");
	cJSON_ArrayForEach(it, node)
	{
		const char *name = it->string;

		if (strcmp(name, "class_name") == 0) {
			if (!cJSON_IsString(it))
				return keras_refuse(err, ctx, key, node,
				                    "must have a string \"class_name\"");
			o->class_name = it->valuestring;
		} else if (strcmp(name, "config") == 0) {
			o->config = cJSON_IsNull(it) ? NULL : it;
		} else if (strcmp(name, "module") == 0) {
			module = it;
		} else if (strcmp(name, "registered_name") == 0) {
			registered = it;
		} else if (strcmp(name, "shared_object_id") != 0 && !listed(name, extra)) {
			return keras_refuse(err, ctx, key, node,
			                    "is not supported (an object with \"%s\")", name);
		}
	}
	if (o->class_name == NULL)
		return keras_refuse(err, ctx, key, node, "must have a string \"class_name\"");
	return check_builtin(o, module, registered, ctx, key, err);
}

int keras_named(struct keras_obj *o, const char **name, int *is_fn, const cJSON *v, const char *ctx,
                const char *key, char *err)
{
	memset(o, 0, sizeof(*o));
	*is_fn = 0;
	if (cJSON_IsString(v)) {
		*name = v->valuestring;
		return 0;
	}
	if (keras_obj_read(o, v, NULL, ctx, key, err) < 0)
		return -1;
	*is_fn = strcmp(o->class_name, "function") == 0 && o->config != NULL &&
	         cJSON_IsString(o->config);
	*name = *is_fn ? o->config->valuestring : o->class_name;
	return 0;
}

/* --- Tables of keys --- */

static const struct keras_key *find_key(const struct keras_key *const *tables, const char *name)
{
	for (; *tables != NULL; tables++)
		for (const struct keras_key *k = *tables; k->name != NULL; k++)
			if (strcmp(k->name, name) == 0)
				return k;
	return NULL;
}

int keras_read_keys(void *out, const cJSON *config, const struct keras_key *const *tables,
                    const char *ctx, char *err)
{
	const cJSON *it;

	if (!cJSON_IsObject(config))
		return keras_refuse(err, ctx, "config", config, "must be an object");
	cJSON_ArrayForEach(it, config)
	{
		const struct keras_key *k = find_key(tables, it->string);

		if (k == NULL)
			return keras_refuse(
			    err, ctx, it->string, it,
			    "is not supported (an option mwj-worker does not know)");
		if (k->read(out, it, ctx, it->string, err) < 0)
			return -1;
	}
	for (; *tables != NULL; tables++)
		for (const struct keras_key *k = *tables; k->name != NULL; k++)
			if (k->required && !cJSON_HasObjectItem(config, k->name))
				return err_set(err, "%s: \"%s\" is missing", ctx, k->name);
	return 0;
}

/* --- Values --- */

int keras_int(const cJSON *value, int min, int max, int *v, const char *ctx, const char *key,
              char *err)
{
	double d = cJSON_IsNumber(value) ? value->valuedouble : NAN;

	if (!isfinite(d) || d != trunc(d) || d < min || d > max)
		return keras_refuse(err, ctx, key, value, "must be a whole number in [%d, %d]", min,
		                    max);
	*v = (int)d;
	return 0;
}

int keras_number(const cJSON *value, double min, double max, double *v, const char *ctx,
                 const char *key, char *err)
{
	double d = cJSON_IsNumber(value) ? value->valuedouble : NAN;

	if (!isfinite(d) || d < min || d > max)
		return keras_refuse(err, ctx, key, value, "must be a number in [%g, %g]", min, max);
	*v = d;
	return 0;
}

int keras_bool(const cJSON *value, int *v, const char *ctx, const char *key, char *err)
{
	if (!cJSON_IsBool(value))
		return keras_refuse(err, ctx, key, value, "must be true or false");
	*v = cJSON_IsTrue(value) ? 1 : 0;
	return 0;
}

int keras_seed(const cJSON *value, int *has, uint64_t *seed, const char *ctx, const char *key,
               char *err)
{
	double d = cJSON_IsNumber(value) ? value->valuedouble : NAN;

	if (cJSON_IsNull(value)) {
		*has = 0;
		*seed = 0;
		return 0;
	}
	if (!isfinite(d) || d != trunc(d) || d < 0 || d > SEED_MAX)
		return keras_refuse(err, ctx, key, value,
		                    "is not supported (a seed is null or a whole number in [0, "
		                    "2^53])");
	*has = 1;
	*seed = (uint64_t)d;
	return 0;
}

int keras_name(const cJSON *value, char *buf, size_t len, const char *ctx, const char *key,
               char *err)
{
	const char *s = cJSON_IsString(value) ? value->valuestring : NULL;
	size_t n = s != NULL ? strlen(s) : 0;

	if (n == 0 || n >= len)
		return keras_refuse(err, ctx, key, value, "must be a string of 1 to %zu bytes",
		                    len - 1);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return keras_refuse(err, ctx, key, value,
			                    "must not hold control characters");
	memcpy(buf, s, n + 1);
	return 0;
}

int keras_need_null(void *out, const cJSON *value, const char *ctx, const char *key, char *err)
{
	(void)out;
	if (!cJSON_IsNull(value))
		return keras_refuse(err, ctx, key, value, "is not supported (only null)");
	return 0;
}

int keras_need_false(void *out, const cJSON *value, const char *ctx, const char *key, char *err)
{
	(void)out;
	if (!cJSON_IsNull(value) && !cJSON_IsFalse(value))
		return keras_refuse(err, ctx, key, value, "is not supported (only false)");
	return 0;
}

int keras_need_trainable(void *out, const cJSON *value, const char *ctx, const char *key, char *err)
{
	(void)out;
	if (cJSON_IsFalse(value))
		return keras_refuse(err, ctx, key, value,
		                    "is not supported yet (frozen layers: every layer trains)");
	if (!cJSON_IsTrue(value))
		return keras_refuse(err, ctx, key, value, "must be true or false");
	return 0;
}

/* The name of a dtype policy object, or NULL if node is not one. */
static const char *policy_name(const cJSON *node)
{
	const cJSON *cls = cJSON_GetObjectItemCaseSensitive(node, "class_name");
	const cJSON *config = cJSON_GetObjectItemCaseSensitive(node, "config");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(config, "name");
	const char *c = cJSON_IsString(cls) ? cls->valuestring : "";

	if (strcmp(c, "DTypePolicy") != 0 && strcmp(c, "FloatDTypePolicy") != 0 &&
	    strcmp(c, "Policy") != 0)
		return NULL;
	return cJSON_IsString(name) ? name->valuestring : NULL;
}

int keras_need_float32(void *out, const cJSON *value, const char *ctx, const char *key, char *err)
{
	struct keras_obj o;
	const char *name;
	char shown[KERAS_CTX_LEN], clean[72];

	(void)out;
	if (cJSON_IsNull(value))
		return 0;
	if (cJSON_IsString(value)) {
		name = value->valuestring;
	} else {
		if (keras_obj_read(&o, value, NULL, ctx, key, err) < 0)
			return -1;
		name = policy_name(value);
		if (name == NULL)
			return keras_refuse(err, ctx, key, value, "is not a dtype policy");
	}
	if (strcmp(name, "float32") == 0)
		return 0;
	snprintf(shown, sizeof(shown), "\"%s\"", keras_clean(clean, sizeof(clean), name));
	return keras_refuse_as(err, ctx, key, shown, "is not supported (only float32)");
}

int keras_need_channels_last(void *out, const cJSON *value, const char *ctx, const char *key,
                             char *err)
{
	(void)out;
	if (cJSON_IsNull(value) ||
	    (cJSON_IsString(value) && strcmp(value->valuestring, "channels_last") == 0))
		return 0;
	return keras_refuse(err, ctx, key, value, "is not supported (only channels_last)");
}

int keras_ignore(void *out, const cJSON *value, const char *ctx, const char *key, char *err)
{
	(void)out, (void)value, (void)ctx, (void)key, (void)err;
	return 0;
}
