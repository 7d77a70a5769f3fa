/* activation.h - the activations of Keras layers, forward and backward,
 * over a tensor of rows x cols values.
 *
 * Keras 3 under TensorFlow is the reference (keras/src/activations/
 * activations.py, which calls keras/src/backend/tensorflow/nn.py, which
 * calls tf.nn):
 *   linear      y = x
 *   relu        y = x > 0 ? x : 0
 *   sigmoid     y = 1 / (1 + exp(-x))
 *   tanh        y = tanh(x)
 *   softmax     over the last axis (cols), with each row's maximum
 *               subtracted first: y = exp(x - max) / sum(exp(x - max)),
 *               the sum in double
 *   gelu        exact (Keras' default approximate=False):
 *               y = 0.5 x (1 + erf(x / sqrt(2)));
 *               approximate: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *   leaky_relu  y = x > 0 ? x : negative_slope * x; x == 0 takes the
 *               slope branch and its gradient is negative_slope there, as
 *               TensorFlow's LeakyRelu and LeakyReluGrad kernels select on
 *               features > 0 (JAX's jnp.where(x >= 0, ...) differs only
 *               in that gradient at exactly 0)
 * Backward passes take the gradients TensorFlow registers for these ops:
 * sigmoid dy y (1 - y), tanh dy (1 - y^2), softmax y (dy - sum(dy y)),
 * relu and leaky_relu selected on y > 0 (the same as x > 0 for any
 * negative_slope >= 0), gelu the derivative of its formula.
 *
 * Every value depends on its own element only (softmax: on its row only),
 * so results are the same bits for any number of compute threads.
 */
#ifndef MWJ_ACTIVATION_H
#define MWJ_ACTIVATION_H

#include <stddef.h>

#include "keras_model.h"

/* The ReLU the seed models fuse into their layers (conv.c, dense.c). */

/* x = max(x, 0), shared among the compute threads when n is large. */
void relu_forward(float *x, size_t n);

/* d = y > 0 ? d : 0, where y is the ReLU's output (so no input is kept),
 * shared among the compute threads when n is large. */
void relu_backward(float *d, const float *y, size_t n);

/* The same two on the calling thread only, for use inside a compute part
 * (parallel.h), where a nested split is not allowed. */
void relu_forward_serial(float *x, size_t n);
void relu_backward_serial(float *d, const float *y, size_t n);

/* Any activation, as a layer's file names it (keras_model.h: kind,
 * negative_slope for leaky_relu, approximate for gelu). */

/* y (rows, cols) = act(x (rows, cols)). y may be x (in place) for every
 * kind; softmax normalises each row of cols values. Shared among the
 * compute threads when rows * cols is large. */
void act_forward(float *y, const float *x, size_t rows, size_t cols, const struct keras_act *a);

/* dx (rows, cols) = dL/dx from dy = dL/dy, the forward output y and its
 * input x. dx may be dy. x is read only where act_backward_needs_input
 * says so, and may be NULL otherwise; y is read by the other kinds but
 * linear, and may be NULL for linear and gelu. Shared among the compute
 * threads when rows * cols is large. */
void act_backward(float *dx, const float *dy, const float *y, const float *x, size_t rows,
                  size_t cols, const struct keras_act *a);

/* 1 if act_backward needs the forward input x, so the caller must keep
 * it (gelu, either form; leaky_relu with a negative slope, whose sign
 * flips); 0 if the output y suffices (linear, relu, sigmoid, tanh,
 * softmax, leaky_relu with negative_slope >= 0), so that y may overwrite
 * x in the forward pass. */
int act_backward_needs_input(const struct keras_act *a);

/* The same two passes on the calling thread only, for use inside a
 * compute part. */
void act_forward_serial(float *y, const float *x, size_t rows, size_t cols,
                        const struct keras_act *a);
void act_backward_serial(float *dx, const float *dy, const float *y, const float *x, size_t rows,
                         size_t cols, const struct keras_act *a);

#endif
