/* SPDX-License-Identifier: BSD-3-Clause */
/* The software ring finishing a call whose INA aggregator was lost
 * (ring/hcl_fallback.c, docs/ALGORITHMS.md "When INA goes away"). */
#ifndef HCL_FALLBACK_H
#define HCL_FALLBACK_H

#include <stdbool.h>
#include <stddef.h>

#include "hcl_comm_int.h"

/* What the lost call left: the call's input whole (input: a copy the
 * algorithm kept; NULL with done NULL: the buffer), or slices of
 * slice_elems elements in the buffer, done(ctx, k) when slice k holds its
 * result (else this rank's input).  prev_input: the previous call's input
 * (prev_count elements of prev_dt), if the algorithm still has it: ranks
 * one call behind this one can then be finished. */
struct hcl_fallback_in {
	const void *input;
	size_t slice_elems;
	bool (*done)(const void *ctx, size_t k);
	const void *ctx;
	const void *prev_input;
	size_t prev_count;
	enum hcl_dtype prev_dt;
};

/* An INA call of this rank ended -ENETDOWN (why: its message): says so on
 * stderr, once, and turns INA off for the communicator's later calls. */
void hcl_fallback_begin(struct hcl_comm *c, const char *why);

/* Every rank calls it in the same call: buf (count elements of dt: int32,
 * fp32, or bf16, summed in binary32 and rounded once) ends as the exact
 * sum on every rank, on c->x.  0 or a negative errno (c->err). */
int hcl_fallback_allreduce(struct hcl_comm *c, void *buf, size_t count, enum hcl_dtype dt,
			   const struct hcl_fallback_in *in, int64_t deadline);

#endif
