/* gemm.c - splitting one sgemm among the compute threads. */
#include "gemm.h"

#include <cblas.h>
#include <string.h>

#include "parallel.h"
#include "simd.h"

#define KSPLIT_MAX_MN (1 << 16) /* partial products per thread, in floats */
#define ALIGN         16        /* block boundaries on cache lines of floats */
/* A product with a tiny output and a long K (a convolution's weight
 * gradient: 10 x 32 over 43264) runs about twice as fast in K blocks of
 * this size, accumulated, as in one call, where OpenBLAS' panels spill out
 * of L2. */
#define KBLOCK        1024
#define KBLOCK_MAX_MN 1024

/* Partial products of a K split, one per thread but the first. */
static float partials[PARALLEL_MAX_THREADS][KSPLIT_MAX_MN];

struct job {
	int ta, tb, M, N, K, lda, ldb, ldc;
	float alpha, beta;
	const float *A, *B;
	float *C;
	char axis; /* 'm', 'n' or 'k' */
};

/* Element (row, col) of op(X) sits at X[row * ld + col], or transposed. */
static const float *at(const float *X, int trans, int ld, int row, int col)
{
	return trans ? X + (size_t)col * ld + row : X + (size_t)row * ld + col;
}

static void sgemm(const struct job *j, int M, int N, int K, const float *A, const float *B,
                  float beta, float *C, int ldc)
{
	int kb = (long)M * N <= KBLOCK_MAX_MN && K > KBLOCK ? KBLOCK : K;

	if (M == 0 || N == 0)
		return;
	for (int k0 = 0; k0 == 0 || k0 < K; k0 += kb) {
		int nk = K - k0 < kb ? K - k0 : kb;
		cblas_sgemm(CblasRowMajor, j->ta ? CblasTrans : CblasNoTrans,
		            j->tb ? CblasTrans : CblasNoTrans, M, N, nk, j->alpha,
		            at(A, j->ta, j->lda, 0, k0), j->lda, at(B, j->tb, j->ldb, k0, 0),
		            j->ldb, k0 ? 1.0f : beta, C, ldc);
	}
}

static void run_part(void *ctx, int part, int parts)
{
	const struct job *j = ctx;
	size_t lo, hi;

	switch (j->axis) {
	case 'm':
		parallel_range((size_t)j->M, part, parts, ALIGN, &lo, &hi);
		sgemm(j, (int)(hi - lo), j->N, j->K, at(j->A, j->ta, j->lda, (int)lo, 0), j->B,
		      j->beta, j->C + lo * j->ldc, j->ldc);
		break;
	case 'n':
		parallel_range((size_t)j->N, part, parts, ALIGN, &lo, &hi);
		sgemm(j, j->M, (int)(hi - lo), j->K, j->A, at(j->B, j->tb, j->ldb, 0, (int)lo),
		      j->beta, j->C + lo, j->ldc);
		break;
	default: /* 'k': part 0 accumulates into C, the others into partials */
		parallel_range((size_t)j->K, part, parts, ALIGN, &lo, &hi);
		if (part == 0)
			sgemm(j, j->M, j->N, (int)(hi - lo), j->A, j->B, j->beta, j->C, j->ldc);
		else if (hi > lo)
			sgemm(j, j->M, j->N, (int)(hi - lo), at(j->A, j->ta, j->lda, 0, (int)lo),
			      at(j->B, j->tb, j->ldb, (int)lo, 0), 0.0f, partials[part], j->N);
		else
			memset(partials[part], 0, sizeof(float) * j->M * j->N);
		break;
	}
}

SIMD_CLONES
static void add_partial(float *restrict C, int ldc, const float *restrict P, int M, int N)
{
	for (int i = 0; i < M; i++)
		for (int k = 0; k < N; k++)
			C[(size_t)i * ldc + k] += P[(size_t)i * N + k];
}

void gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
          int ldb, float beta, float *C, int ldc)
{
	int threads = parallel_threads();
	struct job j = {ta, tb, M, N, K, lda, ldb, ldc, alpha, beta, A, B, C, 'm'};
	double flops = 2.0 * M * N * K;

	if (threads == 1 || flops < PARALLEL_MIN_FLOPS) {
		sgemm(&j, M, N, K, A, B, beta, C, ldc);
		return;
	}
	if (K >= M && K >= N && (long)M * N <= KSPLIT_MAX_MN)
		j.axis = 'k';
	else
		j.axis = N >= M ? 'n' : 'm';
	parallel_run(run_part, &j);
	if (j.axis == 'k')
		for (int p = 1; p < threads; p++)
			add_partial(C, ldc, partials[p], M, N);
}
