/* SPDX-License-Identifier: BSD-3-Clause */
/* What the plans of the algorithms that use switches (ps-ina: agent/
 * psina_plan.h, agent-ring: agent/aring_plan.h) start from: the rendezvous
 * table.  Plans are pure functions of it, so every rank derives the same
 * plan without another exchange, and unit tests check them without a
 * network. */
#ifndef PLAN_H
#define PLAN_H

#include <string.h>

#include "ina_engine.h"

#define PLAN_MAX_RACKS 64

/* One rank as the rendezvous table describes it (addresses in network order). */
struct plan_rank {
	struct ina_addr ina; /* its INA socket: ip, port, mac */
	int rack;
	struct ina_addr tor; /* its rack's INA ToR (ip, port); ip 0: none */
};

/* An empty job: no contributors, no upstream, the given outputs. */
static inline void plan_job_init(struct ina_job_cfg *j, uint16_t id, uint8_t dtype, uint32_t slots, uint16_t elems,
				 unsigned outputs)
{
	memset(j, 0, sizeof(*j));
	j->id = id;
	j->dtype = dtype;
	j->nslots = slots;
	j->elems_per_slot = elems;
	j->outputs = outputs;
	j->upstream_index = -1;
}

#endif
