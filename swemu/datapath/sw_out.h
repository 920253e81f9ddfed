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

/* Which of a partitioned peer's n partitions takes frame m over a link:
 * as the testbed's hosts steer theirs (testbed/topo/steer_udp.bpf.c), a
 * datagram to INA port q goes to (q - 48864) mod n, where the slot it
 * carries is summed, one to the control port to partition 0, which
 * serves it; other IPv4 flows by a hash of their addresses and ports (a
 * flow stays in order), anything else to partition 0. */
static inline unsigned sw_link_partition(const struct rte_mbuf *m, unsigned n, uint16_t ctrl_port)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	const uint32_t len = rte_pktmbuf_data_len(m);
	if (len < SW_ETH_HLEN + SW_IP_HLEN || sw_be16_at(f + 12) != SW_ETHERTYPE_IPV4)
		return 0;
	const uint8_t *ip = f + SW_ETH_HLEN;
	const unsigned ihl = (ip[0] & 0xfu) * 4u;
	uint32_t a, b, ports = 0;
	memcpy(&a, ip + 12, 4);
	memcpy(&b, ip + 16, 4);
	const bool first = !(sw_be16_at(ip + 6) & 0x1fff);
	if ((ip[9] == 17 || ip[9] == 6) && first && ihl >= SW_IP_HLEN && len >= SW_ETH_HLEN + ihl + 4) {
		const uint16_t dport = sw_be16_at(ip + ihl + 2);
		if (ip[9] == 17 && dport >= INA_UDP_PORT_MIN && dport <= INA_UDP_PORT_MAX)
			return (dport - INA_UDP_PORT_MIN) % n;
		if (ip[9] == 17 && dport == ctrl_port)
			return 0;
		ports = sw_be16_at(ip + ihl) ^ (uint32_t)dport;
	}
	uint32_t h = (a ^ b ^ ports) * 0x9e3779b1u; /* both directions alike, as a flow's hash */
	return (h >> 16) % n;
}

/* Past the emulation: onto the device, or into the peer port's queue (of
 * the partition sw_link_partition picks, when the peer has several). */
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
	const struct sw_port *to = p->peer[0];
	if (p->npeer > 1)
		to = p->peer[sw_link_partition(m, p->npeer, to->sw->cfg->ctrl_port)];
	if (rte_ring_enqueue(to->lq, m) != 0) { /* several partitions may send: their flags say */
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
