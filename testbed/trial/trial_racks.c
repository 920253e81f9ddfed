/* SPDX-License-Identifier: BSD-3-Clause */
/* The racks of a trial file: how many, their hosts (within what the
 * engine takes: 8 racks and 16 hosts on this testbed, 128 racks and 1024
 * hosts in the simulator), which ToRs aggregate and in which order they
 * are upgraded, what the hardware costs, each rack's host rate, and which
 * switches and ports are captured. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "trial_cfg.h"

/* hosts_per_rack = N (every rack) or [N0, N1, ...] (one per rack). */
static int get_rack_sizes(const struct conf_node *t, struct trial *tr)
{
	const struct conf_node *s = conf_member(t, "hosts_per_rack");
	tr->world = 0;
	if (s && (s->type == CONF_ARRAY || s->type == CONF_LIST)) {
		if ((int)s->n != tr->racks)
			return trial_fail(tr, s, "hosts_per_rack: want one host count per rack (%d), such as [4, 2]",
					  tr->racks);
		for (int r = 0; r < tr->racks; r++) {
			const struct conf_node *e = conf_elem(s, (unsigned)r);
			if (e->type != CONF_INT || e->v.i < 1 || e->v.i > tr->max_rack)
				return trial_fail(tr, e, "hosts_per_rack: entry %d is not a host count from 1 to %d", r,
						  tr->max_rack);
			tr->size[r] = (int)e->v.i;
			tr->uneven |= tr->size[r] != tr->size[0];
		}
	} else {
		int n = 4;
		if (trial_get_int(tr, t, "hosts_per_rack", 1, tr->max_rack, &n) < 0)
			return -1;
		for (int r = 0; r < tr->racks; r++)
			tr->size[r] = n;
	}
	for (int r = 0; r < tr->racks; r++)
		tr->world += tr->size[r];
	if (tr->world < 2 || tr->world > tr->max_world)
		return trial_fail(tr, s ? s : t, "racks x hosts_per_rack = %d hosts: must be from 2 to %d %s",
				  tr->world, tr->max_world, tr->sim ? "in the simulator" : "on this testbed");
	return 0;
}

static int get_ina(const struct conf_node *t, struct trial *tr)
{
	const struct conf_node *s = conf_member(t, "ina_racks");
	for (int r = 0; r < tr->racks; r++)
		tr->ina[r] = true; /* default: every ToR INA-capable */
	if (!s)
		return 0;
	if (s->type == CONF_STRING) {
		const char *v = conf_string(s);
		if (strcmp(v, "all") && strcmp(v, "none") && strcmp(v, "sweep"))
			return trial_fail(
				tr, s,
				"ina_racks = \"%s\": want \"all\", \"none\", \"sweep\" or a list of rack numbers", v);
		tr->sweep = !strcmp(v, "sweep"); /* its main runs: every rack INA */
		for (int r = 0; r < tr->racks; r++)
			tr->ina[r] = strcmp(v, "none") != 0;
		return 0;
	}
	if (s->type != CONF_ARRAY && s->type != CONF_LIST)
		return trial_fail(tr, s, "ina_racks: want \"all\", \"none\", \"sweep\" or a list of rack numbers");
	memset(tr->ina, 0, sizeof(tr->ina));
	for (int i = 0; i < (int)s->n; i++) {
		const struct conf_node *e = conf_elem(s, (unsigned)i);
		if (e->type != CONF_INT)
			return trial_fail(tr, e, "ina_racks: rack numbers are integers");
		long long r = e->v.i;
		if (r < 0 || r >= tr->racks)
			return trial_fail(tr, e, "ina_racks: rack %lld does not exist (racks = %d)", r, tr->racks);
		if (tr->ina[r])
			return trial_fail(tr, e, "ina_racks: rack %lld is listed twice", r);
		tr->ina[r] = true;
	}
	return 0;
}

/* sweep_order: every rack once, the order INA ToRs replace plain ones
 * (default 0, 1, ...); only with ina_racks = "sweep". */
static int get_order(const struct conf_node *t, struct trial *tr)
{
	const struct conf_node *s = conf_member(t, "sweep_order");
	for (int r = 0; r < tr->racks; r++)
		tr->order[r] = r;
	if (!s)
		return 0;
	if (!tr->sweep)
		return trial_fail(tr, s, "sweep_order needs ina_racks = \"sweep\"");
	if ((s->type != CONF_ARRAY && s->type != CONF_LIST) || (int)s->n != tr->racks)
		return trial_fail(tr, s, "sweep_order: want a list of all %d racks in the order they get INA",
				  tr->racks);
	bool seen[TRIAL_MAX_RACKS] = { false };
	for (int i = 0; i < tr->racks; i++) {
		const struct conf_node *e = conf_elem(s, (unsigned)i);
		if (e->type != CONF_INT || e->v.i < 0 || e->v.i >= tr->racks)
			return trial_fail(tr, e, "sweep_order: rack numbers are 0..%d", tr->racks - 1);
		if (seen[e->v.i])
			return trial_fail(tr, e, "sweep_order: rack %lld is listed twice", e->v.i);
		seen[e->v.i] = true;
		tr->order[i] = (int)e->v.i;
	}
	return 0;
}

/* costs = { ina_tor; plain_tor; host; [ina_tor_power] }: what a deployment
 * costs, in any one currency (the report names none). */
static int get_costs(const struct conf_node *t, struct trial *tr)
{
	static const char *const keys[] = { "ina_tor", "plain_tor", "host", "ina_tor_power", NULL };
	const struct conf_node *c;
	if (trial_number_group(tr, t, "costs", keys, 3, 0, 1e12,
			       "{ ina_tor = 30000; plain_tor = 12000; host = 25000; }", &c, tr->cost) < 0)
		return -1;
	if (!c)
		return 0;
	if (tr->cost[1] * tr->racks + tr->cost[2] * tr->world <= 0)
		return trial_fail(tr, c, "costs: a deployment without INA would cost nothing");
	tr->costs = true;
	return 0;
}

/* rack_host_rates = ["200M", "100M", ...]: one rate per rack for its host
 * links (an older rack), in place of host_rate. */
static int get_rack_rates(const struct conf_node *t, struct trial *tr)
{
	const struct conf_node *s = conf_member(t, "rack_host_rates");
	if (!s)
		return 0;
	if ((s->type != CONF_ARRAY && s->type != CONF_LIST) || (int)s->n != tr->racks)
		return trial_fail(tr, s, "rack_host_rates: want one rate per rack (%d), such as [\"200M\", \"100M\"]",
				  tr->racks);
	for (int r = 0; r < tr->racks; r++) {
		const struct conf_node *e = conf_elem(s, (unsigned)r);
		const char *v = conf_string(e);
		uint64_t x;
		if (!v || !trial_safe(v) || parse_rate(v, &x) < 0 || x < 1e6 || x > 1e12)
			return trial_fail(tr, e, "rack_host_rates: entry %d is not a rate from 1M to 1T", r);
		size_t l = strlen(tr->rack_rates);
		snprintf(tr->rack_rates + l, sizeof(tr->rack_rates) - l, "%s%s", r ? "," : "", v);
	}
	return 0;
}

/* A capture entry: "torR", "spine", or one of their ports ("tor0.h1",
 * "tor1.up", "spine.t0"), as topo.sh names them. */
static bool capture_target(const struct trial *tr, const char *w)
{
	char sw[16];
	const char *dot = strchr(w, '.');
	size_t n = dot ? (size_t)(dot - w) : strlen(w);
	if (n >= sizeof(sw))
		return false;
	memcpy(sw, w, n);
	sw[n] = 0;
	int r = -1, first = 0, k = -1;
	char c;
	if (!strcmp(sw, "spine")) {
		if (tr->racks < 2)
			return false;
	} else if (sscanf(sw, "tor%d%c", &r, &c) != 1 || r < 0 || r >= tr->racks) {
		return false;
	}
	if (!dot)
		return true;
	for (int i = 0; i < r; i++)
		first += tr->size[i];
	if (r < 0) /* the spine's ports: t0 .. t(R-1) */
		return sscanf(dot + 1, "t%d%c", &k, &c) == 1 && k >= 0 && k < tr->racks;
	if (!strcmp(dot + 1, "up"))
		return tr->racks > 1;
	return sscanf(dot + 1, "h%d%c", &k, &c) == 1 && k >= first && k < first + tr->size[r];
}

/* capture = ["tor0", "tor1.up", ...]: what the trial's switches write to
 * pcapng files (docs/TRIAL.md); capture_snaplen bytes of each frame. */
static int get_capture(const struct conf_node *t, struct trial *tr)
{
	const struct conf_node *s = conf_member(t, "capture");
	tr->capture_snaplen = 128;
	if (trial_get_int(tr, t, "capture_snaplen", 64, 65535, &tr->capture_snaplen) < 0)
		return -1;
	if (!s)
		return conf_member(t, "capture_snaplen")
			       ? trial_fail(tr, conf_member(t, "capture_snaplen"), "capture_snaplen needs capture")
			       : 0;
	if ((s->type != CONF_ARRAY && s->type != CONF_LIST) || s->n == 0 || s->n > 16)
		return trial_fail(tr, s,
				  "capture: want a list of 1 to 16 switches or ports, such as [\"tor0\", \"tor1.up\"]");
	for (unsigned i = 0; i < s->n; i++) {
		const struct conf_node *e = conf_elem(s, i);
		const char *w = conf_string(e);
		if (!w || !trial_safe(w) || !capture_target(tr, w))
			return trial_fail(
				tr, e,
				"capture: %s%s%s is not a switch or port of this trial (torR, spine, torR.hI, torR.up, "
				"spine.tR)",
				w ? "\"" : "", w ? w : "(not a string)", w ? "\"" : "");
		if (trial_has_word(tr->capture, w))
			return trial_fail(tr, e, "capture: \"%s\" is listed twice", w);
		trial_append_word(tr->capture, sizeof(tr->capture), w);
	}
	return 0;
}

int trial_get_partitions(const struct conf_node *t, struct trial *tr)
{
	const struct conf_node *p = conf_member(t, "tor_partitions");
	if (trial_get_int(tr, t, "tor_partitions", 1, 4, &tr->tor_partitions) < 0)
		return -1;
	if (tr->tor_partitions == 1)
		return 0;
	const int n = tr->tor_partitions;
	if (tr->sim)
		return trial_fail(tr, p, "tor_partitions = %d: the simulator (engine = \"sim\") does not model it", n);
	if (tr->processes)
		return trial_fail(tr, p,
				  "tor_partitions = %d: needs one swemu, not processes = true (nothing steers a veth "
				  "uplink)",
				  n);
	if (strcmp(tr->pmd, "af_xdp"))
		return trial_fail(
			tr, p, "tor_partitions = %d: needs pmd = \"af_xdp\" (af_packet cannot be steered by UDP port)",
			n);
	if (*tr->capture)
		return trial_fail(tr, p, "tor_partitions = %d: a capture needs the ToR on one lcore", n);
	if (tr->world * n > 32)
		return trial_fail(tr, p, "tor_partitions = %d: %d hosts make %d DPDK devices; DPDK takes 32", n,
				  tr->world, tr->world * n);
	return 0;
}

int trial_get_racks(const struct conf_node *t, struct trial *tr)
{
	if (trial_get_int(tr, t, "racks", 1, tr->max_racks, &tr->racks) < 0 || get_rack_sizes(t, tr) < 0 ||
	    get_ina(t, tr) < 0 || get_order(t, tr) < 0 || get_costs(t, tr) < 0 || get_rack_rates(t, tr) < 0 ||
	    get_capture(t, tr) < 0)
		return -1;
	return 0;
}
