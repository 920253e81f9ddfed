/* SPDX-License-Identifier: BSD-3-Clause */
/* hcl: the host collective library — public C API.
 *
 *   struct hcl_comm *c;
 *   struct hcl_comm_cfg cfg = HCL_COMM_CFG_ENV;   // RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
 *   if (hcl_comm_create(&cfg, &c, err, sizeof(err)) < 0) ...
 *   if (hcl_allreduce(send, recv, count, HCL_FP32, HCL_SUM, c) < 0)
 *           fprintf(stderr, "%s\n", hcl_comm_error(c));
 *   hcl_comm_destroy(c);
 *
 * Functions return 0 or a negative errno; the message (naming the peer
 * when one is at fault) is in err or hcl_comm_error().  Every call has a
 * deadline (cfg.timeout_ms): a dead peer gives an error, never a hang. */
#ifndef HCL_H
#define HCL_H

#include <stddef.h>
#include <stdint.h>

/* HCL_BF16: bfloat16 elements (uint16_t bit patterns).  Every algorithm
 * sums them in binary32 and rounds once, to nearest even, at the end; on
 * the network they travel as fp32 (or BFP32), as SwitchML hosts turn
 * 16-bit gradients into 32-bit words for the switch. */
enum hcl_dtype { HCL_INT32 = 1, HCL_FP32 = 2, HCL_BF16 = 3 };

/* HCL_AVG: the sum divided by the world size (int32: toward zero). */
enum hcl_op { HCL_SUM = 1, HCL_AVG = 2 };

enum hcl_algo {
	HCL_ALGO_RING = 1,
	HCL_ALGO_HIER,	     /* two levels: in each rack, then each shard across racks (needs racks) */
	HCL_ALGO_PS,	     /* software parameter server on rank 0 (HCL_PS_PORT, 48870), or in shards */
	HCL_ALGO_PS_INA,     /* through the racks' INA switches; racks without one use the software PS */
	HCL_ALGO_AGENT_RING, /* racks behind INA ToRs as ring members (docs/AGENTRING.md) */
};

struct hcl_comm_cfg {
	int rank, world;	 /* -1: from RANK / WORLD_SIZE */
	const char *master_addr; /* NULL: from MASTER_ADDR */
	int master_port;	 /* 0: from MASTER_PORT */
	const char *data_addr;	 /* this rank's data IPv4 address; NULL: HCL_DATA_ADDR, else the
				   * address this host uses to reach the master */
	uint16_t data_port;	 /* 0: any free port */
	enum hcl_algo algo;	 /* 0: ring */
	int rack;		 /* this rank's rack id for hier; -1: HCL_RACK, else 0 */
	int64_t timeout_ms;	 /* deadline of each call, rendezvous included; 0: 30000 */
	/* ps-ina: the switch job this rank contributes to as index `rank`.
	 * NULL/0: HCL_INA_SWITCH ("ip" or "ip:port"), HCL_INA_JOB (first job id; "auto":
	 * a random one from the rendezvous), HCL_INA_SLOTS (8),
	 * HCL_INA_ELEMS (2048; a packet must fit the MTU), HCL_INA_PORT (48864: this rank's INA port, as
	 * listed in the job). */
	const char *ina_switch;
	int ina_job, ina_slots, ina_elems, ina_port;
	/* The float job of ps, ps-ina and agent-ring: 1 = block floating point
	 * over an int32 switch job (what a switch without floating point can
	 * add; agent-ring takes it as 2), 2 = native fp32 in the switch, 3 =
	 * bf16 on the wire (fp32 calls rounded to bf16 first, bf16 calls as
	 * they are: half the bytes); 0: HCL_INA_FP32 ("bfp", "native" or
	 * "bf16"), else native. */
	int ina_bfp;
	/* A host file (ring/hcl_hostfile.h: master_port and a list of ranks
	 * with addr, rack, ina_switch) instead of WORLD_SIZE/MASTER_ADDR/
	 * MASTER_PORT; NULL: HCL_HOSTFILE, else the environment.  The rank
	 * still comes from cfg.rank or RANK. */
	const char *hostfile;
	/* Synchronisation visibility and pacing (docs/PACING.md).  pace: 1 on,
	 * -1 off, 0: HCL_PACE ("1"/"on"); its parameters from HCL_PACE_THRESHOLD_US,
	 * HCL_PACE_REL_THRESHOLD, HCL_PACE_FRACTION, HCL_PACE_MAX_US, HCL_PACE_WINDOW.  trace_dir: write
	 * one JSON line per call and iteration to DIR/rank<r>.jsonl; NULL:
	 * HCL_TRACE.  Either one makes every call send a 20-byte note to every
	 * other rank (no extra round trip); with neither, the calls are untouched. */
	int pace;
	const char *trace_dir;
	/* ring: calls of at least 2 MiB are split over this many rings, each
	 * on its own socket and thread, at least 1 MiB each (docs/HOSTLIB.md,
	 * "Ring channels": faster on rate-limited links, slower where the CPU
	 * is the bound); 1..4, the same on every rank; 0: HCL_RING_CHANNELS
	 * (1..4 or "auto"), else auto: as many as the hosts' cores allow, each
	 * rank's CPUs shared among the ranks on its machine, the fewest of any
	 * rank, at most 4 (every rank computes the same from the rendezvous). */
	int ring_channels;
	/* ps, ps-ina: the software parameter server cut into this many shards
	 * (BytePS-style), shard h on rank h * world / shards with port
	 * HCL_PS_PORT + h, each INA ToR feeding every shard; 1..1024 and at
	 * most the world size, the same on every rank; 0: HCL_PS_SHARDS, else 1
	 * (one PS on rank 0, ATP's fallback as published). */
	int ps_shards;
};

#define HCL_COMM_CFG_ENV                            \
	{                                           \
		.rank = -1, .world = -1, .rack = -1 \
	}

/* sizeof(struct hcl_comm_cfg) in this library: a binding that mirrors the
 * struct (ring/hcl.py) checks its copy against it. */
size_t hcl_comm_cfg_size(void);

/* "ring", "hier", "ps", "ps-ina", "agent-ring"; NULL for an unknown id. */
const char *hcl_algo_name(enum hcl_algo a);
/* The id of such a name: 0, or -EINVAL. */
int hcl_algo_from_name(const char *name, enum hcl_algo *a);

struct hcl_comm;

int hcl_comm_create(const struct hcl_comm_cfg *cfg, struct hcl_comm **out, char *err, size_t errlen);
void hcl_comm_destroy(struct hcl_comm *c);

int hcl_comm_rank(const struct hcl_comm *c);
int hcl_comm_world(const struct hcl_comm *c);
/* The algorithm the communicator runs (cfg.algo, else HCL_ALGO, else ring). */
enum hcl_algo hcl_comm_algo(const struct hcl_comm *c);
const char *hcl_comm_error(const struct hcl_comm *c);

/* recv = sum (or average) over ranks of send; send == recv is in place. */
int hcl_allreduce(const void *send, void *recv, size_t count, enum hcl_dtype dtype, enum hcl_op op, struct hcl_comm *c);

/* Optional iteration marks for the timing layer: without them every call
 * ends an iteration (compute = the time since the previous call ended). */
void hcl_iter_begin(struct hcl_comm *c);
void hcl_iter_end(struct hcl_comm *c);

struct hcl_sync_summary {
	unsigned long iterations, calls, paced_calls;
	unsigned long incomplete_calls;				/* a note was missing: not measured, not paced on */
	double iter_mean_us, iter_p50_us, iter_p99_us, iter_cv; /* cv = stddev / mean */
	/* shares of the iterations' time (they add up to 1) */
	double compute_share, delay_share, wait_share, comm_share;
	double spread_mean_us; /* mean max - min arrival over the calls */
	double layer_share;    /* of the iterations' time spent in the layer itself (notes; delays excluded) */
};
/* -ENODATA when neither pacing nor tracing is on. */
int hcl_comm_sync_summary(const struct hcl_comm *c, struct hcl_sync_summary *out);

/* What this rank's side of the network saw since the communicator began:
 * its reliable transfer, its INA client (ps, ps-ina, agent-ring) and the
 * software aggregator it hosts, if any (a PS shard, a ring member). */
#define HCL_DROP_REASONS 32 /* room for the aggregators' reasons (nic/ina_proto.h) */

struct hcl_comm_stats {
	unsigned long long xfer_sent, xfer_resent, xfer_timeouts;
	/* how the transfer went: sends handed to the kernel (each a run of up
	 * to 64 KB or one datagram), runs received coalesced, ACKs sent, halvings of the
	 * congestion window, waits for this host's own queue, and WAITs heard
	 * from a receiver not yet at the exchange */
	unsigned long long xfer_sends, xfer_rx_runs, xfer_acks, xfer_halved, xfer_local_waits, xfer_peer_waits;
	unsigned long long ina_sent, ina_resent, ina_results;
	unsigned long long ina_marked; /* answers a queue marked (ECN CE): HCL_INA_CC's signal */
	unsigned long long ina_stale;  /* answers that matched nothing in flight (duplicates, late) */
	unsigned long long agg_packets, agg_accepted;
	unsigned long long agg_dropped; /* refused by the software aggregator, every reason */
	/* calls finished on the software ring because an INA aggregator was
	 * lost mid-job (HCL_INA_LOST_MS); from the first, every call is */
	unsigned long long ina_fallback_calls;
	/* agg_dropped by reason: agg_drops[r] for the reason hcl_drop_reason(r) names */
	unsigned long long agg_drops[HCL_DROP_REASONS];
};
int hcl_comm_stats(const struct hcl_comm *c, struct hcl_comm_stats *out);
/* The name of a software aggregator's drop reason r (swemu's counter
 * names: "duplicate", "stale", ...), or NULL past the last one. */
const char *hcl_drop_reason(unsigned r);

#endif
