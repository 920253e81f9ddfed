/* SPDX-License-Identifier: BSD-3-Clause */
#include "sw_frame.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "sw_csum_partial assumes a little-endian host"
#endif

#include <string.h>

static const char *const err_names[SW_FRAME_ERR_MAX_] = {
	[SW_FRAME_OK] = "ok",
	[SW_FRAME_SHORT] = "frame_short",
	[SW_FRAME_NOT_IPV4] = "not_ipv4",
	[SW_FRAME_BAD_IP_CSUM] = "bad_ip_checksum",
	[SW_FRAME_FRAGMENT] = "ip_fragment",
	[SW_FRAME_NOT_UDP] = "not_udp",
	[SW_FRAME_BAD_UDP_LEN] = "bad_udp_length",
	[SW_FRAME_BAD_UDP_CSUM] = "bad_udp_checksum",
};

const char *sw_frame_err_name(enum sw_frame_err e)
{
	return (unsigned)e < SW_FRAME_ERR_MAX_ ? err_names[e] : "invalid";
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* A 16-bit big-endian value as it sits in a native-word sum. */
static inline uint64_t be16_term(uint16_t v) { return __builtin_bswap16(v); }

static uint64_t sum_bytes(const uint8_t *p, size_t len)
{
	uint64_t s = sw_csum_words(p, len / 4);
	p += len & ~(size_t)3;
	len &= 3;
	if (len >= 2) {
		uint16_t h;
		memcpy(&h, p, 2);
		s += h;
		p += 2;
		len -= 2;
	}
	if (len) /* odd byte: the high half of a big-endian word, padded */
		s += *p;
	return s;
}

/* Returns an unfolded partial in network order. */
uint32_t sw_csum_partial(const void *buf, size_t len, uint32_t sum)
{
	uint64_t t = (uint64_t)__builtin_bswap16(sw_csum_fold_native(sum_bytes(buf, len))) + sum;
	return (uint32_t)((t & 0xffffffff) + (t >> 32));
}

/* The checksum field of a native sum, to be stored as it is (memcpy). */
static inline uint16_t csum_field(uint64_t s) { return (uint16_t)~sw_csum_fold_native(s); }

/* Pseudo header of UDP over IPv4, as a native sum. */
static inline uint64_t pseudo_native(const uint8_t *ip, uint16_t udp_len)
{
	return sw_csum_words(ip + 12, 2) + be16_term(17) + be16_term(udp_len);
}

enum sw_frame_err sw_frame_parse_udp_steps(const uint8_t *f, size_t len, unsigned verified, struct sw_udp_view *v)
{
	if (len < SW_ETH_HLEN + SW_IP_HLEN)
		return SW_FRAME_SHORT;
	if (rd16(f + 12) != SW_ETHERTYPE_IPV4)
		return SW_FRAME_NOT_IPV4;
	const uint8_t *ip = f + SW_ETH_HLEN;
	size_t ihl = (size_t)(ip[0] & 0xf) * 4;
	if (ip[0] >> 4 != 4 || ihl < SW_IP_HLEN)
		return SW_FRAME_NOT_IPV4;
	size_t tot = rd16(ip + 2);
	if (tot < ihl || SW_ETH_HLEN + tot > len || SW_ETH_HLEN + ihl > len)
		return SW_FRAME_SHORT;
	if (!(verified & SW_CSUM_IP_VERIFIED) &&
	    sw_csum_fold_native(ihl == SW_IP_HLEN ? sw_csum_words(ip, SW_IP_HLEN / 4) : sw_csum_words(ip, ihl / 4)) !=
		    0xffff)
		return SW_FRAME_BAD_IP_CSUM;
	if (rd16(ip + 6) & 0x3fff) /* MF or an offset */
		return SW_FRAME_FRAGMENT;
	if (ip[9] != 17)
		return SW_FRAME_NOT_UDP;
	const uint8_t *udp = ip + ihl;
	if (tot - ihl < SW_UDP_HLEN)
		return SW_FRAME_BAD_UDP_LEN;
	size_t ulen = rd16(udp + 4);
	if (ulen < SW_UDP_HLEN || ulen != tot - ihl)
		return SW_FRAME_BAD_UDP_LEN;
	if (!(verified & SW_CSUM_UDP_VERIFIED) && rd16(udp + 6) != 0 &&
	    sw_csum_fold_native(pseudo_native(ip, (uint16_t)ulen) + sum_bytes(udp, ulen)) != 0xffff)
		return SW_FRAME_BAD_UDP_CSUM;
	sw_frame_fill_view(f, ip, udp, ulen, v);
	return SW_FRAME_OK;
}

uint32_t sw_csum_add(uint32_t a, uint32_t b)
{
	uint64_t s = (uint64_t)a + b;
	return (uint32_t)((s & 0xffffffff) + (s >> 32));
}

void sw_frame_udp_prefix(uint8_t *buf, const struct sw_udp_hdrs *h, size_t ulen, uint32_t rest_sum)
{
	uint8_t *ip = buf + SW_ETH_HLEN, *udp = ip + SW_IP_HLEN;
	const uint16_t tot = (uint16_t)(SW_IP_HLEN + ulen);

	memcpy(buf, h->dst_mac, 6);
	memcpy(buf + 6, h->src_mac, 6);
	wr16(buf + 12, SW_ETHERTYPE_IPV4);
	ip[0] = 0x45;
	ip[1] = SW_ECN_ECT0; /* as every datagram the switch sends: a queue may mark it */
	wr16(ip + 2, tot);
	wr16(ip + 4, 0);
	wr16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, &h->src_ip, 4);
	memcpy(ip + 16, &h->dst_ip, 4);
	/* the sums come from the values, not from the bytes just stored:
	 * reading those back stalls on store forwarding */
	const uint64_t addrs = (uint64_t)h->src_ip + h->dst_ip;
	uint16_t c = csum_field(addrs + be16_term(0x4500 | SW_ECN_ECT0) + be16_term(tot) + be16_term(0x4000) +
				be16_term(0x4011));
	memcpy(ip + 10, &c, 2);

	memcpy(udp, &h->src_port, 2);
	memcpy(udp + 2, &h->dst_port, 2);
	wr16(udp + 4, (uint16_t)ulen);
	uint64_t us = addrs + be16_term(17) + 2 * be16_term((uint16_t)ulen) + h->src_port + h->dst_port +
		      be16_term((uint16_t)rest_sum) + be16_term((uint16_t)(rest_sum >> 16));
	c = csum_field(us);
	if (c == 0)
		c = 0xffff; /* 0 means "no checksum" in UDP */
	memcpy(udp + 6, &c, 2);
}

uint32_t sw_frame_udp_template(uint8_t *buf, const struct sw_udp_hdrs *h)
{
	uint8_t *ip = buf + SW_ETH_HLEN, *udp = ip + SW_IP_HLEN;
	memcpy(buf, h->dst_mac, 6);
	memcpy(buf + 6, h->src_mac, 6);
	wr16(buf + 12, SW_ETHERTYPE_IPV4);
	ip[0] = 0x45;
	ip[1] = SW_ECN_ECT0; /* a queue on the way may mark it (docs/CONGESTION.md) */
	wr16(ip + 2, 0);
	wr16(ip + 4, 0);
	wr16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = 17;
	wr16(ip + 10, 0);
	memcpy(ip + 12, &h->src_ip, 4);
	memcpy(ip + 16, &h->dst_ip, 4);
	memcpy(udp, &h->src_port, 2);
	memcpy(udp + 2, &h->dst_port, 2);
	wr16(udp + 4, 0);
	wr16(udp + 6, 0);
	/* big-endian 16-bit words, as RFC 1071 adds them; not on a fast path */
	uint32_t sum = 0;
	for (int i = 0; i < SW_IP_HLEN; i += 2)
		sum += rd16(ip + i);
	return sum;
}

size_t sw_frame_ect_ip(const uint8_t *f, size_t len)
{
	size_t off = 12;
	for (int tags = 0; tags < 2 && off + 2 <= len && (rd16(f + off) == 0x8100 || rd16(f + off) == 0x88a8); tags++)
		off += 4;
	if (off + 2 + SW_IP_HLEN > len || rd16(f + off) != SW_ETHERTYPE_IPV4 || (f[off + 2] >> 4) != 4)
		return 0;
	const unsigned ecn = f[off + 3] & SW_ECN_MASK;
	return ecn && ecn != SW_ECN_CE ? off + 2 : 0;
}

void sw_frame_set_ce(uint8_t *ip)
{
	const uint16_t old = rd16(ip), now = (uint16_t)(old | SW_ECN_CE);
	/* HC' = ~(~HC + ~m + m') */
	uint32_t s = (uint16_t)~rd16(ip + 10) + (uint32_t)(uint16_t)~old + now;
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	wr16(ip, now);
	wr16(ip + 10, (uint16_t)~s);
}

size_t sw_frame_udp_headers(uint8_t *buf, size_t cap, const struct sw_udp_hdrs *h, const void *head, size_t head_len,
			    size_t payload_len, uint32_t payload_sum)
{
	size_t hlen = SW_UDP_PREFIX_LEN + head_len;
	size_t ulen = SW_UDP_HLEN + head_len + payload_len;
	if (hlen > cap || ulen > 0xffff - SW_IP_HLEN)
		return 0;
	/* head_len is even, so the payload's words line up with its own sum */
	sw_frame_udp_prefix(buf, h, ulen, sw_csum_partial(head, head_len, payload_sum));
	if (head_len) /* head may be NULL then */
		memcpy(buf + SW_UDP_PREFIX_LEN, head, head_len);
	return hlen;
}

size_t sw_frame_build_udp(uint8_t *buf, size_t cap, const struct sw_udp_hdrs *h, const void *head, size_t head_len,
			  const void *payload, size_t payload_len, uint32_t payload_sum)
{
	size_t hlen = SW_ETH_HLEN + SW_IP_HLEN + SW_UDP_HLEN + head_len;
	if (hlen + payload_len > cap)
		return 0;
	hlen = sw_frame_udp_headers(buf, cap, h, head, head_len, payload_len, payload_sum);
	if (!hlen)
		return 0;
	memcpy(buf + hlen, payload, payload_len);
	return hlen + payload_len;
}

size_t sw_frame_arp_reply(const uint8_t *f, size_t len, const uint8_t mac[6], uint32_t ip, uint8_t *buf, size_t cap)
{
	const size_t arp_len = SW_ETH_HLEN + 28;
	if (len < arp_len || cap < arp_len || rd16(f + 12) != SW_ETHERTYPE_ARP)
		return 0;
	const uint8_t *a = f + SW_ETH_HLEN;
	/* Ethernet/IPv4 request for our address */
	if (rd16(a) != 1 || rd16(a + 2) != SW_ETHERTYPE_IPV4 || a[4] != 6 || a[5] != 4 || rd16(a + 6) != 1 ||
	    memcmp(a + 24, &ip, 4) != 0)
		return 0;
	uint8_t *r = buf + SW_ETH_HLEN;
	memcpy(buf, a + 8, 6); /* to the asker */
	memcpy(buf + 6, mac, 6);
	wr16(buf + 12, SW_ETHERTYPE_ARP);
	memcpy(r, a, 6);
	wr16(r + 6, 2);
	memcpy(r + 8, mac, 6);
	memcpy(r + 14, &ip, 4);
	memcpy(r + 18, a + 8, 10); /* target = sender hw + ip */
	return arp_len;
}
