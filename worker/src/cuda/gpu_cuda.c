/* gpu_cuda.c - the GPUs this process sees, through the CUDA runtime. */
#include <dlfcn.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "gpu.h"

int gpu_built(void)
{
	return 1;
}

int gpu_count(char *why, size_t len)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess) {
		cudaGetLastError(); /* not sticky: leave no error behind */
		/* Without libcuda the runtime says the driver is too old; say
		 * what is missing instead. */
		void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
		if (!driver)
			driver = dlopen("libcuda.so.1", RTLD_LAZY);
		if (!driver) {
			snprintf(why, len,
			         "no GPU visible: no NVIDIA driver here (libcuda.so.1 not "
			         "found; on Kubernetes, ask for nvidia.com/gpu in the "
			         "worker's resources)");
			return 0;
		}
		dlclose(driver);
		snprintf(why, len, "no GPU visible: cudaGetDeviceCount: %s (%s)",
		         cudaGetErrorString(e), cudaGetErrorName(e));
		return 0;
	}
	if (n == 0)
		snprintf(why, len, "no GPU visible: the CUDA driver found no device");
	return n;
}

void gpu_describe(int dev, char *buf, size_t len)
{
	struct cudaDeviceProp p;
	cudaError_t e = cudaGetDeviceProperties(&p, dev);

	if (e != cudaSuccess) {
		snprintf(buf, len, "GPU %d (cudaGetDeviceProperties: %s)", dev,
		         cudaGetErrorString(e));
		return;
	}
	snprintf(buf, len, "GPU %d: %s, sm_%d%d, %.1f GiB, PCI %04x:%02x:%02x", dev, p.name,
	         p.major, p.minor, (double)p.totalGlobalMem / (1 << 30), p.pciDomainID, p.pciBusID,
	         p.pciDeviceID);
}

int gpu_memory_used(int dev, unsigned long long *bytes)
{
	size_t free_b = 0, total = 0;

	*bytes = 0;
	/* The device is the calling thread's own setting: a scrape's thread
	 * changes no other's. */
	if (cudaSetDevice(dev) != cudaSuccess || cudaMemGetInfo(&free_b, &total) != cudaSuccess) {
		cudaGetLastError(); /* not sticky: leave no error behind */
		return -1;
	}
	*bytes = (unsigned long long)(total - free_b);
	return 0;
}
