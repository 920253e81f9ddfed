/* SPDX-License-Identifier: BSD-3-Clause */
/* A switch in two partitions (`partitions = 2`) on ring ports with a queue
 * pair each: frames steered by UDP port are aggregated by the partition
 * that owns the port, exactly, and leave on its queue; a frame on the
 * wrong queue is a counted drop, never a separate sum; the control
 * channel answers a job's counters summed over the partitions and changes
 * every partition's jobs at once, the partition on the other lcore held
 * still meanwhile.  EAL has two lcores when the machine does;
 * the datapath tests poll both partitions from one thread. */
#include "dp_fixture.h"

#include <sched.h>

#include "sw_out.h"

#define NPARTS 2

struct parted {
	struct fixture fx;
	struct rte_ring *rx[NHOSTS][NPARTS], *tx[NHOSTS][NPARTS];
};

/* The partitioned switch's config over ring devices of dev_queues queue
 * pairs each; sw_rt_setup's result and error in *rc and err. */
static void build(struct parted *pt, unsigned dev_queues, int *rc, char *err, size_t errlen)
{
	static int serial;
	memset(pt, 0, sizeof(*pt));
	struct fixture *fx = &pt->fx;
	struct sw_switch_cfg *s = fixture_switch(fx);
	s->partitions = NPARTS;
	s->partition_queues[1] = 1;
	for (unsigned h = 0; h < NHOSTS; h++) {
		for (unsigned q = 0; q < NPARTS; q++) {
			char n[32];
			snprintf(n, sizeof(n), "ptrx%d_%u_%u", serial, h, q);
			pt->rx[h][q] = rte_ring_create(n, 256, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
			snprintf(n, sizeof(n), "pttx%d_%u_%u", serial, h, q);
			pt->tx[h][q] = rte_ring_create(n, 256, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
			assert_non_null(pt->rx[h][q]);
			assert_non_null(pt->tx[h][q]);
		}
		char n[32];
		snprintf(n, sizeof(n), "pt%d_%u", serial, h);
		int port = rte_eth_from_rings(n, pt->rx[h], dev_queues, pt->tx[h], dev_queues, 0);
		assert_true(port >= 0);
		snprintf(s->ports[h].name, SW_NAME_LEN, "p%u", h);
		assert_int_equal(rte_eth_dev_get_name_by_port((uint16_t)port, s->ports[h].dev), 0);
		s->ports[h].peer_switch = s->ports[h].peer_port = -1;
		s->ports[h].vlan = SW_VLAN_DEFAULT;
		s->ports[h].steered = true;
		host_mac(h, s->fdb[h].mac);
		s->fdb[h].port = (int)h;
	}
	s->nfdb = NHOSTS;
	fixture_job(fx);
	*rc = sw_rt_setup(&fx->rt, err, errlen);
	char n[32];
	snprintf(n, sizeof(n), "ptgen%d", serial++);
	fx->gen = rte_pktmbuf_pool_create(n, 255, 0, 0, RTE_PKTMBUF_HEADROOM + 9100, 0);
	assert_non_null(fx->gen);
}

static int setup_parted(void **state)
{
	static struct parted pt;
	char err[256];
	int rc;
	build(&pt, NPARTS, &rc, err, sizeof(err));
	if (rc < 0)
		fail_msg("sw_rt_setup: %s", err);
	*state = &pt;
	return 0;
}

static volatile int other_stop; /* ends other_loop */

static int teardown_parted(void **state)
{
	struct parted *pt = *state;
	/* a test that failed half-way left them running */
	other_stop = 1;
	rte_eal_mp_wait_lcore();
	sw_ctrl_stop(&pt->fx.rt);
	sw_rt_teardown(&pt->fx.rt);
	for (unsigned h = 0; h < NHOSTS; h++)
		for (unsigned q = 0; q < NPARTS; q++) {
			rte_ring_free(pt->rx[h][q]);
			rte_ring_free(pt->tx[h][q]);
		}
	rte_mempool_free(pt->fx.gen);
	return 0;
}

/* Host h's contribution to slot, to the INA port hosts spread slots over:
 * INA_UDP_PORT_MIN + slot % 16. */
static struct rte_mbuf *spread(struct fixture *fx, unsigned h, unsigned slot, unsigned count)
{
	struct rte_mbuf *m = contribution(fx, h, slot, count);
	uint8_t *udp = rte_pktmbuf_mtod(m, uint8_t *) + SW_ETH_HLEN + SW_IP_HLEN;
	const uint16_t port = (uint16_t)(INA_UDP_PORT_MIN + slot % 16);
	udp[2] = (uint8_t)(port >> 8);
	udp[3] = (uint8_t)port;
	udp[6] = udp[7] = 0; /* no checksum: the port changed */
	return m;
}

static void put(struct parted *pt, unsigned h, unsigned q, struct rte_mbuf *m)
{
	uint64_t due;
	assert_int_equal(rte_ring_enqueue(pt->rx[h][q], m), 0);
	while (sw_dp_poll(&pt->fx.rt, &due))
		;
	sw_dp_flush(&pt->fx.rt);
}

static struct sw_lsw *part(struct parted *pt, int k) { return pt->fx.rt.sw[0]->parts[k]; }

static void test_partitions_aggregate_their_slots(void **state)
{
	struct parted *pt = *state;
	const unsigned count = 200;
	assert_int_equal(pt->fx.rt.nsw, NPARTS);
	assert_string_equal(part(pt, 0)->name, "tor");
	assert_string_equal(part(pt, 1)->name, "tor/1");
	int segs[NPARTS] = { 0 };
	for (unsigned slot = 0; slot < SLOTS; slot++) {
		const unsigned q = slot % NPARTS; /* the steering: port % partitions */
		for (unsigned h = 0; h < NHOSTS; h++)
			put(pt, h, q, spread(&pt->fx, h, slot, count));
		for (unsigned h = 0; h < NHOSTS; h++) {
			struct rte_mbuf *m = NULL;
			assert_int_equal(rte_ring_count(pt->tx[h][1 - q]), 0);
			assert_int_equal(rte_ring_dequeue(pt->tx[h][q], (void **)&m), 0);
			assert_int_equal(rte_ring_count(pt->tx[h][q]), 0);
			/* a partition's ports know what partition 0 learned of the
			 * device: a result's payload goes out shared (chained), not
			 * copied flat, from every partition */
			if (!segs[q])
				segs[q] = m->nb_segs;
			assert_int_equal(m->nb_segs, segs[q]);
			static uint8_t f[9100];
			const uint8_t *p = rte_pktmbuf_read(m, 0, rte_pktmbuf_pkt_len(m), f);
			struct sw_udp_view v;
			assert_int_equal(sw_frame_parse_udp(p, rte_pktmbuf_pkt_len(m), 0, &v), SW_FRAME_OK);
			/* from the port the slot went to */
			assert_int_equal(rte_be_to_cpu_16(v.src_port), INA_UDP_PORT_MIN + slot % 16);
			struct ina_pkt pkt;
			assert_int_equal(ina_parse(v.payload, v.payload_len, &pkt), INA_OK);
			assert_int_equal(pkt.hdr.type, INA_T_RESULT);
			assert_int_equal(pkt.hdr.slot, slot);
			for (unsigned e = 0; e < count; e++) {
				uint32_t w;
				memcpy(&w, pkt.payload + 4 * e, 4);
				assert_int_equal((int32_t)rte_be_to_cpu_32(w), value(0, slot, e) + value(1, slot, e));
			}
			rte_pktmbuf_free(m);
		}
	}
	assert_int_equal(segs[0], 2);
	assert_int_equal(segs[1], 2);
	for (int k = 0; k < NPARTS; k++) {
		assert_int_equal(ina_job_stats(part(pt, k)->eng, 1)->completions, SLOTS / NPARTS);
		for (unsigned h = 0; h < NHOSTS; h++)
			for (int d = 0; d < SW_D_MAX_; d++)
				if (part(pt, k)->ports[h].st.drops[d])
					fail_msg("partition %d port %u dropped %s", k, h, sw_drop_name((unsigned)d));
	}
}

/* Slot 1's port belongs to partition 1: on partition 0's queue it is
 * dropped, and so is a control datagram on partition 1's. */
static void test_missteered(void **state)
{
	struct parted *pt = *state;
	for (unsigned h = 0; h < NHOSTS; h++)
		put(pt, h, 0, spread(&pt->fx, h, 1, 8));
	const char cmd[] = "op = \"stats\"; id = 1;";
	put(pt, 0, 1, udp_to_switch(&pt->fx, 0, INA_CTRL_PORT, "", 0, cmd, strlen(cmd)));
	assert_int_equal(part(pt, 0)->ports[0].st.drops[SW_D_MISSTEERED], 1);
	assert_int_equal(part(pt, 0)->ports[1].st.drops[SW_D_MISSTEERED], 1);
	assert_int_equal(part(pt, 1)->ports[0].st.drops[SW_D_MISSTEERED], 1);
	for (int k = 0; k < NPARTS; k++)
		assert_int_equal(ina_job_stats(part(pt, k)->eng, 1)->contributions, 0);
	for (unsigned h = 0; h < NHOSTS; h++)
		for (unsigned q = 0; q < NPARTS; q++)
			assert_int_equal(rte_ring_count(pt->tx[h][q]), 0);
	assert_string_equal(sw_drop_name(SW_D_MISSTEERED), "missteered");
}

/* Sends a control command from host 0 and returns the answer's text (what
 * the hosts had got before is dropped first). */
static void ask(struct parted *pt, const char *cmd, char *answer, size_t cap)
{
	struct rte_mbuf *old;
	for (unsigned h = 0; h < NHOSTS; h++)
		for (unsigned q = 0; q < NPARTS; q++)
			while (rte_ring_dequeue(pt->tx[h][q], (void **)&old) == 0)
				rte_pktmbuf_free(old);
	assert_int_equal(
		rte_ring_enqueue(pt->rx[0][0], udp_to_switch(&pt->fx, 0, INA_CTRL_PORT, "", 0, cmd, strlen(cmd))), 0);
	struct rte_mbuf *m = NULL;
	/* the control thread parses it: wait for the answer, 10 s at most,
	 * running the main lcore's partitions (partition 1 is lcore 1's when
	 * EAL has it: other_lcore) */
	struct sw_worker *w = &pt->fx.rt.workers[0];
	const uint64_t end = rte_get_timer_cycles() + 10 * rte_get_timer_hz();
	while (rte_ring_dequeue(pt->tx[0][0], (void **)&m) != 0 && rte_get_timer_cycles() < end) {
		uint64_t due;
		sw_dp_poll_worker(w, &due);
		sw_dp_flush_worker(w);
		sched_yield();
	}
	assert_non_null(m);
	struct sw_udp_view v;
	assert_int_equal(sw_frame_parse_udp(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_data_len(m), 0, &v),
			 SW_FRAME_OK);
	snprintf(answer, cap, "%.*s", (int)v.payload_len, (const char *)v.payload);
	rte_pktmbuf_free(m);
}

/* Partition 1's lcore, when EAL has a second one: its loop, as swemu's. */
static int other_loop(void *arg)
{
	struct sw_worker *w = arg;
	uint64_t due;
	while (!other_stop) {
		sw_dp_poll_worker(w, &due);
		sw_dp_flush_worker(w);
	}
	return 0;
}

static bool other_lcore(struct parted *pt)
{
	const struct sw_rt *rt = &pt->fx.rt;
	return rt->nworkers > 1 && part(pt, 1)->lcore != part(pt, 0)->lcore;
}

static void expect_answer(struct parted *pt, const char *cmd, const char *want)
{
	char answer[400];
	ask(pt, cmd, answer, sizeof(answer));
	if (strncmp(answer, want, strlen(want)))
		fail_msg("%s: answer \"%s\", want \"%s\"", cmd, answer, want);
}

#define JOB2                                                                                                \
	"job = { id = 2; fan_in = 2; dtype = \"int32\"; slots = 2; elems = 64; outputs = [\"multicast\"]; " \
	"contributors = [\"10.0.0.1:48864\", \"10.0.0.2:48864\"]; };"

static void test_ctrl_on_partitions(void **state)
{
	struct parted *pt = *state;
	char err[256], answer[400];
	/* one slot per partition: the job's counters are their sum */
	for (unsigned slot = 0; slot < NPARTS; slot++)
		for (unsigned h = 0; h < NHOSTS; h++)
			put(pt, h, slot, spread(&pt->fx, h, slot, 8));
	const bool two = other_lcore(pt);
	other_stop = 0;
	if (two)
		assert_int_equal(rte_eal_remote_launch(other_loop, &pt->fx.rt.workers[1], part(pt, 1)->lcore), 0);
	assert_int_equal(sw_ctrl_start(&pt->fx.rt, err, sizeof(err)), 0);
	ask(pt, "op = \"stats\"; id = 1;", answer, sizeof(answer));
	struct ctl_job_report r;
	if (ctl_parse_report(answer, &r) != 0)
		fail_msg("answer \"%s\"", answer);
	assert_int_equal(r.completions, NPARTS);
	assert_int_equal(r.contributions, NPARTS * NHOSTS);
	/* changes reach every partition, or none */
	expect_answer(pt, "op = \"remove\"; id = 1;", "ok");
	expect_answer(pt, "op = \"install\"; " JOB2, "ok");
	expect_answer(pt, "op = \"install\"; " JOB2, "error: ctrl:"); /* id in use: on none twice */
	/* every partition's emulator of the port, on the one line they share */
	expect_answer(pt, "op = \"emu\"; port = \"p0\"; rate = \"1G\";", "ok");
	sw_ctrl_stop(&pt->fx.rt);
	other_stop = 1;
	rte_eal_mp_wait_lcore();
	for (int k = 0; k < NPARTS; k++) {
		assert_null(ina_job_config(part(pt, k)->eng, 1));
		assert_non_null(ina_job_config(part(pt, k)->eng, 2));
		assert_int_equal(part(pt, k)->ports[0].netem.cfg.rate_bps, 1000000000);
		assert_ptr_equal(part(pt, k)->ports[0].netem.wire_ns, part(pt, 0)->ports[0].wire_ns);
		assert_int_equal(part(pt, k)->ports[1].netem.cfg.rate_bps, 0);
	}
	assert_non_null(part(pt, 0)->ports[0].wire_ns);
	/* the partition on the other lcore stood still for each change */
	if (two)
		assert_int_equal(part(pt, 1)->held, part(pt, 0)->hold_seq);
	assert_int_equal(part(pt, 1)->hold, 0);
	assert_int_equal(part(pt, 0)->st.ctrl_refused, 1);
}

/* What a link into a partitioned switch steers each frame to
 * (sw_link_partition): an INA datagram to its port's partition, control
 * to partition 0, both directions of another flow to one partition, a
 * frame that is not IPv4 to partition 0. */
static void test_link_steering(void **state)
{
	struct parted *pt = *state;
	struct fixture *fx = &pt->fx;
	for (unsigned slot = 0; slot < 20; slot++) {
		struct rte_mbuf *m = spread(fx, 1, slot, 4);
		for (unsigned n = 2; n <= 4; n++)
			assert_int_equal(sw_link_partition(m, n, INA_CTRL_PORT), slot % 16 % n);
		rte_pktmbuf_free(m);
	}
	struct rte_mbuf *m = spread(fx, 1, 3, 4);
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *), *ip = f + SW_ETH_HLEN, *udp = ip + SW_IP_HLEN;
	udp[2] = INA_CTRL_PORT >> 8;
	udp[3] = INA_CTRL_PORT & 0xff;
	assert_int_equal(sw_link_partition(m, 4, INA_CTRL_PORT), 0);
	/* a flow and its reverse: one partition; flows spread over both */
	unsigned seen[2] = { 0, 0 };
	for (unsigned port = 1000; port < 1064; port++) {
		udp[0] = (uint8_t)(port >> 8);
		udp[1] = (uint8_t)port;
		udp[2] = 0x13;
		udp[3] = 0x89;
		const unsigned k = sw_link_partition(m, 2, INA_CTRL_PORT);
		uint8_t t[4];
		memcpy(t, ip + 12, 4); /* addresses and ports swapped */
		memmove(ip + 12, ip + 16, 4);
		memcpy(ip + 16, t, 4);
		memcpy(t, udp, 2);
		memmove(udp, udp + 2, 2);
		memcpy(udp + 2, t, 2);
		assert_int_equal(sw_link_partition(m, 2, INA_CTRL_PORT), k);
		memcpy(t, udp, 2); /* back */
		memmove(udp, udp + 2, 2);
		memcpy(udp + 2, t, 2);
		memcpy(t, ip + 12, 4);
		memmove(ip + 12, ip + 16, 4);
		memcpy(ip + 16, t, 4);
		seen[k]++;
	}
	assert_true(seen[0] > 8 && seen[1] > 8);
	f[12] = SW_ETHERTYPE_ARP >> 8;
	f[13] = SW_ETHERTYPE_ARP & 0xff;
	assert_int_equal(sw_link_partition(m, 4, INA_CTRL_PORT), 0);
	rte_pktmbuf_free(m);
}

/* Devices with fewer queue pairs than the partitions own: a clear error
 * naming the port, and nothing left behind (the devices closed). */
static void test_too_few_queues(void **state)
{
	(void)state;
	static struct parted pt;
	char err[256];
	int rc;
	build(&pt, 1, &rc, err, sizeof(err));
	assert_int_equal(rc, -EINVAL);
	if (!strstr(err, "(test):0: port 'p0'") || !strstr(err, "need 2 queue pairs; it has 1"))
		fail_msg("error \"%s\"", err);
	assert_int_equal(pt.fx.rt.nsw, 0);
	uint16_t id;
	assert_int_equal(rte_eth_dev_get_port_by_name(pt.fx.rt.cfg.sw[0].ports[0].dev, &id), -ENODEV); /* closed */
	void *state2 = &pt;
	teardown_parted(&state2);
}

int main(void)
{
	if (dp_eal_start("test_dp_partitions", sysconf(_SC_NPROCESSORS_ONLN) > 1 ? "0,1" : "0") < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_partitions_aggregate_their_slots, setup_parted, teardown_parted),
		cmocka_unit_test_setup_teardown(test_missteered, setup_parted, teardown_parted),
		cmocka_unit_test_setup_teardown(test_ctrl_on_partitions, setup_parted, teardown_parted),
		cmocka_unit_test_setup_teardown(test_link_steering, setup_parted, teardown_parted),
		cmocka_unit_test(test_too_few_queues),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	sw_eal_cleanup();
	return rc;
}
