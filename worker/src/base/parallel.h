/* parallel.h - the compute threads of one worker process.
 *
 * A step's work is split into as many parts as there are compute threads;
 * part 0 runs on the calling thread and the others on a fixed pool started
 * once. Every split is a pure function of the thread count, so results stay
 * deterministic for a given --threads. OpenBLAS itself is kept at one
 * thread: the pool decides how each product is divided (see gemm.h).
 *
 * Without parallel_init (as in unit tests) there is one thread and
 * parallel_run calls fn inline.
 */
#ifndef MWJ_PARALLEL_H
#define MWJ_PARALLEL_H

#include <stddef.h>

#define PARALLEL_MAX_THREADS 64
/* Below these sizes, sharing work costs more than it saves: a product of
 * fewer floating-point operations, or an element-wise loop over fewer
 * elements, runs on the calling thread. */
#define PARALLEL_MIN_FLOPS (1 << 22)
#define PARALLEL_MIN_ELEMS 65536

typedef void (*parallel_fn)(void *ctx, int part, int parts);

/* Starts threads - 1 pool threads (threads in [1, PARALLEL_MAX_THREADS])
 * and sets OpenBLAS to one thread, so that each part runs one product.
 * Returns 0, or -1 with a message in err. Not thread-safe; call at start. */
int parallel_init(int threads, char *err);

/* Stops and joins the pool; afterwards there is one thread again. */
void parallel_shutdown(void);

/* The number of compute threads, 1 without parallel_init. */
int parallel_threads(void);

/* Runs fn(ctx, part, parts) for every part in [0, parts) at once, one per
 * thread, and returns when all have finished. Must be called from the
 * thread that called parallel_init, and not from inside fn. */
void parallel_run(parallel_fn fn, void *ctx);

/* The half-open range [*lo, *hi) of part out of parts over n items, with
 * every boundary but the last a multiple of align (align >= 1). */
void parallel_range(size_t n, int part, int parts, size_t align, size_t *lo, size_t *hi);

#endif
