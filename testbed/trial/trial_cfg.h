/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu-trial-cfg's reading of a trial file: the settings with their
 * defaults (struct trial), the value readers every setting goes through
 * (trial_read.c), the racks and what sits in them (trial_racks.c) and time
 * dilation (trial_dilation.c).  Every reader returns 0, or -1 with
 * "file:line: what is wrong" in tr->err. */
#ifndef SWEMU_TRIAL_CFG_H
#define SWEMU_TRIAL_CFG_H

#include <stdbool.h>
#include <stddef.h>

#include "conf.h"

#define TRIAL_MAX_RACKS 128 /* the simulator's; the emulator's are below */
#define EMU_MAX_RACKS	8
#define EMU_MAX_HOSTS	16   /* what two cores carry: ranks plus software members */
#define SIM_MAX_HOSTS	1024 /* the largest fabric simulated and measured (docs/SCALE.md) */
#define SIM_MAX_RACK	256  /* hosts per rack: a ToR's job takes 256 contributors */

struct trial {
	const char *name;
	bool sim;			    /* engine = "sim": the trial runs in ns-3 (swemu-sim), not on the testbed */
	int max_racks, max_world, max_rack; /* the engine's limits */
	int seed, racks, iterations, warmup, timeout_ms, repeats;
	int ina_elems, ina_slots, ps_shards, psina_shards; /* ps's and ps-ina's PS shards */
	bool ina[TRIAL_MAX_RACKS];
	bool sweep;		    /* ina_racks = "sweep": every deployment 0..racks, in sweep_order */
	int order[TRIAL_MAX_RACKS]; /* racks in the order they get INA ToRs */
	bool costs;		    /* a costs group: prices of the hardware */
	double cost[4];		    /* ina_tor, plain_tor, host, ina_tor_power */
	const char *host_rate, *uplink_rate, *uplink_buffer, *host_buffer, *jitter, *straggler, *dtype, *pmd, *ina_wire;
	double loss, compute_ms, oversub;
	int delay_us, jitter_us; /* every egress port's emulated propagation delay and jitter */
	char burst[64];		 /* Gilbert-Elliott loss "p_good_bad,p_bad_good,loss_bad", or "" */
	char rack_rates[128];	 /* each rack's host link rate, "R0,R1,...", or "": host_rate */
	bool pace;
	bool ina_cc;	/* the INA windows follow ECN marks (the queues mark at half their buffer) */
	bool processes; /* one swemu process per switch, joined by veth links */
	int tor_partitions; /* lcores each switch runs on, a partition each (topo.sh --partitions) */
	char algos[128], sizes[256];
	int size[TRIAL_MAX_RACKS], world; /* hosts per rack (hosts_per_rack: one for all, or a list), their sum */
	bool uneven;			  /* hosts_per_rack was a list */
	char uplinks[160];		  /* each rack's uplink rate, "R" (all alike) or "R0,R1,..." */
	char capture[256];		  /* switches and ports to capture, "tor0 tor1.up", or "" */
	int capture_snaplen;
	/* time dilation: the file's rates, delays and compute times are the
	 * real cluster's; the testbed runs rates / k and times x k */
	double dilation;	     /* k >= 1; 0 = "auto" (the runner calibrates) */
	double cpu_share;	     /* what calibration may let the machine's CPU reach */
	const struct conf_node *dil; /* where dilation was set, for errors at k */
	struct emulated {	     /* the values the testbed runs at */
		char host_rate[32], uplink_rate[160], rack_rates[160], jitter[64];
		long long delay_us, jitter_us;
		double compute_ms;
	} emu;
	struct { /* workload = "...": training steps of a profile (trial_workload.c) */
		char path[4096], model[64];
		unsigned buckets;
		unsigned long long bytes, max_bytes;
		double fwd_ms, bwd_ms;
	} workload;
	struct conf_reader rd; /* the file's name, and where errors go: */
	char err[512];
};

/* trial_read.c: one setting of the group t, checked; left as it is when
 * the key is absent. */
__attribute__((format(printf, 3, 4))) int trial_fail(const struct trial *tr, const struct conf_node *s, const char *fmt,
						     ...);
bool trial_has_word(const char *list, const char *w);
void trial_append_word(char *list, size_t cap, const char *w);
bool trial_safe(const char *s);
int trial_get_int(const struct trial *tr, const struct conf_node *t, const char *key, int lo, int hi, int *v);
/* tor_partitions (after racks, pmd and capture are read). */
int trial_get_partitions(const struct conf_node *t, struct trial *tr);
int trial_get_num(const struct trial *tr, const struct conf_node *t, const char *key, double lo, double hi, double *v);
int trial_get_str(const struct trial *tr, const struct conf_node *t, const char *key, const char **v,
		  const struct conf_node **where);
int trial_get_rate(const struct trial *tr, const struct conf_node *t, const char *key, double lo, double hi,
		   const char **v);
void trial_format_rate(double bps, char *buf, size_t cap);
int trial_get_words(const struct trial *tr, const struct conf_node *t, const char *key, const char *what,
		    const char *example, int max,
		    int (*check)(const struct trial *tr, const struct conf_node *e, const char *w), char *list,
		    size_t cap);
int trial_number_group(const struct trial *tr, const struct conf_node *t, const char *key, const char *const *keys,
		       int required, double lo, double hi, const char *example, const struct conf_node **g, double *v);

/* trial_racks.c: racks and hosts_per_rack (within the engine's limits),
 * ina_racks, sweep_order, costs, rack_host_rates, capture. */
int trial_get_racks(const struct conf_node *t, struct trial *tr);

/* trial_workload.c: workload = "NAME" or "PATH", the profile read */
int trial_get_workload(const struct conf_node *t, struct trial *tr);

/* trial_dilation.c */
int trial_get_dilation(const struct conf_node *t, struct trial *tr);
int trial_apply_dilation(struct trial *tr, double k);

#endif
