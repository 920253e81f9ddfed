/* SPDX-License-Identifier: BSD-3-Clause */
/* The registry of algorithms, and what the ones that use INA share. */
#include "hcl_algo.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "hcl_xfer.h"
#include "ina_proto.h"
#include "psina_plan.h"
#include "softsw.h"

const struct hcl_algo_ops *hcl_algo_of(enum hcl_algo id)
{
	static const struct hcl_algo_ops *const all[] = { [HCL_ALGO_RING] = &hcl_algo_ring,
							  [HCL_ALGO_HIER] = &hcl_algo_hier,
							  [HCL_ALGO_PS] = &hcl_algo_ps,
							  [HCL_ALGO_PS_INA] = &hcl_algo_ps_ina,
							  [HCL_ALGO_AGENT_RING] = &hcl_algo_aring };
	return id > 0 && (size_t)id < sizeof(all) / sizeof(all[0]) ? all[id] : NULL;
}

const char *hcl_algo_name(enum hcl_algo a)
{
	const struct hcl_algo_ops *p = hcl_algo_of(a);
	return p ? p->name : NULL;
}

int hcl_algo_from_name(const char *name, enum hcl_algo *a)
{
	for (int i = HCL_ALGO_RING; i <= HCL_ALGO_AGENT_RING; i++)
		if (name && !strcmp(name, hcl_algo_name((enum hcl_algo)i))) {
			*a = (enum hcl_algo)i;
			return 0;
		}
	return -EINVAL;
}

int hcl_ina_prepare(struct hcl_comm *c, struct dgram_udp_opts *o)
{
	const struct hcl_env *e = &c->env;
	c->info[c->rank].ina.port = htons(e->ina_port);
	c->info[c->rank].tor = e->ina_switch;
	/* the INA socket and a software PS or ring member bind these ports
	 * on the data address later: the data socket's kernel-chosen port
	 * must not take one of them first */
	o->avoid_ports[0] = e->ina_port;
	o->avoid_ports[1] = e->ps_port;
	for (unsigned h = 1; h < e->ps_shards; h++) /* the PS shard this rank hosts, if any */
		if (psina_shard_host(h, e->ps_shards, (unsigned)c->world) == c->rank)
			o->avoid_ports[2] = (uint16_t)(e->ps_port + h);
	return 0;
}

int hcl_ina_socket(const struct hcl_comm *c, struct dgram_transport *t, char *err, size_t errlen)
{
	struct sockaddr_in me = c->peers[c->rank];
	me.sin_port = htons(c->env.ina_port);
	/* checksum 0, as SwitchML hosts send: saves the switch a pass; ECN,
	 * so that the windows may follow the queues' marks */
	struct dgram_udp_opts uo = { .zero_checksum = 1, .ecn = 1 };
	return dgram_udp_open(t, &me, &uo, err, errlen);
}

void hcl_comm_xfer_cfg(const struct hcl_comm *c, struct hcl_xfer_cfg *xc)
{
	*xc = (struct hcl_xfer_cfg){ .rank = (unsigned)c->rank,
				     .nranks = (unsigned)c->world,
				     .peers = c->peers,
				     .payload = c->env.xfer_payload,
				     .window = c->env.xfer_window,
				     .local_queue = c->env.xfer_local_queue,
				     .timer_scale = c->env.timer_scale,
				     .coalesced = true,	    /* hcl_comm_create opens data sockets so */
				     .peers_ready = true }; /* and opens them before the rendezvous */
}

_Static_assert(INA_R_MAX_ <= HCL_DROP_REASONS, "hcl_comm_stats.agg_drops holds every reason");

const char *hcl_drop_reason(unsigned r) { return r > 0 && r < INA_R_MAX_ ? ina_reason_name((enum ina_reason)r) : NULL; }

void hcl_softsw_stats(const struct softsw *s, struct hcl_comm_stats *out)
{
	if (!s)
		return;
	const struct ina_engine_stats *e = softsw_stats(s);
	out->agg_packets += e->rx_packets;
	out->agg_accepted += e->accepted;
	for (int r = 1; r < INA_R_MAX_; r++) {
		out->agg_dropped += e->drops[r];
		out->agg_drops[r] += e->drops[r];
	}
}
