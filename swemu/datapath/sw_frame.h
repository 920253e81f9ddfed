/* SPDX-License-Identifier: BSD-3-Clause */
/* Ethernet / IPv4 / UDP framing for the switch's own endpoint: parse and
 * verify an ingress datagram, build an egress one with correct checksums,
 * answer ARP.  Pure C over byte buffers (no mbufs), unit-tested. */
#ifndef SW_FRAME_H
#define SW_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SW_ETH_HLEN	  14
#define SW_IP_HLEN	  20
#define SW_UDP_HLEN	  8
#define SW_UDP_PREFIX_LEN (SW_ETH_HLEN + SW_IP_HLEN + SW_UDP_HLEN)
#define SW_ETHERTYPE_IPV4 0x0800
#define SW_ETHERTYPE_ARP  0x0806
#define SW_ETHERTYPE_IPV6 0x86dd
/* The IPv4 header's ECN field (RFC 3168): the low 2 bits of its second byte */
#define SW_ECN_MASK	  3
#define SW_ECN_ECT0	  2
#define SW_ECN_CE	  3

/* Why an ingress frame for the switch endpoint is refused (counter names
 * in sw_frame_err_name). */
enum sw_frame_err {
	SW_FRAME_OK = 0,
	SW_FRAME_SHORT,	      /* shorter than its headers say */
	SW_FRAME_NOT_IPV4,    /* ethertype, version or IHL */
	SW_FRAME_BAD_IP_CSUM, /* IPv4 header checksum */
	SW_FRAME_FRAGMENT,    /* fragments are not reassembled */
	SW_FRAME_NOT_UDP,
	SW_FRAME_BAD_UDP_LEN,
	SW_FRAME_BAD_UDP_CSUM,
	SW_FRAME_ERR_MAX_
};
const char *sw_frame_err_name(enum sw_frame_err e);

struct sw_udp_view {
	const uint8_t *dst_mac, *src_mac;
	uint32_t src_ip, dst_ip;     /* network order */
	uint16_t src_port, dst_port; /* network order */
	const uint8_t *payload;
	size_t payload_len;
};

/* Ethertype of a frame (0 if too short for one). */
static inline uint16_t sw_frame_ethertype(const uint8_t *f, size_t len)
{
	return len < SW_ETH_HLEN ? 0 : (uint16_t)(f[12] << 8 | f[13]);
}

/* Whether an ethertype is a VLAN tag's TPID: 802.1Q, 802.1ad (QinQ) or
 * the pre-standard 0x9100 some stacking gear uses. */
static inline bool sw_frame_is_tpid(uint16_t et) { return et == 0x8100 || et == 0x88a8 || et == 0x9100; }

/* Checksums a NIC has verified already (its RX flags said good): those are
 * not summed again in software. */
#define SW_CSUM_IP_VERIFIED  1u
#define SW_CSUM_UDP_VERIFIED 2u

/* One's complement sum of a buffer, unfolded (for reuse across frames that
 * carry the same payload). */
uint32_t sw_csum_partial(const void *buf, size_t len, uint32_t sum);

/* RFC 1071 sums are taken in 32-bit native words into a 64-bit
 * accumulator: the one's-complement sum does not depend on byte order
 * except for a final byte swap, and 2^16 = 1 modulo 0xffff lets the
 * accumulator fold down to the same 16 bits.  Headers of fixed size sum
 * inline (a call per 4-byte pseudo-header field was a fifth of an INA
 * packet's cost); long buffers go through one loop the compiler vectorises. */
static inline uint64_t sw_csum_words(const uint8_t *p, size_t n4)
{
	uint64_t s = 0;
	for (size_t i = 0; i < n4; i++) {
		uint32_t w;
		memcpy(&w, p + 4 * i, 4);
		s += w;
	}
	return s;
}

/* 64-bit native sum -> 16 bits, still in native order, in fixed steps (a
 * loop here showed in profiles). */
static inline uint16_t sw_csum_fold_native(uint64_t s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

static inline uint16_t sw_be16_at(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static inline void sw_frame_fill_view(const uint8_t *f, const uint8_t *ip, const uint8_t *udp, size_t ulen,
				      struct sw_udp_view *v)
{
	v->dst_mac = f;
	v->src_mac = f + 6;
	memcpy(&v->src_ip, ip + 12, 4);
	memcpy(&v->dst_ip, ip + 16, 4);
	memcpy(&v->src_port, udp, 2);
	memcpy(&v->dst_port, udp + 2, 2);
	v->payload = udp + SW_UDP_HLEN;
	v->payload_len = ulen - SW_UDP_HLEN;
}

/* The lengths and checksums of a datagram of the usual shape (IPv4 header
 * of 20 bytes at ip, UDP after it) in a frame of len bytes: lengths that
 * agree, a UDP checksum of 0 or one the device vouched for, an IPv4
 * checksum that holds or that it vouched for (verified: SW_CSUM_*). */
static inline bool sw_frame_udp_sums_ok(const uint8_t *ip, size_t len, unsigned verified)
{
	const size_t tot = sw_be16_at(ip + 2), ulen = sw_be16_at(ip + SW_IP_HLEN + 4);
	return ulen >= SW_UDP_HLEN && ulen + SW_IP_HLEN == tot && SW_ETH_HLEN + tot <= len &&
	       ((verified & SW_CSUM_UDP_VERIFIED) || sw_be16_at(ip + SW_IP_HLEN + 6) == 0) &&
	       ((verified & SW_CSUM_IP_VERIFIED) || sw_csum_fold_native(sw_csum_words(ip, SW_IP_HLEN / 4)) == 0xffff);
}

/* sw_frame_parse_udp's every case, step by step (sw_frame.c). */
enum sw_frame_err sw_frame_parse_udp_steps(const uint8_t *f, size_t len, unsigned verified, struct sw_udp_view *v);

/* Checks an Ethernet/IPv4/UDP frame: the IP and (unless zero) the UDP
 * checksum, but not those that verified (SW_CSUM_*) names.  The shape of
 * nearly every datagram to the switch is checked here in one pass, inline
 * in the INA path (the call and the view's stores were a tenth of an INA
 * frame's instructions): no IP options, not a fragment, UDP, lengths that
 * agree, a UDP checksum of 0 or one the device vouched for.  Anything
 * else, good or bad, is decided step by step. */
static inline enum sw_frame_err sw_frame_parse_udp(const uint8_t *f, size_t len, unsigned verified,
						   struct sw_udp_view *v)
{
	if (len >= SW_UDP_PREFIX_LEN) {
		const uint8_t *ip = f + SW_ETH_HLEN;
		if (sw_be16_at(f + 12) == SW_ETHERTYPE_IPV4 && ip[0] == 0x45 && !(sw_be16_at(ip + 6) & 0x3fff) &&
		    ip[9] == 17 && sw_frame_udp_sums_ok(ip, len, verified)) {
			sw_frame_fill_view(f, ip, ip + SW_IP_HLEN, sw_be16_at(ip + SW_IP_HLEN + 4), v);
			return SW_FRAME_OK;
		}
	}
	return sw_frame_parse_udp_steps(f, len, verified, v);
}

struct sw_udp_hdrs {
	uint8_t src_mac[6], dst_mac[6];
	uint32_t src_ip, dst_ip;     /* network order */
	uint16_t src_port, dst_port; /* network order */
};

/* Writes Ethernet/IPv4/UDP headers, then head (head_len bytes, e.g. the INA
 * header) and payload, with IPv4 and UDP checksums.  payload_sum is
 * sw_csum_partial(payload, payload_len, 0), computed once by the caller
 * when several frames share the payload.  head_len must be even.  Returns
 * the frame length, or 0 if it does not fit cap. */
size_t sw_frame_build_udp(uint8_t *buf, size_t cap, const struct sw_udp_hdrs *h, const void *head, size_t head_len,
			  const void *payload, size_t payload_len, uint32_t payload_sum);

/* The same headers and head, without the payload (which follows in another
 * segment); returns the header length, or 0 if it does not fit cap. */
size_t sw_frame_udp_headers(uint8_t *buf, size_t cap, const struct sw_udp_hdrs *h, const void *head, size_t head_len,
			    size_t payload_len, uint32_t payload_sum);

/* Two partials added (end-around carry kept). */
uint32_t sw_csum_add(uint32_t a, uint32_t b);

/* Just the Ethernet/IPv4/UDP headers (SW_UDP_PREFIX_LEN bytes) of a
 * datagram of UDP length ulen whose bytes after the UDP header have the
 * partial rest_sum (sw_csum_partial / sw_csum_add of its parts, each
 * starting at an even offset).  ulen must fit an IPv4 datagram.  For a
 * fast path that builds what follows itself and knows its sum. */
void sw_frame_udp_prefix(uint8_t *buf, const struct sw_udp_hdrs *h, size_t ulen, uint32_t rest_sum);

/* The same headers as a template for datagrams of any length, with UDP
 * checksum 0 ("none"): for results, whose payload the switch would
 * otherwise sum once more per group (SwitchML's switch sends 0 too;
 * Ethernet's CRC covers the link).  sw_frame_udp_template writes the
 * SW_UDP_PREFIX_LEN bytes with the lengths and IPv4 checksum left 0 and
 * returns the sum the checksum starts from; sw_frame_udp_fill_len
 * completes a copy of them for a UDP length. */
uint32_t sw_frame_udp_template(uint8_t *buf, const struct sw_udp_hdrs *h);
static inline void sw_frame_udp_fill_len(uint8_t *buf, uint32_t ip_sum, size_t ulen)
{
	/* inline: once per result frame */
	uint8_t *ip = buf + SW_ETH_HLEN;
	const uint16_t tot = (uint16_t)(SW_IP_HLEN + ulen);
	uint32_t s = ip_sum + tot;
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	const uint16_t c = (uint16_t)~s;
	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	ip[SW_IP_HLEN + 4] = (uint8_t)(ulen >> 8);
	ip[SW_IP_HLEN + 5] = (uint8_t)ulen;
}

/* ECN marking by a queue: the offset of the IPv4 header of frame f (behind
 * up to two VLAN tags) when it is IPv4 and ECN-capable, not yet marked;
 * 0 otherwise (not IPv4, not ECN-capable: RFC 3168 leaves those to drops,
 * or already CE).  The frame's first len bytes must be readable. */
size_t sw_frame_ect_ip(const uint8_t *f, size_t len);
/* Marks the IPv4 header at ip congestion-experienced, its checksum
 * updated for the one changed word (RFC 1624). */
void sw_frame_set_ce(uint8_t *ip);

/* The all-zero MAC: none given. */
static inline bool sw_mac_zero(const uint8_t *m) { return !(m[0] | m[1] | m[2] | m[3] | m[4] | m[5]); }

/* Two MAC addresses equal: inline, every frame into the switch asks. */
static inline bool sw_mac_eq(const uint8_t *a, const uint8_t *b)
{
	uint32_t a4, b4;
	uint16_t a2, b2;
	memcpy(&a4, a, 4);
	memcpy(&b4, b, 4);
	memcpy(&a2, a + 4, 2);
	memcpy(&b2, b + 4, 2);
	return ((a4 ^ b4) | (uint32_t)(a2 ^ b2)) == 0;
}

/* A MAC as a number, its six bytes in memory order in the low 48 bits:
 * one compare instead of two.  _at reads 8 bytes, so it takes a frame's
 * destination or source field (the 14-byte header covers both). */
static inline uint64_t sw_mac64_at(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return v >> 16;
#else
	return v & 0xffffffffffffull;
#endif
}

static inline uint64_t sw_mac64(const uint8_t mac[6])
{
	uint8_t b[8] = { 0 };
	memcpy(b, mac, 6);
	return sw_mac64_at(b);
}

/* If f is an ARP request for ip, writes the reply from mac into buf and
 * returns its length; otherwise 0. */
size_t sw_frame_arp_reply(const uint8_t *f, size_t len, const uint8_t mac[6], uint32_t ip, uint8_t *buf, size_t cap);

/* Whether f claims another's address: an ARP request or reply whose
 * sender IP is ip but whose sender MAC is not mac, or any frame from mac
 * itself (the switch's own addresses, arriving from outside). */
static inline bool sw_frame_claims(const uint8_t *f, size_t len, const uint8_t mac[6], uint32_t ip)
{
	/* inline: every frame into an INA switch asks */
	if (len < SW_ETH_HLEN)
		return false;
	if (sw_mac_eq(f + 6, mac))
		return true;
	if (len < SW_ETH_HLEN + 28 || (f[12] << 8 | f[13]) != SW_ETHERTYPE_ARP)
		return false;
	return !memcmp(f + SW_ETH_HLEN + 14, &ip, 4) && memcmp(f + SW_ETH_HLEN + 8, mac, 6) != 0;
}

#endif
