/* SPDX-License-Identifier: BSD-3-Clause */
/* What the switch's own INA endpoint sends: the engine's emits (results,
 * forwarded aggregates, ACKs) as frames from the switch's address, and
 * NACKs.  A job sends to the same few members over and over, so where a
 * destination's frames go and the headers they start with are resolved
 * once and kept (struct sw_dst): a result frame is then a copy of that
 * prefix, three patched lengths, the INA header and the payload. */
#include <string.h>

#include <rte_mbuf.h>

#include "sw_rt.h"

/* What the frames of one group of emits (a multicast: same slot, header
 * and payload; only address and contributor differ) have in common. */
struct emit_group {
	const struct ina_emit *first;
	uint8_t head[INA_HDR_LEN]; /* encoded with contributor 0 */
	struct rte_mbuf *shared;   /* payload segment, or NULL: copied */
};

static bool same_group(const struct ina_emit *a, const struct ina_emit *b)
{
	const struct ina_hdr *x = &a->hdr, *y = &b->hdr;
	return a->payload == b->payload && a->payload_len == b->payload_len && x->type == y->type &&
	       x->dtype == y->dtype && x->flags == y->flags && x->job == y->job && x->slot == y->slot &&
	       x->epoch == y->epoch && x->seq == y->seq && x->count == y->count && x->exponent == y->exponent;
}

/* The header, once per group (a multicast of 32 encoded it 32 times
 * before).  Results carry UDP checksum 0: summing each group's payload
 * was 3% of an INA packet's time. */
static void group_start(struct sw_rt *rt, struct sw_port *in, struct emit_group *g, const struct ina_emit *e)
{
	struct ina_hdr h = e->hdr;
	h.contributor = 0;
	ina_hdr_encode(&h, g->head);
	g->first = e;
	if (g->shared)
		rte_pktmbuf_free(g->shared);
	g->shared = NULL;
	if (e->payload_len > SW_SHARE_MIN && (g->shared = sw_new_mbuf(rt, in))) {
		memcpy(rte_pktmbuf_mtod(g->shared, void *), e->payload, e->payload_len);
		g->shared->data_len = g->shared->pkt_len = (uint32_t)e->payload_len;
	}
}

static unsigned dst_slot(uint32_t ip, uint16_t port)
{
	return ((ip ^ (uint32_t)port << 16) * 2654435761u) >> 26 & (SW_DST_CACHE - 1);
}

static bool dst_matches(const struct sw_lsw *sw, const struct sw_dst *d, const struct ina_emit *e, uint16_t in_vlan,
			uint16_t src_port)
{
	return d->made_s1 == sw->now_s + 1 && d->ip == e->dst.ip && d->port == e->dst.port && d->src_port == src_port &&
	       d->in_vlan == in_vlan && sw_mac_eq(d->mac, e->dst.mac) && d->fdb_changes == sw->fdb.changes &&
	       d->neigh_changes == sw->neigh.changes;
}

/* Where a frame to e's destination leaves, and its headers, into d.  The
 * switch's endpoint is in every VLAN: a result goes out in the one its
 * destination spoke from, else the trigger's.  A member the job knows by
 * address only gets its frames on the port it is bound to (never flooded:
 * no neighbour is a drop, counted); one named with its MAC goes where the
 * FDB says.  false when d is not to be kept: no neighbour, or *flood (the
 * FDB does not know that MAC; d's headers are good for one flood). */
static bool dst_resolve(struct sw_lsw *sw, struct sw_port *in, const struct ina_emit *e, uint16_t in_vlan,
			uint16_t src_port, struct sw_dst *d, bool *flood)
{
	const uint8_t *mac = e->dst.mac;
	const bool no_mac = sw_mac_zero(mac);
	const struct sw_neigh_entry *nb = no_mac || sw->vlans > 1 ? sw_neigh_find(&sw->neigh, e->dst.ip, sw->now_s)
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
	struct sw_udp_hdrs h = {
		.src_ip = sw->cfg->ip, .dst_ip = e->dst.ip, .src_port = src_port, .dst_port = e->dst.port
	};
	memcpy(h.src_mac, sw->cfg->mac, 6);
	memcpy(h.dst_mac, mac, 6);
	d->ip_sum = sw_frame_udp_template(d->prefix, &h);
	d->vlan = vlan;
	d->made_s1 = 0;
	if (out < 0) {
		*flood = true;
		return false;
	}
	d->out = (uint16_t)out;
	d->ip = e->dst.ip;
	d->port = e->dst.port;
	d->src_port = src_port;
	d->in_vlan = in_vlan;
	memcpy(d->mac, e->dst.mac, 6);
	d->fdb_changes = sw->fdb.changes;
	d->neigh_changes = sw->neigh.changes;
	d->made_s1 = sw->now_s + 1;
	return true;
}

/* One result frame: headers in a small mbuf followed by a clone of the
 * shared payload segment, or headers and payload copied into one mbuf.
 * NULL when out of mbufs (counted). */
static struct rte_mbuf *result_frame(struct sw_rt *rt, struct sw_port *in, const struct emit_group *g,
				     const struct ina_emit *e, const struct sw_dst *d)
{
	struct rte_mbuf *m = NULL, *c = NULL;
	if (!g->shared && e->payload_len > SW_SHARE_MIN) { /* its payload mbuf could not be had */
		in->st.drops[SW_D_NO_MBUF]++;
		return NULL;
	}
	m = rte_pktmbuf_alloc(g->shared ? rt->small_pool : rt->result_pool);
	if (!m ||
	    (g->shared && (!(c = rte_pktmbuf_clone(g->shared, rt->small_pool)) || rte_pktmbuf_chain(m, c) != 0))) {
		in->st.drops[SW_D_NO_MBUF]++;
		rte_pktmbuf_free(c);
		rte_pktmbuf_free(m);
		return NULL;
	}
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	const size_t hlen = SW_UDP_PREFIX_LEN + INA_HDR_LEN;
	memcpy(f, d->prefix, SW_UDP_PREFIX_LEN);
	sw_frame_udp_fill_len(f, d->ip_sum, SW_UDP_HLEN + INA_HDR_LEN + e->payload_len);
	memcpy(f + SW_UDP_PREFIX_LEN, g->head, INA_HDR_LEN);
	f[SW_UDP_PREFIX_LEN + 6] = (uint8_t)(e->hdr.contributor >> 8);
	f[SW_UDP_PREFIX_LEN + 7] = (uint8_t)e->hdr.contributor;
	m->data_len = (uint16_t)hlen;
	if (!g->shared) {
		memcpy(f + hlen, e->payload, e->payload_len);
		m->data_len = (uint16_t)(hlen + e->payload_len);
	}
	m->pkt_len = hlen + e->payload_len;
	return m;
}

void sw_send_emits(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t in_vlan, uint16_t src_port)
{
	const struct ina_emits *em = sw->emits;
	struct emit_group g = { .first = NULL, .shared = NULL };
	if (!em->n) /* most inputs complete nothing */
		return;

	for (unsigned i = 0; i < em->n; i++) {
		const struct ina_emit *e = &em->e[i];
		struct sw_dst *d = &sw->dst_cache[dst_slot(e->dst.ip, e->dst.port)], fresh;
		bool flood = false;
		if (!dst_matches(sw, d, e, in_vlan, src_port)) {
			if (!dst_resolve(sw, in, e, in_vlan, src_port, &fresh, &flood) && !flood)
				continue; /* no neighbour: counted */
			if (flood)
				d = &fresh; /* not kept: the FDB may learn the MAC any time */
			else
				*d = fresh;
		}
		if (!g.first || (!e->same_as_prev && !same_group(g.first, e)))
			group_start(rt, in, &g, e);
		struct rte_mbuf *m = result_frame(rt, in, &g, e, d);
		if (!m)
			continue;
		sw->st.ina_emits++;
		if (flood) /* a peer the job's installer named, MAC and all, not yet learned */
			sw_forward_l2(rt, sw, NULL, d->vlan, m, e->dst.mac);
		else
			sw_send_port(rt, &sw->ports[d->out], m, d->vlan);
	}
	if (g.shared)
		rte_pktmbuf_free(g.shared); /* the clones hold it now */
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
