/* SPDX-License-Identifier: BSD-3-Clause */
/* ina-allreduce-perf --workload: training steps replayed from a profile
 * (ring/hcl_workload.h).  Per step every rank "computes" the forward pass
 * (a sleep: the host's CPU is free, as while a GPU computes), then the
 * backward, during which bucket b becomes ready at its time and is
 * all-reduced from then on, in order, one after another, as DDP's
 * communication does; the step ends when the backward has and the last
 * bucket is summed.  The compute noise (--jitter, --straggler) scales the
 * whole step's compute; --time-scale is the trial's time dilation. */
#ifndef HCL_PERF_STEPS_H
#define HCL_PERF_STEPS_H

#include <stdint.h>

#include "hcl.h"
#include "hcl_noise.h"
#include "hcl_workload.h"

struct perf_steps {
	const struct hcl_workload *w;
	double scale;	   /* every profile time x this */
	struct hcl_noise *z; /* its compute_ms is the profile's forward + backward x scale */
	long long iters, warmup;
	enum hcl_dtype dt;
	int rank, world;
};

/* Runs warm-up and timed steps on buf (room for the largest bucket) and,
 * on rank 0, prints every timed step (the mean over ranks) and their
 * summary.  cpu_s and call_s get this rank's CPU seconds in the timed steps
 * and the wall seconds inside their calls.  0, or a negative errno
 * (hcl_comm_error says why). */
int perf_steps_run(struct hcl_comm *c, const struct perf_steps *s, void *buf, double *cpu_s, double *call_s);

#endif
