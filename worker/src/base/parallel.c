/* parallel.c - a fixed pool of compute threads.
 *
 * The regions of one training step come a few dozen microseconds apart, far
 * too often to put threads to sleep in between: a pool thread polls the
 * generation counter for SPIN_NS after each region, and only then blocks on
 * a condition variable, so the pool costs nothing while the worker waits
 * on the network or reads data.
 */
#include "parallel.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "err.h"

/* How long a waiting thread polls before it gives the core away: longer
 * than the gaps between the regions of one step, short enough that an idle
 * pool, or one that shares its cores with other work, costs little. */
#define SPIN_NS 100000

struct pool {
	int threads;
	pthread_t tids[PARALLEL_MAX_THREADS];
	pthread_mutex_t lock;
	pthread_cond_t wake;
	atomic_uint_fast64_t generation; /* bumped once per region */
	atomic_int pending;              /* pool threads still running the region */
	atomic_int stop;
	parallel_fn fn;
	void *ctx;
};

static struct pool pool = {.threads = 1};
static int part_ids[PARALLEL_MAX_THREADS]; /* what each pool thread is told it is */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void *pool_main(void *arg)
{
	int part = *(const int *)arg;
	uint64_t seen = 0;

	for (;;) {
		uint64_t gen = atomic_load_explicit(&pool.generation, memory_order_acquire);
		uint64_t deadline = now_ns() + SPIN_NS;
		for (unsigned spin = 1; gen == seen; spin++) {
			cpu_relax();
			gen = atomic_load_explicit(&pool.generation, memory_order_acquire);
			if (spin % 64 == 0 && now_ns() > deadline)
				break;
		}
		if (gen == seen) {
			pthread_mutex_lock(&pool.lock);
			while ((gen = atomic_load(&pool.generation)) == seen &&
			       !atomic_load(&pool.stop))
				pthread_cond_wait(&pool.wake, &pool.lock);
			pthread_mutex_unlock(&pool.lock);
		}
		if (atomic_load(&pool.stop))
			return NULL;
		seen = gen;
		pool.fn(pool.ctx, part, pool.threads);
		atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_release);
	}
}

int parallel_init(int threads, char *err)
{
	if (threads < 1 || threads > PARALLEL_MAX_THREADS)
		return err_set(err, "thread count %d out of range [1, %d]", threads,
		               PARALLEL_MAX_THREADS);
	parallel_shutdown();
	/* OpenBLAS runs each product on the thread that asks; the pool
	 * decides how products are shared (gemm.h). */
	openblas_set_num_threads(1);
	pthread_mutex_init(&pool.lock, NULL);
	pthread_cond_init(&pool.wake, NULL);
	atomic_store(&pool.stop, 0);
	atomic_store(&pool.generation, 0);
	for (int i = 1; i < threads; i++) {
		part_ids[i] = i;
		int rc = pthread_create(&pool.tids[i], NULL, pool_main, &part_ids[i]);
		if (rc != 0) {
			pool.threads = i;
			parallel_shutdown();
			return err_set(err, "pthread_create: %s", strerror(rc));
		}
	}
	pool.threads = threads;
	return 0;
}

void parallel_shutdown(void)
{
	if (pool.threads <= 1) {
		pool.threads = 1;
		return;
	}
	pthread_mutex_lock(&pool.lock);
	atomic_store(&pool.stop, 1);
	pthread_cond_broadcast(&pool.wake);
	pthread_mutex_unlock(&pool.lock);
	for (int i = 1; i < pool.threads; i++)
		pthread_join(pool.tids[i], NULL);
	pthread_cond_destroy(&pool.wake);
	pthread_mutex_destroy(&pool.lock);
	pool.threads = 1;
}

int parallel_threads(void)
{
	return pool.threads;
}

void parallel_run(parallel_fn fn, void *ctx)
{
	if (pool.threads == 1) {
		fn(ctx, 0, 1);
		return;
	}
	pool.fn = fn;
	pool.ctx = ctx;
	atomic_store_explicit(&pool.pending, pool.threads - 1, memory_order_relaxed);
	pthread_mutex_lock(&pool.lock);
	atomic_fetch_add_explicit(&pool.generation, 1, memory_order_release);
	pthread_cond_broadcast(&pool.wake);
	pthread_mutex_unlock(&pool.lock);
	fn(ctx, 0, pool.threads);
	/* Poll for the others; past the spin window, yield the core, in case
	 * the thread we wait for is the one that needs it. */
	uint64_t deadline = now_ns() + SPIN_NS;
	for (unsigned spin = 1; atomic_load_explicit(&pool.pending, memory_order_acquire) > 0;
	     spin++) {
		if (spin % 64 == 0 && now_ns() > deadline)
			sched_yield();
		else
			cpu_relax();
	}
}

void parallel_range(size_t n, int part, int parts, size_t align, size_t *lo, size_t *hi)
{
	size_t units = (n + align - 1) / align;
	size_t a = units * (size_t)part / (size_t)parts;
	size_t b = units * (size_t)(part + 1) / (size_t)parts;

	*lo = a * align < n ? a * align : n;
	*hi = b * align < n ? b * align : n;
}
