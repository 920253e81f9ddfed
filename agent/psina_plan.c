/* SPDX-License-Identifier: BSD-3-Clause */
#include "psina_plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_contributor(struct ina_job_cfg *j, const struct ina_addr *a, char *err, size_t errlen)
{
	if (j->fan_in >= INA_MAX_FANIN) {
		snprintf(err, errlen, "plan: more than %d contributors to one aggregator", INA_MAX_FANIN);
		return -EINVAL;
	}
	j->contributors[j->fan_in++] = *a;
	return 0;
}

int psina_plan(const struct plan_rank *r, unsigned world, const struct ina_addr *ps, uint16_t job, uint8_t dtype,
	       uint32_t slots, uint16_t elems, struct psina_plan *p, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	if (!(p->client = calloc(world, sizeof(*p->client)))) {
		snprintf(err, errlen, "plan: out of memory");
		return -ENOMEM;
	}
	/* the INA racks, in order of first appearance */
	for (unsigned i = 0; i < world; i++) {
		if (!r[i].tor.ip)
			continue;
		unsigned t = 0;
		while (t < p->ntor && p->tor[t].rack != r[i].rack)
			t++;
		if (t == p->ntor) {
			if (p->ntor == PLAN_MAX_RACKS) {
				snprintf(err, errlen, "plan: more than %d INA racks", PLAN_MAX_RACKS);
				goto bad;
			}
			p->ntor++;
			p->tor[t].rack = r[i].rack;
			p->tor[t].agent = (int)i;
			plan_job_init(&p->tor[t].job, job, dtype, slots, elems, INA_OUT_PS);
		}
		const struct ina_addr *first = &r[p->tor[t].agent].tor;
		if (first->ip != r[i].tor.ip || first->port != r[i].tor.port) {
			snprintf(err, errlen, "plan: ranks %d and %u of rack %d name different INA switches",
				 p->tor[t].agent, i, r[i].rack);
			goto bad;
		}
		p->client[i].server = r[i].tor;
		p->client[i].index = p->tor[t].job.fan_in;
		if (add_contributor(&p->tor[t].job, &r[i].ina, err, errlen) < 0)
			goto bad;
	}
	/* a rack without a ToR shares a rack id with an INA rack: refuse, its
	 * ranks would be counted twice or not at all */
	for (unsigned i = 0; i < world; i++)
		for (unsigned t = 0; !r[i].tor.ip && t < p->ntor; t++)
			if (p->tor[t].rack == r[i].rack) {
				snprintf(err, errlen, "plan: rank %u of rack %d has no INA switch, rank %d has", i,
					 r[i].rack, p->tor[t].agent);
				goto bad;
			}

	if (p->ntor == 1 && p->tor[0].job.fan_in == world) {
		/* one INA rack holds everybody: the switch alone, as SwitchML */
		p->tor[0].job.outputs = INA_OUT_MULTICAST;
		return 0;
	}
	p->use_ps = true;
	/* gap reports at the software PS only: a ToR's jobs so marked would
	 * leave swemu's fast path, and its windows of one slice per shard never
	 * trigger one (docs/BENCHMARKS.md, "Loss") */
	plan_job_init(&p->ps, job, dtype, slots, elems, INA_OUT_MULTICAST | INA_OUT_MISS);
	p->ps.idle_miss_us = PSINA_IDLE_MISS_US;
	for (unsigned t = 0; t < p->ntor; t++) {
		p->tor[t].job.parent = (struct ina_peer){ .addr = *ps, .job = job, .contributor = p->ps.fan_in };
		if (add_contributor(&p->ps, &r[p->tor[t].agent].tor, err, errlen) < 0)
			goto bad;
	}
	for (unsigned i = 0; i < world; i++) {
		if (r[i].tor.ip)
			continue;
		p->client[i].server = *ps;
		p->client[i].index = p->ps.fan_in;
		p->client[i].to_ps = true;
		if (add_contributor(&p->ps, &r[i].ina, err, errlen) < 0)
			goto bad;
	}
	return 0;
bad:
	psina_plan_free(p);
	return -EINVAL;
}

int psina_shard_host(unsigned h, unsigned shards, unsigned world) { return (int)((size_t)h * world / shards); }

uint32_t psina_shard_slots(const struct psina_plan *p, uint32_t slots, unsigned shards, uint16_t elems)
{
	uint32_t n = (slots + shards - 1) / shards;
	const size_t slice = (size_t)elems * INA_ELEM_SIZE;
	size_t window = (size_t)p->ps.fan_in * PSINA_MIN_SHARD_SLOTS * slice;
	if (p->use_ps && n < PSINA_MIN_SHARD_SLOTS && window <= PSINA_SHARD_WINDOW_BYTES)
		n = PSINA_MIN_SHARD_SLOTS;
	/* every contributor's window reaches the shard's one link at once */
	if (p->use_ps && p->ps.fan_in && (size_t)p->ps.fan_in * n * slice > PSINA_SHARD_INFLIGHT_BYTES) {
		size_t fit = PSINA_SHARD_INFLIGHT_BYTES / ((size_t)p->ps.fan_in * slice);
		n = fit > 1 ? (uint32_t)fit : 1;
	}
	return n;
}

/* e, or smaller where two-slice shard windows would put more than the
 * rank's own window (slots slices of elems) in flight over all shards */
static uint16_t within_rank_window(const struct psina_plan *p, uint32_t slots, unsigned shards, uint16_t e,
				   uint16_t elems)
{
	const uint32_t w = psina_shard_slots(p, slots, shards, e);
	const size_t budget = (size_t)slots * elems;
	if (w < PSINA_MIN_SHARD_SLOTS || (size_t)shards * w * e <= budget)
		return e;
	size_t fit = budget / ((size_t)shards * w) / 16 * 16;
	if (fit < PSINA_MIN_SLICE_ELEMS)
		fit = PSINA_MIN_SLICE_ELEMS;
	return fit < e ? (uint16_t)fit : e;
}

static uint16_t two_slice_elems(const struct psina_plan *p, uint32_t slots, unsigned shards, uint16_t elems)
{
	if (!p->use_ps || !p->ps.fan_in || psina_shard_slots(p, slots, shards, elems) >= PSINA_MIN_SHARD_SLOTS)
		return elems;
	/* the largest slice, in whole cache lines of elements, at which the
	 * in-flight share or the two-slot window rule gives two */
	const size_t per = (size_t)p->ps.fan_in * PSINA_MIN_SHARD_SLOTS * INA_ELEM_SIZE;
	const size_t fits[2] = { PSINA_SHARD_INFLIGHT_BYTES / per, PSINA_SHARD_WINDOW_BYTES / per };
	for (unsigned i = 0; i < 2; i++) {
		size_t e = fits[i] / 16 * 16;
		if (e >= PSINA_MIN_SLICE_ELEMS && e < elems &&
		    psina_shard_slots(p, slots, shards, (uint16_t)e) >= PSINA_MIN_SHARD_SLOTS)
			return (uint16_t)e;
	}
	/* not two: then one slice each that all contributors' together (with
	 * their frames' headers) fit the in-flight share, where that is a
	 * slice at all; a larger one overflows the shard's queue every round
	 * whatever the windows do (256 workers x 8 KiB into 512 KiB: no call
	 * finished, docs/SCALE.md) */
	const size_t share = PSINA_SHARD_INFLIGHT_BYTES / p->ps.fan_in;
	size_t e = share > PSINA_FRAME_OVERHEAD ? (share - PSINA_FRAME_OVERHEAD) / INA_ELEM_SIZE / 16 * 16 : 0;
	return e >= PSINA_MIN_SLICE_ELEMS && e < elems ? (uint16_t)e : elems;
}

uint16_t psina_shard_elems(const struct psina_plan *p, uint32_t slots, unsigned shards, uint16_t elems)
{
	return within_rank_window(p, slots, shards, two_slice_elems(p, slots, shards, elems), elems);
}

uint32_t psina_shard_spares(const struct psina_plan *p) { return p->use_ps && p->ntor == 0 ? PSINA_SPARE_SLOTS : 0; }

void psina_shard_job(const struct ina_job_cfg *j, uint16_t id, const struct ina_addr *ps, struct ina_job_cfg *out)
{
	*out = *j;
	out->id = id;
	if (j->outputs & INA_OUT_PS) {
		out->parent.addr = *ps;
		out->parent.job = id;
	}
}

void psina_plan_free(struct psina_plan *p)
{
	free(p->client);
	p->client = NULL;
}
