/* SPDX-License-Identifier: BSD-3-Clause */
/* The test fixture of swemu's datapath tests: one INA switch (sw_rt_setup)
 * with NHOSTS in-memory ring ports, a host on each, frames made here and
 * read back from the ports' transmit rings. */
#ifndef DP_FIXTURE_H
#define DP_FIXTURE_H

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "sw_rt.h"

#define NHOSTS	  2
#define SLOTS	  8
#define MAX_ELEMS 512 /* 2 KiB: results past SW_SHARE_MIN share one payload */

static volatile sig_atomic_t never;
static bool trunk_mode; /* setup: p0 access VLAN 10, p1 a trunk of 10 and 20 tagged, no native */
static bool learn_mode; /* setup: no static FDB entries */

struct fixture {
	struct sw_rt rt;
	struct ina_job_cfg job;
	struct rte_ring *rx[NHOSTS], *tx[NHOSTS];
	struct rte_mempool *gen;
};

static const uint8_t sw_mac[6] = { 2, 0, 0, 0, 0, 0xfe };
static const uint32_t sw_ip_host = 0x0a0000fe;

static inline void host_mac(unsigned h, uint8_t m[6]) { memcpy(m, (uint8_t[]){ 2, 0, 0, 0, 1, (uint8_t)h }, 6); }

static inline uint32_t host_ip(unsigned h) { return rte_cpu_to_be_32(0x0a000001u + h); }

/* The test switch "tor" (INA, host 0 its manager) with NHOSTS ports to
 * fill in; the rest of fx->rt.cfg as tests run it. */
static inline struct sw_switch_cfg *fixture_switch(struct fixture *fx)
{
	struct sw_cfg *cfg = &fx->rt.cfg;
	cfg->burst = 32;
	cfg->mbufs = 1023;
	cfg->nswitches = 1;
	struct sw_switch_cfg *s = &cfg->sw[0];
	strcpy(s->name, "tor");
	s->ina = true;
	memcpy(s->mac, sw_mac, 6);
	s->ip = rte_cpu_to_be_32(sw_ip_host);
	s->ctrl_port = INA_UDP_PORT_MIN - 1;
	s->nmgmt = 1;
	s->mgmt[0] = host_ip(0);
	s->slots = SLOTS;
	s->max_elems = MAX_ELEMS;
	s->fdb_age_s = 300;
	s->nports = NHOSTS;
	fx->rt.cfg_path = "(test)";
	fx->rt.quit = &never;
	fx->rt.dump_stats = &never;
	return s;
}

/* Job 1 of every host, int32, multicast results, installed from the config. */
static inline void fixture_job(struct fixture *fx)
{
	fx->job = (struct ina_job_cfg){ .id = 1,
					.fan_in = NHOSTS,
					.dtype = INA_D_INT32,
					.nslots = SLOTS,
					.elems_per_slot = MAX_ELEMS,
					.outputs = INA_OUT_MULTICAST,
					.upstream_index = -1 };
	for (unsigned h = 0; h < NHOSTS; h++) {
		fx->job.contributors[h].ip = host_ip(h);
		fx->job.contributors[h].port = rte_cpu_to_be_16(INA_UDP_PORT_MIN);
		host_mac(h, fx->job.contributors[h].mac);
	}
	fx->rt.cfg.sw[0].njobs = 1;
	fx->rt.cfg.sw[0].jobs = &fx->job;
}

static inline int setup(void **state)
{
	static struct fixture fx;
	static int serial;
	char err[256];
	memset(&fx, 0, sizeof(fx));
	struct sw_switch_cfg *s = fixture_switch(&fx);
	for (unsigned h = 0; h < NHOSTS; h++) {
		char n[32];
		snprintf(n, sizeof(n), "dprx%d_%u", serial, h);
		fx.rx[h] = rte_ring_create(n, 256, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(n, sizeof(n), "dptx%d_%u", serial, h);
		fx.tx[h] = rte_ring_create(n, 256, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
		assert_non_null(fx.rx[h]);
		assert_non_null(fx.tx[h]);
		snprintf(n, sizeof(n), "dp%d_%u", serial, h);
		int port = rte_eth_from_rings(n, &fx.rx[h], 1, &fx.tx[h], 1, 0);
		assert_true(port >= 0);
		snprintf(s->ports[h].name, SW_NAME_LEN, "p%u", h);
		assert_int_equal(rte_eth_dev_get_name_by_port((uint16_t)port, s->ports[h].dev), 0);
		s->ports[h].peer_switch = s->ports[h].peer_port = -1;
		s->ports[h].vlan = SW_VLAN_DEFAULT;
		host_mac(h, s->fdb[h].mac);
		s->fdb[h].port = (int)h;
	}
	s->nfdb = learn_mode ? 0 : NHOSTS;
	if (trunk_mode) {
		s->ports[0].vlan = 10;
		s->ports[1].vlan = 0;
		s->ports[1].ntrunk = 2;
		s->ports[1].trunk[0] = 10;
		s->ports[1].trunk[1] = 20;
		s->nfdb = 0; /* learned instead */
	}
	fixture_job(&fx);
	if (sw_rt_setup(&fx.rt, err, sizeof(err)) < 0)
		fail_msg("sw_rt_setup: %s", err);
	char n[32];
	snprintf(n, sizeof(n), "dpgen%d", serial++);
	fx.gen = rte_pktmbuf_pool_create(n, 255, 0, 0, RTE_PKTMBUF_HEADROOM + 9100, 0);
	assert_non_null(fx.gen);
	*state = &fx;
	return 0;
}

static inline int setup_trunk(void **state)
{
	trunk_mode = true;
	int rc = setup(state);
	trunk_mode = false;
	return rc;
}

static inline int setup_learn(void **state)
{
	learn_mode = true;
	int rc = setup(state);
	learn_mode = false;
	return rc;
}

/* The switch's clock run a million times slower, before the test's first
 * frame: its frames then all fall in one second, which the stamps of the
 * switch's caches count in (sw_tables_stamp), so counts of what took a
 * cached path do not depend on where a second boundary fell. */
static inline void slow_clock(struct fixture *fx) { fx->rt.ns_per_tsc *= 1e-6; }

static inline int teardown(void **state)
{
	struct fixture *fx = *state;
	sw_rt_teardown(&fx->rt);
	for (unsigned h = 0; h < NHOSTS; h++) {
		rte_ring_free(fx->rx[h]);
		rte_ring_free(fx->tx[h]);
	}
	rte_mempool_free(fx->gen);
	return 0;
}

/* Host h's contribution to slot: element e is h * 1000 + e - 7 * slot. */
static inline int32_t value(unsigned h, unsigned slot, unsigned e)
{
	return (int32_t)(h * 1000 + e) - 7 * (int32_t)slot;
}

/* A UDP datagram from host h to the switch's port dport: head, then
 * payload. */
static inline struct rte_mbuf *udp_to_switch(struct fixture *fx, unsigned h, uint16_t dport, const void *head,
					     size_t head_len, const void *payload, size_t len)
{
	struct sw_udp_hdrs u = { .src_ip = host_ip(h),
				 .dst_ip = rte_cpu_to_be_32(sw_ip_host),
				 .src_port = rte_cpu_to_be_16(INA_UDP_PORT_MIN),
				 .dst_port = rte_cpu_to_be_16(dport) };
	host_mac(h, u.src_mac);
	memcpy(u.dst_mac, sw_mac, 6);
	struct rte_mbuf *m = rte_pktmbuf_alloc(fx->gen);
	assert_non_null(m);
	size_t n = sw_frame_build_udp(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m), &u, head, head_len,
				      payload, len, sw_csum_partial(payload, len, 0));
	assert_true(n > 0);
	m->data_len = m->pkt_len = (uint32_t)n;
	return m;
}

/* Host h's contribution of slice seq (its values value(h, seq, e)) to
 * slot field `slot` (index and set bit), as the job's member `member`. */
static inline struct rte_mbuf *slice_as(struct fixture *fx, unsigned h, unsigned member, uint32_t slot, unsigned seq,
					unsigned count)
{
	static uint8_t payload[MAX_ELEMS * 4];
	for (unsigned e = 0; e < count; e++) {
		uint32_t v = rte_cpu_to_be_32((uint32_t)value(h, seq, e));
		memcpy(payload + 4 * e, &v, 4);
	}
	struct ina_hdr ih = { .version = INA_VERSION,
			      .type = INA_T_DATA,
			      .dtype = INA_D_INT32,
			      .job = 1,
			      .contributor = (uint16_t)member,
			      .slot = slot,
			      .epoch = 1,
			      .seq = seq,
			      .count = (uint16_t)count };
	uint8_t head[INA_HDR_LEN];
	ina_hdr_encode(&ih, head);
	return udp_to_switch(fx, h, INA_UDP_PORT_MIN, head, sizeof(head), payload, (size_t)count * 4);
}

/* Slice seq of host h, as the job's member h, to the slot field `slot`. */
static inline struct rte_mbuf *slice(struct fixture *fx, unsigned h, uint32_t slot, unsigned seq, unsigned count)
{
	return slice_as(fx, h, h, slot, seq, count);
}

/* Slice `slot` of host h to slot index `slot`, set 0. */
static inline struct rte_mbuf *contribution(struct fixture *fx, unsigned h, unsigned slot, unsigned count)
{
	return slice(fx, h, slot, slot, count);
}

static inline void send_and_poll(struct fixture *fx, unsigned h, struct rte_mbuf *m)
{
	uint64_t due;
	assert_int_equal(rte_ring_enqueue(fx->rx[h], m), 0);
	while (sw_dp_poll(&fx->rt, &due))
		;
	sw_dp_flush(&fx->rt);
}

static inline const struct sw_port_stats *port_stats(struct fixture *fx, unsigned h)
{
	return &fx->rt.sw[0]->ports[h].st;
}

/* Every frame host h got, flattened into buf; returns how many. */
static inline unsigned received(struct fixture *fx, unsigned h, uint8_t (*buf)[9100], size_t *len, unsigned max)
{
	struct rte_mbuf *m;
	unsigned n = 0;
	while (n < max && rte_ring_dequeue(fx->tx[h], (void **)&m) == 0) {
		len[n] = rte_pktmbuf_pkt_len(m);
		assert_true(len[n] <= sizeof(buf[n]));
		const void *p = rte_pktmbuf_read(m, 0, (uint32_t)len[n], buf[n]);
		if (p != buf[n])
			memcpy(buf[n], p, len[n]);
		rte_pktmbuf_free(m);
		n++;
	}
	return n;
}

/* A raw frame from host h's MAC to dst, with an 802.1Q tag of vid unless
 * vid is 0, ethertype 0x88b5 and 46 bytes of payload; returns its length. */
static inline size_t write_frame(unsigned h, const uint8_t dst[6], uint16_t vid, uint8_t *out)
{
	uint8_t *p = out + 12;
	memcpy(out, dst, 6);
	host_mac(h, out + 6);
	if (vid) {
		memcpy(p, (uint8_t[]){ 0x81, 0x00, (uint8_t)(vid >> 8), (uint8_t)vid }, 4);
		p += 4;
	}
	p[0] = 0x88;
	p[1] = 0xb5;
	for (unsigned i = 0; i < 46; i++)
		p[2 + i] = (uint8_t)(i * 7 + h);
	return (size_t)(p + 48 - out);
}

/* That frame in an mbuf, cut to len bytes if len is not 0. */
static inline struct rte_mbuf *raw_frame(struct fixture *fx, unsigned h, const uint8_t dst[6], uint16_t vid, size_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(fx->gen);
	assert_non_null(m);
	size_t n = write_frame(h, dst, vid, rte_pktmbuf_mtod(m, uint8_t *));
	m->data_len = m->pkt_len = (uint32_t)(len ? len : n);
	return m;
}

/* EAL for a datapath test program on these lcores ("0", "0,1"): no
 * hugepages, a file prefix of its own. */
static inline int dp_eal_start(const char *name, const char *lcores)
{
	char prefix[64], *argv0 = (char *)name;
	snprintf(prefix, sizeof(prefix), "--file-prefix=swemu-%s-%d", name, (int)getpid());
	char *eal[] = { argv0,		"--no-huge",	     "-m", "256", prefix, "--no-pci", "-l",
			(char *)lcores, "--log-level=error", NULL };
	if (rte_eal_init(9, eal) < 0) {
		fprintf(stderr, "%s: EAL does not start\n", name);
		return -1;
	}
	return 0;
}

#endif
