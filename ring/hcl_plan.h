/* Who aggregates where: the jobs of ps-ina (and, in agent/, of agent-ring)
 * computed from the rendezvous table.  Pure functions of that table, so
 * every rank derives the same plan without another exchange, and unit
 * tests check it without a network. */
#ifndef HCL_PLAN_H
#define HCL_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ina_engine.h"

#define HCL_MAX_RACKS 64

/* One rank as the rendezvous table describes it (addresses in network order). */
struct hcl_rank_info {
	struct ina_addr ina; /* its INA socket: ip, port, mac */
	int rack;
	struct ina_addr tor; /* its rack's INA ToR (ip, port); ip 0: none */
};

/* An empty job: no contributors, no upstream, the given outputs. */
void hcl_job_init(struct ina_job_cfg *j, uint16_t id, uint8_t dtype, uint32_t slots, uint16_t elems,
		  unsigned outputs);

/* ps-ina: racks behind an INA ToR aggregate there; the others fall back to
 * a software parameter server hosted by rank 0 (ATP's fallback), which
 * also adds up the ToRs' partial sums when there is more than one rack. */
struct hcl_psina_tor {
	int rack;
	int agent;               /* lowest rank of the rack: installs and removes the job */
	struct ina_job_cfg job;  /* contributors: the rack's ranks in rank order */
};

struct hcl_psina_plan {
	bool use_ps;             /* a software PS at rank 0 */
	struct ina_job_cfg ps;   /* contributors: the INA ToRs, then every rank without one */
	unsigned ntor;
	struct hcl_psina_tor tor[HCL_MAX_RACKS];
	struct {                 /* per rank: where its client sends, as which index */
		struct ina_addr server;
		uint16_t index;
		bool to_ps;          /* server is the software PS (not the rack's ToR) */
	} *client;               /* world entries, owned by the plan */
};

/* job: the id on every aggregator (a PS and its children share it, as the
 * engine's PS output requires).  ps: rank 0's PS socket.  0, or -EINVAL
 * with err (two ranks of a rack name different ToRs, too many racks or
 * contributors). */
int hcl_psina_plan(const struct hcl_rank_info *ranks, unsigned world, const struct ina_addr *ps, uint16_t job,
		   uint8_t dtype, uint32_t slots, uint16_t elems, struct hcl_psina_plan *plan, char *err, size_t errlen);
void hcl_psina_plan_free(struct hcl_psina_plan *plan);

/* A sharded PS (BytePS-style): the tensor cut into `shards` runs of
 * slices, shard h aggregated by its own PS job on the rank
 * hcl_psina_shard_host(h, ...), the shards spread evenly over the ranks
 * (shards <= world).  Every shard has the plan's shape: the same
 * contributors at the same indices; only the job id and, for the ToRs'
 * jobs, the parent differ.  hcl_psina_shard_job turns one of the plan's
 * jobs (a ToR's or the PS's) into shard h's: id `id`, a ToR job's parent
 * at ps with that id. */
int hcl_psina_shard_host(unsigned h, unsigned shards, unsigned world);
void hcl_psina_shard_job(const struct ina_job_cfg *plan_job, uint16_t id, const struct ina_addr *ps,
			 struct ina_job_cfg *out);

#endif
