/* SPDX-License-Identifier: BSD-3-Clause */
#include "hcl_perf_steps.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "hcl_sync.h" /* hcl_sync_stats */

/* Sleeps until the monotonic clock reads at_ns (at once if it has). */
static void sleep_until(int64_t at_ns)
{
	struct timespec ts = { (time_t)(at_ns / 1000000000), (long)(at_ns % 1000000000) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* One step: its length and compute in ns.  The step's compute is the
 * noise model's draw; every time of the profile stretches with it. */
static int one_step(struct hcl_comm *c, const struct perf_steps *s, void *buf, int64_t *step_ns, int64_t *compute_ns,
		    double *call_s)
{
	const struct hcl_workload *w = s->w;
	const double base = (w->fwd_ms + w->bwd_ms) * s->scale;
	/* ms of the profile -> ms here */
	const double f = (base > 0 ? hcl_noise_compute_ms(s->z) / base : 1) * s->scale;
	const int64_t t0 = clock_now_ns();
	int rc = 0;
	hcl_iter_begin(c); /* the step is the timing layer's iteration and pacing's point */
	for (unsigned b = 0; b < w->nbuckets && rc == 0; b++) {
		sleep_until(t0 + (int64_t)(hcl_workload_ready(w, b, f) * 1e6));
		int64_t tc = clock_now_ns();
		rc = hcl_allreduce(buf, buf, (size_t)(w->buckets[b].bytes / 4), s->dt, HCL_SUM, c);
		*call_s += (double)(clock_now_ns() - tc) / 1e9;
	}
	sleep_until(t0 + (int64_t)(hcl_workload_bwd_end(w, f) * 1e6)); /* the optimizer waits for the backward too */
	hcl_iter_end(c);
	*step_ns = clock_now_ns() - t0;
	*compute_ns = (int64_t)(hcl_workload_bwd_end(w, f) * 1e6);
	return rc;
}

/* Per timed step, the mean over ranks of its length and its compute (us),
 * gathered by one sum; printed on rank 0 with their distribution. */
static int report(struct hcl_comm *c, const struct perf_steps *s, const int64_t *step_ns, const int64_t *compute_ns)
{
	const size_t n = (size_t)s->iters;
	float *v = calloc(2 * n, sizeof(float));
	int64_t *mean_ns = calloc(n, sizeof(int64_t));
	if (!v || !mean_ns) {
		free(v);
		free(mean_ns);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		v[i] = (float)(step_ns[i] / 1e3 / s->world);
		v[n + i] = (float)(compute_ns[i] / 1e3 / s->world);
	}
	int rc = hcl_allreduce(v, v, 2 * n, HCL_FP32, HCL_SUM, c);
	if (rc == 0 && s->rank == 0) {
		const struct hcl_workload *w = s->w;
		double compute = 0;
		printf("# workload %s: %u buckets, %llu bytes a step, forward %.3f ms, backward %.3f ms, times x %g\n",
		       w->model, w->nbuckets, (unsigned long long)w->total_bytes, w->fwd_ms, w->bwd_ms, s->scale);
		printf("# step  iteration   step_us  compute_us   (means over %d ranks)\n", s->world);
		for (size_t i = 0; i < n; i++) {
			printf("# step %10zu %9.1f %11.1f\n", i, v[i], v[n + i]);
			mean_ns[i] = (int64_t)(v[i] * 1e3);
			compute += v[n + i] / (double)n;
		}
		struct hcl_sync_stats st;
		hcl_sync_stats(mean_ns, n, &st);
		printf("# steps: mean %.1f us  p50 %.1f  p99 %.1f  cv %.3f  compute %.1f us  exposed communication "
		       "%.1f us\n",
		       st.mean_ns / 1e3, st.p50_ns / 1e3, st.p99_ns / 1e3, st.cv, compute, st.mean_ns / 1e3 - compute);
	}
	free(v);
	free(mean_ns);
	return rc;
}

int perf_steps_run(struct hcl_comm *c, const struct perf_steps *s, void *buf, double *cpu_s, double *call_s)
{
	const size_t n = (size_t)s->iters;
	int64_t *step_ns = calloc(n, sizeof(int64_t)), *compute_ns = calloc(n, sizeof(int64_t)), t, u;
	double ignored = 0;
	int rc = step_ns && compute_ns ? 0 : -ENOMEM;
	memset(buf, 0, s->w->max_bytes);
	for (long long k = 0; k < s->warmup && rc == 0; k++)
		rc = one_step(c, s, buf, &t, &u, &ignored);
	double cpu0 = clock_cpu_s();
	for (size_t k = 0; k < n && rc == 0; k++)
		rc = one_step(c, s, buf, &step_ns[k], &compute_ns[k], call_s);
	*cpu_s = clock_cpu_s() - cpu0;
	if (rc == 0)
		rc = report(c, s, step_ns, compute_ns);
	free(step_ns);
	free(compute_ns);
	return rc;
}
