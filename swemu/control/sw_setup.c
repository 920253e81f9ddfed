/* SPDX-License-Identifier: BSD-3-Clause */
/* Builds the run-time fabric from a loaded config, and takes it down.  On
 * any failure everything made so far is released: never a half-started
 * switch. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include <rte_lcore.h>
#include <rte_ring.h>

#include "sw_rt.h"

#define SW_RING_DESC  1024
#define SW_LINK_QUEUE 4096
/* A jumbo frame in one segment; af_packet wants room for its whole
 * frame (framesz=10240 in the testbed). */
#define SW_MBUF_DATA  (RTE_PKTMBUF_HEADROOM + 10240)
/* every frame swemu builds (the largest INA result) fits one mbuf */
_Static_assert(SW_MBUF_DATA - RTE_PKTMBUF_HEADROOM >=
		       SW_ETH_HLEN + SW_IP_HLEN + SW_UDP_HLEN + INA_HDR_LEN + INA_MAX_PAYLOAD,
	       "an INA frame must fit one mbuf");
/* The kernel caps an AF_XDP umem chunk at a page: mbuf, headroom and
 * frame must fit 4 KiB (frames up to ~3.5 KB; veth's XDP MTU is 3498). */
#define SW_XDP_MBUF_DATA 3712

/* An af_xdp port parks a fill ring of receive buffers (the driver's default
 * ring size) in the kernel at queue setup, and its transmit copies come
 * from the same pool: the shared pool holds that much per af_xdp device on
 * top of the frames in flight (`mbufs`).  Sized by `mbufs` alone, an
 * 8191-mbuf pool ran dry at the fourth port ("Failed to configure xdp
 * socket"). */
static unsigned xdp_pool_mbufs(const struct sw_rt *rt, const struct rte_eth_dev_info *info, uint16_t nrx, uint16_t ntx)
{
	unsigned ndev = 0;
	uint16_t id;
	RTE_ETH_FOREACH_DEV (id) {
		struct rte_eth_dev_info di;
		if (rte_eth_dev_info_get(id, &di) == 0 && !strcmp(di.driver_name, "net_af_xdp"))
			ndev++;
	}
	return rt->cfg.mbufs + ndev * ((unsigned)info->default_rxportconf.ring_size + nrx + ntx);
}

/* A port's transmit buffer on its queue, on a page of its own: written on
 * every frame sent, and the partitions of a switch allocate theirs one
 * after another.  Side by side, two partitions' buffers cost each lcore
 * 81 -> 72 ns per INA frame (swemu-bench -w 2 -1 -e 64 -n 4, 2026-12-03).
 * 0 or -ENOMEM. */
static int port_txb(struct sw_rt *rt, struct sw_port *p)
{
	const size_t page = 4096;
	p->txb = rte_zmalloc_socket("swemu_txb", RTE_ALIGN_CEIL(RTE_ETH_TX_BUFFER_SIZE(rt->cfg.burst), page), page,
				    rte_eth_dev_socket_id(p->dev));
	if (!p->txb)
		return -ENOMEM;
	rte_eth_tx_buffer_init(p->txb, (uint16_t)rt->cfg.burst);
	sw_port_tx_callback_init(p);
	return 0;
}

/* Configures and starts p's device: with a queue pair per partition of its
 * switch (partition 0 does it for all), or one where each partition has a
 * device of its own. */
static int port_start(struct sw_rt *rt, struct sw_port *p, char *err, size_t errlen)
{
	const struct sw_switch_cfg *c = p->sw->cfg;
	uint16_t nq = 1;
	for (int k = 0; k < c->partitions && !p->cfg->npart_dev; k++)
		if (c->partition_queues[k] + 1 > nq)
			nq = (uint16_t)(c->partition_queues[k] + 1);
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	int rc;

	memset(&conf, 0, sizeof(conf));
	if ((rc = rte_eth_dev_info_get(p->dev, &info)) != 0)
		goto fail;
	/* af_packet advertises a 1518-byte frame whatever its framesz: start
	 * within what the device says, then ask for jumbo frames */
	uint32_t dev_mtu = info.max_rx_pktlen > RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN
				   ? info.max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN
				   : RTE_ETHER_MTU;
	conf.rxmode.mtu = dev_mtu < SW_MTU ? dev_mtu : SW_MTU;
	p->tx_multi_seg = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0;
	if (p->tx_multi_seg)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	/* a NIC that verifies IPv4/UDP checksums saves the switch a pass over
	 * every INA payload (rx_csum_verdict) */
	const uint64_t csum = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
	conf.rxmode.offloads |= info.rx_offload_capa & csum;
	p->rx_csum_offload = (info.rx_offload_capa & csum) == csum;
	if (nq > info.max_rx_queues || nq > info.max_tx_queues) {
		snprintf(err, errlen,
			 "%s:%d: port '%s' (device %s): its partitions' queues need %u queue pairs; it has %u",
			 rt->cfg_path, p->cfg->line, p->cfg->name, p->dev_name, nq,
			 info.max_rx_queues < info.max_tx_queues ? info.max_rx_queues : info.max_tx_queues);
		return -EINVAL;
	}
	if ((rc = rte_eth_dev_configure(p->dev, nq, nq, &conf)) != 0)
		goto fail;
	/* af_packet's frames are bounded by its framesz devarg, not by the
	 * MTU: ethdev refuses to raise it past the 1518 advertised, and the
	 * warning (two lines per port) only misled */
	if (conf.rxmode.mtu < SW_MTU && strcmp(info.driver_name, "net_af_packet") != 0 &&
	    rte_eth_dev_set_mtu(p->dev, SW_MTU) != 0)
		fprintf(stderr, "swemu: port %s.%s: MTU stays %u (device refuses %d)\n", p->sw->cfg->name, p->cfg->name,
			conf.rxmode.mtu, SW_MTU);
	uint16_t nrx = SW_RING_DESC, ntx = SW_RING_DESC;
	if ((rc = rte_eth_dev_adjust_nb_rx_tx_desc(p->dev, &nrx, &ntx)) != 0)
		goto fail;
	struct rte_mempool *rxpool = rt->pool;
	if (!strcmp(info.driver_name, "net_af_xdp")) {
		if (!rt->xdp_pool) { /* the first af_xdp port sizes it for all */
			unsigned n = xdp_pool_mbufs(rt, &info, nrx, ntx);
			rt->xdp_pool = rte_pktmbuf_pool_create("swemu_xdp_pool", n, 256, 0, SW_XDP_MBUF_DATA,
							       (int)rte_socket_id());
			if (!rt->xdp_pool) {
				snprintf(err, errlen,
					 "%s:%d: port '%s': cannot allocate %u af_xdp mbufs (%s): give EAL more memory "
					 "with -m",
					 rt->cfg_path, p->cfg->line, p->cfg->name, n, rte_strerror(rte_errno));
				return -ENOMEM;
			}
		}
		rxpool = rt->xdp_pool;
	}
	if ((rc = port_txb(rt, p)) != 0)
		goto fail;
	for (uint16_t q = 0; q < nq; q++)
		if ((rc = rte_eth_rx_queue_setup(p->dev, q, nrx, rte_eth_dev_socket_id(p->dev), NULL, rxpool)) != 0 ||
		    (rc = rte_eth_tx_queue_setup(p->dev, q, ntx, rte_eth_dev_socket_id(p->dev), NULL)) != 0)
			goto fail;
	if ((rc = rte_eth_dev_start(p->dev)) != 0)
		goto fail;
	rte_eth_promiscuous_enable(p->dev); /* a switch port takes every frame */
	return 0;
fail:
	snprintf(err, errlen, "%s:%d: port '%s' (device %s) does not start: %s", rt->cfg_path, p->cfg->line,
		 p->cfg->name, p->dev_name, rte_strerror(rc < 0 ? -rc : rc));
	return -EIO;
}

/* A ring of the control channel's requests, in memory of its own (the
 * name is for debugging only: rte_ring_init registers nothing). */
static struct rte_ring *ctrl_ring(const char *name)
{
	unsigned count = 2 * SW_CTRL_QUEUE; /* a power of two that holds them all */
	struct rte_ring *r = rte_zmalloc(NULL, (size_t)rte_ring_get_memsize(count), RTE_CACHE_LINE_SIZE);
	if (r && rte_ring_init(r, name, count, RING_F_SP_ENQ | RING_F_SC_DEQ) < 0) {
		rte_free(r);
		r = NULL;
	}
	return r;
}

/* The switch's capture file, when its config asks for one; its
 * interfaces are the ports, named "switch.port". */
static int open_capture(struct sw_rt *rt, struct sw_lsw *sw, char *err, size_t errlen)
{
	const struct sw_switch_cfg *c = sw->cfg;
	if (!c->capture.file[0])
		return 0;
	char names[SW_MAX_PORTS][2 * SW_NAME_LEN + 2];
	const char *np[SW_MAX_PORTS];
	for (int i = 0; i < c->nports; i++) {
		snprintf(names[i], sizeof(names[i]), "%s.%s", c->name, c->ports[i].name);
		np[i] = names[i];
	}
	char why[320];
	if (sw_capture_open(&sw->cap, &c->capture, np, c->nports, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s:%d: switch '%s': %s", rt->cfg_path, c->capture.line, c->name, why);
		return -EIO;
	}
	return 0;
}

/* The switch's control requests, all idle, and the rings they take to
 * the control thread and back.  0 or -1 (no memory). */
static int ctrl_queues(struct sw_lsw *sw)
{
	sw->ctrl_reqs = calloc(SW_CTRL_QUEUE, sizeof(*sw->ctrl_reqs));
	sw->ctrl_in = ctrl_ring("swemu_ctrl_in");
	sw->ctrl_out = ctrl_ring("swemu_ctrl_out");
	if (!sw->ctrl_reqs || !sw->ctrl_in || !sw->ctrl_out)
		return -1;
	for (unsigned i = 0; i < SW_CTRL_QUEUE; i++)
		sw->ctrl_idle[i] = &sw->ctrl_reqs[i];
	sw->ctrl_nidle = SW_CTRL_QUEUE;
	return 0;
}

/* The switch's (or partition's) ports: link queues, or devices started
 * (partition 0, or a partition's own device) or joined on the partition's
 * queue pair. */
static int lsw_ports(struct sw_rt *rt, struct sw_lsw *sw, char *err, size_t errlen)
{
	const struct sw_switch_cfg *c = sw->cfg;
	for (int i = 0; i < c->nports; i++) {
		struct sw_port *p = &sw->ports[i];
		p->sw = sw;
		p->index = i;
		p->cfg = &c->ports[i];
		/* an emulator holds at most its share of the mempool (a queue that
		 * took it all would starve every other port, ACKs and ARP too) */
		int nports = 0;
		for (int k = 0; k < rt->cfg.nswitches; k++)
			nports += rt->cfg.sw[k].nports;
		uint32_t share = rt->cfg.mbufs / (uint32_t)(nports ? nports : 1);
		if (sw_netem_init(&p->netem, &p->cfg->netem, share > 256 ? share : 256,
				  (uint64_t)sw->part << 16 | ((uint64_t)sw->index * 64 + (uint64_t)i + 1)) < 0 ||
		    (c->partitions > 1 && !sw->part &&
		     !(p->wire_ns = rte_zmalloc("swemu_wire", RTE_CACHE_LINE_SIZE, RTE_CACHE_LINE_SIZE)))) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		if (c->partitions > 1) /* one line whatever partition sends */
			sw_netem_share_wire(&p->netem, rt->sw[sw->index]->ports[i].wire_ns);
		if (!p->cfg->dev[0]) {
			char name[RTE_RING_NAMESIZE];
			snprintf(name, sizeof(name), "swemu_lq_%d_%d_%d", sw->index, sw->part, i);
			const bool one_sender = rt->cfg.sw[p->cfg->peer_switch].partitions <= 1;
			p->lq = rte_ring_create(name, SW_LINK_QUEUE, (int)rte_socket_id(),
						(one_sender ? RING_F_SP_ENQ : 0) | RING_F_SC_DEQ);
			if (!p->lq) {
				snprintf(err, errlen, "link queue of %s.%s: %s", c->name, p->cfg->name,
					 rte_strerror(rte_errno));
				return -ENOMEM;
			}
			continue;
		}
		p->ext = true;
		p->owns_dev = sw->part == 0 || p->cfg->npart_dev;
		p->dev_name = p->cfg->npart_dev ? p->cfg->part_dev[sw->part] : p->cfg->dev;
		if (rte_eth_dev_get_port_by_name(p->dev_name, &p->dev) != 0) {
			snprintf(err, errlen,
				 "%s:%d: port '%s': no DPDK device '%s' (create it with --vdev or allow its PCI "
				 "address)",
				 rt->cfg_path, p->cfg->line, p->cfg->name, p->dev_name);
			p->ext = false;
			return -ENODEV;
		}
		p->queue = p->cfg->npart_dev ? 0 : c->partition_queues[sw->part];
		if (!p->owns_dev) { /* what partition 0 learned of the device when it started it */
			const struct sw_port *first = &rt->sw[sw->index]->ports[i];
			p->tx_multi_seg = first->tx_multi_seg;
			p->rx_csum_offload = first->rx_csum_offload;
		}
		int rc = p->owns_dev ? port_start(rt, p, err, errlen) : port_txb(rt, p);
		if (rc < 0) {
			if (!p->owns_dev)
				snprintf(err, errlen, "out of memory");
			return rc; /* teardown stops and closes it */
		}
	}
	return 0;
}

/* Config switch idx, or its partition part (> 0: built after every
 * switch's partition 0, which started the devices), at rt->sw[rt->nsw]. */
static int lsw_build(struct sw_rt *rt, int idx, int part, char *err, size_t errlen)
{
	const struct sw_switch_cfg *c = &rt->cfg.sw[idx];
	struct sw_lsw *sw = calloc(1, sizeof(*sw));
	if (!sw) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rt->sw[rt->nsw++] = sw;
	sw->index = idx;
	sw->cfg = c;
	sw->part = part;
	sw->jobs_changes = &sw->no_jobs;
	if (part)
		snprintf(sw->name, sizeof(sw->name), "%s/%d", c->name, part);
	else
		snprintf(sw->name, sizeof(sw->name), "%s", c->name);
	rt->sw[idx]->parts[part] = sw;
	sw->nports = c->nports;
	/* the VLANs the ports carry, untagged or tagged */
	uint64_t seen[64] = { 0 };
	for (int i = 0; i < c->nports; i++) {
		const struct sw_port_cfg *pc = &c->ports[i];
		if (pc->ntrunk && !(sw->ports[i].tagged = calloc(64, sizeof(uint64_t)))) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		for (int t = 0; t < pc->ntrunk; t++) {
			sw->ports[i].tagged[pc->trunk[t] >> 6] |= 1ull << (pc->trunk[t] & 63);
			seen[pc->trunk[t] >> 6] |= 1ull << (pc->trunk[t] & 63);
		}
		if (pc->vlan)
			seen[pc->vlan >> 6] |= 1ull << (pc->vlan & 63);
	}
	for (int w = 0; w < 64; w++)
		sw->vlans += __builtin_popcountll(seen[w]);
	sw_fdb_init(&sw->fdb, c->fdb_age_s, c->fdb_port_limit);
	for (int i = 0; i < c->nfdb; i++)
		sw_fdb_add_static(&sw->fdb, c->fdb[i].mac, c->ports[c->fdb[i].port].vlan, c->fdb[i].port);
	/* a control channel on every INA switch and on any switch with
	 * management sources (a plain one's takes link settings only) */
	if (!part && c->nmgmt && ctrl_queues(sw) < 0) {
		snprintf(err, errlen, "switch '%s': no memory for its control requests", c->name);
		return -ENOMEM;
	}
	if (c->ina) {
		sw->eng = ina_engine_create(c->slots, c->max_elems);
		sw->emits = malloc(sizeof(*sw->emits));
		sw->plans = calloc(SW_PLANS, sizeof(*sw->plans));
		if (!sw->eng || !sw->emits || !sw->plans || (!part && !c->nmgmt && ctrl_queues(sw) < 0)) {
			snprintf(err, errlen, "switch '%s': no memory for %u slots of %u elements", c->name, c->slots,
				 c->max_elems);
			return -ENOMEM;
		}
		ina_engine_group_multicast(sw->eng, true); /* sw_send_emits expands them */
		sw->jobs_changes = ina_engine_jobs_changes(sw->eng);
		const struct ina_result_sink sink = sw_result_sink(rt);
		ina_engine_result_sink(sw->eng, &sink);
		for (int j = 0; j < c->njobs; j++) {
			const char *why;
			if (ina_job_install(sw->eng, &c->jobs[j], &why) < 0) {
				snprintf(err, errlen, "%s: switch '%s' job %u: %s", rt->cfg_path, c->name,
					 c->jobs[j].id, why);
				return -EINVAL;
			}
		}
	}
	int rc = lsw_ports(rt, sw, err, errlen);
	if (rc < 0)
		return rc;
	return part ? 0 : open_capture(rt, sw, err, errlen);
}

static struct sw_worker *worker_on(struct sw_rt *rt, unsigned lcore)
{
	for (int i = 0; i < rt->nworkers; i++)
		if (rt->workers[i].lcore == lcore)
			return &rt->workers[i];
	struct sw_worker *w = &rt->workers[rt->nworkers++];
	*w = (struct sw_worker){ .rt = rt, .lcore = lcore };
	return w;
}

/* Whole switches to lcores: a switch's own `lcore`, else EAL's lcores in
 * turn (main first) in config order.  workers[0] is the main lcore's,
 * switches or not: it also writes the stats. */
static int assign_workers(struct sw_rt *rt, char *err, size_t errlen)
{
	unsigned lcores[RTE_MAX_LCORE], n = 0, l;
	lcores[n++] = rte_get_main_lcore();
	RTE_LCORE_FOREACH_WORKER (l)
		lcores[n++] = l;
	rt->nworkers = 0;
	worker_on(rt, lcores[0]);
	for (int i = 0; i < rt->nsw; i++) {
		struct sw_lsw *sw = rt->sw[i];
		const struct sw_switch_cfg *c = sw->cfg;
		if (c->lcore >= 0 && (c->lcore >= RTE_MAX_LCORE || !rte_lcore_is_enabled((unsigned)c->lcore))) {
			snprintf(err, errlen, "%s:%d: switch '%s': lcore %d is not one of EAL's (give it with -l)",
				 rt->cfg_path, c->line, c->name, c->lcore);
			return -EINVAL;
		}
		/* in EAL's order, a switch after the partitions of the ones
		 * before it, its partitions on the lcores after its own
		 * (sharing one when EAL has fewer) */
		unsigned at = 0;
		for (int k = 0; k < sw->index; k++)
			at += (unsigned)rt->cfg.sw[k].partitions;
		at %= n;
		for (unsigned k = 0; c->lcore >= 0 && k < n; k++)
			if (lcores[k] == (unsigned)c->lcore)
				at = k;
		struct sw_worker *w = worker_on(rt, lcores[(at + (unsigned)sw->part) % n]);
		w->sw[w->nsw++] = sw;
		sw->lcore = w->lcore;
	}
	return 0;
}

/* The pool the engines write long sums into (sw_result_sink): one
 * buffer per (slot, set), as the slots keep theirs between rounds, and
 * some for sums whose slot moved on while frames still hold them.  Capped
 * at half the receive pool: past that the engine sums in slot memory and
 * each multicast copies, as before.  None without a sum long enough. */
static int held_pool(struct sw_rt *rt, char *err, size_t errlen)
{
	size_t held = 0, elems = 0;
	for (int i = 0; i < rt->cfg.nswitches; i++) {
		const struct sw_switch_cfg *c = &rt->cfg.sw[i];
		if (c->ina) {
			held += (size_t)c->slots * 2 * (size_t)c->partitions;
			elems = RTE_MAX(elems, (size_t)c->max_elems);
		}
	}
	if (elems * INA_ELEM_SIZE <= SW_SHARE_MIN)
		return 0;
	unsigned n = (unsigned)RTE_MIN(held + 256, (size_t)rt->cfg.mbufs / 2);
	size_t room = RTE_PKTMBUF_HEADROOM + elems * INA_ELEM_SIZE;
	rt->held_pool = rte_pktmbuf_pool_create("swemu_held", n, RTE_MIN(256u, n / 2), 0, (uint16_t)room,
						(int)rte_socket_id());
	if (!rt->held_pool) {
		snprintf(err, errlen, "cannot allocate %u result mbufs of %zu bytes (%s): give EAL more memory with -m",
			 n, room, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	return 0;
}

int sw_rt_setup(struct sw_rt *rt, char *err, size_t errlen)
{
	rt->ns_per_tsc = 1e9 / (double)rte_get_tsc_hz();
	rt->pool = rte_pktmbuf_pool_create("swemu_pool", rt->cfg.mbufs, 256, 0, SW_MBUF_DATA, (int)rte_socket_id());
	if (!rt->pool) {
		snprintf(err, errlen, "cannot allocate %u mbufs of %d bytes (%s): give EAL more memory with -m",
			 rt->cfg.mbufs, SW_MBUF_DATA, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	/* two small mbufs (header + clone) per result frame of a multicast */
	rt->small_pool = rte_pktmbuf_pool_create("swemu_small", rt->cfg.mbufs * 2 + 1, 256, 0,
						 RTE_PKTMBUF_HEADROOM + 128, (int)rte_socket_id());
	if (!rt->small_pool) {
		snprintf(err, errlen, "cannot allocate %u small mbufs (%s): give EAL more memory with -m",
			 rt->cfg.mbufs * 2 + 1, rte_strerror(rte_errno));
		sw_rt_teardown(rt);
		return -ENOMEM;
	}
	/* result frames that carry their own copy of a short payload: a pool
	 * of such (about 1 KiB apart, not 10) keeps them in fewer pages and
	 * cache sets */
	rt->result_pool = rte_pktmbuf_pool_create("swemu_result", rt->cfg.mbufs, 256, 0, SW_RESULT_MBUF_DATA,
						  (int)rte_socket_id());
	if (!rt->result_pool) {
		snprintf(err, errlen, "cannot allocate %u result mbufs (%s): give EAL more memory with -m",
			 rt->cfg.mbufs, rte_strerror(rte_errno));
		sw_rt_teardown(rt);
		return -ENOMEM;
	}
	for (int i = 0; i < rt->cfg.nswitches; i++)
		if (rt->cfg.sw[i].partitions < 1) /* a config made in code (tests, benchmarks) */
			rt->cfg.sw[i].partitions = 1;
	if (held_pool(rt, err, errlen) < 0) {
		sw_rt_teardown(rt);
		return -ENOMEM;
	}
	for (int i = 0; i < rt->cfg.nswitches; i++) {
		int rc = lsw_build(rt, i, 0, err, errlen);
		if (rc < 0) {
			sw_rt_teardown(rt);
			return rc;
		}
	}
	for (int i = 0; i < rt->cfg.nswitches; i++)
		for (int k = 1; k < rt->cfg.sw[i].partitions; k++) {
			int rc = lsw_build(rt, i, k, err, errlen);
			if (rc < 0) {
				sw_rt_teardown(rt);
				return rc;
			}
		}
	for (int i = 0; i < rt->nsw; i++) /* every partition's link ports */
		for (int k = 0; k < rt->sw[i]->nports; k++) {
			struct sw_port *p = &rt->sw[i]->ports[k];
			if (p->ext)
				continue;
			/* the peer port in every partition of its switch */
			const struct sw_lsw *peer = rt->sw[p->cfg->peer_switch];
			p->npeer = (unsigned)rt->cfg.sw[p->cfg->peer_switch].partitions;
			for (unsigned q = 0; q < p->npeer; q++)
				p->peer[q] = &peer->parts[q]->ports[p->cfg->peer_port];
		}
	int rc = assign_workers(rt, err, errlen);
	if (rc < 0)
		sw_rt_teardown(rt);
	return rc;
}

static void free_held(struct sw_port *p)
{
	void *held[64];
	unsigned n;
	while ((n = sw_netem_dequeue(&p->netem, UINT64_MAX, held, 64)))
		rte_pktmbuf_free_bulk((struct rte_mbuf **)held, n);
	while (p->lq && (n = rte_ring_sc_dequeue_burst(p->lq, held, 64, NULL)))
		rte_pktmbuf_free_bulk((struct rte_mbuf **)held, n);
}

void sw_rt_teardown(struct sw_rt *rt)
{
	/* every partition's queue flushed before partition 0 closes the device */
	for (int i = 0; i < rt->nsw; i++)
		for (int k = 0; rt->sw[i] && k < rt->sw[i]->nports; k++) {
			struct sw_port *p = &rt->sw[i]->ports[k];
			if (p->ext && p->txb)
				rte_eth_tx_buffer_flush(p->dev, p->queue, p->txb);
		}
	for (int i = 0; i < rt->nsw; i++) {
		struct sw_lsw *sw = rt->sw[i];
		if (!sw)
			continue;
		for (int k = 0; k < sw->nports; k++) {
			struct sw_port *p = &sw->ports[k];
			free_held(p);
			if (p->ext && p->owns_dev) {
				rte_eth_dev_stop(p->dev);
				rte_eth_dev_close(p->dev);
			}
			rte_free(p->txb);
			rte_free(p->wire_ns);
			rte_ring_free(p->lq);
			sw_netem_free(&p->netem);
			free(p->tagged);
		}
		sw_capture_close(&sw->cap);
		ina_engine_destroy(sw->eng);
		free(sw->emits);
		free(sw->plans);
		free(sw->ctrl_reqs);
		rte_free(sw->ctrl_in);
		rte_free(sw->ctrl_out);
		free(sw);
		rt->sw[i] = NULL;
	}
	rt->nsw = 0;
	rte_mempool_free(rt->pool);
	rte_mempool_free(rt->xdp_pool);
	rte_mempool_free(rt->small_pool);
	rte_mempool_free(rt->result_pool);
	rte_mempool_free(rt->held_pool);
	rt->pool = rt->xdp_pool = rt->small_pool = rt->result_pool = rt->held_pool = NULL;
}

/* EAL leaves its runtime directory (config, fbarrays, sockets) behind after
 * rte_eal_cleanup; the prefix is this process's own, so remove it. */
void sw_eal_cleanup(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char f[PATH_MAX + 256];
		snprintf(f, sizeof(f), "%s/%s", dir, e->d_name);
		unlink(f);
	}
	closedir(d);
	rmdir(dir);
}
