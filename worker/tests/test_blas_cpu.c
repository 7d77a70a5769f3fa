/* test_blas_cpu.c - which OpenBLAS kernel set to ask for, by CPU features. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "blas_cpu.h"

#define ALL  (BLAS_CPU_AVX | BLAS_CPU_AVX2 | BLAS_CPU_AVX512)
#define AVX2 (BLAS_CPU_AVX | BLAS_CPU_AVX2)

static void test_a_generic_fallback_is_raised_to_what_the_cpu_runs(void **state)
{
	static const struct {
		const char *picked;
		unsigned features;
		const char *want;
	} cases[] = {
	    /* OpenBLAS 0.3.21 on a 5th-generation Xeon, as seen on the build machine */
	    {"Prescott", ALL, "SkylakeX"},
	    {"Nehalem", AVX2, "Haswell"},
	    {"Core2", BLAS_CPU_AVX, "Sandybridge"},
	    {"Sandybridge", ALL, "SkylakeX"},
	    {"Bulldozer", AVX2, "Haswell"},
	    {NULL, AVX2, "Haswell"},
	    {"", ALL, "SkylakeX"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *got = blas_cpu_better_core(cases[i].picked, cases[i].features);

		assert_non_null(got);
		assert_string_equal(got, cases[i].want);
	}
}

static void test_a_fitting_or_deliberate_pick_is_left_alone(void **state)
{
	static const struct {
		const char *picked;
		unsigned features;
	} cases[] = {
	    {"SkylakeX", ALL},
	    {"cooperlake", ALL},
	    {"Haswell", AVX2},
	    {"Haswell", ALL}, /* AVX2 kernels on an AVX-512 CPU can be deliberate */
	    {"Zen", ALL},
	    {"Sandybridge", BLAS_CPU_AVX},
	    {"Prescott", 0}, /* an old CPU, or not x86-64: nothing better to ask for */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_null(blas_cpu_better_core(cases[i].picked, cases[i].features));
}

static void test_a_coretype_set_by_the_user_is_kept(void **state)
{
	char *argv[] = {"test_blas_cpu", NULL};

	(void)state;
	/* blas_cpu_check would execute this test again if it ignored the
	 * variable and the library had fallen back: it must return at once. */
	setenv("OPENBLAS_CORETYPE", "Prescott", 1);
	blas_cpu_check(argv);
	assert_string_equal(getenv("OPENBLAS_CORETYPE"), "Prescott");
	unsetenv("OPENBLAS_CORETYPE");
}

static void test_features_include_the_narrower_ones(void **state)
{
	unsigned f = blas_cpu_features();

	(void)state;
	if (f & BLAS_CPU_AVX512)
		assert_true(f & BLAS_CPU_AVX2);
	if (f & BLAS_CPU_AVX2)
		assert_true(f & BLAS_CPU_AVX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_generic_fallback_is_raised_to_what_the_cpu_runs),
	    cmocka_unit_test(test_a_fitting_or_deliberate_pick_is_left_alone),
	    cmocka_unit_test(test_a_coretype_set_by_the_user_is_kept),
	    cmocka_unit_test(test_features_include_the_narrower_ones),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
