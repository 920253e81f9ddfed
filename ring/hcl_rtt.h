/* A retransmission timer that follows the measured round trip (RFC 6298
 * smoothing), for the INA clients: a slot's "round trip" includes the
 * wait for the other contributors and for queues on rate-limited links,
 * which a fixed timer either fires into (spurious re-sends that fill the
 * queue further) or waits out needlessly.  Samples only from slices sent
 * once (Karn). */
#ifndef HCL_RTT_H
#define HCL_RTT_H

#include <stdint.h>

struct hcl_rtt {
	int64_t srtt, rttvar, floor, cap; /* ns; srtt 0 = no sample yet */
};

static inline void hcl_rtt_init(struct hcl_rtt *r, int64_t floor_ns, int64_t cap_ns)
{
	*r = (struct hcl_rtt){ 0, 0, floor_ns, cap_ns };
}

static inline void hcl_rtt_sample(struct hcl_rtt *r, int64_t m)
{
	if (m <= 0)
		return;
	if (!r->srtt) {
		r->srtt = m;
		r->rttvar = m / 2;
		return;
	}
	int64_t d = m > r->srtt ? m - r->srtt : r->srtt - m;
	r->rttvar += (d - r->rttvar) / 4;
	r->srtt += (m - r->srtt) / 8;
}

/* The timeout after `tries` re-sends: srtt + 4 rttvar within [floor, cap],
 * doubled per re-send up to 8x. */
static inline int64_t hcl_rtt_rto(const struct hcl_rtt *r, unsigned tries)
{
	int64_t t = r->srtt ? r->srtt + 4 * r->rttvar : r->floor;
	t = t < r->floor ? r->floor : t > r->cap ? r->cap : t;
	return t << (tries < 3 ? tries : 3);
}

#endif
