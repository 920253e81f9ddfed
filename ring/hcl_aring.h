/* SPDX-License-Identifier: BSD-3-Clause */
/* The agent-ring worker: what every rank runs for an agent-ring all-reduce
 * (docs/AGENTRING.md).  It talks to its member's aggregator only — the
 * rack's INA ToR, or the rank's own software member — through the member's
 * one job: a window of `slots` slices over every step, sent in seq order
 * (agent/aring_plan.h), DATA (or a join) re-sent on timeout, a slice done
 * when what its step promises has come back (the downstream's ACK, the
 * result, or both).  Slot sets alternate per slot for the life of the
 * worker, as the engine requires. */
#ifndef HCL_ARING_H
#define HCL_ARING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hcl.h"
#include "dgram.h"
#include "aring_plan.h"

struct hcl_aring;

/* The re-send timer follows the round trip, never below this. */
#define HCL_ARING_RTO_FLOOR_NS	5000000
/* A slice sent before the chain has reached this member waits for the
 * members upstream, not for the network: until a slice of the call has
 * finished here, the timer is at least this long (doubled per re-send)
 * and no round trip is sampled.  On the trial's 200 Mbit/s
 * links this halved what the workers sent twice (about 1000 to 450 packets
 * per worker over five 4 MB calls).  Still a timer, not a wait: a lost
 * packet must never hang the ring.  (testbed/sim/ runs the same rule.) */
#define HCL_ARING_CHAIN_WAIT_NS 100000000

/* plan: borrowed, must outlive the worker; rank: this worker. */
struct hcl_aring *hcl_aring_new(const struct aring_plan *plan, unsigned rank, struct dgram_transport *t, char *err,
				size_t errlen);
void hcl_aring_free(struct hcl_aring *a);
/* fn(ctx) on every turn of the wait loop (see struct hcl_ina_cfg.poll). */
void hcl_aring_set_poll(struct hcl_aring *a, int (*fn)(void *ctx), void *ctx);

/* dst = sum over ranks of src (count elements of the plan's dtype);
 * src == dst is in place.  0 or a negative errno, err naming the member
 * the worker was waiting for. */
int hcl_aring_allreduce(struct hcl_aring *a, const void *src, void *dst, size_t count, int64_t deadline_ns, char *err,
			size_t errlen);

/* A call whose member's aggregator answers nothing for lost_ns (any step,
 * results and ACKs alike) ends -ENETDOWN; 0 (the default): only the
 * deadline ends it. */
void hcl_aring_set_lost(struct hcl_aring *a, int64_t lost_ns);
/* on: the worker's window follows ECN marks carried in its answers
 * (INA_F_CE; ring/hcl_ina_cc.h), as the simulator's does with --inaCc;
 * off (the default): the testbed's queues do not mark.  hcl_aring_cc: the
 * answers that came marked, the window's cuts, the least it came to (in
 * slices; 0: never cut). */
void hcl_aring_set_cc(struct hcl_aring *a, bool on);
void hcl_aring_cc(const struct hcl_aring *a, uint64_t *marks, uint64_t *cuts, uint32_t *lowest);
/* The re-send timers' floor x scale (time dilation; see HCL_TIMER_SCALE). */
void hcl_aring_set_timer_scale(struct hcl_aring *a, double scale);
/* The last call's input, whole (src, or its copy when the call was in
 * place): what a call that failed can start again from. */
const void *hcl_aring_input(const struct hcl_aring *a);
/* The last call's input when the worker keeps a copy of it (the call was
 * in place; count: its elements), else NULL; and the same for the call
 * before it. */
const void *hcl_aring_last_input(const struct hcl_aring *a, size_t *count);
const void *hcl_aring_prev_input(const struct hcl_aring *a, size_t *count);

/* The worker's rule for what starts after its slice q finished (q:
 * SIZE_MAX at the call's start), each by start(ctx, slice); the
 * simulator's worker runs it too.  w->window is the call's cap
 * (aring_call_window); at the job's slots, the slot's next slice, q +
 * slots, at once (slices finish out of order, and each slot goes on by
 * itself); under a smaller cap, the next slices in order (*next) while
 * fewer than the cap are in flight (done of them finished) and the next
 * one's slot is free.  With w->cc.on the cap is what the marks allow
 * (hcl_inacc_allowed), and at the job's slots each slot still goes on by
 * itself, the oldest waiting slice first, while fewer than that are in
 * flight, or whenever at most one of them is older. */
struct hcl_inaw;
void hcl_aring_fill(const struct aring_plan *p, const struct aring_call *c, const struct hcl_inaw *w, size_t done,
		    size_t *next, size_t q, void (*start)(void *ctx, size_t slice), void *ctx);

/* What is still in flight (for HCL_DEBUG after a failed call). */
void hcl_aring_dump(const struct hcl_aring *a, FILE *f);

struct hcl_aring_stats {
	uint64_t sent, resent, results, acks, stale;
	uint64_t overflows; /* results flagged INA_F_OVERFLOW: the call fails -EOVERFLOW */
	uint64_t marked;    /* answers flagged INA_F_CE: a queue on the way was filling */
};
const struct hcl_aring_stats *hcl_aring_stats(const struct hcl_aring *a);

#endif
