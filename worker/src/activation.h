/* activation.h - element-wise activations, in place, over n values. */
#ifndef MWJ_ACTIVATION_H
#define MWJ_ACTIVATION_H

#include <stddef.h>

/* x = max(x, 0). */
void relu_forward(float *x, size_t n);

/* d = y > 0 ? d : 0, where y is the ReLU's output (so no input is kept). */
void relu_backward(float *d, const float *y, size_t n);

#endif
