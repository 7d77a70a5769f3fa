/* grad_slice.h - a finished piece of the gradient buffer.
 *
 * The backward pass reports gradients as they become final, so that the
 * optimizer can update those parameters while they are in cache, and the
 * collective can start reducing them while the rest of the pass runs. A
 * piece is rows of cols elements, row r starting at off + r * stride, all
 * offsets counted in floats from the start of the buffer; a contiguous
 * range is one row.
 */
#ifndef MWJ_GRAD_SLICE_H
#define MWJ_GRAD_SLICE_H

#include <stddef.h>

struct grad_slice {
	size_t off, rows, cols, stride;
};

/* May be called from several compute threads at once, for disjoint slices. */
typedef void (*grad_ready_fn)(void *ctx, const struct grad_slice *s);

#endif
