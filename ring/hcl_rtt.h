/* SPDX-License-Identifier: BSD-3-Clause */
/* A retransmission timer that follows the measured round trip (RFC 6298
 * smoothing), for the INA clients: a slot's "round trip" includes the
 * wait for the other contributors and for queues on rate-limited links,
 * which a fixed timer either fires into (spurious re-sends that fill the
 * queue further) or waits out needlessly.  Samples only from slices sent
 * once (Karn), and, as Karn's algorithm also says, a timer that expired
 * stays backed off for the slices sent after it until one of them gives a
 * sample: otherwise, once the round trip outgrew the timer, every slice was
 * re-sent before its result came, none gave a sample, and the timer never
 * learnt (agent-ring on 200 Mbit/s links: three re-sends per slice). */
#ifndef HCL_RTT_H
#define HCL_RTT_H

#include <stdint.h>

#define HCL_RTT_MAX_SHIFT 6 /* back-off of one timer: at most 64x */

struct hcl_rtt {
	int64_t srtt, rttvar, floor, cap; /* ns; srtt 0 = no sample yet */
	unsigned backoff;		  /* doublings kept for new slices (Karn) */
	int64_t backoff_at;		  /* when it last grew: one step per round of expiries */
};

static inline void hcl_rtt_init(struct hcl_rtt *r, int64_t floor_ns, int64_t cap_ns)
{
	*r = (struct hcl_rtt){ .floor = floor_ns, .cap = cap_ns };
}

static inline void hcl_rtt_sample(struct hcl_rtt *r, int64_t m)
{
	if (m <= 0)
		return;
	r->backoff = 0;
	if (!r->srtt) {
		r->srtt = m;
		r->rttvar = m / 2;
		return;
	}
	int64_t d = m > r->srtt ? m - r->srtt : r->srtt - m;
	r->rttvar += (d - r->rttvar) / 4;
	r->srtt += (m - r->srtt) / 8;
}

/* A slice sent at sent_at timed out at now: the timer doubles for what is
 * sent from now on, once per round (the slices of one window expire
 * together). */
static inline void hcl_rtt_expired(struct hcl_rtt *r, int64_t sent_at, int64_t now)
{
	if (sent_at >= r->backoff_at && r->backoff < HCL_RTT_MAX_SHIFT) {
		r->backoff++;
		r->backoff_at = now;
	}
}

/* The timeout after `tries` re-sends: srtt + 4 rttvar, doubled per
 * re-send and per kept back-off (up to 64x), within [floor, cap]: the
 * callers' deadlines are seconds, and a timer past them would turn one lost
 * result into a failed call. */
static inline int64_t hcl_rtt_rto(const struct hcl_rtt *r, unsigned tries)
{
	int64_t t = r->srtt ? r->srtt + 4 * r->rttvar : r->floor;
	t = t < r->floor ? r->floor : t > r->cap ? r->cap : t;
	unsigned shift = tries + r->backoff;
	t <<= shift < HCL_RTT_MAX_SHIFT ? shift : HCL_RTT_MAX_SHIFT;
	return t > r->cap ? r->cap : t;
}

#endif
