/* SPDX-License-Identifier: BSD-3-Clause */
/* The monotonic clock (CLOCK_MONOTONIC, ns) that every deadline and timer
 * of the host side is measured on, and the process's CPU time. */
#ifndef CLOCK_H
#define CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t clock_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* User + system seconds of this process so far, every thread. */
static inline double clock_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
