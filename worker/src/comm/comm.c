/* comm.c - the communicator interface and the local (one worker) backend. */
#include "comm.h"

#include <string.h>

#include "err.h"

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
	*c = (struct comm){&LOCAL_OPS, 1, 0, NULL};
}

void comm_release(struct comm *c)
{
	if (c && c->ops)
		c->ops->release(c);
	if (c)
		memset(c, 0, sizeof(*c));
}

int comm_allreduce(struct comm *c, float *base, const struct grad_slice *pieces, int npieces,
                   char *err)
{
	return c->ops->allreduce(c, base, pieces, npieces, err);
}

int comm_allreduce_f64(struct comm *c, double *v, size_t n, char *err)
{
	return c->ops->allreduce_f64(c, v, n, err);
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
	if (!comm_has_device(c))
		return err_set(err, "the %s communicator has no device collectives", comm_name(c));
	return c->ops->allreduce_device(c, bufs, n, t, streams, err);
}

int comm_device_status(struct comm *c, char *err)
{
	return c->ops && c->ops->device_status ? c->ops->device_status(c, err) : 0;
}

const char *comm_name(const struct comm *c)
{
	return c->ops ? c->ops->name : "none";
}
