/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu's run-time state: the fabric of logical switches built from the
 * config, their ports, and the counters.  Each logical switch belongs to
 * one lcore (a worker), which alone changes it; other lcores reach it only
 * through its link queues; the control thread only through the requests
 * it is handed (and the replay window it alone keeps), and it and the
 * telemetry thread otherwise only read counters. */
#ifndef SW_RT_H
#define SW_RT_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_cycles.h>

#include "ina_engine.h"
#include "sw_cfg.h"
#include "sw_netem.h"
#include "sw_fdb.h"
#include "sw_neigh.h"

_Static_assert(SW_MAX_PORTS <= SW_FDB_MAX_PORTS, "the FDB counts learned MACs of every port");
#include "sw_frame.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;
struct rte_eth_dev_tx_buffer;

/* Every reason swemu drops a packet outside the engine (the engine counts
 * its own, per reason and per job).  Names: sw_drop_name(). */
enum sw_drop {
	SW_D_RUNT,	       /* shorter than an Ethernet header */
	SW_D_MULTI_SEGMENT,    /* chained frame longer than one mbuf */
	SW_D_SAME_PORT,	       /* destination learned on the ingress port */
	SW_D_TX_FULL,	       /* device queue (or link queue) full: what a burst could not place */
	SW_D_EMULATED_LOSS,    /* link emulation: random or bursty loss */
	SW_D_BUFFER_OVERFLOW,  /* link emulation: tail drop */
	SW_D_EMULATOR_FULL,    /* link emulation: more in flight than it holds */
	SW_D_NO_MBUF,	       /* mempool empty when building a packet */
	SW_D_NO_NEIGHBOR,      /* no MAC known for an emit's destination */
	SW_D_TO_SWITCH,	       /* for the switch's address, but neither ARP, INA nor control */
	SW_D_INA_OFF,	       /* INA packet to a switch with INA off */
	SW_D_CTRL_DENIED,      /* control message from a source not in mgmt */
	SW_D_CTRL_BAD,	       /* control message that could not be applied */
	SW_D_CTRL_AUTH,	       /* control message unsigned, wrongly signed, stale or replayed */
	SW_D_CTRL_RATE,	       /* control message over its source's rate */
	SW_D_CTRL_BUSY,	       /* control message while SW_CTRL_QUEUE of the switch's are in hand */
	SW_D_VLAN_NOT_ALLOWED, /* 802.1Q tag of a VLAN the trunk port does not carry */
	SW_D_UNTAGGED,	       /* untagged frame on a trunk port without a native VLAN */
	SW_D_TAGGED_ON_ACCESS, /* a VLAN tag on an access port: would hop VLANs at a trunk */
	SW_D_QINQ,	       /* stacked or 802.1ad tags: only one 802.1Q tag is switched */
	SW_D_CLAIMS_SWITCH,    /* ARP for the switch's IP from another MAC, or a frame from its MAC */
	SW_D_OVER_MTU,	       /* a datagram to the switch larger than the ports' MTU */
	SW_D_SOURCE_GUARD,     /* INA from a member's IP, but not its bound MAC, port or VLAN */
	SW_D_MAC_LIMIT,	       /* a new source MAC on a port that learned fdb_port_limit already */
	SW_D_BEFORE_START,     /* in the device's queue when the switch began: see sw_dp_run */
	SW_D_MISSTEERED,       /* to the switch on a partition's queue that does not own its UDP port */
	SW_D_FRAME_BASE,       /* + enum sw_frame_err: malformed IPv4/UDP to the switch */
	SW_D_MAX_ = SW_D_FRAME_BASE + SW_FRAME_ERR_MAX_,
};
const char *sw_drop_name(unsigned d);

struct sw_port_stats {
	uint64_t rx_packets, rx_bytes;
	uint64_t tx_packets, tx_bytes;
	uint64_t ecn_marks; /* frames its emulated queue marked CE (not drops) */
	uint64_t drops[SW_D_MAX_];
};

struct sw_lsw;

/* A source MAC a port learned in second s (direct-mapped: sw_mac_bucket). */
#define SW_SRC_SEEN 64 /* a power of two */
struct sw_src_seen {
	uint64_t key; /* sw_src_key: a trunk host has one MAC in several VLANs */
	uint32_t s;
};

static inline uint64_t sw_src_key(uint64_t mac, uint16_t vlan) { return mac | (uint64_t)vlan << 48; }

/* A destination's output port as the FDB answered under stamp (0: none;
 * a look-up changes answer only when an entry changes or the second
 * turns), direct-mapped as sw_src_seen. */
#define SW_DST_SEEN 64 /* a power of two */
struct sw_dst_seen {
	uint64_t mac; /* sw_mac64 */
	uint64_t stamp;
	int64_t port; /* 32 bytes: an index is a shift */
	uint64_t unused;
};

/* The MAC's last byte (on a little-endian host): it differs between a
 * rack's hosts, whether their addresses run in sequence or at random. */
static inline unsigned sw_mac_bucket(uint64_t mac, unsigned size) { return (unsigned)(mac >> 40) & (size - 1); }

/* A forwarded flow: frames whose first 14 bytes (destination, source,
 * EtherType) are an entry's leave by its port with nothing else looked up.
 * The frame that made it passed every check of the staged path (source
 * learned here this second, unicast, IPv4 or IPv6, not for the switch, an
 * FDB answer other than the input port); the stamp (second, FDB changes)
 * ends the entry when any of them could answer otherwise.  head is bytes
 * 0-7 of the frame, tail bytes 6-13: two loads cover the 14. */
#define SW_FLOW_SEEN 64 /* a power of two */
struct sw_flow_seen {
	uint64_t head, tail;
	uint64_t stamp; /* 0: none */
	uint64_t port;	/* 32 bytes: an index is a shift */
};

static inline unsigned sw_flow_bucket(uint64_t head, uint64_t tail)
{
	/* the destination's last byte, and the source's shifted by 3, so that
	 * host c to c + 1 in sequence does not pile into one bucket (on a
	 * big-endian host other bytes: any mix of the header does) */
	return (unsigned)((head >> 40) ^ (tail >> 37)) & (SW_FLOW_SEEN - 1);
}

/* An INA member (address, MAC, VLAN) bound to a port, under stamp;
 * direct-mapped by the address's last octet.  Beside it, the headers its
 * frames repeat (sw_dp.c, member_frame; read on access ports only): bytes
 * 0-55 of its last frame that passed every check of the switch's endpoint
 * and that the engine calls a member's (ina_engine_member_kind), under
 * sw_dp.c's member_mask, kept while head_stamp (sw_tables_stamp) holds. */
#define SW_MEMBER_SEEN	 64 /* a power of two */
/* Bytes 0-55 as four 16-byte chunks, at 0, 16, 32 and 40 (40-47 twice):
 * compared as vectors (SSE2 on any x86-64; GCC's vector types elsewhere),
 * 6 instructions a frame fewer than seven 8-byte words. */
#define SW_MEMBER_CHUNKS 4
typedef uint64_t sw_u64x2 __attribute__((vector_size(16)));
struct sw_member_seen {
	uint64_t mac_vlan; /* sw_src_key */
	uint64_t stamp;	   /* 0: none */
	uint32_t ip;
	uint64_t head_stamp; /* 0: none */
	sw_u64x2 head[SW_MEMBER_CHUNKS];
};

struct sw_port {
	struct sw_lsw *sw;
	int index;
	const struct sw_port_cfg *cfg;
	bool ext;	      /* a DPDK device, else an in-memory link */
	bool tx_multi_seg;    /* the device sends chained mbufs */
	bool rx_csum_offload; /* the device verifies IPv4 and UDP checksums */
	bool owns_dev;	      /* it started the device and closes it (ext) */
	uint16_t dev;	      /* DPDK port id (ext) */
	uint16_t queue;	      /* its receive and transmit queue: the switch partition's */
	const char *dev_name; /* the device's name (ext): the port's, or the partition's own */
	/* link ports: the peer port, in each partition of its switch */
	struct sw_port *peer[SW_MAX_PARTITIONS];
	unsigned npeer;
	/* link ports: frames the peer sent us, drained by the poll loop like a
	 * device queue (no recursion between switches); one consumer (ours),
	 * one producer or, when the peer is partitioned, several */
	struct rte_ring *lq;
	struct rte_eth_dev_tx_buffer *txb;
	struct sw_netem netem; /* egress emulation */
	/* partition 0's port of a partitioned switch: the line every
	 * partition's emulator shares, on a cache line of its own */
	uint64_t *wire_ns;
	/* trunk ports: the tagged VLANs as a 4096-bit set; NULL: an access
	 * port, which then carries no 512-byte bitmap */
	uint64_t *tagged;
	/* sources learned here this second: their frames skip the FDB (it
	 * refreshes an entry at most once a second, and refuses a second
	 * move in one second anyway); several hosts behind one port each
	 * keep theirs */
	struct sw_src_seen src_seen[SW_SRC_SEEN];
	/* destinations forwarded from here (access ports): FDB answers */
	struct sw_dst_seen dst_seen[SW_DST_SEEN];
	/* flows forwarded from here (access ports): the whole decision */
	struct sw_flow_seen flow_seen[SW_FLOW_SEEN];
	/* members whose INA this port carried, bound here under the stamp
	 * (second, bindings made): their neighbour entries need no look-up
	 * (a live binding never moves, see sw_neigh.h) */
	struct sw_member_seen member_seen[SW_MEMBER_SEEN];
	struct sw_port_stats st;
};

static inline struct sw_src_seen *sw_src_seen_of(struct sw_port *p, uint64_t mac)
{
	return &p->src_seen[sw_mac_bucket(mac, SW_SRC_SEEN)];
}

static inline struct sw_member_seen *sw_member_seen_of(struct sw_port *p, uint32_t ip)
{
	return &p->member_seen[(ip >> 24 ^ ip) & (SW_MEMBER_SEEN - 1)]; /* the last octet in either byte order */
}

/* Whether frames of this VLAN leave (and may enter) port p. */
static inline bool sw_port_carries(const struct sw_port *p, uint16_t vlan)
{
	return p->cfg->vlan == vlan || (p->tagged && (p->tagged[vlan >> 6] >> (vlan & 63) & 1));
}

/* Every port's MTU: IPv4 bytes in one frame. */
#define SW_MTU 9000

struct sw_lsw_stats {
	uint64_t flooded; /* frames sent to every other port */
	uint64_t arp_replies;
	uint64_t ina_packets; /* handed to the engine */
	uint64_t ina_repeats; /* ... of which: with a member's checked headers (sw_dp.c, member_frame) */
	uint64_t ina_emits;   /* packets built from emits */
	uint64_t ina_nacks;   /* NACKs sent for DATA to a job the switch does not have */
	uint64_t ctrl_ok;
	uint64_t ctrl_refused;	 /* valid commands answered with a refusal */
	uint64_t ctrl_not_owner; /* ... of which: remove or install over another owner's job */
};

/* Control commands a switch's lcore hands to the control thread at most. */
#define SW_CTRL_QUEUE 16

/* A control datagram's trip: the lcore fills the request part and hands it
 * to the control thread, which authenticates and parses it (libconfig,
 * malloc: never between two packets) and hands it back with a command to
 * apply or an answer; the lcore applies it, answers, and keeps it for the
 * next datagram. */
struct sw_ctrl_req {
	/* the lcore's: where it came from, what it says */
	struct sw_port *in;
	uint16_t vlan;
	uint16_t src_port, dst_port; /* network order */
	uint32_t src_ip;
	uint8_t src_mac[6];
	uint16_t len;
	char text[SW_MTU - 28];
	/* the control thread's: SW_D_CTRL_AUTH or SW_D_CTRL_BAD with the
	 * answer, or 0 and the command (with an emu command's port index) */
	int drop;
	int port;
	struct ctl_cmd cmd;
	char answer[320];
};

/* Where results to one destination go, resolved once: the FDB's or the
 * neighbour table's answer and the headers a frame to it starts with.  Good
 * for the second it was made in while neither table changed, as sw_input's
 * last_src is (sw_result.c).  The key and validity are three words, so a
 * hit costs three compares. */
struct sw_dst {
	uint64_t key;	    /* an emit's destination ip | port << 32 (the source port: per frame) */
	uint64_t mac_vlan;  /* its MAC (zero: from the neighbour table) | the trigger's VLAN << 48 */
	uint64_t stamp;	    /* sw_result.c's dst_stamp when made; 0: empty */
	uint16_t out, vlan; /* the port it leaves by, in this VLAN */
	uint32_t ip_sum;    /* sw_frame_udp_template */
	uint16_t ulen;	    /* the UDP length prefix[] is completed for; 0: none yet */
	uint8_t prefix[SW_UDP_PREFIX_LEN];
};
#define SW_DST_CACHE 64 /* a power of two; a job's members and peers */

/* A destination's entry (ip and port in network order): the address's last
 * octet in either byte order, mixed with the port's bytes, so a rack's
 * members, numbered in sequence, get one each.  A multiplicative hash of the
 * network-order word kept only its top bits, where the last octet barely
 * reaches: with 32 members a quarter of the result frames missed and
 * resolved their headers again. */
static inline unsigned sw_dst_slot(uint32_t ip, uint16_t port)
{
	return (ip >> 24 ^ ip ^ (uint32_t)(port >> 8 ^ port)) & (SW_DST_CACHE - 1);
}

/* A multicast's frames to one job's members, worked out once from the
 * destination cache (sw_result.c): per member but the upstream, its
 * headers completed for the group's UDP length and the port it leaves by,
 * every one a device port that takes the frame as it is.  Good while the
 * stamp, the trigger's VLAN, the length and the switch's plan_gen (link
 * emulation set, a job installed or removed) are those it was made for. */
#define SW_PLAN_MEMBERS 64
#define SW_PLANS	4 /* per switch, by job */
struct sw_plan_member {
	uint8_t prefix[SW_UDP_PREFIX_LEN];
	uint16_t k; /* its index among the job's contributors */
	struct sw_port *p;
};
struct sw_plan {
	const struct ina_job_cfg *job; /* NULL: none */
	uint64_t stamp;
	uint32_t gen;
	uint16_t vlan, ulen;
	bool shared; /* for a payload chained to every frame */
	bool ok;     /* false: a member goes another way (kept so as not to try again) */
	uint16_t n;
	struct sw_plan_member m[SW_PLAN_MEMBERS];
};

struct sw_lsw {
	int index;
	const struct sw_switch_cfg *cfg;
	/* partition part of cfg->partitions (0: the whole switch, or the one
	 * that owns the devices and the control channel); parts[] on partition
	 * 0 only.  name: the config's, "name/part" for part > 0 */
	int part;
	struct sw_lsw *parts[SW_MAX_PARTITIONS];
	char name[SW_NAME_LEN + 8];
	unsigned lcore; /* the lcore that runs it (sw_setup.c) */
	/* sw_parts.c: partition 0's request that this one stand still (0:
	 * none), this one's echo of it while it does, partition 0's count */
	uint32_t hold, held, hold_seq;
	int nports;
	struct sw_port ports[SW_MAX_PORTS];
	struct sw_fdb fdb;
	struct sw_neigh neigh;
	int vlans;		/* distinct VLANs among the ports */
	struct ina_engine *eng; /* NULL when INA is off */
	/* the engine's count of jobs installed and removed (in the tables'
	 * stamp), or no_jobs without an engine */
	const uint32_t *jobs_changes;
	uint32_t no_jobs;
	struct ina_emits *emits;
	struct sw_dst dst_cache[SW_DST_CACHE];
	struct sw_plan *plans; /* SW_PLANS (INA switches) */
	uint32_t plan_gen;
	/* control commands: SW_CTRL_QUEUE requests, those not in flight on
	 * the lcore's stack; to the control thread and back by SP/SC rings */
	struct sw_ctrl_req *ctrl_reqs;
	struct sw_ctrl_req *ctrl_idle[SW_CTRL_QUEUE];
	unsigned ctrl_nidle;
	struct rte_ring *ctrl_in, *ctrl_out;
	struct ctl_auth_seen ctrl_seen; /* the control thread's: signatures taken, no replay */
	/* per mgmt source: commands it may still send now (token bucket) */
	struct {
		double tokens;
		uint64_t at_ns;
	} ctrl_bucket[SW_MAX_MGMT];
	/* INA frames read and done with: freed in bulk after the burst */
	unsigned nspent;
	struct rte_mbuf *spent[64];
	/* the owning lcore's clock, read at the top of each pass */
	uint64_t now_ns;
	uint32_t now_s;
	struct sw_lsw_stats st;
	struct sw_capture cap; /* f NULL: not capturing */
};

/* Changes with the second and with a change of the FDB, the neighbour
 * table or the engine's jobs (all only count up): what was looked up under
 * another stamp is looked up again.  Never 0. */
static inline uint64_t sw_tables_stamp(const struct sw_lsw *sw)
{
	return (uint64_t)(sw->now_s + 1) << 32 | (uint32_t)(sw->fdb.changes + sw->neigh.changes + *sw->jobs_changes);
}

/* One lcore's share of the fabric: whole logical switches (their ports,
 * FDB, engine, emulators), so nothing but link queues is shared. */
struct sw_worker {
	struct sw_rt *rt;
	unsigned lcore;
	int nsw;
	struct sw_lsw *sw[SW_MAX_SWITCHES]; /* whole switches or partitions, one per switch */
	uint64_t loops, idle_sleeps;
	uint64_t sleep_floor_ns; /* sw_loop.c: from the fastest rate-limited port */
	/* the loop's time (ns) in passes that found work, waiting for the CPU
	 * in idle passes (sw_loop.c), and since it started: (busy + stalled) /
	 * run near 1 is an lcore that cannot keep up, the share a trial reads
	 * around each run (docs/SWEMU.md, "Lcores") */
	uint64_t busy_ns, stalled_ns, start_ns, now_ns;
};

struct sw_rt {
	struct sw_cfg cfg;
	const char *cfg_path;
	int nsw; /* the config's switches, then their partitions past the first */
	struct sw_lsw *sw[SW_MAX_SWITCHES * SW_MAX_PARTITIONS];
	struct rte_mempool *pool;
	struct rte_mempool *xdp_pool;	 /* af_xdp receive buffers: a page each */
	struct rte_mempool *small_pool;	 /* header mbufs chained to a shared payload */
	struct rte_mempool *result_pool; /* result frames with a short payload copied in */
	struct rte_mempool *held_pool;	 /* long sums, written there by the engine (sw_result_sink) */
	double ns_per_tsc;
	volatile sig_atomic_t *quit;
	volatile sig_atomic_t *dump_stats;
	/* the control thread (sw_ctrl_start): woken by ctrl_wake, an
	 * eventfd the lcores and the signal handler write */
	int ctrl_wake;
	bool ctrl_running;
	volatile int ctrl_stop;
	pthread_t ctrl_thread;
	int nworkers;							   /* workers[0] runs on the main lcore */
	struct sw_worker workers[SW_MAX_SWITCHES * SW_MAX_PARTITIONS + 1]; /* + the main lcore without switches */
};

/* Payloads up to this are copied into each result frame (from result_pool);
 * longer ones are shared by a multicast's frames. */
#define SW_SHARE_MIN	    512
#define SW_RESULT_MBUF_DATA (RTE_PKTMBUF_HEADROOM + 128 + SW_SHARE_MIN)

/* sw_setup.c: builds the fabric (mempool, ports, engines, static FDB, jobs).
 * 0, or a negative errno with why in err, everything made so far released:
 * -ENODEV (a device the config names does not exist) and -EINVAL (an lcore
 * it names is not EAL's, a job it lists does not fit) are the config's
 * mistakes; -ENOMEM and -EIO the machine's. */
int sw_rt_setup(struct sw_rt *rt, char *err, size_t errlen);
void sw_rt_teardown(struct sw_rt *rt);
/* rte_eal_cleanup, then removes the runtime directory EAL leaves behind. */
void sw_eal_cleanup(void);

/* sw_out.c: an mbuf of the main pool, or NULL with no_mbuf counted at blame. */
struct rte_mbuf *sw_new_mbuf(struct sw_rt *rt, struct sw_port *blame);
/* sw_out.c: L2 forwarding of m to dst within vlan: the FDB's port, or a
 * flood; in is the port it came in on, NULL for a frame of the switch's own. */
void sw_forward_l2(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t vlan, struct rte_mbuf *m,
		   const uint8_t *dst);

/* sw_result.c: the engine's emits (sw->emits, at least one) as frames from
 * the switch's address, src_port its INA port that the trigger came to,
 * under stamp (sw_tables_stamp, as it is now); a
 * NACK to the sender of a DATA for a job the switch does not have; and the
 * engine's result sink on held_pool (NULL fields: no such pool). */
struct ina_result_sink sw_result_sink(struct sw_rt *rt);
void sw_send_emits(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t in_vlan, uint16_t src_port,
		   uint64_t stamp);
void sw_send_nack(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t vlan, const struct sw_udp_view *v);

/* sw_loop.c: the poll loops, one per worker lcore (the main lcore runs
 * workers[0]); returns when *rt->quit is set. */
void sw_dp_run(struct sw_rt *rt);
/* sw_dp.c: one pass over every switch on the calling lcore (the loops,
 * benchmarks and tests drive this); returns packets handled. */
unsigned sw_dp_poll(struct sw_rt *rt, uint64_t *next_due);
/* Pushes buffered frames to the devices. */
void sw_dp_flush(struct sw_rt *rt);
/* The same for one worker's switches, on that worker's lcore (benchmarks
 * that drive several lcores). */
unsigned sw_dp_poll_worker(struct sw_worker *w, uint64_t *next_due);
void sw_dp_flush_worker(struct sw_worker *w);
/* The datapath's clock: the TSC in ns. */
static inline uint64_t sw_clock_ns(const struct sw_rt *rt) { return (uint64_t)((double)rte_rdtsc() * rt->ns_per_tsc); }
/* sw_out.c: egress through p's link emulation onto its device or link; on
 * a trunk port a frame of a tagged VLAN gets its 802.1Q tag. */
void sw_send_port(struct sw_rt *rt, struct sw_port *p, struct rte_mbuf *m, uint16_t vlan);
/* Counts a device's unsent packets as tx_full drops. */
void sw_port_tx_callback_init(struct sw_port *p);

/* sw_ctrl_lcore.c, on the switch's lcore: a datagram to the switch's
 * control port (filtered by source and rate, then queued for the control
 * thread), and the commands the control thread parsed (applied and
 * answered).  Ids an install of id "auto" gets start at SW_AUTO_JOB_MIN
 * (below it: ids people and files choose). */
#define SW_AUTO_JOB_MIN 32768
void sw_ctrl_submit(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t vlan,
		    const struct sw_udp_view *v);
void sw_ctrl_apply(struct sw_rt *rt, struct sw_lsw *sw);

/* sw_parts.c, on a partitioned switch: partition 0's lcore holds the
 * partitions on other lcores still (false: one did not stop in time, none
 * is held) while it changes every partition's jobs, then releases them;
 * a held partition waits in stand_still, called at its flush. */
#define SW_HOLD_WAIT_MS 200 /* longer than a worker's flush interval and idle sleep together */
bool sw_parts_hold(struct sw_lsw *sw0);
void sw_parts_release(struct sw_lsw *sw0);
void sw_parts_stand_still(struct sw_lsw *p);

/* sw_ctrl.c: the control thread, which parses commands and writes the
 * stats file (every stats_interval_ms and on *rt->dump_stats).  Start:
 * 0, or -1 with why in err; stop joins it (a no-op when not started). */
int sw_ctrl_start(struct sw_rt *rt, char *err, size_t errlen);
void sw_ctrl_stop(struct sw_rt *rt);

/* sw_stats.c */
char *sw_stats_json(const struct sw_rt *rt); /* malloc'd, caller frees */
int sw_stats_write(const struct sw_rt *rt, const char *path);
/* Writes the configured stats files: the Prometheus one first, so that a
 * reader that waits for the JSON finds both. */
void sw_stats_dump(const struct sw_rt *rt);
/* sw_prom.c: the counters in Prometheus' text format, to path (atomically);
 * 0 or -1. */
int sw_prom_write(const struct sw_rt *rt, const char *path);
int sw_telemetry_register(struct sw_rt *rt);

#endif
