/* gemm.h - row-major C = alpha * op(A) @ op(B) + beta * C over cblas_sgemm,
 * divided among the compute threads (parallel.h).
 *
 * Each thread runs a single-threaded cblas_sgemm on its share. The shape
 * picks the split: products too small to share run on the caller; a long
 * M or N is cut into row or column blocks; a product whose M x N is small
 * and whose K is long (a dense layer's forward pass, a convolution's weight
 * gradient) is cut along K into partial products that are then added in a
 * fixed order. So results are deterministic for a given thread count.
 */
#ifndef MWJ_GEMM_H
#define MWJ_GEMM_H

/* ta, tb: 0 for no transpose, 1 for transpose, as in CblasNoTrans/Trans. */
void gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
          int ldb, float beta, float *C, int ldc);

#endif
