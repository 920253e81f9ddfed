/* SPDX-License-Identifier: BSD-3-Clause */
/* Element loops built for several x86-64 levels in one binary, the best one
 * the CPU has chosen when the program loads (an ifunc, as glibc picks its
 * memcpy): the wire's byte swaps need SSSE3's shuffle to vectorise at all,
 * and AVX2 doubles the width, so a build for the baseline x86-64 alone ran
 * the adds 5-6x slower than one for the machine.  A build with -Dnative=true
 * (CPU_DISPATCH_OFF) compiles for the build machine only; other
 * architectures get the plain loop, which is correct everywhere.
 * CPU_DISPATCH goes on the definitions, CPU_DISPATCH_DECL on the
 * declarations others see: Clang calls a multiversioned function of another
 * file only through a declaration that says so, while GCC, told so, makes a
 * resolver of its own in every caller that names clones it cannot see.
 * GCC 12 takes x86-64 levels; Clang 14 takes features (its resolver misreads
 * the levels, and GCC 12's refuses AVX-512 features); GCC 11 (Ubuntu 22.04)
 * has no resolver for levels, so it takes the features without AVX-512. */
#ifndef CPU_DISPATCH_H
#define CPU_DISPATCH_H

#if defined(__x86_64__) && !defined(CPU_DISPATCH_OFF) && defined(__clang__)
#define CPU_DISPATCH	  __attribute__((target_clones("avx512bw", "avx2", "ssse3", "default")))
#define CPU_DISPATCH_DECL CPU_DISPATCH
#elif defined(__x86_64__) && !defined(CPU_DISPATCH_OFF) && defined(__GNUC__) && __GNUC__ >= 12
#define CPU_DISPATCH __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "arch=x86-64-v2", "default")))
#define CPU_DISPATCH_DECL
#elif defined(__x86_64__) && !defined(CPU_DISPATCH_OFF) && defined(__GNUC__)
#define CPU_DISPATCH	  __attribute__((target_clones("avx2", "ssse3", "default")))
#define CPU_DISPATCH_DECL
#else
#define CPU_DISPATCH
#define CPU_DISPATCH_DECL
#endif

#endif
