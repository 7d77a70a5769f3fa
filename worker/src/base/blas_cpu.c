/* blas_cpu.c - OpenBLAS's kernel set against the CPU's features. */
#include "blas_cpu.h"

#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"

/* The x86-64 cores of OpenBLAS's DYNAMIC_ARCH build by the widest vectors
 * their kernels use: 3 AVX-512, 2 AVX2, 1 AVX. Any other (Prescott, Core2,
 * Nehalem, Atom, Opteron...) is 0. */
static const struct {
	const char *name;
	int level;
} cores[] = {
    {"SkylakeX", 3},    {"Cooperlake", 3},  {"SapphireRapids", 3}, {"Haswell", 2},
    {"Zen", 2},         {"Sandybridge", 1}, {"Bulldozer", 1},      {"Piledriver", 1},
    {"Steamroller", 1}, {"Excavator", 1},
};

static int core_level(const char *name)
{
	for (size_t i = 0; i < sizeof(cores) / sizeof(cores[0]); i++)
		if (name && strcasecmp(name, cores[i].name) == 0)
			return cores[i].level;
	return 0;
}

/* The kernel set OpenBLAS loaded, by the name OPENBLAS_CORETYPE takes. */
static const char *loaded_core(void)
{
	const char *name = openblas_get_corename();

	return name ? name : "unknown";
}

unsigned blas_cpu_features(void)
{
	unsigned f = 0;

#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx"))
		f |= BLAS_CPU_AVX;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		f |= BLAS_CPU_AVX2;
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
		f |= BLAS_CPU_AVX512;
#endif
	return f;
}

const char *blas_cpu_better_core(const char *picked, unsigned features)
{
	int have = core_level(picked);

	if ((features & BLAS_CPU_AVX2) && have < 2)
		return (features & BLAS_CPU_AVX512) ? "SkylakeX" : "Haswell";
	if ((features & BLAS_CPU_AVX) && have < 1)
		return "Sandybridge";
	return NULL;
}

void blas_cpu_check(char **argv)
{
	const char *picked = loaded_core(), *better;

	if (getenv("OPENBLAS_CORETYPE"))
		return;
	better = blas_cpu_better_core(picked, blas_cpu_features());
	if (!better)
		return;
	/* The next run says what happened (blas_cpu_log), so that its log
	 * reads as one program's. */
	if (setenv("OPENBLAS_CORETYPE", better, 1) != 0 ||
	    setenv(BLAS_CPU_FALLBACK_ENV, picked, 1) != 0) {
		log_warn("setenv OPENBLAS_CORETYPE: %s; going on with OpenBLAS's %s kernels",
		         strerror(errno), picked);
		return;
	}
	fflush(NULL);
	execv("/proc/self/exe", argv);
	log_warn("execute /proc/self/exe again: %s; going on with OpenBLAS's %s kernels",
	         strerror(errno), picked);
	unsetenv("OPENBLAS_CORETYPE");
	unsetenv(BLAS_CPU_FALLBACK_ENV);
}

void blas_cpu_log(void)
{
	const char *picked = loaded_core();
	const char *fallback = getenv(BLAS_CPU_FALLBACK_ENV);

	if (fallback) {
		log_info(
		    "OpenBLAS kernels: %s (OpenBLAS picked %s for this CPU, below what it runs; "
		    "set OPENBLAS_CORETYPE to choose)",
		    picked, fallback);
		unsetenv(BLAS_CPU_FALLBACK_ENV); /* not for the processes this one starts */
	} else {
		log_info("OpenBLAS kernels: %s%s", picked,
		         getenv("OPENBLAS_CORETYPE") ? " (OPENBLAS_CORETYPE)" : "");
	}
}
