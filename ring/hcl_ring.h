/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring all-reduce (Patarasuk & Yuan): ScatterReduce then AllGather over N
 * ranks, 2(N-1) exchanges of one chunk (count/N elements, the first
 * count % N chunks one larger) with the next and previous rank.  Each
 * exchange is itself pipelined by the transfer's window, so large messages
 * are bound by bandwidth, not by per-step latency. */
#ifndef HCL_RING_H
#define HCL_RING_H

#include <stddef.h>
#include <stdint.h>

#include "hcl.h" /* enum hcl_dtype */
#include "hcl_xfer.h"

/* In place: buf holds this rank's count elements and receives the sum.
 * epoch numbers the collective (tags of consecutive calls must differ).
 * 0, or a negative errno with err naming the failing peer. */
int hcl_ring_allreduce(struct hcl_xfer *x, unsigned rank, unsigned nranks, void *buf, size_t count,
		       enum hcl_dtype dtype, uint32_t epoch, int64_t deadline_ns, char *err, size_t errlen);
/* Out of place: src holds this rank's elements (untouched), buf receives
 * the sum; neither is copied into the other first (each received chunk is
 * added to src's into buf).  src NULL: in place.  They must not overlap. */
int hcl_ring_allreduce_from(struct hcl_xfer *x, unsigned rank, unsigned nranks, const void *src, void *buf,
			    size_t count, enum hcl_dtype dtype, uint32_t epoch, int64_t deadline_ns, char *err,
			    size_t errlen);

/* The same over a subset: members[0..n-1] are ranks of the transfer, this
 * rank is members[me]; tags tag0 .. tag0 + 2(n-1) - 1 are used. */
int hcl_ring_allreduce_members(struct hcl_xfer *x, const unsigned *members, unsigned n, unsigned me, const void *src,
			       void *buf, size_t count, enum hcl_dtype dtype, uint32_t tag0, int64_t deadline_ns,
			       char *err, size_t errlen);

/* Hierarchical (Horovod's and NCCL's two levels): ring reduce-scatter in
 * each rack, a ring all-reduce of each shard among its holders (one per
 * rack), ring all-gather in each rack; racks may be uneven.  rack[r] is rank
 * r's rack id; epoch numbers the collective. */
int hcl_hier_allreduce(struct hcl_xfer *x, unsigned rank, unsigned nranks, const int *rack, void *buf, size_t count,
		       enum hcl_dtype dtype, uint32_t epoch, int64_t deadline_ns, char *err, size_t errlen);

/* Chunk c of count elements split over n: the first count % n chunks get
 * one element more. */
void hcl_ring_chunk(size_t count, unsigned n, unsigned c, size_t *off, size_t *len);

/* dst += src, as the ring does (int32 wraps, fp32 in binary32). */
void hcl_reduce(enum hcl_dtype t, void *dst, const void *src, size_t n);

#endif
