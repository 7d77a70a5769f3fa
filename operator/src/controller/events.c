/* events.c - core/v1 Events on a job, as client-go's legacy recorder
 * writes them (events.h). */
#include "events.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "json_out.h"

#define EVENTS_COMPONENT  "mwj-operator"
#define EVENTS_NAME_MAX   253 /* an Event's name is an RFC 1123 subdomain */
#define EVENTS_SUFFIX_LEN 17  /* ".<16 hex digits>" */

/* The last suffix handed out: suffixes only grow, so two Events built in
 * the same nanosecond (or with the clock stepped back) still differ. */
static _Atomic uint64_t last_suffix;

/* The wall clock in nanoseconds, as client-go names its events, made
 * strictly greater than any suffix before it in this process. */
static uint64_t next_suffix(void)
{
	struct timespec ts;
	uint64_t now, prev, next;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	prev = atomic_load(&last_suffix);
	do {
		next = now > prev ? now : prev + 1;
	} while (!atomic_compare_exchange_weak(&last_suffix, &prev, next));
	return next;
}

/* s, or "" for NULL: a caller's missing string must not lose the Event. */
static const char *or_empty(const char *s)
{
	return s != NULL ? s : "";
}

/* job_obj's metadata.<key> when it is a string, else NULL. */
static const char *meta_string(const cJSON *job_obj, const char *key)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(job_obj, "metadata");
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(meta, key);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

static void involved_object(cJSON *ev, const struct job *j, const cJSON *job_obj)
{
	const cJSON *api = cJSON_GetObjectItemCaseSensitive(job_obj, "apiVersion");
	const char *rv = meta_string(job_obj, "resourceVersion");
	cJSON *o = json_out_obj(ev, "involvedObject");

	json_out_str(o, "kind", JOB_KIND);
	json_out_str(o, "namespace", j->ns);
	json_out_str(o, "name", j->name);
	json_out_str(o, "uid", j->uid);
	json_out_str(o, "apiVersion", cJSON_IsString(api) ? api->valuestring : JOB_API_VERSION);
	if (rv != NULL)
		json_out_str(o, "resourceVersion", rv);
}

cJSON *events_build(const struct job *j, const cJSON *job_obj, const char *type, const char *reason,
                    const char *message, const char *now, const char *instance)
{
	size_t len = strnlen(j->name, EVENTS_NAME_MAX - EVENTS_SUFFIX_LEN);
	char name[EVENTS_NAME_MAX + 1];
	cJSON *ev = json_out_new();
	cJSON *meta;

	/* The job's name is cut so that the Event's stays a valid name even
	 * for a job whose name is too long for its pods, the very job a
	 * Warning is most needed for; a label must not end in '-' or '.'. */
	while (len > 0 && (j->name[len - 1] == '-' || j->name[len - 1] == '.'))
		len--;
	snprintf(name, sizeof(name), "%.*s.%016llx", (int)len, j->name,
	         (unsigned long long)next_suffix());
	json_out_str(ev, "apiVersion", "v1");
	json_out_str(ev, "kind", "Event");
	meta = json_out_obj(ev, "metadata");
	json_out_str(meta, "name", name);
	json_out_str(meta, "namespace", j->ns);
	involved_object(ev, j, job_obj);
	json_out_str(ev, "type", or_empty(type));
	json_out_str(ev, "reason", or_empty(reason));
	json_out_str(ev, "message", or_empty(message));
	json_out_str(ev, "firstTimestamp", or_empty(now));
	json_out_str(ev, "lastTimestamp", or_empty(now));
	json_out_num(ev, "count", 1);
	json_out_str(json_out_obj(ev, "source"), "component", EVENTS_COMPONENT);
	json_out_str(ev, "reportingComponent", EVENTS_COMPONENT);
	if (instance != NULL && instance[0] != '\0')
		json_out_str(ev, "reportingInstance", instance);
	return ev;
}
