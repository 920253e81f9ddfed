/* SPDX-License-Identifier: BSD-3-Clause */
/* What the switch's own INA endpoint sends: the engine's emits (results,
 * forwarded aggregates, ACKs) as frames from the switch's address, and
 * NACKs.  A job sends to the same few members over and over, so where a
 * destination's frames go and the headers they start with are resolved
 * once and kept (struct sw_dst): a result frame is then a copy of that
 * prefix, the INA header with the member's id patched in, and the payload.
 * The engine hands a multicast over as one emit (ina_engine_group_multicast),
 * whose header is encoded once. */
#include <string.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "sw_rt.h"

/* A slot of long elements sums them in an mbuf of held_pool
 * (ina_engine_result_sink), and every result frame chains to it: the sum
 * is never copied.  The buffer's mbuf is named in the 8 bytes of headroom
 * in front of it, where nothing else writes (it is only ever a second
 * segment). */
static struct rte_mbuf *held_mbuf(const uint8_t *buf)
{
	struct rte_mbuf *m;
	memcpy(&m, buf - sizeof(m), sizeof(m));
	return m;
}

/* The slot's last buffer when no frame holds it any more (the usual case:
 * its frames left a round ago), else a fresh one.  NULL (slot memory) for
 * short elements, which each frame copies anyway, or when the pool is
 * empty: held buffers are a saving, not a need. */
static uint8_t *held_get(void *ctx, uint8_t *last, size_t len)
{
	struct rte_mempool *pool = ctx;
	struct rte_mbuf *m;
	if (last) {
		if (len > SW_SHARE_MIN && rte_mbuf_refcnt_read(held_mbuf(last)) == 1)
			return last;
		rte_pktmbuf_free(held_mbuf(last));
	}
	if (len <= SW_SHARE_MIN || !(m = rte_pktmbuf_alloc(pool)))
		return NULL;
	uint8_t *buf = rte_pktmbuf_mtod(m, uint8_t *);
	if (rte_pktmbuf_tailroom(m) < len || rte_pktmbuf_headroom(m) < sizeof(m) || (uintptr_t)buf % 64) {
		rte_pktmbuf_free(m); /* the engine's loops want 64-byte lines */
		return NULL;
	}
	memcpy(buf - sizeof(m), &m, sizeof(m));
	m->data_len = m->pkt_len = (uint32_t)len; /* int32 and fp32: what goes out */
	return buf;
}

static void held_put(void *ctx, uint8_t *buf)
{
	(void)ctx;
	rte_pktmbuf_free(held_mbuf(buf)); /* the slot's reference; frames may hold more */
}

struct ina_result_sink sw_result_sink(struct sw_rt *rt)
{
	if (!rt->held_pool)
		return (struct ina_result_sink){ 0 };
	return (struct ina_result_sink){
		.get = held_get, .put = held_put, .ctx = rt->held_pool, .min_len = SW_SHARE_MIN
	};
}

/* What the frames of one group of emits (a multicast: same slot, header
 * and payload; only address and contributor differ) have in common. */
struct emit_group {
	const struct ina_emit *first;
	uint8_t head[INA_HDR_LEN]; /* encoded with contributor 0 */
	uint16_t ulen;		   /* UDP length of its frames */
	/* A long payload's one copy, which every frame's header mbuf chains
	 * to (DPDK's ipv4_multicast pattern); NULL: copied into each frame.
	 * The group holds `credit` references, taken in one store at the
	 * start for the frames it expects to send, and one more when it
	 * made the copy (not for a slot's held sum: the slot has that one). */
	struct rte_mbuf *shared;
	unsigned credit;
	bool own;
};

static __attribute__((noinline)) void group_release(struct emit_group *g)
{
	/* the frames hold it now */
	if (g->credit)
		rte_mbuf_refcnt_update(g->shared, (int16_t) - (int)g->credit);
	if (g->own)
		rte_pktmbuf_free_seg(g->shared);
	g->shared = NULL;
	g->credit = 0;
}

/* Inline: a short payload's group has no shared mbuf, and the two calls
 * a completion made cost 10 instructions an input frame at fan-in 4. */
static inline void group_end(struct emit_group *g)
{
	if (g->shared)
		group_release(g);
}

/* The header, once per group (a multicast of 32 encoded it 32 times
 * before), for `frames` frames expected.  Results carry UDP checksum 0:
 * summing each group's payload was 3% of an INA packet's time. */
static inline __attribute__((always_inline)) void group_start(struct sw_rt *rt, struct sw_port *in,
							      struct emit_group *g, const struct ina_emit *e,
							      unsigned frames)
{
	struct ina_hdr h = e->hdr;
	h.contributor = 0;
	group_end(g);
	ina_hdr_encode(&h, g->head);
	g->first = e;
	g->ulen = (uint16_t)(SW_UDP_HLEN + INA_HDR_LEN + e->payload_len);
	if (e->payload_held && e->payload_len > SW_SHARE_MIN) {
		g->shared = held_mbuf(e->payload);
		if (g->shared->data_len != e->payload_len) /* bf16 (2 B on the wire): once a round */
			g->shared->data_len = g->shared->pkt_len = (uint32_t)e->payload_len;
		g->own = false;
		rte_mbuf_refcnt_update(g->shared, (int16_t)frames);
		g->credit = frames;
	} else if (e->payload_len > SW_SHARE_MIN && (g->shared = sw_new_mbuf(rt, in))) {
		memcpy(rte_pktmbuf_mtod(g->shared, void *), e->payload, e->payload_len);
		g->shared->data_len = g->shared->pkt_len = (uint32_t)e->payload_len;
		rte_mbuf_refcnt_set(g->shared, (uint16_t)(frames + 1)); /* before any frame is out */
		g->own = true;
		g->credit = frames;
	}
}

/* The result's source port is not part of it: hosts spread slots over
 * the INA ports (a partitioned switch's steering), and a key with it
 * missed on every port change; result_frame writes it per frame. */
static uint64_t dst_key(const struct ina_addr *dst) { return (uint64_t)dst->ip | (uint64_t)dst->port << 32; }

static uint64_t mac_vlan(const uint8_t *mac, uint16_t vlan)
{
	uint64_t v = 0;
	memcpy(&v, mac, 6);
	return v | (uint64_t)vlan << 48;
}

/* Where a frame to dst leaves, and its headers, into d.  The switch's
 * endpoint is in every VLAN: a result goes out in the one its destination
 * spoke from, else the trigger's.  A member the job knows by address only
 * gets its frames on the port it is bound to (never flooded: no neighbour
 * is a drop, counted); one named with its MAC goes where the FDB says.
 * false when d is not to be kept: no neighbour, or *flood (the FDB does not
 * know that MAC; d's headers are good for one flood). */
static bool dst_resolve(struct sw_lsw *sw, struct sw_port *in, const struct ina_addr *dst, uint16_t in_vlan,
			uint16_t src_port, struct sw_dst *d, bool *flood)
{
	const uint8_t *mac = dst->mac;
	const bool no_mac = sw_mac_zero(mac);
	const struct sw_neigh_entry *nb = no_mac || sw->vlans > 1 ? sw_neigh_find(&sw->neigh, dst->ip, sw->now_s)
								  : NULL;
	uint16_t vlan = nb ? nb->vlan : in_vlan;
	int out;
	*flood = false;
	if (no_mac) {
		if (!nb) {
			in->st.drops[SW_D_NO_NEIGHBOR]++;
			return false;
		}
		mac = nb->mac;
		out = nb->port;
	} else {
		out = mac[0] & 1 ? -1 : sw_fdb_lookup(&sw->fdb, mac, vlan, sw->now_s);
	}
	struct sw_udp_hdrs h = { .src_ip = sw->cfg->ip, .dst_ip = dst->ip, .src_port = src_port, .dst_port = dst->port };
	memcpy(h.src_mac, sw->cfg->mac, 6);
	memcpy(h.dst_mac, mac, 6);
	d->ip_sum = sw_frame_udp_template(d->prefix, &h);
	d->ulen = 0;
	d->vlan = vlan;
	d->stamp = 0;
	if (out < 0) {
		*flood = true;
		return false;
	}
	d->out = (uint16_t)out;
	d->key = dst_key(dst);
	d->mac_vlan = mac_vlan(dst->mac, in_vlan);
	d->stamp = sw_tables_stamp(sw);
	return true;
}

/* An input frame of this burst that the switch has consumed, made over
 * into a result frame: saves an allocation and a free per frame (the
 * engine copied what it needed of it into slot memory).  NULL when there
 * is none, or it is shared or too small. */
static inline struct rte_mbuf *reuse_spent(struct sw_lsw *sw, size_t len)
{
	if (!sw->nspent)
		return NULL;
	struct rte_mbuf *m = sw->spent[sw->nspent - 1];
	if (rte_mbuf_refcnt_read(m) != 1 || !RTE_MBUF_DIRECT(m) || m->nb_segs != 1 ||
	    m->buf_len < RTE_PKTMBUF_HEADROOM + len)
		return NULL;
	sw->nspent--;
	/* rte_pktmbuf_reset's work but for what a direct single segment
	 * already has (next NULL, nb_segs 1) */
	m->data_off = RTE_PKTMBUF_HEADROOM;
	m->ol_flags = 0;
	m->packet_type = 0;
	m->tx_offload = 0;
	m->vlan_tci = 0;
	m->vlan_tci_outer = 0;
	return m;
}

/* Result frame m of group g to member `contributor`: its headers (prefix,
 * completed for the group's length), the group's INA header with the
 * member's id, and the payload copied in or the shared one chained on. */
static inline __attribute__((always_inline)) void fill_result(struct rte_mbuf *m, struct emit_group *g,
							      const uint8_t *prefix, unsigned contributor,
							      uint16_t src_port)
{
	const size_t hlen = SW_UDP_PREFIX_LEN + INA_HDR_LEN, plen = g->first->payload_len;
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	memcpy(f, prefix, SW_UDP_PREFIX_LEN);
	/* not in the UDP checksum (results carry none) nor the IPv4 one */
	memcpy(f + SW_ETH_HLEN + SW_IP_HLEN, &src_port, 2);
	memcpy(f + SW_UDP_PREFIX_LEN, g->head, INA_HDR_LEN);
	f[SW_UDP_PREFIX_LEN + 6] = (uint8_t)(contributor >> 8);
	f[SW_UDP_PREFIX_LEN + 7] = (uint8_t)contributor;
	if (g->shared) { /* a reference of the group's, or one more */
		if (g->credit)
			g->credit--;
		else
			rte_mbuf_refcnt_update(g->shared, 1);
		m->next = g->shared;
		m->nb_segs = 2;
		m->data_len = (uint16_t)hlen;
	} else {
		memcpy(f + hlen, g->first->payload, plen);
		m->data_len = (uint16_t)(hlen + plen);
	}
	m->pkt_len = (uint32_t)(hlen + plen);
}

/* One result frame: the destination's headers (completed for this length
 * once), the group's INA header with the member's id, and the payload
 * copied in or the shared one chained on.  NULL when out of mbufs
 * (counted). */
static struct rte_mbuf *result_frame(struct sw_rt *rt, struct sw_port *in, struct emit_group *g, uint16_t contributor,
				     struct sw_dst *d, uint16_t src_port)
{
	const size_t hlen = SW_UDP_PREFIX_LEN + INA_HDR_LEN, plen = g->first->payload_len;
	if (!g->shared && plen > SW_SHARE_MIN) { /* its payload mbuf could not be had */
		in->st.drops[SW_D_NO_MBUF]++;
		return NULL;
	}
	struct rte_mbuf *m = reuse_spent(in->sw, g->shared ? hlen : hlen + plen);
	if (!m && !(m = rte_pktmbuf_alloc(g->shared ? rt->small_pool : rt->result_pool))) {
		in->st.drops[SW_D_NO_MBUF]++;
		return NULL;
	}
	if (d->ulen != g->ulen) {
		sw_frame_udp_fill_len(d->prefix, d->ip_sum, g->ulen);
		d->ulen = g->ulen;
	}
	fill_result(m, g, d->prefix, contributor, src_port);
	return m;
}

/* Whether d holds dst's headers, made under stamp for a trigger in in_vlan. */
static inline bool dst_cached(const struct sw_dst *d, const struct ina_addr *dst, uint16_t in_vlan, uint64_t stamp)
{
	return d->key == dst_key(dst) && d->stamp == stamp && d->mac_vlan == mac_vlan(dst->mac, in_vlan);
}

/* One frame of group g to dst, as its member `contributor`. */
static inline void send_frame(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, struct emit_group *g,
			      const struct ina_addr *dst, uint16_t contributor, uint16_t in_vlan, uint16_t src_port,
			      uint64_t stamp)
{
	struct sw_dst *d = &sw->dst_cache[sw_dst_slot(dst->ip, dst->port)], fresh;
	bool flood = false;
	if (!dst_cached(d, dst, in_vlan, stamp)) {
		if (!dst_resolve(sw, in, dst, in_vlan, src_port, &fresh, &flood) && !flood)
			return; /* no neighbour: counted */
		if (flood)
			d = &fresh; /* not kept: the FDB may learn the MAC any time */
		else
			*d = fresh;
	}
	struct rte_mbuf *m = result_frame(rt, in, g, contributor, d, src_port);
	if (!m)
		return;
	sw->st.ina_emits++;
	if (flood) /* a peer the job's installer named, MAC and all, not yet learned */
		sw_forward_l2(rt, sw, NULL, d->vlan, m, dst->mac);
	else
		sw_send_port(rt, &sw->ports[d->out], m, d->vlan);
}

/* Whether port p sends a result frame to d as it is, straight from its
 * transmit buffer: a device that neither tags it nor emulates, and takes
 * chains where the payload is shared. */
static inline bool sends_as_is(const struct sw_port *p, const struct sw_dst *d, bool chained)
{
	return p->ext && (!chained || p->tx_multi_seg) && !(p->tagged && d->vlan != p->cfg->vlan) &&
	       !sw_netem_active(&p->netem);
}

/* Result frame m (a consumed frame) of group g to member k, its headers
 * prefix, into p's transmit buffer. */
static inline void push_result(struct sw_port *p, struct rte_mbuf *m, struct emit_group *g, const uint8_t *prefix,
			       unsigned k, uint16_t src_port)
{
	fill_result(m, g, prefix, k, src_port);
	p->st.tx_packets++;
	p->st.tx_bytes += m->pkt_len;
	rte_eth_tx_buffer(p->dev, p->queue, p->txb, m); /* failures: tx_full callback */
}

/* Plan pl for job c's multicast of group g, from the destination cache:
 * NULL (nothing kept) while a member's entry is not made under this
 * stamp (the usual way makes it), and not ok when a member's port does not
 * take the frames as they are. */
static __attribute__((noinline)) const struct sw_plan *plan_make(struct sw_lsw *sw, struct sw_plan *pl,
								 const struct emit_group *g,
								 const struct ina_job_cfg *c, uint16_t in_vlan,
								 uint64_t stamp)
{
	pl->job = NULL;
	if (c->fan_in > SW_PLAN_MEMBERS)
		return NULL;
	unsigned n = 0;
	bool ok = true;
	for (unsigned k = 0; k < c->fan_in; k++) {
		if ((int)k == c->upstream_index)
			continue;
		const struct ina_addr *dst = &c->contributors[k];
		const struct sw_dst *d = &sw->dst_cache[sw_dst_slot(dst->ip, dst->port)];
		if (dst->nports > 1) { /* a switch: the slot's port, not the plan's */
			ok = false;
			break;
		}
		if (!dst_cached(d, dst, in_vlan, stamp))
			return NULL;
		struct sw_port *p = &sw->ports[d->out];
		if (!sends_as_is(p, d, g->shared)) {
			ok = false;
			break;
		}
		struct sw_plan_member *pm = &pl->m[n++];
		memcpy(pm->prefix, d->prefix, SW_UDP_PREFIX_LEN);
		sw_frame_udp_fill_len(pm->prefix, d->ip_sum, g->ulen);
		pm->k = (uint16_t)k;
		pm->p = p;
	}
	pl->job = c;
	pl->stamp = stamp;
	pl->gen = sw->plan_gen;
	pl->vlan = in_vlan;
	pl->ulen = g->ulen;
	pl->shared = g->shared != NULL;
	pl->ok = ok;
	pl->n = (uint16_t)n;
	return ok ? pl : NULL;
}

/* Job c's plan for group g, made when there is none; NULL: the usual way. */
static inline const struct sw_plan *plan_of(struct sw_lsw *sw, const struct emit_group *g, const struct ina_job_cfg *c,
					    uint16_t in_vlan, uint64_t stamp)
{
	struct sw_plan *pl = &sw->plans[((uintptr_t)c >> 6) % SW_PLANS];
	if (pl->job == c && pl->stamp == stamp && pl->gen == sw->plan_gen && pl->vlan == in_vlan &&
	    pl->ulen == g->ulen && pl->shared == (g->shared != NULL))
		return pl->ok ? pl : NULL;
	return plan_make(sw, pl, g, c, in_vlan, stamp);
}

/* Every member's frame of a multicast group but the upstream's.  The
 * usual one (a cached destination completed for this length, a device
 * port that neither tags nor emulates nor captures and takes chains where
 * the payload is shared, a consumed frame to reuse) is written in this
 * loop straight into the port's transmit buffer; any other takes
 * send_frame's way.  A result per input frame at fan-in 4: the calls and
 * checks of that way were a quarter of an INA frame's instructions. */
static inline __attribute__((always_inline)) void send_group(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in,
							     struct emit_group *g, const struct ina_job_cfg *c,
							     uint16_t in_vlan, uint16_t src_port, uint64_t stamp)
{
	const size_t hlen = SW_UDP_PREFIX_LEN + INA_HDR_LEN, plen = g->first->payload_len, len = hlen + plen;
	struct rte_mbuf *const shared = g->shared;
	/* a long payload without its shared mbuf is result_frame's drop */
	const bool fast = !sw->cap.f && (shared || plen <= SW_SHARE_MIN);
	const struct sw_plan *pl = fast ? plan_of(sw, g, c, in_vlan, stamp) : NULL;
	if (pl) { /* the usual multicast: each member's frame from its plan */
		unsigned sent = 0;
		for (unsigned i = 0; i < pl->n; i++) {
			const struct sw_plan_member *pm = &pl->m[i];
			struct rte_mbuf *m = reuse_spent(sw, shared ? hlen : len);
			if (!m) { /* counted there */
				send_frame(rt, sw, in, g, &c->contributors[pm->k], pm->k, in_vlan, src_port, stamp);
				continue;
			}
			push_result(pm->p, m, g, pm->prefix, pm->k, src_port);
			sent++;
		}
		sw->st.ina_emits += sent;
		return;
	}
	const uint32_t index = ina_slot_index(g->first->hdr.slot);
	for (unsigned k = 0; k < c->fan_in; k++) {
		if ((int)k == c->upstream_index)
			continue;
		struct ina_addr at = c->contributors[k];
		at.port = ina_addr_port(&c->contributors[k], index); /* a switch's: the slot's port */
		const struct ina_addr *dst = &at;
		struct sw_dst *d = &sw->dst_cache[sw_dst_slot(dst->ip, dst->port)];
		struct sw_port *p = &sw->ports[d->out];
		struct rte_mbuf *m;
		if (!fast || !dst_cached(d, dst, in_vlan, stamp) || d->ulen != g->ulen || !sends_as_is(p, d, shared) ||
		    !(m = reuse_spent(sw, shared ? hlen : len))) {
			send_frame(rt, sw, in, g, dst, (uint16_t)k, in_vlan, src_port, stamp);
			continue;
		}
		push_result(p, m, g, d->prefix, k, src_port);
		sw->st.ina_emits++;
	}
}

void sw_send_emits(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t in_vlan, uint16_t src_port,
		   uint64_t stamp)
{
	const struct ina_emits *em = sw->emits;
	struct emit_group g;
	g.first = NULL;
	g.shared = NULL;
	g.credit = 0;
	g.own = false;

	for (unsigned i = 0; i < em->n; i++) {
		const struct ina_emit *e = &em->e[i];
		if (e->group) { /* a multicast: a frame per member but the upstream */
			const struct ina_job_cfg *c = e->group;
			group_start(rt, in, &g, e, c->fan_in - (c->upstream_index >= 0));
			send_group(rt, sw, in, &g, c, in_vlan, src_port, stamp);
			continue;
		}
		/* a forward, an ACK, one member's result: the engine groups
		 * multicasts (sw_setup.c), so no two of these share a frame */
		group_start(rt, in, &g, e, 1);
		send_frame(rt, sw, in, &g, &e->dst, e->hdr.contributor, in_vlan, src_port, stamp);
	}
	group_end(&g);
}

/* DATA for a job the switch does not have: a NACK back to its sender,
 * the header echoed without payload (never longer than what came), so a
 * host whose job went mid-run (removed, the switch restarted) learns it at
 * once instead of by a timer (ring/hcl_fallback.c).  Still counted
 * unknown_job by the engine. */
void sw_send_nack(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t vlan, const struct sw_udp_view *v)
{
	struct ina_pkt p;
	struct rte_mbuf *r;
	if (ina_parse(v->payload, v->payload_len, &p) != INA_OK || p.hdr.type != INA_T_DATA ||
	    !(r = sw_new_mbuf(rt, in)))
		return;
	struct ina_hdr h = p.hdr;
	h.type = INA_T_NACK;
	h.flags = 0;
	h.count = 0;
	h.exponent = 0;
	uint8_t head[INA_HDR_LEN];
	ina_hdr_encode(&h, head);
	struct sw_udp_hdrs u = {
		.src_ip = sw->cfg->ip, .dst_ip = v->src_ip, .src_port = v->dst_port, .dst_port = v->src_port
	};
	memcpy(u.src_mac, sw->cfg->mac, 6);
	memcpy(u.dst_mac, v->src_mac, 6);
	r->data_len = r->pkt_len = (uint32_t)sw_frame_build_udp(rte_pktmbuf_mtod(r, uint8_t *), rte_pktmbuf_tailroom(r),
								&u, head, sizeof(head), "", 0, 0);
	sw->st.ina_nacks++;
	sw_send_port(rt, in, r, vlan);
}
