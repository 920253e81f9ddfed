/* Hierarchical all-reduce (Horovod's): members of a rack send their buffer
 * to the rack's leader (its lowest rank), which sums them; the leaders run
 * a ring all-reduce among themselves; each leader sends the result back to
 * its rack.  Only leaders cross racks, which is the point on an
 * oversubscribed fabric.  Tags per call: epoch * 4N + [0, N) gather,
 * [N, 3N) ring, [3N, 4N) broadcast, each offset by the member's rank. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "hcl_ring.h"

int hcl_hier_allreduce(struct hcl_xfer *x, unsigned rank, unsigned nranks, const int *rack, void *buf,
		       size_t count, enum hcl_dtype dtype, uint32_t epoch, int64_t deadline_ns, char *err,
		       size_t errlen)
{
	if (!x || !rack || nranks == 0 || rank >= nranks || (count && !buf) ||
	    (dtype != HCL_INT32 && dtype != HCL_FP32)) {
		snprintf(err, errlen, "hier: bad arguments (rank %u of %u)", rank, nranks);
		return -EINVAL;
	}
	size_t bytes = count * 4;
	uint32_t t0 = epoch * 4 * nranks;
	unsigned leader = rank;
	for (unsigned r = 0; r < nranks; r++)
		if (rack[r] == rack[rank] && r < leader)
			leader = r;
	if (rank != leader) {
		int rc = hcl_xfer_exchange(x, t0 + rank, (int)leader, buf, bytes, -1, NULL, 0, deadline_ns, err, errlen);
		if (rc == 0)
			rc = hcl_xfer_exchange(x, t0 + 3 * nranks + rank, -1, NULL, 0, (int)leader, buf, bytes,
					       deadline_ns, err, errlen);
		return rc;
	}

	unsigned *leaders = malloc(nranks * sizeof(*leaders)), nl = 0, me = 0;
	void *tmp = malloc(bytes ? bytes : 1);
	int rc = 0;
	if (!leaders || !tmp) {
		snprintf(err, errlen, "hier: out of memory");
		rc = -ENOMEM;
		goto out;
	}
	/* gather the rack, in rank order */
	for (unsigned m = rank + 1; m < nranks && rc == 0; m++) {
		if (rack[m] != rack[rank])
			continue;
		rc = hcl_xfer_exchange(x, t0 + m, -1, NULL, 0, (int)m, tmp, bytes, deadline_ns, err, errlen);
		if (rc == 0)
			hcl_reduce(dtype, buf, tmp, count);
	}
	/* ring among the leaders (each is its rack's lowest rank) */
	for (unsigned r = 0; r < nranks && rc == 0; r++) {
		bool lowest = true;
		for (unsigned q = 0; q < r && lowest; q++)
			lowest = rack[q] != rack[r];
		if (!lowest)
			continue;
		if (r == rank)
			me = nl;
		leaders[nl++] = r;
	}
	if (rc == 0)
		rc = hcl_ring_allreduce_members(x, leaders, nl, me, buf, count, dtype, t0 + nranks, deadline_ns, err,
						errlen);
	/* and back to the rack */
	for (unsigned m = rank + 1; m < nranks && rc == 0; m++)
		if (rack[m] == rack[rank])
			rc = hcl_xfer_exchange(x, t0 + 3 * nranks + m, (int)m, buf, bytes, -1, NULL, 0, deadline_ns, err,
					       errlen);
out:
	free(leaders);
	free(tmp);
	return rc;
}
