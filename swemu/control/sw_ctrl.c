/* SPDX-License-Identifier: BSD-3-Clause */
/* The control channel: plain-text commands (nic/conf.h syntax, see
 * sw_ctrl_parse) in UDP datagrams to the switch's address and ctrl_port,
 * accepted only from the configured mgmt sources.  They run on the datapath
 * lcore between two packets, so no locking is needed; the answer, "ok" or
 * "error: ...", goes back to the sender. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_mbuf.h>

#include "sw_rt.h"

static void reply(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t vlan, const struct sw_udp_view *v,
		  const char *text)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(rt->pool);
	if (!m) {
		in->st.drops[SW_D_NO_MBUF]++;
		return;
	}
	struct sw_udp_hdrs h = {
		.src_ip = sw->cfg->ip, .dst_ip = v->src_ip, .src_port = v->dst_port, .dst_port = v->src_port
	};
	memcpy(h.src_mac, sw->cfg->mac, 6);
	memcpy(h.dst_mac, v->src_mac, 6);
	size_t n = strlen(text);
	size_t len = sw_frame_build_udp(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m), &h, "", 0, text, n,
					sw_csum_partial(text, n, 0));
	m->data_len = m->pkt_len = (uint32_t)len;
	/* straight back out of the port it came in on: the sender is there */
	sw_send_port(rt, in, m, vlan);
}

/* Parses a command for this switch: the grammar's own checks, then the
 * switch's (the port of an emu command).  0, or -1 with why in err. */
static int parse_for(const struct sw_lsw *sw, const char *text, size_t len, struct ctl_cmd *cmd, int *port, char *err,
		     size_t errlen)
{
	const struct ctl_limits lim = { sw->cfg->slots, sw->cfg->max_elems };
	if (ctl_parse(text, len, "ctrl", &lim, cmd, err, errlen) < 0)
		return -1;
	if (cmd->op == CTL_EMU && (*port = sw_cfg_find_port(sw->cfg, cmd->port)) < 0) {
		snprintf(err, errlen, "ctrl:1: switch '%s' has no port '%s'", sw->cfg->name, cmd->port);
		return -1;
	}
	return 0;
}

/* Whether a command of `owner` may remove or replace job id: a job
 * installed with an owner belongs to it alone (tenants sharing a ToR);
 * one without (a config file's) to every management source.  Counts a
 * refusal. */
static bool owns(struct sw_lsw *sw, uint16_t id, uint64_t owner)
{
	const struct ina_job_cfg *j = ina_job_config(sw->eng, id);
	if (!j || !j->owner || j->owner == owner)
		return true;
	sw->st.ctrl_not_owner++;
	return false;
}

/* An install: an id of the switch's choosing for "auto", never over
 * another owner's job.  0 or a negative errno with why. */
static int install(struct sw_lsw *sw, struct ctl_cmd *cmd, const char **why)
{
	if (cmd->auto_id) {
		/* a re-send (its "ok job=N" lost) gets the job it installed, not
		 * a second one: the same owner and the same settings */
		cmd->job.owner = cmd->owner;
		for (uint32_t id = SW_AUTO_JOB_MIN; cmd->owner && id <= 65535; id++) {
			const struct ina_job_cfg *j = ina_job_config(sw->eng, (uint16_t)id);
			cmd->job.id = (uint16_t)id;
			if (j && memcmp(j, &cmd->job, sizeof(*j)) == 0)
				return 0;
		}
		int id = ina_job_free_id(sw->eng, SW_AUTO_JOB_MIN);
		if (id < 0) {
			*why = "job table full";
			return -ENOSPC;
		}
		cmd->job.id = (uint16_t)id;
	}
	if (!owns(sw, cmd->job.id, cmd->owner)) {
		*why = "job id in use by another owner";
		return -EPERM;
	}
	cmd->job.owner = cmd->owner;
	return ina_job_install(sw->eng, &cmd->job, why);
}

/* A token bucket per management source: a flood of commands (each one a
 * parse on the datapath lcore) is cut to CTRL_RATE a second. */
#define CTRL_RATE  50.0
#define CTRL_BURST 100.0
static bool within_rate(struct sw_lsw *sw, int src)
{
	typeof(sw->ctrl_bucket[0]) *b = &sw->ctrl_bucket[src];
	if (b->at_ns == 0)
		b->tokens = CTRL_BURST;
	else
		b->tokens += (double)(sw->now_ns - b->at_ns) * 1e-9 * CTRL_RATE;
	if (b->tokens > CTRL_BURST)
		b->tokens = CTRL_BURST;
	b->at_ns = sw->now_ns;
	if (b->tokens < 1)
		return false;
	b->tokens -= 1;
	return true;
}

void sw_ctrl_handle(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t vlan, const struct sw_udp_view *v)
{
	struct ctl_cmd *cmd = sw->ctrl_cmd; /* a job config is 3 KiB: not on the stack */
	char err[300], msg[320];
	int src = -1, port = -1;

	for (int i = 0; i < sw->cfg->nmgmt && src < 0; i++)
		if (sw->cfg->mgmt[i] == v->src_ip)
			src = i;
	if (src < 0) {
		in->st.drops[SW_D_CTRL_DENIED]++;
		return;
	}
	if (!within_rate(sw, src)) { /* not answered: that is what it is for */
		in->st.drops[SW_D_CTRL_RATE]++;
		return;
	}
	const char *text;
	size_t len;
	if (!sw->cfg->ctrl_key.len) { /* no key to check a signature against */
		ctl_auth_body((const char *)v->payload, v->payload_len, &text, &len);
	} else {
		enum ctl_auth_verdict a = ctl_auth_check(&sw->cfg->ctrl_key, &sw->ctrl_seen, ctl_auth_now_ms(),
							 (const char *)v->payload, v->payload_len, &text, &len);
		if (a != CTL_AUTH_OK) {
			in->st.drops[SW_D_CTRL_AUTH]++;
			snprintf(msg, sizeof(msg), "error: ctrl: not authenticated: %s\n", ctl_auth_verdict_name(a));
			reply(rt, sw, in, vlan, v, msg);
			return;
		}
	}
	if (parse_for(sw, text, len, cmd, &port, err, sizeof(err)) < 0) {
		in->st.drops[SW_D_CTRL_BAD]++;
		snprintf(msg, sizeof(msg), "error: %s\n", err);
		reply(rt, sw, in, vlan, v, msg);
		return;
	}
	const char *why = NULL;
	int rc = 0;
	switch (cmd->op) {
	case CTL_INSTALL:
		if ((rc = install(sw, cmd, &why)) == 0 && cmd->auto_id) {
			snprintf(msg, sizeof(msg), "ok job=%u\n", cmd->job.id);
			sw->st.ctrl_ok++;
			reply(rt, sw, in, vlan, v, msg);
			return;
		}
		break;
	case CTL_REMOVE:
		if (!owns(sw, cmd->id, cmd->owner)) {
			/* another tenant's job: not removed */
			rc = -EPERM;
			why = "not the owner of this job";
			break;
		}
		rc = ina_job_remove(sw->eng, cmd->id);
		why = "no job with this id";
		break;
	case CTL_EMU: sw_netem_set(&sw->ports[port].netem, &cmd->netem, sw->now_ns); break;
	case CTL_STATS: {
		/* an agent's view of its rack's progress: the job's counters */
		const struct ina_job_stats *js = ina_job_stats(sw->eng, cmd->id);
		if (!js) {
			rc = -ENOENT;
			why = "no job with this id";
			break;
		}
		struct ctl_job_report r = { .id = cmd->id,
					    .completions = js->completions,
					    .contributions = js->contributions,
					    .retransmits = js->retransmits,
					    .slots_busy = ina_job_slots_busy(sw->eng, cmd->id) };
		for (int k = 1; k < INA_R_MAX_; k++)
			r.drops += js->drops[k];
		ctl_format_report(&r, msg, sizeof(msg));
		sw->st.ctrl_ok++;
		reply(rt, sw, in, vlan, v, msg);
		return;
	}
	}
	if (rc < 0) {
		/* a valid command the switch answers with a refusal (no such
		 * job, no room): not a dropped packet */
		sw->st.ctrl_refused++;
		snprintf(msg, sizeof(msg), "error: ctrl: %s\n", why);
	} else {
		sw->st.ctrl_ok++;
		snprintf(msg, sizeof(msg), "ok\n");
	}
	reply(rt, sw, in, vlan, v, msg);
}
