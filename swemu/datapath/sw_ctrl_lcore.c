/* SPDX-License-Identifier: BSD-3-Clause */
/* The control channel's half on a switch's lcore.  A datagram to the
 * switch's control port is filtered here by what costs nothing (its source
 * is a mgmt address, its source is within its rate), copied into one of
 * the switch's SW_CTRL_QUEUE requests and handed to the control thread
 * (sw_ctrl.c), which authenticates and parses it.  What comes back is
 * applied here, where the engine and the emulators live, and answered
 * straight out of the port it came in on.  Nothing here allocates but
 * the answer's mbuf. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "sw_rt.h"

static void reply(struct sw_rt *rt, struct sw_lsw *sw, const struct sw_ctrl_req *q, const char *text)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(rt->pool);
	if (!m) {
		q->in->st.drops[SW_D_NO_MBUF]++;
		return;
	}
	struct sw_udp_hdrs h = {
		.src_ip = sw->cfg->ip, .dst_ip = q->src_ip, .src_port = q->dst_port, .dst_port = q->src_port
	};
	memcpy(h.src_mac, sw->cfg->mac, 6);
	memcpy(h.dst_mac, q->src_mac, 6);
	size_t n = strlen(text);
	size_t len = sw_frame_build_udp(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m), &h, "", 0, text, n,
					sw_csum_partial(text, n, 0));
	m->data_len = m->pkt_len = (uint32_t)len;
	/* the sender is behind the port it came in on */
	sw_send_port(rt, q->in, m, q->vlan);
}

/* A token bucket per management source: a flood of commands is cut to
 * CTRL_RATE a second before it reaches the control thread. */
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

void sw_ctrl_submit(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t vlan, const struct sw_udp_view *v)
{
	int src = -1;
	for (int i = 0; i < sw->cfg->nmgmt && src < 0; i++)
		if (sw->cfg->mgmt[i] == v->src_ip)
			src = i;
	const struct sw_switch_cfg *c = sw->cfg;
	if (src < 0 || (c->mgmt_ports && !(c->mgmt_ports >> in->index & 1)) || (c->mgmt_vlan && vlan != c->mgmt_vlan)) {
		in->st.drops[SW_D_CTRL_DENIED]++; /* not a manager, or not where managers are */
		return;
	}
	if (!within_rate(sw, src)) { /* not answered: that is what it is for */
		in->st.drops[SW_D_CTRL_RATE]++;
		return;
	}
	if (!sw->ctrl_nidle || v->payload_len > sizeof(sw->ctrl_reqs[0].text)) {
		/* the parser is behind (or not running); the MTU check made
		 * the second case impossible */
		in->st.drops[SW_D_CTRL_BUSY]++;
		return;
	}
	struct sw_ctrl_req *q = sw->ctrl_idle[--sw->ctrl_nidle];
	q->in = in;
	q->vlan = vlan;
	q->src_ip = v->src_ip;
	q->src_port = v->src_port;
	q->dst_port = v->dst_port;
	memcpy(q->src_mac, v->src_mac, 6);
	q->len = (uint16_t)v->payload_len;
	memcpy(q->text, v->payload, v->payload_len);
	/* never full: it holds every request there is */
	rte_ring_sp_enqueue(sw->ctrl_in, q);
	if (rt->ctrl_running)
		eventfd_write(rt->ctrl_wake, 1);
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

/* Multicast plans made before a job or a link emulation changed are made
 * again (sw_result.c), on every partition (held still by apply). */
static void plans_stale(struct sw_lsw *sw)
{
	for (int k = 0; k < sw->cfg->partitions; k++)
		sw->parts[k]->plan_gen++;
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
	/* on every partition (held still by apply), or on none */
	int rc = ina_job_install(sw->eng, &cmd->job, why);
	for (int k = 1; rc == 0 && k < sw->cfg->partitions; k++)
		if ((rc = ina_job_install(sw->parts[k]->eng, &cmd->job, why)) < 0)
			for (int j = 0; j < k; j++)
				ina_job_remove(sw->parts[j]->eng, cmd->job.id);
	if (rc == 0)
		plans_stale(sw);
	return rc;
}

/* The answer to a job's "stats": its counters, an agent's view of its
 * rack's progress.  -ENOENT without the job. */
static int job_report(struct sw_lsw *sw, uint16_t id, char *msg, size_t cap)
{
	if (!ina_job_stats(sw->eng, id))
		return -ENOENT;
	struct ctl_job_report r = { .id = id };
	/* a partitioned switch's job: the sum of its partitions' counters
	 * (their lcores' own, read as telemetry reads them) */
	for (int part = 0; part < sw->cfg->partitions; part++) {
		struct ina_engine *eng = sw->parts[part]->eng;
		const struct ina_job_stats *js = ina_job_stats(eng, id);
		if (!js)
			continue;
		r.completions += js->completions;
		r.contributions += js->contributions;
		r.retransmits += js->retransmits;
		r.slots_busy += ina_job_slots_busy(eng, id);
		for (int k = 1; k < INA_R_MAX_; k++)
			r.drops += js->drops[k];
	}
	ctl_format_report(&r, msg, cap);
	return 0;
}

/* Applies a parsed command; the answer goes into q->answer. */
static void apply_one(struct sw_lsw *sw, struct sw_ctrl_req *q)
{
	struct ctl_cmd *cmd = &q->cmd;
	const char *why = NULL;
	int rc = 0;
	if (!sw->eng && cmd->op != CTL_EMU && cmd->op != CTL_CAPTURE) {
		/* a plain switch's control channel sets links only */
		sw->st.ctrl_refused++;
		snprintf(q->answer, sizeof(q->answer), "error: ctrl: INA is off on this switch\n");
		return;
	}
	switch (cmd->op) {
	case CTL_INSTALL:
		if ((rc = install(sw, cmd, &why)) == 0 && cmd->auto_id) {
			sw->st.ctrl_ok++;
			snprintf(q->answer, sizeof(q->answer), "ok job=%u\n", cmd->job.id);
			return;
		}
		break;
	case CTL_REMOVE:
		if (!owns(sw, cmd->id, cmd->owner)) {
			rc = -EPERM; /* another tenant's job: not removed */
			why = "not the owner of this job";
			break;
		}
		rc = ina_job_remove(sw->eng, cmd->id);
		for (int k = 1; rc == 0 && k < sw->cfg->partitions; k++)
			ina_job_remove(sw->parts[k]->eng, cmd->id);
		if (rc == 0)
			plans_stale(sw);
		why = "no job with this id";
		break;
	case CTL_EMU:
		/* every partition's frames re-timed from now, one after another
		 * on the line they share */
		if (sw->ports[q->port].wire_ns)
			__atomic_store_n(sw->ports[q->port].wire_ns, sw->now_ns, __ATOMIC_RELAXED);
		for (int k = 0; k < sw->cfg->partitions; k++)
			sw_netem_set(&sw->parts[k]->ports[q->port].netem, &cmd->netem, sw->now_ns);
		plans_stale(sw); /* an emulating port takes its frames one by one */
		break;
	case CTL_CAPTURE:
		if (!sw->cap.f) {
			rc = -ENOENT;
			why = "no capture is set up on this switch (its config's 'capture' group)";
			break;
		}
		sw_capture_run(&sw->cap, cmd->capture_on);
		sw->st.ctrl_ok++;
		snprintf(q->answer, sizeof(q->answer), "ok capture=%s packets=%llu\n", cmd->capture_on ? "on" : "off",
			 (unsigned long long)sw->cap.packets);
		return;
	case CTL_STATS:
		if ((rc = job_report(sw, cmd->id, q->answer, sizeof(q->answer))) == 0) {
			sw->st.ctrl_ok++;
			return;
		}
		why = "no job with this id";
		break;
	}
	if (rc < 0) {
		/* a valid command the switch answers with a refusal (no such
		 * job, no room): not a dropped packet */
		sw->st.ctrl_refused++;
		snprintf(q->answer, sizeof(q->answer), "error: ctrl: %s\n", why);
	} else {
		sw->st.ctrl_ok++;
		snprintf(q->answer, sizeof(q->answer), "ok\n");
	}
}

/* A partitioned switch changes jobs and link emulation on every partition
 * at once (held still meanwhile: sw_parts.c). */
static void apply(struct sw_lsw *sw, struct sw_ctrl_req *q)
{
	const enum ctl_op op = q->cmd.op;
	if (sw->cfg->partitions == 1 || op == CTL_STATS || op == CTL_CAPTURE) {
		apply_one(sw, q);
		return;
	}
	if (!sw_parts_hold(sw)) {
		sw->st.ctrl_refused++;
		snprintf(q->answer, sizeof(q->answer),
			 "error: ctrl: switch '%s': a partition did not stand still within %d ms; nothing changed\n",
			 sw->cfg->name, SW_HOLD_WAIT_MS);
		return;
	}
	apply_one(sw, q);
	sw_parts_release(sw);
}

void sw_ctrl_apply(struct sw_rt *rt, struct sw_lsw *sw)
{
	struct sw_ctrl_req *q;
	while (rte_ring_sc_dequeue(sw->ctrl_out, (void **)&q) == 0) {
		if (q->drop) /* not authenticated, or not a valid command */
			q->in->st.drops[q->drop]++;
		else
			apply(sw, q);
		reply(rt, sw, q, q->answer);
		sw->ctrl_idle[sw->ctrl_nidle++] = q;
	}
}
