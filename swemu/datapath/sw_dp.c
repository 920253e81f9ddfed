/* SPDX-License-Identifier: BSD-3-Clause */
/* The datapath: a pass over every port of a worker lcore's logical
 * switches (the loop around it: sw_loop.c).  Per packet: learn the
 * source, then either the switch's own endpoint (ARP, INA, control) or L2
 * forwarding within the port's VLAN; every egress goes through the port's
 * link emulation when it has one.  A link between logical switches is a queue into the peer port,
 * drained by the peer's loop: a switch is never entered from inside
 * another's processing (its emit list stays intact), even on one lcore. */
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

#include "sw_out.h"
#include "sw_rt.h"

static const char *const drop_names[SW_D_FRAME_BASE] = {
	[SW_D_RUNT] = "runt",
	[SW_D_MULTI_SEGMENT] = "multi_segment",
	[SW_D_SAME_PORT] = "same_port",
	[SW_D_TX_FULL] = "tx_full",
	[SW_D_EMULATED_LOSS] = "emulated_loss",
	[SW_D_BUFFER_OVERFLOW] = "buffer_overflow",
	[SW_D_EMULATOR_FULL] = "emulator_full",
	[SW_D_NO_MBUF] = "no_mbuf",
	[SW_D_NO_NEIGHBOR] = "no_neighbor",
	[SW_D_TO_SWITCH] = "to_switch_unhandled",
	[SW_D_INA_OFF] = "ina_off",
	[SW_D_CTRL_DENIED] = "ctrl_denied",
	[SW_D_CTRL_BAD] = "ctrl_bad",
	[SW_D_CTRL_AUTH] = "ctrl_auth",
	[SW_D_CTRL_RATE] = "ctrl_rate",
	[SW_D_CTRL_BUSY] = "ctrl_busy",
	[SW_D_VLAN_NOT_ALLOWED] = "vlan_not_allowed",
	[SW_D_UNTAGGED] = "untagged_on_trunk",
	[SW_D_TAGGED_ON_ACCESS] = "tagged_on_access",
	[SW_D_QINQ] = "qinq",
	[SW_D_CLAIMS_SWITCH] = "claims_switch_address",
	[SW_D_OVER_MTU] = "over_mtu",
	[SW_D_SOURCE_GUARD] = "source_guard",
	[SW_D_MAC_LIMIT] = "mac_limit",
	[SW_D_BEFORE_START] = "before_start",
	[SW_D_MISSTEERED] = "missteered",
};

const char *sw_drop_name(unsigned d)
{
	if (d < SW_D_FRAME_BASE)
		return drop_names[d];
	if (d < SW_D_MAX_)
		return sw_frame_err_name(d - SW_D_FRAME_BASE);
	return "invalid";
}

static void free_spent(struct sw_lsw *sw)
{
	if (sw->nspent)
		rte_pktmbuf_free_bulk(sw->spent, sw->nspent);
	sw->nspent = 0;
}

/* A frame the switch consumed: freed with the rest of its burst. */
static void spend(struct sw_lsw *sw, struct rte_mbuf *m)
{
	sw->spent[sw->nspent++] = m;
	if (sw->nspent == RTE_DIM(sw->spent))
		free_spent(sw);
}

/* ---- the switch's own endpoint ---- */

/* What the device found of the frame's checksums, on ports that were
 * asked to verify them (sw_setup): good ones are not summed again, a bad
 * one is that drop.  Ring and af_packet ports report nothing. */
static unsigned rx_csum_verdict(const struct rte_mbuf *m, enum sw_frame_err *bad)
{
	const uint64_t ip = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
	const uint64_t l4 = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
	unsigned verified = 0;
	if (ip == RTE_MBUF_F_RX_IP_CKSUM_BAD)
		*bad = SW_FRAME_BAD_IP_CSUM;
	else if (l4 == RTE_MBUF_F_RX_L4_CKSUM_BAD)
		*bad = SW_FRAME_BAD_UDP_CSUM;
	if (ip == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
		verified |= SW_CSUM_IP_VERIFIED;
	if (l4 == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
		verified |= SW_CSUM_UDP_VERIFIED;
	return verified;
}

/* Changes with the second and with every binding made; never 0. */
static inline uint64_t neigh_stamp(const struct sw_lsw *sw)
{
	return (uint64_t)(sw->now_s + 1) << 32 | sw->neigh.changes;
}

/* Whether the slots of INA port dport are this partition's: another's here
 * would be summed apart from the rest of its slot. */
static inline bool steered_here(const struct sw_lsw *sw, int dport)
{
	return sw->cfg->partitions <= 1 || (dport - INA_UDP_PORT_MIN) % sw->cfg->partitions == sw->part;
}

/* A member frame's bytes 0-55 under this mask: all but the IPv4 length,
 * id and checksum (16-19, 24-25), the UDP destination port (36-37: hosts
 * spread slots over the INA ports) and the UDP length and checksum (38-41),
 * which member_frame checks frame by frame; of the INA header, its first
 * 8 bytes only (version, type, dtype, flags, job, contributor: 42-49): the
 * engine checks the slice's slot, epoch and length packet by packet. */
static const uint8_t member_mask[56] = {
	/* clang-format off */
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
	0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,
	0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0, 0, 0, 0, 0, 0,
	/* clang-format on */
};
_Static_assert(sizeof(member_mask) <= SW_UDP_PREFIX_LEN + INA_HDR_LEN, "a member's frame holds the masked bytes");

/* Chunk i of a frame's bytes 0-55 under member_mask (SW_MEMBER_CHUNKS). */
static inline sw_u64x2 member_chunk(const uint8_t *f, unsigned i)
{
	const unsigned at = i < 3 ? 16 * i : 40;
	sw_u64x2 v, m;
	memcpy(&v, f + at, 16);
	memcpy(&m, member_mask + at, 16);
	return v & m;
}

/* Whether f repeats the headers of a frame its member sent before under
 * this stamp, with lengths, ports and checksums a datagram to the engine
 * has: every check of to_switch_ipv4 and the staged path (the source
 * learned and bound here this second) answered as for that frame, in one
 * masked compare (the checked floor's way, testbed/bench).
 * verified: the checksums the device vouched for (rx_csum_verdict). */
static inline __attribute__((always_inline)) bool member_frame_as(const struct sw_lsw *sw, struct sw_port *in,
								  const struct rte_mbuf *m, const uint8_t *f,
								  uint64_t tables, unsigned verified)
{
	const uint32_t len = rte_pktmbuf_data_len(m);
	if (len < SW_UDP_PREFIX_LEN + INA_HDR_LEN || len > SW_ETH_HLEN + SW_MTU)
		return false;
	uint32_t src_ip;
	memcpy(&src_ip, f + SW_ETH_HLEN + 12, 4);
	const struct sw_member_seen *seen = sw_member_seen_of(in, src_ip);
	sw_u64x2 diff = member_chunk(f, 0) ^ seen->head[0];
	for (unsigned i = 1; i < SW_MEMBER_CHUNKS; i++)
		diff |= member_chunk(f, i) ^ seen->head[i];
	if ((diff[0] | diff[1] | (seen->head_stamp ^ tables)) != 0)
		return false;
	const uint8_t *ip = f + SW_ETH_HLEN;
	const int dport = sw_be16_at(ip + SW_IP_HLEN + 2);
	return dport >= INA_UDP_PORT_MIN && dport <= INA_UDP_PORT_MAX &&
	       (dport != sw->cfg->ctrl_port || !sw->ctrl_in) && steered_here(sw, dport) &&
	       sw_frame_udp_sums_ok(ip, len, verified);
}

/* A frame a device marked (a NIC's receive checksums): a good verdict is
 * not checked again, a bad one takes the full path (its drop).  Out of
 * line: ring, af_packet and af_xdp ports mark nothing. */
static __attribute__((noinline)) bool member_frame_marked(const struct sw_lsw *sw, struct sw_port *in,
							  const struct rte_mbuf *m, const uint8_t *f, uint64_t tables)
{
	enum sw_frame_err bad = SW_FRAME_OK;
	const unsigned verified = rx_csum_verdict(m, &bad);
	return bad == SW_FRAME_OK && member_frame_as(sw, in, m, f, tables, verified);
}

/* tables: sw_tables_stamp, as of this frame */
static inline bool member_frame(const struct sw_lsw *sw, struct sw_port *in, const struct rte_mbuf *m, const uint8_t *f,
				uint64_t tables)
{
	if (unlikely(m->ol_flags & (RTE_MBUF_F_RX_IP_CKSUM_MASK | RTE_MBUF_F_RX_L4_CKSUM_MASK)))
		return member_frame_marked(sw, in, m, f, tables);
	return member_frame_as(sw, in, m, f, tables, 0);
}

/* The headers of a frame from a bound member that the engine took, for its
 * next frames (member_frame). */
static void member_remember(const struct sw_lsw *sw, struct sw_member_seen *seen, const uint8_t *f)
{
	for (unsigned i = 0; i < SW_MEMBER_CHUNKS; i++)
		seen->head[i] = member_chunk(f, i);
	seen->head_stamp = sw_tables_stamp(sw);
}

/* A datagram's payload into the engine, from src; a packet of a job the
 * engine does not have is answered (NACK). */
static enum ina_reason to_engine(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t vlan,
				 const struct sw_udp_view *v)
{
	struct ina_addr src = { .ip = v->src_ip, .port = v->src_port };
	sw->st.ina_packets++;
	/* the engine counts its own drops; emits point into slot memory */
	enum ina_reason r = ina_engine_rx(sw->eng, v->payload, v->payload_len, &src, sw->emits);
	if (unlikely(r == INA_R_UNKNOWN_JOB))
		sw_send_nack(rt, sw, in, vlan, v);
	return r;
}

/* The frame done with, and what its packet completed sent (under stamp:
 * sw_tables_stamp as it is now). */
static inline __attribute__((always_inline)) void after_engine(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in,
							       uint16_t vlan, struct rte_mbuf *m, uint16_t dst_port,
							       uint64_t stamp)
{
	spend(sw, m);
	if (sw->emits->n) /* most inputs complete nothing */
		sw_send_emits(rt, sw, in, vlan, dst_port, stamp);
}

/* A frame member_frame vouched for under stamp: to the engine with nothing
 * checked again, read straight from the frame (a view of it is made only
 * for a NACK, which the stamp rules out: it changes with the jobs). */
static void member_to_engine(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, struct rte_mbuf *m,
			     uint64_t stamp)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *), *ip = f + SW_ETH_HLEN, *udp = ip + SW_IP_HLEN;
	struct ina_addr src = { 0 }; /* the engine reads address and port */
	uint16_t dst_port;
	memcpy(&src.ip, ip + 12, 4);
	memcpy(&src.port, udp, 2);
	memcpy(&dst_port, udp + 2, 2);
	sw->st.ina_packets++;
	sw->st.ina_repeats++;
	const size_t ulen = sw_be16_at(udp + 4);
	if (unlikely(ina_engine_rx_member(sw->eng, udp + SW_UDP_HLEN, ulen - SW_UDP_HLEN, &src, sw->emits) ==
		     INA_R_UNKNOWN_JOB)) {
		struct sw_udp_view v;
		sw_frame_fill_view(f, ip, udp, ulen, &v);
		sw_send_nack(rt, sw, in, in->cfg->vlan, &v);
	}
	after_engine(rt, sw, in, in->cfg->vlan, m, dst_port, stamp);
}

static void to_switch_ipv4(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t vlan, struct rte_mbuf *m)
{
	struct sw_udp_view v;
	enum sw_frame_err fe = SW_FRAME_OK;
	if (rte_pktmbuf_data_len(m) > SW_ETH_HLEN + SW_MTU) {
		/* a device with a larger frame size (af_packet's framesz) or a
		 * link may carry one; the engine never sees it */
		sw_drop(in, SW_D_OVER_MTU, m);
		return;
	}
	/* ring, af_packet and af_xdp ports never mark a frame: one test */
	unsigned verified = m->ol_flags & (RTE_MBUF_F_RX_IP_CKSUM_MASK | RTE_MBUF_F_RX_L4_CKSUM_MASK)
				    ? rx_csum_verdict(m, &fe)
				    : 0;
	if (fe == SW_FRAME_OK)
		fe = sw_frame_parse_udp(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m), verified, &v);
	if (fe != SW_FRAME_OK) {
		sw_drop(in, (enum sw_drop)(SW_D_FRAME_BASE + fe), m);
		return;
	}
	uint16_t dport = rte_be_to_cpu_16(v.dst_port);
	if (dport == sw->cfg->ctrl_port && sw->ctrl_in) {
		sw_ctrl_submit(rt, sw, in, vlan, &v);
		rte_pktmbuf_free(m);
		return;
	}
	if (dport < INA_UDP_PORT_MIN || dport > INA_UDP_PORT_MAX) {
		/* control for a partitioned switch reaches partition 0 only */
		sw_drop(in, sw->part && dport == sw->cfg->ctrl_port ? SW_D_MISSTEERED : SW_D_TO_SWITCH, m);
		return;
	}
	if (!sw->eng) {
		sw_drop(in, SW_D_INA_OFF, m);
		return;
	}
	/* a partition aggregates only its own ports' slots */
	if (unlikely(!steered_here(sw, dport))) {
		sw_drop(in, SW_D_MISSTEERED, m);
		return;
	}
	/* a member's address spoken from elsewhere than it is bound to; one
	 * this port's cache holds needs no look-up */
	struct sw_member_seen *seen = sw_member_seen_of(in, v.src_ip);
	const uint64_t mac_vlan = sw_src_key(sw_mac64_at(v.src_mac), vlan); /* src_mac: the frame's field */
	const bool bound = seen->ip == v.src_ip && seen->stamp == neigh_stamp(sw) && seen->mac_vlan == mac_vlan;
	if (!bound && !sw_neigh_allows(&sw->neigh, v.src_ip, v.src_mac, in->index, vlan, sw->now_s)) {
		sw_drop(in, SW_D_SOURCE_GUARD, m);
		return;
	}
	/* a queue's mark on the way into the INA header's flags, which the
	 * engine carries into the slot's results (the frame is the switch's
	 * own by now); a marked frame binds, but its headers (ECN field and
	 * all) are not the ones its member's next frames repeat */
	const bool ce = (rte_pktmbuf_mtod(m, const uint8_t *)[SW_ETH_HLEN + 1] & SW_ECN_MASK) == SW_ECN_CE;
	ina_take_ce((void *)v.payload, v.payload_len, ce);
	/* only a member's accepted packet binds its address; the headers of
	 * one from a bound member, which the engine calls a member's slice,
	 * let its next frames skip these checks and the engine's of them */
	if (to_engine(rt, sw, in, vlan, &v) == INA_OK &&
	    (bound || sw_neigh_learn(&sw->neigh, v.src_ip, v.src_mac, in->index, vlan, sw->now_s))) {
		if (!bound)
			*seen = (struct sw_member_seen){ .mac_vlan = mac_vlan,
							 .stamp = neigh_stamp(sw),
							 .ip = v.src_ip };
		const struct ina_addr src = { .ip = v.src_ip, .port = v.src_port };
		if (!ce && ina_engine_member_kind(sw->eng, v.payload, v.payload_len, &src))
			member_remember(sw, seen, rte_pktmbuf_mtod(m, const uint8_t *));
	}
	after_engine(rt, sw, in, vlan, m, v.dst_port, sw_tables_stamp(sw)); /* it may have learned */
}

static bool is_mine(const struct sw_lsw *sw, const uint8_t *dst) { return sw->cfg->ip && sw_mac_eq(dst, sw->cfg->mac); }

/* A frame in on a trunk port: its VLAN from its tag, which comes off here
 * (or the native VLAN); 0 when it is dropped.  Out of line, so access
 * ports' path stays as small as it was: inlined into sw_input, forwarding
 * measured 10-20% slower in alternating runs (swemu-bench -m l2). */
static __attribute__((noinline)) uint16_t trunk_ingress(struct sw_rt *rt, struct sw_port *in, struct rte_mbuf **mp)
{
	struct rte_mbuf *m = *mp;
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(m);
	uint16_t et = sw_frame_ethertype(f, len);
	if (et != RTE_ETHER_TYPE_VLAN) {
		if (sw_frame_is_tpid(et)) { /* an 802.1ad outer tag */
			sw_drop(in, SW_D_QINQ, m);
			return 0;
		}
		if (!in->cfg->vlan)
			sw_drop(in, SW_D_UNTAGGED, m);
		return in->cfg->vlan;
	}
	if (len < SW_ETH_HLEN + sizeof(struct rte_vlan_hdr)) {
		sw_drop(in, SW_D_RUNT, m);
		return 0;
	}
	uint16_t vlan = (uint16_t)((f[14] << 8 | f[15]) & 0xfff);
	if (!sw_port_carries(in, vlan) || vlan == in->cfg->vlan) {
		sw_drop(in, SW_D_VLAN_NOT_ALLOWED, m);
		return 0;
	}
	if (sw_frame_is_tpid((uint16_t)(f[16] << 8 | f[17]))) {
		/* the inner tag would be honoured by the next switch */
		sw_drop(in, SW_D_QINQ, m);
		return 0;
	}
	if (!(*mp = m = sw_writable(rt, in, m, 0))) /* the tag comes off in place */
		return 0;
	rte_vlan_strip(m);
	return vlan;
}

/* One frame, every case (its rx counters and capture are the caller's). */
static void input_frame(struct sw_rt *rt, struct sw_port *in, struct rte_mbuf *m)
{
	struct sw_lsw *sw = in->sw;
	uint32_t len;
	const uint8_t *f;

	if (m->nb_segs != 1 && !(m = sw_flatten(rt->pool, m, in)))
		return; /* a multicast result over a link: read whole below */
	len = rte_pktmbuf_data_len(m);
	f = rte_pktmbuf_mtod(m, const uint8_t *);
	if (len < SW_ETH_HLEN) {
		sw_drop(in, SW_D_RUNT, m);
		return;
	}
	uint16_t vlan = in->cfg->vlan;
	if (!in->tagged) {
		if (unlikely(sw_frame_is_tpid(sw_frame_ethertype(f, len)))) {
			sw_drop(in, SW_D_TAGGED_ON_ACCESS, m);
			return;
		}
	} else {
		if (!(vlan = trunk_ingress(rt, in, &m)))
			return;
		len = rte_pktmbuf_data_len(m);
		f = rte_pktmbuf_mtod(m, const uint8_t *);
	}
	if (sw->cfg->ip && unlikely(sw_frame_claims(f, len, sw->cfg->mac, sw->cfg->ip))) {
		/* flooded, it would point the hosts' ARP caches (or the FDB)
		 * at the claimant for the switch's traffic */
		sw_drop(in, SW_D_CLAIMS_SWITCH, m);
		return;
	}
	const uint64_t src = sw_mac64_at(f + 6);
	struct sw_src_seen *seen = sw_src_seen_of(in, src);
	if (seen->key != sw_src_key(src, vlan) || seen->s != sw->now_s) {
		if (unlikely(sw_fdb_learn(&sw->fdb, f + 6, vlan, in->index, sw->now_s) == SW_FDB_PORT_FULL)) {
			sw_drop(in, SW_D_MAC_LIMIT, m); /* not cached below: every frame of it is refused */
			return;
		}
		*seen = (struct sw_src_seen){ .key = sw_src_key(src, vlan), .s = sw->now_s };
	}

	if (sw->cfg->ip) {
		uint16_t et = sw_frame_ethertype(f, len);
		if (et == SW_ETHERTYPE_ARP && (f[0] & 1 || is_mine(sw, f))) {
			struct rte_mbuf *r = NULL;
			size_t n = 0;
			if ((r = sw_new_mbuf(rt, in)) &&
			    (n = sw_frame_arp_reply(f, len, sw->cfg->mac, sw->cfg->ip, rte_pktmbuf_mtod(r, uint8_t *),
						    rte_pktmbuf_tailroom(r)))) {
				r->data_len = r->pkt_len = (uint32_t)n;
				sw->st.arp_replies++;
				rte_pktmbuf_free(m); /* a request for us: answered, not flooded */
				sw_send_port(rt, in, r, vlan);
				return;
			}
			rte_pktmbuf_free(r);
		} else if (et == SW_ETHERTYPE_IPV4 && is_mine(sw, f)) {
			to_switch_ipv4(rt, sw, in, vlan, m);
			return;
		} else if (is_mine(sw, f)) {
			sw_drop(in, SW_D_TO_SWITCH, m);
			return;
		}
	}
	sw_forward_l2_inline(rt, sw, in, vlan, m, f);
}

/* ---- a burst in stages ---- */

/* An INA frame is read whole (checksum, add): its second and third lines
 * (the INA header's end, the payload's first 128 bytes) are fetched while
 * the previous frame is handled, line 0 two frames ahead (l2fwd fetches
 * headers only, all that forwarding reads); the hardware's prefetcher
 * follows the rest of the sequential read.  Fetching every line of the
 * next frame (up to 32) was 15-30% slower on an AMD EPYC host at 64-1024
 * elements (docs/BENCHMARKS.md), the same at 2048. */
static inline void prefetch_frame(const struct rte_mbuf *m)
{
	const char *d = rte_pktmbuf_mtod(m, const char *);
	rte_prefetch0(d + RTE_CACHE_LINE_SIZE);
	rte_prefetch0(d + 2 * RTE_CACHE_LINE_SIZE); /* past a short frame: in its buffer, and a prefetch never faults */
}

/* Forwarded frames of one burst for one output port, in order: its
 * counters once, its device buffer filled by copy.  A port that emulates,
 * tags or is a link to another switch takes them one by one. */
static void send_run(struct sw_rt *rt, struct sw_port *p, struct rte_mbuf **ms, unsigned n, uint64_t bytes,
		     uint16_t vlan)
{
	if (!p->ext || (p->tagged && vlan != p->cfg->vlan) || sw_netem_active(&p->netem)) {
		for (unsigned i = 0; i < n; i++)
			sw_send_port_inline(rt, p, ms[i], vlan);
		return;
	}
	p->st.tx_packets += n;
	p->st.tx_bytes += bytes;
	struct rte_eth_dev_tx_buffer *b = p->txb;
	while (n) { /* as rte_eth_tx_buffer does: sent when full */
		unsigned k = RTE_MIN(n, (unsigned)(b->size - b->length));
		memcpy(&b->pkts[b->length], ms, k * sizeof(*ms));
		b->length = (uint16_t)(b->length + k);
		ms += k;
		n -= k;
		if (b->length == b->size)
			rte_eth_tx_buffer_flush(p->dev, p->queue, b);
	}
}

/* Changes with the second and with every change of the FDB; never 0. */
static inline uint64_t fdb_stamp(const struct sw_lsw *sw) { return (uint64_t)(sw->now_s + 1) << 32 | sw->fdb.changes; }

/* The output port of a unicast frame to dst, or -1 (unknown: flooded on
 * the frame-by-frame path): the port's last answer while it holds. */
static inline int fdb_port(struct sw_lsw *sw, struct sw_port *in, const uint8_t *f, uint64_t dst, uint16_t vlan,
			   uint64_t stamp)
{
	struct sw_dst_seen *seen = &in->dst_seen[sw_mac_bucket(dst, SW_DST_SEEN)];
	if (dst == seen->mac && stamp == seen->stamp)
		return (int)seen->port;
	int o = sw_fdb_lookup(&sw->fdb, f, vlan, sw->now_s);
	if (o >= 0)
		*seen = (struct sw_dst_seen){ .mac = dst, .stamp = stamp, .port = o };
	return o;
}

/* A frame's first 8 bytes as loaded, masked to its destination MAC. */
static inline uint64_t dst_of_head(uint64_t head)
{
	static const uint8_t six[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0 };
	uint64_t mask;
	memcpy(&mask, six, 8);
	return head & mask;
}

/* Whether the staged path may take a frame: from a source this port
 * learned in this second (what input_frame would learn, refuse or answer
 * goes there), unicast, IPv4 (or IPv6 unless ipv4_only): no ARP, no tag.
 * A frame from the switch's own MAC never passes: input_frame refuses it
 * before learning, so no port has it among its sources. */
static inline bool staged(struct sw_port *in, const uint8_t *f, bool ipv4_only)
{
	const uint64_t src = sw_mac64_at(f + 6);
	const uint16_t et = (uint16_t)(f[12] << 8 | f[13]);
	const struct sw_src_seen *seen = sw_src_seen_of(in, src);
	return (src | sw_src_key(0, in->cfg->vlan)) == seen->key && seen->s == in->sw->now_s && !(f[0] & 1) &&
	       (et == SW_ETHERTYPE_IPV4 || (!ipv4_only && et == SW_ETHERTYPE_IPV6));
}

/* The output port of a staged frame no flow entry matched (its flow's
 * entry made), or -2 (dropped: to its own port) or -1 (the FDB does not
 * know it: the frame-by-frame path floods it). */
static int forward_port(struct sw_port *in, struct rte_mbuf *m, const uint8_t *f, uint64_t head, uint64_t tail,
			uint64_t stamp)
{
	int o = fdb_port(in->sw, in, f, sw_mac64_at(f), in->cfg->vlan, stamp);
	if (o < 0)
		return -1;
	if (o == in->index) {
		sw_drop(in, SW_D_SAME_PORT, m);
		return -2;
	}
	in->flow_seen[sw_flow_bucket(head, tail)] = (struct sw_flow_seen){
		.head = head, .tail = tail, .stamp = stamp, .port = (uint64_t)o
	};
	return o;
}

/* Frames from k on while each is of a known flow: a single segment of at
 * least a header, not for the switch (mine: dst_of_head of a frame to its
 * MAC; no entry has it, but an INA burst leaves here sooner by the test),
 * whose 14 header bytes are a flow entry under stamp.  They leave as
 * runs per consecutive output port, straight from pkts; returns the first
 * frame that is not one.  The burst's hot loop, kept to what it reads. */
static inline __attribute__((always_inline)) unsigned known_flows(struct sw_rt *rt, struct sw_port *in,
								  struct rte_mbuf **pkts, unsigned k, unsigned n,
								  uint64_t stamp, uint64_t mine, uint64_t *bytes)
{
	const struct sw_flow_seen *flows = in->flow_seen;
	uint64_t port = UINT64_MAX, run_bytes = 0, sum = 0;
	unsigned start = k;
	for (; k < n; k++) {
		struct rte_mbuf *m = pkts[k];
		if (k + 2 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[k + 2], void *));
		const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
		const unsigned len = rte_pktmbuf_data_len(m);
		if (unlikely((m->nb_segs != 1) | (len < SW_ETH_HLEN)))
			break;
		uint64_t head, tail;
		memcpy(&head, f, 8);
		memcpy(&tail, f + 6, 8);
		if (dst_of_head(head) == mine)
			break;
		const struct sw_flow_seen *fl = &flows[sw_flow_bucket(head, tail)];
		if (((fl->head ^ head) | (fl->tail ^ tail) | (fl->stamp ^ stamp)) != 0)
			break;
		if (unlikely(fl->port != port)) {
			if (k > start)
				send_run(rt, &in->sw->ports[port], pkts + start, k - start, run_bytes, in->cfg->vlan);
			sum += run_bytes;
			port = fl->port;
			start = k;
			run_bytes = 0;
		}
		run_bytes += len;
	}
	if (k > start)
		send_run(rt, &in->sw->ports[port], pkts + start, k - start, run_bytes, in->cfg->vlan);
	*bytes += sum + run_bytes;
	return k;
}

/* What a burst's frames were looked up under: fdb_stamp and
 * sw_tables_stamp, taken again after a frame that may have changed them
 * (one on the frame-by-frame path or to_switch_ipv4: either may learn);
 * nothing else changes them inside a burst (control, ageing and the clock
 * act between polls). */
struct burst_stamps {
	uint64_t fdb, tables;
};

static inline void stamps_take(const struct sw_lsw *sw, struct burst_stamps *st)
{
	st->fdb = fdb_stamp(sw);
	st->tables = sw_tables_stamp(sw);
}

/* Frame k of a burst that is not of a known flow: for the switch's
 * endpoint (the whole of the next such frame fetched meanwhile), forwarded
 * after the staged checks, or failing those frame by frame.  Returns
 * whether frame k + 1 is for the switch too. */
static inline __attribute__((always_inline)) bool other_frame(struct sw_rt *rt, struct sw_port *in,
							      struct rte_mbuf **pkts, unsigned k, unsigned n,
							      uint64_t mine, struct burst_stamps *stamps,
							      uint64_t *bytes)
{
	struct rte_mbuf *m = pkts[k];
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	const uint32_t len = rte_pktmbuf_pkt_len(m);
	bool next_for_switch = false;
	if (k + 2 < n) /* as known_flows does; prefetch_frame leaves line 0 to this */
		rte_prefetch0(rte_pktmbuf_mtod(pkts[k + 2], void *));
	*bytes += len;
	if (unlikely(m->nb_segs != 1 || rte_pktmbuf_data_len(m) < SW_ETH_HLEN))
		goto one_by_one;
	uint64_t head, tail;
	memcpy(&head, f, 8);
	if (dst_of_head(head) == mine) {
		/* an INA frame is read whole (checksum, add): the next one's
		 * lines fetched while this one is handled (a runt's 8 bytes
		 * are in its buffer, the answer just moot) */
		if (k + 1 < n) {
			uint64_t next;
			memcpy(&next, rte_pktmbuf_mtod(pkts[k + 1], const uint8_t *), 8);
			if ((next_for_switch = dst_of_head(next) == mine))
				prefetch_frame(pkts[k + 1]);
		}
		if (member_frame(in->sw, in, m, f, stamps->tables)) {
			member_to_engine(rt, in->sw, in, m, stamps->tables);
		} else if (staged(in, f, true)) {
			to_switch_ipv4(rt, in->sw, in, in->cfg->vlan, m);
			stamps_take(in->sw, stamps);
		} else {
			goto one_by_one;
		}
		return next_for_switch;
	}
	memcpy(&tail, f + 6, 8);
	if (staged(in, f, false)) {
		int o = forward_port(in, m, f, head, tail, stamps->fdb);
		if (o >= 0)
			send_run(rt, &in->sw->ports[o], &pkts[k], 1, len, in->cfg->vlan);
		if (o != -1)
			return false;
	}
one_by_one:
	input_frame(rt, in, m);
	stamps_take(in->sw, stamps);
	return next_for_switch;
}

/* A burst from an access port, in stages: each header read once.  Frames
 * of known flows leave as runs per output port (known_flows); the others,
 * INA frames among them, one at a time (other_frame).  Frames leave in the
 * order they came (a flow's order holds).  Trunk ports and capturing
 * switches take the frame-by-frame path for the whole burst. */
static void input_burst(struct sw_rt *rt, struct sw_port *in, struct rte_mbuf **pkts, uint16_t n)
{
	struct sw_lsw *sw = in->sw;
	uint64_t mine = UINT64_MAX; /* matches no frame */
	if (sw->cfg->ip) {
		uint8_t b[8] = { 0 };
		memcpy(b, sw->cfg->mac, 6);
		memcpy(&mine, b, 8);
	}
	uint64_t bytes = 0;

	in->st.rx_packets += n;
	if (unlikely(in->tagged || sw->cap.f)) {
		for (uint16_t k = 0; k < n; k++) {
			bytes += rte_pktmbuf_pkt_len(pkts[k]);
			if (sw->cap.f)
				sw_capture_frame(&sw->cap, in->index, SW_CAP_RX, pkts[k]);
			input_frame(rt, in, pkts[k]);
		}
		in->st.rx_bytes += bytes;
		return;
	}
	/* two stages, as in l3fwd: the header two frames ahead */
	for (uint16_t k = 0; k < n && k < 2; k++)
		rte_prefetch0(rte_pktmbuf_mtod(pkts[k], void *));
	struct burst_stamps stamps;
	stamps_take(sw, &stamps);
	for (unsigned k = 0; (k = known_flows(rt, in, pkts, k, n, stamps.fdb, mine, &bytes)) < n;)
		while (other_frame(rt, in, pkts, k++, n, mine, &stamps, &bytes))
			; /* frames for the switch in a row stay here */
	in->st.rx_bytes += bytes;
}

/* ---- the loop ---- */

static void clock_tick(const struct sw_rt *rt, struct sw_lsw *sw)
{
	sw->now_ns = sw_clock_ns(rt);
	sw->now_s = (uint32_t)(sw->now_ns / 1000000000ull);
	if (sw->eng)
		ina_engine_set_time(sw->eng, sw->now_ns);
}

/* Releases what the switch's emulators hold and is due; returns how many. */
static unsigned pump_emulators(struct sw_rt *rt, struct sw_lsw *sw, uint64_t *next_due)
{
	void *due[64];
	unsigned total = 0;
	for (int i = 0; i < sw->nports; i++) {
		struct sw_port *p = &sw->ports[i];
		if (!sw_netem_active(&p->netem))
			continue;
		unsigned n;
		while ((n = sw_netem_dequeue(&p->netem, sw->now_ns, due, 64))) {
			total += n;
			for (unsigned k = 0; k < n; k++)
				sw_deliver(rt, p, due[k]);
		}
		uint64_t t = sw_netem_next_ns(&p->netem);
		if (t < *next_due)
			*next_due = t;
	}
	return total;
}

/* Commands the control thread parsed are applied here too: at most one
 * flush interval (100 us) late, and never inside a burst. */
static void flush_switches(struct sw_rt *rt, struct sw_lsw *const *sws, int nsw)
{
	for (int s = 0; s < nsw; s++) {
		if (unlikely(__atomic_load_n(&sws[s]->hold, __ATOMIC_RELAXED)))
			sw_parts_stand_still(sws[s]); /* partition 0 changes our jobs */
		if (sws[s]->ctrl_out && !rte_ring_empty(sws[s]->ctrl_out))
			sw_ctrl_apply(rt, sws[s]);
		for (int i = 0; i < sws[s]->nports; i++) {
			struct sw_port *p = &sws[s]->ports[i];
			if (p->ext)
				rte_eth_tx_buffer_flush(p->dev, p->queue, p->txb);
		}
	}
}

/* One pass over the switches' ports and emulators; returns the packets
 * handled.  *next_due gets the earliest pending emulated release. */
static unsigned poll_switches(struct sw_rt *rt, struct sw_lsw *const *sws, int nsw, uint64_t *next_due)
{
	struct rte_mbuf *pkts[SW_BURST_MAX];
	const uint16_t burst = (uint16_t)rt->cfg.burst;
	unsigned work = 0;

	*next_due = UINT64_MAX;
	for (int s = 0; s < nsw; s++) {
		struct sw_lsw *sw = sws[s];
		clock_tick(rt, sw);
		for (int i = 0; i < sw->nports; i++) {
			struct sw_port *p = &sw->ports[i];
			uint16_t n;
			if (p->ext)
				n = rte_eth_rx_burst(p->dev, p->queue, pkts, burst);
			else
				n = (uint16_t)rte_ring_sc_dequeue_burst(p->lq, (void **)pkts, burst, NULL);
			work += n;
			if (n)
				input_burst(rt, p, pkts, n);
		}
		free_spent(sw); /* what results did not take over (sw_result.c) */
		work += pump_emulators(rt, sw, next_due);
	}
	return work;
}

unsigned sw_dp_poll(struct sw_rt *rt, uint64_t *next_due) { return poll_switches(rt, rt->sw, rt->nsw, next_due); }

void sw_dp_flush(struct sw_rt *rt) { flush_switches(rt, rt->sw, rt->nsw); }

__attribute__((noinline)) unsigned sw_dp_poll_worker(struct sw_worker *w, uint64_t *next_due)
{
	return poll_switches(w->rt, w->sw, w->nsw, next_due);
}

__attribute__((noinline)) void sw_dp_flush_worker(struct sw_worker *w) { flush_switches(w->rt, w->sw, w->nsw); }
