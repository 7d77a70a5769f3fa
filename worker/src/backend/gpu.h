/* gpu.h - the GPUs this process sees, and the GPU parts of the worker that
 * exist only in a CUDA build (make CUDA=1).
 *
 * A CPU-only build links gpu_none.c instead of cuda/: there are no GPUs,
 * and asking for one says the binary was built without CUDA. So the
 * training loop never needs an #ifdef.
 */
#ifndef MWJ_GPU_H
#define MWJ_GPU_H

#include <stddef.h>

/* 1 in a CUDA build, 0 otherwise. */
int gpu_built(void);

/* The number of GPUs visible to this process (CUDA_VISIBLE_DEVICES, as a
 * Kubernetes device plugin sets it). 0 when there are none, with the reason
 * in why (len bytes): built without CUDA, no driver, no device; the
 * driver's own message is quoted. */
int gpu_count(char *why, size_t len);

/* One line about GPU dev for the start-up log: its name, compute
 * capability and memory. */
void gpu_describe(int dev, char *buf, size_t len);

/* The memory in use on GPU dev, in bytes: the device's total less what
 * cudaMemGetInfo says is free (what nvidia-smi shows; a pod's GPU is its
 * own). Returns 0, or -1 when it cannot be known (always, in a CPU-only
 * build). Any thread. */
int gpu_memory_used(int dev, unsigned long long *bytes);

#endif
