/* kernels.h - the GPU's small kernels, launched on a stream: everything
 * of a training step that is not a matrix product (cuBLAS does those).
 *
 * Each is a grid-stride loop over its output, one element per thread (a
 * softmax row, a batch normalisation channel per thread), computed by
 * cuda/elem.h, with no atomics: every sum is taken in a fixed order, so a
 * step's results are the same bits on every run. Launch errors are fatal
 * (cuda_check.h). Pointers are device memory of the stream's device; n and
 * shapes as in the CPU layers; geometries and specs are read when the
 * kernel is launched (they travel by value).
 */
#ifndef MWJ_CUDA_KERNELS_H
#define MWJ_CUDA_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "conv.h"
#include "keras_model.h"
#include "loss.h"
#include "pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- Input --- */

/* x (n) = the pixels p (n) scaled as the dataset scales them (scale: the
 * split's, 0 for / 255). */
void kernel_pixels(float *x, const uint8_t *p, long n, float scale, cudaStream_t s);

/* --- Convolution and dense layers --- */

/* cols (KC, B*OH*OW) from in (B, H, W, C) for geometry g: one row per
 * tap, zeros in the padding, with a bias a last row of ones. */
void kernel_im2col(float *cols, const float *in, int B, const struct conv_geom *g, cudaStream_t s);
/* din (B, H, W, C) = the adjoint of im2col over dcols (KH*KW*C, B*OH*OW). */
void kernel_col2im(float *din, const float *dcols, int B, const struct conv_geom *g,
                   cudaStream_t s);

/* x (rows, cols) += bias (cols) on every row, then max(x, 0) if relu;
 * bias may be NULL. */
void kernel_bias_act(float *x, const float *bias, long rows, int cols, int relu, cudaStream_t s);
/* d = y > 0 ? d : 0 over n. */
void kernel_relu_backward(float *d, const float *y, long n, cudaStream_t s);
/* out (cols) = the column sums of x (rows, cols), each in row order. */
void kernel_col_sums(float *out, const float *x, long rows, int cols, cudaStream_t s);

/* --- Activations (activation.h), over rows x cols, softmax by rows --- */

/* y = act(x); y may be x. */
void kernel_act_forward(float *y, const float *x, long rows, long cols, const struct keras_act *a,
                        cudaStream_t s);
/* dx from dy, the forward output y and its input x (activation.h says
 * which each kind reads); dx may be dy. */
void kernel_act_backward(float *dx, const float *dy, const float *y, const float *x, long rows,
                         long cols, const struct keras_act *a, cudaStream_t s);

/* --- Pooling --- */

/* The seed models' 2x2, stride 2, valid max pool. */
void kernel_maxpool_forward(float *out, const float *in, int B, int H, int W, int C,
                            cudaStream_t s);
void kernel_maxpool_backward(float *din, const float *dout, const float *in, const float *out,
                             int B, int H, int W, int C, int mask_by_input, cudaStream_t s);
/* Any geometry (pool.h); din overwritten. */
void kernel_maxpool_geom_forward(float *out, const float *in, int B, const struct pool_geom *g,
                                 cudaStream_t s);
void kernel_maxpool_geom_backward(float *din, const float *dout, const float *in, const float *out,
                                  int B, const struct pool_geom *g, cudaStream_t s);
void kernel_avgpool_forward(float *out, const float *in, int B, const struct pool_geom *g,
                            cudaStream_t s);
void kernel_avgpool_backward(float *din, const float *dout, int B, const struct pool_geom *g,
                             cudaStream_t s);
/* in (B, HW, C) -> out (B, C), and back. */
void kernel_global_avgpool_forward(float *out, const float *in, int B, int HW, int C,
                                   cudaStream_t s);
void kernel_global_avgpool_backward(float *din, const float *dout, int B, int HW, int C,
                                    cudaStream_t s);

/* --- Dropout (dropout.h) --- */

/* out (B, len) = in with the mask of key for examples at stream
 * positions *pos0 + b, read from device memory when the kernel runs (a
 * step captured in a CUDA graph takes each step's own); the backward pass
 * runs it on the gradient. rate in (0, 1]; scale: dropout_scale(rate).
 * out may be in. */
void kernel_dropout(float *out, const float *in, int B, long len, uint64_t key,
                    const uint64_t *pos0, float rate, float scale, cudaStream_t s);

/* --- Batch normalisation (batchnorm.h) over x (N, C) --- */

/* Training: y from the batch's statistics; mean and invstd (C) kept for
 * the backward pass, stats (2, C) the batch's mean and biased variance
 * (in the gradient buffer, for the all-reduce), s and t (C) scratch.
 * gamma and beta may be NULL. */
void kernel_batchnorm_train(float *y, float *mean, float *invstd, float *stats, float *s_,
                            float *t_, const float *x, const float *gamma, const float *beta,
                            long N, int C, float eps, cudaStream_t s);
/* Inference: y from the moving statistics; y may be x. */
void kernel_batchnorm_infer(float *y, float *s_, float *t_, const float *x,
                            const float *moving_mean, const float *moving_var, const float *gamma,
                            const float *beta, long N, int C, float eps, cudaStream_t s);
/* The gradients: dgamma and dbeta where not NULL (overwritten), and dx
 * unless NULL, with a, b, k (C) scratch. */
void kernel_batchnorm_backward(float *dx, float *dgamma, float *dbeta, float *a, float *b, float *k,
                               const float *dy, const float *x, const float *mean,
                               const float *invstd, const float *gamma, long N, int C,
                               cudaStream_t s);
/* The moving statistics (C each) moved toward stats (2, C) summed over
 * world replicas; keep, take: batchnorm_momentum's. */
void kernel_batchnorm_moving(float *moving_mean, float *moving_var, const float *stats, int C,
                             int world, float keep, float take, cudaStream_t s);

/* --- The loss (loss.h) --- */

/* The loss of z and the metrics of p (B, K) against y (B, T), and if dz
 * is not NULL the gradient of scale * loss with respect to z. Writes
 * sums[0] = the summed loss, sums[1] = B, sums[2 + i] = metric i's sum
 * (METRICS_MAX of them, unused ones 0): metrics_to_words' layout, doubles
 * summed in a fixed tree order by one block. */
void kernel_loss(float *dz, double *sums, const float *z, const float *p, const float *y, int B,
                 const struct loss_spec *spec, float scale, cudaStream_t s);

/* --- The optimizers --- */

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
