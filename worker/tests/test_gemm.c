/* test_gemm.c - the thread pool and the split sgemm: every split computes the
 * same product as one plain cblas_sgemm, for every shape class. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <cmocka.h>

#include "err.h"
#include "gemm.h"
#include "gradcheck.h"
#include "parallel.h"

static void test_parallel_range_tiles_every_item_once(void **state)
{
	(void)state;
	size_t sizes[] = {0, 1, 15, 16, 17, 1000, 43264};
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int parts = 1; parts <= 7; parts++)
			for (size_t align = 1; align <= 16; align *= 4) {
				size_t next = 0, lo, hi;
				for (int p = 0; p < parts; p++) {
					parallel_range(sizes[s], p, parts, align, &lo, &hi);
					assert_int_equal(lo, next);
					assert_true(hi >= lo);
					if (hi < sizes[s])
						assert_int_equal(hi % align, 0);
					next = hi;
				}
				assert_int_equal(next, sizes[s]);
			}
}

static int hits[PARALLEL_MAX_THREADS];

static void count_part(void *ctx, int part, int parts)
{
	(void)ctx;
	(void)parts;
	hits[part]++;
}

static void test_parallel_run_calls_every_part_once_per_region(void **state)
{
	char err[ERR_LEN];
	(void)state;

	assert_int_equal(parallel_init(4, err), 0);
	assert_int_equal(parallel_threads(), 4);
	memset(hits, 0, sizeof(hits));
	for (int r = 0; r < 1000; r++)
		parallel_run(count_part, NULL);
	for (int p = 0; p < 4; p++)
		assert_int_equal(hits[p], 1000);
	assert_int_equal(hits[4], 0);
	parallel_shutdown();
	assert_int_equal(parallel_threads(), 1);
	assert_int_equal(parallel_init(0, err), -1);
}

struct shape {
	const char *what;
	int ta, tb, M, N, K;
	float beta;
};

/* One of each split: rows (conv forward), columns (a dense layer's input
 * gradient), K with partial sums (dense forward, conv weight gradient), and
 * a product too small to share. */
static const struct shape SHAPES[] = {
    {"m split, A transposed", 1, 0, 4000, 32, 10, 0.0f},
    {"n split", 0, 0, 64, 5000, 128, 0.0f},
    {"n split, A transposed, beta 1", 1, 0, 128, 5000, 64, 1.0f},
    {"k split, B transposed", 0, 1, 64, 128, 5000, 0.0f},
    {"k split with beta", 0, 0, 10, 32, 40000, 0.5f},
    {"small", 0, 0, 8, 8, 8, 0.0f},
};

static void reference(const struct shape *s, const float *A, const float *B, float *C)
{
	int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;

	cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans,
	            s->tb ? CblasTrans : CblasNoTrans, s->M, s->N, s->K, 0.75f, A, lda, B, ldb,
	            s->beta, C, s->N);
}

static void test_split_gemm_matches_plain_sgemm_for_every_split(void **state)
{
	char err[ERR_LEN];
	(void)state;

	openblas_set_num_threads(1);
	for (size_t i = 0; i < sizeof(SHAPES) / sizeof(SHAPES[0]); i++) {
		const struct shape *s = &SHAPES[i];
		size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
		float *A = malloc(na * 4), *B = malloc(nb * 4), *C0 = malloc(nc * 4);
		float *C = malloc(nc * 4), *C2 = malloc(nc * 4), *init = malloc(nc * 4);
		fill_uniform(A, na, -1, 1, 1);
		fill_uniform(B, nb, -1, 1, 2);
		fill_uniform(init, nc, -1, 1, 3);
		memcpy(C0, init, nc * 4);
		reference(s, A, B, C0);
		for (int threads = 1; threads <= 3; threads++) {
			assert_int_equal(parallel_init(threads, err), 0);
			memcpy(C, init, nc * 4);
			memcpy(C2, init, nc * 4);
			gemm(s->ta, s->tb, s->M, s->N, s->K, 0.75f, A, s->ta ? s->M : s->K, B,
			     s->tb ? s->K : s->N, s->beta, C, s->N);
			gemm(s->ta, s->tb, s->M, s->N, s->K, 0.75f, A, s->ta ? s->M : s->K, B,
			     s->tb ? s->K : s->N, s->beta, C2, s->N);
			/* Deterministic for a thread count... */
			assert_memory_equal(C, C2, nc * 4);
			/* ...and the same product; a K split only reorders the sum,
			 * which moves a result by a few ulps of sqrt(K). */
			double worst = 0;
			for (size_t k = 0; k < nc; k++) {
				double d = fabs((double)C[k] - C0[k]);
				worst = d > worst ? d : worst;
			}
			if (worst > 1e-5 * sqrt((double)s->K))
				printf("%s, %d threads: max difference %g\n", s->what, threads,
				       worst);
			assert_true(worst <= 1e-5 * sqrt((double)s->K));
			parallel_shutdown();
		}
		free(A);
		free(B);
		free(C0);
		free(C);
		free(C2);
		free(init);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parallel_range_tiles_every_item_once),
	    cmocka_unit_test(test_parallel_run_calls_every_part_once_per_region),
	    cmocka_unit_test(test_split_gemm_matches_plain_sgemm_for_every_split),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
