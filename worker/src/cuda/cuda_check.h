/* cuda_check.h - every CUDA, cuBLAS and NCCL call checked.
 *
 * A failing call is fatal: it prints "fatal: <file>:<line>: <call>: <the
 * library's own message>" and exits 1, as die() does. A GPU that faults
 * mid-step leaves nothing to recover in-process; the last backup is on
 * the shared volume and the operator's restart policy decides.
 *
 * While a CUDA graph is being captured (cuda_capture_begin), a failure is
 * recorded instead, the first one kept: the caller ends the capture, asks
 * cuda_capture_end, and runs the same work without a graph. A capture
 * fails on some drivers and library versions, and training must not.
 *
 * The NCCL communicator checks its own calls where a failure means a lost
 * peer, not a fault (cuda/comm_nccl.c).
 */
#ifndef MWJ_CUDA_CHECK_H
#define MWJ_CUDA_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#define CUDA_CHECK(call)   cuda_check_at((call), #call, __FILE__, __LINE__)
#define CUBLAS_CHECK(call) cublas_check_at((call), #call, __FILE__, __LINE__)
/* After a kernel launch: the launch's own error (a bad configuration). */
#define KERNEL_CHECK() cuda_check_at(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

#ifdef __cplusplus
extern "C" {
#endif

void cuda_check_at(cudaError_t e, const char *call, const char *file, int line);
void cublas_check_at(cublasStatus_t s, const char *call, const char *file, int line);

/* A capture on this thread: begin starts recording failures instead of
 * dying; end stops, and returns 0, or -1 with the first failure in err
 * (ERR_LEN). */
void cuda_capture_begin(void);
int cuda_capture_end(char *err);

#ifdef __cplusplus
}
#endif

#endif
