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
	return hcl_ring_allreduce_from(x, rank, nranks, NULL, buf, count, dtype, epoch, deadline_ns, err, errlen);
}

int hcl_ring_allreduce_from(struct hcl_xfer *x, unsigned rank, unsigned nranks, const void *src, void *buf,
			    size_t count, enum hcl_dtype dtype, uint32_t epoch, int64_t deadline_ns, char *err,
			    size_t errlen)
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
	int rc = hcl_ring_allreduce_members(x, members, nranks, rank, src, buf, count, dtype, epoch * (2 * nranks),
					    deadline_ns, err, errlen);
	free(members);
	return rc;
}

int hcl_ring_allreduce_members(struct hcl_xfer *x, const unsigned *members, unsigned nranks, unsigned rank,
			       const void *src, void *buf, size_t count, enum hcl_dtype dtype, uint32_t tag0,
			       int64_t deadline_ns, char *err, size_t errlen)
{
	if (!x || nranks == 0 || rank >= nranks || (count && !buf) || (dtype != HCL_INT32 && dtype != HCL_FP32)) {
		snprintf(err, errlen, "ring: bad arguments (member %u of %u, dtype %d)", rank, nranks, (int)dtype);
		return -EINVAL;
	}
	const size_t esz = 4;
	if (src && count &&
	    (src == buf || ((const uint8_t *)src < (uint8_t *)buf + count * esz &&
			    (uint8_t *)buf < (const uint8_t *)src + count * esz))) {
		snprintf(err, errlen, "ring: input and output overlap");
		return -EINVAL;
	}
	if (nranks == 1 || count == 0) {
		if (src && count)
			memcpy(buf, src, count * esz);
		return 0;
	}
	const enum hcl_xfer_op sum = dtype == HCL_FP32 ? HCL_XFER_SUM_F32 : HCL_XFER_SUM_I32;
	uint8_t *b = buf;
	const uint8_t *in = src ? src : buf; /* this rank's own elements */
	/* positions in the ring are member indices; the transfer speaks ranks */
	int next = (int)members[(rank + 1) % nranks], prev = (int)members[(rank + nranks - 1) % nranks];
	int rc = 0;

	/* Each step's send trails into the next step (its ACKs awaited while
	 * the next step's data goes, hcl_xfer_exchange_trailing): the chunk it
	 * sent is written again only by AllGather's receive of it, N - 1 steps
	 * later, and with two ranks the next step already: by the sum the peer
	 * made once it had all of it, so a resend then is a duplicate there.
	 *
	 * ScatterReduce: at step s send chunk rank-s, receive chunk rank-s-1
	 * and add it to this rank's own (as its packets arrive); after N-1
	 * steps chunk rank+1 is complete here.  Out of place, the own elements
	 * are read from src: step 0 sends src's chunk, each receive writes buf
	 * = src + received, and the one chunk no step receives (rank's) comes
	 * back complete in AllGather, so buf is never copied from src. */
	for (unsigned s = 0; s + 1 < nranks && rc == 0; s++) {
		unsigned sc = (rank + nranks - s) % nranks, rcv = (rank + 2 * nranks - s - 1) % nranks;
		size_t so, sl, ro, rl;
		hcl_ring_chunk(count, nranks, sc, &so, &sl);
		hcl_ring_chunk(count, nranks, rcv, &ro, &rl);
		rc = hcl_xfer_exchange_trailing(x, tag0 + s, next, (s ? b : in) + so * esz, sl * esz, prev,
						b + ro * esz, src ? in + ro * esz : NULL, rl * esz, sum, deadline_ns,
						err, errlen);
	}
	/* AllGather: pass the complete chunks around */
	for (unsigned s = 0; s + 1 < nranks && rc == 0; s++) {
		unsigned sc = (rank + 1 + nranks - s) % nranks, rcv = (rank + nranks - s) % nranks;
		size_t so, sl, ro, rl;
		hcl_ring_chunk(count, nranks, sc, &so, &sl);
		hcl_ring_chunk(count, nranks, rcv, &ro, &rl);
		rc = hcl_xfer_exchange_trailing(x, tag0 + nranks - 1 + s, next, b + so * esz, sl * esz, prev,
						b + ro * esz, NULL, rl * esz, HCL_XFER_COPY, deadline_ns, err, errlen);
	}
	/* the caller may change buf once we return: the last send ends here */
	return rc ? rc : hcl_xfer_drain(x, deadline_ns, err, errlen);
}
