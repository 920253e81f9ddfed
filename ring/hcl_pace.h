/* SPDX-License-Identifier: BSD-3-Clause */
/* The pacing decision (issue 6, DESIGN.md section 6): how long a rank that
 * keeps reaching the synchronisation point early should wait before it
 * starts sending, so that arrivals line up and early senders do not fill
 * shared links.  Pure arithmetic on the rank's own arrival history, so it
 * is tested on synthetic traces; measuring arrivals is the caller's part.
 *
 * Rule: keep the last `window` earliness samples (how long before the
 * latest rank this rank was ready, measured before any delay it inserted).
 * Pace only when the window is full and every sample in it exceeds the
 * threshold — the larger of `threshold` and `rel_threshold` times the
 * iteration period the caller reports — the minimum is the estimate, so a single hiccup of another
 * rank never triggers pacing and one balanced iteration switches it off.
 * The delay is `fraction` of that minimum, at most `max_delay`. */
#ifndef HCL_PACE_H
#define HCL_PACE_H

#include <stdbool.h>
#include <stdint.h>

#define HCL_PACE_MAX_WINDOW 64

struct hcl_pace_cfg {
	int64_t threshold_ns; /* 0: 2 ms */
	double rel_threshold; /* of the iteration period; 0: 0.2 (negative: none) */
	double fraction;      /* 0: 0.5 */
	int64_t max_delay_ns; /* 0: 20 ms */
	unsigned window;      /* 0: 8; at most HCL_PACE_MAX_WINDOW */
};

struct hcl_pace {
	struct hcl_pace_cfg cfg;
	int64_t early[HCL_PACE_MAX_WINDOW];
	unsigned n, next;
	int64_t delay_ns; /* the current decision */
};

void hcl_pace_init(struct hcl_pace *p, const struct hcl_pace_cfg *cfg);
/* One synchronisation point: this rank was ready early_ns before the last
 * rank (0 if it was the last; negative values count as 0); period_ns is
 * the current iteration time (0 if unknown).  Returns the delay to insert
 * before the next one. */
int64_t hcl_pace_update(struct hcl_pace *p, int64_t early_ns, int64_t period_ns);
static inline bool hcl_pace_active(const struct hcl_pace *p) { return p->delay_ns > 0; }

#endif
