/* SPDX-License-Identifier: BSD-3-Clause */
/* A burst through swemu's staged input path (sw_dp.c, input_burst): the
 * usual frames of a burst are forwarded as runs per output port, the rest
 * frame by frame, and the two must not be told apart from outside: every
 * frame leaves in the order it came, counted once; an FDB change inside a
 * burst (a station that moves) redirects the frames after it, though the
 * port had cached the old answer.  INA frames of a member whose headers the
 * switch checked take a shorter way to the engine, with the same answers. */
#include "dp_fixture.h"

/* Host h's frame to dst, IPv4 by its ethertype unless raw (0x88b5, which
 * the staged path leaves to the frame-by-frame one), marked with mark. */
static struct rte_mbuf *marked(struct fixture *fx, unsigned h, const uint8_t dst[6], bool ipv4, uint8_t mark)
{
	struct rte_mbuf *m = raw_frame(fx, h, dst, 0, 0);
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	if (ipv4)
		f[12] = 0x08, f[13] = 0x00;
	f[20] = mark;
	return m;
}

/* The frames, in one burst from host h's port; then polled empty. */
static void burst_from(struct fixture *fx, unsigned h, struct rte_mbuf **ms, unsigned n)
{
	uint64_t due;
	assert_int_equal(rte_ring_enqueue_bulk(fx->rx[h], (void **)ms, n, NULL), n);
	while (sw_dp_poll(&fx->rt, &due))
		;
	sw_dp_flush(&fx->rt);
}

static void drain(struct fixture *fx, unsigned h)
{
	static uint8_t frames[8][9100];
	size_t len[8];
	while (received(fx, h, frames, len, 8))
		;
}

/* Host h got exactly these n frames, byte for byte, in this order. */
static void expect_frames(struct fixture *fx, unsigned h, uint8_t (*want)[128], const size_t *want_len, unsigned n)
{
	static uint8_t frames[10][9100];
	size_t len[10];
	assert_true(n < 10);
	assert_int_equal(received(fx, h, frames, len, 10), n);
	for (unsigned k = 0; k < n; k++) {
		assert_int_equal(len[k], want_len[k]);
		assert_memory_equal(frames[k], want[k], want_len[k]);
	}
}

/* Both hosts known to the FDB (learned, not static), nothing pending. */
static void learn_both(struct fixture *fx)
{
	uint8_t mac[NHOSTS][6];
	for (unsigned h = 0; h < NHOSTS; h++)
		host_mac(h, mac[h]);
	struct rte_mbuf *m = marked(fx, 1, mac[0], false, 0);
	burst_from(fx, 1, &m, 1);
	m = marked(fx, 0, mac[1], false, 0);
	burst_from(fx, 0, &m, 1);
	for (unsigned h = 0; h < NHOSTS; h++)
		drain(fx, h);
}

/* Eight frames from host 0 to host 1 in one burst, the first from a
 * source not learned yet and the fourth not IPv4 (both frame by frame),
 * the rest staged: host 1 gets all eight, byte for byte, in order; each
 * port counts them once. */
static void test_order_and_counters(void **state)
{
	struct fixture *fx = *state;
	uint8_t mac0[6], mac1[6];
	host_mac(0, mac0), host_mac(1, mac1);
	struct rte_mbuf *m = marked(fx, 1, mac0, false, 0); /* host 1 known: no flood */
	burst_from(fx, 1, &m, 1);
	drain(fx, 0);
	const struct sw_port_stats before0 = *port_stats(fx, 0), before1 = *port_stats(fx, 1);
	struct rte_mbuf *ms[8];
	static uint8_t sent[8][128];
	size_t sent_len[8];
	uint64_t bytes = 0;
	for (unsigned k = 0; k < 8; k++) {
		ms[k] = marked(fx, 0, mac1, k != 3, (uint8_t)(0xa0 + k));
		sent_len[k] = rte_pktmbuf_data_len(ms[k]);
		memcpy(sent[k], rte_pktmbuf_mtod(ms[k], void *), sent_len[k]);
		bytes += sent_len[k];
	}
	burst_from(fx, 0, ms, 8);
	expect_frames(fx, 1, sent, sent_len, 8);
	expect_frames(fx, 0, sent, sent_len, 0);
	assert_int_equal(port_stats(fx, 0)->rx_packets - before0.rx_packets, 8);
	assert_int_equal(port_stats(fx, 0)->rx_bytes - before0.rx_bytes, bytes);
	assert_int_equal(port_stats(fx, 1)->tx_packets - before1.tx_packets, 8);
	assert_int_equal(port_stats(fx, 1)->tx_bytes - before1.tx_bytes, bytes);
	assert_int_equal(fx->rt.sw[0]->st.flooded, 1); /* host 1's first frame only */
}

/* Port 0 has forwarded to host 1 (port 1) and keeps that answer; in the
 * same burst a frame from host 1's MAC arrives on port 0 and moves it
 * there: the frame to host 1 after it is one to its own port (dropped by
 * that name), not one to port 1. */
static void test_move_inside_a_burst(void **state)
{
	struct fixture *fx = *state;
	struct sw_lsw *sw = fx->rt.sw[0];
	uint8_t mac0[6], mac1[6];
	host_mac(0, mac0), host_mac(1, mac1);
	learn_both(fx);
	const uint64_t same0 = port_stats(fx, 0)->drops[SW_D_SAME_PORT];
	struct rte_mbuf *ms[3] = { marked(fx, 0, mac1, true, 1), marked(fx, 1, mac0, false, 2),
				   marked(fx, 0, mac1, true, 3) };
	burst_from(fx, 0, ms, 3);
	/* learned, never moved: the move is allowed (sw_fdb.h) */
	assert_int_equal(sw_fdb_lookup(&sw->fdb, mac1, SW_VLAN_DEFAULT, sw->now_s), 0);
	static uint8_t frames[4][9100];
	size_t len[4];
	assert_int_equal(received(fx, 1, frames, len, 4), 1);
	assert_int_equal(frames[0][20], 1);
	assert_int_equal(received(fx, 0, frames, len, 4), 0);
	/* host 1's frame to host 0 and the frame to host 1 after it */
	assert_int_equal(port_stats(fx, 0)->drops[SW_D_SAME_PORT] - same0, 2);
}

/* A flow's first frame makes its entry in the port's flow cache and the
 * next three take it (sw_rt.h, sw_flow_seen): all four reach host 1 in
 * order.  Then, in one burst: a runt whose buffer still holds the flow's
 * header (a recycled mbuf can) is dropped as a runt, not forwarded by the
 * entry; a frame of the flow after it still leaves. */
static void test_known_flow_and_runt(void **state)
{
	struct fixture *fx = *state;
	uint8_t mac1[6];
	host_mac(1, mac1);
	learn_both(fx);
	struct rte_mbuf *ms[4];
	static uint8_t sent[4][128];
	size_t sent_len[4];
	for (unsigned k = 0; k < 4; k++) {
		ms[k] = marked(fx, 0, mac1, true, (uint8_t)(0xc0 + k));
		sent_len[k] = rte_pktmbuf_data_len(ms[k]);
		memcpy(sent[k], rte_pktmbuf_mtod(ms[k], void *), sent_len[k]);
	}
	burst_from(fx, 0, ms, 4);
	expect_frames(fx, 1, sent, sent_len, 4);
	/* the entry the runt below would match without its length check */
	uint64_t head, tail;
	memcpy(&head, sent[0], 8);
	memcpy(&tail, sent[0] + 6, 8);
	const struct sw_flow_seen *fl = &fx->rt.sw[0]->ports[0].flow_seen[sw_flow_bucket(head, tail)];
	assert_true(fl->head == head && fl->tail == tail && fl->port == 1 && fl->stamp != 0);
	const uint64_t runts = port_stats(fx, 0)->drops[SW_D_RUNT];
	ms[0] = marked(fx, 0, mac1, true, 0xd0);
	ms[0]->data_len = ms[0]->pkt_len = SW_ETH_HLEN - 1;
	ms[1] = marked(fx, 0, mac1, true, 0xd1);
	sent_len[0] = rte_pktmbuf_data_len(ms[1]);
	memcpy(sent[0], rte_pktmbuf_mtod(ms[1], void *), sent_len[0]);
	burst_from(fx, 0, ms, 2);
	expect_frames(fx, 1, sent, sent_len, 1);
	assert_int_equal(port_stats(fx, 0)->drops[SW_D_RUNT] - runts, 1);
}

/* A staged frame to an unknown MAC floods (frame by frame); one to the
 * port it came from is dropped by name; one from the switch's own MAC is
 * refused as a claim. */
static void test_unknown_same_port_claims(void **state)
{
	struct fixture *fx = *state;
	struct sw_lsw *sw = fx->rt.sw[0];
	uint8_t mac0[6], nobody[6] = { 2, 0, 0, 0, 9, 9 };
	host_mac(0, mac0);
	learn_both(fx);
	const uint64_t flooded = sw->st.flooded, same0 = port_stats(fx, 0)->drops[SW_D_SAME_PORT];
	struct rte_mbuf *ms[3] = { marked(fx, 0, nobody, true, 1), marked(fx, 0, mac0, true, 2),
				   marked(fx, 0, nobody, true, 3) };
	uint8_t *f = rte_pktmbuf_mtod(ms[2], uint8_t *);
	memcpy(f + 6, sw_mac, 6);
	burst_from(fx, 0, ms, 3);
	static uint8_t frames[4][9100];
	size_t len[4];
	assert_int_equal(received(fx, 1, frames, len, 4), 1);
	assert_int_equal(frames[0][20], 1);
	assert_int_equal(sw->st.flooded - flooded, 1);
	assert_int_equal(port_stats(fx, 0)->drops[SW_D_SAME_PORT] - same0, 1);
	assert_int_equal(port_stats(fx, 0)->drops[SW_D_CLAIMS_SWITCH], 1);
}

/* From access port p0 (VLAN 10) to a host behind trunk p1: the staged
 * frames leave tagged 10 as the frame-by-frame one does, byte for byte
 * otherwise, in order. */
static void test_access_to_trunk(void **state)
{
	struct fixture *fx = *state;
	uint8_t mac0[6], mac1[6];
	host_mac(0, mac0), host_mac(1, mac1);
	struct rte_mbuf *m = raw_frame(fx, 1, mac0, 10, 0); /* host 1 learned in VLAN 10 on p1 */
	burst_from(fx, 1, &m, 1);
	drain(fx, 0);
	struct rte_mbuf *ms[4];
	static uint8_t want[4][128];
	size_t want_len[4];
	for (unsigned k = 0; k < 4; k++) {
		ms[k] = marked(fx, 0, mac1, true, (uint8_t)(0xb0 + k));
		const uint8_t *f = rte_pktmbuf_mtod(ms[k], const uint8_t *);
		/* the same frame with the tag after the addresses */
		memcpy(want[k], f, 12);
		memcpy(want[k] + 12, ((uint8_t[]){ 0x81, 0x00, 0x00, 10 }), 4);
		memcpy(want[k] + 16, f + 12, rte_pktmbuf_data_len(ms[k]) - 12);
		want_len[k] = rte_pktmbuf_data_len(ms[k]) + 4;
	}
	burst_from(fx, 0, ms, 4);
	expect_frames(fx, 1, want, want_len, 4);
}

/* Host h's slice seq (16 elements) to slot index seq: to the switch's UDP
 * port dport with the UDP checksum 0 (as the library's INA hosts send),
 * or checksummed to the first INA port. */
static struct rte_mbuf *member_slice(struct fixture *fx, unsigned h, unsigned seq, uint16_t dport, bool checksummed)
{
	struct rte_mbuf *m = slice(fx, h, seq, seq, 16);
	uint8_t *udp = rte_pktmbuf_mtod(m, uint8_t *) + SW_ETH_HLEN + SW_IP_HLEN;
	if (checksummed) {
		assert_int_equal(dport, INA_UDP_PORT_MIN);
		return m;
	}
	udp[2] = (uint8_t)(dport >> 8);
	udp[3] = (uint8_t)dport;
	udp[6] = udp[7] = 0;
	return m;
}

/* member_slice's frame to the first INA port, marked by its device with
 * ol_flags, alone in a burst. */
static void send_member(struct fixture *fx, unsigned h, unsigned seq, bool checksummed, uint64_t ol_flags)
{
	struct rte_mbuf *m = member_slice(fx, h, seq, INA_UDP_PORT_MIN, checksummed);
	m->ol_flags = ol_flags;
	burst_from(fx, h, &m, 1);
}

/* Each host got the result of slice seq, and its first element is the sum. */
static void expect_results(struct fixture *fx, unsigned seq)
{
	static uint8_t frames[4][9100];
	size_t len[4];
	for (unsigned h = 0; h < NHOSTS; h++) {
		assert_int_equal(received(fx, h, frames, len, 4), 1);
		struct sw_udp_view v;
		struct ina_pkt pkt;
		assert_int_equal(sw_frame_parse_udp(frames[0], len[0], 0, &v), SW_FRAME_OK);
		assert_int_equal(ina_parse(v.payload, v.payload_len, &pkt), INA_OK);
		assert_int_equal(pkt.hdr.seq, seq);
		uint32_t w;
		memcpy(&w, pkt.payload, 4);
		assert_int_equal((int32_t)rte_be_to_cpu_32(w), value(0, seq, 0) + value(1, seq, 0));
	}
}

/* A member's frames that repeat the headers of its last one the switch
 * checked whole take one compare (member_frame, counted repeated_headers)
 * and aggregate as the others do; a repeat that fails a check done per
 * frame or that a device marked bad, one with other headers (a spoofed
 * MAC, a UDP checksum to verify) and any after an FDB change take the
 * whole path, with its drops; a device's good verdict is trusted. */
static void test_member_frames(void **state)
{
	struct fixture *fx = *state;
	struct sw_lsw *sw = fx->rt.sw[0];
	const unsigned ip_bad = SW_D_FRAME_BASE + SW_FRAME_BAD_IP_CSUM;
	const uint16_t port0 = INA_UDP_PORT_MIN;
	struct rte_mbuf *m, *ms[2];
	slow_clock(fx);
	/* slice 0 of each checked whole; binding host 1 changed the tables
	 * after host 0's frame, so host 0's next one is checked whole too */
	for (unsigned seq = 0; seq < 2; seq++)
		for (unsigned h = 0; h < NHOSTS; h++)
			send_member(fx, h, seq, false, 0);
	assert_int_equal(sw->st.ina_repeats, 1);
	drain(fx, 0), drain(fx, 1);
	/* then they repeat: a burst of two, one to another INA port */
	ms[0] = member_slice(fx, 0, 2, port0, false);
	ms[1] = member_slice(fx, 0, 3, port0 + 1, false);
	burst_from(fx, 0, ms, 2);
	for (unsigned seq = 2; seq < 4; seq++) {
		send_member(fx, 1, seq, false, 0);
		expect_results(fx, seq);
	}
	assert_int_equal(sw->st.ina_repeats, 5);

	/* the same headers but the IPv4 id, its checksum left: dropped */
	m = member_slice(fx, 1, 4, port0, false);
	rte_pktmbuf_mtod(m, uint8_t *)[SW_ETH_HLEN + 4] ^= 1;
	burst_from(fx, 1, &m, 1);
	assert_int_equal(port_stats(fx, 1)->drops[ip_bad], 1);
	/* a UDP checksum: verified, the whole way */
	send_member(fx, 1, 4, true, 0);
	send_member(fx, 0, 4, false, 0);
	expect_results(fx, 4);
	assert_int_equal(sw->st.ina_repeats, 6);

	/* a device's verdict (a NIC's): a bad one is that drop, a good one
	 * spares the checksums, a UDP one included */
	send_member(fx, 1, 5, false, RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_BAD);
	assert_int_equal(port_stats(fx, 1)->drops[SW_D_FRAME_BASE + SW_FRAME_BAD_UDP_CSUM], 1);
	send_member(fx, 1, 5, true, RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD);
	send_member(fx, 0, 5, false, 0);
	expect_results(fx, 5);
	assert_int_equal(sw->st.ina_repeats, 8);

	/* host 1's address from another MAC on its port: the guard's drop;
	 * the FDB learned that MAC, so the next frame of each host is
	 * checked whole again (host 1's in the same burst: the burst's
	 * stamps are taken again), then they repeat */
	ms[0] = member_slice(fx, 1, 6, port0, false);
	rte_pktmbuf_mtod(ms[0], uint8_t *)[11] = 0x77;
	ms[1] = member_slice(fx, 1, 6, port0, false);
	burst_from(fx, 1, ms, 2);
	assert_int_equal(port_stats(fx, 1)->drops[SW_D_SOURCE_GUARD], 1);
	send_member(fx, 0, 6, false, 0);
	expect_results(fx, 6);
	for (unsigned h = 0; h < NHOSTS; h++)
		send_member(fx, h, 7, false, 0);
	expect_results(fx, 7);
	assert_int_equal(sw->st.ina_repeats, 10);
	assert_int_equal(ina_job_stats(sw->eng, 1)->completions, 8);
	assert_int_equal(sw->st.ina_packets, 16);
}

/* The ECN field of frame f, which must be IPv4, untagged. */
static unsigned ecn_of(const uint8_t *f) { return f[SW_ETH_HLEN + 1] & SW_ECN_MASK; }

/* Host h's result of slice seq: its INA flags, and its IPv4 header's ECN
 * field into *ecn. */
static uint8_t result_flags(const uint8_t *frame, size_t len, unsigned seq, unsigned *ecn)
{
	struct sw_udp_view v;
	struct ina_pkt pkt;
	assert_int_equal(sw_frame_parse_udp(frame, len, 0, &v), SW_FRAME_OK);
	assert_int_equal(ina_parse(v.payload, v.payload_len, &pkt), INA_OK);
	assert_int_equal(pkt.hdr.seq, seq);
	*ecn = ecn_of(frame);
	return pkt.hdr.flags;
}

/* A queue's mark both ways: a contribution that arrives marked CE marks
 * its slot's results (INA_F_CE) and the switch's ECN-capable results
 * carry it; the marked frame takes the whole path and is not the one its
 * member's next frames repeat; a port whose emulated queue is past its
 * ecn share marks the frames it takes (counted ecn_marks) and the first,
 * which found it empty, not. */
static void test_ce_marks(void **state)
{
	struct fixture *fx = *state;
	struct sw_lsw *sw = fx->rt.sw[0];
	static uint8_t got[4][9100];
	size_t len[4];
	unsigned ecn;
	for (unsigned seq = 0; seq < 3; seq++) /* bound, then repeating */
		for (unsigned h = 0; h < NHOSTS; h++)
			send_member(fx, h, seq, false, 0);
	drain(fx, 0), drain(fx, 1);
	const uint64_t repeats = sw->st.ina_repeats;
	struct rte_mbuf *m = member_slice(fx, 0, 3, INA_UDP_PORT_MIN, false);
	uint8_t *ip = rte_pktmbuf_mtod(m, uint8_t *) + SW_ETH_HLEN;
	assert_int_equal(ip[1] & SW_ECN_MASK, SW_ECN_ECT0); /* hosts' frames, as built */
	sw_frame_set_ce(ip);
	burst_from(fx, 0, &m, 1);
	send_member(fx, 1, 3, false, 0);
	assert_int_equal(sw->st.ina_repeats, repeats + 1); /* host 1's only */
	for (unsigned h = 0; h < NHOSTS; h++) {
		assert_int_equal(received(fx, h, got, len, 4), 1);
		assert_true(result_flags(got[0], len[0], 3, &ecn) & INA_F_CE);
		assert_int_equal(ecn, SW_ECN_ECT0);
	}
	/* unmarked again: host 0's frame repeats its last unmarked headers */
	for (unsigned h = 0; h < NHOSTS; h++)
		send_member(fx, h, 4, false, 0);
	assert_int_equal(sw->st.ina_repeats, repeats + 3);
	for (unsigned h = 0; h < NHOSTS; h++) {
		assert_int_equal(received(fx, h, got, len, 4), 1);
		assert_false(result_flags(got[0], len[0], 4, &ecn) & INA_F_CE);
	}

	/* host 0's link at 1 Mbit/s, marking past 52 bytes of its buffer:
	 * two results in one burst, the second behind the first */
	struct netem_cfg slow = { .rate_bps = 1000000, .buffer_bytes = 512 * 1024, .ecn = 0.0001 };
	sw_netem_set(&sw->ports[0].netem, &slow, sw->now_ns);
	sw->plan_gen++; /* as the control path does (plans_stale) */
	send_member(fx, 1, 5, false, 0);
	send_member(fx, 1, 6, false, 0);
	struct rte_mbuf *ms[2] = { member_slice(fx, 0, 5, INA_UDP_PORT_MIN, false),
				   member_slice(fx, 0, 6, INA_UDP_PORT_MIN, false) };
	burst_from(fx, 0, ms, 2);
	assert_int_equal(port_stats(fx, 0)->ecn_marks, 1);
	assert_int_equal(port_stats(fx, 1)->ecn_marks, 0);
	unsigned n = 0;
	const uint64_t deadline = rte_get_timer_cycles() + rte_get_timer_hz(); /* 2 x 0.8 ms on the link */
	while (n < 2 && rte_get_timer_cycles() < deadline) {
		uint64_t due;
		sw_dp_poll(&fx->rt, &due);
		sw_dp_flush(&fx->rt);
		n += received(fx, 0, got + n, len + n, 2 - n);
	}
	assert_int_equal(n, 2);
	for (unsigned k = 0; k < 2; k++) {
		assert_false(result_flags(got[k], len[k], 5 + k, &ecn) & INA_F_CE); /* IP's mark, not INA's */
		assert_int_equal(ecn, k ? SW_ECN_CE : SW_ECN_ECT0);
		assert_int_equal(sw_csum_fold_native(sw_csum_words(got[k] + SW_ETH_HLEN, SW_IP_HLEN / 4)), 0xffff);
	}
}

int main(void)
{
	if (dp_eal_start("test_dp_burst", "0") < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order_and_counters, setup_learn, teardown),
		cmocka_unit_test_setup_teardown(test_move_inside_a_burst, setup_learn, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_same_port_claims, setup_learn, teardown),
		cmocka_unit_test_setup_teardown(test_known_flow_and_runt, setup_learn, teardown),
		cmocka_unit_test_setup_teardown(test_access_to_trunk, setup_trunk, teardown),
		cmocka_unit_test_setup_teardown(test_member_frames, setup_learn, teardown),
		cmocka_unit_test_setup_teardown(test_ce_marks, setup_learn, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	sw_eal_cleanup();
	return rc;
}
