/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu's own datapath (sw_rt_setup, sw_dp_poll) on in-memory ring ports,
 * with frames made here: what comes out of the switch is read back and
 * checked against the sum computed here and against sw_frame_parse_udp's
 * checksum verification.  Covers the result frames of a multicast (copied
 * and shared payloads, no UDP checksum) and the use of a
 * NIC's RX checksum verdict, which no namespace test can reach (veth and
 * af_packet ports report none). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dp_fixture.h"

/* The result's elements are the sum of both hosts' slice seq. */
static void assert_sum(const struct ina_pkt *pkt, unsigned seq, unsigned h)
{
	for (unsigned e = 0; e < pkt->hdr.count; e++) {
		uint32_t w;
		memcpy(&w, pkt->payload + 4 * e, 4);
		int32_t want = value(0, seq, e) + value(1, seq, e);
		if ((int32_t)rte_be_to_cpu_32(w) != want)
			fail_msg("seq %u count %u host %u element %u: %d, want %d", seq, pkt->hdr.count, h, e,
				 (int32_t)rte_be_to_cpu_32(w), want);
	}
}

/* Both hosts contribute; each gets one result, addressed to it, with a
 * valid IPv4 checksum and UDP checksum 0, its own contributor id and the
 * exact sum.  Small payloads are copied into each frame, large ones shared
 * by reference. */
static void test_multicast_results(void **state)
{
	struct fixture *fx = *state;
	static uint8_t frames[4][9100];
	size_t len[4];
	static const unsigned counts[] = { 1, 64, 127, 128, MAX_ELEMS };
	for (unsigned k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		unsigned slot = k % SLOTS, count = counts[k];
		for (unsigned h = 0; h < NHOSTS; h++)
			send_and_poll(fx, h, contribution(fx, h, slot, count));
		for (unsigned h = 0; h < NHOSTS; h++) {
			unsigned n = received(fx, h, frames, len, 4);
			assert_int_equal(n, 1);
			struct sw_udp_view v;
			assert_int_equal(sw_frame_parse_udp(frames[0], len[0], 0, &v), SW_FRAME_OK);
			/* UDP checksum 0: results are not summed (their IPv4 header is) */
			assert_int_equal(
				frames[0][SW_ETH_HLEN + SW_IP_HLEN + 6] | frames[0][SW_ETH_HLEN + SW_IP_HLEN + 7], 0);
			uint8_t mac[6];
			host_mac(h, mac);
			assert_memory_equal(v.dst_mac, mac, 6);
			assert_memory_equal(v.src_mac, sw_mac, 6);
			assert_int_equal(v.src_ip, rte_cpu_to_be_32(sw_ip_host));
			assert_int_equal(v.dst_ip, host_ip(h));
			struct ina_pkt pkt;
			assert_int_equal(ina_parse(v.payload, v.payload_len, &pkt), INA_OK);
			assert_int_equal(pkt.hdr.type, INA_T_RESULT);
			assert_int_equal(pkt.hdr.contributor, h);
			assert_int_equal(pkt.hdr.slot, slot);
			assert_int_equal(pkt.hdr.count, count);
			assert_sum(&pkt, slot, h);
		}
	}
	const struct ina_job_stats *js = ina_job_stats(fx->rt.sw[0]->eng, 1);
	assert_int_equal(js->completions, sizeof(counts) / sizeof(counts[0]));
	for (unsigned h = 0; h < NHOSTS; h++)
		for (int d = 0; d < SW_D_MAX_; d++)
			if (port_stats(fx, h)->drops[d])
				fail_msg("port %u dropped %s", h, sw_drop_name((unsigned)d));
}

/* Host h's next frame is slice seq's result for slot field `slot`, exact. */
static void expect_result(struct fixture *fx, unsigned h, uint32_t slot, unsigned seq, unsigned count)
{
	static uint8_t frames[1][9100];
	size_t len[1] = { 0 };
	struct sw_udp_view v;
	struct ina_pkt pkt;
	assert_int_equal(received(fx, h, frames, len, 1), 1);
	assert_int_equal(sw_frame_parse_udp(frames[0], len[0], 0, &v), SW_FRAME_OK);
	assert_int_equal(ina_parse(v.payload, v.payload_len, &pkt), INA_OK);
	assert_int_equal(pkt.hdr.slot, slot);
	assert_int_equal(pkt.hdr.seq, seq);
	assert_int_equal(pkt.hdr.count, count);
	assert_sum(&pkt, seq, h);
}

/* A long sum is made in a held_pool mbuf that the result frames chain to
 * (sw_result.c).  While a round's frames still wait in the transmit
 * rings, the slot's next round must sum elsewhere, and they leave with
 * their own round's sum; once they left, the buffer is used again; when
 * the job goes, its buffers go back to the pool. */
static void test_sum_in_flight_keeps_its_bytes(void **state)
{
	struct fixture *fx = *state;
	const unsigned count = 256; /* 1 KiB: past SW_SHARE_MIN, chained */
	struct rte_mempool *held = fx->rt.held_pool;
	assert_non_null(held);
	/* slot 0: set 0, set 1, set 0 again, nothing read meanwhile */
	const uint32_t slots[] = { 0, INA_SLOT_SET_BIT, 0 };
	for (unsigned r = 0; r < 3; r++)
		for (unsigned h = 0; h < NHOSTS; h++)
			send_and_poll(fx, h, slice(fx, h, slots[r], r, count));
	/* set 0's first sum is still in host 0's ring: a buffer of its own */
	assert_int_equal(rte_mempool_in_use_count(held), 3);
	for (unsigned h = 0; h < NHOSTS; h++)
		for (unsigned r = 0; r < 3; r++)
			expect_result(fx, h, slots[r], r, count);
	/* all sent: set 1's next round sums in its buffer again */
	for (unsigned h = 0; h < NHOSTS; h++)
		send_and_poll(fx, h, slice(fx, h, INA_SLOT_SET_BIT, 3, count));
	for (unsigned h = 0; h < NHOSTS; h++)
		expect_result(fx, h, INA_SLOT_SET_BIT, 3, count);
	assert_int_equal(rte_mempool_in_use_count(held), 2);
	assert_int_equal(ina_job_remove(fx->rt.sw[0]->eng, 1), 0);
	assert_int_equal(rte_mempool_in_use_count(held), 0);
}

static void flip_byte(struct rte_mbuf *m, size_t off) { rte_pktmbuf_mtod(m, uint8_t *)[off] ^= 0x01; }

/* A device's checksum verdict is used: a frame it calls bad is that drop
 * even when the bytes are right, and one it calls good is not summed again
 * (a corrupted byte then passes, which is what trusting the NIC means).
 * Without a verdict the switch verifies. */
static void test_rx_checksum_verdict(void **state)
{
	struct fixture *fx = *state;
	const unsigned ip_bad = SW_D_FRAME_BASE + SW_FRAME_BAD_IP_CSUM;
	const unsigned udp_bad = SW_D_FRAME_BASE + SW_FRAME_BAD_UDP_CSUM;
	const size_t ttl = SW_ETH_HLEN + 8, payload0 = SW_UDP_PREFIX_LEN + INA_HDR_LEN;
	static uint8_t frames[4][9100];
	size_t len[4];
	assert_false(fx->rt.sw[0]->ports[0].rx_csum_offload); /* ring ports verify nothing */

	struct rte_mbuf *m = contribution(fx, 0, 0, 16);
	flip_byte(m, payload0);
	send_and_poll(fx, 0, m);
	assert_int_equal(port_stats(fx, 0)->drops[udp_bad], 1);

	m = contribution(fx, 0, 0, 16);
	m->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_BAD;
	send_and_poll(fx, 0, m);
	assert_int_equal(port_stats(fx, 0)->drops[udp_bad], 2);

	m = contribution(fx, 0, 0, 16);
	m->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_BAD | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
	send_and_poll(fx, 0, m);
	assert_int_equal(port_stats(fx, 0)->drops[ip_bad], 1);

	m = contribution(fx, 0, 0, 16);
	flip_byte(m, ttl);
	send_and_poll(fx, 0, m);
	assert_int_equal(port_stats(fx, 0)->drops[ip_bad], 2);
	assert_int_equal(fx->rt.sw[0]->st.ina_packets, 0);

	/* trusted: the TTL and the first element are off, the verdict says
	 * good; the element's change shows in the sum */
	m = contribution(fx, 0, 0, 16);
	flip_byte(m, ttl);
	flip_byte(m, payload0 + 3);
	m->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
	send_and_poll(fx, 0, m);
	send_and_poll(fx, 1, contribution(fx, 1, 0, 16));
	assert_int_equal(fx->rt.sw[0]->st.ina_packets, 2);
	assert_int_equal(port_stats(fx, 0)->drops[ip_bad] + port_stats(fx, 0)->drops[udp_bad], 4);
	assert_int_equal(received(fx, 1, frames, len, 4), 1);
	struct sw_udp_view v;
	struct ina_pkt pkt;
	assert_int_equal(sw_frame_parse_udp(frames[0], len[0], 0, &v), SW_FRAME_OK);
	assert_int_equal(ina_parse(v.payload, v.payload_len, &pkt), INA_OK);
	uint32_t w;
	memcpy(&w, pkt.payload, 4);
	assert_int_equal((int32_t)rte_be_to_cpu_32(w), (value(0, 0, 0) ^ 1) + value(1, 0, 0));
	assert_int_equal(received(fx, 0, frames, len, 4), 1);
}

/* Results follow the FDB: host 1's MAC moves to port 0 and its next
 * result leaves there, though the switch had resolved where host 1's
 * results go within the same second (sw_result.c keeps that). */
static void test_results_follow_a_move(void **state)
{
	struct fixture *fx = *state;
	struct sw_lsw *sw = fx->rt.sw[0];
	static uint8_t frames[4][9100];
	size_t len[4];
	uint8_t mac0[6], mac1[6];
	host_mac(0, mac0), host_mac(1, mac1);
	for (unsigned h = 0; h < NHOSTS; h++)
		send_and_poll(fx, h, contribution(fx, h, 0, 64));
	for (unsigned h = 0; h < NHOSTS; h++)
		assert_int_equal(received(fx, h, frames, len, 4), 1);
	uint32_t s0 = sw->now_s;
	send_and_poll(fx, 0, raw_frame(fx, 1, mac0, 0, 0)); /* from host 1's MAC, on port 0 */
	for (unsigned h = 0; h < NHOSTS; h++)
		send_and_poll(fx, h, contribution(fx, h, 1, 64));
	/* host 1's own frame on port 1 moves it back only in a later second */
	int at = sw_fdb_lookup(&sw->fdb, mac1, SW_VLAN_DEFAULT, sw->now_s);
	assert_true(at == 0 || (at == 1 && sw->now_s != s0));
	unsigned n = received(fx, (unsigned)at, frames, len, 4);
	assert_int_equal(n, at == 0 ? 2 : 1);
	struct sw_udp_view v;
	assert_int_equal(sw_frame_parse_udp(frames[n - 1], len[n - 1], 0, &v), SW_FRAME_OK);
	assert_memory_equal(v.dst_mac, mac1, 6);
	assert_int_equal(v.dst_ip, host_ip(1));
	assert_int_equal(received(fx, (unsigned)!at, frames, len, 4), at == 0 ? 0 : 1);
}

/* A parsed command applied on the switch's lcore as the control thread
 * hands it over (sw_ctrl_apply), from host 0; its answer, drained. */
static void apply_cmd(struct fixture *fx, const struct ctl_cmd *cmd, const char *want)
{
	struct sw_lsw *sw = fx->rt.sw[0];
	assert_true(sw->ctrl_nidle > 0);
	struct sw_ctrl_req *q = sw->ctrl_idle[--sw->ctrl_nidle];
	q->in = &sw->ports[0];
	q->vlan = sw->ports[0].cfg->vlan;
	q->src_ip = host_ip(0);
	q->src_port = q->dst_port = rte_cpu_to_be_16(sw->cfg->ctrl_port);
	host_mac(0, q->src_mac);
	q->drop = 0;
	q->cmd = *cmd;
	assert_int_equal(rte_ring_enqueue(sw->ctrl_out, q), 0);
	sw_ctrl_apply(&fx->rt, sw);
	sw_dp_flush(&fx->rt);
	assert_string_equal(q->answer, want);
	static uint8_t frames[1][9100];
	size_t len[1];
	assert_int_equal(received(fx, 0, frames, len, 1), 1);
}

/* The job removed and installed again under its id, its members' indices
 * swapped: the engine's entry (and the address of its config) is the old
 * one's, and the second most likely the same, yet the next results follow
 * the new job: each host gets its new index, none the plan made for the
 * old job (sw_result.c's plans go with every job change). */
static void test_results_after_job_change(void **state)
{
	struct fixture *fx = *state;
	const struct ina_job_cfg *before = ina_job_config(fx->rt.sw[0]->eng, 1);
	for (unsigned slot = 0; slot < 2; slot++) { /* the second's results by the plan the first made */
		for (unsigned h = 0; h < NHOSTS; h++)
			send_and_poll(fx, h, contribution(fx, h, slot, 64));
		for (unsigned h = 0; h < NHOSTS; h++)
			expect_result(fx, h, slot, slot, 64);
	}
	apply_cmd(fx, &(struct ctl_cmd){ .op = CTL_REMOVE, .id = 1 }, "ok\n");
	struct ctl_cmd install = { .op = CTL_INSTALL, .job = fx->job };
	install.job.contributors[0] = fx->job.contributors[1];
	install.job.contributors[1] = fx->job.contributors[0];
	apply_cmd(fx, &install, "ok\n");
	assert_ptr_equal(ina_job_config(fx->rt.sw[0]->eng, 1), before);
	for (unsigned h = 0; h < NHOSTS; h++)
		send_and_poll(fx, h, slice_as(fx, h, NHOSTS - 1 - h, 2, 2, 64));
	for (unsigned h = 0; h < NHOSTS; h++) {
		static uint8_t frames[4][9100];
		size_t len[4];
		struct sw_udp_view v;
		struct ina_pkt pkt;
		assert_int_equal(received(fx, h, frames, len, 4), 1);
		assert_int_equal(sw_frame_parse_udp(frames[0], len[0], 0, &v), SW_FRAME_OK);
		assert_int_equal(v.dst_ip, host_ip(h));
		assert_int_equal(ina_parse(v.payload, v.payload_len, &pkt), INA_OK);
		assert_int_equal(pkt.hdr.contributor, NHOSTS - 1 - h);
		assert_sum(&pkt, 2, h);
	}
}

/* The headers a member's frames repeat (sw_dp.c, member_frame) are not
 * trusted past a change of the engine's jobs: with the job installed again
 * for fp32, a host's next int32 frame, its headers byte for byte those
 * remembered, is refused as the general path refuses it, not summed. */
static struct rte_mbuf *without_udp_sum(struct rte_mbuf *m)
{
	memset(rte_pktmbuf_mtod(m, uint8_t *) + SW_ETH_HLEN + SW_IP_HLEN + 6, 0, 2); /* as the library's hosts send */
	return m;
}

static void test_member_headers_after_job_change(void **state)
{
	struct fixture *fx = *state;
	struct sw_lsw *sw = fx->rt.sw[0];
	slow_clock(fx);
	for (unsigned slot = 0; slot < 2; slot++) { /* the second slot's frames repeat the first's headers */
		for (unsigned h = 0; h < NHOSTS; h++)
			send_and_poll(fx, h, without_udp_sum(contribution(fx, h, slot, 64)));
		for (unsigned h = 0; h < NHOSTS; h++)
			expect_result(fx, h, slot, slot, 64);
	}
	assert_int_equal(sw->st.ina_repeats, 1); /* host 1's: binding it changed the tables after host 0's frame */
	apply_cmd(fx, &(struct ctl_cmd){ .op = CTL_REMOVE, .id = 1 }, "ok\n");
	struct ctl_cmd install = { .op = CTL_INSTALL, .job = fx->job };
	install.job.dtype = INA_D_FP32;
	apply_cmd(fx, &install, "ok\n");
	const uint64_t repeats = sw->st.ina_repeats;
	send_and_poll(fx, 0, without_udp_sum(contribution(fx, 0, 2, 64)));
	assert_int_equal(sw->st.ina_repeats, repeats);
	assert_int_equal(ina_engine_stats(sw->eng)->drops[INA_R_DTYPE_MISMATCH], 1);
	assert_int_equal(ina_job_stats(sw->eng, 1)->contributions, 0);
	static uint8_t frames[1][9100];
	size_t len[1];
	assert_int_equal(received(fx, 0, frames, len, 1), 0);
}

/* Trunk port p1 (10 and 20 tagged, no native) beside access port p0 in
 * VLAN 10: a frame from p0 leaves p1 tagged 10, byte for byte; a tagged 10
 * frame from p1 leaves p0 untagged; VLAN 20 does not reach p0; VLAN 30,
 * untagged and truncated frames are dropped by name; an INA result for a
 * host behind the trunk leaves tagged and checksummed. */
static void test_trunk(void **state)
{
	struct fixture *fx = *state;
	static uint8_t frames[4][9100], want[128];
	size_t len[4], n;
	const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t mac0[6];
	host_mac(0, mac0);

	send_and_poll(fx, 0, raw_frame(fx, 0, bcast, 0, 0));
	assert_int_equal(received(fx, 1, frames, len, 4), 1);
	n = write_frame(0, bcast, 10, want);
	assert_int_equal(len[0], n);
	assert_memory_equal(frames[0], want, n);

	send_and_poll(fx, 1, raw_frame(fx, 1, mac0, 10, 0)); /* h0 is learned: unicast */
	assert_int_equal(received(fx, 0, frames, len, 4), 1);
	n = write_frame(1, mac0, 0, want);
	assert_int_equal(len[0], n);
	assert_memory_equal(frames[0], want, n);

	send_and_poll(fx, 1, raw_frame(fx, 1, bcast, 20, 0));
	assert_int_equal(received(fx, 0, frames, len, 4), 0);
	send_and_poll(fx, 1, raw_frame(fx, 1, bcast, 30, 0));
	assert_int_equal(port_stats(fx, 1)->drops[SW_D_VLAN_NOT_ALLOWED], 1);
	send_and_poll(fx, 1, raw_frame(fx, 1, bcast, 0, 0));
	assert_int_equal(port_stats(fx, 1)->drops[SW_D_UNTAGGED], 1);
	send_and_poll(fx, 1, raw_frame(fx, 1, bcast, 10, 16));
	assert_int_equal(port_stats(fx, 1)->drops[SW_D_RUNT], 1);
	assert_int_equal(received(fx, 0, frames, len, 4), 0);

	/* INA: host 1's contribution arrives tagged 10; its result leaves so */
	struct rte_mbuf *m = contribution(fx, 1, 0, 16);
	m->vlan_tci = 10;
	assert_int_equal(rte_vlan_insert(&m), 0);
	send_and_poll(fx, 1, m);
	send_and_poll(fx, 0, contribution(fx, 0, 0, 16));
	assert_int_equal(received(fx, 1, frames, len, 4), 1);
	assert_memory_equal(frames[0] + 12, ((uint8_t[]){ 0x81, 0x00, 0x00, 10 }), 4);
	memmove(frames[0] + 4, frames[0], 12); /* untag, then read as usual */
	struct sw_udp_view v;
	struct ina_pkt pkt;
	assert_int_equal(sw_frame_parse_udp(frames[0] + 4, len[0] - 4, 0, &v), SW_FRAME_OK);
	assert_int_equal(ina_parse(v.payload, v.payload_len, &pkt), INA_OK);
	assert_int_equal(pkt.hdr.contributor, 1);
	uint32_t w;
	memcpy(&w, pkt.payload + 4 * 15, 4);
	assert_int_equal((int32_t)rte_be_to_cpu_32(w), value(0, 0, 15) + value(1, 0, 15));
	assert_int_equal(received(fx, 0, frames, len, 4), 1);
	assert_int_not_equal(rte_be_to_cpu_16(*(uint16_t *)(frames[0] + 12)), RTE_ETHER_TYPE_VLAN);
}

/* No VLAN hopping: a tag on the access port (which would leave the trunk
 * inside VLAN 10 and be honoured as VLAN 20 next door), a stacked tag or
 * an 802.1ad tag on the trunk are dropped by name and reach no port.  A
 * tagged frame that others still hold is copied before its tag comes off. */
static void test_vlan_hopping(void **state)
{
	struct fixture *fx = *state;
	static uint8_t frames[4][9100], want[128];
	size_t len[4], n;
	const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

	send_and_poll(fx, 0, raw_frame(fx, 0, bcast, 20, 0));
	assert_int_equal(port_stats(fx, 0)->drops[SW_D_TAGGED_ON_ACCESS], 1);
	assert_int_equal(received(fx, 1, frames, len, 4), 0);

	struct rte_mbuf *m = raw_frame(fx, 1, bcast, 20, 0); /* inner 20 ... */
	m->vlan_tci = 10;				     /* ... in outer 10 */
	assert_int_equal(rte_vlan_insert(&m), 0);
	send_and_poll(fx, 1, m);
	m = raw_frame(fx, 1, bcast, 10, 0);
	rte_pktmbuf_mtod(m, uint8_t *)[12] = 0x88; /* 802.1ad */
	rte_pktmbuf_mtod(m, uint8_t *)[13] = 0xa8;
	send_and_poll(fx, 1, m);
	assert_int_equal(port_stats(fx, 1)->drops[SW_D_QINQ], 2);
	assert_int_equal(received(fx, 0, frames, len, 4), 0);
	assert_string_equal(sw_drop_name(SW_D_QINQ), "qinq");
	assert_string_equal(sw_drop_name(SW_D_TAGGED_ON_ACCESS), "tagged_on_access");

	/* a frame this test still holds: forwarded untagged, ours untouched */
	m = raw_frame(fx, 1, bcast, 10, 0);
	rte_mbuf_refcnt_update(m, 1);
	send_and_poll(fx, 1, m);
	assert_int_equal(received(fx, 0, frames, len, 4), 1);
	n = write_frame(1, bcast, 0, want);
	assert_int_equal(len[0], n);
	assert_memory_equal(frames[0], want, n);
	n = write_frame(1, bcast, 10, want);
	assert_int_equal(rte_pktmbuf_pkt_len(m), n);
	assert_memory_equal(rte_pktmbuf_mtod(m, uint8_t *), want, n);
	rte_pktmbuf_free(m);
}

/* The switch's own addresses: an ARP reply from host 0 saying the
 * switch's IP is at host 0's MAC, and a frame from the switch's MAC, are
 * dropped by name and reach no one; an over-MTU datagram to the switch
 * never reaches the engine. */
static void test_claims_and_mtu(void **state)
{
	struct fixture *fx = *state;
	static uint8_t frames[4][9100];
	size_t len[4];
	uint8_t mac0[6];
	host_mac(0, mac0);
	struct rte_mbuf *m = rte_pktmbuf_alloc(fx->gen);
	assert_non_null(m);
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	memset(f, 0, 60);
	memset(f, 0xff, 6);
	memcpy(f + 6, mac0, 6);
	f[12] = 0x08, f[13] = 0x06;
	uint8_t *a = f + 14;
	a[1] = 1, a[2] = 0x08, a[4] = 6, a[5] = 4, a[7] = 2; /* a gratuitous reply */
	memcpy(a + 8, mac0, 6);
	uint32_t ip = rte_cpu_to_be_32(sw_ip_host);
	memcpy(a + 14, &ip, 4);
	memcpy(a + 24, &ip, 4);
	m->data_len = m->pkt_len = 60;
	send_and_poll(fx, 0, m);
	assert_int_equal(port_stats(fx, 0)->drops[SW_D_CLAIMS_SWITCH], 1);
	assert_int_equal(received(fx, 1, frames, len, 4), 0);

	m = raw_frame(fx, 0, (uint8_t[]){ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, 0, 0);
	memcpy(rte_pktmbuf_mtod(m, uint8_t *) + 6, sw_mac, 6);
	send_and_poll(fx, 0, m);
	assert_int_equal(port_stats(fx, 0)->drops[SW_D_CLAIMS_SWITCH], 2);
	assert_int_equal(received(fx, 1, frames, len, 4), 0);

	static uint8_t big[SW_MTU];
	struct sw_udp_hdrs u = { .src_ip = host_ip(0),
				 .dst_ip = ip,
				 .src_port = rte_cpu_to_be_16(INA_UDP_PORT_MIN),
				 .dst_port = rte_cpu_to_be_16(INA_UDP_PORT_MIN) };
	memcpy(u.src_mac, mac0, 6);
	memcpy(u.dst_mac, sw_mac, 6);
	m = rte_pktmbuf_alloc(fx->gen);
	size_t n = sw_frame_build_udp(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m), &u, NULL, 0, big,
				      SW_MTU - 27, 0); /* one byte over */
	assert_int_equal(n, SW_ETH_HLEN + SW_MTU + 1);
	m->data_len = m->pkt_len = (uint32_t)n;
	send_and_poll(fx, 0, m);
	assert_int_equal(port_stats(fx, 0)->drops[SW_D_OVER_MTU], 1);
	assert_int_equal(fx->rt.sw[0]->st.ina_packets, 0);
	assert_string_equal(sw_drop_name(SW_D_CLAIMS_SWITCH), "claims_switch_address");
}

/* Members as the host library installs them (no MAC: the switch learns
 * it), each bound to where it spoke from: INA in a member's name from
 * another MAC, port or VLAN, or from a group MAC, is refused under
 * source_guard and moves nothing; results still reach each member on its
 * own port, and none is flooded.  (Learnt from any frame, the foreign MAC
 * sent host 1's result to port 0 and the broadcast one flooded it.) */
static void test_source_guard(void **state)
{
	struct fixture *fx = *state;
	static uint8_t frames[4][9100];
	size_t len[4];
	struct ina_engine *eng = fx->rt.sw[0]->eng;
	struct ina_job_cfg job = fx->job;
	for (unsigned h = 0; h < NHOSTS; h++)
		memset(job.contributors[h].mac, 0, 6);
	assert_int_equal(ina_job_remove(eng, 1), 0);
	assert_int_equal(ina_job_install(eng, &job, NULL), 0);
	send_and_poll(fx, 0, contribution(fx, 0, 1, 16)); /* binds host 0 to port 0 */
	send_and_poll(fx, 1, contribution(fx, 1, 0, 16)); /* binds host 1 to port 1 */

	uint64_t ina_before = fx->rt.sw[0]->st.ina_packets;
	struct rte_mbuf *m = contribution(fx, 1, 1, 16); /* host 1's name, host 0's MAC, port 0 */
	host_mac(0, rte_pktmbuf_mtod(m, uint8_t *) + 6);
	send_and_poll(fx, 0, m);
	m = contribution(fx, 1, 2, 16); /* host 1's name from a broadcast MAC */
	memset(rte_pktmbuf_mtod(m, uint8_t *) + 6, 0xff, 6);
	send_and_poll(fx, 1, m);
	assert_int_equal(port_stats(fx, 0)->drops[SW_D_SOURCE_GUARD], 1);
	assert_int_equal(port_stats(fx, 1)->drops[SW_D_SOURCE_GUARD], 1);
	assert_int_equal(fx->rt.sw[0]->st.ina_packets, ina_before);

	uint64_t flooded = fx->rt.sw[0]->st.flooded;
	send_and_poll(fx, 0, contribution(fx, 0, 0, 16)); /* completes slot 0 */
	for (unsigned h = 0; h < NHOSTS; h++) {
		assert_int_equal(received(fx, h, frames, len, 4), 1);
		struct sw_udp_view v;
		assert_int_equal(sw_frame_parse_udp(frames[0], len[0], 0, &v), SW_FRAME_OK);
		assert_int_equal(v.dst_ip, host_ip(h));
	}
	assert_int_equal(fx->rt.sw[0]->st.flooded, flooded);
	assert_int_equal(ina_job_stats(eng, 1)->completions, 1);
	assert_string_equal(sw_drop_name(SW_D_SOURCE_GUARD), "source_guard");
}

/* A contribution to a job the switch does not have is dropped (counted
 * unknown_job) and answered with a NACK to its sender, by the port it came
 * in on: the DATA's header echoed, count 0, no payload; the switch's
 * nacks_sent counts it.  A job it has gets none. */
static void test_nack_for_unknown_job(void **state)
{
	struct fixture *fx = *state;
	struct rte_mbuf *m = contribution(fx, 1, 3, 16);
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	f[SW_UDP_PREFIX_LEN + 4 + 1] = 99;				       /* job 1 -> 99 (low byte) */
	f[SW_ETH_HLEN + SW_IP_HLEN + 6] = f[SW_ETH_HLEN + SW_IP_HLEN + 7] = 0; /* no UDP checksum */
	const struct ina_engine_stats *es = ina_engine_stats(fx->rt.sw[0]->eng);
	uint64_t unknown = es->drops[INA_R_UNKNOWN_JOB];
	send_and_poll(fx, 1, m);
	assert_int_equal(es->drops[INA_R_UNKNOWN_JOB] - unknown, 1);
	assert_int_equal(fx->rt.sw[0]->st.ina_nacks, 1);
	static uint8_t buf[2][9100];
	size_t len[2];
	assert_int_equal(received(fx, 0, buf, len, 2), 0);
	assert_int_equal(received(fx, 1, buf, len, 2), 1);
	struct sw_udp_view v;
	struct ina_pkt p;
	assert_int_equal(sw_frame_parse_udp(buf[0], len[0], 0, &v), SW_FRAME_OK);
	assert_int_equal(v.dst_ip, host_ip(1));
	assert_int_equal(rte_be_to_cpu_16(v.dst_port), INA_UDP_PORT_MIN);
	assert_int_equal(ina_parse(v.payload, v.payload_len, &p), INA_OK);
	assert_int_equal(p.hdr.type, INA_T_NACK);
	assert_int_equal(p.hdr.job, 99);
	assert_int_equal(p.hdr.contributor, 1);
	assert_int_equal(p.hdr.slot, 3);
	assert_int_equal(p.hdr.seq, 3);
	assert_int_equal(p.hdr.count, 0);
	assert_int_equal(v.payload_len, INA_HDR_LEN);
	/* the job it has: aggregated, no NACK */
	send_and_poll(fx, 1, contribution(fx, 1, 3, 16));
	assert_int_equal(fx->rt.sw[0]->st.ina_nacks, 1);
}

/* ---- the control channel ---- */

/* Linked with --wrap=ctl_parse: every parse of a control command comes
 * here first, says on which thread it runs, and waits while the test holds
 * the parser (at most 10 s: no test can hang on it). */
int __real_ctl_parse(const char *text, size_t len, const char *origin, const struct ctl_limits *lim,
		     struct ctl_cmd *cmd, char *err, size_t errlen);
static pthread_mutex_t parse_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t parse_cv = PTHREAD_COND_INITIALIZER;
static bool parse_held;
static unsigned parses;
static pthread_t parse_thread;

int __wrap_ctl_parse(const char *text, size_t len, const char *origin, const struct ctl_limits *lim,
		     struct ctl_cmd *cmd, char *err, size_t errlen)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&parse_mu);
	parses++;
	parse_thread = pthread_self();
	pthread_cond_broadcast(&parse_cv);
	while (parse_held && pthread_cond_timedwait(&parse_cv, &parse_mu, &until) == 0)
		;
	pthread_mutex_unlock(&parse_mu);
	return __real_ctl_parse(text, len, origin, lim, cmd, err, errlen);
}

static void hold_parser(bool hold)
{
	pthread_mutex_lock(&parse_mu);
	parse_held = hold;
	pthread_cond_broadcast(&parse_cv);
	pthread_mutex_unlock(&parse_mu);
}

static unsigned parses_begun(void)
{
	pthread_mutex_lock(&parse_mu);
	unsigned n = parses;
	pthread_mutex_unlock(&parse_mu);
	return n;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Polls the switch until cond(fx) holds or 5 s pass; whether it held. */
static bool poll_until(struct fixture *fx, bool (*cond)(struct fixture *))
{
	uint64_t due, end = now_ms() + 5000;
	while (!cond(fx) && now_ms() < end) {
		sw_dp_poll(&fx->rt, &due);
		sw_dp_flush(&fx->rt);
	}
	return cond(fx);
}

static bool parse_started(struct fixture *fx) { return (void)fx, parses_begun() > 0; }
static bool frame_at_h1(struct fixture *fx) { return rte_ring_count(fx->tx[1]) > 0; }
static unsigned want_answers;
static bool answers_at_h0(struct fixture *fx) { return rte_ring_count(fx->tx[0]) >= want_answers; }

/* A command takes its trip through the control thread: its parse runs
 * there, never on the thread that polls, so a parse that takes long (held
 * here) stops no forwarding; SW_CTRL_QUEUE commands wait for it and more
 * are dropped as ctrl_busy, unanswered; each one taken is answered once
 * the parser goes on. */
static void test_ctrl_off_the_datapath(void **state)
{
	struct fixture *fx = *state;
	char err[256];
	const char cmd[] = "op = \"stats\"; id = 1;";
	const uint16_t ctrl = fx->rt.sw[0]->cfg->ctrl_port;
	const unsigned extra = 4;

	parses = 0;
	hold_parser(true);
	assert_int_equal(sw_ctrl_start(&fx->rt, err, sizeof(err)), 0);
	for (unsigned i = 0; i < SW_CTRL_QUEUE + extra; i++)
		assert_int_equal(rte_ring_enqueue(fx->rx[0], udp_to_switch(fx, 0, ctrl, "", 0, cmd, strlen(cmd))), 0);
	assert_true(poll_until(fx, parse_started));
	assert_false(pthread_equal(parse_thread, pthread_self()));

	/* the parser is held: a frame from h0 to h1 still goes through */
	uint8_t h1_mac[6];
	host_mac(1, h1_mac);
	assert_int_equal(rte_ring_enqueue(fx->rx[0], raw_frame(fx, 0, h1_mac, 0, 0)), 0);
	assert_true(poll_until(fx, frame_at_h1));
	assert_int_equal(rte_ring_count(fx->tx[0]), 0); /* nothing answered yet */
	assert_int_equal(port_stats(fx, 0)->drops[SW_D_CTRL_BUSY], extra);

	hold_parser(false);
	want_answers = SW_CTRL_QUEUE;
	assert_true(poll_until(fx, answers_at_h0));
	sw_ctrl_stop(&fx->rt);
	static uint8_t buf[SW_CTRL_QUEUE + 1][9100];
	size_t len[SW_CTRL_QUEUE + 1];
	assert_int_equal(received(fx, 0, buf, len, SW_CTRL_QUEUE + 1), SW_CTRL_QUEUE);
	for (unsigned i = 0; i < SW_CTRL_QUEUE; i++) {
		struct sw_udp_view v;
		assert_int_equal(sw_frame_parse_udp(buf[i], len[i], 0, &v), SW_FRAME_OK);
		assert_int_equal(rte_be_to_cpu_16(v.src_port), ctrl);
		assert_true(v.payload_len > 7 && !memcmp(v.payload, "ok job=1", 8));
	}
	assert_int_equal(parses_begun(), SW_CTRL_QUEUE);
	assert_int_equal(fx->rt.sw[0]->st.ctrl_ok, SW_CTRL_QUEUE);
}

/* A manager's address is not enough where mgmt_ports or mgmt_vlan are
 * set: the command must also come in by such a port, in that VLAN;
 * otherwise it is dropped (ctrl_denied) and never parsed. */
static void test_ctrl_scope(void **state)
{
	struct fixture *fx = *state;
	char err[256];
	const char cmd[] = "op = \"stats\"; id = 1;";
	struct sw_switch_cfg *sc = &fx->rt.cfg.sw[0];
	const uint16_t ctrl = sc->ctrl_port;
	struct {
		uint32_t ports;
		uint16_t vlan;
		bool taken;
	} cases[] = { { 1u << 1, 0, false }, { 1u << 0, 7, false }, { 1u << 0, SW_VLAN_DEFAULT, true } };

	parses = 0;
	assert_int_equal(sw_ctrl_start(&fx->rt, err, sizeof(err)), 0);
	for (unsigned i = 0; i < 3; i++) {
		uint64_t denied = port_stats(fx, 0)->drops[SW_D_CTRL_DENIED];
		sc->mgmt_ports = cases[i].ports;
		sc->mgmt_vlan = cases[i].vlan;
		send_and_poll(fx, 0, udp_to_switch(fx, 0, ctrl, "", 0, cmd, strlen(cmd)));
		assert_int_equal(port_stats(fx, 0)->drops[SW_D_CTRL_DENIED] - denied, !cases[i].taken);
	}
	want_answers = 1;
	assert_true(poll_until(fx, answers_at_h0));
	sw_ctrl_stop(&fx->rt);
	assert_int_equal(parses_begun(), 1);
	assert_int_equal(rte_ring_count(fx->tx[0]), 1);
}

/* The result-header cache gives every member of a rack numbered in
 * sequence an entry of its own, whatever the subnet and INA port: 64
 * addresses .1-.64 (network order, as the engine has them) fill its 64
 * entries once each.  A hash that piled them up made a quarter of the
 * result frames to 32 members resolve their headers again. */
static void test_dst_cache_spreads_a_rack(void **state)
{
	(void)state;
	const uint32_t nets[] = { 0x0a000000, 0x0a010200, 0xc0a80000 };
	for (unsigned n = 0; n < RTE_DIM(nets); n++)
		for (uint16_t port = INA_UDP_PORT_MIN; port <= INA_UDP_PORT_MAX; port++) {
			bool taken[SW_DST_CACHE] = { false };
			for (uint32_t host = 1; host <= SW_DST_CACHE; host++) {
				unsigned slot = sw_dst_slot(rte_cpu_to_be_32(nets[n] + host), rte_cpu_to_be_16(port));
				assert_false(taken[slot]);
				taken[slot] = true;
			}
		}
}

int main(void)
{
	if (dp_eal_start("test_dp", "0") < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dst_cache_spreads_a_rack),
		cmocka_unit_test_setup_teardown(test_multicast_results, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sum_in_flight_keeps_its_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_results_follow_a_move, setup_learn, teardown),
		cmocka_unit_test_setup_teardown(test_results_after_job_change, setup, teardown),
		cmocka_unit_test_setup_teardown(test_member_headers_after_job_change, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_checksum_verdict, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trunk, setup_trunk, teardown),
		cmocka_unit_test_setup_teardown(test_vlan_hopping, setup_trunk, teardown),
		cmocka_unit_test_setup_teardown(test_claims_and_mtu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_source_guard, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nack_for_unknown_job, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ctrl_off_the_datapath, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ctrl_scope, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	sw_eal_cleanup();
	return rc;
}
