/* tensor_mem.h - memory for the trainer's big buffers (parameters,
 * gradients, activations, optimizer state).
 *
 * The step streams through tens of megabytes in a few milliseconds; with 4
 * KiB pages that is thousands of TLB entries, more than the core holds.
 * These buffers are aligned to 2 MiB and offered to the kernel for
 * transparent huge pages (madvise), which it grants where it can.
 */
#ifndef MWJ_TENSOR_MEM_H
#define MWJ_TENSOR_MEM_H

#include <stddef.h>

/* Returns n zeroed floats, 64-byte aligned at least; dies when out of
 * memory. Free with tensor_free, which accepts NULL. */
float *tensor_alloc(size_t n);
void tensor_free(float *p);

/* The most memory this process may take: the least of the machine's
 * physical memory, a cgroup v2 memory.max and RLIMIT_AS, in bytes
 * (SIZE_MAX when none can be read). For checks of a size a file asks for,
 * before the allocation that would fail or be killed for it. */
size_t tensor_mem_limit(void);

#endif
