/* device.c - resolving --device, --collective and --gpus. */
#include "device.h"

#include <string.h>

#include "err.h"

static const char *const DEVICE_NAMES[] = {"auto", "cpu", "cuda"};
static const char *const COLLECTIVE_NAMES[] = {"auto", "ring", "nccl"};

static int lookup(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

int device_parse(const char *s, enum device_kind *out)
{
	int i = lookup(s, DEVICE_NAMES, 3);

	if (i < 0)
		return -1;
	*out = (enum device_kind)i;
	return 0;
}

int collective_parse(const char *s, enum collective_kind *out)
{
	int i = lookup(s, COLLECTIVE_NAMES, 3);

	if (i < 0)
		return -1;
	*out = (enum collective_kind)i;
	return 0;
}

const char *device_name(enum device_kind d)
{
	return DEVICE_NAMES[d];
}

const char *collective_name(enum collective_kind c)
{
	return COLLECTIVE_NAMES[c];
}

int device_resolve(enum device_kind want_dev, enum collective_kind want_coll, int gpus_wanted,
                   int workers, int gpus, const char *why_none, enum device_kind *dev,
                   enum collective_kind *coll, int *replicas, char *err)
{
	enum device_kind d = want_dev;

	if (d == DEVICE_AUTO)
		d = gpus > 0 ? DEVICE_CUDA : DEVICE_CPU;
	if (d == DEVICE_CUDA && gpus == 0)
		return err_set(err, "--device cuda: %s",
		               why_none && why_none[0] ? why_none : "no GPU");
	if (d == DEVICE_CPU && want_coll == COLLECTIVE_NCCL)
		return err_set(err, "--collective nccl sums GPU buffers and needs --device cuda "
		                    "(this worker runs on the CPU)");
	if (d == DEVICE_CPU && gpus_wanted > 0)
		return err_set(err, "--gpus %d needs --device cuda (this worker runs on the CPU)",
		               gpus_wanted);
	if (d == DEVICE_CUDA && gpus_wanted > gpus)
		return err_set(err, "--gpus %d: only %d GPU(s) visible", gpus_wanted, gpus);
	*dev = d;
	*replicas = d == DEVICE_CUDA ? (gpus_wanted > 0 ? gpus_wanted : gpus) : 0;
	if (d == DEVICE_CUDA && want_coll == COLLECTIVE_RING && *replicas > 1)
		return err_set(err,
		               "--collective ring sums one GPU per worker; with %d GPUs use "
		               "--collective nccl (or --gpus 1)",
		               *replicas);
	if (want_coll != COLLECTIVE_AUTO)
		*coll = want_coll;
	else if (d == DEVICE_CUDA && workers * *replicas > 1)
		*coll = COLLECTIVE_NCCL;
	else
		*coll = COLLECTIVE_RING;
	return 0;
}
