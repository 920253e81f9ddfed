/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu-bench: swemu's own datapath (sw_rt_setup + sw_dp_poll) on in-memory
 * ports (rte_eth_from_rings), one lcore, no idle back-off.  The same frames
 * go through as plain L2 forwarding (addressed to another host) and as INA
 * contributions (addressed to the switch), so the two rates compare the
 * datapaths, not the generator; beside them, on the same ports and frames,
 * the bare I/O loop (receive a burst, send it on) and the bare add of the
 * payloads into slot memory.  Every frame the switch gets is a fresh mbuf
 * (a copy of a template, made outside the timed part), so the switch's
 * frees are real frees in every mode; what the ports sent is freed inside
 * the timed part, as a NIC's completed transmissions are on the switch's
 * lcore.  Between rounds only the slot and slice fields change (with an
 * incremental checksum update, so the switch's checksum check still runs). */
#include <getopt.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_malloc.h>

#include "ina_kernels.h"
#include "sw_bench_floor.h"
#include "sw_rt.h"
#include "bench_util.h"

#define NPORTS 4
#define WINDOW 64 /* slots per set in flight */

static volatile sig_atomic_t never;

/* The switch's modes, then the floors' (-F, sw_bench_floor.h). */
enum mode { M_L2, M_INA, M_IO, M_FLOOR_L2, M_FLOOR_INA, M_FLOOR_CHECKED, M_MODES_ };

/* What every lane shares: the row's parameters. */
struct bench {
	struct rte_mempool *gen_pool[2]; /* per lane: a shared pool's ring would bounce between lcores */
	unsigned fan_in, elems;
	enum mode mode;
	bool ina;	/* frames addressed to the switch */
	bool zero_csum; /* senders leave the UDP checksum 0 (SwitchML practice) */
	bool nic_csum;	/* frames arrive marked verified, as from a NIC with RX checksum offload */
	double seconds;
	bool one_switch;       /* the lanes are partitions of one switch (-1) */
	int lane_socket[2];    /* the heap of each lane's rings and devices (lane_heap) */
	unsigned fixed_rounds; /* -c: exactly this many rounds, no warm-up (instruction counts) */
};

/* One logical switch and its generator, run by one lcore. */
struct lane {
	const struct bench *b;
	int k;		/* lane k: EAL's k-th lcore */
	uint16_t queue; /* of every port: its partition's (k * LANE_QUEUE_STRIDE), else 0 */
	struct rte_ring *rx[NPORTS], *tx[NPORTS];
	char dev[NPORTS][RTE_ETH_NAME_MAX_LEN];
	struct rte_mbuf **tmpl; /* fan_in * WINDOW */
	uint16_t port_id[NPORTS];
	struct sw_worker *w;
	struct bench_floor *floor; /* the floor modes' */
	/* results */
	uint64_t packets, in_switch; /* in_switch: TSC cycles in poll + flush */
	uint32_t rounds;
	double t;
} __rte_cache_aligned;

static const uint8_t sw_mac[6] = { 2, 0, 0, 0, 0, 0xfe };

static void host_mac(unsigned c, uint8_t m[6])
{
	memcpy(m, (uint8_t[]){ 2, 0, 0, 0, (uint8_t)(c >> 8), (uint8_t)c }, 6);
}

static uint32_t host_ip(unsigned c) { return rte_cpu_to_be_32(0x0a000001u + c); }

/* RFC 1624: the checksum after a 16-bit word changes from o to n. */
static uint16_t csum_fix(uint16_t c, uint16_t o, uint16_t n)
{
	uint32_t s = (uint16_t)~c + (uint16_t)~o + (uint32_t)n;
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void patch16(uint8_t *f, size_t off, uint16_t v)
{
	uint8_t *udp = f + SW_ETH_HLEN + SW_IP_HLEN;
	uint16_t old = (uint16_t)(f[off] << 8 | f[off + 1]);
	uint16_t c = (uint16_t)(udp[6] << 8 | udp[7]);
	f[off] = (uint8_t)(v >> 8);
	f[off + 1] = (uint8_t)v;
	if (c == 0) /* no checksum: stays none */
		return;
	c = csum_fix(c, old, v);
	if (c == 0)
		c = 0xffff;
	udp[6] = (uint8_t)(c >> 8);
	udp[7] = (uint8_t)c;
}

/* Header field offsets inside the frame. */
#define INA_OFF (SW_ETH_HLEN + SW_IP_HLEN + SW_UDP_HLEN)

static void set_slot_seq(struct rte_mbuf *m, uint32_t slot, uint32_t seq)
{
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	patch16(f, INA_OFF + 8, (uint16_t)(slot >> 16));
	patch16(f, INA_OFF + 10, (uint16_t)slot);
	patch16(f, INA_OFF + 16, (uint16_t)(seq >> 16));
	patch16(f, INA_OFF + 18, (uint16_t)seq);
}

/* The queue pair lane k's partition owns: 0 and 8, not 0 and 1, because
 * the ring PMD keeps its queues' packet counters 24 bytes apart and
 * updates them on every burst: on neighbouring queues two lcores wrote one
 * cache line, and the bare I/O loop alone went from 5.0 to 18.5 ns per
 * frame (2026-12-03).  A NIC's queues share no line. */
#define LANE_QUEUE_STRIDE 8
#define DEV_QUEUES	  (LANE_QUEUE_STRIDE + 1)

/* Slot i of a lane's window: lanes of one switch take turns, so lane k's
 * slots are those its partition's UDP ports carry (slot_port). */
static uint32_t lane_slot(const struct lane *l, unsigned i) { return l->b->one_switch ? i * 2 + (uint32_t)l->k : i; }

/* A slot's INA port, as hosts spread slots over the 16: the steering
 * swemu's partitions expect (port - INA_UDP_PORT_MIN) % partitions. */
static uint16_t slot_port(uint32_t slot) { return (uint16_t)(INA_UDP_PORT_MIN + slot % 16); }

static void build_templates(struct lane *l)
{
	static uint8_t payload[INA_MAX_PAYLOAD];
	const struct bench *b = l->b;
	l->tmpl = calloc((size_t)b->fan_in * WINDOW, sizeof(*l->tmpl));
	for (unsigned c = 0; c < b->fan_in; c++)
		for (unsigned i = 0; i < WINDOW; i++) {
			struct rte_mbuf *m = rte_pktmbuf_alloc(b->gen_pool[l->k]);
			if (!m) {
				fprintf(stderr, "swemu-bench: generator pool empty\n");
				exit(1);
			}
			for (unsigned e = 0; e < b->elems; e++) {
				uint32_t v = rte_cpu_to_be_32(c + e);
				memcpy(payload + 4 * e, &v, 4);
			}
			struct ina_hdr h = { .version = INA_VERSION,
					     .type = INA_T_DATA,
					     .dtype = INA_D_INT32,
					     .job = 1,
					     .contributor = (uint16_t)c,
					     .slot = lane_slot(l, i),
					     .epoch = 1,
					     .count = (uint16_t)b->elems };
			uint8_t hdr[INA_HDR_LEN];
			ina_hdr_encode(&h, hdr);
			struct sw_udp_hdrs u = { .src_ip = host_ip(c),
						 .dst_ip = rte_cpu_to_be_32(0x0a0000fe),
						 .src_port = rte_cpu_to_be_16(INA_UDP_PORT_MIN),
						 .dst_port = rte_cpu_to_be_16(slot_port(lane_slot(l, i))) };
			host_mac(c, u.src_mac);
			if (b->ina)
				memcpy(u.dst_mac, sw_mac, 6);
			else
				host_mac((c + 1) % b->fan_in == c ? c + 1 : (c + 1) % b->fan_in, u.dst_mac);
			size_t plen = (size_t)b->elems * 4;
			size_t len = sw_frame_build_udp(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m), &u,
							hdr, sizeof(hdr), payload, plen,
							sw_csum_partial(payload, plen, 0));
			m->data_len = m->pkt_len = (uint32_t)len;
			if (b->zero_csum) {
				uint8_t *udp = rte_pktmbuf_mtod(m, uint8_t *) + SW_ETH_HLEN + SW_IP_HLEN;
				udp[6] = udp[7] = 0;
			}
			if (b->nic_csum)
				m->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
			l->tmpl[c * WINDOW + i] = m;
		}
}

/* Switch k of the fabric, pinned to lcore k: its own four ports, hosts and
 * job (lanes share nothing but the mempools). */
static void make_switch(const struct lane *l, int k, int partitions, struct sw_switch_cfg *s, struct ina_job_cfg *job)
{
	const struct bench *b = l->b;
	const uint32_t nslots = WINDOW * (uint32_t)partitions;
	snprintf(s->name, sizeof(s->name), "tor%d", k);
	s->lcore = k;
	s->partitions = partitions;
	s->ina = true;
	memcpy(s->mac, sw_mac, 6);
	s->ip = rte_cpu_to_be_32(0x0a0000fe);
	s->ctrl_port = INA_CTRL_PORT;
	s->slots = nslots;
	s->max_elems = (uint16_t)b->elems;
	s->fdb_age_s = 300;
	s->nports = NPORTS;
	for (int p = 0; p < NPORTS; p++) {
		snprintf(s->ports[p].name, SW_NAME_LEN, "p%d", p);
		snprintf(s->ports[p].dev, sizeof(s->ports[p].dev), "%s", l->dev[p]);
		s->ports[p].peer_switch = s->ports[p].peer_port = -1;
		s->ports[p].vlan = SW_VLAN_DEFAULT;
		s->ports[p].steered = true; /* the generator steers (make_devs) */
	}
	/* host c sits on port c % NPORTS; one more host for L2 traffic */
	for (unsigned c = 0; c <= b->fan_in; c++) {
		host_mac(c, s->fdb[c].mac);
		s->fdb[c].port = (int)(c % NPORTS);
	}
	s->nfdb = (int)b->fan_in + 1;
	memset(job, 0, sizeof(*job));
	job->id = 1;
	job->fan_in = (uint16_t)b->fan_in;
	job->dtype = INA_D_INT32;
	job->nslots = nslots;
	job->elems_per_slot = (uint16_t)b->elems;
	job->outputs = INA_OUT_MULTICAST;
	job->upstream_index = -1;
	for (unsigned c = 0; c < b->fan_in; c++) {
		job->contributors[c].ip = host_ip(c);
		job->contributors[c].port = rte_cpu_to_be_16(INA_UDP_PORT_MIN);
		host_mac(c, job->contributors[c].mac);
	}
	s->njobs = 1;
	s->jobs = job;
}

#define MAX_ROUNDS 15

struct figures {
	double mpps;
	double switch_ns; /* per packet, inside the switch's poll and flush only */
	double add_ns;	  /* ina: the bare add of the same payloads, per packet */
	uint64_t drops;
};

/* Each lane's rings and devices come from a DPDK heap of its own.  From
 * the one heap, the two lanes' rings and ring-PMD queues (whose packet
 * counters it updates on every burst) landed side by side or in the holes
 * an earlier row left, and one lane then ran 2-3x slower while the other
 * worked (bare I/O 4.8 -> 15 ns per frame), by where the allocator put
 * them (2026-12-03).  The swemu side (transmit buffers) follows the
 * device's heap, as on a NIC it follows the NIC's socket. */
#define LANE_HEAP_BYTES (64u << 20)
static int lane_heap(int k)
{
	char name[32];
	snprintf(name, sizeof(name), "bench_lane%d", k);
	void *va = mmap(NULL, LANE_HEAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (va == MAP_FAILED || rte_malloc_heap_create(name) != 0 ||
	    rte_malloc_heap_memory_add(name, va, LANE_HEAP_BYTES, NULL, 0, (size_t)sysconf(_SC_PAGESIZE)) != 0) {
		fprintf(stderr, "swemu-bench: no heap for lane %d: %s\n", k, rte_strerror(rte_errno));
		exit(1);
	}
	return rte_malloc_heap_get_socket(name);
}

static struct rte_ring *lane_ring(const char *name, unsigned count, int socket)
{
	struct rte_ring *r = rte_zmalloc_socket(name, (size_t)rte_ring_get_memsize(count), RTE_CACHE_LINE_SIZE, socket);
	if (r && rte_ring_init(r, name, count, RING_F_SP_ENQ | RING_F_SC_DEQ) < 0) {
		rte_free(r);
		r = NULL;
	}
	return r;
}

/* Lane k's rings: what its generator feeds the switch, what the switch
 * sends it. */
static void make_rings(struct lane *l, int serial, int k)
{
	for (int p = 0; p < NPORTS; p++) {
		char n[32];
		snprintf(n, sizeof(n), "brx%d_%d_%d", serial, k, p);
		l->rx[p] = lane_ring(n, 4096, l->b->lane_socket[k]);
		snprintf(n, sizeof(n), "btx%d_%d_%d", serial, k, p);
		l->tx[p] = lane_ring(n, 8192, l->b->lane_socket[k]);
		if (!l->rx[p] || !l->tx[p]) {
			fprintf(stderr, "swemu-bench: cannot make rings: %s\n", rte_strerror(rte_errno));
			exit(1);
		}
	}
}

/* NPORTS devices over the rings of n lanes, lane k's as its queue pair: a
 * device per lane, or (one switch) devices shared, each lane's generator
 * putting only its partition's slots on its queue, as a NIC's flow rules
 * by UDP port would. */
static void make_devs(struct lane *l, int n, int serial, struct rte_ring *idle)
{
	for (int p = 0; p < NPORTS; p++) {
		struct rte_ring *rx[DEV_QUEUES], *tx[DEV_QUEUES];
		unsigned nq = n > 1 ? DEV_QUEUES : 1;
		for (unsigned q = 0; q < nq; q++)
			rx[q] = tx[q] = idle; /* queues no partition owns: never polled */
		for (int k = 0; k < n; k++) {
			rx[l[k].queue] = l[k].rx[p];
			tx[l[k].queue] = l[k].tx[p];
		}
		char name[32];
		snprintf(name, sizeof(name), "bench%d_%d_%d", serial, l->k, p);
		int port = rte_eth_from_rings(name, rx, nq, tx, nq, (unsigned)l->b->lane_socket[l->k]);
		/* the device takes a name of the PMD's making: ask for it */
		if (port < 0 || rte_eth_dev_get_name_by_port((uint16_t)port, l->dev[p]) != 0) {
			fprintf(stderr, "swemu-bench: cannot make ring ports: %s\n", rte_strerror(rte_errno));
			exit(1);
		}
		for (int k = 1; k < n; k++)
			memcpy(l[k].dev[p], l->dev[p], sizeof(l->dev[p]));
	}
}

/* A fresh copy of template t (the switch frees what it gets). */
static struct rte_mbuf *copy_of(struct lane *l, const struct rte_mbuf *t)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(l->b->gen_pool[l->k]);
	if (!m) {
		fprintf(stderr, "swemu-bench: generator pool empty\n");
		exit(1);
	}
	memcpy(rte_pktmbuf_mtod(m, void *), rte_pktmbuf_mtod(t, const void *), t->data_len);
	m->data_len = m->pkt_len = t->data_len;
	m->ol_flags = t->ol_flags;
	return m;
}

/* The bare I/O loop on the switch's ports: every burst straight out of the
 * next port, nothing looked at. */
static __attribute__((noinline)) unsigned bare_io(struct lane *l)
{
	struct rte_mbuf *pkts[32];
	unsigned work = 0;
	for (int p = 0; p < NPORTS; p++) {
		uint16_t n = rte_eth_rx_burst(l->port_id[p], l->queue, pkts, 32);
		uint16_t k = n ? rte_eth_tx_burst(l->port_id[(p + 1) % NPORTS], l->queue, pkts, n) : 0;
		if (k < n)
			rte_pktmbuf_free_bulk(pkts + k, n - k);
		work += n;
	}
	return work;
}

/* The generator and the switch on one lcore: feed 64 frames, let the
 * switch poll and flush and free what it sent, as a NIC's lcore would. */
static int drive(void *arg)
{
	struct lane *l = arg;
	const struct bench *b = l->b;
	struct rte_mbuf *drain[256], *in[WINDOW * 32];
	uint64_t due;
	double hz = (double)rte_get_tsc_hz(), t0 = (double)rte_rdtsc(), t;
	/* first touch of pools and slots: not timed */
	double warm = b->fixed_rounds ? 0 : b->seconds / 5;
	l->packets = l->in_switch = 0;
	l->rounds = 0;
	do {
		if (warm > 0 && ((double)rte_rdtsc() - t0) / hz >= warm) {
			warm = 0;
			l->packets = l->in_switch = 0;
			t0 = (double)rte_rdtsc();
		}
		uint32_t set = l->rounds & 1 ? INA_SLOT_SET_BIT : 0;
		unsigned queued = 0, ncopies = 0;
		for (unsigned i = 0; i < WINDOW; i++) {
			for (unsigned c = 0; c < b->fan_in; c++) {
				struct rte_mbuf *t = l->tmpl[c * WINDOW + i];
				set_slot_seq(t, lane_slot(l, i) | set, l->rounds * WINDOW + i);
				in[ncopies] = copy_of(l, t);
				if (rte_ring_enqueue(l->rx[c % NPORTS], in[ncopies++]) != 0) {
					fprintf(stderr, "swemu-bench: rx ring full\n");
					exit(1);
				}
			}
			queued += b->fan_in;
			/* like a NIC: the switch polls and the wire drains as frames
			 * arrive, not once per round */
			if (queued >= 64 || i + 1 == WINDOW) {
				queued = 0;
				uint64_t s0 = rte_rdtsc();
				if (b->mode == M_IO) {
					while (bare_io(l))
						;
				} else if (b->mode == M_FLOOR_L2) {
					while (bench_floor_l2(l->floor))
						;
				} else if (b->mode >= M_FLOOR_INA) {
					while (bench_floor_ina(l->floor))
						;
				} else {
					while (sw_dp_poll_worker(l->w, &due))
						;
					sw_dp_flush_worker(l->w);
				}
				for (int p = 0; p < NPORTS; p++) {
					unsigned n;
					while ((n = rte_ring_dequeue_burst(l->tx[p], (void **)drain, 256, NULL)))
						rte_pktmbuf_free_bulk(drain, n);
				}
				l->in_switch += rte_rdtsc() - s0;
			}
		}
		l->packets += (uint64_t)WINDOW * b->fan_in;
		l->rounds++;
		t = ((double)rte_rdtsc() - t0) / hz;
	} while (b->fixed_rounds ? l->rounds < b->fixed_rounds : t < b->seconds);
	l->t = t;
	return 0;
}

/* The bare add of the same payloads into slot memory, in the order the
 * switch gets them: ns per frame (the ceiling an aggregating switch's
 * lcore cannot beat). */
static __attribute__((noinline)) double bare_add_ns(const struct bench *b, struct rte_mbuf *const *tmpl)
{
	const size_t off = SW_ETH_HLEN + SW_IP_HLEN + SW_UDP_HLEN + INA_HDR_LEN;
	uint32_t *slots = aligned_alloc(64, (size_t)WINDOW * b->elems * 4);
	if (!slots)
		return 0;
	memset(slots, 0, (size_t)WINDOW * b->elems * 4);
	double hz = (double)rte_get_tsc_hz();
	uint64_t frames = 0, t0 = rte_rdtsc(), t;
	do {
		for (unsigned i = 0; i < WINDOW; i++)
			for (unsigned c = 0; c < b->fan_in; c++)
				ina_k_add_i32(slots + (size_t)i * b->elems,
					      rte_pktmbuf_mtod(tmpl[c * WINDOW + i], const uint8_t *) + off, b->elems);
		frames += (uint64_t)WINDOW * b->fan_in;
		t = rte_rdtsc();
	} while (b->fixed_rounds ? frames < (uint64_t)b->fixed_rounds * WINDOW * b->fan_in
				 : (double)(t - t0) / hz < b->seconds / 2);
	free(slots);
	return (double)(t - t0) / hz * 1e9 / (double)frames;
}

/* One figure: nlanes switches, lane k on lcore k; rates add up. */
static struct figures run(struct bench *b, int nlanes, int serial)
{
	static struct sw_rt rt;
	static struct ina_job_cfg jobs[2];
	static struct lane lanes[2];
	char err[256];
	struct figures fg = { 0 };

	memset(&rt, 0, sizeof(rt));
	rt.cfg.burst = 32;
	rt.cfg.mbufs = 16383;
	const bool one = b->one_switch;
	rt.cfg.nswitches = one ? 1 : nlanes;
	for (int k = 0; k < nlanes; k++) {
		lanes[k] = (struct lane){ .b = b, .k = k, .queue = (uint16_t)(one ? k * LANE_QUEUE_STRIDE : 0) };
		make_rings(&lanes[k], serial, k);
		if (!one)
			make_devs(&lanes[k], 1, serial, NULL);
	}
	struct rte_ring *idle = NULL;
	if (one) {
		char n[32];
		snprintf(n, sizeof(n), "bidle%d", serial);
		if (!(idle = lane_ring(n, 64, b->lane_socket[0]))) {
			fprintf(stderr, "swemu-bench: cannot make rings: %s\n", rte_strerror(rte_errno));
			exit(1);
		}
		make_devs(lanes, nlanes, serial, idle);
	}
	for (int k = 0; k < (int)rt.cfg.nswitches; k++) {
		make_switch(&lanes[k], k, one ? nlanes : 1, &rt.cfg.sw[k], &jobs[k]);
		for (int j = 0; j < nlanes; j++)
			rt.cfg.sw[k].partition_queues[j] = lanes[j].queue;
	}
	rt.cfg_path = "(bench)";
	rt.quit = &never;
	rt.dump_stats = &never;
	if (sw_rt_setup(&rt, err, sizeof(err)) < 0) {
		fprintf(stderr, "swemu-bench: %s\n", err);
		exit(1);
	}
	for (int k = 0; k < nlanes; k++) {
		lanes[k].w = &rt.workers[k]; /* switch (or partition) k on lcore k: worker k */
		for (int p = 0; p < NPORTS; p++)
			rte_eth_dev_get_port_by_name(lanes[k].dev[p], &lanes[k].port_id[p]);
		build_templates(&lanes[k]);
	}
	static struct bench_floor floor;
	if (b->mode >= M_FLOOR_L2) { /* one lane (main) */
		if (bench_floor_init(&floor, b->fan_in, b->elems, WINDOW, b->mode == M_FLOOR_CHECKED, lanes[0].port_id,
				     lanes[0].queue, lanes[0].tmpl) != 0) {
			fprintf(stderr, "swemu-bench: no memory for the floor\n");
			exit(1);
		}
		lanes[0].floor = &floor;
	}
	for (int k = 1; k < nlanes; k++)
		if (rte_eal_remote_launch(drive, &lanes[k], lanes[k].w->lcore) != 0) {
			fprintf(stderr, "swemu-bench: lcore %u does not start\n", lanes[k].w->lcore);
			exit(1);
		}
	drive(&lanes[0]);
	rte_eal_mp_wait_lcore();

	double hz = (double)rte_get_tsc_hz(), in_switch = 0, packets = 0;
	for (int k = 0; k < nlanes; k++) {
		struct lane *l = &lanes[k];
		struct sw_lsw *sw = l->w->sw[0];
		fg.mpps += (double)l->packets / l->t / 1e6;
		packets += (double)l->packets;
		in_switch += (double)l->in_switch / hz * 1e9;
		const struct ina_job_stats *js = ina_job_stats(sw->eng, 1);
		for (int r = 0; r < INA_R_MAX_; r++)
			fg.drops += ina_engine_stats(sw->eng)->drops[r];
		for (int p = 0; p < NPORTS; p++)
			for (int d = 0; d < SW_D_MAX_; d++)
				fg.drops += sw->ports[p].st.drops[d];
		if (b->mode == M_INA && js->completions != (uint64_t)l->rounds * WINDOW)
			fg.drops += 1000000000; /* flagged as wrong below */
		if (b->mode >= M_FLOOR_L2) {
			fg.drops += floor.refused + floor.wrong;
			if (b->ina && floor.completions != (uint64_t)l->rounds * WINDOW)
				fg.drops += 1000000000;
			bench_floor_fini(&floor);
		}
		if (b->mode == M_INA)
			fg.add_ns = bare_add_ns(b, l->tmpl);
		for (unsigned i = 0; i < b->fan_in * WINDOW; i++)
			rte_pktmbuf_free(l->tmpl[i]);
		free(l->tmpl);
	}
	fg.switch_ns = in_switch / packets; /* per packet on its lane's lcore */
	sw_rt_teardown(&rt);
	for (int k = 0; k < nlanes; k++)
		for (int p = 0; p < NPORTS; p++) {
			rte_free(lanes[k].rx[p]);
			rte_free(lanes[k].tx[p]);
		}
	rte_free(idle);
	return fg;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: swemu-bench [-s SECONDS] [-e ELEMS,...] [-n FANIN,...] [-r N] [-w 1|2 [-1]] [-m io|l2|ina] "
		"[-z|-o] [-F] [-H] [-c ROUNDS] [-q|--quick] [-h|--help]\n"
		"  swemu's datapath on in-memory ring ports, one lcore per lane, busy polling:\n"
		"  the bare I/O loop, plain L2 forwarding and INA aggregation of the same frames,\n"
		"  and the bare add of their payloads; the ratios issue 19's goals are set in.\n"
		"  -s S     seconds per figure (default 1)\n"
		"  -w N     lanes: N logical switches, each with its own ports and\n"
		"           generator on its own lcore (1 or 2; default 1); Mpps add up,\n"
		"           sw_ns stays per packet on its lcore\n"
		"  -1       with -w 2: the lanes are the two partitions of one switch\n"
		"           (partitions = 2): its four ports have a queue pair per lane,\n"
		"           and each lane's generator sends only the slots its partition's\n"
		"           UDP ports carry, on its queue (steering by port, as NIC flow\n"
		"           rules would)\n"
		"  -r N     rounds per row, the modes taking turns; medians are shown\n"
		"           (default 1, at most 15)\n"
		"  -e LIST  elements per packet (default 64,256,1024,2048)\n"
		"  -n LIST  fan-in (default 4,32)\n"
		"  -m MODE  io, l2, ina or checked (the checked floor, with -z) only, for\n"
		"           profiling; default io, l2 and ina\n"
		"  -F       also the floors, each under its row: the least work per frame of a\n"
		"           forwarding switch and of an INA switch without and with checks, on the\n"
		"           same ports and frames (needs -z, one lane, no -m)\n"
		"  -H       hugepages (2 MiB, reserved beforehand in /proc/sys/vm/nr_hugepages)\n"
		"           instead of --no-huge\n"
		"  -z       senders leave the UDP checksum 0 (as SwitchML hosts do):\n"
		"           the switch then has nothing to verify\n"
		"  -o       frames arrive marked checksum-good, as from a NIC with RX\n"
		"           checksum offload: the switch trusts the mark\n"
		"  -q       0.2 s per figure\n"
		"  -c N     exactly N rounds of %u slots per figure instead of a time, and no\n"
		"           warm-up: a fixed packet count, for counting instructions per\n"
		"           packet under callgrind (testbed/bench/bench-ipp.sh)\n",
		WINDOW);
}

static int parse_list(const char *s, unsigned *v, int max, unsigned hi)
{
	int n = 0;
	char *end;
	while (*s && n < max) {
		unsigned long x = strtoul(s, &end, 10);
		if (end == s || x == 0 || x > hi || (*end && *end != ','))
			return -1;
		v[n++] = (unsigned)x;
		s = *end ? end + 1 : end;
	}
	return n;
}

int main(int argc, char **argv)
{
	unsigned elems[8] = { 64, 256, 1024, 2048 }, fanins[8] = { 4, 32 };
	int ne = 4, nf = 2, o;
	double seconds = 1;
	int rounds = 1, lanes = 1, fixed = 0;
	int only = -1; /* one mode only (for profiling): enum mode */
	bool zero = false, huge = false, nic = false, one = false, floors = false;
	static const struct option longs[] = { { "help", no_argument, 0, 'h' },
					       { "quick", no_argument, 0, 'q' },
					       { 0, 0, 0, 0 } };
	while ((o = getopt_long(argc, argv, "s:r:w:e:n:m:c:zoFHqh1", longs, NULL)) != -1) {
		switch (o) {
		case 'H': huge = true; break;
		case '1': one = true; break;
		case 'z': zero = true; break;
		case 'F': floors = true; break;
		case 'o': nic = true; break;
		case 'm':
			only = !strcmp(optarg, "l2")	    ? M_L2
			       : !strcmp(optarg, "ina")	    ? M_INA
			       : !strcmp(optarg, "io")	    ? M_IO
			       : !strcmp(optarg, "checked") ? M_FLOOR_CHECKED
							    : -2;
			break;
		case 's': seconds = atof(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'w': lanes = atoi(optarg); break;
		case 'e': ne = parse_list(optarg, elems, 8, INA_MAX_ELEMS); break;
		case 'n': nf = parse_list(optarg, fanins, 8, 250); break;
		case 'q': seconds = 0.2; break;
		case 'c': fixed = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (ne <= 0 || nf <= 0 || seconds <= 0 || seconds > 60 || only < -1 || rounds < 1 || fixed < 0 ||
	    fixed > 1000000 || rounds > MAX_ROUNDS || lanes < 1 || lanes > 2 || (one && lanes != 2) ||
	    (floors && (lanes != 1 || !zero || only >= 0)) || (only == M_FLOOR_CHECKED && (lanes != 1 || !zero))) {
		usage(stderr);
		return 2;
	}
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "--file-prefix=swemu-bench-%d", (int)getpid());
	/* --in-memory: hugepages through memfd, no hugetlbfs mount, no files */
	char *eal[] = { argv[0],
			huge ? "--in-memory" : "--no-huge",
			"-m",
			"1024",
			prefix,
			"--no-pci",
			"-l",
			lanes > 1 ? "0,1" : "0",
			"--log-level=error",
			NULL };
	if (rte_eal_init(9, eal) < 0) {
		fprintf(stderr, "swemu-bench: EAL does not start\n");
		return 1;
	}
	/* on every way out, the error exits included: no runtime directory
	 * left in /var/run/dpdk */
	atexit(sw_eal_cleanup);
	struct bench b = { .zero_csum = zero,
			   .nic_csum = nic,
			   .seconds = seconds,
			   .one_switch = one,
			   .fixed_rounds = (unsigned)fixed };
	for (int k = 0; k < lanes; k++) {
		char n[32];
		snprintf(n, sizeof(n), "bench_gen%d", k);
		b.gen_pool[k] = rte_pktmbuf_pool_create(n, 16383, 256, 0, RTE_PKTMBUF_HEADROOM + 10240, 0);
		b.lane_socket[k] = lane_heap(k);
	}
	if (!b.gen_pool[0] || !b.gen_pool[lanes - 1]) {
		fprintf(stderr, "swemu-bench: no generator pool\n");
		return 1;
	}
	printf("# swemu-bench: swemu datapath, %d ring ports per switch, %d lane(s) (%s + generator per lcore), "
	       "%.1f s per figure\n",
	       NPORTS, lanes, one ? "one switch's partition" : "switch", seconds);
	printf("# same frames forwarded (l2) and aggregated (ina); Gbit/s = gradient bytes in\n");
	printf("# sender UDP checksums: %s; memory: %s\n",
	       zero  ? "0 (none; SwitchML practice)"
	       : nic ? "computed, verified by the (emulated) NIC"
		     : "computed (switch verifies)",
	       huge ? "2 MiB hugepages" : "4 KiB pages (--no-huge)");
	printf("# io: the bare loop (rx burst -> tx burst); l2: the switch forwarding; ina: the switch\n"
	       "# aggregating; add: the bare add of the same payloads into slot memory.  *_ns: ns per\n"
	       "# input frame on the switch's lcore (poll, flush, freeing what went out; the generator's\n"
	       "# copying is a NIC's work and not counted); ina_Gbps: gradient Gbit/s at ina_ns.\n"
	       "# goals (issue 19): g1 = (l2 + add) / ina >= 0.8 at 64-256 elements; g2 = add / ina >= 0.6\n"
	       "# at >= 1024; g3 = l2 / io <= 1.5\n");
	if (floors)
		printf("# floor rows (-F, sw_bench_floor.h): ns per frame of the least forwarding (l2) and of\n"
		       "# the least INA without checks (ina) and with a switch's checks (checked); g1 = (l2 +\n"
		       "# add) / floor ina with this row's swemu l2 and add; g3 = floor l2 / io; x = swemu's\n"
		       "# ina over the checked floor, the median of each round's pair (goal: <= 1.3)\n");
	printf("# %6s %5s | %6s %6s %6s %6s %8s | %5s %5s %5s | %s\n", "elems", "fanin", "io_ns", "l2_ns", "ina_ns",
	       "add_ns", "ina_Gbps", "g1", "g2", "g3", "check");
	int serial = 0, bad = 0;
	for (int f = 0; f < nf; f++)
		for (int e = 0; e < ne; e++) {
			b.fan_in = fanins[f];
			b.elems = elems[e];
			double ns[M_MODES_][MAX_ROUNDS], add[MAX_ROUNDS];
			const int nmodes = floors || only >= M_FLOOR_L2 ? M_MODES_ : M_FLOOR_L2;
			uint64_t drops = 0;
			/* the modes take turns, so a slow spell of the machine hits all */
			for (int r = 0; r < rounds; r++) {
				for (int k = 0; k < nmodes; k++) {
					b.mode = (enum mode)((r + k) % nmodes);
					b.ina = b.mode == M_INA || b.mode == M_FLOOR_INA || b.mode == M_FLOOR_CHECKED;
					ns[b.mode][r] = 0;
					if (only >= 0 && only != (int)b.mode)
						continue;
					struct figures x = run(&b, lanes, serial++);
					ns[b.mode][r] = x.switch_ns;
					if (b.mode == M_INA)
						add[r] = x.add_ns;
					drops += x.drops;
				}
			}
			/* swemu's time over the checked floor's, round by round
			 * (before the medians sort the rounds): a pair shares the
			 * machine's spell, where medians of each apart may not */
			double x[MAX_ROUNDS];
			for (int r = 0; r < rounds; r++)
				x[r] = floors ? ns[M_INA][r] / ns[M_FLOOR_CHECKED][r] : 0;
			double io = bench_median(ns[M_IO], rounds), l2 = bench_median(ns[M_L2], rounds),
			       ina = bench_median(ns[M_INA], rounds),
			       ad = only < 0 || only == M_INA ? bench_median(add, rounds) : 0;
			bad += drops != 0;
			printf("  %6u %5u | %6.1f %6.1f %6.1f %6.1f %8.1f | %5.2f %5.2f %5.2f | %s\n", b.elems,
			       b.fan_in, io, l2, ina, ad, ina > 0 ? b.elems * 32.0 / ina : 0,
			       ina > 0 ? (l2 + ad) / ina : 0, ina > 0 ? ad / ina : 0, io > 0 ? l2 / io : 0,
			       drops ? "DROPS" : "ok");
			if (only == M_FLOOR_CHECKED)
				printf("  %12s | checked %5.1f\n", "floor", bench_median(ns[M_FLOOR_CHECKED], rounds));
			if (floors) {
				double fl2 = bench_median(ns[M_FLOOR_L2], rounds),
				       fina = bench_median(ns[M_FLOOR_INA], rounds),
				       fchk = bench_median(ns[M_FLOOR_CHECKED], rounds);
				printf("  %12s | l2 %5.1f  ina %5.1f  checked %5.1f | g1 %4.2f  checked %4.2f | g3 "
				       "%4.2f | x %4.2f\n",
				       "floor", fl2, fina, fchk, (l2 + ad) / fina, (l2 + ad) / fchk, fl2 / io,
				       bench_median(x, rounds));
			}
			fflush(stdout);
		}
	return bad ? 1 : 0;
}
