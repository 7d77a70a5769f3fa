/* sent_pods.h - a worker's pod whose create was sent but that the cache
 * does not show, read by its name before reconcile decides about it.
 *
 * reconcile passes over an attempt whose create was sent
 * (status.sentAttempts), whose pod is not there, and of whose fate this
 * replica knows nothing (create_outcomes.h): so that no attempt is ever
 * created twice, the next one is created instead. A replica that has just
 * become the leader knows nothing of its predecessor's creates, and its
 * cache may not show yet a pod the predecessor made a moment ago: it would
 * replace a healthy pod. Pod names are deterministic, so such a pod is
 * read by its name first; only one that is not there is passed over.
 */
#ifndef MWJ_SENT_PODS_H
#define MWJ_SENT_PODS_H

#include "kube_api.h"
#include "reconcile.h"

/* For every worker of j in that case (no pod named as its pod among
 * pods[0..*n), a create sent at its attempt, nothing known of it in
 * outcomes), GETs the pod by name; one there, owned by the job, is added
 * to pods (which has room for j->workers more) as pod_view_parse reads
 * it. Returns 0, or -1 with err when a read failed otherwise than 404
 * (the pass is retried). */
int sent_pods_read(struct kube_api *api, const struct job *j, const struct create_outcome *outcomes,
                   struct pod_view *pods, int *n, char *err);

#endif
