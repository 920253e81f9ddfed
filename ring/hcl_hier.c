/* SPDX-License-Identifier: BSD-3-Clause */
/* Hierarchical all-reduce in two levels (the hierarchical mode of Horovod
 * and NCCL): a ring reduce-scatter inside each rack, then for each shard a
 * ring all-reduce among the ranks that hold it (one per rack), then a ring
 * all-gather inside each rack.  Every host link carries about what the flat
 * ring's does, and a rack's uplink 2(R - 1)/R buffers each way.  (Reducing
 * to one leader per rack and broadcasting from it puts the whole rack's
 * data twice on the leader's link: 0.35 x the flat ring in the default
 * trial.)
 *
 * Uneven racks: the buffer is cut into K shards, K the largest rack's size;
 * in a rack of g ranks, shard j belongs to the "part" j % g, and a rack's
 * reduce-scatter and all-gather move parts (the shards of one part packed
 * together).  After the reduce-scatter, member i holds part (i + 1) % g, as
 * in hcl_ring.c; so shard j's holder in a rack of g is member
 * (j % g + g - 1) % g.  Each rank runs the rings of its shards in
 * increasing j, which every rank does, so no cycle of waits can form.
 *
 * Tags per call: epoch * (2K + 2RK) + [0, K) reduce-scatter, [K, 2K)
 * all-gather, [2K + 2Rj, 2K + 2R(j + 1)) the ring of shard j. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl_ring.h"

#define ESZ 4 /* int32 and fp32 */

struct hier_plan {
	unsigned nracks, kmax;
	unsigned *rack_of;	 /* rank -> rack index (racks ordered by lowest rank) */
	unsigned *size;		 /* rack index -> ranks in it */
	unsigned *first;	 /* rack index -> offset into by_rack */
	unsigned *by_rack;	 /* ranks grouped by rack, ascending in each */
	unsigned my_rack, me, g; /* this rank's rack, index in it, its size */
	size_t count;
};

static void plan_free(struct hier_plan *p)
{
	free(p->rack_of);
	free(p->size);
	free(p->first);
	free(p->by_rack);
}

static int plan_make(struct hier_plan *p, unsigned rank, unsigned nranks, const int *rack, size_t count)
{
	memset(p, 0, sizeof(*p));
	p->count = count;
	p->rack_of = malloc(nranks * sizeof(unsigned));
	p->size = calloc(nranks, sizeof(unsigned));
	p->first = calloc(nranks, sizeof(unsigned));
	p->by_rack = malloc(nranks * sizeof(unsigned));
	if (!p->rack_of || !p->size || !p->first || !p->by_rack)
		return -ENOMEM;
	for (unsigned r = 0; r < nranks; r++) {
		unsigned k = 0;
		while (k < r && rack[k] != rack[r])
			k++;
		p->rack_of[r] = k < r ? p->rack_of[k] : p->nracks++;
		p->size[p->rack_of[r]]++;
	}
	for (unsigned k = 1; k < p->nracks; k++)
		p->first[k] = p->first[k - 1] + p->size[k - 1];
	unsigned *fill = calloc(p->nracks, sizeof(unsigned));
	if (!fill)
		return -ENOMEM;
	for (unsigned r = 0; r < nranks; r++) {
		unsigned k = p->rack_of[r];
		if (r == rank)
			p->me = fill[k];
		p->by_rack[p->first[k] + fill[k]++] = r;
	}
	free(fill);
	for (unsigned k = 0; k < p->nracks; k++)
		if (p->size[k] > p->kmax)
			p->kmax = p->size[k];
	p->my_rack = p->rack_of[rank];
	p->g = p->size[p->my_rack];
	return 0;
}

static void shard(const struct hier_plan *p, unsigned j, size_t *off, size_t *len)
{
	hcl_ring_chunk(p->count, p->kmax, j, off, len);
}

/* Elements of this rack's part c (its shards j with j % g == c). */
static size_t part_len(const struct hier_plan *p, unsigned c)
{
	size_t n = 0, off, len;
	for (unsigned j = c; j < p->kmax; j += p->g) {
		shard(p, j, &off, &len);
		n += len;
	}
	return n;
}

/* Part c of buf into out, packed. */
static void pack(const struct hier_plan *p, unsigned c, const uint8_t *buf, uint8_t *out)
{
	size_t off, len;
	for (unsigned j = c; j < p->kmax; j += p->g) {
		shard(p, j, &off, &len);
		memcpy(out, buf + off * ESZ, len * ESZ);
		out += len * ESZ;
	}
}

/* A packed part c back into buf: added in (reduce) or copied. */
static void unpack(const struct hier_plan *p, unsigned c, enum hcl_dtype t, bool reduce, uint8_t *buf,
		   const uint8_t *in)
{
	size_t off, len;
	for (unsigned j = c; j < p->kmax; j += p->g) {
		shard(p, j, &off, &len);
		if (reduce)
			hcl_reduce(t, buf + off * ESZ, in, len);
		else
			memcpy(buf + off * ESZ, in, len * ESZ);
		in += len * ESZ;
	}
}

/* The rack's ring: reduce-scatter (after it, member i holds part i + 1
 * summed over the rack) or all-gather (every member gets every part). */
static int rack_ring(struct hcl_xfer *x, const struct hier_plan *p, bool gather, uint8_t *buf, enum hcl_dtype t,
		     uint32_t tag0, uint8_t *sbuf, uint8_t *rbuf, int64_t deadline_ns, char *err, size_t errlen)
{
	const unsigned g = p->g, i = p->me;
	const unsigned *members = p->by_rack + p->first[p->my_rack];
	const int next = (int)members[(i + 1) % g], prev = (int)members[(i + g - 1) % g];
	int rc = 0;
	/* racks of the largest size: a part is one shard, sent and (when
	 * gathering) received in place */
	const bool whole = g == p->kmax;
	for (unsigned s = 0; s + 1 < g && rc == 0; s++) {
		/* the same schedule as hcl_ring.c, over parts */
		unsigned sc = gather ? (i + 1 + g - s) % g : (i + g - s) % g;
		unsigned rcv = gather ? (i + g - s) % g : (i + 2 * g - s - 1) % g;
		size_t so, sl, ro, rl;
		shard(p, sc, &so, &sl);
		shard(p, rcv, &ro, &rl);
		if (!whole)
			pack(p, sc, buf, sbuf);
		uint8_t *into = whole && gather ? buf + ro * ESZ : rbuf;
		/* in place, a step's send may trail into the next as the ring's
		 * do (hcl_ring.c says why the part stays unwritten meanwhile);
		 * packed, the next step packs into the same sbuf */
		rc = (whole ? hcl_xfer_exchange_trailing : hcl_xfer_exchange_from)(
			x, tag0 + s, next, whole ? buf + so * ESZ : sbuf, part_len(p, sc) * ESZ, prev, into, NULL,
			part_len(p, rcv) * ESZ, HCL_XFER_COPY, deadline_ns, err, errlen);
		if (rc == 0 && into == rbuf)
			unpack(p, rcv, t, !gather, buf, rbuf);
	}
	return rc ? rc : hcl_xfer_drain(x, deadline_ns, err, errlen);
}

int hcl_hier_allreduce(struct hcl_xfer *x, unsigned rank, unsigned nranks, const int *rack, void *buf, size_t count,
		       enum hcl_dtype dtype, uint32_t epoch, int64_t deadline_ns, char *err, size_t errlen)
{
	if (!x || !rack || nranks == 0 || rank >= nranks || (count && !buf) ||
	    (dtype != HCL_INT32 && dtype != HCL_FP32)) {
		snprintf(err, errlen, "hier: bad arguments (rank %u of %u)", rank, nranks);
		return -EINVAL;
	}
	if (nranks == 1 || count == 0)
		return 0;
	struct hier_plan p;
	uint8_t *sbuf = NULL, *rbuf = NULL;
	unsigned *members = NULL;
	int rc = plan_make(&p, rank, nranks, rack, count);
	size_t most = 0;
	for (unsigned c = 0; rc == 0 && c < p.g; c++)
		if (part_len(&p, c) > most)
			most = part_len(&p, c);
	if (rc == 0 && (!(sbuf = malloc(most * ESZ + 1)) || !(rbuf = malloc(most * ESZ + 1)) ||
			!(members = malloc(p.nracks * sizeof(*members)))))
		rc = -ENOMEM;
	if (rc < 0) {
		snprintf(err, errlen, "hier: out of memory");
		goto out;
	}
	const uint32_t k = p.kmax, t0 = epoch * (2 * k + 2 * p.nracks * k);
	rc = rack_ring(x, &p, false, buf, dtype, t0, sbuf, rbuf, deadline_ns, err, errlen);
	/* each shard across the racks, among its holders */
	for (unsigned j = 0; j < k && rc == 0 && p.nracks > 1; j++) {
		if (j % p.g != (p.me + 1) % p.g)
			continue; /* another member of this rack holds it */
		for (unsigned r = 0; r < p.nracks; r++) {
			unsigned gr = p.size[r];
			members[r] = p.by_rack[p.first[r] + (j % gr + gr - 1) % gr];
		}
		size_t off, len;
		shard(&p, j, &off, &len);
		rc = hcl_ring_allreduce_members(x, members, p.nracks, p.my_rack, NULL, (uint8_t *)buf + off * ESZ, len,
						dtype, t0 + 2 * k + 2 * p.nracks * j, deadline_ns, err, errlen);
	}
	if (rc == 0)
		rc = rack_ring(x, &p, true, buf, dtype, t0 + k, sbuf, rbuf, deadline_ns, err, errlen);
out:
	plan_free(&p);
	free(sbuf);
	free(rbuf);
	free(members);
	return rc;
}
