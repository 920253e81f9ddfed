/* SPDX-License-Identifier: BSD-3-Clause */
#include "sw_cfg.h"

#include "conf.h"
#include "ctl_msg.h"
#include "parse.h"
#include "sw_fdb.h"
#include "sw_frame.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int get_name(const struct conf_reader *p, const struct conf_node *g, char *out)
{
	const char *s = NULL;
	if (conf_get_str(p, g, "name", true, &s) < 0)
		return -1;
	const struct conf_node *at = conf_member(g, "name");
	size_t n = strlen(s);
	if (n == 0 || n >= SW_NAME_LEN)
		return conf_fail(p, at, "name must be 1..%d characters", SW_NAME_LEN - 1);
	/* names become telemetry keys: [A-Za-z0-9_] only */
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return conf_fail(p, at, "name '%s' may only use letters, digits and _", s);
	memcpy(out, s, n + 1);
	return 0;
}

/* ---- sections ---- */

static int cmp_u16(const void *a, const void *b) { return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b; }

/* trunk = [ 10, 20 ]: those VLANs tagged; 'vlan', if given, is then the
 * native (untagged) one, else untagged frames are refused. */
static int load_trunk(const struct conf_reader *p, const struct conf_node *pg, struct sw_port_cfg *pc)
{
	const struct conf_node *t = conf_member(pg, "trunk");
	pc->ntrunk = 0;
	if (!t)
		return 0;
	int n = t->type == CONF_ARRAY ? (int)t->n : -1;
	if (n < 1 || n > SW_MAX_TRUNK)
		return conf_fail(p, t, "port '%s': 'trunk' must be a list of 1..%d VLAN ids [ 10, 20 ]", pc->name,
				 SW_MAX_TRUNK);
	for (int i = 0; i < n; i++) {
		const struct conf_node *e = conf_elem(t, (unsigned)i);
		long long v = e->type == CONF_INT ? e->v.i : -1;
		if (v < 1 || v > 4094)
			return conf_fail(p, t, "port '%s': trunk entry %d must be a VLAN id 1..4094", pc->name, i);
		pc->trunk[i] = (uint16_t)v;
	}
	qsort(pc->trunk, (size_t)n, sizeof(pc->trunk[0]), cmp_u16);
	for (int i = 1; i < n; i++)
		if (pc->trunk[i] == pc->trunk[i - 1])
			return conf_fail(p, t, "port '%s': vlan %u is twice in 'trunk'", pc->name, pc->trunk[i]);
	if (!conf_member(pg, "vlan"))
		pc->vlan = 0; /* no native VLAN */
	for (int i = 0; i < n; i++)
		if (pc->trunk[i] == pc->vlan)
			return conf_fail(p, t,
					 "port '%s': vlan %u is its native (untagged) vlan and cannot be tagged too",
					 pc->name, pc->vlan);
	pc->ntrunk = n;
	return 0;
}

/* dev = [ "d0", "d1", ... ]: a device per partition (check_partitions
 * holds the count to the switch's partitions); *dev is the first. */
static int load_part_devs(const struct conf_reader *p, const struct conf_node *devs, struct sw_port_cfg *pc,
			  const char **dev)
{
	if (devs->n < 1 || devs->n > SW_MAX_PARTITIONS)
		return conf_fail(p, devs, "port '%s': 'dev' lists 1..%d devices, one per partition", pc->name,
				 SW_MAX_PARTITIONS);
	for (unsigned k = 0; k < devs->n; k++) {
		const char *d = conf_string(conf_elem(devs, k));
		if (!d || strlen(d) == 0 || strlen(d) >= sizeof(pc->part_dev[k]))
			return conf_fail(p, devs,
					 "port '%s': 'dev' entry %u must be a device name of 1..%zu characters",
					 pc->name, k, sizeof(pc->part_dev[k]) - 1);
		for (unsigned j = 0; j < k; j++)
			if (!strcmp(pc->part_dev[j], d))
				return conf_fail(p, devs, "port '%s': device '%s' is in 'dev' twice", pc->name, d);
		snprintf(pc->part_dev[k], sizeof(pc->part_dev[k]), "%s", d);
	}
	pc->npart_dev = (int)devs->n;
	*dev = pc->part_dev[0];
	return 0;
}

static int load_ports(const struct conf_reader *p, const struct conf_node *sw, struct sw_switch_cfg *s)
{
	static const char *const keys[] = { "name", "dev", "link", "vlan", "trunk", "steered", CTL_NETEM_KEYS, NULL };
	const struct conf_node *ports = conf_member(sw, "ports");
	if (!ports)
		return conf_fail(p, sw, "switch '%s' has no 'ports'", s->name);
	if (ports->type != CONF_LIST)
		return conf_fail(p, ports, "'ports' must be a list ( {...}, ... )");
	int n = (int)ports->n;
	if (n == 0 || n > SW_MAX_PORTS)
		return conf_fail(p, ports, "a switch has 1..%d ports", SW_MAX_PORTS);
	for (int i = 0; i < n; i++) {
		const struct conf_node *pg = conf_elem(ports, (unsigned)i);
		struct sw_port_cfg *pc = &s->ports[i];
		const char *dev = NULL, *link = NULL;
		const struct conf_node *devs = conf_member(pg, "dev");
		if (pg->type != CONF_GROUP)
			return conf_fail(p, pg, "a port must be a group { name = ...; dev = ...; }");
		pc->line = pg->line;
		pc->peer_switch = pc->peer_port = -1;
		long long vlan = SW_VLAN_DEFAULT;
		if (conf_only_keys(p, pg, keys) < 0 || get_name(p, pg, pc->name) < 0 ||
		    (!(devs && devs->type == CONF_ARRAY) && conf_get_str(p, pg, "dev", false, &dev) < 0) ||
		    conf_get_str(p, pg, "link", false, &link) < 0 ||
		    conf_get_int(p, pg, "vlan", 1, 4094, false, &vlan) < 0 || ctl_netem_read(p, pg, &pc->netem) < 0 ||
		    conf_get_bool(p, pg, "steered", &pc->steered) < 0)
			return -1;
		pc->vlan = (uint16_t)vlan;
		if (load_trunk(p, pg, pc) < 0 ||
		    (devs && devs->type == CONF_ARRAY && load_part_devs(p, devs, pc, &dev) < 0))
			return -1;
		if (!dev == !link)
			return conf_fail(
				p, pg,
				"port '%s' needs exactly one of 'dev' (a DPDK device) or 'link' (\"switch.port\")",
				pc->name);
		if (dev && (strlen(dev) == 0 || strlen(dev) >= sizeof(pc->dev)))
			return conf_fail(p, pg, "port '%s': 'dev' must be 1..%zu characters", pc->name,
					 sizeof(pc->dev) - 1);
		if (link && (strlen(link) == 0 || strlen(link) >= sizeof(pc->link) || !strchr(link, '.')))
			return conf_fail(p, pg, "port '%s': 'link' must be \"switch.port\"", pc->name);
		snprintf(pc->dev, sizeof(pc->dev), "%s", dev ? dev : "");
		snprintf(pc->link, sizeof(pc->link), "%s", link ? link : "");
		for (int k = 0; k < i; k++)
			if (!strcmp(s->ports[k].name, pc->name))
				return conf_fail(p, pg, "port name '%s' is used twice in switch '%s'", pc->name,
						 s->name);
	}
	s->nports = n;
	return 0;
}

int sw_cfg_find_port(const struct sw_switch_cfg *s, const char *name)
{
	for (int i = 0; i < s->nports; i++)
		if (!strcmp(s->ports[i].name, name))
			return i;
	return -1;
}

static int load_fdb(const struct conf_reader *p, const struct conf_node *sw, struct sw_switch_cfg *s)
{
	static const char *const keys[] = { "mac", "port", NULL };
	const struct conf_node *fdb = conf_member(sw, "fdb");
	if (!fdb)
		return 0;
	if (fdb->type != CONF_LIST)
		return conf_fail(p, fdb, "'fdb' must be a list ( { mac = ...; port = ...; }, ... )");
	int n = (int)fdb->n;
	if (n > SW_MAX_FDB)
		return conf_fail(p, fdb, "at most %d static fdb entries", SW_MAX_FDB);
	for (int i = 0; i < n; i++) {
		const struct conf_node *e = conf_elem(fdb, (unsigned)i);
		const char *mac = NULL, *port = NULL;
		if (e->type != CONF_GROUP)
			return conf_fail(p, e, "an fdb entry must be a group { mac = ...; port = ...; }");
		if (conf_only_keys(p, e, keys) < 0 || conf_get_str(p, e, "mac", true, &mac) < 0 ||
		    conf_get_str(p, e, "port", true, &port) < 0)
			return -1;
		if (parse_mac(mac, s->fdb[i].mac) < 0)
			return conf_fail(p, e, "'%s' is not a MAC address (aa:bb:cc:dd:ee:ff)", mac);
		if ((s->fdb[i].port = sw_cfg_find_port(s, port)) < 0)
			return conf_fail(p, e, "fdb entry names port '%s', which switch '%s' does not have", port,
					 s->name);
		if (!s->ports[s->fdb[i].port].vlan)
			return conf_fail(p, e, "fdb entry names port '%s', a trunk without a native vlan", port);
	}
	s->nfdb = n;
	return 0;
}

static int load_jobs(const struct conf_reader *p, const struct conf_node *sw, struct sw_switch_cfg *s)
{
	const struct conf_node *jobs = conf_member(sw, "jobs");
	if (!jobs)
		return 0;
	if (!s->ina)
		return conf_fail(p, jobs, "switch '%s' has jobs but 'ina' is not true", s->name);
	if (jobs->type != CONF_LIST)
		return conf_fail(p, jobs, "'jobs' must be a list ( {...}, ... )");
	int n = (int)jobs->n;
	if (n > INA_MAX_JOBS)
		return conf_fail(p, jobs, "at most %d jobs", INA_MAX_JOBS);
	s->jobs = calloc((size_t)n + 1, sizeof(*s->jobs));
	if (!s->jobs)
		return conf_fail(p, jobs, "out of memory");
	uint64_t used = 0;
	for (int i = 0; i < n; i++) {
		const struct conf_node *j = conf_elem(jobs, (unsigned)i);
		if (ctl_job_read(p, j, &(struct ctl_limits){ s->slots, s->max_elems }, &s->jobs[i]) < 0)
			return -1;
		for (int k = 0; k < i; k++)
			if (s->jobs[k].id == s->jobs[i].id)
				return conf_fail(p, j, "job id %u is used twice", s->jobs[i].id);
		used += s->jobs[i].nslots;
		if (used > s->slots)
			return conf_fail(p, j, "jobs reserve %llu slots but switch '%s' has %u",
					 (unsigned long long)used, s->name, s->slots);
		s->njobs = i + 1;
	}
	return 0;
}

/* Whether the switch has an address of its own: a control channel then
 * (INA or not: link settings of a spine or a plain ToR change at run time). */
static bool addressed(const struct sw_switch_cfg *s) { return s->ip && !sw_mac_zero(s->mac); }

/* Where control commands may come from besides their source address: the
 * ports they may come in by (mgmt_ports, names) and their VLAN
 * (mgmt_vlan), so that a host on a data port cannot send them at all. */
static int load_mgmt_scope(const struct conf_reader *p, const struct conf_node *g, struct sw_switch_cfg *s)
{
	const struct conf_node *mp = conf_member(g, "mgmt_ports"), *mv = conf_member(g, "mgmt_vlan");
	uint32_t vlan = 0;
	if ((mp || mv) && !s->nmgmt)
		return conf_fail(p, mp ? mp : mv, "'%s' only makes sense with 'mgmt'", mp ? "mgmt_ports" : "mgmt_vlan");
	if (conf_get_u32(p, g, "mgmt_vlan", 1, 4094, false, &vlan) < 0)
		return -1;
	s->mgmt_vlan = (uint16_t)vlan;
	if (!mp)
		return 0;
	if ((mp->type != CONF_ARRAY && mp->type != CONF_LIST) || mp->n == 0)
		return conf_fail(p, mp, "'mgmt_ports' must be a non-empty list of port names");
	for (unsigned i = 0; i < mp->n; i++) {
		const struct conf_node *e = conf_elem(mp, i);
		int k = e->type == CONF_STRING ? sw_cfg_find_port(s, e->v.s) : -1;
		if (k < 0)
			return conf_fail(p, e, "mgmt_ports entry %u: switch '%s' has no such port", i, s->name);
		s->mgmt_ports |= 1u << k;
	}
	return 0;
}

/* capture = { file; [ports]; [direction]; [snaplen]; [max_packets];
 * [max_bytes] }: the switch's ports into a pcapng file (sw_capture.h). */
static int load_capture(const struct conf_reader *p, const struct conf_node *sw, struct sw_switch_cfg *s)
{
	static const char *const keys[] = { "file",	   "ports",	"direction", "snaplen",
					    "max_packets", "max_bytes", "start",     NULL };
	const struct conf_node *g = conf_member(sw, "capture");
	struct sw_capture_cfg *c = &s->capture;
	if (!g)
		return 0;
	if (g->type != CONF_GROUP)
		return conf_fail(p, g, "'capture' must be a group such as { file = \"tor0.pcapng\"; }");
	const char *file = NULL, *dir = "both", *maxb = NULL;
	if (conf_only_keys(p, g, keys) < 0 || conf_get_str(p, g, "file", true, &file) < 0 ||
	    conf_get_str(p, g, "direction", false, &dir) < 0 || conf_get_str(p, g, "max_bytes", false, &maxb) < 0)
		return -1;
	if (!*file || strlen(file) >= sizeof(c->file))
		return conf_fail(p, conf_member(g, "file"), "capture file: 1 to %zu characters", sizeof(c->file) - 1);
	snprintf(c->file, sizeof(c->file), "%s", file);
	c->dir = !strcmp(dir, "rx")	? SW_CAP_RX
		 : !strcmp(dir, "tx")	? SW_CAP_TX
		 : !strcmp(dir, "both") ? SW_CAP_RX | SW_CAP_TX
					: 0;
	if (!c->dir)
		return conf_fail(p, conf_member(g, "direction"), "direction \"%s\": want \"rx\", \"tx\" or \"both\"",
				 dir);
	c->snaplen = 65535;
	long long maxp = 0;
	if (conf_get_u32(p, g, "snaplen", 64, 65535, false, &c->snaplen) < 0 ||
	    conf_get_int(p, g, "max_packets", 0, 1000000000000ll, false, &maxp) < 0)
		return -1;
	c->max_packets = (uint64_t)maxp;
	bool start = true;
	if (conf_get_bool(p, g, "start", &start) < 0)
		return -1;
	c->paused = !start;
	if (maxb && (parse_size(maxb, &c->max_bytes) < 0 || c->max_bytes < 4096))
		return conf_fail(p, conf_member(g, "max_bytes"), "max_bytes \"%s\": want a size of 4K or more", maxb);
	const struct conf_node *pl = conf_member(g, "ports");
	if (pl && pl->type != CONF_ARRAY && pl->type != CONF_LIST)
		return conf_fail(p, pl, "capture ports: a list of this switch's port names");
	for (unsigned i = 0; pl && i < pl->n; i++) {
		const struct conf_node *e = conf_elem(pl, i);
		int k = e->type == CONF_STRING ? sw_cfg_find_port(s, e->v.s) : -1;
		if (k < 0)
			return conf_fail(p, e, "capture: switch '%s' has no port %s%s%s", s->name,
					 e->type == CONF_STRING ? "'" : "",
					 e->type == CONF_STRING ? e->v.s : "(not a name)",
					 e->type == CONF_STRING ? "'" : "");
		c->ports |= 1u << k;
	}
	c->line = g->line;
	return 0;
}

/* A switch on several lcores: each owns one queue pair of every port (or
 * a device of the port's list) and an engine of its own, so every port
 * must hand it only its own slots' frames, and nothing may need one view
 * of a port (a capture; a rate's partitions share one clock instead). */
static int check_partitions(const struct conf_reader *p, const struct conf_node *g, struct sw_switch_cfg *s)
{
	const struct conf_node *at = conf_member(g, "partitions"), *pq = conf_member(g, "partition_queues");
	for (int k = 0; k < s->partitions; k++)
		s->partition_queues[k] = (uint16_t)k;
	if (pq) {
		if (pq->type != CONF_ARRAY || (int)pq->n != s->partitions)
			return conf_fail(p, pq,
					 "switch '%s': 'partition_queues' must list %d queue ids [ 0, ... ], one per "
					 "partition",
					 s->name, s->partitions);
		for (int k = 0; k < s->partitions; k++) {
			const struct conf_node *e = conf_elem(pq, (unsigned)k);
			long long v = e->type == CONF_INT ? e->v.i : -1;
			if (v < 0 || v > SW_MAX_QUEUE || (k == 0 && v != 0))
				return conf_fail(p, pq, "switch '%s': partition_queues entry %d must be %s", s->name, k,
						 k ? "a queue id 1..63" : "0 (partition 0 takes what nothing steers)");
			for (int j = 0; j < k; j++)
				if (s->partition_queues[j] == v)
					return conf_fail(p, pq,
							 "switch '%s': queue %lld is in 'partition_queues' twice",
							 s->name, v);
			s->partition_queues[k] = (uint16_t)v;
		}
	}
	for (int i = 0; i < s->nports; i++)
		if (s->ports[i].npart_dev && s->ports[i].npart_dev != s->partitions)
			return conf_fail(
				p, conf_member(conf_elem(conf_member(g, "ports"), (unsigned)i), "dev"),
				"switch '%s': port '%s' lists %d devices in 'dev'; the switch has %d partition%s",
				s->name, s->ports[i].name, s->ports[i].npart_dev, s->partitions,
				s->partitions == 1 ? "" : "s");
	if (s->partitions == 1)
		return 0;
	if (s->capture.file[0])
		return conf_fail(p, at, "switch '%s': a capture needs one lcore; drop 'partitions' or 'capture'",
				 s->name);
	for (int i = 0; i < s->nports; i++) {
		const struct sw_port_cfg *pc = &s->ports[i];
		if (pc->dev[0] && !pc->steered) /* a link's peer steers (sw_link_partition) */
			return conf_fail(p, at,
					 "switch '%s': port '%s' must be a device that arrives steered by UDP port "
					 "('steered = true') or a link: swemu does not program NIC flow rules",
					 s->name, pc->name);
	}
	return 0;
}

static int load_switch(const struct conf_reader *p, const struct conf_node *g, struct sw_switch_cfg *s)
{
	static const char *const keys[] = { "name",	  "ina",       "mac",	  "ip",		"ctrl_port",
					    "slots",	  "max_elems", "mgmt",	  "fdb_age_s",	"fdb_port_limit",
					    "lcore",	  "ports",     "fdb",	  "jobs",	"ctrl_key_file",
					    "mgmt_ports", "mgmt_vlan", "capture", "partitions", "partition_queues",
					    NULL };
	const char *mac = NULL, *ip = NULL;
	if (g->type != CONF_GROUP)
		return conf_fail(p, g, "a switch must be a group { name = ...; ports = (...); }");
	if (conf_only_keys(p, g, keys) < 0 || get_name(p, g, s->name) < 0 || conf_get_bool(p, g, "ina", &s->ina) < 0 ||
	    conf_get_str(p, g, "mac", s->ina, &mac) < 0 || conf_get_str(p, g, "ip", s->ina, &ip) < 0)
		return -1;
	if (mac && parse_mac(mac, s->mac) < 0)
		return conf_fail(p, conf_member(g, "mac"), "'%s' is not a MAC address", mac);
	if (ip && parse_ipv4(ip, &s->ip) < 0)
		return conf_fail(p, conf_member(g, "ip"), "'%s' is not an IPv4 address", ip);
	if (!mac != !ip)
		return conf_fail(p, g, "switch '%s': 'mac' and 'ip' go together", s->name);
	s->ctrl_port = INA_CTRL_PORT;
	s->slots = s->ina ? 1024 : 0;
	s->max_elems = 2048;
	s->fdb_age_s = 300;
	s->fdb_port_limit = SW_FDB_SIZE / 4; /* four ports' worth fill the table */
	uint32_t port = s->ctrl_port, maxe = s->max_elems;
	long long lcore = -1, parts = 1;
	s->line = g->line;
	if (conf_get_int(p, g, "lcore", 0, SW_MAX_LCORE, false, &lcore) < 0 ||
	    conf_get_int(p, g, "partitions", 1, SW_MAX_PARTITIONS, false, &parts) < 0 ||
	    conf_get_u32(p, g, "ctrl_port", 1, 65535, false, &port) < 0 ||
	    conf_get_u32(p, g, "slots", 1, 1 << 20, false, &s->slots) < 0 ||
	    conf_get_u32(p, g, "max_elems", 1, INA_MAX_ELEMS, false, &maxe) < 0 ||
	    conf_get_u32(p, g, "fdb_age_s", 1, 86400, false, &s->fdb_age_s) < 0 ||
	    conf_get_u32(p, g, "fdb_port_limit", 0, SW_FDB_SIZE, false, &s->fdb_port_limit) < 0)
		return -1;
	s->ctrl_port = (uint16_t)port;
	s->max_elems = (uint16_t)maxe;
	s->lcore = (int)lcore;
	s->partitions = (int)parts;
	const struct conf_node *mg = conf_member(g, "mgmt");
	if (mg) {
		if (mg->type != CONF_ARRAY && mg->type != CONF_LIST)
			return conf_fail(p, mg, "'mgmt' must be a list of IPv4 addresses");
		if ((int)mg->n > SW_MAX_MGMT)
			return conf_fail(p, mg, "at most %d mgmt addresses", SW_MAX_MGMT);
		for (int i = 0; i < (int)mg->n; i++) {
			const struct conf_node *e = conf_elem(mg, (unsigned)i);
			if (e->type != CONF_STRING || parse_ipv4(e->v.s, &s->mgmt[i]) < 0)
				return conf_fail(p, e, "mgmt entry %d is not an IPv4 address", i);
			s->nmgmt = i + 1;
		}
		if (!addressed(s))
			return conf_fail(p, mg,
					 "'mgmt' needs the switch's 'ip' and 'mac' (its control channel's address)");
	}
	const char *key_file = NULL;
	if (conf_get_str(p, g, "ctrl_key_file", false, &key_file) < 0)
		return -1;
	if (key_file) {
		char why[300];
		if (!addressed(s))
			return conf_fail(
				p, conf_member(g, "ctrl_key_file"),
				"'ctrl_key_file' needs the switch's 'ip' and 'mac' (its control channel's address)");
		if (ctl_key_load(key_file, &s->ctrl_key, why, sizeof(why)) < 0)
			return conf_fail(p, conf_member(g, "ctrl_key_file"), "%s", why);
	}
	return load_ports(p, g, s) < 0 || load_mgmt_scope(p, g, s) < 0 || load_fdb(p, g, s) < 0 ||
			       load_jobs(p, g, s) < 0 || load_capture(p, g, s) < 0 || check_partitions(p, g, s) < 0
		       ? -1
		       : 0;
}

/* Links name "switch.port" and must point at each other. */
static int resolve_links(const struct conf_reader *p, struct sw_cfg *c, const struct conf_node *list)
{
	for (int si = 0; si < c->nswitches; si++)
		for (int pi = 0; pi < c->sw[si].nports; pi++) {
			struct sw_port_cfg *pc = &c->sw[si].ports[pi];
			const struct conf_node *at = conf_elem(list, (unsigned)si);
			at = conf_elem(conf_member(at, "ports"), (unsigned)pi);
			if (pc->dev[0]) {
				for (int sk = 0; sk <= si; sk++)
					for (int pk = 0; pk < (sk == si ? pi : c->sw[sk].nports); pk++)
						if (!strcmp(c->sw[sk].ports[pk].dev, pc->dev))
							return conf_fail(p, at, "device '%s' is already port %s.%s",
									 pc->dev, c->sw[sk].name,
									 c->sw[sk].ports[pk].name);
				continue;
			}
			char sname[SW_NAME_LEN * 2];
			snprintf(sname, sizeof(sname), "%s", pc->link);
			char *dot = strchr(sname, '.');
			*dot = 0;
			for (int sk = 0; sk < c->nswitches; sk++)
				if (!strcmp(c->sw[sk].name, sname)) {
					pc->peer_switch = sk;
					pc->peer_port = sw_cfg_find_port(&c->sw[sk], dot + 1);
				}
			if (pc->peer_switch < 0 || pc->peer_port < 0)
				return conf_fail(p, at, "link '%s': no such switch.port", pc->link);
			if (pc->peer_switch == si)
				return conf_fail(p, at, "link '%s' loops back into switch '%s'", pc->link,
						 c->sw[si].name);
			const struct sw_port_cfg *peer = &c->sw[pc->peer_switch].ports[pc->peer_port];
			char back[SW_NAME_LEN * 2 + 2];
			snprintf(back, sizeof(back), "%s.%s", c->sw[si].name, pc->name);
			if (strcmp(peer->link, back))
				return conf_fail(p, at, "link '%s': the peer port must have link = \"%s\"", pc->link,
						 back);
			if (peer->vlan != pc->vlan) /* a link carries one VLAN untagged */
				return conf_fail(p, at,
						 "link '%s': both ends must be in the same vlan (%u here, %u there)",
						 pc->link, pc->vlan, peer->vlan);
			if (peer->ntrunk != pc->ntrunk ||
			    memcmp(peer->trunk, pc->trunk, sizeof(pc->trunk[0]) * (size_t)pc->ntrunk))
				return conf_fail(p, at, "link '%s': both ends must carry the same trunk vlans",
						 pc->link);
		}
	return 0;
}

/* An optional file path into buf (256 bytes; "" when not set). */
static int path_setting(const struct conf_reader *p, const struct conf_node *root, const char *key, char buf[256])
{
	const char *v = NULL;
	if (conf_get_str(p, root, key, false, &v) < 0)
		return -1;
	if (v && strlen(v) >= 256)
		return conf_fail(p, conf_member(root, key), "%s is too long", key);
	snprintf(buf, 256, "%s", v ? v : "");
	return 0;
}

int sw_cfg_load(const char *path, struct sw_cfg *c, char *err, size_t errlen)
{
	static const char *const keys[] = { "stats_file", "stats_prom_file", "stats_interval_ms", "idle_sleep_max_us",
					    "burst",	  "mbufs",	     "switches",	  NULL };
	const struct conf_reader r = { path, err, errlen }, *p = &r;
	struct conf text;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	if (conf_load(path, &text, err, errlen) < 0)
		return -1;
	const struct conf_node *root = text.root;
	if (conf_only_keys(p, root, keys) < 0 || path_setting(p, root, "stats_file", c->stats_file) < 0 ||
	    path_setting(p, root, "stats_prom_file", c->stats_prom_file) < 0)
		goto out;
	c->idle_sleep_max_us = 200;
	c->burst = 32;
	c->mbufs = 8191;
	if (conf_get_u32(p, root, "stats_interval_ms", 0, 3600000, false, &c->stats_interval_ms) < 0 ||
	    conf_get_u32(p, root, "idle_sleep_max_us", 0, 100000, false, &c->idle_sleep_max_us) < 0 ||
	    conf_get_u32(p, root, "burst", 1, SW_BURST_MAX, false, &c->burst) < 0 ||
	    conf_get_u32(p, root, "mbufs", 511, 1 << 20, false, &c->mbufs) < 0)
		goto out;

	const struct conf_node *list = conf_member(root, "switches");
	if (!list) {
		conf_fail(p, root, "missing setting 'switches'");
		goto out;
	}
	if (list->type != CONF_LIST || (int)list->n == 0 || (int)list->n > SW_MAX_SWITCHES) {
		conf_fail(p, list, "'switches' must be a list of 1..%d switches ( {...}, ... )", SW_MAX_SWITCHES);
		goto out;
	}
	for (int i = 0; i < (int)list->n; i++) {
		const struct conf_node *g = conf_elem(list, (unsigned)i);
		c->nswitches = i + 1;
		if (load_switch(p, g, &c->sw[i]) < 0)
			goto out;
		for (int k = 0; k < i; k++)
			if (!strcmp(c->sw[k].name, c->sw[i].name)) {
				conf_fail(p, g, "switch name '%s' is used twice", c->sw[i].name);
				goto out;
			}
	}
	rc = resolve_links(p, c, list);
out:
	conf_free(&text);
	if (rc < 0)
		sw_cfg_free(c);
	return rc;
}

void sw_cfg_free(struct sw_cfg *c)
{
	for (int i = 0; i < SW_MAX_SWITCHES; i++)
		free(c->sw[i].jobs);
	memset(c, 0, sizeof(*c));
}
