/* SPDX-License-Identifier: BSD-3-Clause */
/* The ps-ina plan: who aggregates where, and the job every aggregator
 * runs, computed from the rendezvous table (agent/plan.h). */
#ifndef PSINA_PLAN_H
#define PSINA_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"

/* ps-ina: racks behind an INA ToR aggregate there; the others fall back to
 * a software parameter server hosted by rank 0 (ATP's fallback), which
 * also adds up the ToRs' partial sums when there is more than one rack. */
struct psina_tor {
	int rack;
	int agent;		/* lowest rank of the rack: installs and removes the job */
	struct ina_job_cfg job; /* contributors: the rack's ranks in rank order */
};

/* A plain rack's software aggregator (a rack aggregator): its ranks' sum
 * goes up to the PS as one partial, as an INA ToR's does.  Shard h's runs
 * on the rack's rank ranks[h % n] (psina_rackagg_host), so the shards
 * spread over the rack's links. */
struct psina_rackagg {
	int rack;
	unsigned n;		/* the rack's ranks */
	int *ranks;		/* n, in rank order (owned by the plan) */
	struct ina_job_cfg job; /* contributors: those ranks' INA sockets */
};

/* When plain racks get rack aggregators: where the PS would otherwise
 * count more than INA_MAX_FANIN contributors (PAST_LIMIT), or also where
 * the PS adds the partials of PSINA_RACKAGG_MIN_RACKS racks or more
 * (MANY_RACKS), or wherever a plain rack of two or more sits beside
 * another rack (ALWAYS), or never (NEVER: past the limit the plan is
 * refused).  A rack aggregator sends its rack's sum up once, as an INA
 * ToR does, but its host link carries the rack's slices in and results
 * out: with two racks the uplinks were not the bound and it lost (2 x 8
 * hosts, one INA rack, 1 MiB, 200M: 69 -> 89 ms), with three or more it
 * won (3 x 4: 126 -> 90 ms; 8 x 8, none INA: 234 -> 115; docs/SCALE.md). */
enum psina_rackagg_mode {
	PSINA_RACKAGG_PAST_LIMIT,
	PSINA_RACKAGG_MANY_RACKS,
	PSINA_RACKAGG_ALWAYS,
	PSINA_RACKAGG_NEVER
};
#define PSINA_RACKAGG_MIN_RACKS 3

struct psina_plan {
	unsigned world;
	bool use_ps;	       /* a software PS at rank 0 */
	struct ina_job_cfg ps; /* contributors: the INA ToRs, the rack aggregators, then every other rank */
	unsigned ntor;
	struct psina_tor tor[PLAN_MAX_RACKS];
	unsigned nrackagg;
	struct psina_rackagg *rackagg; /* nrackagg, owned by the plan */
	struct {		       /* per rank: where its client sends, as which index */
		struct ina_addr server;
		uint16_t index;
		bool to_ps;	 /* server is the software PS (not the rack's ToR) */
		int16_t rackagg; /* its rack aggregator (server is per shard), or -1 */
	} * client;		 /* world entries, owned by the plan */
};

/* job: the id on every aggregator (a PS and its children share it, as the
 * engine's PS output requires).  ps: rank 0's PS socket.  0, or -EINVAL
 * with err (two ranks of a rack name different ToRs, too many racks or
 * contributors). */
int psina_plan(const struct plan_rank *ranks, unsigned world, const struct ina_addr *ps, uint16_t job, uint8_t dtype,
	       uint32_t slots, uint16_t elems, struct psina_plan *plan, char *err, size_t errlen);
/* The same with rack aggregators as mode says (psina_plan: PAST_LIMIT). */
int psina_plan_racks(const struct plan_rank *ranks, unsigned world, const struct ina_addr *ps, uint16_t job,
		     uint8_t dtype, uint32_t slots, uint16_t elems, enum psina_rackagg_mode mode,
		     struct psina_plan *plan, char *err, size_t errlen);
void psina_plan_free(struct psina_plan *plan);
/* Rack aggregator a's shard h of shards: the rank that hosts it, and its
 * address: that rank's INA socket's IP at port base_port + the rank (host
 * order in, network order out; one port per rank, so that ranks sharing
 * an IP can each host one). */
int psina_rackagg_host(const struct psina_plan *plan, unsigned a, unsigned h, unsigned shards);
struct ina_addr psina_rackagg_addr(const struct psina_plan *plan, unsigned a, unsigned h, unsigned shards,
				   uint16_t base_port);
/* Where rank i's client sends shard h of shards: its ToR, its rack
 * aggregator's shard h (psina_rackagg_addr), or PS shard h (ps[h]). */
struct ina_addr psina_client_server(const struct psina_plan *plan, unsigned i, unsigned h, unsigned shards,
				    const struct ina_addr *ps, uint16_t rack_base_port);
/* The most contributors of one software aggregator (the PS's or a rack
 * aggregator's job): what the in-flight rules below share a link among. */
unsigned psina_soft_fan_in(const struct psina_plan *plan);

/* A sharded PS (BytePS-style): the tensor cut into `shards` runs of
 * slices, shard h aggregated by its own PS job on the rank
 * psina_shard_host(h, ...), the shards spread evenly over the ranks
 * (shards <= world).  Every shard has the plan's shape: the same
 * contributors at the same indices; only the job id and, for the ToRs'
 * jobs, the parent differ.  psina_shard_job turns one of the plan's
 * jobs (a ToR's or the PS's) into shard h's: id `id`, a ToR job's parent
 * at ps with that id. */
int psina_shard_host(unsigned h, unsigned shards, unsigned world);
/* The shard count a trial's and the simulator's ps_shards = 0 gives: one
 * per host up to PSINA_AUTO_SHARDS_MIN, and where every rack sends one
 * partial per shard (rack_partials: ps-ina) up to
 * PSINA_AUTO_SHARDS_PER_RACK per rack if that is more.  A shard's host
 * link carries its own data and every rack's partial of its shard,
 * S (1 + racks / K) each way: K = 4 x racks keeps that at 1.25 S, where
 * 16 shards at 1024 hosts put 3 S on it (144 -> 64 ms a 1 MiB call,
 * docs/SCALE.md); more shards gain little and cut the slices smaller.
 * Where every rank sends to every shard (ps), a rank's slices to all
 * shards leave at once (each shard has its own window): 136 workers, 256
 * KiB, took 127 ms a call over 16 shards and 472 over 68 (the case of
 * tests/sim/run.sh). */
#define PSINA_AUTO_SHARDS_PER_RACK 4
#define PSINA_AUTO_SHARDS_MIN	   16
unsigned psina_auto_shards(unsigned world, unsigned racks, bool rack_partials);
void psina_shard_job(const struct ina_job_cfg *plan_job, uint16_t id, const struct ina_addr *ps,
		     struct ina_job_cfg *out);
/* The PS's job of shard h: psina_shard_job's, each rack aggregator a
 * contributor at its shard h's address (psina_rackagg_addr). */
void psina_shard_ps_job(const struct psina_plan *plan, unsigned h, unsigned shards, uint16_t id,
			const struct ina_addr *ps, uint16_t rack_base_port, struct ina_job_cfg *out);
/* Each client's window towards a shard (slices in flight that are not
 * stalled): the rank's `slots` dealt over the shards, so sharding
 * adds aggregators, not bytes in flight (a full window per shard
 * overflowed the ToR ports in the trial).  A shard gets at least
 * PSINA_MIN_SHARD_SLOTS, as long as the window of all its fan_in
 * contributors (ranks and ToRs) of elems elements fits
 * PSINA_SHARD_WINDOW_BYTES: with one slot a lost slice is found only by
 * the timer, whose round trip includes the wait for every worker; with
 * two, RACK finds it from the shard's other slot (docs/BENCHMARKS.md,
 * "Loss"; three were no better there and slower loss-free at 4 MiB in
 * the simulator).  Behind INA ToRs too: at 1% loss the default trial
 * (every rack INA, 8 shards) kept 0.58x of its loss-free speed with one,
 * 0.87x with two, loss-free unchanged. */
#define PSINA_MIN_SHARD_SLOTS	   2
#define PSINA_SHARD_WINDOW_BYTES   (256 * 1024)
/* And the windows of all of a shard's contributors together hold at most
 * PSINA_SHARD_INFLIGHT_BYTES (one slice each at the least): they all
 * arrive through the shard host's one link, whose switch port queues
 * 512 KiB by default (swemu's, the simulator's), and more in flight only
 * overflows it.  64 workers on one shard, 1 MiB, 200M links, 8 slots of
 * 8 KiB each (4 MiB): no call finished in 20 s of simulated time; 1 slot
 * each: 0.93x the link bound; with 4 of 8 racks INA (32 hosts and 4 ToRs
 * to the PS) 3 slots each collapsed again, 1 gave 0.87x (docs/SCALE.md).
 * INA has no congestion control yet: this is the plan's static share. */
#define PSINA_SHARD_INFLIGHT_BYTES (512 * 1024)
uint32_t psina_shard_slots(const struct psina_plan *plan, uint32_t slots, unsigned shards, uint16_t elems);
/* The elements a client's slice to a shard holds: elems, or fewer where
 * that gives the shard's window two slices instead of one (the in-flight
 * share above held 64 workers on one PS to one 8 KiB slice each).  With
 * one slice in flight per worker every loss stops the shard's whole flow
 * until its idle report or timer; with two the next slice goes on and its
 * gap report finds the loss.  64 workers on one PS, 1 MiB, 200M links,
 * 1% loss: about 0.5x the link bound with one slice of 8 KiB, 0.73x with two
 * of 4 KiB (docs/SCALE.md).  And fewer where two-slice windows over all
 * shards would hold more than the rank's own window, slots slices of
 * elems: with 16 shards behind INA ToRs, 16 x 2 x 8 KiB queued 10 ms on
 * a 200M host link and every re-send and result waited behind it (64
 * hosts, 1% loss: 235-806 ms per 1 MiB call against 70 loss-free; with
 * 2 KiB slices 109-136, loss-free 72).  Never below PSINA_MIN_SLICE_ELEMS
 * (a header per KiB). */
#define PSINA_MIN_SLICE_ELEMS 256
/* A contribution's bytes on the wire beyond its elements: the INA header,
 * UDP, IPv4 and Ethernet with its preamble and gap. */
#define PSINA_FRAME_OVERHEAD  (INA_HDR_LEN + 8 + 20 + 14 + 24)
uint16_t psina_shard_elems(const struct psina_plan *plan, uint32_t slots, unsigned shards, uint16_t elems);
/* A software PS's jobs report silences to their contributors
 * (ina_job_cfg.idle_miss_us): a silence is at least this long, in µs, and
 * at least eight times the usual gap between its contributions. */
#define PSINA_IDLE_MISS_US 1000
/* Where no ToR aggregates, a shard's jobs have PSINA_SPARE_SLOTS slots
 * beyond the window: a slice that stalls (lost, re-sent, waiting) keeps
 * its slot while the next ones go on into these, so one loss no longer
 * stops the shard's flow (each slot takes every `slots`-th slice, so a
 * stalled one held back everything after it).  Two: a shard's window goes
 * on past two stalls; more gained nothing in the simulator.  Behind INA
 * ToRs the emulator measured no gain (ps-ina lossy 99 -> 113 ms, 12 runs
 * each; docs/BENCHMARKS.md, "Loss"), so there are none. */
#define PSINA_SPARE_SLOTS  2
uint32_t psina_shard_spares(const struct psina_plan *plan);

#endif
