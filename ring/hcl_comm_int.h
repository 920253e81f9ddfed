/* The communicator's insides, shared by the files that set up its
 * algorithms (ring/hcl_comm.c, agent/agent.c).  Not installed. */
#ifndef HCL_COMM_INT_H
#define HCL_COMM_INT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hcl.h"
#include "hcl_aring.h"
#include "hcl_chan.h"
#include "hcl_ina.h"
#include "hcl_plan.h"
#include "hcl_transport.h"
#include "ring_plan.h"

struct hcl_xfer;
struct hcl_ina;
struct hcl_ps;
struct hcl_sync;

struct hcl_comm {
	int rank, world;
	enum hcl_algo algo;
	int64_t timeout_ns;
	struct hcl_transport t;
	struct sockaddr_in *peers;
	uint16_t *ina_ports; /* per rank, host order */
	int *racks;          /* per rank */
	struct hcl_rank_info *info; /* per rank: INA address with MAC, rack, ToR */
	struct hcl_xfer *x;
	struct hcl_chan chan; /* ring: the extra channels beside c->x */
	struct hcl_transport ina_t; /* ps, ps-ina: its own socket on the job's port */
	struct hcl_ina *ina;        /* ps, ps-ina: the fp32 job */
	struct hcl_ina *ina_i32;    /* ps, ps-ina: the int32 job */
	struct hcl_ps *ps;          /* ps, ps-ina: the software PS (shard) this rank hosts, if any */
	unsigned ps_shards;         /* ps, ps-ina: PS shards, each its own job on its own rank (1: rank 0's) */
	struct ina_addr ps_addr[HCL_INA_MAX_SHARDS]; /* ps, ps-ina: each shard's PS socket */
	uint16_t ina_job;           /* ps, ps-ina: the first job id (shard h: + 2h fp32, + 2h + 1 int32) */
	struct hcl_psina_plan plan[2]; /* ps, ps-ina: fp32, int32 */
	bool tor_jobs;              /* this rank installed its ToR's jobs (it is the rack's agent) */
	uint8_t float_dtype;        /* the float job's wire dtype: INA_D_FP32, _BFP32 or _BF16 */
	/* agent-ring (agent/agent.c) */
	struct aring_plan aplan[2];  /* fp32, int32 */
	struct hcl_aring *aring[2];
	uint16_t tor_ids[2 * (2 * ARING_MAX_MEMBERS - 1)]; /* jobs this rank installed in its ToR */
	unsigned ntor_ids;
	unsigned long long report_expect[2]; /* slices the agent's ToR should have completed so far */
	bool ready; /* hcl_comm_create finished: the others will meet us at destroy's barrier */
	uint32_t epoch;
	void *scratch;        /* bf16 calls widened, fp32 calls narrowed for a bf16 job */
	size_t scratch_bytes; /* its size */
	struct hcl_sync *sync; /* timing and pacing around each call (ring/hcl_sync.h) */
	char err[320];
};

__attribute__((format(printf, 3, 4))) int hcl_fail(char *err, size_t n, const char *fmt, ...);
/* v if set, else the integer in environment variable env, else dflt */
int hcl_cfg_or_env(int v, const char *env, int dflt);
/* The INA packets of ps, ps-ina and agent-ring: slots in flight and
 * elements per packet, from cfg, else HCL_INA_SLOTS / HCL_INA_ELEMS, else
 * the defaults; checked for range and against the MTU of this rank's route
 * to where they go (its rack's ToR, else the next rank).  0, or -errno with
 * the reason (for the MTU: the largest count that fits) in err. */
int hcl_ina_packets(const struct hcl_comm *c, const struct hcl_comm_cfg *k, const char *name, int *slots,
		    int *elems, char *err, size_t errlen);
/* For the INA clients' wait loops: a rank that moved on from the last
 * exchange (the setup barrier) still answers a peer whose ACK was lost. */
void hcl_comm_poll_xfer(void *ctx);
/* All ranks reach this point (a one-element ring all-reduce). */
int hcl_comm_barrier(struct hcl_comm *c, int64_t deadline, char *err, size_t errlen);
/* ring/hcl_psina.c: the PS shard count from cfg / HCL_PS_SHARDS (checked
 * before the rendezvous), and the setup of ps and ps-ina after it. */
#define HCL_PS_PORT_DEFAULT 48870
int hcl_psina_shard_count(struct hcl_comm *c, const struct hcl_comm_cfg *k, char *err, size_t errlen);
int hcl_psina_setup(struct hcl_comm *c, const struct hcl_comm_cfg *k, int64_t deadline, char *err, size_t errlen);
/* Removes the jobs in c->tor_ids from this rank's ToR (best effort). */
void hcl_comm_remove_tor_jobs(struct hcl_comm *c);

/* agent/agent.c: sets up agent-ring on a communicator after rendezvous;
 * stops what it started. */
/* The float job's wire dtype from cfg.ina_bfp or HCL_INA_FP32. */
int hcl_float_dtype(const struct hcl_comm_cfg *k, const char *name, uint8_t *dtype, char *err, size_t errlen);
int hcl_aring_setup(struct hcl_comm *c, const struct hcl_comm_cfg *k, int64_t deadline, char *err, size_t errlen);
void hcl_aring_teardown(struct hcl_comm *c);
/* With HCL_AGENT_REPORT set, an agent prints its rack's progress after each
 * call: the ToR's counters for the ring's step jobs (control op "stats")
 * against the slices the calls so far should have completed there. */
void hcl_aring_report(struct hcl_comm *c, int d, size_t count);

#endif
