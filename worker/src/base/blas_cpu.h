/* blas_cpu.h - making OpenBLAS run kernels this CPU can run at full width.
 *
 * OpenBLAS picks its kernel set (its "core") when it is loaded, from the CPU
 * model. A model newer than the library falls back to a generic set: Debian
 * bookworm's OpenBLAS 0.3.21 on a 5th-generation Xeon (model 207) picks
 * "Prescott", SSE3 only, and the cnn step runs 3.5x slower than with the
 * AVX-512 "SkylakeX" set the CPU can run. The library reads
 * OPENBLAS_CORETYPE when it is loaded, so the fix is to set it and load the
 * library again: execute the program again.
 *
 * Only a fallback below AVX2 on a CPU that has AVX2 (or below AVX on one
 * with AVX) is corrected. A core that OpenBLAS chose at AVX2 on an AVX-512
 * CPU is left as it is: that can be deliberate (AMD Zen 4 in 0.3.21). An
 * OPENBLAS_CORETYPE already set is the user's choice and is never changed,
 * which also keeps the program from executing itself twice.
 */
#ifndef MWJ_BLAS_CPU_H
#define MWJ_BLAS_CPU_H

/* CPU features that select a kernel set (flags of blas_cpu_features). */
#define BLAS_CPU_AVX    1u
#define BLAS_CPU_AVX2   2u /* AVX2 and FMA */
#define BLAS_CPU_AVX512 4u /* AVX-512 F, BW, VL and DQ, enabled by the OS */

/* The features of the CPU this runs on; 0 off x86-64. */
unsigned blas_cpu_features(void);

/* The OPENBLAS_CORETYPE to ask for when OpenBLAS picked the core named
 * `picked` on a CPU with `features`, or NULL when the pick is right. Pure;
 * returns a static string. */
const char *blas_cpu_better_core(const char *picked, unsigned features);

/* If OpenBLAS fell back to a kernel set below this CPU's and
 * OPENBLAS_CORETYPE is unset: sets it, notes the fallback in
 * BLAS_CPU_FALLBACK_ENV and executes this program again with argv (does
 * not return). Returns when there is nothing to do, or when executing
 * failed (logged as a warning: the program goes on with the slow kernels).
 * Call before anything else has happened. */
void blas_cpu_check(char **argv);

/* Logs at info level the kernel set in use, and the fallback corrected by
 * blas_cpu_check if there was one. */
void blas_cpu_log(void);

#define BLAS_CPU_FALLBACK_ENV "MWJ_OPENBLAS_FALLBACK"

#endif
