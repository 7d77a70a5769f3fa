/* cuda_check.c - fatal CUDA and cuBLAS failures, and failures recorded
 * while a graph is captured. */
#include "cuda_check.h"

#include <stdio.h>

#include "err.h"

/* One capture at a time per thread; the training loop captures on its own
 * thread only. */
static _Thread_local struct {
	int active, failed;
	char why[ERR_LEN];
} capture;

static void fail(const char *call, const char *what, const char *file, int line)
{
	if (capture.active) {
		if (!capture.failed)
			snprintf(capture.why, sizeof(capture.why), "%s:%d: %s: %s", file, line,
			         call, what);
		capture.failed = 1;
		return;
	}
	die_at(file, line, "%s: %s", call, what);
}

void cuda_check_at(cudaError_t e, const char *call, const char *file, int line)
{
	char what[256];

	if (e == cudaSuccess)
		return;
	snprintf(what, sizeof(what), "%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
	fail(call, what, file, line);
}

void cublas_check_at(cublasStatus_t s, const char *call, const char *file, int line)
{
	char what[256];

	if (s == CUBLAS_STATUS_SUCCESS)
		return;
	snprintf(what, sizeof(what), "%s (%s)", cublasGetStatusString(s), cublasGetStatusName(s));
	fail(call, what, file, line);
}

void cuda_capture_begin(void)
{
	capture.active = 1;
	capture.failed = 0;
	capture.why[0] = '\0';
}

int cuda_capture_end(char *err)
{
	capture.active = 0;
	if (!capture.failed)
		return 0;
	return err_set(err, "%s", capture.why);
}
