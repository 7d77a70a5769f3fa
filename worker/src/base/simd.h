/* simd.h - compile a hot loop for several instruction sets, picked at load time.
 *
 * The worker image must run on any x86-64 node, so the build targets the
 * baseline ISA; loops marked SIMD_CLONES also get AVX2 and AVX-512 versions
 * that the dynamic loader selects for the CPU it runs on. The build uses
 * -ffp-contract=off, so every version rounds the same way and workers on
 * different CPUs stay bitwise identical.
 */
#ifndef MWJ_SIMD_H
#define MWJ_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SIMD_CLONES
#endif

#endif
