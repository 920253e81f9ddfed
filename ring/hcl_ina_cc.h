/* SPDX-License-Identifier: BSD-3-Clause */
/* Congestion control for an INA window (ring/hcl_ina_win.h), as ATP does
 * it: queues mark what they hold past a threshold (ECN CE), an aggregator
 * carries the marks of a slot's contributions into its result
 * (INA_F_CE), and every sender of the slot cuts its window on a marked
 * answer, DCTCP-style, at most once per smoothed round trip; unmarked
 * answers add a slice per window of them, up to the window's cap.  The
 * signal is a queue's, never a round trip's: a slice's round trip
 * includes the wait for every other contributor, so a late worker looks
 * like a queue (AIMD on the round trip made ps-ina at 8 hosts 100x
 * slower), and losses come too late (AIMD on bursts of losses still
 * collapsed a 256-worker PS).  Off unless asked for: where measured it
 * gained nothing or lost (docs/CONGESTION.md). */
#ifndef HCL_INA_CC_H
#define HCL_INA_CC_H

#include <stdbool.h>
#include <stdint.h>

#define HCL_INACC_ONE 256 /* one slice, in the window's fixed point */

struct hcl_inacc {
	bool on;
	uint32_t cwnd;	  /* slices in flight allowed, in 1/256ths; 0: the cap (never cut) */
	uint32_t alpha;	  /* the share of answers marked, smoothed, in 1/1024ths (DCTCP's alpha) */
	uint32_t answers; /* in the current window of answers ... */
	uint32_t marked;  /* ... and how many of them came marked */
	int64_t cut_at;	  /* the latest cut */
	uint64_t marks;	  /* answers that came marked */
	uint64_t cuts;	  /* cuts */
	uint32_t lowest;  /* the least window it came to, in slices (0: never cut) */
};

/* The slices that may be in flight now, at most cap. */
static inline uint32_t hcl_inacc_allowed(const struct hcl_inacc *c, uint32_t cap)
{
	if (!c->on || !c->cwnd)
		return cap;
	uint32_t n = c->cwnd / HCL_INACC_ONE;
	n = n ? n : 1;
	return n < cap ? n : cap;
}

/* An answer (a result) came, marked or not, at now; srtt: the window's
 * smoothed round trip (0: none yet).  As DCTCP: the share of marked
 * answers, smoothed once per window of answers (gain 1/16), sets how deep
 * a cut goes (cwnd x (1 - alpha / 2), at most a halving, at most one per
 * round trip), so a queue that marks a few answers costs a few percent,
 * not half. */
static inline void hcl_inacc_answer(struct hcl_inacc *c, uint32_t cap, bool marked, int64_t now, int64_t srtt)
{
	if (!c->on)
		return;
	const uint32_t full = (cap ? cap : 1) * HCL_INACC_ONE;
	if (!c->cwnd || c->cwnd > full)
		c->cwnd = full;
	c->answers++;
	c->marked += marked;
	if (c->answers * HCL_INACC_ONE >= c->cwnd) { /* a window of answers */
		const uint32_t f = c->marked * 1024 / c->answers;
		c->alpha = c->alpha - c->alpha / 16 + f / 16;
		c->answers = c->marked = 0;
	}
	if (marked) {
		c->marks++;
		if (c->cuts && now - c->cut_at < srtt)
			return;					  /* one cut per round trip */
		const uint32_t a = c->alpha > 64 ? c->alpha : 64; /* the first mark cuts too */
		uint32_t w = (uint32_t)((uint64_t)c->cwnd * (2048 - a) / 2048);
		c->cwnd = w > HCL_INACC_ONE ? w : HCL_INACC_ONE;
		c->cut_at = now;
		c->cuts++;
		const uint32_t n = c->cwnd / HCL_INACC_ONE;
		if (!c->lowest || n < c->lowest)
			c->lowest = n;
		return;
	}
	c->cwnd += HCL_INACC_ONE * HCL_INACC_ONE / c->cwnd; /* a slice per window of answers */
	if (c->cwnd > full)
		c->cwnd = full;
}

#endif
