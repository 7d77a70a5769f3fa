/* kernels.h - the GPU's small kernels, launched on a stream: everything
 * of a training step that is not a matrix product (cuBLAS does those).
 *
 * Each is a grid-stride loop over its output, one element per thread,
 * computed by cuda/elem.h, with no atomics: every sum is taken in a fixed
 * order, so a step's results are the same bits on every run. Launch errors
 * are fatal (cuda_check.h). Pointers are device memory of the stream's
 * device; n and shapes as in the CPU layers.
 */
#ifndef MWJ_CUDA_KERNELS_H
#define MWJ_CUDA_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* x (n) = the pixels p (n) scaled to [0, 1]. */
void kernel_pixels(float *x, const uint8_t *p, long n, cudaStream_t s);

/* cols (KH*KW*C + 1, B*OH*OW) from in (B, H, W, C); the last row ones. */
void kernel_im2col(float *cols, const float *in, int B, int H, int W, int C, int KH, int KW,
                   cudaStream_t s);
/* din (B, H, W, C) = the adjoint of im2col over dcols (KH*KW*C, B*OH*OW). */
void kernel_col2im(float *din, const float *dcols, int B, int H, int W, int C, int KH, int KW,
                   cudaStream_t s);

/* x (rows, cols) += bias (cols) on every row, then max(x, 0) if relu;
 * bias may be NULL. */
void kernel_bias_act(float *x, const float *bias, long rows, int cols, int relu, cudaStream_t s);
/* d = y > 0 ? d : 0 over n. */
void kernel_relu_backward(float *d, const float *y, long n, cudaStream_t s);

void kernel_maxpool_forward(float *out, const float *in, int B, int H, int W, int C,
                            cudaStream_t s);
void kernel_maxpool_backward(float *din, const float *dout, const float *in, const float *out,
                             int B, int H, int W, int C, int mask_by_input, cudaStream_t s);

/* Softmax cross-entropy over logits (B, K) and labels (B), and if dlogits
 * is not NULL its gradient scaled by scale. Writes sums[0] = the summed
 * loss, sums[1] = the correct count, sums[2] = B (doubles), summed in a
 * fixed tree order by one block. */
void kernel_xent(float *dlogits, double *sums, const float *logits, const float *labels, int B,
                 int K, float scale, cudaStream_t s);

/* The optimizers over n parameters (optimizer.h's rules, elem.h's
 * arithmetic), each preceded by Keras' weight decay where wd is not 0.
 * The state slots are device copies of optimizer.h's; mom and a may be
 * NULL where the configuration has no such slot. Adam's step size *alpha
 * is read from device memory, where the caller copies the one the host
 * computed (optimizer_begin_step), so that a step captured in a CUDA graph
 * takes each step's own; the other scalars are the same every step. */
void kernel_sgd(float *w, const float *g, long n, float lr, float wd, cudaStream_t s);
void kernel_sgd_momentum(float *w, float *v, const float *g, long n, float lr, float momentum,
                         int nesterov, float wd, cudaStream_t s);
/* c1, c2: 1 - beta_1, 1 - beta_2; Adam and AdamW. */
void kernel_adam(float *w, float *m, float *v, const float *g, long n, const float *alpha, float c1,
                 float c2, float eps, float lr, float wd, cudaStream_t s);
void kernel_adagrad(float *w, float *acc, const float *g, long n, float lr, float eps, float wd,
                    cudaStream_t s);
/* c_rho: 1 - rho. */
void kernel_rmsprop(float *w, float *v, float *mom, float *a, const float *g, long n, float lr,
                    float rho, float c_rho, float momentum, float eps, float wd, cudaStream_t s);

/* p[0..n) = v. */
void kernel_fill(float *p, float v, long n, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
