/* SPDX-License-Identifier: BSD-3-Clause */
/* The slot-based aggregation engine: pure C, no DPDK, no sockets.  A parsed
 * packet goes in; a list of emits (header + payload + destination) comes
 * out.  swemu wraps it with mbufs, the host library with UDP sockets, the
 * tests drive it directly.  Semantics: docs/ENGINE.md. */
#ifndef INA_ENGINE_H
#define INA_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <arpa/inet.h>

#include "ina_proto.h"

#define INA_MAX_FANIN	 256
/* Job entries per engine: a ToR serving a PS sharded over every host of
 * 1024 holds a job per shard and data type.  An entry's memory is taken
 * when the table first needs it (ina_job_install), not at creation. */
#define INA_MAX_JOBS	 2048
#define INA_BITMAP_WORDS (INA_MAX_FANIN / 64)
/* How far a DATA's epoch may run ahead of the job's newest completed
 * epoch: honest members are at most a call or two apart, so a slice much
 * further ahead is forged or corrupt, and would hold a slot against every
 * honest one.  256 leaves room for that many calls failing in a row. */
#define INA_EPOCH_WINDOW 256
/* A slot that accepted nothing for this long gives way to a member's other
 * slice (ina_job_cfg.reclaim_ms 0); four times the host library's longest
 * re-send interval (500 ms), so a living member keeps its slot. */
#define INA_RECLAIM_MS	 2000
/* A multicast to every contributor plus one forward. */
#define INA_MAX_EMITS	 (INA_MAX_FANIN + 1)

/* A peer as the engine sees it.  Members are matched on ip and port (both
 * network byte order); mac is carried for swemu's packet builder.  A peer
 * on nports > 1 ports from port (an INA switch, which takes INA on all 16
 * and may split them over lcores) is heard from any of them and sent slot
 * index i's frames at port + i % nports, so that each slot stays on one
 * port, and in one partition, at every hop. */
struct ina_addr {
	uint32_t ip;
	uint16_t port;
	uint8_t mac[6];
	uint8_t nports; /* 0 or 1: port alone */
};

/* The port slot index `index` goes to at a (network order). */
static inline uint16_t ina_addr_port(const struct ina_addr *a, uint32_t index)
{
	return a->nports > 1 ? htons((uint16_t)(ntohs(a->port) + index % a->nports)) : a->port;
}

/* Whether src is the peer listed as `a` (one of its ports). */
static inline bool ina_addr_from(const struct ina_addr *a, const struct ina_addr *src)
{
	if (src->ip != a->ip)
		return false;
	if (a->nports <= 1)
		return src->port == a->port;
	return (uint16_t)(ntohs(src->port) - ntohs(a->port)) < a->nports;
}

/* Where a complete slot goes (bit set of the job's outputs). */
enum ina_output {
	INA_OUT_MULTICAST = 1, /* RESULT to every contributor (not the upstream) */
	INA_OUT_FORWARD = 2,   /* DATA to a downstream member (ring) */
	INA_OUT_PS = 4,	       /* DATA to a parent aggregator; its RESULT is multicast */
	/* Ring hop-by-hop acknowledgement (agent-ring, docs/AGENTRING.md): a
	 * complete slot sends ACK to the upstream member; with FORWARD it is
	 * finished for its contributors only when the downstream member's ACK
	 * arrives, which it passes on to them. */
	INA_OUT_ACK = 8,
	/* Not a destination: with it the job reports gaps (MISS, docs/ENGINE.md)
	 * to members that send their slices in order, one slot after the other
	 * (ps and ps-ina); a ToR's partials go up in the order they complete,
	 * so its parent's reports to it are hints it checks. */
	INA_OUT_MISS = 16,
};

/* The identity a forwarded aggregate takes at the next hop. */
struct ina_peer {
	struct ina_addr addr;
	uint16_t job;
	uint16_t contributor;
};

struct ina_job_cfg {
	uint16_t id;
	uint16_t fan_in;	 /* 1..INA_MAX_FANIN */
	uint8_t dtype;		 /* INA_D_INT32, INA_D_FP32, INA_D_BFP32 or INA_D_BF16 */
	uint32_t nslots;	 /* slot indices reserved (each has two sets) */
	uint16_t elems_per_slot; /* 1..engine's max_elems */
	unsigned outputs;	 /* enum ina_output bits, at least one */
	/* index -> address; fan_in entries */
	struct ina_addr contributors[INA_MAX_FANIN];
	/* index that contributor id INA_CONTRIB_UPSTREAM stands for, or -1 */
	int upstream_index;
	uint16_t upstream_job;	 /* INA_OUT_ACK: the upstream member's job, which ACKs name */
	struct ina_peer forward; /* INA_OUT_FORWARD */
	struct ina_peer parent;	 /* INA_OUT_PS */
	/* who installed it (a control command's owner; 0: nobody in particular,
	 * as a config file's jobs): the switch lets only the owner remove it */
	uint64_t owner;
	/* ms a slot may sit unfinished and untouched before another slice of
	 * a member takes it over (0: INA_RECLAIM_MS) */
	uint32_t reclaim_ms;
	/* An agent-ring member's one job for all of its ring's steps (odd,
	 * >= 3: 2m - 1 with m members; 0: not a chain).  Slice seq is step
	 * seq % chain_steps of the member's chain and lives in slot index
	 * seq % nslots; its step decides what it takes and gives (docs/ENGINE.md,
	 * "Chains"): step 0 has no upstream, steps from m - 1 on multicast,
	 * every step but the last forwards, as slice seq + 1 downstream; the
	 * upstream's contributions and the downstream's ACKs find their set by
	 * the slice's key.  outputs must be multicast, forward and ack, the
	 * upstream the last contributor. */
	uint16_t chain_steps;
	/* With INA_OUT_MISS, not in a chain: when no contribution reached the
	 * job for this long (µs; 0: never), ina_engine_poll reports each slot
	 * still collecting to its missing contributors (MISS, INA_F_IDLE), if
	 * at most a quarter of its fan-in is missing.  The last one's loss is
	 * otherwise found only by its sender's timer, after the wait for every
	 * other worker (docs/ENGINE.md, "Idle reports").  A software PS's. */
	uint32_t idle_miss_us;
};
#define INA_IDLE_MISS_MAX_US 60000000u

struct ina_job_stats {
	uint64_t rx_packets;
	uint64_t contributions; /* accepted and added */
	uint64_t completions;	/* slots that reached fan_in */
	uint64_t retransmits;	/* re-sends answered (from a stored slot, or HAVE) */
	uint64_t misses;	/* gaps reported (INA_OUT_MISS) */
	uint64_t idle_misses;	/* ... of them on silence (idle_miss_us) */
	uint64_t emits;		/* packets emitted */
	uint64_t overflows;	/* int32 completions that wrapped */
	uint64_t reclaimed;	/* unfinished slots given up (a failed call, a wedge) */
	uint64_t drops[INA_R_MAX_];
};

struct ina_engine_stats {
	uint64_t rx_packets;
	uint64_t accepted;
	uint64_t drops[INA_R_MAX_]; /* every drop, attributed to a job or not */
};

struct ina_emit {
	struct ina_hdr hdr;
	const uint8_t *payload; /* wire order; valid until the next process call */
	size_t payload_len;
	struct ina_addr dst;
	/* the previous emit's header and payload but for hdr.contributor and
	 * dst (a multicast's second and later frames): a packet builder may
	 * reuse what it made of that one */
	bool same_as_prev;
	/* Set only when the engine groups multicasts: this emit stands for
	 * one frame to every contributor of this job but its upstream
	 * (group->upstream_index), each with its own hdr.contributor (the
	 * index) and dst; hdr and dst here are the first one's. */
	const struct ina_job_cfg *group;
	/* payload is in a buffer of the engine's result sink, not slot
	 * memory: unchanged until the slot's next round, and the sender may
	 * keep it longer by the sink's own means (swemu: a reference) */
	bool payload_held;
};

struct ina_emits {
	unsigned n;
	struct ina_emit e[INA_MAX_EMITS];
};

struct ina_engine;

/* nslots slot indices, each with two sets of max_elems elements; all memory
 * is allocated here and never grows.  NULL on bad arguments or no memory. */
struct ina_engine *ina_engine_create(uint32_t nslots, uint16_t max_elems);
void ina_engine_destroy(struct ina_engine *eng);

/* NULL if cfg is a valid job for an engine of max_elems elements per slot,
 * else what is wrong (the check ina_job_install makes before anything else). */
const char *ina_job_cfg_check(const struct ina_job_cfg *cfg, uint16_t max_elems);

/* 0, or a negative errno: -EINVAL (bad cfg; *why says which field),
 * -EEXIST (id in use), -ENOSPC (no slot range or job entry left). */
int ina_job_install(struct ina_engine *eng, const struct ina_job_cfg *cfg, const char **why);
/* 0 or -ENOENT.  Frees the job's slot range. */
int ina_job_remove(struct ina_engine *eng, uint16_t id);
const struct ina_job_stats *ina_job_stats(const struct ina_engine *eng, uint16_t id);
/* The installed job's config, or NULL. */
const struct ina_job_cfg *ina_job_config(const struct ina_engine *eng, uint16_t id);
/* The lowest id from `from` on that no job uses, or -1 (every id is in use). */
int ina_job_free_id(const struct ina_engine *eng, uint16_t from);
/* First slot (engine-wide index) of the job's range, or -1.  This and
 * ina_job_slots_busy may be called from another thread while the owner
 * installs or removes jobs: they see a job whole or not at all. */
long ina_job_slot_base(const struct ina_engine *eng, uint16_t id);
/* Slots of the job now holding a partial aggregate. */
uint32_t ina_job_slots_busy(const struct ina_engine *eng, uint16_t id);
const struct ina_engine_stats *ina_engine_stats(const struct ina_engine *eng);

/* The engine's clock (any monotonic ns): its caller sets it, once per
 * burst, so the per-packet path reads no clock.  Until it is set, no slot
 * is ever idle (see ina_job_cfg.reclaim_ms). */
void ina_engine_set_time(struct ina_engine *eng, uint64_t now_ns);

/* The idle reports due now (ina_job_cfg.idle_miss_us; call it after
 * ina_engine_set_time, every idle_miss_us or so while ina_engine_idle_wait
 * says one may come): emits into out, as ina_engine_process does.  A job
 * reports once per idle_miss_us of silence. */
void ina_engine_poll(struct ina_engine *eng, struct ina_emits *out);
/* µs until a report may be due: a job with idle_miss_us that has a slot
 * collecting; -1: none (nothing to poll for). */
long ina_engine_idle_wait(const struct ina_engine *eng);

/* Off (the default): a multicast comes out as one emit per contributor.
 * On: as one emit with `group` set, which a sender that builds each
 * member's frame from a per-member header anyway (swemu) expands itself,
 * sparing the engine a copy of the emit per member. */
void ina_engine_group_multicast(struct ina_engine *eng, bool on);

/* A count of the jobs installed and removed, which only grows: what a
 * caller cached of the jobs (ina_engine_member_kind) holds while it stays.
 * A pointer, read as often as needed, so that a datapath pays one load. */
const uint32_t *ina_engine_jobs_changes(const struct ina_engine *eng);

/* Memory of the sender's for a slot's elements, so that a result leaves
 * from where it was summed (swemu chains that buffer to every result
 * frame; it never copies the sum).  At each round's start the engine asks
 * get for a buffer of at least len bytes, handing back the slot's last
 * one (or NULL): the sink returns it again when nothing else uses it,
 * else puts it away and gives another, or NULL for slot memory.  put
 * takes a buffer back for good (a reclaim, a job removed, the engine's
 * end).  A buffer must be 64-byte aligned.  min_len: get gives none for
 * min_len bytes or fewer, so a slot holding none is not asked then (a
 * call per round saved).  Off (NULL) by default; set it before installing
 * jobs. */
struct ina_result_sink {
	uint8_t *(*get)(void *ctx, uint8_t *last, size_t len);
	void (*put)(void *ctx, uint8_t *buf);
	void *ctx;
	size_t min_len;
};
void ina_engine_result_sink(struct ina_engine *eng, const struct ina_result_sink *sink);

/* Processes one validated packet from src.  Returns INA_OK when it was
 * taken (out may hold emits) or the reason it was dropped (out->n == 0,
 * no state changed). */
enum ina_reason ina_engine_process(struct ina_engine *eng, const struct ina_pkt *pkt, const struct ina_addr *src,
				   struct ina_emits *out);

/* Parse + validate + process a raw UDP payload; validation failures are
 * counted in the engine stats. */
enum ina_reason ina_engine_rx(struct ina_engine *eng, const void *buf, size_t len, const struct ina_addr *src,
			      struct ina_emits *out);

/* Whether a raw payload from src is a member's DATA that the engine's fast
 * path takes whatever its slot (an int32 or fp32 slice of an installed
 * job, from the contributor it names): so is every payload from src with
 * the same first 8 bytes while no job is installed or removed. */
bool ina_engine_member_kind(const struct ina_engine *eng, const void *buf, size_t len, const struct ina_addr *src);

/* ina_engine_rx for a payload whose first 8 bytes and source the caller
 * has seen ina_engine_member_kind vouch for, with no job installed or
 * removed since: those checks are not made again.  A switch that
 * remembers its members' headers (swemu) saves them on every repeat. */
enum ina_reason ina_engine_rx_member(struct ina_engine *eng, const void *buf, size_t len, const struct ina_addr *src,
				     struct ina_emits *out);

#endif
