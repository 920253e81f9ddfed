/* SPDX-License-Identifier: BSD-3-Clause */
/* Element loops built for several x86-64 levels in one binary, the best one
 * the CPU has chosen when the program loads (an ifunc, as glibc picks its
 * memcpy): the wire's byte swaps need SSSE3's shuffle to vectorise at all,
 * and AVX2 doubles the width, so a build for the baseline x86-64 alone ran
 * the adds 5-6x slower than one for the machine.  A build with -Dnative=true
 * (CPU_DISPATCH_OFF) compiles for the build machine only; other
 * architectures get the plain loop, which is correct everywhere. */
#ifndef CPU_DISPATCH_H
#define CPU_DISPATCH_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CPU_DISPATCH_OFF)
#define CPU_DISPATCH __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "arch=x86-64-v2", "default")))
#else
#define CPU_DISPATCH
#endif

#endif
