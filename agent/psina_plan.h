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

struct psina_plan {
	bool use_ps;	       /* a software PS at rank 0 */
	struct ina_job_cfg ps; /* contributors: the INA ToRs, then every rank without one */
	unsigned ntor;
	struct psina_tor tor[PLAN_MAX_RACKS];
	struct { /* per rank: where its client sends, as which index */
		struct ina_addr server;
		uint16_t index;
		bool to_ps; /* server is the software PS (not the rack's ToR) */
	} * client;	    /* world entries, owned by the plan */
};

/* job: the id on every aggregator (a PS and its children share it, as the
 * engine's PS output requires).  ps: rank 0's PS socket.  0, or -EINVAL
 * with err (two ranks of a rack name different ToRs, too many racks or
 * contributors). */
int psina_plan(const struct plan_rank *ranks, unsigned world, const struct ina_addr *ps, uint16_t job, uint8_t dtype,
	       uint32_t slots, uint16_t elems, struct psina_plan *plan, char *err, size_t errlen);
void psina_plan_free(struct psina_plan *plan);

/* A sharded PS (BytePS-style): the tensor cut into `shards` runs of
 * slices, shard h aggregated by its own PS job on the rank
 * psina_shard_host(h, ...), the shards spread evenly over the ranks
 * (shards <= world).  Every shard has the plan's shape: the same
 * contributors at the same indices; only the job id and, for the ToRs'
 * jobs, the parent differ.  psina_shard_job turns one of the plan's
 * jobs (a ToR's or the PS's) into shard h's: id `id`, a ToR job's parent
 * at ps with that id. */
int psina_shard_host(unsigned h, unsigned shards, unsigned world);
void psina_shard_job(const struct ina_job_cfg *plan_job, uint16_t id, const struct ina_addr *ps,
		     struct ina_job_cfg *out);
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
