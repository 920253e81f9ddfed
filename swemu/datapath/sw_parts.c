/* SPDX-License-Identifier: BSD-3-Clause */
/* A partitioned switch's job changes.  Every partition's engine holds the
 * switch's jobs, each owned by its partition's lcore, and a job must never
 * exist on one partition and not on another while hosts use it (a DATA
 * there would be answered NACK: "job lost").  So partition 0's lcore,
 * which takes the control channel's commands, asks the partitions on other
 * lcores to stand still at their flush (a quiescent point: no frame in
 * hand), changes every engine, and lets them go.  Partitions on its own
 * lcore are quiescent already.  Waiting has a deadline: a partition that
 * does not stop in time fails the command, changed nowhere. */
#include <rte_cycles.h>
#include <rte_pause.h>

#include "sw_rt.h"

static bool elsewhere(const struct sw_lsw *sw0, const struct sw_lsw *p) { return p->lcore != sw0->lcore; }

void sw_parts_release(struct sw_lsw *sw0)
{
	for (int k = 1; k < sw0->cfg->partitions; k++)
		if (elsewhere(sw0, sw0->parts[k]))
			__atomic_store_n(&sw0->parts[k]->hold, 0, __ATOMIC_RELEASE);
}

bool sw_parts_hold(struct sw_lsw *sw0)
{
	uint32_t seq = ++sw0->hold_seq;
	if (!seq) /* 0 means "no request" */
		seq = ++sw0->hold_seq;
	for (int k = 1; k < sw0->cfg->partitions; k++)
		if (elsewhere(sw0, sw0->parts[k]))
			__atomic_store_n(&sw0->parts[k]->hold, seq, __ATOMIC_RELEASE);
	const uint64_t end = rte_get_timer_cycles() + rte_get_timer_hz() * SW_HOLD_WAIT_MS / 1000;
	for (int k = 1; k < sw0->cfg->partitions; k++) {
		const struct sw_lsw *p = sw0->parts[k];
		while (elsewhere(sw0, p) && __atomic_load_n(&p->held, __ATOMIC_ACQUIRE) != seq) {
			if (rte_get_timer_cycles() > end) {
				sw_parts_release(sw0);
				return false;
			}
			rte_pause();
		}
	}
	return true;
}

void sw_parts_stand_still(struct sw_lsw *p)
{
	uint32_t h;
	/* echo the request while it lasts: partition 0 may lift one and ask
	 * again before this lcore sees the lift */
	while ((h = __atomic_load_n(&p->hold, __ATOMIC_ACQUIRE)) != 0) {
		__atomic_store_n(&p->held, h, __ATOMIC_RELEASE);
		rte_pause();
	}
}
