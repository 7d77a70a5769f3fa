/* sent_pods.c - reading a sent create's pod by its name; see sent_pods.h. */
#include "sent_pods.h"

#include <string.h>

#include "cache_keep.h"
#include "log.h"

static int has_pod(const struct pod_view *pods, int n, const char *name)
{
	for (int k = 0; k < n; k++)
		if (strcmp(pods[k].name, name) == 0)
			return 1;
	return 0;
}

/* Whether reconcile would pass worker i's attempt over for want of
 * knowing its create's fate (reconcile.c: pod_gone, create_unseen). */
static int fate_unknown(const struct job *j, const struct create_outcome *outcomes, int i)
{
	const struct job_status *st = &j->status;
	long attempt = st->attempts[i] < 0 ? 0 : st->attempts[i];
	int seen_gone = st->restarting[i] == CAUSE_NONE && st->attempts[i] >= 0;

	if (seen_gone || st->sent[i] < attempt)
		return 0;
	return outcomes[i].attempt != attempt || outcomes[i].result == CREATE_UNKNOWN;
}

int sent_pods_read(struct kube_api *api, const struct job *j, const struct create_outcome *outcomes,
                   struct pod_view *pods, int *n, char *err)
{
	char name[JOB_NAME_LEN], path[KUBE_PATH_LEN];

	for (int i = 0; i < j->workers && i < j->status.nworkers; i++) {
		struct kube_result res = {0};
		cJSON *pod = NULL;
		if (!fate_unknown(j, outcomes, i))
			continue;
		pod_spec_pod_name(j, i, name);
		if (has_pod(pods, *n, name))
			continue;
		if (kube_path(path, "", "v1", j->ns, "pods", name) < 0)
			return err_set(err, "get pod '%s': path too long", name);
		if (kube_get(api, path, &pod, &res, err) < 0) {
			if (res.status == 404)
				continue;
			return -1;
		}
		cache_keep_pod(pod);
		if (pod_spec_owned(pod, j) && pod_view_parse(&pods[*n], j, pod, err) == 0) {
			log_info("job %s/%s: pod %s exists, though the cache does not show it yet",
			         j->ns, j->name, name);
			(*n)++;
		}
		cJSON_Delete(pod);
	}
	return 0;
}
