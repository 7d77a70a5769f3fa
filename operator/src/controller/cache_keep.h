/* cache_keep.h - what the operator's caches keep of each object: the
 * informers' transforms (client-go's TransformFunc), run on every listed
 * and watched object before it is stored.
 *
 * A cache holds every object of its kind that the operator manages, for
 * as long as it runs, so what is dropped here is memory saved per object:
 * managedFields (a real server's record of who set which field, often
 * larger than the rest), kubectl's last-applied copy of a manifest, the
 * pods' specs (their job has the template) and the parts of their status
 * that nothing reads. What a reader needs must stay: pod_view_parse
 * (pod_spec.h) reads no more of a pod than cache_keep_pod keeps, and
 * test_cache_keep checks that it reads the same before and after.
 */
#ifndef MWJ_CACHE_KEEP_H
#define MWJ_CACHE_KEEP_H

#include <cjson/cJSON.h>

/* Jobs: whole (the template makes the pods), less managedFields and
 * kubectl's last-applied-configuration annotation, which repeats the spec. */
void cache_keep_job(cJSON *obj);

/* Pods: metadata less managedFields; of the spec, the containers' names;
 * of the status, the phase, reason, conditions' types and statuses, and
 * each container's name, exit code, and terminated or waiting reason (and
 * the waiting message). */
void cache_keep_pod(cJSON *obj);

/* Services, Secrets, NetworkPolicies: kind, apiVersion and metadata less
 * managedFields, as only that they exist and who owns them matters; a
 * Secret's key material is not kept in memory. */
void cache_keep_metadata(cJSON *obj);

#endif
