/* SPDX-License-Identifier: BSD-3-Clause */
/* The out-of-line steps of a frame's way out (sw_out.h), the transmit
 * buffers' drop callback, and the switch's mbufs. */
#include <string.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "sw_out.h"

/* A chained frame (header + shared payload of a multicast) as one segment,
 * for a device that cannot send chains and for switches that read frames
 * whole.  NULL (frame freed, drop counted at blame) if that cannot be done. */
struct rte_mbuf *sw_flatten(struct rte_mempool *pool, struct rte_mbuf *m, struct sw_port *blame)
{
	if (m->nb_segs == 1)
		return m;
	struct rte_mbuf *f = NULL;
	uint32_t len = rte_pktmbuf_pkt_len(m);
	if (len + RTE_PKTMBUF_HEADROOM > rte_pktmbuf_data_room_size(pool)) {
		blame->st.drops[SW_D_MULTI_SEGMENT]++;
	} else if (!(f = rte_pktmbuf_alloc(pool))) {
		blame->st.drops[SW_D_NO_MBUF]++;
	} else {
		uint8_t *d = rte_pktmbuf_mtod(f, uint8_t *);
		const void *src = rte_pktmbuf_read(m, 0, len, d);
		if (src != d)
			memcpy(d, src, len);
		f->data_len = f->pkt_len = len;
	}
	rte_pktmbuf_free(m);
	return f;
}

/* m, or a copy of it (m's reference released) when others still read it
 * (flooded, a shared payload's owner) or its headroom is under `room`: a
 * frame whose tag changes in place.  NULL when out of mbufs (counted at p). */
struct rte_mbuf *sw_writable(struct sw_rt *rt, struct sw_port *p, struct rte_mbuf *m, uint16_t room)
{
	if (rte_mbuf_refcnt_read(m) == 1 && RTE_MBUF_DIRECT(m) && rte_pktmbuf_headroom(m) >= room)
		return m;
	struct rte_mbuf *c = rte_pktmbuf_copy(m, rt->pool, 0, UINT32_MAX);
	rte_pktmbuf_free(m);
	if (!c)
		p->st.drops[SW_D_NO_MBUF]++;
	return c;
}

/* The 802.1Q tag of a frame leaving a trunk port, in the headroom of a
 * writable frame.  NULL when out of mbufs (counted). */
__attribute__((noinline)) struct rte_mbuf *sw_add_tag(struct sw_rt *rt, struct sw_port *p, struct rte_mbuf *m,
						      uint16_t vlan)
{
	if (!(m = sw_writable(rt, p, m, sizeof(struct rte_vlan_hdr))))
		return NULL;
	m->vlan_tci = vlan;
	if (rte_vlan_insert(&m) != 0) {
		sw_drop(p, SW_D_NO_MBUF, m);
		return NULL;
	}
	return m;
}

/* Out of line: only a queue past its mark threshold asks. */
__attribute__((noinline)) struct rte_mbuf *sw_mark_ce(struct sw_rt *rt, struct sw_port *p, struct rte_mbuf *m)
{
	const size_t at = sw_frame_ect_ip(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len);
	if (!at)
		return m; /* not ECN-capable: the queue's buffer decides alone */
	if (!(m = sw_writable(rt, p, m, 0)))
		return NULL;
	sw_frame_set_ce(rte_pktmbuf_mtod_offset(m, uint8_t *, at)); /* a copy has the same headers */
	p->st.ecn_marks++;
	return m;
}

void sw_send_port(struct sw_rt *rt, struct sw_port *p, struct rte_mbuf *m, uint16_t vlan)
{
	sw_send_port_inline(rt, p, m, vlan);
}

/* Every other port of the VLAN gets the same (read-only) mbuf. */
void sw_flood(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t vlan, struct rte_mbuf *m)
{
	int n = 0;
	for (int i = 0; i < sw->nports; i++)
		n += &sw->ports[i] != in && sw_port_carries(&sw->ports[i], vlan);
	sw->st.flooded++;
	if (n <= 0) {
		rte_pktmbuf_free(m);
		return;
	}
	/* every segment: a multicast result is a header chained to a shared
	 * payload, and each copy's free drops one reference of each segment */
	rte_pktmbuf_refcnt_update(m, (int16_t)(n - 1));
	for (int i = 0; i < sw->nports; i++)
		if (&sw->ports[i] != in && sw_port_carries(&sw->ports[i], vlan))
			sw_send_port(rt, &sw->ports[i], m, vlan);
}

void sw_forward_l2(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t vlan, struct rte_mbuf *m,
		   const uint8_t *dst)
{
	sw_forward_l2_inline(rt, sw, in, vlan, m, dst);
}

struct rte_mbuf *sw_new_mbuf(struct sw_rt *rt, struct sw_port *blame)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(rt->pool);
	if (!m)
		blame->st.drops[SW_D_NO_MBUF]++;
	return m;
}

static void tx_full(struct rte_mbuf **pkts, uint16_t unsent, void *arg)
{
	struct sw_port *p = arg;
	for (uint16_t i = 0; i < unsent; i++) {
		p->st.tx_packets--;
		p->st.tx_bytes -= rte_pktmbuf_pkt_len(pkts[i]);
	}
	p->st.drops[SW_D_TX_FULL] += unsent;
	rte_pktmbuf_free_bulk(pkts, unsent);
}

void sw_port_tx_callback_init(struct sw_port *p) { rte_eth_tx_buffer_set_err_callback(p->txb, tx_full, p); }
