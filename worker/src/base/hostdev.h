/* hostdev.h - arithmetic that the host compiler and nvcc both build.
 *
 * A function marked HOSTDEV is compiled for the CPU layers and for the GPU
 * kernels alike (cuda/kernels.cu), so the two compute one definition,
 * rather than two copies that must be kept in step.
 */
#ifndef MWJ_HOSTDEV_H
#define MWJ_HOSTDEV_H

#ifdef __CUDACC__
#define HOSTDEV __host__ __device__ static inline
#else
#define HOSTDEV static inline
#endif

#endif
