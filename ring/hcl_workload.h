/* SPDX-License-Identifier: BSD-3-Clause */
/* A training step's gradient traffic, as PyTorch DDP hands it to the
 * all-reduce: a forward pass, then a backward pass during which each
 * gradient bucket becomes ready at its time and is all-reduced from then
 * on, in order, one after another; the optimizer waits for the last.
 * Profiles are files in the configuration syntax (configs/workloads/,
 * docs/TRIAL.md "Training-step workloads"); the trial runner, the
 * simulator and ina-allreduce-perf --workload read them through here.
 * Errors: -1 with "FILE:LINE: what is wrong". */
#ifndef HCL_WORKLOAD_H
#define HCL_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#define HCL_WORKLOAD_MAX_BUCKETS 4096

struct hcl_workload_bucket {
	uint64_t bytes;	 /* fp32 gradients: a multiple of 4 */
	double ready_ms; /* after the backward began, 0..bwd_ms, in order */
};

struct hcl_workload {
	char model[64];
	double fwd_ms, bwd_ms;
	unsigned nbuckets;
	struct hcl_workload_bucket *buckets;
	uint64_t total_bytes, max_bytes;
};

int hcl_workload_load(const char *path, struct hcl_workload *w, char *err, size_t errlen);
/* The same from text (source names it in errors). */
int hcl_workload_parse(const char *text, size_t len, const char *source, struct hcl_workload *w, char *err,
		       size_t errlen);
void hcl_workload_free(struct hcl_workload *w);

/* One step's timeline (ms from the step's start) when its compute takes
 * `scale` times the profile's (noise, a straggler, time dilation): when the
 * backward begins, when it ends, and when bucket b is ready. */
static inline double hcl_workload_bwd_start(const struct hcl_workload *w, double scale) { return w->fwd_ms * scale; }
static inline double hcl_workload_bwd_end(const struct hcl_workload *w, double scale)
{
	return (w->fwd_ms + w->bwd_ms) * scale;
}
static inline double hcl_workload_ready(const struct hcl_workload *w, unsigned b, double scale)
{
	return (w->fwd_ms + w->buckets[b].ready_ms) * scale;
}

#endif
