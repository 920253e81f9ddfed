/* The control channel: plain-text commands (nic/conf.h syntax, see
 * sw_ctrl_parse) in UDP datagrams to the switch's address and ctrl_port,
 * accepted only from the configured mgmt sources.  They run on the datapath
 * lcore between two packets, so no locking is needed; the answer, "ok" or
 * "error: ...", goes back to the sender. */
#include <stdio.h>
#include <string.h>

#include <rte_mbuf.h>

#include "sw_rt.h"

static void reply(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t vlan,
		  const struct sw_udp_view *v, const char *text)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(rt->pool);
	if (!m) {
		in->st.drops[SW_D_NO_MBUF]++;
		return;
	}
	struct sw_udp_hdrs h = { .src_ip = sw->cfg->ip, .dst_ip = v->src_ip,
				 .src_port = v->dst_port, .dst_port = v->src_port };
	memcpy(h.src_mac, sw->cfg->mac, 6);
	memcpy(h.dst_mac, v->src_mac, 6);
	size_t n = strlen(text);
	size_t len = sw_frame_build_udp(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m), &h, "", 0, text, n,
					sw_csum_partial(text, n, 0));
	m->data_len = m->pkt_len = (uint32_t)len;
	/* straight back out of the port it came in on: the sender is there */
	sw_send_port(rt, in, m, vlan);
}

void sw_ctrl_handle(struct sw_rt *rt, struct sw_lsw *sw, struct sw_port *in, uint16_t vlan,
		    const struct sw_udp_view *v)
{
	struct sw_ctrl_cmd *cmd = sw->ctrl_cmd; /* a job config is 3 KiB: not on the stack */
	char err[300], msg[320];
	bool allowed = false;

	for (int i = 0; i < sw->cfg->nmgmt; i++)
		allowed |= sw->cfg->mgmt[i] == v->src_ip;
	if (!allowed) {
		in->st.drops[SW_D_CTRL_DENIED]++;
		return;
	}
	int rc = sw_ctrl_parse((const char *)v->payload, v->payload_len, sw->cfg, cmd, err, sizeof(err));
	if (rc == 0) {
		const char *why = NULL;
		switch (cmd->op) {
		case SW_CTRL_INSTALL:
			rc = ina_job_install(sw->eng, &cmd->job, &why);
			break;
		case SW_CTRL_REMOVE:
			rc = ina_job_remove(sw->eng, cmd->id);
			why = "no job with this id";
			break;
		case SW_CTRL_EMU:
			sw_emu_set(&sw->ports[cmd->port].emu, &cmd->emu);
			break;
		case SW_CTRL_STATS: {
			/* an agent's view of its rack's progress: the job's counters */
			const struct ina_job_stats *js = ina_job_stats(sw->eng, cmd->id);
			if (!js) {
				rc = -1;
				why = "no job with this id";
				break;
			}
			uint64_t drops = 0;
			for (int r = 1; r < INA_R_MAX_; r++)
				drops += js->drops[r];
			sw->st.ctrl_ok++;
			snprintf(msg, sizeof(msg),
				 "ok job=%u completions=%llu contributions=%llu retransmits=%llu slots_busy=%u drops=%llu\n",
				 cmd->id, (unsigned long long)js->completions, (unsigned long long)js->contributions,
				 (unsigned long long)js->retransmits, ina_job_slots_busy(sw->eng, cmd->id),
				 (unsigned long long)drops);
			reply(rt, sw, in, vlan, v, msg);
			return;
		}
		}
		if (rc < 0) {
			/* a valid command the switch answers with a refusal (no such
			 * job, no room): not a dropped packet.  Agents remove a
			 * crashed run's jobs before installing, and those removes
			 * showed up in every trial report as drops */
			sw->st.ctrl_refused++;
			snprintf(msg, sizeof(msg), "error: ctrl: %s\n", why);
			reply(rt, sw, in, vlan, v, msg);
			return;
		}
	}
	if (rc < 0) {
		in->st.drops[SW_D_CTRL_BAD]++;
		snprintf(msg, sizeof(msg), "error: %s\n", err);
	} else {
		sw->st.ctrl_ok++;
		snprintf(msg, sizeof(msg), "ok\n");
	}
	reply(rt, sw, in, vlan, v, msg);
}
