/* SPDX-License-Identifier: BSD-3-Clause */
#include "aring_plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int aring_plan_build(const struct plan_rank *r, const struct ina_addr *soft, unsigned world, uint16_t job0,
		     uint8_t dtype, uint32_t slots, uint16_t elems, struct aring_plan *p, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->world = world;
	p->job0 = job0;
	p->dtype = dtype;
	p->slots = slots;
	p->elems = elems;
	p->worker_rank = calloc(world, sizeof(unsigned));
	p->worker_addr = calloc(world, sizeof(struct ina_addr));
	p->member_of = calloc(world, sizeof(unsigned));
	p->index_of = calloc(world, sizeof(unsigned));
	bool *placed = calloc(world, 1);
	if (!p->worker_rank || !p->worker_addr || !p->member_of || !p->index_of || !placed) {
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

void aring_job(const struct aring_plan *p, unsigned k, unsigned s, struct ina_job_cfg *c)
{
	const struct aring_member *mb = &p->mem[k];
	plan_job_init(c, (uint16_t)(p->job0 + s), p->dtype, p->slots, p->elems, outputs_of(p, s));
	/* the soft member's own worker is contributor 0 at the rank's INA
	 * address; the ToR's workers are the rack's ranks */
	for (unsigned w = 0; w < mb->n; w++)
		c->contributors[c->fan_in++] = p->worker_addr[mb->first + w];
	if (s > 0) {
		c->upstream_index = c->fan_in;
		c->contributors[c->fan_in++] = p->mem[(k + p->m - 1) % p->m].agg;
		c->upstream_job = (uint16_t)(p->job0 + s - 1);
	}
	if (c->outputs & INA_OUT_FORWARD)
		c->forward = (struct ina_peer){ .addr = p->mem[(k + 1) % p->m].agg,
						.job = (uint16_t)(p->job0 + s + 1),
						.contributor = INA_CONTRIB_UPSTREAM };
}

void aring_step_of(const struct aring_plan *p, unsigned k, unsigned s, size_t count, struct aring_step *o)
{
	unsigned m = p->m, out = outputs_of(p, s);
	o->chunk = (k + m - s % m) % m;
	o->lo = count * o->chunk / m;
	o->hi = count * (o->chunk + 1) / m;
	o->join = s >= m;
	o->need_ack = out & INA_OUT_FORWARD;
	o->need_result = out & INA_OUT_MULTICAST;
}
