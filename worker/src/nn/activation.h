/* activation.h - element-wise activations, in place, over n values. */
#ifndef MWJ_ACTIVATION_H
#define MWJ_ACTIVATION_H

#include <stddef.h>

/* x = max(x, 0), shared among the compute threads when n is large. */
void relu_forward(float *x, size_t n);

/* d = y > 0 ? d : 0, where y is the ReLU's output (so no input is kept),
 * shared among the compute threads when n is large. */
void relu_backward(float *d, const float *y, size_t n);

/* The same two on the calling thread only, for use inside a compute part
 * (parallel.h), where a nested split is not allowed. */
void relu_forward_serial(float *x, size_t n);
void relu_backward_serial(float *d, const float *y, size_t n);

#endif
