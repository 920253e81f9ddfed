/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu's control messages: the one grammar of the commands a switch takes
 * on its control channel (docs/CONTROL.md, "Control channel"), and of the
 * job and link-emulation settings its config files share with them.  The
 * switch parses commands with it, the host library's agents and
 * testbed/topo/swemu-ctl format them with it, and both read the answers with
 * it, so the two ends cannot disagree on a field.
 *
 *   op = "install"; owner = "9f3c..."; job = { id = 3; dtype = "int32"; slots = 16;
 *                           elems = 1024; outputs = ["multicast"]; contributors = [...]; };
 *   op = "remove"; owner = "9f3c..."; id = 3;
 *   op = "stats"; id = 3;      answer: "ok job=3 completions=.. contributions=.. ..."
 *   op = "emu"; port = "h1"; rate = "1G"; buffer = "1M"; delay_us = 50; loss = 0.01;
 *
 * owner (optional, 1-16 hex digits, not 0): whoever installed a job with an
 * owner is the only one who may remove it or install over its id; a job
 * without one (a config file's) any management source may remove.  An
 * install's id may be "auto": the switch picks a free one and answers
 * "ok job=N".  An answer is "ok[ ...]" or "error: ...". */
#ifndef CTL_MSG_H
#define CTL_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "ina_engine.h"

#define CTL_NAME_LEN 32 /* a port's name, NUL included */
/* The largest command (an install of INA_MAX_FANIN contributors) fits. */
#define CTL_MAX_TEXT 12288

/* Emulation of the link behind one egress port.  Zero = off. */
struct netem_cfg {
	uint64_t rate_bps;		  /* token bucket rate; 0 = line rate */
	uint64_t buffer_bytes;		  /* queue in front of the rate limiter (tail drop) */
#define NETEM_DEFAULT_BUFFER (512 * 1024) /* with a rate and no buffer setting */
/* The slowest rate accepted: a 9000 B frame then takes 72 ms and the
 * default buffer drains in 4.2 s; slower rates only make a port look dead. */
#define NETEM_MIN_RATE	     1000000ull
	uint32_t delay_us;  /* propagation delay */
	uint32_t jitter_us; /* uniform extra delay 0..jitter (order kept) */
	double loss;	    /* independent loss probability */
	/* Gilbert-Elliott bursty loss: P(good->bad), P(bad->good), loss in bad */
	double ge_p_gb, ge_p_bg, ge_loss_bad;
	/* ECN: past this share of the buffer the queue marks what it takes
	 * (CE on ECN-capable IPv4, as the simulator's --ecn); 0: never */
	double ecn;
};

enum ctl_op { CTL_INSTALL, CTL_REMOVE, CTL_EMU, CTL_STATS, CTL_CAPTURE };

struct ctl_cmd {
	enum ctl_op op;
	uint64_t owner;		 /* install, remove: 0 = none given */
	bool auto_id;		 /* install: the switch picks job.id */
	uint16_t id;		 /* remove, stats */
	char port[CTL_NAME_LEN]; /* emu: the port's name */
	struct netem_cfg netem;	 /* emu: the complete new setting */
	bool capture_on;	 /* capture: start (true) or stop the switch's configured capture */
	struct ina_job_cfg job;	 /* install */
};

/* What a job may ask of the switch it is for. */
struct ctl_limits {
	uint32_t slots;	    /* slot indices of the switch's engine */
	uint16_t max_elems; /* elements per slot */
};

/* Parses a command: 0, or -1 with "SOURCE:LINE: what" in err.  A job is
 * checked against lim; the port of an emu command is only a name here. */
int ctl_parse(const char *text, size_t len, const char *source, const struct ctl_limits *lim, struct ctl_cmd *cmd,
	      char *err, size_t errlen);

/* The settings shared with config files, from a group of them: a job
 * group, and the link-emulation keys of a port group (rate, buffer,
 * delay_us, jitter_us, loss, burst_loss). */
int ctl_job_read(const struct conf_reader *r, const struct conf_node *j, const struct ctl_limits *lim,
		 struct ina_job_cfg *job);
int ctl_netem_read(const struct conf_reader *r, const struct conf_node *g, struct netem_cfg *e);
/* The keys ctl_netem_read takes, for a caller's list of allowed keys. */
#define CTL_NETEM_KEYS "rate", "buffer", "delay_us", "jitter_us", "loss", "burst_loss", "ecn"

/* Command texts (owner 0: none); -ENOSPC when buf is too small. */
int ctl_format_install(const struct ina_job_cfg *job, uint64_t owner, char *buf, size_t n);
int ctl_format_remove(uint16_t id, uint64_t owner, char *buf, size_t n);
int ctl_format_stats(uint16_t id, char *buf, size_t n);

/* The answer to "stats": a job's progress in the switch. */
struct ctl_job_report {
	uint16_t id;
	unsigned long long completions, contributions, retransmits, drops;
	uint32_t slots_busy;
};
int ctl_format_report(const struct ctl_job_report *r, char *buf, size_t n);
int ctl_parse_report(const char *answer, struct ctl_job_report *r); /* 0 or -1 */

#endif
