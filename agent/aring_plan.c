/* SPDX-License-Identifier: BSD-3-Clause */
#include "aring_plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* chain_steps is 16 bits: 2m - 1 <= 65535 */
#define ARING_MAX_MEMBERS 32768

int aring_plan_build(const struct plan_rank *r, const struct ina_addr *soft, unsigned world, uint16_t job,
		     uint8_t dtype, uint32_t slots, uint16_t elems, struct aring_plan *p, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	if (slots < 2 || elems < 2) {
		/* a slice holds its slot until the next member has it: with
		 * one, no member could take the next; and one-element slices
		 * could leave a round of a short chunk empty */
		snprintf(err, errlen, "agent-ring: needs at least 2 slots and 2 elements per slice (%u, %u)", slots,
			 elems);
		return -EINVAL;
	}
	p->world = world;
	p->job = job;
	p->dtype = dtype;
	p->slots = slots;
	p->elems = elems;
	p->worker_rank = calloc(world, sizeof(unsigned));
	p->worker_addr = calloc(world, sizeof(struct ina_addr));
	p->member_of = calloc(world, sizeof(unsigned));
	p->index_of = calloc(world, sizeof(unsigned));
	p->mem = calloc(world ? world : 1, sizeof(*p->mem));
	bool *placed = calloc(world, 1);
	if (!p->worker_rank || !p->worker_addr || !p->member_of || !p->index_of || !p->mem || !placed) {
		free(placed);
		aring_plan_free(p);
		snprintf(err, errlen, "agent-ring: out of memory");
		return -ENOMEM;
	}
	unsigned nw = 0;
	for (unsigned i = 0; i < world; i++) {
		if (placed[i])
			continue;
		/* rank i is the lowest rank of a rack not seen yet */
		bool ina = r[i].tor.ip != 0;
		for (unsigned j = i; j < world; j++) {
			if (placed[j] || r[j].rack != r[i].rack)
				continue;
			if ((r[j].tor.ip != 0) != ina ||
			    (ina && (r[j].tor.ip != r[i].tor.ip || r[j].tor.port != r[i].tor.port))) {
				snprintf(err, errlen,
					 "agent-ring: ranks %u and %u of rack %d name different INA switches", i, j,
					 r[i].rack);
				goto bad;
			}
			if (!ina && j != i)
				continue; /* a host of a plain rack is a member of its own */
			if (ina && j == i) {
				if (p->m == ARING_MAX_MEMBERS)
					goto too_many;
				p->mem[p->m++] = (struct aring_member){
					.ina = true, .rack = r[i].rack, .agg = r[i].tor, .first = nw
				};
			}
			if (!ina) {
				if (p->m == ARING_MAX_MEMBERS)
					goto too_many;
				p->mem[p->m++] = (struct aring_member){ .rack = r[i].rack,
									.agg = soft[i],
									.first = nw };
			}
			struct aring_member *mb = &p->mem[p->m - 1];
			if (mb->n == INA_MAX_FANIN - 1) {
				snprintf(err, errlen, "agent-ring: rack %d has more than %d ranks", r[i].rack,
					 INA_MAX_FANIN - 1);
				goto bad;
			}
			p->member_of[j] = p->m - 1;
			p->index_of[j] = mb->n++;
			p->worker_addr[nw] = r[j].ina;
			p->worker_rank[nw++] = j;
			placed[j] = true;
		}
	}
	free(placed);
	/* A worker's window covers every step: as many slices in flight as
	 * the plan of a job and a window per step had for up to 8 steps
	 * (at m = 2, 3 x slots), and no more past that (its 2m - 1 windows
	 * put 16 000 packets in flight at a 1024-member call's start); the
	 * job has a slot per step of a longer chain, which long calls fill
	 * (aring_call_window) */
	p->window = slots;
	if (p->m > 1) {
		const uint32_t steps = 2 * p->m - 1;
		const uint32_t chain = steps < ARING_CHAIN_SLOTS_MAX ? steps : ARING_CHAIN_SLOTS_MAX;
		p->window = slots * (steps < ARING_WINDOW_STEPS ? steps : ARING_WINDOW_STEPS);
		p->slots = p->window > chain ? p->window : chain;
	}
	return 0;
too_many:
	snprintf(err, errlen, "agent-ring: more than %d ring members (racks with INA count once, other hosts each)",
		 ARING_MAX_MEMBERS);
bad:
	free(placed);
	aring_plan_free(p);
	return -EINVAL;
}

void aring_plan_free(struct aring_plan *p)
{
	free(p->worker_rank);
	free(p->worker_addr);
	free(p->member_of);
	free(p->index_of);
	free(p->mem);
	p->mem = NULL;
	p->worker_rank = p->member_of = p->index_of = NULL;
	p->worker_addr = NULL;
}

static unsigned outputs_of(const struct aring_plan *p, unsigned s)
{
	unsigned m = p->m;
	if (m == 1)
		return INA_OUT_MULTICAST;
	if (s + 2 <= m)
		return INA_OUT_FORWARD | INA_OUT_ACK;
	if (s + 2 < 2 * m)
		return INA_OUT_MULTICAST | INA_OUT_FORWARD | INA_OUT_ACK;
	return INA_OUT_MULTICAST | INA_OUT_ACK; /* the gather's last member */
}

void aring_job(const struct aring_plan *p, unsigned k, struct ina_job_cfg *c)
{
	const struct aring_member *mb = &p->mem[k];
	unsigned outs = p->m == 1 ? INA_OUT_MULTICAST : INA_OUT_MULTICAST | INA_OUT_FORWARD | INA_OUT_ACK;
	plan_job_init(c, p->job, p->dtype, p->slots, p->elems, outs);
	/* the soft member's own worker is contributor 0 at the rank's INA
	 * address; the ToR's workers are the rack's ranks */
	for (unsigned w = 0; w < mb->n; w++)
		c->contributors[c->fan_in++] = p->worker_addr[mb->first + w];
	if (p->m == 1)
		return;
	c->chain_steps = (uint16_t)aring_steps(p);
	c->upstream_index = c->fan_in;
	c->contributors[c->fan_in++] = p->mem[(k + p->m - 1) % p->m].agg;
	c->upstream_job = p->job;
	c->forward = (struct ina_peer){ .addr = p->mem[(k + 1) % p->m].agg,
					.job = p->job,
					.contributor = INA_CONTRIB_UPSTREAM };
}

uint32_t aring_call_window(const struct aring_plan *p, const struct aring_call *c)
{
	const size_t share = c->slices / ARING_CALL_SHARE;
	if (share <= p->window)
		return p->window;
	return share < p->slots ? (uint32_t)share : p->slots;
}

void aring_call_of(const struct aring_plan *p, size_t count, struct aring_call *c)
{
	c->count = count;
	c->padded = count && count < p->m ? p->m : count;
	size_t longest = (c->padded + p->m - 1) / p->m; /* elements of the largest chunk */
	c->rounds = (longest + p->elems - 1) / p->elems;
	c->slices = c->rounds * aring_steps(p);
}

void aring_slice_of(const struct aring_plan *p, const struct aring_call *c, unsigned k, size_t q, struct aring_step *o)
{
	const unsigned m = p->m, S = aring_steps(p), s = (unsigned)(q % S);
	const size_t r = q / S;
	unsigned out = outputs_of(p, s);
	o->step = s;
	o->chunk = (k + m - s % m) % m;
	/* chunks differ by one element at most, so with 2 or more elements
	 * per slice every chunk has at least `rounds` elements */
	size_t clo = c->padded * o->chunk / m, len = c->padded * (o->chunk + 1) / m - clo;
	o->lo = clo + len * r / c->rounds;
	o->hi = clo + len * (r + 1) / c->rounds;
	o->join = s >= m;
	o->need_ack = out & INA_OUT_FORWARD;
	o->need_result = out & INA_OUT_MULTICAST;
}
