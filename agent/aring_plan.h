/* SPDX-License-Identifier: BSD-3-Clause */
/* The agent-ring plan (Rina, docs/AGENTRING.md): who is a ring member,
 * which chunk each member aggregates at each step, and the one switch job
 * every member runs for all of them.  A pure function of the rendezvous
 * table, so every rank derives the same plan; unit-tested without a
 * network.
 *
 * Members: an INA rack is one member (its ToR aggregates, its ranks are the
 * member's workers); every rank of a rack without INA is a member of its
 * own (an autonomous host running the engine in software).  Ring order:
 * racks in order of their lowest rank, ranks in rank order within a rack.
 *
 * With m members the tensor is cut into m chunks, each chunk into R
 * slices of about equal size (R: rounds, as few as slices of `elems`
 * allow), and a call is R rounds of S = 2m - 1 steps.  Member k's slice
 * seq q is round q / S, step s = q % S, on chunk (k - s) mod m:
 *   s <= m-2   reduce:  workers' data (+ the upstream's partial if s > 0),
 *                       forwarded to member k+1 as its slice q + 1;
 *   s == m-1   owner:   the last addition; the complete slice is multicast
 *                       to the workers and forwarded to start the gather;
 *   s >= m     gather:  the upstream's complete slice plus the workers'
 *                       joins; multicast, and forwarded unless s == 2m-2.
 * All of it is one engine job per member (ina_job_cfg.chain_steps = S),
 * whose slots every step shares: a worker sends its slices in seq order,
 * slice q into slot q % slots, so a member holds `slots` slices in flight
 * (the slots asked for, times 2m - 1 up to 8) whatever m is.  Every step with an upstream acknowledges it on
 * completion; a forwarding step is finished for its workers when the
 * downstream's ACK comes back.  One member (m == 1) is plain SwitchML. */
#ifndef ARING_PLAN_H
#define ARING_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "ina_engine.h"

struct aring_member {
	bool ina; /* an INA rack, or an autonomous host */
	int rack;
	struct ina_addr agg; /* its aggregator: the ToR, or the host's software member */
	unsigned first, n;   /* its workers: worker_rank[first .. first+n-1] */
};

struct aring_plan {
	unsigned m, world;
	struct aring_member *mem;     /* m entries, in ring order */
	unsigned *worker_rank;	      /* world entries, member by member */
	struct ina_addr *worker_addr; /* their INA addresses, same order */
	unsigned *member_of;	      /* per rank */
	unsigned *index_of;	      /* per rank: its contributor index in its member's job */
	uint16_t job;		      /* every member's job id */
	uint8_t dtype;
	/* per member: the job's slots, slice q in slot q % slots: the
	 * window, or one per step of the chain up to ARING_CHAIN_SLOTS_MAX */
	uint32_t slots;
	/* a worker's slices in flight at least: the slots asked for x
	 * min(2m - 1, ARING_WINDOW_STEPS); more in a long call
	 * (aring_call_window) */
	uint32_t window;
	uint16_t elems; /* per slice, at most (at least 2) */
};

#define ARING_WINDOW_STEPS    8
/* A chain of many members waits for a window of ARING_WINDOW_STEPS steps'
 * slices, not for its links: its job has a slot per step (up to this
 * many), and a long call keeps up to a quarter of its slices in flight in them
 * (aring_call_window).  swemu-sim, 16 MiB, 25G, no compute noise: 64 host
 * members, 8 x 8 slices in flight 16.6 ms a call against a busiest link
 * of 10.7; 127 (a slice per step), 10.8.  256 hosts, half the racks INA
 * (136 members): 8 x 8, 23.5 against 10.8; 256, 11.2.  A slice per step
 * in every call lost at 1 MiB on 200M links with 12 of 16 racks INA,
 * 127.9 -> 217.4 ms: the whole message in flight overflowed the 256K
 * queues.  The cap: each member's aggregator holds two sets of as many
 * slots, and in the simulator every host member has an engine. */
#define ARING_CHAIN_SLOTS_MAX 256
#define ARING_CALL_SHARE      4

/* ranks[i].tor.ip != 0 marks an INA rack (its ToR's address and MAC in
 * .tor); soft[i] is where rank i's software member listens (used when its
 * rack has no INA).  0, or -EINVAL / -ENOMEM with err. */
int aring_plan_build(const struct plan_rank *ranks, const struct ina_addr *soft, unsigned world, uint16_t job,
		     uint8_t dtype, uint32_t slots, uint16_t elems, struct aring_plan *p, char *err, size_t errlen);
void aring_plan_free(struct aring_plan *p);

static inline unsigned aring_steps(const struct aring_plan *p) { return 2 * p->m - 1; }

/* The job member k runs for every step. */
void aring_job(const struct aring_plan *p, unsigned k, struct ina_job_cfg *out);

/* A call of count elements: every chunk is cut into `rounds` slices, and
 * each member sends `slices` = rounds x S of them, seq 0 .. slices-1.
 * Fewer elements than members are padded with zeros to m (elements
 * count .. padded-1 are sent as 0 and their results dropped). */
struct aring_call {
	size_t count, padded, rounds, slices;
};
void aring_call_of(const struct aring_plan *p, size_t count, struct aring_call *out);
/* The slices a worker keeps in flight in call c: the plan's window, or
 * 1 / ARING_CALL_SHARE of the call's slices where that is more, at most
 * the job's slots (with 1/2, 12 of 16 racks INA at 1 MiB and 200M had
 * the whole message in flight again).
 * Started in seq order, each into its slot once that is free; with two
 * or more in flight the chain cannot deadlock (the lowest slice in
 * flight anywhere has its upstream done and every worker able to send
 * it and the next one). */
uint32_t aring_call_window(const struct aring_plan *p, const struct aring_call *c);

/* What a worker of member k does with its slice seq q of the call:
 * contribute elements [lo, hi) of the (padded) tensor (or only join), and
 * wait for the downstream's ACK and/or the result. */
struct aring_step {
	unsigned step, chunk;
	size_t lo, hi;
	bool join, need_ack, need_result;
};
void aring_slice_of(const struct aring_plan *p, const struct aring_call *c, unsigned k, size_t q,
		    struct aring_step *out);

/* Of slice st's elements, how many are the tensor's (the rest, from
 * c->count on, is padding). */
static inline size_t aring_real(const struct aring_call *c, const struct aring_step *st)
{
	return st->hi <= c->count ? st->hi - st->lo : st->lo < c->count ? c->count - st->lo : 0;
}

/* Hops on the longest dependency chain of one slice (2(m-1)). */
static inline unsigned aring_chain(const struct aring_plan *p) { return 2 * (p->m - 1); }

#endif
