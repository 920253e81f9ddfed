/* SPDX-License-Identifier: BSD-3-Clause */
/* What the benchmark programs share: they report medians of alternating
 * rounds, so that a slow spell of a shared machine hits every figure of a
 * row alike. */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdlib.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorts v in place. */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
