/* batchnorm.h - Keras' BatchNormalization over the last axis (channels
 * last): x (N, C) is N rows of C channels, N = batch x H x W after a
 * convolution, or the batch after a dense layer.
 *
 * Keras 3 (keras/src/layers/normalization/batch_normalization.py, call)
 * under TensorFlow is the reference:
 *   training   mean, var = ops.moments(x) over the N rows: the batch mean
 *              and the biased variance (divided by N; tf.nn.moments);
 *              y = gamma (x - mean) / sqrt(var + eps) + beta, with the
 *              gradient flowing through mean and var;
 *              moving_mean = moving_mean * momentum + mean * (1 - momentum),
 *              moving_var  = moving_var * momentum + var * (1 - momentum),
 *              with that same biased variance;
 *   inference  y = gamma (x - moving_mean) / sqrt(moving_var + eps) + beta.
 * gamma is absent (1) when scale is false, beta (0) when center is false.
 * y is formed as tf.nn.batch_normalization forms it: s = gamma * invstd,
 * t = beta - mean * s, y = x * s + t.
 *
 * Numbers. The statistics are sums in double: sum x and sum x^2, from
 * which mean = sum / n and var = max(sum x^2 / n - mean^2, 0), as Keras'
 * synchronized moments do. In double the cancellation is harmless: var's
 * relative error is about 1e-16 (mean / std)^2 sqrt(N), below a float's
 * resolution for any |mean| / std under a few hundred. Each
 * channel's sum runs over the rows in order, on one thread (the threads
 * share channels, never rows), so every result is the same bits for any
 * number of compute threads.
 *
 * A synchronized variant (Keras' synchronized=True: statistics over the
 * global batch) splits each pass where the sums are complete:
 *   forward   batchnorm_stat_sums -> all-reduce the (2, C) sums and the
 *             row count -> batchnorm_stats -> batchnorm_normalize
 *   backward  batchnorm_grad_sums -> batchnorm_param_grads (the local
 *             sums: the gradient all-reduce adds the workers' dgamma and
 *             dbeta) -> all-reduce the sums -> batchnorm_input_grad with
 *             the global count
 * (model.c runs these for a layer that says "synchronized" in a pass with
 * other workers, its sums travelling through reducer_sum_now.)
 * batchnorm_forward_train and batchnorm_backward are the two passes on one
 * worker, with the same arithmetic: the same bits as the split passes with
 * no other worker.
 *
 * Shapes: x, y, dy, dx (N, C); every other array (C); sums (2, C), row 0
 * the first sum named, row 1 the second.
 */
#ifndef MWJ_BATCHNORM_H
#define MWJ_BATCHNORM_H

#include <math.h>
#include <stddef.h>

#include "hostdev.h"

/* The per-channel and per-element arithmetic, shared with the GPU
 * kernels (cuda/elem.h). */

/* The batch mean and biased variance from sum x, sum x^2 over count rows. */
HOSTDEV void batchnorm_moments(double *mean, double *var, double sum, double sumsq, double count)
{
	double m = sum / count, v = sumsq / count - m * m;

	*mean = m;
	*var = v > 0.0 ? v : 0.0;
}

/* 1 / sqrt(var + eps), in double and rounded once. */
HOSTDEV float batchnorm_invstd(double var, float eps)
{
	return (float)(1.0 / sqrt(var + (double)eps));
}

/* y = x * s + t for a channel; gamma 1 and beta 0 where absent give the
 * same bits as no parameter. */
HOSTDEV void batchnorm_coeffs(float *s, float *t, float mean, float invstd, float gamma, float beta)
{
	*s = gamma * invstd;
	*t = beta - mean * *s;
}

HOSTDEV float batchnorm_apply(float x, float s, float t)
{
	return x * s + t;
}

/* dx = a (dy - b - (x - mean) k), the gradient through the batch
 * statistics: a = gamma invstd, b = sum dy / count,
 * k = invstd * sum (dy xhat) / count, xhat = (x - mean) invstd. */
HOSTDEV void batchnorm_grad_coeffs(float *a, float *b, float *k, float invstd, float gamma,
                                   double sum_dy, double sum_dy_xhat, double count)
{
	*a = gamma * invstd;
	*b = (float)(sum_dy / count);
	*k = (float)((double)invstd * sum_dy_xhat / count);
}

HOSTDEV float batchnorm_grad(float dy, float x, float mean, float a, float b, float k)
{
	return a * (dy - b - (x - mean) * k);
}

/* The factors of the moving statistics' update: momentum and 1 - momentum
 * taken in double and rounded to float (Python's floats become float32
 * constants). */
HOSTDEV void batchnorm_momentum(float *keep, float *take, double momentum)
{
	*keep = (float)momentum;
	*take = (float)(1.0 - momentum);
}

/* moving * keep + stat * take, in float as Keras does it. */
HOSTDEV float batchnorm_moving(float moving, float stat, float keep, float take)
{
	return moving * keep + stat * take;
}

/* A batch statistic summed over world workers (or replicas), as the mean
 * the moving statistics move toward: the sum itself for one. */
HOSTDEV float batchnorm_mean_over(float sum, int world)
{
	return world > 1 ? sum / (float)world : sum;
}

#ifdef __cplusplus
extern "C" {
#endif

/* One worker
 * All share the work among the compute threads when N * C is large.
 * gamma and beta may be NULL (scale or center false). */

/* Normalises x with the batch's statistics into y, and saves them: mean,
 * invstd for the backward pass, var (the biased variance, for
 * batchnorm_update_moving; may be NULL). y must not be x if the backward
 * pass will run (it reads x). */
void batchnorm_forward_train(float *y, float *mean, float *var, float *invstd, const float *x,
                             const float *gamma, const float *beta, size_t N, int C, float eps);

/* Normalises x with the moving statistics into y; y may be x. */
void batchnorm_forward_infer(float *y, const float *x, const float *gamma, const float *beta,
                             const float *moving_mean, const float *moving_var, size_t N, int C,
                             float eps);

/* The gradients of the training pass: dx (dx may be dy), and dgamma =
 * sum dy xhat, dbeta = sum dy, overwritten; dgamma and dbeta may be NULL
 * where the parameter is absent (gamma NULL counts as 1). mean and invstd
 * are the forward pass's. */
void batchnorm_backward(float *dx, float *dgamma, float *dbeta, const float *dy, const float *x,
                        const float *mean, const float *invstd, const float *gamma, size_t N,
                        int C);

/* moving = moving * momentum + stat * (1 - momentum), in float as Keras
 * does it, with momentum and 1 - momentum taken in double and rounded to
 * float (Python's floats become float32 constants). var is the biased
 * batch variance batchnorm_forward_train gives. */
void batchnorm_update_moving(float *moving_mean, float *moving_var, const float *mean,
                             const float *var, int C, double momentum);

/* The split passes, for a synchronized variant (see the top) */

/* sums (2, C): sum x, sum x^2 over the N rows, overwritten. */
void batchnorm_stat_sums(double *sums, const float *x, size_t N, int C);

/* mean, var (may be NULL), invstd from sums over count rows (count > 0). */
void batchnorm_stats(float *mean, float *var, float *invstd, const double *sums, double count,
                     int C, float eps);

/* y = gamma (x - mean) invstd + beta; y may be x. */
void batchnorm_normalize(float *y, const float *x, const float *mean, const float *invstd,
                         const float *gamma, const float *beta, size_t N, int C);

/* sums (2, C): sum dy, sum dy xhat over the N rows, overwritten, with
 * xhat = (x - mean) invstd in double. */
void batchnorm_grad_sums(double *sums, const float *dy, const float *x, const float *mean,
                         const float *invstd, size_t N, int C);

/* dbeta = sums row 0, dgamma = sums row 1, rounded to float; either may
 * be NULL. */
void batchnorm_param_grads(float *dgamma, float *dbeta, const double *sums, int C);

/* dx from dy and the sums of batchnorm_grad_sums over count rows (the
 * global ones in a synchronized variant); dx may be dy. */
void batchnorm_input_grad(float *dx, const float *dy, const float *x, const float *mean,
                          const float *invstd, const float *gamma, const double *sums, double count,
                          size_t N, int C);

#ifdef __cplusplus
}
#endif

#endif
