/* tensor_mem.c - zeroed, huge-page-backed float buffers. */
#include "tensor_mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "err.h"

#define HUGE_PAGE (2u << 20)

float *tensor_alloc(size_t n)
{
	size_t bytes = n * sizeof(float);
	size_t align = bytes >= HUGE_PAGE ? HUGE_PAGE : 64;
	void *p = NULL;

	if (n > SIZE_MAX / sizeof(float))
		die("tensor of %zu floats is too large", n);
	bytes = (bytes + align - 1) / align * align;
	if (bytes == 0)
		bytes = align;
	if (posix_memalign(&p, align, bytes) != 0)
		die("out of memory allocating %zu bytes", bytes);
#ifdef MADV_HUGEPAGE
	/* Advice only: without THP support the buffer still works. */
	if (align == HUGE_PAGE)
		(void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
	memset(p, 0, bytes);
	return p;
}

void tensor_free(float *p)
{
	free(p);
}
