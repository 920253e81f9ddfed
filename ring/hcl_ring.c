/* SPDX-License-Identifier: BSD-3-Clause */
#include "hcl_ring.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl_reduce.h"

void hcl_ring_chunk(size_t count, unsigned n, unsigned c, size_t *off, size_t *len)
{
	size_t base = count / n, extra = count % n;
	*len = base + (c < extra);
	*off = c * base + (c < extra ? c : extra);
}

void hcl_reduce(enum hcl_dtype t, void *dst, const void *src, size_t n)
{
	if (t == HCL_FP32)
		hcl_reduce_f32(dst, src, n);
	else
		hcl_reduce_i32(dst, src, n);
}

int hcl_ring_allreduce(struct hcl_xfer *x, unsigned rank, unsigned nranks, void *buf, size_t count,
		       enum hcl_dtype dtype, uint32_t epoch, int64_t deadline_ns, char *err, size_t errlen)
{
	if (!x || nranks == 0 || rank >= nranks) {
		snprintf(err, errlen, "ring: bad arguments (rank %u of %u)", rank, nranks);
		return -EINVAL;
	}
	unsigned *members = malloc(nranks * sizeof(*members));
	if (!members) {
		snprintf(err, errlen, "ring: out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < nranks; i++)
		members[i] = i;
	int rc = hcl_ring_allreduce_members(x, members, nranks, rank, buf, count, dtype, epoch * (2 * nranks),
					    deadline_ns, err, errlen);
	free(members);
	return rc;
}

int hcl_ring_allreduce_members(struct hcl_xfer *x, const unsigned *members, unsigned nranks, unsigned rank, void *buf,
			       size_t count, enum hcl_dtype dtype, uint32_t tag0, int64_t deadline_ns, char *err,
			       size_t errlen)
{
	if (!x || nranks == 0 || rank >= nranks || (count && !buf) || (dtype != HCL_INT32 && dtype != HCL_FP32)) {
		snprintf(err, errlen, "ring: bad arguments (member %u of %u, dtype %d)", rank, nranks, (int)dtype);
		return -EINVAL;
	}
	if (nranks == 1 || count == 0)
		return 0;
	const size_t esz = 4;
	const enum hcl_xfer_op sum = dtype == HCL_FP32 ? HCL_XFER_SUM_F32 : HCL_XFER_SUM_I32;
	uint8_t *b = buf;
	/* positions in the ring are member indices; the transfer speaks ranks */
	int next = (int)members[(rank + 1) % nranks], prev = (int)members[(rank + nranks - 1) % nranks];
	int rc = 0;

	/* ScatterReduce: at step s send chunk rank-s, receive chunk rank-s-1
	 * and add it in (as its packets arrive); after N-1 steps chunk rank+1
	 * is complete here. */
	for (unsigned s = 0; s + 1 < nranks && rc == 0; s++) {
		unsigned sc = (rank + nranks - s) % nranks, rcv = (rank + 2 * nranks - s - 1) % nranks;
		size_t so, sl, ro, rl;
		hcl_ring_chunk(count, nranks, sc, &so, &sl);
		hcl_ring_chunk(count, nranks, rcv, &ro, &rl);
		rc = hcl_xfer_exchange_op(x, tag0 + s, next, b + so * esz, sl * esz, prev, b + ro * esz, rl * esz, sum,
					  deadline_ns, err, errlen);
	}
	/* AllGather: pass the complete chunks around */
	for (unsigned s = 0; s + 1 < nranks && rc == 0; s++) {
		unsigned sc = (rank + 1 + nranks - s) % nranks, rcv = (rank + nranks - s) % nranks;
		size_t so, sl, ro, rl;
		hcl_ring_chunk(count, nranks, sc, &so, &sl);
		hcl_ring_chunk(count, nranks, rcv, &ro, &rl);
		rc = hcl_xfer_exchange(x, tag0 + nranks - 1 + s, next, b + so * esz, sl * esz, prev, b + ro * esz,
				       rl * esz, deadline_ns, err, errlen);
	}
	return rc;
}
