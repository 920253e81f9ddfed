/* SPDX-License-Identifier: BSD-3-Clause */
/* A frame's way out of a logical switch: the FDB's port or a flood within
 * its VLAN, the trunk's tag, the port's link emulation, then the device's
 * transmit buffer or the peer port's queue; and the named drop on every
 * way it can end.  Both the input path (sw_dp.c) and the switch's own
 * frames (sw_result.c, sw_ctrl_lcore.c) send through here, which calls back
 * into neither.  The forwarding path inlines the per-frame steps (a call
 * chain of forward, send and deliver cost ~60 instructions a frame in
 * prologues alone); the rare ones are functions in sw_out.c. */
#ifndef SW_OUT_H
#define SW_OUT_H

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "sw_rt.h"

static inline void sw_drop(struct sw_port *p, enum sw_drop why, struct rte_mbuf *m)
{
	p->st.drops[why]++;
	rte_pktmbuf_free(m);
}

/* A chained frame as one segment (sw_out.c). */
struct rte_mbuf *sw_flatten(struct rte_mempool *pool, struct rte_mbuf *m, struct sw_port *blame);
/* m, or a copy that may be changed in place with `room` bytes of headroom;
 * NULL when out of mbufs (counted at p; sw_out.c). */
struct rte_mbuf *sw_writable(struct sw_rt *rt, struct sw_port *p, struct rte_mbuf *m, uint16_t room);
/* A trunk's 802.1Q tag added (sw_out.c). */
struct rte_mbuf *sw_add_tag(struct sw_rt *rt, struct sw_port *p, struct rte_mbuf *m, uint16_t vlan);
/* m marked congestion-experienced where it is ECN-capable IPv4 (copied
 * first when shared), counted at p; NULL when out of mbufs (sw_out.c). */
struct rte_mbuf *sw_mark_ce(struct sw_rt *rt, struct sw_port *p, struct rte_mbuf *m);
/* Every other port of the VLAN (sw_out.c). */
void sw_flood(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t vlan, struct rte_mbuf *m);

/* Past the emulation: onto the device, or into the peer port's queue. */
static inline __attribute__((always_inline)) void sw_deliver(struct sw_rt *rt, struct sw_port *p, struct rte_mbuf *m)
{
	if (unlikely(p->sw->cap.f)) /* what leaves the port, after its emulated link */
		sw_capture_frame(&p->sw->cap, p->index, SW_CAP_TX, m);
	if (p->ext) {
		if (m->nb_segs > 1 && !p->tx_multi_seg && !(m = sw_flatten(rt->pool, m, p)))
			return;
		p->st.tx_packets++;
		p->st.tx_bytes += rte_pktmbuf_pkt_len(m);
		rte_eth_tx_buffer(p->dev, p->queue, p->txb, m); /* failures: tx_full callback */
		return;
	}
	uint32_t len = rte_pktmbuf_pkt_len(m);
	if (rte_ring_sp_enqueue(p->peer->lq, m) != 0) {
		sw_drop(p, SW_D_TX_FULL, m);
		return;
	}
	p->st.tx_packets++;
	p->st.tx_bytes += len; /* m may be the peer's already */
}

/* Inline into the forwarding path (a call chain of forward, send and
 * deliver cost ~60 instructions a frame in prologues alone); the exported
 * functions wrap it. */
static inline __attribute__((always_inline)) void sw_send_port_inline(struct sw_rt *rt, struct sw_port *p,
								      struct rte_mbuf *m, uint16_t vlan)
{
	if (p->tagged && vlan != p->cfg->vlan && !(m = sw_add_tag(rt, p, m, vlan)))
		return;
	if (!sw_netem_active(&p->netem)) {
		sw_deliver(rt, p, m);
		return;
	}
	if (sw_netem_marks(&p->netem, p->sw->now_ns) && !(m = sw_mark_ce(rt, p, m)))
		return;
	switch (sw_netem_enqueue(&p->netem, m, rte_pktmbuf_pkt_len(m), p->sw->now_ns)) {
	case SW_NETEM_QUEUED: break;
	case SW_NETEM_DROP_LOSS: sw_drop(p, SW_D_EMULATED_LOSS, m); break;
	case SW_NETEM_DROP_BUFFER: sw_drop(p, SW_D_BUFFER_OVERFLOW, m); break;
	case SW_NETEM_DROP_INFLIGHT: sw_drop(p, SW_D_EMULATOR_FULL, m); break;
	}
}

static inline __attribute__((always_inline)) void sw_forward_l2_inline(struct sw_rt *rt, struct sw_lsw *sw,
								       struct sw_port *in, uint16_t vlan,
								       struct rte_mbuf *m, const uint8_t *dst)
{
	int out = dst[0] & 1 ? -1 : sw_fdb_lookup(&sw->fdb, dst, vlan, sw->now_s);
	if (out < 0) {
		sw_flood(rt, sw, in, vlan, m);
		return;
	}
	if (in && out == in->index) {
		sw_drop(in, SW_D_SAME_PORT, m);
		return;
	}
	sw_send_port_inline(rt, &sw->ports[out], m, vlan);
}

#endif
