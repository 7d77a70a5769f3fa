/* comm.c - the communicator interface and the local (one worker) backend. */
#include "comm.h"

#include <string.h>

#include "err.h"
#include "worker_metrics.h"

static int local_allreduce(struct comm *c, float *base, const struct grad_slice *pieces,
                           int npieces, char *err)
{
	(void)c, (void)base, (void)pieces, (void)npieces, (void)err;
	return 0;
}

static int local_allreduce_f64(struct comm *c, double *v, size_t n, char *err)
{
	(void)c, (void)v, (void)n, (void)err;
	return 0;
}

static int local_broadcast(struct comm *c, void *buf, size_t bytes, int root, char *err)
{
	(void)c, (void)buf, (void)bytes, (void)root, (void)err;
	return 0;
}

static void local_leave(struct comm *c)
{
	(void)c;
}

static int local_rejoin(struct comm *c, int timeout_ms, char *err)
{
	(void)c, (void)timeout_ms, (void)err;
	return 0;
}

static void local_release(struct comm *c)
{
	(void)c;
}

static const struct comm_ops LOCAL_OPS = {
    "local",     local_allreduce, local_allreduce_f64, local_broadcast,
    local_leave, local_rejoin,    local_release,       NULL,
    NULL,
};

void comm_init_local(struct comm *c)
{
	*c = (struct comm){&LOCAL_OPS, 1, 0, NULL, NULL};
}

void comm_release(struct comm *c)
{
	if (c && c->ops)
		c->ops->release(c);
	if (c)
		memset(c, 0, sizeof(*c));
}

/* Whether c's all-reduces are counted: a world of one sums nothing. */
static int counted(const struct comm *c)
{
	return c->metrics != NULL && c->world > 1;
}

int comm_allreduce(struct comm *c, float *base, const struct grad_slice *pieces, int npieces,
                   char *err)
{
	size_t elems = 0;
	long long t0;
	int rc;

	if (!counted(c))
		return c->ops->allreduce(c, base, pieces, npieces, err);
	for (int i = 0; i < npieces; i++)
		elems += pieces[i].rows * pieces[i].cols;
	t0 = worker_metrics_now_us();
	rc = c->ops->allreduce(c, base, pieces, npieces, err);
	if (rc == 0)
		worker_metrics_allreduce(c->metrics, elems * sizeof(float),
		                         worker_metrics_now_us() - t0);
	return rc;
}

int comm_allreduce_f64(struct comm *c, double *v, size_t n, char *err)
{
	long long t0;
	int rc;

	if (!counted(c))
		return c->ops->allreduce_f64(c, v, n, err);
	t0 = worker_metrics_now_us();
	rc = c->ops->allreduce_f64(c, v, n, err);
	if (rc == 0)
		worker_metrics_allreduce(c->metrics, n * sizeof(double),
		                         worker_metrics_now_us() - t0);
	return rc;
}

int comm_broadcast(struct comm *c, void *buf, size_t bytes, int root, char *err)
{
	return c->ops->broadcast(c, buf, bytes, root, err);
}

void comm_leave(struct comm *c)
{
	c->ops->leave(c);
}

int comm_rejoin(struct comm *c, int timeout_ms, char *err)
{
	return c->ops->rejoin(c, timeout_ms, err);
}

int comm_has_device(const struct comm *c)
{
	return c->ops && c->ops->allreduce_device != NULL;
}

int comm_allreduce_device(struct comm *c, void *const *bufs, size_t n, enum comm_dtype t,
                          void *const *streams, char *err)
{
	int rc;

	if (!comm_has_device(c))
		return err_set(err, "the %s communicator has no device collectives", comm_name(c));
	rc = c->ops->allreduce_device(c, bufs, n, t, streams, err);
	if (rc == 0 && c->metrics != NULL)
		worker_metrics_allreduce(c->metrics,
		                         n * (t == COMM_F64 ? sizeof(double) : sizeof(float)), 0);
	return rc;
}

int comm_device_status(struct comm *c, char *err)
{
	return c->ops && c->ops->device_status ? c->ops->device_status(c, err) : 0;
}

const char *comm_name(const struct comm *c)
{
	return c->ops ? c->ops->name : "none";
}
