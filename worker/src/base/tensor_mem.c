/* tensor_mem.c - zeroed, huge-page-backed float buffers. */
#include "tensor_mem.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

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

/* A cgroup v2 limit ("max" or bytes) in memory.max, or SIZE_MAX. */
static size_t cgroup_memory_max(void)
{
	char line[64];
	unsigned long long v;
	char *end;
	FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
	size_t limit = SIZE_MAX;

	if (!f)
		return SIZE_MAX;
	if (fgets(line, sizeof(line), f) && line[0] >= '0' && line[0] <= '9') {
		errno = 0;
		v = strtoull(line, &end, 10);
		if (errno == 0 && (*end == '\n' || *end == '\0') && v <= SIZE_MAX)
			limit = (size_t)v;
	}
	fclose(f);
	return limit;
}

size_t tensor_mem_limit(void)
{
	size_t limit = cgroup_memory_max();
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	struct rlimit rl;

	if (pages > 0 && page > 0 && (size_t)pages < SIZE_MAX / (size_t)page &&
	    (size_t)pages * (size_t)page < limit)
		limit = (size_t)pages * (size_t)page;
	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < limit)
		limit = (size_t)rl.rlim_cur;
	return limit;
}
