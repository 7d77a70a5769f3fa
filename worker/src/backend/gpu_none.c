/* gpu_none.c - what a CPU-only build (no CUDA=1) says about GPUs: there
 * are none it could use. */
#include <stdio.h>

#include "backend.h"
#include "comm_nccl.h"
#include "err.h"
#include "gpu.h"

#define NO_CUDA                                                                                    \
	"this mwj-worker was built without CUDA (build it with make CUDA=1, or use the "           \
	"worker-cuda image)"

int gpu_built(void)
{
	return 0;
}

int gpu_count(char *why, size_t len)
{
	snprintf(why, len, "%s", NO_CUDA);
	return 0;
}

void gpu_describe(int dev, char *buf, size_t len)
{
	snprintf(buf, len, "GPU %d: %s", dev, NO_CUDA);
}

int gpu_memory_used(int dev, unsigned long long *bytes)
{
	(void)dev;
	*bytes = 0;
	return -1;
}

struct backend *backend_new_cuda(struct model *m, const struct loss_spec *loss, struct optimizer *o,
                                 struct comm *c, struct dataset_stream *s, int batch, int replicas,
                                 int collective_ms, char *err)
{
	(void)m, (void)loss, (void)o, (void)c, (void)s, (void)batch, (void)replicas,
	    (void)collective_ms;
	err_set(err, "%s", NO_CUDA);
	return NULL;
}

int backend_cuda_supports(const struct model *m, const struct keras_model *km,
                          const struct loss_spec *loss, int replicas, int workers, char *err)
{
	(void)m, (void)km, (void)loss, (void)replicas, (void)workers;
	return err_set(err, "%s", NO_CUDA);
}

int comm_init_nccl(struct comm *c, struct comm *inner, int replicas, int init_ms, int collective_ms,
                   char *err)
{
	(void)c, (void)inner, (void)replicas, (void)init_ms, (void)collective_ms;
	err_set(err, "%s", NO_CUDA);
	return COMM_SETUP_PERMANENT;
}
