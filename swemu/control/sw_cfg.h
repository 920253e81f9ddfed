/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu's configuration, as read from a config file (configs/NAME.cfg).
 * Plain data, no DPDK: the loader is unit-tested on its own.  The format is
 * documented in docs/SWEMU.md. */
#ifndef SW_CFG_H
#define SW_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_auth.h"
#include "ctl_msg.h"
#include "ina_engine.h"
#include "sw_capture.h"

#define SW_MAX_SWITCHES	  16
#define SW_MAX_PARTITIONS 4  /* lcores one switch may run on */
#define SW_MAX_QUEUE	  63 /* the highest queue a partition may own */
#define SW_MAX_PORTS	  16 /* per logical switch */
_Static_assert(SW_MAX_PORTS <= 32, "mgmt_ports is a 32-bit mask of ports");
#define SW_MAX_FDB   256 /* static entries per switch */
#define SW_MAX_MGMT  16
#define SW_BURST_MAX 512 /* frames per rx burst at most (config "burst") */
#define SW_NAME_LEN  CTL_NAME_LEN

#define SW_VLAN_DEFAULT 1
#define SW_MAX_TRUNK	64   /* tagged VLANs on one trunk port */
#define SW_MAX_LCORE	1023 /* highest lcore id a switch may name */

struct sw_port_cfg {
	char name[SW_NAME_LEN];
	char dev[64];		      /* a DPDK device name (external port), or "" */
	/* a device per partition, each on its queue 0 ([0] is dev), where one
	 * device cannot give every partition a queue of its own (DPDK's
	 * af_xdp on a veth sees one queue); all "" when the partitions share
	 * dev */
	char part_dev[SW_MAX_PARTITIONS][64];
	int npart_dev;		      /* entries in part_dev (0: dev is one device) */
	char link[2 * SW_NAME_LEN];   /* "switch.port" of the peer (in-memory link), or "" */
	int peer_switch, peer_port;   /* resolved link */
	uint16_t vlan;		      /* access VLAN (frames untagged), SW_VLAN_DEFAULT unless set; on a
			* trunk its native (untagged) VLAN, 0 for none */
	uint16_t trunk[SW_MAX_TRUNK]; /* 802.1Q-tagged VLANs, ascending; none: an access port */
	int ntrunk;
	struct netem_cfg netem;
	/* frames come in already steered by UDP port (a NIC's flow rules, or
	 * whoever feeds the device): INA port p on queue (p - INA_UDP_PORT_MIN)
	 * % partitions, everything else on queue 0 */
	bool steered;
	int line;
};

struct sw_fdb_entry {
	uint8_t mac[6];
	int port;
};

struct sw_switch_cfg {
	char name[SW_NAME_LEN];
	bool ina;
	uint8_t mac[6];		    /* the switch's own endpoint: INA, ARP, control */
	uint32_t ip;		    /* network order; 0 = no endpoint */
	uint16_t ctrl_port;	    /* UDP port of the control channel */
	uint32_t slots;		    /* engine slot indices */
	uint16_t max_elems;	    /* elements per slot */
	uint32_t mgmt[SW_MAX_MGMT]; /* sources allowed on the control channel */
	uint32_t mgmt_ports;	    /* ... and the ports they may come in by (bit i: port i; 0: any) */
	uint16_t mgmt_vlan;	    /* ... and the VLAN (0: any) */
	struct ctl_key ctrl_key;    /* commands must be signed with it (len 0: not asked) */
	int nmgmt;
	uint32_t fdb_age_s;
	uint32_t fdb_port_limit; /* learned MACs per port; 0: no limit */
	int lcore;		 /* EAL lcore that runs it; -1: spread over EAL's lcores */
	int partitions;		 /* lcores that share its ports, a queue pair each (1: one lcore) */
	/* the queue pair partition k owns on every port (default k; [0] is 0:
	 * what no flow rule steers lands there) */
	uint16_t partition_queues[SW_MAX_PARTITIONS];
	int line;
	int nports;
	struct sw_port_cfg ports[SW_MAX_PORTS];
	int nfdb;
	struct sw_fdb_entry fdb[SW_MAX_FDB];
	int njobs;
	struct ina_job_cfg *jobs;      /* heap */
	struct sw_capture_cfg capture; /* file "" = none */
};

struct sw_cfg {
	char stats_file[256];
	char stats_prom_file[256];  /* the same counters for Prometheus (sw_prom.c) */
	uint32_t stats_interval_ms; /* 0 = only on signal and exit */
	uint32_t idle_sleep_max_us; /* 0 = busy poll (benchmarks) */
	uint32_t burst;
	uint32_t mbufs;
	int nswitches;
	struct sw_switch_cfg sw[SW_MAX_SWITCHES];
};

/* Loads and checks a config file.  0 on success; on any error -1 with
 * "file:line: what is wrong" in err, and *cfg left empty (freed). */
int sw_cfg_load(const char *path, struct sw_cfg *cfg, char *err, size_t errlen);
void sw_cfg_free(struct sw_cfg *cfg);

/* Which port of switch s is called name: its index, or -1. */
int sw_cfg_find_port(const struct sw_switch_cfg *s, const char *name);

#endif
