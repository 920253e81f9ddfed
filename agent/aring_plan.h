/* SPDX-License-Identifier: BSD-3-Clause */
/* The agent-ring plan (Rina, docs/AGENTRING.md): who is a ring member, which
 * chunk each member aggregates at each step, and the switch job every
 * member runs for every step.  A pure function of the rendezvous table, so
 * every rank derives the same plan; unit-tested without a network.
 *
 * Members: an INA rack is one member (its ToR aggregates, its ranks are the
 * member's workers); every rank of a rack without INA is a member of its
 * own (an autonomous host running the engine in software).  Ring order:
 * racks in order of their lowest rank, ranks in rank order within a rack.
 *
 * With m members the tensor is cut into m chunks and every member runs
 * 2m-1 steps, step s on chunk (k - s) mod m, as job job0 + s:
 *   s <= m-2   reduce:  workers' data (+ the upstream's partial if s > 0),
 *                       forwarded to member k+1's step s+1;
 *   s == m-1   owner:   the last addition; the complete chunk is multicast
 *                       to the workers and forwarded to start the gather;
 *   s >= m     gather:  the upstream's complete chunk plus the workers'
 *                       joins; multicast, and forwarded unless s == 2m-2.
 * Every step with an upstream acknowledges it on completion; a forwarding
 * step is finished for its workers when the downstream's ACK comes back.
 * One member (m == 1) is plain SwitchML. */
#ifndef ARING_PLAN_H
#define ARING_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "ina_engine.h"

#define ARING_MAX_MEMBERS 16 /* 2 data types x (2m-1) jobs must fit a switch's 64 */

struct aring_member {
	bool ina; /* an INA rack, or an autonomous host */
	int rack;
	struct ina_addr agg; /* its aggregator: the ToR, or the host's software member */
	unsigned first, n;   /* its workers: worker_rank[first .. first+n-1] */
};

struct aring_plan {
	unsigned m, world;
	struct aring_member mem[ARING_MAX_MEMBERS];
	unsigned *worker_rank;	      /* world entries, member by member */
	struct ina_addr *worker_addr; /* their INA addresses, same order */
	unsigned *member_of;	      /* per rank */
	unsigned *index_of;	      /* per rank: its contributor index in its member's jobs */
	uint16_t job0;
	uint8_t dtype;
	uint32_t slots;
	uint16_t elems;
};

/* ranks[i].tor.ip != 0 marks an INA rack (its ToR's address and MAC in
 * .tor); soft[i] is where rank i's software member listens (used when its
 * rack has no INA).  0, or -EINVAL with err. */
int aring_plan_build(const struct plan_rank *ranks, const struct ina_addr *soft, unsigned world, uint16_t job0,
		     uint8_t dtype, uint32_t slots, uint16_t elems, struct aring_plan *p, char *err, size_t errlen);
void aring_plan_free(struct aring_plan *p);

static inline unsigned aring_steps(const struct aring_plan *p) { return 2 * p->m - 1; }

/* The job member k runs for step s. */
void aring_job(const struct aring_plan *p, unsigned k, unsigned s, struct ina_job_cfg *out);

/* What a worker of member k does at step s for a count-element tensor:
 * contribute elements [lo, hi) of chunk `chunk` (or only join), and wait
 * for the downstream's ACK and/or the result. */
struct aring_step {
	unsigned chunk;
	size_t lo, hi;
	bool join, need_ack, need_result;
};
void aring_step_of(const struct aring_plan *p, unsigned k, unsigned s, size_t count, struct aring_step *out);

/* Hops on the longest dependency chain of one chunk (2(m-1)). */
static inline unsigned aring_chain(const struct aring_plan *p) { return 2 * (p->m - 1); }

#endif
