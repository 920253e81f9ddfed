/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu's frames: building and parsing against an independent checksum,
 * every malformed kind under its reason, ARP. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "sw_frame.h"
#include "testlib.h"

/* RFC 1071 by the book, byte by byte: the reference for the checksums. */
static uint16_t ref_csum(const uint8_t *p, size_t n, uint32_t sum)
{
	for (size_t i = 0; i < n; i++)
		sum += i % 2 ? p[i] : (uint32_t)p[i] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static const struct sw_udp_hdrs hdrs = {
	.src_mac = { 2, 0, 0, 0, 0, 0xfe },
	.dst_mac = { 2, 0, 0, 0, 0, 1 },
};

/* The addresses and the (dummy) INA header, INA_HDR_LEN bytes at ina, every
 * test frame carries (not ina[INA_HDR_LEN]: GCC 11 checks such a bound
 * against the wrong argument of a function that returns a struct). */
static struct sw_udp_hdrs test_hdrs(uint8_t *ina)
{
	struct sw_udp_hdrs h = hdrs;
	memset(ina, 0x11, INA_HDR_LEN);
	h.src_ip = inet_addr("10.0.0.254");
	h.dst_ip = inet_addr("10.0.0.1");
	h.src_port = htons(0xBEE0);
	h.dst_port = htons(0xBEE1);
	return h;
}

static size_t build(uint8_t *buf, size_t plen, const uint8_t *payload)
{
	uint8_t ina[INA_HDR_LEN];
	struct sw_udp_hdrs h = test_hdrs(ina);
	return sw_frame_build_udp(buf, 9100, &h, ina, INA_HDR_LEN, payload, plen, sw_csum_partial(payload, plen, 0));
}

static void test_frame_build_parse(void **state)
{
	(void)state;
	static uint8_t buf[9100], payload[8948];
	struct tl_rng rng = { 5 };
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)tl_next(&rng);

	static const size_t lens[] = { 0, 1, 2, 3, 63, 1024, 8924 };
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		size_t plen = lens[k], n = build(buf, plen, payload);
		assert_int_equal(n, 14 + 20 + 8 + 24 + plen);
		const uint8_t *ip = buf + 14, *udp = ip + 20;
		/* IPv4 header and UDP (with pseudo header) sum to zero */
		assert_int_equal(ref_csum(ip, 20, 0), 0);
		uint32_t pseudo = (uint32_t)(ip[12] << 8 | ip[13]) + (uint32_t)(ip[14] << 8 | ip[15]) +
				  (uint32_t)(ip[16] << 8 | ip[17]) + (uint32_t)(ip[18] << 8 | ip[19]) + 17 +
				  (uint32_t)(8 + 24 + plen);
		assert_int_equal(ref_csum(udp, 8 + 24 + plen, pseudo), 0);

		struct sw_udp_view v;
		assert_int_equal(sw_frame_parse_udp(buf, n, 0, &v), SW_FRAME_OK);
		assert_int_equal(v.src_ip, inet_addr("10.0.0.254"));
		assert_int_equal(v.dst_port, htons(0xBEE1));
		assert_int_equal(v.payload_len, 24 + plen);
		assert_memory_equal(v.payload + 24, payload, plen);
		assert_memory_equal(v.src_mac, hdrs.src_mac, 6);
	}
	assert_int_equal(sw_frame_build_udp(buf, 100, &hdrs, buf, 24, payload, 100, 0), 0);

	/* headers alone, the payload in another segment: the same bytes */
	static uint8_t split[9100];
	uint8_t ina[INA_HDR_LEN];
	struct sw_udp_hdrs h = test_hdrs(ina);
	size_t whole = build(buf, 1024, payload);
	size_t hl = sw_frame_udp_headers(split, 100, &h, ina, sizeof(ina), 1024, sw_csum_partial(payload, 1024, 0));
	assert_int_equal(hl, 14 + 20 + 8 + 24);
	memcpy(split + hl, payload, 1024);
	assert_int_equal(hl + 1024, whole);
	assert_memory_equal(split, buf, whole);
	assert_int_equal(sw_frame_udp_headers(split, 60, &h, ina, sizeof(ina), 1024, 0), 0);
}

/* The multicast fast path: one sum of the header (contributor field 0) and
 * payload per group, the contributor added per frame, the prefix written
 * from values; every frame must equal the one built from scratch. */
static void test_frame_prefix_parts(void **state)
{
	(void)state;
	static uint8_t want[9100], got[9100], payload[1001];
	struct tl_rng rng = { 9 };
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)tl_next(&rng);
	uint8_t ina[INA_HDR_LEN], zero[INA_HDR_LEN];
	struct sw_udp_hdrs h = test_hdrs(ina);
	for (size_t i = 0; i < INA_HDR_LEN; i++)
		ina[i] = (uint8_t)tl_next(&rng);
	memcpy(zero, ina, sizeof(zero));
	zero[6] = zero[7] = 0;
	uint32_t group = sw_csum_partial(zero, sizeof(zero), sw_csum_partial(payload, sizeof(payload), 0));
	static const uint16_t contributors[] = { 0, 1, 0x8000, 0xffff, 0x1234 };
	for (size_t k = 0; k < sizeof(contributors) / sizeof(contributors[0]); k++) {
		uint16_t c = contributors[k];
		ina[6] = (uint8_t)(c >> 8);
		ina[7] = (uint8_t)c;
		h.dst_ip = inet_addr("10.0.0.1") + htonl((uint32_t)k);
		size_t n = sw_frame_build_udp(want, sizeof(want), &h, ina, INA_HDR_LEN, payload, sizeof(payload),
					      sw_csum_partial(payload, sizeof(payload), 0));
		assert_int_equal(n, SW_UDP_PREFIX_LEN + INA_HDR_LEN + sizeof(payload));
		sw_frame_udp_prefix(got, &h, SW_UDP_HLEN + INA_HDR_LEN + sizeof(payload), sw_csum_add(group, c));
		memcpy(got + SW_UDP_PREFIX_LEN, ina, INA_HDR_LEN);
		memcpy(got + SW_UDP_PREFIX_LEN + INA_HDR_LEN, payload, sizeof(payload));
		assert_memory_equal(got, want, n);
		struct sw_udp_view v;
		assert_int_equal(sw_frame_parse_udp(got, n, 0, &v), SW_FRAME_OK);
	}
}

/* A result's headers from a template completed per length: the bytes of
 * the fully built frame but for the UDP checksum, which is 0, and an IPv4
 * checksum that holds by the reference sum, at every length class. */
static void test_frame_template(void **state)
{
	(void)state;
	static uint8_t want[9100], got[SW_UDP_PREFIX_LEN], payload[9000];
	uint8_t ina[INA_HDR_LEN], tmpl[SW_UDP_PREFIX_LEN];
	static const size_t plens[] = { 0, 1, 255, 256, 1472 - INA_HDR_LEN - 8, 8000, 8972 - INA_HDR_LEN - 8 };
	struct sw_udp_hdrs h = test_hdrs(ina);
	h.dst_ip = inet_addr("192.168.255.255");
	uint32_t sum = sw_frame_udp_template(tmpl, &h);
	for (size_t k = 0; k < sizeof(plens) / sizeof(plens[0]); k++) {
		size_t n = sw_frame_build_udp(want, sizeof(want), &h, ina, INA_HDR_LEN, payload, plens[k], 0);
		assert_true(n > 0);
		memcpy(got, tmpl, sizeof(got));
		sw_frame_udp_fill_len(got, sum, SW_UDP_HLEN + INA_HDR_LEN + plens[k]);
		assert_int_equal(ref_csum(got + SW_ETH_HLEN, SW_IP_HLEN, 0), 0);
		want[SW_UDP_PREFIX_LEN - 2] = want[SW_UDP_PREFIX_LEN - 1] = 0;
		assert_memory_equal(got, want, SW_UDP_PREFIX_LEN);
	}
}

static void test_frame_errors(void **state)
{
	(void)state;
	static uint8_t buf[9100], payload[200];
	struct sw_udp_view v;
	size_t n = build(buf, sizeof(payload), payload);
	struct {
		int off;
		uint8_t xor ;
		enum sw_frame_err want;
	} cases[] = {
		{ 12, 0x08, SW_FRAME_NOT_IPV4 },	  /* ethertype 0x0000 */
		{ 14, 0x10, SW_FRAME_NOT_IPV4 },	  /* version 5 */
		{ 14 + 8, 0x01, SW_FRAME_BAD_IP_CSUM },	  /* TTL changed */
		{ 14 + 2, 0x40, SW_FRAME_SHORT },	  /* total length beyond the frame */
		{ 14 + 40, 0x01, SW_FRAME_BAD_UDP_CSUM }, /* payload byte */
		{ 14 + 20 + 5, 0x01, SW_FRAME_BAD_UDP_LEN },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		buf[cases[i].off] ^= cases[i].xor ;
		enum sw_frame_err e = sw_frame_parse_udp(buf, n, 0, &v);
		if (e != cases[i].want)
			fail_msg("case %zu: got %s want %s", i, sw_frame_err_name(e), sw_frame_err_name(cases[i].want));
		buf[cases[i].off] ^= cases[i].xor ;
	}
	/* what a NIC verified is not checked again, and only that */
	buf[14 + 8] ^= 1;
	assert_int_equal(sw_frame_parse_udp(buf, n, SW_CSUM_IP_VERIFIED, &v), SW_FRAME_OK);
	assert_int_equal(sw_frame_parse_udp(buf, n, SW_CSUM_UDP_VERIFIED, &v), SW_FRAME_BAD_IP_CSUM);
	buf[14 + 8] ^= 1;
	buf[14 + 40] ^= 1;
	assert_int_equal(sw_frame_parse_udp(buf, n, SW_CSUM_UDP_VERIFIED, &v), SW_FRAME_OK);
	assert_int_equal(sw_frame_parse_udp(buf, n, SW_CSUM_IP_VERIFIED, &v), SW_FRAME_BAD_UDP_CSUM);
	buf[14 + 40] ^= 1;
	assert_int_equal(sw_frame_parse_udp(buf, 30, 0, &v), SW_FRAME_SHORT);
	/* protocol TCP, fragment: fix the IP checksum so only that differs */
	for (int k = 0; k < 2; k++) {
		uint8_t *ip = buf + 14;
		if (k == 0)
			ip[9] = 6;
		else
			ip[6] |= 0x20; /* MF */
		ip[10] = ip[11] = 0;
		uint16_t c = ref_csum(ip, 20, 0);
		ip[10] = (uint8_t)(c >> 8);
		ip[11] = (uint8_t)c;
		assert_int_equal(sw_frame_parse_udp(buf, n, 0, &v), k == 0 ? SW_FRAME_NOT_UDP : SW_FRAME_FRAGMENT);
		n = build(buf, sizeof(payload), payload);
	}
	/* a zero UDP checksum means "none" and is accepted with any payload */
	buf[14 + 20 + 6] = buf[14 + 20 + 7] = 0;
	buf[14 + 60] ^= 0xff;
	assert_int_equal(sw_frame_parse_udp(buf, n, 0, &v), SW_FRAME_OK);
	for (int e = 0; e < SW_FRAME_ERR_MAX_; e++)
		assert_string_not_equal(sw_frame_err_name(e), "invalid");
}

/* A queue's mark: only ECN-capable IPv4 (tagged or not) is marked, once,
 * and its IPv4 checksum holds by the reference sum after. */
static void test_frame_ce_mark(void **state)
{
	(void)state;
	static uint8_t f[200], t[204];
	uint8_t ina[INA_HDR_LEN];
	struct sw_udp_hdrs h = test_hdrs(ina);
	size_t n = sw_frame_build_udp(f, sizeof(f), &h, ina, INA_HDR_LEN, "abcd", 4, sw_csum_partial("abcd", 4, 0));
	assert_int_equal(f[SW_ETH_HLEN + 1], SW_ECN_ECT0); /* what the switch sends may be marked */
	assert_int_equal(ref_csum(f + SW_ETH_HLEN, SW_IP_HLEN, 0), 0);
	/* the same frame behind an 802.1Q tag */
	memcpy(t, f, 12);
	memcpy(t + 12, "\x81\x00\x00\x07", 4);
	memcpy(t + 16, f + 12, n - 12);
	for (int tagged = 0; tagged < 2; tagged++) {
		uint8_t *g = tagged ? t : f;
		const size_t len = n + (tagged ? 4 : 0), at = SW_ETH_HLEN + (tagged ? 4 : 0);
		for (unsigned tos = 0; tos < 8; tos++) { /* DSCP kept, each ECN value */
			g[at + 1] = (uint8_t)(tos << 5 | (tos & 3));
			g[at + 10] = g[at + 11] = 0;
			uint16_t c = ref_csum(g + at, SW_IP_HLEN, 0);
			g[at + 10] = (uint8_t)(c >> 8);
			g[at + 11] = (uint8_t)c;
			const bool ect = (tos & 3) == 1 || (tos & 3) == 2;
			assert_int_equal(sw_frame_ect_ip(g, len), ect ? at : 0);
			if (!ect)
				continue;
			sw_frame_set_ce(g + at);
			assert_int_equal(g[at + 1], (uint8_t)(tos << 5 | SW_ECN_CE));
			assert_int_equal(ref_csum(g + at, SW_IP_HLEN, 0), 0);
			assert_int_equal(sw_frame_ect_ip(g, len), 0); /* marked once */
		}
	}
	/* not IPv4, too short */
	f[12] = 0x86;
	f[13] = 0xdd;
	assert_int_equal(sw_frame_ect_ip(f, n), 0);
	f[12] = 0x08;
	f[13] = 0x00;
	assert_int_equal(sw_frame_ect_ip(f, SW_ETH_HLEN + 10), 0);
}

static void test_arp(void **state)
{
	(void)state;
	uint8_t req[60] = { 0 }, rep[64];
	uint8_t me[6] = { 2, 0, 0, 0, 0, 0xfe }, asker[6] = { 2, 0, 0, 0, 0, 1 };
	uint32_t my_ip = inet_addr("10.0.0.254"), its_ip = inet_addr("10.0.0.1");
	memset(req, 0xff, 6);
	memcpy(req + 6, asker, 6);
	req[12] = 0x08, req[13] = 0x06;
	uint8_t *a = req + 14;
	a[1] = 1, a[2] = 0x08, a[4] = 6, a[5] = 4, a[7] = 1;
	memcpy(a + 8, asker, 6);
	memcpy(a + 14, &its_ip, 4);
	memcpy(a + 24, &my_ip, 4);

	size_t n = sw_frame_arp_reply(req, sizeof(req), me, my_ip, rep, sizeof(rep));
	assert_int_equal(n, 42);
	assert_memory_equal(rep, asker, 6);
	assert_memory_equal(rep + 6, me, 6);
	assert_int_equal(rep[14 + 7], 2); /* reply */
	assert_memory_equal(rep + 14 + 8, me, 6);
	assert_memory_equal(rep + 14 + 14, &my_ip, 4);
	assert_memory_equal(rep + 14 + 18, asker, 6);
	assert_memory_equal(rep + 14 + 24, &its_ip, 4);
	assert_int_equal(sw_frame_arp_reply(req, sizeof(req), me, its_ip, rep, sizeof(rep)), 0);
	a[7] = 2;
	assert_int_equal(sw_frame_arp_reply(req, sizeof(req), me, my_ip, rep, sizeof(rep)), 0);

	/* claims: the asker's own ARP is fine; one saying "10.0.0.254 is at
	 * asker", request or reply, is a claim; so is any frame from our MAC */
	assert_false(sw_frame_claims(req, sizeof(req), me, my_ip));
	memcpy(a + 14, &my_ip, 4);
	assert_true(sw_frame_claims(req, sizeof(req), me, my_ip));
	a[7] = 1;
	assert_true(sw_frame_claims(req, sizeof(req), me, my_ip));
	memcpy(a + 8, me, 6); /* our own, looped back: not a claim */
	assert_false(sw_frame_claims(req, sizeof(req), me, my_ip));
	assert_false(sw_frame_claims(req, 41, me, my_ip));
	memcpy(req + 6, me, 6);
	assert_true(sw_frame_claims(req, sizeof(req), me, my_ip));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_build_parse), cmocka_unit_test(test_frame_prefix_parts),
		cmocka_unit_test(test_frame_template),	  cmocka_unit_test(test_frame_errors),
		cmocka_unit_test(test_frame_ce_mark),	  cmocka_unit_test(test_arp),
	};
	return cmocka_run_group_tests_name("frame", tests, NULL, NULL);
}
