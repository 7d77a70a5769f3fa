/* report_world.h - what the tests of the chiefs' reports share: a job
 * "ml/mnist" (uid job-uid), its pods as the cache holds them, and an API
 * server that answers TokenReviews as the real one does.
 *
 * Pods: mnist-worker-0 (uid pod-0, the chief), mnist-worker-1 (pod-1),
 * and other-worker-0 (pod-9), the chief of another job (uid other-uid).
 * Tokens: "chief", "worker1" and "other" are their pods' tokens for the
 * audience mwj-operator; "apiserver" is valid for the API server's own
 * audience only; any other is refused as pkg/serviceaccount's validator
 * refuses a token it cannot verify.
 */
#ifndef MWJ_REPORT_WORLD_H
#define MWJ_REPORT_WORLD_H

#include <cjson/cJSON.h>

#include "kube_api.h"

#define REPORT_WORLD_PATH "/apis/training.mwj.io/v1/namespaces/ml/multiworkerjobs/mnist/status"
#define REPORT_WORLD_JOB                                                                           \
	"{'apiVersion': 'training.mwj.io/v1', 'kind': 'MultiWorkerJob', 'metadata': {'name': "     \
	"'mnist', 'namespace': 'ml', 'uid': 'job-uid', 'generation': 1}, 'spec': {'workers': "     \
	"2, 'template': {'spec': {'containers': [{'name': 'worker', 'image': 'w:1'}]}}}}"

/* A running pod of namespace ml named name, uid uid, worker index, whose
 * controller is the MultiWorkerJob of uid owner_uid. The caller deletes
 * it. */
cJSON *report_world_pod(const char *name, const char *uid, const char *index,
                        const char *owner_uid);

/* The job, when ns/name is ml/mnist; else NULL. ctx is unused. */
cJSON *report_world_job(void *ctx, const char *ns, const char *name);

/* One of the pods above by its name; else NULL. ctx is unused. */
cJSON *report_world_pods(void *ctx, const char *ns, const char *name);

/* The API server: api's backend answers TokenReviews (counted in
 * reviews); while down, every request fails as a refused connection. */
struct report_world_api {
	struct kube_api api;
	int reviews;
	int down;
};

void report_world_api_init(struct report_world_api *a);

#endif
