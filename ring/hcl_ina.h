/* SPDX-License-Identifier: BSD-3-Clause */
/* The INA worker client: a SwitchML-style all-reduce through an INA switch
 * (swemu) for the ranks of one rack.  Slice k of the tensor goes to slot
 * k % slots; each slot alternates its two sets for the life of the job
 * (also across calls, docs/ENGINE.md); a window of `slots` slices is in
 * flight; a slice whose result does not come back in time is sent again
 * (the switch answers from the stored result); results seen twice are
 * ignored.  The job must be installed in the switch with this rank's
 * address at contributor `index`.
 *
 * With shards > 1 the tensor is cut into that many runs of consecutive
 * slices, run k going to aggregator sw[k] as job[k] (a sharded parameter
 * server, BytePS-style), all at once from one socket and one thread, each
 * shard with its own window of `slots`. */
#ifndef HCL_INA_H
#define HCL_INA_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dgram.h"
#include "hcl.h"
#include "hcl_env.h" /* HCL_INA_MAX_SHARDS */
#include "hcl_ina_win.h"

struct hcl_ina_cfg {
	unsigned shards;			   /* 0 or 1: one aggregator; at most HCL_INA_MAX_SHARDS */
	struct sockaddr_in sw[HCL_INA_MAX_SHARDS]; /* per shard: the aggregator's INA address */
	uint16_t job[HCL_INA_MAX_SHARDS];	   /* per shard: the job there */
	/* per shard: how many UDP ports from sw[h]'s the aggregator takes INA
	 * on (0 or 1: that one).  Slot s goes to port + s mod ports, and its
	 * results are taken from any of them: a switch split over lcores by
	 * UDP port (swemu's partitions) then gets every slot's contributions
	 * in one partition, and the job's slots in all of them. */
	uint8_t ports[HCL_INA_MAX_SHARDS];
	uint16_t index; /* contributor index of this rank in the job */
	uint32_t slots; /* each job's slot count */
	/* per shard: slices in flight that are not stalled (0: slots); the
	 * slots beyond it take the next slices while others wait for a
	 * re-send (agent/psina_plan.h, PSINA_SPARE_SLOTS) */
	uint32_t window;
	uint16_t elems; /* elements per packet (<= the job's elems) */
	/* windows shrink on results marked INA_F_CE (ring/hcl_ina_cc.h); off
	 * by default: it gained nothing where measured (docs/SCALE.md) */
	bool cc;
	uint32_t rto_us;    /* first resend timeout; 0 = 5000 */
	double timer_scale; /* rto_us x this (time dilation); 0 = 1 */
	/* an aggregator that answers nothing for this long while slices are
	 * out is lost: the call ends -ENETDOWN (0: wait for the deadline) */
	int64_t lost_ns;
	/* called on every turn of the wait loop (the communicator's reliable
	 * transfer answers late re-sends from there); may be NULL.  Not 0:
	 * 1 + a rank that lost its aggregator in this call, and so will this
	 * one's (the call ends -ENETDOWN) */
	int (*poll)(void *ctx);
	void *poll_ctx;
};

struct hcl_ina;

struct hcl_ina *hcl_ina_new(const struct hcl_ina_cfg *cfg, struct dgram_transport *t, char *err, size_t errlen);
void hcl_ina_free(struct hcl_ina *a);

/* In place over buf (count int32 or fp32 elements); 0 or a negative errno
 * with err naming the switch: -ETIMEDOUT, -ENETDOWN (lost_ns without an
 * answer), or -EOVERFLOW when the switch flags an int32 sum that wrapped.  Results are taken only from the
 * aggregator's address and port, for the job and dtype sent. */
int hcl_ina_allreduce(struct hcl_ina *a, void *buf, size_t count, enum hcl_dtype dt, int64_t deadline_ns, char *err,
		      size_t errlen);

/* fp32 over a BFP32 job (int32 mantissas: what a switch without floating
 * point adds): a first pass agrees on each slice's exponent (the switch
 * keeps the maximum), a second sums the mantissas at that exponent.
 * addends: the number of ranks whose values the job sums in total (the
 * scale leaves room for all of them, so the int32 sum cannot wrap).  Error
 * bound per element: docs/PROTOCOL.md.  -EDOM for a NaN/inf input. */
int hcl_ina_allreduce_bfp(struct hcl_ina *a, float *buf, size_t count, unsigned addends, int64_t deadline_ns, char *err,
			  size_t errlen);

struct hcl_ina_stats {
	uint64_t sent, resent, results, duplicates, foreign;
	uint64_t overflows; /* results flagged INA_F_OVERFLOW: the call fails -EOVERFLOW */
	uint64_t marked;    /* results flagged INA_F_CE: a queue on the way was filling */
};
const struct hcl_ina_stats *hcl_ina_stats(const struct hcl_ina *a);

#endif
