/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: swemu's frame parser and ARP responder on hostile
 * frames (sw_frame.c reads every byte a host sends to the switch's own
 * address).
 *
 * Input: one byte of checksum verdicts a NIC might have given (the
 * SW_CSUM_* bits), then the frame.  Invariants, whatever arrives: a parsed
 * view lies inside the frame; without a verdict an accepted UDP checksum
 * is right by an independent RFC 1071 sum; a frame rebuilt from the view
 * parses to the same view; an ARP reply fits its buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sw_frame.h"

#define CHECK(c)                 \
	do {                     \
		if (!(c))        \
			abort(); \
	} while (0)

/* Byte by byte, as RFC 1071 describes it: no shared code with sw_frame.c. */
static uint16_t ref_sum(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

static void check_view(const uint8_t *f, size_t len, unsigned verified, const struct sw_udp_view *v)
{
	static uint8_t again[10000];
	const uint8_t *udp = v->payload - SW_UDP_HLEN;
	CHECK(udp >= f + SW_ETH_HLEN + SW_IP_HLEN && v->payload + v->payload_len <= f + len);
	CHECK(v->dst_mac == f && v->src_mac == f + 6);
	if (!(verified & SW_CSUM_UDP_VERIFIED) && (udp[6] | udp[7])) {
		const uint8_t *ip = f + SW_ETH_HLEN;
		uint32_t pseudo = ref_sum(ip + 12, 8, 17u + (uint32_t)(SW_UDP_HLEN + v->payload_len));
		CHECK(ref_sum(udp, SW_UDP_HLEN + v->payload_len, pseudo) == 0xffff);
	}
	/* the same datagram built by the switch parses back to the same view
	 * (any length: the builder's head is even, the payload may be odd) */
	struct sw_udp_hdrs h = {
		.src_ip = v->src_ip, .dst_ip = v->dst_ip, .src_port = v->src_port, .dst_port = v->dst_port
	};
	memcpy(h.src_mac, v->src_mac, 6);
	memcpy(h.dst_mac, v->dst_mac, 6);
	size_t n = sw_frame_build_udp(again, sizeof(again), &h, v->payload, 0, v->payload, v->payload_len,
				      sw_csum_partial(v->payload, v->payload_len, 0));
	if (SW_UDP_PREFIX_LEN + v->payload_len > sizeof(again)) {
		CHECK(n == 0);
		return;
	}
	CHECK(n == SW_UDP_PREFIX_LEN + v->payload_len);
	struct sw_udp_view w;
	CHECK(sw_frame_parse_udp(again, n, 0, &w) == SW_FRAME_OK);
	CHECK(w.src_ip == v->src_ip && w.dst_ip == v->dst_ip && w.src_port == v->src_port &&
	      w.dst_port == v->dst_port && w.payload_len == v->payload_len);
	CHECK(memcmp(w.payload, v->payload, v->payload_len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned verified = data[0] & (SW_CSUM_IP_VERIFIED | SW_CSUM_UDP_VERIFIED);
	size_t len = size - 1;
	/* an exact-size copy, so ASan sees any read past the frame */
	uint8_t *f = malloc(len ? len : 1);
	if (!f)
		return 0;
	memcpy(f, data + 1, len);

	struct sw_udp_view v;
	enum sw_frame_err e = sw_frame_parse_udp(f, len, verified, &v);
	CHECK((unsigned)e < SW_FRAME_ERR_MAX_);
	if (e == SW_FRAME_OK)
		check_view(f, len, verified, &v);

	uint8_t reply[64];
	const uint8_t mac[6] = { 2, 0, 0, 0, 0, 0xfe };
	size_t n = sw_frame_arp_reply(f, len, mac, 0xfe00000a, reply, sizeof(reply));
	CHECK(n == 0 || n == SW_ETH_HLEN + 28);
	(void)sw_frame_ethertype(f, len);
	free(f);
	return 0;
}
