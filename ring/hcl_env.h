/* SPDX-License-Identifier: BSD-3-Clause */
/* Every setting of a communicator in one place: from struct hcl_comm_cfg,
 * or where that leaves a field 0/NULL, from a host file (HCL_HOSTFILE) or
 * the environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT as torchrun
 * sets them, and the HCL_* variables of docs/HOSTLIB.md).  Resolved and
 * checked before the rendezvous: a rank with a bad setting fails at once,
 * naming it, instead of leaving the others waiting. */
#ifndef HCL_ENV_H
#define HCL_ENV_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hcl.h"
#include "ctl_auth.h"
#include "hcl_sync.h"
#include "ina_engine.h"

/* PS shards: up to one per host of the largest worlds the library is
 * planned for (a shard per host spreads the PS's bytes over every link) */
#define HCL_INA_MAX_SHARDS    1024
#define HCL_RING_MAX_CHANNELS 4

struct hcl_env {
	int rank, world;
	struct sockaddr_in master; /* rank 0's rendezvous address */
	struct sockaddr_in data;   /* this rank's data address; ip 0: the one that reaches the master */
	enum hcl_algo algo;
	int rack;
	int64_t timeout_ns;	    /* deadline of each call, rendezvous included */
	struct ina_addr ina_switch; /* this rank's INA ToR; ip 0: none (HCL_INA_SWITCH, "ip[:port]") */
	struct ctl_key ina_key;	    /* signs its commands (HCL_INA_KEY_FILE; len 0: unsigned) */
	struct ctl_key job_token;   /* signs the rendezvous hellos (HCL_JOB_TOKEN[_FILE]; len 0: none) */
	uint16_t ina_port;	    /* this rank's INA socket (HCL_INA_PORT) */
	uint16_t ina_job;	    /* the first switch job id (HCL_INA_JOB; 0: the master picks) */
	uint32_t ina_slots;	    /* slots in flight per job (HCL_INA_SLOTS) */
	uint16_t ina_elems;	    /* elements per INA packet (HCL_INA_ELEMS) */
	int64_t ina_lost_ns;	    /* an aggregator silent this long is lost (HCL_INA_LOST_MS; 0: never) */
	uint8_t float_wire;	    /* INA_D_FP32, INA_D_BFP32 or INA_D_BF16 (cfg.ina_bfp, HCL_INA_FP32) */
	uint16_t ps_port; /* the software PS or ring member (HCL_PS_PORT; shard h: + h; rank r's rack aggregators: + shards + r) */
	unsigned ps_shards;	/* 1..HCL_INA_MAX_SHARDS (HCL_PS_SHARDS) */
	int ps_rack_agg;	/* plain racks' aggregators (HCL_PS_RACK_AGG): -1 auto, 0 never, 1 always */
	unsigned ring_channels; /* 1..HCL_RING_MAX_CHANNELS, 0: auto (HCL_RING_CHANNELS) */
	uint32_t xfer_payload, xfer_window, xfer_local_queue; /* HCL_XFER_*; 0: the transfer's default */
	struct hcl_sync_cfg sync;			      /* pacing and tracing (HCL_PACE*, HCL_TRACE) */
	double timer_scale; /* HCL_TIMER_SCALE: the re-send timers' floors x this (a time-dilated trial) */
	bool ina_cc;	    /* HCL_INA_CC: the INA windows follow ECN marks (docs/CONGESTION.md) */
	bool agent_report;  /* HCL_AGENT_REPORT: agents print their ToR's progress */
	bool debug;	    /* HCL_DEBUG: more detail when a call fails */
	char master_ip[16], data_ip[16], trace_dir[256]; /* the strings above came from */
};

/* 0, or -EINVAL with what is wrong (which setting, which value) in err. */
int hcl_env_resolve(const struct hcl_comm_cfg *cfg, struct hcl_env *e, char *err, size_t errlen);

#endif
